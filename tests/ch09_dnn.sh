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
bad_input 2 "../tests/data/huge_field.csv:2: field 1 ('1e40') is too large for a float" ./dnn --data ../tests/data/huge_field.csv
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
bad_input 2 '--val-frac must be in [0, 1)' ./dnn --val-frac 1
bad_input 2 '--patience must be 0 or more' ./dnn --patience -3
bad_input 2 '--weight-decay must be in [0, 1)' ./dnn --weight-decay -0.1
bad_input 2 '--schedule must be cosine, step or none' ./dnn --schedule linear
bad_input 2 '--seeds must be 1..1000' ./dnn --seeds 0
bad_input 2 '--kfold must be 2..1000' ./dnn --kfold 1
bad_input 2 '--kfold and --seeds: pick one' ./dnn --kfold 5 --seeds 3
bad_input 2 'dnn: --kfold 151 needs at least 151 rows; ../datasets/iris.csv has 150' ./dnn --kfold 151
bad_input 2 'the header promises 16777217 samples, the file ends after 1' ./dnn --data ../tests/data/header_2p24p1.csv
bad_input 2 '--fused, --cublas and --lt: pick one path' ./dnn --fused --cublas
bad_input 2 '--fused, --cublas and --lt: pick one path' ./dnn --lt --cublas
bad_input 2 "--lt: cuBLASLt's epilogues have ReLU (and GELU), not the sigmoid" ./dnn --lt --act sigmoid
bad_input 2 '--steps must be 2..100000' ./dnn --synthetic 64,32,10 --steps 1
bad_input 2 '--check-optimizer runs alone: no --synthetic, --gradcheck' ./dnn --check-optimizer --gradcheck
bad_input 2 '--check-tf32 runs alone: no --check-optimizer' ./dnn --check-tf32 --check-optimizer
bad_input 2 "--steps is --synthetic's: not without it" ./dnn --steps 3
bad_input 2 '--gradcheck compares fp32 gradients' ./dnn --gradcheck --tf32
bad_input 2 '--compare-paths compares fp32 training' ./dnn --compare-paths --tf32
bad_input 2 'no --save, --load, --predict, --gradcheck, --vs-linear or --compare-paths with them' ./dnn --seeds 3 --gradcheck
bad_input 2 'no samples left for training with --test-frac 0.5 and --val-frac 0.999' ./dnn --test-frac 0.5 --val-frac 0.999
# a weights file is enough to predict (no --data); rows of another shape, an old or a damaged
# file, and training without data are refused before the GPU is touched
bad_input 2 'digits.csv has 64 features and 10 classes, the network in ../tests/data/iris_linear.bin takes 4 features to 3 classes' ./dnn --load ../tests/data/iris_linear.bin --predict ../datasets/digits.csv
bad_input 2 'a weights file of version 1; this program reads version 2' ./dnn --load ../tests/data/weights_v1.bin --predict ../datasets/iris.csv
bad_input 2 'size does not match its header' ./dnn --load ../tests/data/bad_names.bin --predict ../datasets/iris.csv
bad_input 2 '--epochs: training needs --data' ./dnn --load ../tests/data/iris_linear.bin --predict ../datasets/iris.csv --epochs 5
# PyTorch's side of the step benchmark answers like the programs (its arguments read before torch)
bad_input 0 'usage: torch_mlp.py' python3 ../bench/torch_mlp.py --help
bad_input 2 "torch_mlp: 'abc' is not sizes F,H,...,C" python3 ../bench/torch_mlp.py abc
bad_input 2 "torch_mlp: the batch must be 1..65536 (got '0')" python3 ../bench/torch_mlp.py 784,1024,10 0
no_gpu ./dnn --load ../tests/data/iris_linear.bin --predict ../datasets/iris.csv
gpu_expect 0 "of 150 labelled rows classified right" ./dnn --load ../tests/data/iris_linear.bin --predict ../datasets/iris.csv
# one line for each of the 150 rows, the last one's among them
gpu_check_large bash -c 'out=$(./dnn --load ../tests/data/iris_linear.bin --predict ../datasets/iris.csv) && [ "$(grep -c " row [0-9]*: " <<<"$out")" = 150 ] && grep -q " row 150: " <<<"$out"'
no_gpu ./dnn
no_gpu ./dnn --synthetic 784,1024,10
no_gpu ./dnn --check-tf32

