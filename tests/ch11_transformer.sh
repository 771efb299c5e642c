# tests/ch11_transformer.sh - cases for ch11_transformer, sourced by tests/run.sh (helpers are defined there).
host_test test_softmax
host_test test_cross_entropy
host_test test_layernorm
host_test test_adamw
bad_input 2 "unknown argument '--bogus'" ./softmax --bogus
bad_input 0 'usage: softmax ' ./softmax --help
bad_input 2 '--size: at most 32768 columns' ./softmax --size 4x32769
bad_input 2 '--size: at most 2^24 rows and 2^31 elements' ./softmax --size 100000x32768
bad_input 2 '--size must be positive (got 0x5, read as width x height)' ./softmax --size 0x5
bad_input 2 '--amplitude must be 0..1e6' ./softmax --amplitude -1
bad_input 2 '--masked must be in [0, 1)' ./softmax --masked 1
bad_input 2 "version '6' does not exist (0..5)" ./softmax 6
no_gpu ./softmax

# every version on rows of 1 and of 4097 columns (no multiple of 4: the scalar paths), one row,
# one column, odd shapes, the longest rows (32768: version 5 with 1024 threads), logits of +-100
# (exp would overflow without the max), equal values, and half the entries masked (-inf)
for s in 1x1 1x4097 3x1 1000x1023 257x4096 9x8193; do
    gpu_check ./softmax --check-only --size $s
done
gpu_check_large ./softmax --check-only --size 33x32768
gpu_check_large ./softmax --check-only --size 2048x31 --seed 7
gpu_check ./softmax --check-only --size 100x1000 --amplitude 100
gpu_check ./softmax --check-only --size 100x777 --amplitude 0
gpu_check ./softmax --check-only --size 100x1000 --masked 0.5
gpu_check_large ./softmax --check-only --size 64x4096 --masked 0.999 --amplitude 80
first gpu_check_large ./softmax --check-only
# planted bugs the check must catch: the online softmax without its rescale (a larger element
# only moves the max), and version 5 reading its rows one float4 short
mutant "softmax online sum not rescaled" row_reduce.cuh \
    's/d = d \* fast_exp(m - v) + 1.0f;/d = d + 1.0f;/' ./softmax 4 --check-only --size 64x1000
mutant "softmax version 5 drops each row's last float4" softmax_kernels.cu \
    's/float4 q = c4 < cols \/ 4 ?/float4 q = c4 < cols \/ 4 - 1 ?/' ./softmax 5 --check-only --size 64x4096
# PyTorch's side of the chapter's measurements answers like the programs
bad_input 0 'usage: torch_transformer.py' python3 ../bench/torch_transformer.py --help
bad_input 2 "torch_transformer: 'soft' is not an operation this script times" python3 ../bench/torch_transformer.py soft 16x16
bad_input 2 "torch_transformer: '16y16' is not a shape ROWSxCOLS" python3 ../bench/torch_transformer.py softmax 16y16

# cross_entropy
bad_input 2 "unknown argument '--bogus'" ./cross_entropy --bogus
bad_input 0 'usage: cross_entropy ' ./cross_entropy --help
bad_input 2 '--size: at most 57344 classes' ./cross_entropy --size 4x57345
bad_input 2 '--size: at most 2^24 rows and 2^31 elements' ./cross_entropy --size 100000x50000
bad_input 2 '--amplitude must be 0..1e6' ./cross_entropy --amplitude -2
bad_input 2 "version '5' does not exist (0..4)" ./cross_entropy 5
no_gpu ./cross_entropy
# GPT-2's vocabulary as it is (50257: no multiple of anything, the scalar paths) and padded
# (50304: float4), the widest rows, two classes, one row, odd shapes, equal logits
for s in 1x1 3x50257 17x50304 1000x2 64x4097 5x57344; do
    gpu_check ./cross_entropy --check-only --size $s
