# bench/ch11_transformer.sh - what `make bench` measures in ch11_transformer (sourced by bench/run.sh)
# softmax at the issue's size (16384 rows of 4096: 512 MiB moved) and at a vocabulary's width,
# each beside PyTorch's softmax on the same shape (skipped where python3 has no torch)
measure ./softmax
measure ./softmax --size 2048x32768
measure python3 ../bench/torch_transformer.py softmax 16384x4096
measure python3 ../bench/torch_transformer.py softmax 2048x32768
# the cross-entropy and its gradient over GPT-2's vocabulary padded to 50304, beside PyTorch's
# F.cross_entropy forward and backward
measure ./cross_entropy
measure python3 ../bench/torch_transformer.py cross_entropy 8192x50304
# AdamW over GPT-2 small's 148 tensors, beside PyTorch's fused AdamW on the same tensors
measure ./adamw
measure python3 ../bench/torch_transformer.py adamw gpt2
# LayerNorm (and RMSNorm) forward at the issue's size, beside PyTorch's
measure ./layernorm
measure python3 ../bench/torch_transformer.py layernorm 16384x4096
measure python3 ../bench/torch_transformer.py rmsnorm 16384x4096
# attention at the six shapes of issue 41 (B x H x S x D, causal and not), every version beside
# PyTorch's flash (FlashAttention-2) and cuDNN backends on the same shape
for shape in "--batch 4 --heads 16 --size 4096 --dim 128" "--batch 4 --heads 16 --size 4096 --dim 64" \
             "--batch 8 --heads 16 --size 1024 --dim 64"; do
    measure ./attention $shape
    measure ./attention $shape --causal
done
for shape in 4x16x4096x128 4x16x4096x64 8x16x1024x64; do
    measure python3 ../bench/torch_transformer.py attention $shape
    measure python3 ../bench/torch_transformer.py attention ${shape}_causal
done
# attention's backward pass, every version beside PyTorch's flash and cuDNN backward, at the
# smallest of the forward's shapes and at the largest (there the CPU checks dQ on sampled rows and
# version 0 is the reference of dK and dV; version 1 takes about 0.1 s a call)
for shape in 8x16x1024x64 4x16x4096x64 4x16x4096x128; do
    IFS=x read -r b h s d <<<"$shape"
    measure ./attention_backward --batch "$b" --heads "$h" --size "$s" --dim "$d"
    measure ./attention_backward --batch "$b" --heads "$h" --size "$s" --dim "$d" --causal
    measure python3 ../bench/torch_transformer.py attention_backward "$shape"
    measure python3 ../bench/torch_transformer.py attention_backward "${shape}_causal"
done