# the backward pass against finite differences (the book's method), several shapes, on both
# paths (cuBLAS is the default); 64,300,10 splits K in the fused GEMMs (K = 301)
for path in --fused --cublas; do
    gpu_check ./dnn --gradcheck $path
    gpu_check_large ./dnn --gradcheck --act sigmoid $path
    gpu_check_large ./dnn --gradcheck --layers 4,3 $path
    gpu_check ./dnn --gradcheck --layers 4,7,5,6,3 --seed 3 $path
    gpu_check_large ./dnn --gradcheck --data ../datasets/digits.csv $path
    gpu_check_large ./dnn --gradcheck --layers 4,5,3 --adam --seed 5 $path
    gpu_check_large ./dnn --gradcheck --data ../datasets/digits.csv --layers 64,300,10 $path
    # 40 classes: two strips of the loss layer's column sums (cuBLAS path)
    gpu_check ./dnn --gradcheck --data ../tests/data/many_classes.csv --layers 3,8,40 $path
done
# the cuBLASLt path (ReLU only): its epilogues' bias, ReLU, ReLU' and bias sums
gpu_check ./dnn --gradcheck --lt
gpu_check ./dnn --gradcheck --layers 4,7,5,6,3 --seed 3 --lt
gpu_check_large ./dnn --gradcheck --layers 4,3 --lt
gpu_check_large ./dnn --gradcheck --data ../datasets/digits.csv --layers 64,300,10 --lt
gpu_check ./dnn --gradcheck --data ../tests/data/many_classes.csv --layers 3,8,40 --lt
gpu_check_large ./dnn --compare-paths --epochs 20 --lt
gpu_check_large ./dnn --compare-paths --epochs 20 --lt --tune-gemms
bad_input 2 '--tune-gemms tunes the cuBLASLt path: with --lt' ./dnn --tune-gemms
gpu_check_large ./dnn --compare-paths --data ../datasets/digits.csv --layers 64,300,10 --epochs 3 --adam --batch 100 --lt
# planted, one a epilogue: the dX GEMM without the bias gradient; ReLU' from the mask of another
# layer (L - l instead of l: layers 1 and 3 of four swap theirs); the forward without the bias
# (the biases start at 0, so gradcheck cannot see that one: trained paths drift apart)
mutant "dnn cuBLASLt dX epilogue without the bias gradient" dnn_lt.c \
    's/CUBLASLT_EPILOGUE_DRELU_BGRAD, net_b(net, net->d_grads, l - 1),/CUBLASLT_EPILOGUE_DRELU, NULL,/' ./dnn --gradcheck --lt
mutant "dnn cuBLASLt ReLU' from the wrong layer's mask" dnn_lt.c \
    's/lt->d_mask\[l\], lt->mask_ld\[l\]);/lt->d_mask[L - l], lt->mask_ld[L - l]);/' \
    ./dnn --gradcheck --layers 4,7,5,6,3 --seed 3 --lt
mutant "dnn cuBLASLt forward without the bias" dnn_lt.c \
    's/set_epilogue(g, CUBLASLT_EPILOGUE_RELU_AUX_BIAS, b,/set_epilogue(g, CUBLASLT_EPILOGUE_RELU_AUX, NULL,/' \
    ./dnn --compare-paths --epochs 20 --lt
# the optimizers' kernels against the CPU's formulas (the two paths share dnn_math.cuh, so
# --compare-paths cannot see a slip in it); planted: Adam's bias correction of the next step,
# and SGD's weight decay with the wrong sign (in dnn_math.cuh: both paths at once)
gpu_check ./dnn --check-optimizer
mutant "dnn Adam's bias correction of the next step" dnn_kernels.cu \
    's/adam_corrections(state->t)/adam_corrections(state->t + 1)/' ./dnn --check-optimizer