done
gpu_check ./cross_entropy --check-only --size 64x1000 --amplitude 0
gpu_check_large ./cross_entropy --check-only --size 512x50304 --seed 5
first gpu_check_large ./cross_entropy --check-only
# large logits: the fused versions take log s + m - x[y]; version 1 takes -log p[y], and a
# label's probability that underflows to 0 makes its loss inf: FAIL, as the help says
for v in 2 3 4; do
    gpu_check ./cross_entropy $v --check-only --size 64x1000 --amplitude 100
done
gpu_expect 1 "loss FAIL" ./cross_entropy 1 --check-only --size 64x1000 --amplitude 100
# planted bugs: version 3's first pass one float4 short of each row; version 4's gradient not
# divided by the rows (the scalar path: 50257 classes)
mutant "cross_entropy version 3 drops each row's last float4 from the sum" cross_entropy_kernels.cu \
    '0,/for (int c = threadIdx.x; c < classes \/ 4; c += CE_BLOCK) {/s//for (int c = threadIdx.x; c < classes \/ 4 - 1; c += CE_BLOCK) {/' \
    ./cross_entropy 3 --check-only --size 16x50304
mutant "cross_entropy version 4's gradient not divided by the rows" cross_entropy_kernels.cu \
    's/gr\[c\] = (fast_exp(row\[c\] - m) \* inv - (c == label ? 1.0f : 0.0f)) \* inv_rows;/gr[c] = fast_exp(row[c] - m) * inv - (c == label ? 1.0f : 0.0f);/' \
    ./cross_entropy 4 --check-only --size 16x50257
# version 4's bf16 rows of up to 1024 classes (a warp a row): the padded columns left as they were
mutant "cross_entropy's narrow bf16 rows leave the gradient's padding" cross_entropy_kernels.cu \
    's/    for (int c = lane; c < stride; c += 32)/    for (int c = lane; c < classes; c += 32)/' \
    ./cross_entropy 4 --check-only --size 64x1001
bad_input 2 "torch_transformer: the repeats must be 1..100000 (got '0')" python3 ../bench/torch_transformer.py softmax 16x16 0

# adamw
bad_input 2 "unknown argument '--size'" ./adamw --size 5
bad_input 0 'usage: adamw ' ./adamw --help
bad_input 2 "--sizes '1,x': 1 to 4096 sizes N,N,..., each 1..2^31" ./adamw --sizes 1,x
bad_input 2 "--sizes '0': 1 to 4096 sizes" ./adamw --sizes 0
bad_input 2 "--sizes '3,,4': 1 to 4096 sizes" ./adamw --sizes 3,,4
bad_input 2 "--sizes ',3': 1 to 4096 sizes" ./adamw --sizes ,3
bad_input 2 "--sizes '3,': 1 to 4096 sizes" ./adamw --sizes 3,
bad_input 2 '--sizes: at most 2^31 parameters in all' ./adamw --sizes 2147483648,2
bad_input 2 '--steps must be 1..100' ./adamw --steps 0
no_gpu ./adamw
# tensors of one element, of a chunk and one more, sizes with a tail of 1 to 3 past a float4,
# many small ones; one step and ten; GPT-2 small (148 tensors, 124 million parameters)
gpu_check ./adamw --check-only --sizes 1,3,5,2048,2049,8193,65536,65537,1000003,4
gpu_check ./adamw --check-only --steps 1 --sizes 7,131072,2
gpu_check ./adamw --check-only --steps 10 --sizes 768,768,2304,589825
first gpu_check_large ./adamw --check-only
# planted bugs: the bias correction of the next step; version 3 leaving each tensor's last n % 4;
# version 4's last block never found (the count never stored: every step corrected as step 1)
mutant "adamw bias correction of the next step" adamw_kernels.cu \
    's/corrections(s->t), grad_scale/corrections(s->t + 1), grad_scale/' ./adamw 3 --check-only --sizes 1000,17
mutant "adamw version 4 never stores the step count" adamw_kernels.cu \
    's/== gridDim.x - 1;/== gridDim.x;/' ./adamw 4 --check-only --sizes 1000,17
mutant "adamw version 3 skips the tails" adamw_kernels.cu \
    's/    if (i < end) {$/    if (0 \&\& i < end) {/' ./adamw 3 --check-only --sizes 1001,6
