# tests/ch12_gpt.sh - cases for ch12_gpt, sourced by tests/run.sh (helpers are defined there).
# The model on the CPU and the data code (tests/test_gpt.c: the gradient against central
# differences, known answers, bad text files and checkpoints), then the planted bugs, each
# in a copy of gpt_cpu.c that test_gpt must then fail
host_test test_gpt
gpt_mutant() {   # gpt_mutant <name> <sed expression on gpt_cpu.c>
    host_mutant "$1 (CPU model)" gpt_cpu.c GPT_CPU test_gpt "$2"
}
gpt_mutant "the GELU derivative of the erf form" \
    's/dx\[i\] += dout\[i\] \* (0.5 \* (1.0 + t) + 0.5 \* x\[i\] \* (1.0 - t \* t) \* du);/dx[i] += dout[i] * (0.5 * (1.0 + erf(x[i] \/ sqrt(2.0))) + x[i] * exp(-0.5 * x[i] * x[i]) * 0.3989422804014327);/'
gpt_mutant "the residual's gradient dropped" \
    's/memcpy(dmid, d, sizeof(double) \* NC);/memset(dmid, 0, sizeof(double) * NC);/'
gpt_mutant "the position embedding's gradient summed over the batch index" \
    's/dwpe\[(size_t)(n % T) \* C + c\] += dx/dwpe[(size_t)(n \/ T) * C + c] += dx/'
gpt_mutant "the tied token embedding's gradient counted once (the classifier's share alone)" \
    's/dwte\[(size_t)tokens\[n\] \* C + c\] += dx\[(size_t)n \* C + c\];/(void)dwte;/'
gpt_mutant "the causal mask one key too far (forward and backward alike)" \
    's/j <= i;/j <= i + 1 \&\& j < T;/g; s/if (j > i) continue;/if (j > i + 1) continue;/'