mutant "dnn SGD's weight decay with the wrong sign" dnn_math.cuh \
    's/float vi = mu \* \*v - lr \* (g + wd \* \*w);/float vi = mu * *v - lr * (g - wd * *w);/' ./dnn --check-optimizer
# --tf32 uses TF32 on both cuBLAS paths: fp32 within its bound, TF32 within its own and far past
# fp32's error; planted: each path computing fp32 under --tf32
gpu_check ./dnn --check-tf32
mutant "dnn --tf32 on the cuBLASLt path computes in fp32" dnn_lt.c \
    's/net->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F/CUBLAS_COMPUTE_32F/' ./dnn --check-tf32
mutant "dnn --tf32 on the cuBLAS path left pedantic" dnn_net.c \
    's/net->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH/CUBLAS_PEDANTIC_MATH/' ./dnn --check-tf32
# the two paths train to the same weights (their sums only run in other orders)
gpu_check_large ./dnn --compare-paths --epochs 20
gpu_check_large ./dnn --compare-paths --epochs 20 --adam --act sigmoid --layers 4,9,3
# 64-300-10 on digits: ReLU for one epoch; three epochs with the sigmoid (with ReLU a
# pre-activation within rounding of 0 can fall on the other side of the kink on the other path,
# and from that step on the paths differ by a gradient term, not by rounding: ch09 NOTES)
gpu_check_large ./dnn --compare-paths --data ../datasets/digits.csv --layers 64,300,10 --epochs 1
gpu_check_large ./dnn --compare-paths --data ../datasets/digits.csv --layers 64,300,10 --epochs 3 --act sigmoid
gpu_check_large ./dnn --compare-paths --data ../datasets/digits.csv --layers 64,300,10 --epochs 3 --adam --batch 100
# under the sanitizer: the gradient checks above with the default, a deep and a 40-class net
# on each path, both paths trained side by side for two epochs, and the fused GEMMs with split K
sanitize_only ./dnn --compare-paths --epochs 2 --adam --act sigmoid --layers 4,9,3
# the benchmark's paths with 3 steps a timed pass (64 took 70-150 s under each tool): every kernel
# of the cuBLAS and fused steps, launched and graphed, the GEMMs alone, SGD and Adam, fp32 and TF32
sanitize_only ./dnn --synthetic 64,32,10 --batch 16 --iters 1 --steps 3
sanitize_only ./dnn --synthetic 20,17,9,3 --batch 7 --iters 1 --steps 3 --adam
sanitize_only ./dnn --synthetic 64,300,10 --batch 33 --iters 1 --steps 3 --tf32
# planted bugs on the cuBLAS path: the gradient of every odd hidden unit is halved. A gradcheck
# that samples every second parameter of rows of even length never looks at them
mutant "dnn backward halves the odd units' gradients" dnn_kernels.cu \
    's/float g = da\[i\] \* activate_grad(a\[i\], act);/float g = da[i] * activate_grad(a[i], act) * (c \& 1 ? 0.5f : 1.0f);/' \
    ./dnn --gradcheck --data ../datasets/digits.csv --cublas
# the bias gradients' second level without its first chunk (gradcheck's 136 rows are 3 chunks);
# the loss layer's warp sum one shuffle short (half the lanes' exponentials)
mutant "dnn column sums skip the first chunk" dnn_kernels.cu \
    's/for (int k = 0; k < chunks; k++) t +=/for (int k = 1; k < chunks; k++) t +=/' \
    ./dnn --gradcheck --data ../datasets/digits.csv --cublas
mutant "dnn loss layer's warp sum one step short" dnn_kernels.cu \
    's/for (int off = 16; off > 0; off \/= 2) sum +=/for (int off = 16; off > 1; off \/= 2) sum +=/' \
    ./dnn --gradcheck --cublas