bad_input 2 "torch_transformer: adamw times the model gpt2 (got 'gpt3')" python3 ../bench/torch_transformer.py adamw gpt3

# layernorm (forward three ways, RMSNorm and backward in every run)
bad_input 2 "unknown argument '--bogus'" ./layernorm --bogus
bad_input 0 'usage: layernorm ' ./layernorm --help
bad_input 2 '--size: at most 32768 columns' ./layernorm --size 2x40000
bad_input 2 '--offset must be in [-1e6, 1e6]' ./layernorm --offset 1e7
no_gpu ./layernorm
# one element (variance 0), one row, one column, no multiple of 4, the widest rows (version 3 with
# 1024 threads), rows whose mean is far from their spread (the cancellation E[x^2] - mean^2 suffers)
for s in 1x1 1x4097 3x1 1000x1023 257x4096 9x32768; do
    gpu_check ./layernorm --check-only --size $s
done
gpu_check ./layernorm --check-only --size 300x1000 --offset 1000
gpu_check ./layernorm --check-only --size 130x4097 --offset -50
gpu_check_large ./layernorm --check-only --size 2048x31 --seed 3
first gpu_check_large ./layernorm --check-only
# planted bugs: the one-pass variance E[x^2] - mean^2 (fine at offset 0, wrong at 1000); Welford's
# merge with equal weights (right only where the two counts are equal: 1000 columns make them
# unequal); dgamma without xh (the column sums of dY alone)
mutant "layernorm one-pass variance E[x^2] - mean^2" layernorm_kernels.cu \
    's/q += (xr\[c\] - mean) \* (xr\[c\] - mean);/q += xr[c] * xr[c];/; 0,/float rstd = rsqrtf(block_sum(q, slots) \/ cols + LN_EPS);/s//float rstd = rsqrtf(block_sum(q, slots) \/ cols - mean * mean + LN_EPS);/' \
    ./layernorm 1 --check-only --size 300x1000 --offset 1000
mutant "layernorm Welford merge with equal weights" layernorm_kernels.cu \
    's/float delta = meanb - mean, wb = nb \/ total;/float delta = meanb - mean, wb = 0.5f;/' ./layernorm 2 --check-only --size 64x1000
mutant "layernorm dgamma without xh" layernorm_kernels.cu \
    's/dg += dy\[i\] \* (x\[i\] - mean\[r\]) \* rstd\[r\];/dg += dy[i];/' ./layernorm --check-only --size 64x1000
# the one-read backward's column sums of the LayerNorm's own dX, without the residual's share R
mutant "layernorm backward_add sums its dX without R" layernorm_kernels.cu \
    's/if (SUM && LN_COL(i) < cols) ds\[i\] += res\[i\];/if (SUM \&\& LN_COL(i) < cols) ds[i] += rs * (a[i] - m1 - b[i] * m2);/' \
    ./layernorm --check-only --size 64x1000
# its software pipelining: the next row's R, loaded ahead, not taken (the last row's R + dX used)
mutant "layernorm backward_add keeps a row's R for the next" layernorm_kernels.cu \
    's/a\[i\] = na\[i\], b\[i\] = nb\[i\], res\[i\] = nres\[i\];/a[i] = na[i], b[i] = nb[i];/' \
    ./layernorm --check-only --size 64x1000

# attention (every version against the CPU, and against version 0 where it ran)
host_test test_attention
# the kernels on CPU threads (tests/emu), GPU or not: every version's indexing, fragments,
# copies, barriers and masks at the GPU cases' awkward shapes, small (S 17, 129, 200, 300; B and
# H of 1, 2, 3; D 64 and 128; causal; logits past 80); three of the planted bugs below
emu_check emu_attention 1 3 17 64 0
emu_check emu_attention 3 1 17 128 1
emu_check emu_attention 1 1 129 128 0
emu_check emu_attention 2 2 200 64 1
emu_check emu_attention 1 2 300 128 1 2 2 3 4 5 6 7
emu_check emu_attention 1 2 300 64 0 10 3 4 5 6 7
# version 7's blocks of 192 queries at D = 64: causal, a consumer's rows end before the block's
# last tiles (whole tiles masked for it), and its tile count must reach the block's last row
emu_check emu_attention 1 2 1000 64 1 2 5 7
emu_mutant "attention version 7's causal blocks stop at a 128-query block's diagonal" attention_hopper.cu \
    's/tiles = att4_tiles(q0, seq, causal, L::Q_ROWS);/tiles = att4_tiles(q0, seq, causal);/' \
    emu_attention 1 1 1000 64 1 2 7
