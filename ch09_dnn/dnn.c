/* dnn.c - a small dense neural network built on cuBLAS, trained with backpropagation.
 *
 *   data: a CSV in the datasets/ layout (default ../datasets/iris.csv); a seeded shuffle holds
 *         out 1/3 for testing (--test-frac) and a fifth of the rest for validation (--val-frac),
 *         all z-scored with the training rows' statistics
 *   net:  --layers F,H1,...,C (default per data set: F,16,16,C for few features, else F,2F,C),
 *         dense layers (X W + b) with ReLU (--act sigmoid for the book's), and a softmax
 *         cross-entropy loss; row-major: X is (batch, in), W is (in, out), b is (out)
 *   step: gather the batch, forward (GEMM, bias+activation), loss, backward (GEMMs, fused
 *         activation gradient and bias sums), one optimizer update over every parameter:
 *         SGD with momentum (default) or Adam (--adam), with weight decay and a learning-rate
 *         schedule; captured once as a CUDA graph and replayed every step. --fused: the same
 *         step on our own GEMM kernel with bias, activation and update in its epilogue
 *   train: the weights of the epoch with the lowest validation loss are kept; --seeds K and
 *         --kfold K train several times for an accuracy that does not hang on one split
 *   build: make ch09      run: ./dnn [--data FILE] [--layers ...] [--epochs E] [--batch B] [--lr R]
 *          ./dnn --gradcheck           analytic gradients against finite differences (the book's method)
 *          ./dnn --compare-paths       the cuBLAS and fused paths train to the same weights
 *          ./dnn --synthetic 784,1024,10 --batch 128    time a training step on both paths (benchmark)
 *          ./dnn --save w.bin, ./dnn --load w.bin --predict rows.csv
 *
 * Files, one per concern: dnn.c (main's phases, the report, predict), dnn_options.c (the flags,
 * their defaults and checks), dnn_data.c (CSV to training, validation and test sets, z-score),
 * dnn_train.c (the epochs, --seeds and --kfold, --vs-linear, --compare-paths), dnn_bench.c
 * (--synthetic), dnn_net.c (the network on both paths, the training step), dnn_eval.c
 * (evaluation, gradcheck), dnn_weights.c (the weights file), dnn_kernels.cu (the cuBLAS path's
 * small kernels), dnn_fused_kernels.cu (the fused GEMM), dnn_math.cuh (what both share).
 *
 * The backward pass, for a layer Z = X W + b, A = act(Z), given dA = dLoss/dA:
 *   dZ = dA * act'(Z)        (act_backward_kernel; ReLU: 1 where A > 0; sigmoid: A (1 - A))
 *   dW = X^T dZ              (GEMM, transposed first operand)
 *   db = column sums of dZ   (same kernel as dZ)
 *   dX = dZ W^T              (GEMM, transposed second operand): the previous layer's dA
 * and for the loss, mean cross-entropy of softmax(Z): dZ = (softmax(Z) - onehot(y)) / batch.
 */
#define _POSIX_C_SOURCE 200809L
#include "dnn_train.h" /* first: dnn_net.h includes cuBLAS before labbook.h */
#include "dnn_bench.h"

#include <limits.h>
#include <float.h>
#include <math.h>
#include <string.h>
#include <unistd.h> /* isatty: an updating progress line only on a terminal */

/* ================================================================ main's phases */

static void print_confusion(const dataset *d, const int *confusion)
{
    printf("confusion matrix on the test set (rows: true class, columns: predicted)\n%14s", "");
    for (int c = 0; c < d->classes; c++) printf(" %8.8s", d->class_names[c]);
    printf("\n");
    for (int r = 0; r < d->classes; r++) {
        printf("%14.14s", d->class_names[r]);
        for (int c = 0; c < d->classes; c++) printf(" %8d", confusion[r * d->classes + c]);
        printf("\n");
    }
}


/* The network's shape: from --load (with its weights and z-score), --layers, or a default for
 * the data set; it must take the data's features to its classes. Returns the loaded
 * parameters (NULL: none). */