# and on the fused path: the bias's column of ones left out; the split parts of K summed
# without the last; the batch gathered by the first GEMM not kept for the dW GEMM
# --compare-paths' tolerance grows like rounding (sqrt of the steps): exercise 1's bias decay on
# the fused path only, at a weight decay 100 times below the default, drifts past it
mutant "dnn fused path decays the biases too little" dnn_fused_kernels.cu \
    's/sgd_update(&in1\[j\], &in2\[j\], v\[j\], lr, p.mu, p.wd);/sgd_update(\&in1[j], \&in2[j], v[j], lr, p.mu, m == p.M - 1 ? 0.0f : p.wd);/' \
    ./dnn --compare-paths --epochs 20 --weight-decay 1e-5
# and with Adam, whose term (lr x 2^-9 x sqrt(steps)) grows like rounding too: the same bias decay
# at --weight-decay 1.5e-2 passes the old lr x 2^-10 a step, added linearly (2.9e-4 at 100 steps);
# at 1e-3 it drifts 1.1e-5, below both
mutant "dnn fused path decays the biases too little, under Adam" dnn_fused_kernels.cu \
    's/adam_update(&in1\[j\], &in2\[j\], &in3\[j\], v\[j\], lr, p.wd, adam_c);/adam_update(\&in1[j], \&in2[j], \&in3[j], v[j], lr, m == p.M - 1 ? 0.0f : p.wd, adam_c);/' \
    ./dnn --compare-paths --epochs 20 --adam --weight-decay 1.5e-2
mutant "dnn fused GEMM without the bias's ones" dnn_fused_kernels.cu \
    's/^                v = 1.0f;/                v = 0.0f;/' \
    ./dnn --gradcheck --fused
mutant "dnn fused split-K drops its last part" dnn_fused_kernels.cu \
    's/for (int z = 0; z < splits; z++)/for (int z = 0; z < splits - 1; z++)/' \
    ./dnn --gradcheck --data ../datasets/digits.csv --layers 64,300,10 --fused
mutant "dnn fused GEMM does not keep the gathered batch" dnn_fused_kernels.cu \
    's/if (copy \&\& m < p.M/if (0 \&\& copy \&\& m < p.M/' \
    ./dnn --gradcheck --fused
# the fused GEMM on CPU threads (tests/emu), GPU or not: each product of the fused step for one
# layer (forward with the gather, dX with act', [dW; db] and the SGD update), at the plan the GPU
# would choose (split K at a batch of 32; EMU_SMS=8: other splits); 32 x 512 -> 2048 has the plans
# of the side-stream compare-paths gap's layer, 2048 -> 2048 (NOTES), in a quarter of the time;
# two planted bugs
emu_check emu_dnn_fused 32 512 2048
emu_check emu_dnn_fused 100 300 10 sigmoid
EMU_ENV=EMU_SMS=8 emu_check emu_dnn_fused 17 64 300
emu_mutant "dnn fused split-K drops its last part" dnn_fused_kernels.cu \
    's/for (int z = 0; z < splits; z++)/for (int z = 0; z < splits - 1; z++)/' emu_dnn_fused 32 64 300
emu_mutant "dnn fused GEMM does not keep the gathered batch" dnn_fused_kernels.cu \
    's/if (copy \&\& m < p.M/if (0 \&\& copy \&\& m < p.M/' emu_dnn_fused 32 64 300