# the program: input refused before the GPU (exit 2 with the reason), no GPU (77), then on a GPU
# one step of a tiny model against the CPU model, and a short training run that writes text
bad_input 0 'usage: gpt ' ./gpt --help
bad_input 2 "unknown argument '--bogus'" ./gpt --bogus
bad_input 2 "version '10' does not exist (0..9)" ./gpt 10
bad_input 2 'no-such-file.txt: No such file or directory' ./gpt --data no-such-file.txt
bad_input 2 'the file is empty' ./gpt --data ../tests/data/empty.cu
bad_input 2 'a binary file (a zero byte at offset 5), not text' ./gpt --data ../tests/data/weights_v1.bin
bad_input 2 'not ASCII text: byte 0xC8 at offset 15 (line 4, column 1)' ./gpt --data ../datasets/camera.pgm
bad_input 2 'not ASCII text: byte 0xE2 at offset 2 (line 1, column 3)' ./gpt --data ../tests/data/utf8_quote.txt
bad_input 2 'too short for a context of 300: 2460 characters train and 274 validate' ./gpt --data ../datasets/iris.csv --context 300
bad_input 2 'the heads must divide the channels (L 6, H 5, C 384, T 256)' ./gpt --heads 5
bad_input 2 "not a checkpoint of this chapter's gpt" ./gpt --load ../tests/data/weights_v1.bin --steps 0
bad_input 2 '--steps 0 needs --load, --save or --grads' ./gpt --steps 0
bad_input 2 "--save 'no-such-folder/g.ckpt': no folder 'no-such-folder'" ./gpt --save no-such-folder/g.ckpt
no_gpu ./gpt --check
no_gpu ./gpt --steps 1
gpu_check ./gpt --check
# the benchmark table and a longer run: not under the sanitizers (each version's step is, through
# --check and the small runs below; these repeat the same kernels for minutes there)
gpu_check_large ./gpt --bench --layers 2 --heads 2 --channels 64 --context 64 --batch 8
gpu_check_large ./gpt --quiet --layers 2 --heads 2 --channels 64 --context 64 --batch 8 --steps 20 --eval-batches 2 --sample 40
sanitize_only ./gpt --quiet --layers 1 --heads 2 --channels 64 --context 32 --batch 2 --steps 2 --eval-batches 1 --sample 5
gpu_check ./gpt 0 --quiet --layers 1 --heads 3 --channels 48 --context 37 --batch 3 --steps 5 --eval-batches 1 --sample 9
# version 4 (ch11's flash attention) at awkward sizes: 3 heads of 64, a context of 37, batch 3;
# heads of another size are refused by number (and the default falls back to version 3)
gpu_check ./gpt 4 --quiet --layers 2 --heads 3 --channels 192 --context 37 --batch 3 --steps 5 --eval-batches 1 --sample 9
# the default version (9 on an H100 or H200: attention on token rows) at the same awkward sizes
gpu_check ./gpt --quiet --layers 2 --heads 3 --channels 192 --context 37 --batch 3 --steps 5 --eval-batches 1 --sample 9
gpu_check ./gpt 4 --quiet --layers 1 --heads 1 --channels 128 --context 130 --batch 2 --steps 3 --eval-batches 1
gpu_expect 2 'flash attention takes heads of 64 or 128 channels' ./gpt 4 --layers 1 --heads 3 --channels 48 --steps 1
# version 5 (cuBLASLt's epilogues) likewise; the classifier's rows 84 bf16 apart (not 16-byte aligned)
gpu_check ./gpt 5 --quiet --layers 2 --heads 3 --channels 192 --context 37 --batch 3 --steps 5 --eval-batches 1 --sample 9
gpu_expect 2 'flash attention takes heads of 64 or 128 channels' ./gpt 5 --layers 1 --heads 2 --channels 48 --steps 1
gpu_check ./gpt 6 --quiet --layers 2 --heads 3 --channels 192 --context 37 --batch 3 --steps 5 --eval-batches 1 --sample 9
# version 7 (the step as a CUDA graph): training, validation (a graph of its own) and sampling
gpu_check ./gpt 7 --quiet --layers 2 --heads 3 --channels 192 --context 37 --batch 3 --steps 5 --eval-batches 1 --sample 9
gpu_check ./gpt 8 --quiet --layers 2 --heads 3 --channels 192 --context 37 --batch 3 --steps 5 --eval-batches 1 --sample 9
gpu_expect 2 'GiB of device memory' ./gpt --layers 96 --heads 64 --channels 8192 --context 4096 --batch 64 --steps 1
# the whole training step on CPU threads: gpt_model.c as written, over the emulated runtime and
# cuBLAS, with gpt_kernels.cu and ch11's kernels (tests/emu/emu_gpt.cpp): the loss, every
# gradient, the norm, the clipped gradient and one AdamW step against the CPU model; then the
# issue's planted bugs in the GPU code: each must fail it
emu_check emu_gpt 2 2 32 16 37 40 2
emu_check emu_gpt 1 3 24 5 7 7 3
emu_check emu_gpt 3 4 32 9 11 16 2
emu_check emu_gpt 1 2 16 8 11 12 2 fused_loss
emu_check emu_gpt 1 3 24 5 7 7 3 multi_adamw
emu_check emu_gpt 1 3 24 5 7 7 3 bf16_products
emu_check emu_gpt 2 2 32 16 37 40 2 bf16_products
# flash attention (ch11's kernels, sm_90a's versions, emulated too): heads of 64 and 128 channels,
# several layers (each its own log-sum-exps), contexts past one tile of keys
emu_check emu_gpt 2 1 64 20 11 16 2 flash_attention
emu_check emu_gpt 1 2 128 70 7 8 1 flash_attention
emu_check emu_gpt 1 1 128 9 7 8 3 flash_attention
# version 5: the products by cuBLASLt with their epilogues (emulated too: emu_cublaslt.cpp)
emu_check emu_gpt 2 1 64 20 11 16 2 fused_epilogues
emu_check emu_gpt 1 1 128 9 7 8 3 fused_epilogues
emu_check emu_gpt 2 1 64 9 7 8 1 fast_rows # version 6: ch11's one-read LayerNorm and loss
emu_check emu_gpt 1 2 128 37 37 40 2 fast_rows
# version 7: the gradient's graph, then the step's, launched twice from the same start at two rates
emu_check emu_gpt 2 1 64 9 7 8 1 cuda_graph
emu_check emu_gpt 1 2 128 37 37 40 2 fused_adamw # version 8: the clip and the bf16 copy in AdamW
emu_check emu_gpt 1 2 12 5 7 7 2 # heads of 6 channels: the reshapes one element at a time
# version 9: attention on token rows (ch11's four-dimensional tensor maps): three heads of 64 in a
# row of the batch's two sequences, and two heads of 128
emu_check emu_gpt 2 3 192 20 11 16 2 token_rows
emu_check emu_gpt 1 2 256 20 11 16 2 token_rows
EMU_ARGS="1 2 16 8 11 12 2" # small: each bug still shows (the GELU one at 1.5e-4, 5x the tolerance)
emu_mutant "GELU's derivative of the erf form" gpt_kernels.cu \
    's/return 0.5f \* (1.0f + t) + 0.5f \* v \* (1.0f - t \* t) \* du;/return 0.5f * (1.0f + erff(v * 0.70710678f)) + v * expf(-0.5f * v * v) * 0.39894228f;/' \
    emu_gpt $EMU_ARGS