# version 6's blocks walking several items each (few SMs): rings, turns and Q's barriers across items
EMU_ENV=EMU_SMS=3 emu_check emu_attention 2 3 1000 64 1 2 6
EMU_ENV=EMU_SMS=5 emu_check emu_attention 1 3 700 128 0 2 6
EMU_ENV=EMU_SMS=3 emu_mutant "attention version 6 deals its items to the wrong heads" attention_hopper.cu \
    's/\*bh = causal ? item % heads : item \/ qblocks;/*bh = item % heads;/' emu_attention 1 3 300 128 0 2 6
emu_mutant "attention versions 4-6 read V's second 64 columns from the first" attention_hopper.cu \
    's/wgmma_desc_mn(sV + ks \* 16 \* 128, ATT4_BOX_BYTES(ATT4_KEYS))/wgmma_desc_mn(sV + ks * 16 * 128, 0)/' \
    emu_attention 1 1 300 128 0 2 4 5
emu_mutant "attention causal mask one key too far" attention_device.cuh \
    's/return causal ? min(query, seq - 1) : seq - 1;/return causal ? min(query + 1, seq - 1) : seq - 1;/' \
    emu_attention 2 1 300 64 1 2 3
# a read past K and V's end (NaN there, as on the GPU) and results read before their wait: the
# emulation lands cp.async copies and wgmma accumulators only at the wait that covers them
emu_mutant "attention version 3 copies whole tiles past S's end" attention_kernels.cu \
    's/src + (size_t)(r < valid ? r : 0) \* D + c, r < valid);/src + (size_t)r * D + c, true);/' \
    emu_attention 1 1 300 64 0 2 3
emu_mutant "attention version 3 reads a K/V tile before its cp.async wait" attention_kernels.cu \
    's|cp_async_wait<1>(); /\* all but the newest group: tile t has landed \*/|;|' emu_attention 1 1 300 64 0 2 3
# the log-sum-exp every version also writes (the backward pass's input) taken in log2 units
emu_mutant "attention versions 3-6 keep the log-sum-exp in log2 units" attention_device.cuh \
    's/return (m - log2f(inv_l)) \* LN2;/return m - log2f(inv_l);/' emu_attention 1 1 300 128 0 2 3 5
emu_mutant "attention version 5 reads S before its wgmma wait" attention_hopper.cu \
    's|wgmma_wait<1>(); /\* S has landed; P V may still run \*/|;|' emu_attention 1 1 300 128 0 2 5
# a version added the way attention's table says (a launcher and its row in launchers[], the count, a
# row in versions[]): it must build, be listed and (with a GPU) pass; a half-done edit must stop the build
if [ $SANITIZE = 0 ]; then
    want=0; [ $HAVE_GPU = 1 ] || want=77
    first run_case "$CHAPTER: an attention version added by the table's steps" $want "" "" bash ../tests/add_version.sh attention "$LOG_DIR/add_version_attention"
