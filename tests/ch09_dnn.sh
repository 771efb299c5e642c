# tests/ch09_dnn.sh - cases for ch09_dnn, sourced by tests/run.sh (helpers are defined there).
host_test test_dnn_data
host_test test_dnn

bad_input 2 ./dnn --bogus
bad_input 0 ./dnn --help
bad_input 2 ./dnn --act tanh
bad_input 2 ./dnn --epochs -5
bad_input 2 ./dnn --batch 0
bad_input 2 ./dnn --lr 0
bad_input 2 ./dnn --momentum 1
bad_input 2 ./dnn --test-frac 1
bad_input 2 ./dnn --data no-such-file.csv
bad_input 2 ./dnn --data ../tests/data/bad_field.csv
bad_input 2 ./dnn --data ../tests/data/bad_label.csv
bad_input 2 ./dnn --data ../tests/data/bad_count.csv
bad_input 2 ./dnn --data ../tests/data/plain_p2.pgm
bad_input 2 ./dnn --layers 4,8,2
bad_input 2 ./dnn --layers 4
bad_input 2 ./dnn --load no-such-weights.bin
bad_input 2 ./dnn --load ../tests/data/plain_p2.pgm
bad_input 2 ./dnn --predict ../datasets/digits.csv
bad_input 2 ./dnn --synthetic 5
no_gpu ./dnn
no_gpu ./dnn --synthetic 784,1024,10

# the backward pass against finite differences (the book's method), several shapes
gpu_check ./dnn --gradcheck
gpu_check ./dnn --gradcheck --act sigmoid
gpu_check ./dnn --gradcheck --layers 4,3
gpu_check ./dnn --gradcheck --layers 4,7,5,6,3 --seed 3
gpu_check ./dnn --gradcheck --data ../datasets/digits.csv
# it learns: accuracy bounds on both data sets, with SGD and with Adam
gpu_check_large ./dnn --quiet --min-accuracy 93
gpu_check_large ./dnn --quiet --adam --epochs 100 --min-accuracy 90
gpu_check_large ./dnn --quiet --act sigmoid --epochs 300 --min-accuracy 90
gpu_check_large ./dnn --quiet --data ../datasets/digits.csv --min-accuracy 95
# the same seed gives the same weights, bit for bit, with or without the CUDA graph
gpu_check_large bash -c 'a=$(mktemp) b=$(mktemp) c=$(mktemp); ./dnn --quiet --epochs 20 --save $a && ./dnn --quiet --epochs 20 --save $b && ./dnn --quiet --epochs 20 --no-graph --save $c && cmp $a $b && cmp $a $c; r=$?; rm -f $a $b $c; exit $r'
# save, load: the same predictions
gpu_check_large bash -c 'w=$(mktemp); a=$(./dnn --quiet --epochs 30 --save $w --predict ../datasets/iris.csv | grep " row ") && b=$(./dnn --quiet --load $w --predict ../datasets/iris.csv | grep " row ") && [ -n "$a" ] && [ "$a" = "$b" ]; r=$?; rm -f $w; exit $r'
gpu_check ./dnn --synthetic 64,32,10 --batch 16 --iters 2
gpu_check ./dnn --synthetic 20,17,9,3 --batch 7 --iters 2 --adam