static float *choose_shape(const dnn_options *o, const lb_program *prog, const dataset *all, network *net, float **mean,
                           float **sd)
{
    char err[512];
    float *loaded = NULL;
    net->act = strcmp(o->act, "sigmoid") == 0 ? ACT_SIGMOID : ACT_RELU;
    if (o->load_path) {
        char **names;
        if (!(loaded = load_weights(o->load_path, net, mean, sd, &names, err, sizeof err)))
            lb_die(LB_EXIT_USAGE, "dnn: %s", err);
        free_names(names, net->size[net->n_layers]); /* the data set's own names are used */
        network want = {0};
        if (o->layers && (parse_layers(o->layers, &want) != net->n_layers ||
                          memcmp(want.size, net->size, sizeof(int) * (net->n_layers + 1))))
            lb_die(LB_EXIT_USAGE, "dnn: %s holds a network of another shape than --layers %s", o->load_path, o->layers);
    } else if (o->layers) {
        net->n_layers = parse_layers(o->layers, net);
        if (net->n_layers < 1)
            lb_usage_error(prog, "--layers takes 2 to %d sizes, each 1..65536, e.g. 4,16,16,3", DNN_MAX_LAYERS + 1);
    } else { /* a default for the data set */
        net->size[0] = all->features;
        if (all->features <= 16)
            net->n_layers = 3, net->size[1] = net->size[2] = 16;
        else
            net->n_layers = 2, net->size[1] = 2 * all->features;
        net->size[net->n_layers] = all->classes;
    }
    if (net->size[0] != all->features || net->size[net->n_layers] != all->classes)
        lb_die(LB_EXIT_USAGE, "dnn: the network takes %d features to %d classes, %s has %d features and %d classes",
               net->size[0], net->size[net->n_layers], o->data_path, all->features, all->classes);
    layout(net);
    return loaded;
}

/* Accuracies, the confusion matrix, and the RESULT line; --min-accuracy can fail the run. */
static int report(const dnn_options *o, const lb_args *args, network *net, const dataset *all, const dataset *train_set,
                  const dataset *test, const fit_result *r, cudaStream_t s, double t_start)
{
    int *confusion = calloc((size_t)all->classes * all->classes, sizeof(int));
    double train_acc = accuracy(net, train_set, NULL, s), test_acc = accuracy(net, test, confusion, s);
    double total_s = (lb_wall_ms() - t_start) / 1e3;
    char shape[128];
    shape_text(net, shape, sizeof shape);
    if (!args->quiet) {
        if (r->epochs_run)
            printf("final (the weights of epoch %d of %d): train accuracy %.2f%%", r->best_epoch, r->epochs_run,
                   100 * train_acc);
        else
            printf("final (no training): train accuracy %.2f%%", 100 * train_acc);
        if (r->val_loss > 0) printf(", validation %.2f%%", 100 * r->val_acc);
        printf(", test accuracy %.2f%% (%d of %d)\n", 100 * test_acc, (int)lround(test_acc * test->n), test->n);
        if (test->n) print_confusion(all, confusion);
        printf("training %.1f ms (%d steps of %d, %.1f us each, %s path); whole run %.2f s\n", r->train_ms, r->steps,
               o->batch, r->steps > 0 ? 1e3 * r->train_ms / r->steps : 0.0, dnn_path_name(net->path), total_s);
    } else {
        printf("dnn: %s %s, %d epochs: test accuracy %.2f%%, whole run %.2f s\n", o->data_path, shape, o->epochs,
               100 * test_acc, total_s);
    }
    free(confusion);
    char name[96], sz[160];
    data_name(o, name, sizeof name);
    snprintf(name + strlen(name), sizeof name - strlen(name), "_seed%llu", args->seed);
    snprintf(sz, sizeof sz, "%s_e%d", shape, o->epochs);
    int acc_ok = o->min_accuracy < 0 || 100 * test_acc >= o->min_accuracy;
    if (!acc_ok)
        fprintf(stderr, "dnn: test accuracy %.2f%% is below --min-accuracy %g\n", 100 * test_acc, o->min_accuracy);
    lb_result res = {
        "dnn", -1, name, sz, r->train_ms, "test_acc_pct", 100 * test_acc, NULL, 0.0, o->min_accuracy < 0 ? -1 : acc_ok};
    lb_print_result(&res, args->quiet);
    return acc_ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}