fi
bad_input 2 "unknown argument '--bogus'" ./attention --bogus
bad_input 0 'usage: attention ' ./attention --help
bad_input 2 '--dim must be 64 or 128 (got 96)' ./attention --dim 96
bad_input 2 '--size: S must be 1..65536 (got 65537)' ./attention --size 65537
bad_input 2 '--batch and --heads must be positive, B x H at most 65535 (got 300 x 300)' ./attention --batch 300 --heads 300
bad_input 2 "--size: '2^-1' is not a size" ./attention --size 2^-1
bad_input 2 "--seed: '1e' is not a number" ./attention --seed 1e
bad_input 2 '--amplitude must be in (0, 100]' ./attention --amplitude 0
bad_input 2 'B x H x S x D must be at most 2^31' ./attention --batch 64 --heads 64 --size 65536 --dim 128
bad_input 2 "version '8' does not exist (0..7)" ./attention 8
no_gpu ./attention
# one query, a prime length, one key past a tile, lengths that end mid-tile (1000: 15 x 64 + 40,
# 4097: 32 x 128 + 1), B and H of 1 and 3, D 64 and 128, causal and not; logits past 80
for s in 1 17 1000; do
    check=gpu_check
    [ $s = 1000 ] && check=gpu_check_large # the sanitizers take the shorter ones
    $check ./attention --check-only --size $s --batch 1 --heads 3 --dim 64
    $check ./attention --check-only --size $s --batch 3 --heads 1 --dim 128 --causal
done
gpu_check ./attention --check-only --size 129 --batch 1 --heads 1 --dim 128
gpu_check ./attention --check-only --size 200 --batch 2 --heads 2 --dim 64 --causal
gpu_check ./attention --check-only --size 300 --batch 1 --heads 2 --amplitude 10
gpu_check ./attention --check-only --size 300 --batch 1 --heads 2 --dim 64 --amplitude 10 --causal
gpu_check_large ./attention --check-only --size 4097 --batch 1 --heads 3 --dim 64 --causal
gpu_check_large ./attention --check-only --size 4097 --batch 1 --heads 1 --dim 128
gpu_check_large ./attention --check-only --size 1024 --batch 8 --heads 16 --dim 64 --causal
# planted bugs: O not rescaled when a row's max grows (versions 2 and 3), the last partial tile of
# keys skipped (3: 1000 keys are 15 tiles of 64 and 40), wgmma reading V's columns 64-127 from its
# first box (4-6 share the descriptor; D = 128 only), version 6's items dealt to the wrong heads
# (2048 x 16 heads: 256 items, more than the SMs), the causal mask one key too far (every
# version shares last_key; version 3 runs it)
# --lse: every version writes each row's log-sum-exp, checked on the sampled rows
gpu_check ./attention --check-only --lse --size 1000 --batch 1 --heads 3 --dim 64 --causal
gpu_check ./attention --check-only --lse --size 4097 --batch 1 --heads 1 --dim 128
gpu_check_large ./attention --check-only --lse --size 1024 --batch 8 --heads 16 --dim 64 --causal
mutant "attention versions 3-6 keep the log-sum-exp in log2 units" attention_device.cuh \
    's/return (m - log2f(inv_l)) \* LN2;/return m - log2f(inv_l);/' \
    ./attention 5 --check-only --lse --size 300 --batch 1 --heads 2 --dim 128
mutant "attention version 3 without the rescale of O" attention_kernels.cu \
    's/o\[j\]\[0\] \*= alpha\[0\], o\[j\]\[1\] \*= alpha\[0\], o\[j\]\[2\] \*= alpha\[1\], o\[j\]\[3\] \*= alpha\[1\];/;/' \
    ./attention 3 --check-only --size 1000 --batch 1 --heads 2 --dim 64
mutant "attention version 2 without the rescale of O" attention_kernels.cu \
    's/for (int c = 0; c < C; c++) o\[c\].x \*= alpha, o\[c\].y \*= alpha, o\[c\].z \*= alpha, o\[c\].w \*= alpha;/;/' \
    ./attention 2 --check-only --size 1000 --batch 1 --heads 2 --dim 128
mutant "attention version 3 skips the last partial tile of keys" attention_kernels.cu \
    's/int tiles = (seq + ATT3_KEYS - 1) \/ ATT3_KEYS;/int tiles = max(1, seq \/ ATT3_KEYS);/' \
    ./attention 3 --check-only --size 1000 --batch 1 --heads 2 --dim 128
mutant "attention versions 4-6 read V's second 64 columns from the first" attention_hopper.cu \
    's/wgmma_desc_mn(sV + ks \* 16 \* 128, ATT4_BOX_BYTES(ATT4_KEYS))/wgmma_desc_mn(sV + ks * 16 * 128, 0)/' \
    ./attention 5 --check-only --size 300 --batch 1 --heads 2 --dim 128
