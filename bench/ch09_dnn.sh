# bench/ch09_dnn.sh - what `make bench` measures in ch09_dnn (sourced by bench/run.sh)
# accuracy: the mean and sd over five seeds (five splits), and 10-fold cross-validation
measure ./dnn --seeds 5
measure ./dnn --kfold 10
measure ./dnn --data ../datasets/digits.csv --seeds 5
# the same on seeds 6-10: splits and weights the defaults were not tuned on (they were chosen
# on seeds 1-5), so the accuracy above is not the tuning's own
measure ./dnn --seeds 5 --seed 6
measure ./dnn --data ../datasets/digits.csv --seeds 5 --seed 6
# the training step, both paths (fp32, then TF32 for the cuBLAS path), and PyTorch's step as a
# CUDA graph on the same shapes (skipped where python3 has no torch)
for shape in "784,1024,10 --batch 128" "784,1024,10 --batch 1024" "1024,4096,4096,1000 --batch 512"; do
    # shellcheck disable=SC2086  # the shape and its batch are two words
    measure ./dnn --synthetic $shape
    # shellcheck disable=SC2086
    measure ./dnn --synthetic $shape --tf32
done
measure python3 ../bench/torch_mlp.py 784,1024,10 128
measure python3 ../bench/torch_mlp.py 784,1024,10 1024
measure python3 ../bench/torch_mlp.py 1024,4096,4096,1000 512