/* --predict: each row's class and probability, and how many labelled rows came out right. */
static void predict_rows(const dnn_options *o, network *net, char *const *class_names, const dataset *to_predict,
                         cudaStream_t s)
{
    int *pred = lb_host_alloc(sizeof(int) * to_predict->n, "predictions");
    float *prob = lb_host_alloc(sizeof(float) * to_predict->n, "probabilities");
    predict_set(net, to_predict, pred, prob, s);
    int known = 0, ok = 0;
    for (int i = 0; i < to_predict->n; i++) {
        printf("%s row %d: %s (p = %.3f)", o->predict_path, i + 1, class_names[pred[i]], prob[i]);
        if (to_predict->y[i] >= 0)
            printf(", labelled %s", class_names[to_predict->y[i]]), known++, ok += pred[i] == to_predict->y[i];
        printf("\n");
    }
    if (known) printf("%d of %d labelled rows classified right\n", ok, known);
    free(pred);
    free(prob);
}

/* --load w.bin --predict rows.csv, no --data: shape, z-score and class names from the weights
 * file; the rows must have its number of features (and, if labelled, its classes) */
static int run_predict_only(const dnn_options *o)
{
    char err[512];
    network net = {0};
    float *mean, *sd;
    char **names;
    float *params = load_weights(o->load_path, &net, &mean, &sd, &names, err, sizeof err);
    if (!params) lb_die(LB_EXIT_USAGE, "dnn: %s", err);
    int classes = net.size[net.n_layers];
    dataset rows = {0};
    if (lb_load_csv(o->predict_path, &rows, 1, err, sizeof err)) lb_die(LB_EXIT_USAGE, "dnn: %s", err);
    if (rows.features != net.size[0] || rows.classes != classes)
        lb_die(LB_EXIT_USAGE,
               "dnn: %s has %d features and %d classes, the network in %s takes %d features to %d classes",
               o->predict_path, rows.features, rows.classes, o->load_path, net.size[0], classes);
    normalize(&rows, mean, sd);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    net_alloc(&net, DNN_EVAL_ROWS);
    CUDA_CHECK(cudaMemcpy(net.d_params, params, sizeof(float) * net.n_params, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasSetStream(net.h, s));
    predict_rows(o, &net, names, &rows, s);
    CUDA_CHECK(cudaStreamDestroy(s));
    net_free(&net);
    free(params);
    free(mean);
    free(sd);
    free_names(names, classes);
    lb_free_dataset(&rows);
    return LB_EXIT_PASS;
}

int main(int argc, char **argv)
{
    double t_start = lb_wall_ms();
    dnn_options o = default_options();
    lb_args args = {.iters = 20, .seed = 1};
    lb_opt opts[DNN_N_OPTIONS];
    lb_program program;
    parse_options(&o, &args, opts, &program, argc, argv);
    if (o.synthetic) return run_synthetic(&o, &program, &args);
    if (o.check_optimizer) return check_optimizers(&args);
    if (o.check_tf32) return check_tf32(&args);
    if (predict_only(&o)) return run_predict_only(&o);

    /* ---- setup: data, shape and defaults (all checked before the GPU is touched), then the GPU */
    dataset all, to_predict = {0};
    load_data(&o, &all, &to_predict);
    network shape = {0};
    float *mean = NULL, *sd = NULL;
    float *params = choose_shape(&o, &program, &all, &shape, &mean, &sd);
    if (o.kfold > all.n) /* a fold without a row would test nothing */
        lb_die(LB_EXIT_USAGE, "dnn: --kfold %d needs at least %d rows; %s has %d", o.kfold, o.kfold, o.data_path, all.n);
    int n_rest = o.kfold ? all.n - all.n / o.kfold : all.n - (int)lround(all.n * o.test_frac),
        n_train = n_rest - (int)lround(n_rest * o.val_frac);
    if (n_rest < 1 || n_train < 1)
        lb_die(LB_EXIT_USAGE, "dnn: %s: no samples left for training with --test-frac %g and --val-frac %g",
               o.data_path, o.test_frac, o.val_frac);
    fill_defaults(&o, n_train);
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    require_tf32(&o, &gpu);
    int max_rows = o.batch > DNN_EVAL_ROWS ? o.batch : DNN_EVAL_ROWS;
    size_t act_floats = 0;
    for (int l = 0; l <= shape.n_layers; l++) act_floats += (size_t)2 * max_rows * shape.size[l];
    lb_require_device_memory(sizeof(float) * (5 * shape.n_params + act_floats + (size_t)all.n * all.features) +
                                 (40u << 20),
                             "the network and the training set");
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    char shape_s[128];
    shape_text(&shape, shape_s, sizeof shape_s);
    if (!args.quiet)
        printf("dnn: %s (%d samples), layers %s, %s, %s lr %g (%s), weight decay %g, batch %d, %d epochs, %s%s path, "
               "seed %llu, %s (%s)\n",
               o.data_path, all.n, shape_s, shape.act == ACT_RELU ? "ReLU" : "sigmoid",
               o.adam ? "Adam" : "SGD momentum", o.lr, o.schedule, o.weight_decay, o.batch, o.epochs,
               dnn_path_name(o.path), o.tf32 ? " TF32" : "", args.seed,
               gpu.prop.name, gpu.sm);
    if (o.seeds > 1 || o.kfold) {
        int status = run_repeated(&o, &args, &all, &shape, max_rows, s, t_start);
        CUDA_CHECK(cudaStreamDestroy(s));
        lb_free_dataset(&all);
        return status;
    }

    /* ---- one run: the split (a seeded shuffle), then the network */
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    int *order = lb_host_alloc(sizeof(int) * all.n, "order");
    for (int i = 0; i < all.n; i++) order[i] = i;
    shuffle(order, all.n, &rng);
    dataset train_set, val, test;
    make_sets(&o, &all, order, 0, &train_set, &val, &test, &mean, &sd);
    free(order);
    if (o.predict_path) normalize(&to_predict, mean, sd);
    if (!args.quiet)
        printf("rows: %d to train, %d to validate (--val-frac), %d to test (--test-frac)\n", train_set.n, val.n,
               test.n);

    int status;
    network net;
    trainer t;
    if (o.compare) {
        status = compare_paths(&o, &args, &shape, params, &train_set, max_rows, &rng, s);
    } else {
        setup_net(&o, &shape, params, max_rows, &train_set, &rng, s, &net, &t);
        if (o.gradcheck) {
            /* ---- check the gradients, and stop: fp32 gradients against a double-precision oracle;
             * 1e-3 is ten times what a correct backward pass shows, a wrong transpose or a missing
             * term gives order 1 */
            /* 136 rows: the loss layer's 17 blocks of 8 and the column sums' 3 chunks of 64, so the
             * sums across blocks are checked too */
            double worst = gradcheck(&t, &train_set, train_set.n < 136 ? train_set.n : 136, s, args.quiet);
            status = worst <= GRADCHECK_TOL ? LB_EXIT_PASS : LB_EXIT_FAIL;
            if (args.quiet)
                printf("dnn gradcheck: %s, %s path, max relative error %.2e, %s\n", shape_s,
                       dnn_path_name(net.path), worst, status ? "FAIL" : "PASS");
            else
                printf("%s\n", status ? "FAIL" : "PASS");
        } else {
            /* ---- train, then report; save and classify on request */
            fit_result r;
            status = train(&o, &t, &train_set, &val, &rng, s, !args.quiet, &r);
            int report_status = report(&o, &args, &net, &all, &train_set, &test, &r, s, t_start);
            if (status == LB_EXIT_PASS) status = report_status;
            if (o.vs_linear) {
                int linear_status = beat_linear(&o, &train_set, &val, &test, max_rows, &rng, &net, s);
                if (status == LB_EXIT_PASS) status = linear_status;
            }
            char err[512];
            if (o.save_path) {
                if (save_weights(o.save_path, &net, mean, sd, all.class_names, err, sizeof err))
                    lb_die(LB_EXIT_USAGE, "dnn: %s", err);
                if (!args.quiet) printf("saved the weights to %s\n", o.save_path);
            }
            if (o.predict_path) predict_rows(&o, &net, all.class_names, &to_predict, s);
        }
        free_net(&net, &t);
    }

    CUDA_CHECK(cudaStreamDestroy(s));
    free(params);
    free(mean);
    free(sd);
    lb_free_dataset(&all);
    lb_free_dataset(&train_set);
    lb_free_dataset(&val);
    lb_free_dataset(&test);
    lb_free_dataset(&to_predict);
    return status;
}