# it learns: accuracy bounds on both data sets, with SGD and with Adam
# (one iris split moves in steps of 2 points and its accuracy depends on the split: single runs get
# a loose bar, the means over seeds and folds below a tighter one)
gpu_check_large ./dnn --quiet --min-accuracy 88
gpu_check_large ./dnn --quiet --fused --min-accuracy 88
gpu_check_large ./dnn --quiet --adam --epochs 100 --min-accuracy 86
gpu_check_large ./dnn --quiet --act sigmoid --epochs 300 --min-accuracy 86
gpu_check_large ./dnn --quiet --data ../datasets/digits.csv --min-accuracy 95 --vs-linear
gpu_check_large ./dnn --quiet --data ../datasets/digits.csv --min-accuracy 95 --tf32
gpu_check_large ./dnn --quiet --data ../datasets/digits.csv --min-accuracy 95 --tf32 --fused
# several splits: the mean over seeds, and k-fold cross-validation (every row tested once). Iris
# over seeds 1-5: 92.4% +- 3.6 (H200, 2026-12-06, after the seeding change; 50 test rows a split,
# so a row is 2 points); 90 is a floor a broken model misses by far (chance is 33%)
gpu_check_large ./dnn --quiet --seeds 5 --min-accuracy 90
gpu_check_large ./dnn --quiet --kfold 5 --min-accuracy 93
gpu_check_large ./dnn --quiet --data ../datasets/digits.csv --seeds 3 --min-accuracy 96
gpu_check_large ./dnn --quiet --data ../datasets/digits.csv --seeds 3 --min-accuracy 96 --fused
# early stopping keeps the best epoch's weights: with patience 5 on iris the run stops early
gpu_check_large bash -c 'out=$(./dnn --patience 5 --epochs 400) && grep -q "weights of epoch [0-9]* of [0-9]*)" <<<"$out" && ! grep -q "of 400)" <<<"$out"'
# and the program checks that the weights it put back give that epoch's validation loss:
# planted, a restore that copies nothing (the last epoch's weights stay)
mutant "dnn early stopping keeps the last epoch's weights" dnn_train.c \
    's/CUDA_CHECK(cudaMemcpyAsync(net->d_params, d_best, sizeof(float) \* net->n_params/CUDA_CHECK(cudaMemcpyAsync(net->d_params, d_best, 0 * sizeof(float) * net->n_params/' \
    ./dnn --patience 5 --epochs 400
# a planted bug: the hidden layer passes only 8 of its units; the network must then lose to
# logistic regression trained on the same split
mutant "dnn hidden layer with 8 live units" dnn_kernels.cu \
    's/z\[i\] = activate(z\[i\] + bc, act);/z[i] = c < 8 ? activate(z[i] + bc, act) : 0.0f;/' \
    ./dnn --quiet --data ../datasets/digits.csv --vs-linear --cublas
# the same seed gives the same weights, bit for bit, with or without the CUDA graph
for path in --fused --cublas --lt; do
    gpu_check_large bash -c "a=\$(mktemp) b=\$(mktemp) c=\$(mktemp); ./dnn --quiet --epochs 20 $path --save \$a && ./dnn --quiet --epochs 20 $path --save \$b && ./dnn --quiet --epochs 20 --no-graph $path --save \$c && cmp \$a \$b && cmp \$a \$c; r=\$?; rm -f \$a \$b \$c; exit \$r"
done
# save, then load and predict without --data: the same predictions as the run that trained
gpu_check_large bash -c 'w=$(mktemp); a=$(./dnn --quiet --epochs 30 --save $w --predict ../datasets/iris.csv | grep " row ") && b=$(./dnn --quiet --load $w --predict ../datasets/iris.csv | grep " row ") && [ -n "$a" ] && [ "$a" = "$b" ]; r=$?; rm -f $w; exit $r'
gpu_check_large ./dnn --synthetic 64,32,10 --batch 16 --iters 2
gpu_check_large ./dnn --synthetic 64,32,10 --batch 16 --iters 1 --steps 3
# a planted bug: the optimizer computes its step but never applies it; the loss must fall
mutant "dnn SGD never updates the weights" dnn_math.cuh 's/    \*w += vi;/    *w += 0.0f * vi;/' \
    ./dnn --synthetic 64,32,10 --batch 16 --iters 2
gpu_check_large ./dnn --synthetic 20,17,9,3 --batch 7 --iters 2 --adam
gpu_check_large ./dnn --synthetic 64,300,10 --batch 33 --iters 2 --tf32
# the step against its own GEMMs timed the same way (graph against graph, launches against
# launches): never faster than the GEMMs it contains
alone gpu_check_large bash ../tests/like_for_like.sh step_graph gemms_graph ./dnn --synthetic 64,32,10 --batch 16 --iters 5
alone gpu_check_large bash ../tests/like_for_like.sh step_launches gemms_launched ./dnn --synthetic 64,32,10 --batch 16 --iters 5
