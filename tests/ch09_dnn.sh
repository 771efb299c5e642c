# tests/ch09_dnn.sh - cases for ch09_dnn, sourced by tests/run.sh (helpers are defined there).
host_test test_dnn_data
host_test test_dnn

bad_input 2 "unknown argument '--bogus'" ./dnn --bogus
bad_input 0 'usage: dnn ' ./dnn --help
bad_input 2 '--act must be relu or sigmoid' ./dnn --act tanh
bad_input 2 '--epochs must be 0..1000000' ./dnn --epochs -5
bad_input 2 '--batch must be 1..65536' ./dnn --batch 0
bad_input 2 '--lr must be in (0, 100)' ./dnn --lr 0
bad_input 2 '--momentum must be in [0, 1)' ./dnn --momentum 1
bad_input 2 '--test-frac must be in (0, 1)' ./dnn --test-frac 1
bad_input 2 'no-such-file.csv: cannot open: No such file or directory (run from' ./dnn --data no-such-file.csv
bad_input 2 "../tests/data/bad_field.csv:3: field 2 ('x') is not a number" ./dnn --data ../tests/data/bad_field.csv
bad_input 2 "../tests/data/bad_label.csv:2: label '5' is not a class number 0..1" ./dnn --data ../tests/data/bad_label.csv
bad_input 2 '../tests/data/bad_count.csv:2: 4 fields, expected 4 features and a' ./dnn --data ../tests/data/bad_count.csv
bad_input 2 '../tests/data/plain_p2.pgm:1: bad header (expected' ./dnn --data ../tests/data/plain_p2.pgm
bad_input 2 'the network takes 4 features to 2 classes, ../datasets/iris.csv has 4' ./dnn --layers 4,8,2
bad_input 2 '--layers takes 2 to 9 sizes, each 1..65536, e.g. 4,16,16,3' ./dnn --layers 4
bad_input 2 'no-such-weights.bin: cannot open: No such file or directory' ./dnn --load no-such-weights.bin
bad_input 2 '../tests/data/plain_p2.pgm: not a weights file of this program (bad' ./dnn --load ../tests/data/plain_p2.pgm
bad_input 2 '../datasets/digits.csv has 64 features and 10 classes, the training' ./dnn --predict ../datasets/digits.csv
bad_input 2 '--synthetic takes sizes F,H,...,C (2 to 9 numbers, each 1..65536)' ./dnn --synthetic 5
bad_input 2 "one class ('alpha'): a classifier needs at least 2" ./dnn --data ../tests/data/one_class.csv
bad_input 2 "../tests/data: is a folder, not a CSV file" ./dnn --data ../tests/data
bad_input 2 '--epochs must be 0..1000000' ./dnn --epochs -1
bad_input 2 '--batch must be 1..65536' ./dnn --batch -1
bad_input 2 '--lr must be in (0, 100)' ./dnn --lr -1
bad_input 2 '--min-accuracy must be a percentage, 0..100' ./dnn --min-accuracy 200
bad_input 2 '--layers takes 2 to 9 sizes, each 1..65536' ./dnn --layers 4,1000000000,3
bad_input 2 "--save 'no-such-folder/w.bin': no folder 'no-such-folder'" ./dnn --save no-such-folder/w.bin
# a weights file is enough to predict (no --data); rows of another shape, an old or a damaged
# file, and training without data are refused before the GPU is touched
bad_input 2 'digits.csv has 64 features and 10 classes, the network in ../tests/data/iris_linear.bin takes 4 features to 3 classes' ./dnn --load ../tests/data/iris_linear.bin --predict ../datasets/digits.csv
bad_input 2 'a weights file of version 1; this program reads version 2' ./dnn --load ../tests/data/weights_v1.bin --predict ../datasets/iris.csv
bad_input 2 'size does not match its header' ./dnn --load ../tests/data/bad_names.bin --predict ../datasets/iris.csv
bad_input 2 '--epochs: training needs --data' ./dnn --load ../tests/data/iris_linear.bin --predict ../datasets/iris.csv --epochs 5
no_gpu ./dnn --load ../tests/data/iris_linear.bin --predict ../datasets/iris.csv
gpu_expect 0 "of 150 labelled rows classified right" ./dnn --load ../tests/data/iris_linear.bin --predict ../datasets/iris.csv
no_gpu ./dnn
no_gpu ./dnn --synthetic 784,1024,10

