# bench/ch09_dnn.sh - what `make bench` measures in ch09_dnn (sourced by bench/run.sh)
for seed in 1 2 3 4 5; do measure ./dnn --seed $seed; done
measure ./dnn --data ../datasets/digits.csv
measure ./dnn --synthetic 784,1024,10 --batch 128