mutant "attention version 6 deals its items to the wrong heads" attention_hopper.cu \
    's/\*bh = causal ? item % heads : item \/ qblocks;/*bh = item % heads;/' \
    ./attention 6 --check-only --size 2048 --batch 2 --heads 8 --dim 64
mutant "attention version 7's causal blocks stop at a 128-query block's diagonal" attention_hopper.cu \
    's/tiles = att4_tiles(q0, seq, causal, L::Q_ROWS);/tiles = att4_tiles(q0, seq, causal);/' \
    ./attention 7 --check-only --size 1000 --batch 1 --heads 2 --dim 64 --causal
mutant "attention causal mask one key too far" attention_device.cuh \
    's/return causal ? min(query, seq - 1) : seq - 1;/return causal ? min(query + 1, seq - 1) : seq - 1;/' \
    ./attention 3 --check-only --size 300 --batch 2 --heads 1 --dim 64 --causal
# version 3 copies the last tile's rows past S whole instead of zero-filling them: in the last head
# they lie past K and V's end, where the guard's NaN (times P's zeros) makes O NaN
mutant "attention version 3 copies whole tiles past S's end" attention_kernels.cu \
    's/src + (size_t)(r < valid ? r : 0) \* D + c, r < valid);/src + (size_t)r * D + c, true);/' \
    ./attention 3 --check-only --size 1000 --batch 1 --heads 1 --dim 64
bad_input 2 "torch_transformer: '4x16x4096' is not an attention shape BxHxSxD[_causal]" python3 ../bench/torch_transformer.py attention 4x16x4096
bad_input 2 "torch_transformer: '4x16x4096x96': D must be 64 or 128" python3 ../bench/torch_transformer.py attention_backward 4x16x4096x96

# attention_backward: dQ, dK, dV from dO; every element of whole heads against the CPU in double
# (attention_backward_head_cpu, itself checked by finite differences in test_attention) within
# attention_backward_bound, and every element against version 0
bad_input 2 "unknown argument '--bogus'" ./attention_backward --bogus
bad_input 0 'usage: attention_backward ' ./attention_backward --help
bad_input 2 '--dim must be 64 or 128 (got 96)' ./attention_backward --dim 96
bad_input 2 '--size: S must be 1..65536 (got 65537)' ./attention_backward --size 65537
bad_input 2 '--batch and --heads must be positive, B x H at most 65535 (got 300 x 300)' ./attention_backward --batch 300 --heads 300
bad_input 2 "version '5' does not exist (0..4)" ./attention_backward 5
no_gpu ./attention_backward
gpu_check ./attention_backward --check-only --size 1 --batch 3 --heads 1 --dim 128 --causal
gpu_check ./attention_backward --check-only --size 17 --batch 1 --heads 3 --dim 64
gpu_check ./attention_backward --check-only --size 129 --batch 1 --heads 2 --dim 128 --causal
gpu_check ./attention_backward --check-only --size 300 --batch 1 --heads 2 --dim 64 --amplitude 10
gpu_check_large ./attention_backward --check-only --size 1000 --batch 3 --heads 1 --dim 128 --causal
gpu_check_large ./attention_backward --check-only --size 4097 --batch 1 --heads 1 --dim 64 --causal
gpu_check_large ./attention_backward --check-only --size 1024 --batch 2 --heads 8 --dim 128
# past whole heads on the CPU: dQ on sampled rows, dK and dV against version 0, which runs even
# when version 1 alone is asked for
gpu_expect 0 "dK and dV against version 0" ./attention_backward 1 --check-only --size 4096 --batch 1 --heads 2 --dim 128
# the same kernels on CPU threads, and the planted bugs of the issue: the rowsum(dO o O) term
# dropped, the causal mask one key too far, one key block's share of dQ lost, dS without the scale
emu_check emu_attention_backward 1 1 1 64 1
emu_check emu_attention_backward 3 1 17 128 1
emu_check emu_attention_backward 1 3 33 64 0
emu_check emu_attention_backward 2 2 129 128 1
emu_check emu_attention_backward 1 1 300 64 1 10
emu_mutant "attention backward 1 without the rowsum(dO o O) term" attention_backward_kernels.cu \
    's/float ds = p \* (dp - sDelta\[r\]) \* scale;/float ds = p * dp * scale;/' emu_attention_backward 1 2 100 64 1