# the backward pass against finite differences (the book's method), several shapes
gpu_check ./dnn --gradcheck
gpu_check ./dnn --gradcheck --act sigmoid
gpu_check ./dnn --gradcheck --layers 4,3
gpu_check ./dnn --gradcheck --layers 4,7,5,6,3 --seed 3
gpu_check ./dnn --gradcheck --data ../datasets/digits.csv
gpu_check ./dnn --gradcheck --layers 4,5,3 --adam --seed 5
# a planted bug: the gradient of every odd hidden unit is halved. A gradcheck that samples
# every second parameter of rows of even length never looks at them
mutant "dnn backward halves the odd units' gradients" dnn_kernels.cu \
    's/float g = da\[i\] \* activate_grad(a\[i\], act);/float g = da[i] * activate_grad(a[i], act) * (c \& 1 ? 0.5f : 1.0f);/' \
    ./dnn --gradcheck --data ../datasets/digits.csv
# it learns: accuracy bounds on both data sets, with SGD and with Adam
gpu_check_large ./dnn --quiet --min-accuracy 93
gpu_check_large ./dnn --quiet --adam --epochs 100 --min-accuracy 90
gpu_check_large ./dnn --quiet --act sigmoid --epochs 300 --min-accuracy 90
gpu_check_large ./dnn --quiet --data ../datasets/digits.csv --min-accuracy 95 --vs-linear
# a planted bug: the hidden layer passes only 8 of its units; the network must then lose to
# logistic regression trained on the same split
mutant "dnn hidden layer with 8 live units" dnn_kernels.cu \
    's/z\[i\] = activate(z\[i\] + b\[i % cols\], act);/z[i] = i % cols < 8 ? activate(z[i] + b[i % cols], act) : 0.0f;/' \
    ./dnn --quiet --data ../datasets/digits.csv --vs-linear
# the same seed gives the same weights, bit for bit, with or without the CUDA graph
gpu_check_large bash -c 'a=$(mktemp) b=$(mktemp) c=$(mktemp); ./dnn --quiet --epochs 20 --save $a && ./dnn --quiet --epochs 20 --save $b && ./dnn --quiet --epochs 20 --no-graph --save $c && cmp $a $b && cmp $a $c; r=$?; rm -f $a $b $c; exit $r'
# save, then load and predict without --data: the same predictions as the run that trained
gpu_check_large bash -c 'w=$(mktemp); a=$(./dnn --quiet --epochs 30 --save $w --predict ../datasets/iris.csv | grep " row ") && b=$(./dnn --quiet --load $w --predict ../datasets/iris.csv | grep " row ") && [ -n "$a" ] && [ "$a" = "$b" ]; r=$?; rm -f $w; exit $r'
gpu_check ./dnn --synthetic 64,32,10 --batch 16 --iters 2
# a planted bug: the optimizer computes its step but never applies it; the loss must fall
mutant "dnn SGD never updates the weights" dnn_kernels.cu 's/        w\[i\] += vi;/        w[i] += 0.0f * vi;/' \
    ./dnn --synthetic 64,32,10 --batch 16 --iters 2
gpu_check ./dnn --synthetic 20,17,9,3 --batch 7 --iters 2 --adam
# the step against its own GEMMs timed the same way (graph against graph, launches against
# launches): never faster than the GEMMs it contains
gpu_check_large bash ../tests/like_for_like.sh step_graph gemms_graph ./dnn --synthetic 64,32,10 --batch 16 --iters 5
gpu_check_large bash ../tests/like_for_like.sh step_launches gemms_launched ./dnn --synthetic 64,32,10 --batch 16 --iters 5
