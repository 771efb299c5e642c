# tests/ch11_transformer.sh - cases for ch11_transformer, sourced by tests/run.sh (helpers are defined there).
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
gpu_check_large ./softmax --check-only
# planted bugs the check must catch: the online softmax without its rescale (a larger element
# only moves the max), and version 5 reading its rows one float4 short
mutant "softmax online sum not rescaled" softmax_kernels.cu \
    's/d = d \* fast_exp(m - v) + 1.0f;/d = d + 1.0f;/' ./softmax 4 --check-only --size 64x1000
mutant "softmax version 5 drops each row's last float4" softmax_kernels.cu \
    's/float4 q = c4 < cols \/ 4 ?/float4 q = c4 < cols \/ 4 - 1 ?/' ./softmax 5 --check-only --size 64x4096
# PyTorch's side of the chapter's measurements answers like the programs
bad_input 0 'usage: torch_transformer.py' python3 ../bench/torch_transformer.py --help
bad_input 2 "torch_transformer: 'soft' is not an operation this script times" python3 ../bench/torch_transformer.py soft 16x16
bad_input 2 "torch_transformer: '16y16' is not a shape ROWSxCOLS" python3 ../bench/torch_transformer.py softmax 16y16