emu_mutant "attention backward 1 causal mask one key too far" attention_backward_kernels.cu \
    's/(!causal || key <= row)/(!causal || key <= row + 1)/' emu_attention_backward 1 2 100 64 1
emu_mutant "attention backward 1 loses the first key block's dQ" attention_backward_kernels.cu \
    's/            atomicAdd(dq_acc + head/            if (blockIdx.x) atomicAdd(dq_acc + head/' \
    emu_attention_backward 1 2 100 64 1
emu_check emu_attention_backward 1 1 65 64 1 2 2
emu_check emu_attention_backward 1 2 200 128 0 10 2
emu_mutant "attention backward 2 without the rowsum(dO o O) term" attention_backward_kernels.cu \
    's/ds\[j\]\[e\] = pt\[j\]\[e\] \* (ds\[j\]\[e\] - sDelta\[ql\]) \* scale;/ds[j][e] = pt[j][e] * ds[j][e] * scale;/' \
    emu_attention_backward 1 2 100 64 1 2 2
emu_mutant "attention backward 2 adds dS K over three of its four key groups" attention_backward_kernels.cu \
    's/for (int kk = 0; kk < BWD2_KEYS \/ 16; kk++) {/for (int kk = 0; kk < BWD2_KEYS \/ 16 - 1; kk++) {/' \
    emu_attention_backward 1 2 100 64 1 2 2
emu_check emu_attention_backward 2 2 129 128 1 2 3
emu_check emu_attention_backward 1 1 300 64 1 10 3
emu_mutant "attention backward 3 writes dS^T without the swizzle" attention_backward_hopper.cu \
    's/(((c \/ 8) ^ (r % 8)) \* 16)/((c \/ 8) * 16)/' emu_attention_backward 1 2 100 64 1 2 3
emu_mutant "attention backward 3 multiplies dS by V instead of K" attention_backward_hopper.cu \
    's/wgmma_desc_mn(sK + ks \* 16 \* 128, BWD3_BOX);/wgmma_desc_mn(sV + ks * 16 * 128, BWD3_BOX);/' \
    emu_attention_backward 1 2 100 64 1 2 3
emu_check emu_attention_backward 3 1 17 64 0 2 4
emu_check emu_attention_backward 2 2 129 128 1 2 4
emu_check emu_attention_backward 1 1 300 64 1 10 4
emu_check emu_attention_backward 1 2 200 128 0 10 4
# token rows, ch12's layout (Q, K, V and their gradients inside (B, S, 3 H D) rows, O and dO inside
# (B, S, H D)): the four-dimensional tensor maps, the stores of O, dK and dV, delta's reads and dQ's
# conversion, forward and backward; four planted bugs, each where a contiguous layout would hide it
EMU_ENV=EMU_TOKEN_ROWS=1 emu_check emu_attention 2 3 200 64 1
EMU_ENV=EMU_TOKEN_ROWS=1 emu_check emu_attention 3 2 129 128 0
EMU_ENV=EMU_TOKEN_ROWS=1 emu_check emu_attention_backward 2 3 200 64 1
EMU_ENV=EMU_TOKEN_ROWS=1 emu_check emu_attention_backward 3 2 129 128 0
EMU_ENV=EMU_TOKEN_ROWS=1 emu_mutant "attention versions 4-6 load token rows with head and batch swapped" attention_hopper.cu \
    's|int h = bh % heads, b4 = bh / heads;|int h = bh / heads, b4 = bh % heads;|' emu_attention 2 3 200 64 1 2 4
EMU_ENV=EMU_TOKEN_ROWS=1 emu_mutant "attention backward 4 writes dK and dV rows a head apart" attention_backward_hopper.cu \
    's/long long at = head + key\[h\] \* rows.row + col;/long long at = head + key[h] * rows.head + col;/' \
    emu_attention_backward 2 3 200 64 1 2 4