emu_mutant "the residual's gradient dropped in the MLP's backward" gpt_model.c \
    's/CUDA_CHECK(gpt_add_launch(g->dmid, g->dmid, g->d, NC));/(void)0;/' emu_gpt $EMU_ARGS
emu_mutant "the position embedding's gradient from the first sequence only" gpt_kernels.cu \
    's/for (int b = 0; b < B; b++) s += dx\[(size_t)b \* tc + i\];/for (int b = 0; b < B; b++) s += dx[(size_t)b * tc + i] * (b == 0);/' \
    emu_gpt $EMU_ARGS
emu_mutant "the tied embedding's gradient counted once (the classifier's share dropped)" gpt_model.c \
    's/parts->linear_backward(g, g->dln, g->grads + gpt_offset_wte(c), g->dlogits/parts->linear_backward(g, g->dln, g->dlogits + 0 * gpt_offset_wte(c), g->dlogits/' \
    emu_gpt $EMU_ARGS
emu_mutant "the causal mask one key too far" gpt_kernels.cu \
    's/if (j > query) s\[i\] = -INFINITY;/if (j > query + 1) s[i] = -INFINITY;/' emu_gpt $EMU_ARGS
emu_mutant "weight decay on the biases and LayerNorms too" gpt_model.c \
    's/g->n_plain, 1, 0.0f, &g->adam\[1\]/g->n_plain, 1, wd, \&g->adam[1]/' emu_gpt $EMU_ARGS
bad_input 2 '--synthetic trains on random tokens, for speed: no --load, --save or --sample' ./gpt --synthetic --sample 10
bad_input 2 'the heads must divide the channels (L 12, H 7, C 768, T 1024)' ./gpt --synthetic --heads 7
gpu_check_large ./gpt --synthetic --layers 2 --context 256 --batch 4 --steps 3
# PyTorch's side: its batch generator is ./gpt's (no torch needed), and bad arguments exit 2
run_case "$CHAPTER: torch_gpt.py draws ./gpt's batches" 0 "selftest PASS" "" python3 ../bench/torch_gpt.py selftest
bad_input 2 'H must divide C (got 12,5,768,1024,8)' python3 ../bench/torch_gpt.py speed 12,5,768,1024,8
bad_input 2 "the first argument is speed, compare, train or selftest (got 'bogus')" python3 ../bench/torch_gpt.py bogus
bad_input 2 'train takes START END DATA SEED B LR WARMUP WD CLIP EVAL_BATCHES fp32|bf16' python3 ../bench/torch_gpt.py train a.ckpt b.ckpt
bad_input 2 'compare takes CKPT GRADS DATA SEED' python3 ../bench/torch_gpt.py compare a.ckpt
emu_mutant "the one-launch AdamW without the matrices' weight decay" gpt_model.c \
    's/g->n_decayed, g->n_chunks_decayed, wd,/g->n_decayed, g->n_chunks_decayed, 0.0f,/' emu_gpt $EMU_ARGS multi_adamw
emu_mutant "the bf16 products read the weights one element off" gpt_model.c \
    '0,/const unsigned short \*W16 = g->params16 + (W - g->params);/s//const unsigned short *W16 = g->params16 + (W - g->params) + 1;/' \
    emu_gpt $EMU_ARGS bf16_products
FLASH_ARGS="2 1 64 9 7 8 1" # small: two layers of one head of 64
emu_mutant "the flash forward not causal (every query sees every key)" gpt_model.c \
    's/g->o16 + at, B, H, T, C \/ H, 1,/g->o16 + at, B, H, T, C \/ H, 0,/' emu_gpt $FLASH_ARGS flash_attention
