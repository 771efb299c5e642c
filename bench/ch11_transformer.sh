# bench/ch11_transformer.sh - what `make bench` measures in ch11_transformer (sourced by bench/run.sh)
# softmax at the size (16384 rows of 4096: 512 MiB moved) and at a vocabulary's width,
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
# LayerNorm (and RMSNorm) forward at the size, beside PyTorch's
measure ./layernorm
measure python3 ../bench/torch_transformer.py layernorm 16384x4096
measure python3 ../bench/torch_transformer.py rmsnorm 16384x4096