EMU_ENV=EMU_TOKEN_ROWS=1 emu_mutant "attention backward's delta reads O and dO as contiguous heads" attention_backward_kernels.cu \
    's/attention_rows_of(p->heads, p->seq, p->dim, p->ld_o);/attention_rows_of(p->heads, p->seq, p->dim, 0);/' \
    emu_attention_backward 2 3 200 64 1 2 4
EMU_ENV=EMU_TOKEN_ROWS=1 emu_mutant "attention backward converts dQ into contiguous heads" attention_backward_kernels.cu \
    's/attention_rows_of(p->heads, p->seq, p->dim, p->ld_qkv), p->seq/attention_rows_of(p->heads, p->seq, p->dim, 0), p->seq/' \
    emu_attention_backward 2 3 200 64 1 2 4
emu_mutant "attention backward 4 adds each dQ block at the first columns" attention_backward_hopper.cu \
    's/64 \* nd + 32 \* box, q0 + 64 \* mq/32 * box, q0 + 64 * mq/' emu_attention_backward 1 2 200 128 0 2 4
emu_mutant "attention backward 4 writes its dQ boxes before the last reduce has read them" attention_backward_hopper.cu \
    's/if (leader) bulk_wait_read<0>();/if (0) bulk_wait_read<0>();/' emu_attention_backward 1 2 300 128 1 2 4
emu_mutant "attention backward 4 stores the next tile's rows over this tile's" attention_backward_hopper.cu \
    's/store_row_value<D>(sm, b ^ 1, next);/store_row_value<D>(sm, b, next);/' emu_attention_backward 1 2 300 128 1 2 4
# version 4 skips the mask on a tile it takes for wholly below the diagonal: one key too early,
# the diagonal tile of its second consumer passes as such
emu_mutant "attention backward 4 takes the diagonal tile for one below it" attention_backward_hopper.cu \
    's/(!causal || k0 + 64 \* c + 63 <= q0)/(!causal || k0 + 64 * c <= q0)/' emu_attention_backward 1 2 300 128 1 2 4
emu_mutant "attention backward 1 leaves the softmax scale out of dS" attention_backward_kernels.cu \
    's/float ds = p \* (dp - sDelta\[r\]) \* scale;/float ds = p * (dp - sDelta[r]);/' emu_attention_backward 1 2 100 64 1
mutant "attention backward 1 without the rowsum(dO o O) term" attention_backward_kernels.cu \
    's/float ds = p \* (dp - sDelta\[r\]) \* scale;/float ds = p * dp * scale;/' \
    ./attention_backward 1 --check-only --size 300 --batch 1 --heads 2 --dim 64 --causal
mutant "attention backward 2 adds dS K over three of its four key groups" attention_backward_kernels.cu \
    's/for (int kk = 0; kk < BWD2_KEYS \/ 16; kk++) {/for (int kk = 0; kk < BWD2_KEYS \/ 16 - 1; kk++) {/' \
    ./attention_backward 2 --check-only --size 300 --batch 1 --heads 2 --dim 128 --causal
mutant "attention backward 3 writes dS^T without the swizzle" attention_backward_hopper.cu \
    's/(((c \/ 8) ^ (r % 8)) \* 16)/((c \/ 8) * 16)/' \
    ./attention_backward 3 --check-only --size 300 --batch 1 --heads 2 --dim 128 --causal
mutant "attention backward 4 adds each dQ block at the first columns" attention_backward_hopper.cu \
    's/64 \* nd + 32 \* box, q0 + 64 \* mq/32 * box, q0 + 64 * mq/' \
    ./attention_backward 4 --check-only --size 300 --batch 1 --heads 2 --dim 128
mutant "attention backward 0 without the rowsum(dO o O) term" attention_backward_kernels.cu \
    's/dS\[e\] = lb_bf16_rn(p \* (dp\[e\] - dl) \* scale);/dS[e] = lb_bf16_rn(p * dp[e] * scale);/' \
    ./attention_backward 0 --check-only --size 300 --batch 1 --heads 2 --dim 64 --causal