emu_mutant "the flash backward reads the first layer's log-sum-exps in every layer" gpt_model.c \
    's/g->lse + (size_t)l \* B \* H \* T, dq_fp32/g->lse, dq_fp32/' emu_gpt $FLASH_ARGS flash_attention
emu_mutant "the fused backward without GELU's derivative (DGELU's epilogue dropped)" gpt_fused.c \
    's/p.epilogue = CUBLASLT_EPILOGUE_DGELU, p.aux = pre/p.aux = pre/' emu_gpt $FLASH_ARGS fused_epilogues
emu_mutant "the fused MLP without its residual (C dropped from the last product)" gpt_fused.c \
    's/p.C = mid; \/\* out = mid + mlp \*\//(void)0;/' emu_gpt $FLASH_ARGS fused_epilogues
emu_mutant "the attention projection's bias gradient left out (the LayerNorm's column sums not asked for)" \
    gpt_fused.c 's/GRAD(g, l, GPT_PROJ_B), N, C);/NULL, N, C);/' emu_gpt $FLASH_ARGS fast_rows
emu_mutant "version 6's bias sums skip each slab's last row" gpt_kernels.cu \
    's/int end = min(N, (slab + 1) \* GPT_BF16_SLAB);/int end = min(N, (slab + 1) * GPT_BF16_SLAB) - 1;/' \
    emu_gpt $FLASH_ARGS fast_rows
emu_mutant "version 6's GELU derivative summed but not written back (fc's products read dh)" gpt_kernels.cu \
    's/store_run<R>(row, v); \/\* already bf16 values: stored exactly \*\//(void)row;/' emu_gpt $FLASH_ARGS fast_rows
emu_mutant "version 6's qkv bias gradient left out (summed into scratch)" gpt_fused.c \
    's/gpt_bias_grad_bf16_launch(GRAD(g, l, GPT_QKV_B),/gpt_bias_grad_bf16_launch(g->ln_partial,/' emu_gpt $FLASH_ARGS fast_rows
emu_mutant "version 6's join of the heads reads dQ where ch11 no longer writes it (bf16)" gpt_fused.c \
    's/gpt_join_qkv_acc_bf16_launch(g->dqkv16, g->dq_acc,/gpt_join_qkv_bf16_bf16_launch(g->dqkv16, g->dq16,/' \
    emu_gpt $FLASH_ARGS fast_rows
emu_mutant "version 6's bias pass leaves its strip counters set (the next launch's totals never written)" gpt_kernels.cu \
    's|count\[blockIdx.x\] = 0; /\* ready for the next launch \*/|(void)0;|' emu_gpt $FLASH_ARGS cuda_graph
emu_mutant "the bf16 loss's softmax over the padded vocabulary too" gpt_model.c \
    '/ce_launch_bf16(/s/N, g->c.vocab,/N, g->c.vocab_padded,/' emu_gpt $FLASH_ARGS fast_rows
emu_mutant "version 8's AdamW without the clip's factor" gpt_model.c \
    '/gpt_grad_scale_launch(&g->adam/d' emu_gpt $FLASH_ARGS fused_adamw
ROWS_ARGS="1 3 192 20 11 16 2" # three heads a token row, two sequences
emu_mutant "version 9's forward reads Q, K, V as if qkv's rows were C apart" gpt_model.c \
    's/T, NULL, 3 \* C, C};/T, NULL, C, C};/' emu_gpt $ROWS_ARGS token_rows
emu_mutant "version 9's backward reads O and dO as if their rows were 3C apart" gpt_model.c \
    's/C \/ H, 1, NULL, 3 \* C, C};/C \/ H, 1, NULL, 3 * C, 3 * C};/' emu_gpt $ROWS_ARGS token_rows
emu_mutant "version 8's AdamW writes no bf16 copy of the matrices" gpt_model.c \
    's/adamw_launch(4, g->decayed, g->d_decayed16,/adamw_launch(4, g->decayed, g->d_decayed,/' emu_gpt $FLASH_ARGS fused_adamw
emu_mutant "the graph launched without its step's rate (the last one set stays)" gpt_model.c \
    '/^    if (what == GPT_STEP) gpt_set_lr(g, lr);$/{N;/cudaGraphLaunch/s/^[^\n]*\n//}' emu_gpt $FLASH_ARGS cuda_graph

