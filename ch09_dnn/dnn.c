/* dnn.c - a small dense neural network built on cuBLAS, trained with backpropagation.
 *
 *   data: a CSV in the datasets/ layout (default ../datasets/iris.csv); a seeded shuffle splits
 *         it 2/3 : 1/3 into training and test sets, z-scored with the training set's statistics
 *   net:  --layers F,H1,...,C (default per data set: F,16,16,C for few features, else F,2F,C),
 *         dense layers (X W + b) with ReLU (--act sigmoid for the book's), and a softmax
 *         cross-entropy loss; row-major: X is (batch, in), W is (in, out), b is (out)
 *   step: gather the batch, forward (GEMM, bias+activation), loss, backward (GEMMs, fused
 *         activation gradient and bias sums), one optimizer update over every parameter:
 *         SGD with momentum (default) or Adam (--adam); captured once as a CUDA graph and
 *         replayed every step
 *   build: make ch09      run: ./dnn [--data FILE] [--layers ...] [--epochs E] [--batch B] [--lr R]
 *          ./dnn --gradcheck           analytic gradients against finite differences (the book's method)
 *          ./dnn --synthetic 784,1024,10 --batch 128    time a training step (benchmark)
 *          ./dnn --save w.bin, ./dnn --load w.bin --predict rows.csv
 *
 * Files: dnn.c (options, main's phases, the benchmark), dnn_data.c (CSV, split, z-score),
 * dnn_net.c (the network, training step, evaluation, gradcheck, weights file), dnn_kernels.cu.
 *
 * The backward pass, for a layer Z = X W + b, A = act(Z), given dA = dLoss/dA:
 *   dZ = dA * act'(Z)        (act_backward_kernel; ReLU: 1 where A > 0; sigmoid: A (1 - A))
 *   dW = X^T dZ              (GEMM, transposed first operand)
 *   db = column sums of dZ   (same kernel as dZ)
 *   dX = dZ W^T              (GEMM, transposed second operand): the previous layer's dA
 * and for the loss, mean cross-entropy of softmax(Z): dZ = (softmax(Z) - onehot(y)) / batch.
 */
#define _POSIX_C_SOURCE 200809L
#include "dnn_net.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* ================================================================ options */

/* Every option of the program, in one place; main fills it from the command line. -1 means
 * "chosen from the data set" (see split_and_normalize). */
typedef struct {
    const char *data_path, *layers, *act, *save_path, *load_path, *predict_path, *synthetic;
    int epochs, batch, adam, gradcheck, no_graph, vs_linear;
    double lr, momentum, test_frac, min_accuracy;
} dnn_options;

/* "Not given on the command line": values no flag can produce (an integer flag stops at
 * -(2^31 - 1), a number flag refuses infinities). So --epochs -1 is an error, not a silent
 * request for the default. */
#define UNSET_INT INT_MIN
#define UNSET_DOUBLE (-HUGE_VAL)

static dnn_options default_options(void)
{
    dnn_options o = {.data_path = NULL, /* then DNN_DEFAULT_DATA, unless the run only predicts */
                     .act = "relu",
                     .epochs = UNSET_INT,
                     .batch = UNSET_INT,
                     .lr = UNSET_DOUBLE,
                     .momentum = 0.9,
                     .test_frac = 1.0 / 3.0,
                     .min_accuracy = UNSET_DOUBLE};
    return o;
}

#define DNN_N_OPTIONS 17
#define DNN_DEFAULT_DATA "../datasets/iris.csv"

/* --load w.bin --predict rows.csv without --data: the weights file is all it needs */
static int predict_only(const dnn_options *o) { return o->load_path && o->predict_path && !o->data_path; }

/* The flags (pointing into o), the program's description, the parse, and the checks of
 * every value; bad input exits 2 here, before anything is loaded. */
static void parse_options(dnn_options *o, lb_args *args, lb_opt *opts, lb_program *program, int argc, char **argv)
{
    const lb_opt table[DNN_N_OPTIONS] = {
        {"--data", LB_OPT_STRING, &o->data_path,
         "the data set (CSV, datasets/ layout; default " DNN_DEFAULT_DATA ", none with --load and --predict)"},
        {"--layers", LB_OPT_STRING, &o->layers, "sizes F,H1,...,C (default: F,16,16,C for few features, else F,2F,C)"},
        {"--act", LB_OPT_STRING, &o->act, "hidden activation: relu or sigmoid"},
        {"--epochs", LB_OPT_INT, &o->epochs,
         "passes over the training set (default 200 for small sets, 30 else; 0 with --load)"},
        {"--batch", LB_OPT_INT, &o->batch, "samples per step (default 16 for small sets, 32 else)"},
        {"--lr", LB_OPT_DOUBLE, &o->lr, "learning rate (default 0.05 SGD, 0.001 Adam)"},
        {"--momentum", LB_OPT_DOUBLE, &o->momentum, "SGD momentum"},
        {"--adam", LB_OPT_FLAG, &o->adam, "Adam instead of SGD with momentum"},
        {"--test-frac", LB_OPT_DOUBLE, &o->test_frac, "share of the samples held out for testing"},
        {"--save", LB_OPT_STRING, &o->save_path, "write the trained weights to this file"},
        {"--load", LB_OPT_STRING, &o->load_path, "start from these weights (and their normalization)"},
        {"--predict", LB_OPT_STRING, &o->predict_path, "classify the rows of this CSV (labels optional)"},
        {"--gradcheck", LB_OPT_FLAG, &o->gradcheck, "compare analytic gradients with finite differences, then stop"},
        {"--synthetic", LB_OPT_STRING, &o->synthetic, "F,H,...,C: random data of that shape; time a training step"},
        {"--no-graph", LB_OPT_FLAG, &o->no_graph,
         "launch each step's kernels one by one instead of replaying a CUDA graph"},
        {"--min-accuracy", LB_OPT_DOUBLE, &o->min_accuracy,
         "P: fail (exit 1) if the test accuracy ends below P percent"},
        {"--vs-linear", LB_OPT_FLAG, &o->vs_linear,
         "also train logistic regression (layers F,C) on the same split; fail unless the network beats it"},
    };
    memcpy(opts, table, sizeof table);
    const lb_program p = {
        .name = "dnn",
        .synopsis = "a dense neural network on cuBLAS: training with backpropagation, gradcheck, save/load, benchmark",
        .details = "Data sets: ../datasets/iris.csv (default), ../datasets/digits.csv, or any CSV with the header\n"
                   "n_samples,n_features,class names... and rows of features plus an integer label.\n"
                   "A weights file (--save) holds the shape, the z-score and the class names: --load w.bin\n"
                   "--predict rows.csv classifies rows without any --data.\n",
        .uses = LB_USE_SEED | LB_USE_QUIET | LB_USE_ITERS,
        .opts = opts,
        .n_opts = DNN_N_OPTIONS,
    };
    *program = p;
    lb_parse_args(program, args, argc, argv);
    if (strcmp(o->act, "relu") && strcmp(o->act, "sigmoid")) lb_usage_error(program, "--act must be relu or sigmoid");
    if (o->epochs != UNSET_INT && (o->epochs < 0 || o->epochs > 1000000))
        lb_usage_error(program, "--epochs must be 0..1000000");
    if (o->batch != UNSET_INT && (o->batch < 1 || o->batch > 65536))
        lb_usage_error(program, "--batch must be 1..65536");
    if (o->lr != UNSET_DOUBLE && !(o->lr > 0.0 && o->lr < 100.0)) lb_usage_error(program, "--lr must be in (0, 100)");
    if (o->min_accuracy != UNSET_DOUBLE && !(o->min_accuracy >= 0.0 && o->min_accuracy <= 100.0))
        lb_usage_error(program, "--min-accuracy must be a percentage, 0..100");
    lb_check_output_path(program, "--save", o->save_path);
    if (!(o->momentum >= 0.0 && o->momentum < 1.0)) lb_usage_error(program, "--momentum must be in [0, 1)");
    if (!(o->test_frac > 0.0 && o->test_frac < 1.0)) lb_usage_error(program, "--test-frac must be in (0, 1)");
    if (predict_only(o) && o->epochs != UNSET_INT && o->epochs > 0)
        lb_usage_error(program, "--epochs: training needs --data (with --load and --predict alone, dnn only predicts)");
    if (!predict_only(o) && !o->data_path) o->data_path = DNN_DEFAULT_DATA;
}

/* "4-16-16-3": the layer sizes, for titles and RESULT sizes */
static void shape_text(const network *net, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int l = 0; l <= net->n_layers; l++)
        snprintf(buf + strlen(buf), len - strlen(buf), l ? "-%d" : "%d", net->size[l]);
}

/* ================================================================ benchmark mode */

typedef struct {
    network *net;
    int which, rows;       /* which: one GEMM of the step, or -1: all of them in order */
    cudaGraphExec_t graph; /* if set: replay this graph of all the GEMMs instead */
    cudaStream_t s;
} gemm_job;

/* GEMM number `which` of a training step: forward 0..L-1, then dW L-1..0, then dX L-1..1 */
static void one_gemm(network *net, int which, int rows)
{
    int L = net->n_layers, w = which;
    if (w < L)
        CUBLAS_CHECK(gemm_rm(net->h, 0, 0, rows, net->size[w + 1], net->size[w], net->d_a[w],
                             net_w(net, net->d_params, w), net->d_a[w + 1]));
    else if (w < 2 * L) {
        int l = 2 * L - 1 - w;
        CUBLAS_CHECK(gemm_rm(net->h, 1, 0, net->size[l], net->size[l + 1], rows, net->d_a[l], net->d_d[l + 1],
                             net_w(net, net->d_grads, l)));
    } else {
        int l = 3 * L - 1 - w;
        CUBLAS_CHECK(gemm_rm(net->h, 0, 1, rows, net->size[l], net->size[l + 1], net->d_d[l + 1],
                             net_w(net, net->d_params, l), net->d_d[l]));
    }
}

static cudaError_t run_gemms(void *ctx)
{
    gemm_job *j = (gemm_job *)ctx;
    if (j->graph) return cudaGraphLaunch(j->graph, j->s);
    int n_gemms = 3 * j->net->n_layers - 1;
    for (int w = 0; w < n_gemms; w++)
        if (j->which < 0 || j->which == w) one_gemm(j->net, w, j->rows);
    return cudaGetLastError();
}

/* all the step's GEMMs, captured as one graph: the baseline of the step's graph */
static cudaGraphExec_t capture_gemms(gemm_job *j)
{
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(j->s, cudaStreamCaptureModeThreadLocal));
    CUDA_CHECK(run_gemms(j));
    CUDA_CHECK(cudaStreamEndCapture(j->s, &g));
    CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    return exec;
}

typedef struct {
    trainer *t;
    cudaGraphExec_t graph;
    int steps;
    cudaStream_t s;
} epoch_job;

/* `steps` training steps from the start of the permutation (graph or launches), on stream 0's
 * timeline: the events of lb_time_ms are on the legacy default stream, which waits for s */
static cudaError_t run_epoch(void *ctx)
{
    epoch_job *e = (epoch_job *)ctx;
    cudaError_t err = cudaMemsetAsync(&e->t->d_state->cursor, 0, sizeof(int), e->s);
    for (int k = 0; k < e->steps && !err; k++) {
        if (e->graph)
            err = cudaGraphLaunch(e->graph, e->s);
        else
            train_step(e->t, e->s);
    }
    return err ? err : cudaGetLastError();
}

/* one epoch from a zeroed loss sum: its mean loss per step */
static double epoch_loss(epoch_job *e)
{
    step_state st;
    CUDA_CHECK(cudaMemsetAsync(&e->t->d_state->loss_sum, 0, sizeof(float) + sizeof(int), e->s)); /* loss_sum, correct */
    CUDA_CHECK(run_epoch(e));
    CUDA_CHECK(cudaMemcpyAsync(&st, e->t->d_state, sizeof st, cudaMemcpyDeviceToHost, e->s));
    CUDA_CHECK(cudaStreamSynchronize(e->s));
    return st.loss_sum / e->steps;
}

/* --synthetic: random data of the given shape; time a training step (launched, and as one CUDA
 * graph) against its GEMMs alone (launched, and as one graph); check that it learns */
static int run_synthetic(const dnn_options *o, const lb_program *prog, const lb_args *args)
{
    network net = {0};
    net.act = strcmp(o->act, "sigmoid") == 0 ? ACT_SIGMOID : ACT_RELU;
    net.n_layers = parse_layers(o->synthetic, &net);
    if (net.n_layers < 1)
        lb_usage_error(prog, "--synthetic takes sizes F,H,...,C (2 to %d numbers, each 1..65536)", DNN_MAX_LAYERS + 1);
    if (net.size[net.n_layers] > DNN_MAX_CLASSES)
        lb_usage_error(prog, "--synthetic: at most %d classes", DNN_MAX_CLASSES);
    int rows = o->batch > 0 ? o->batch : 128, steps = 64, n = rows * steps, F = net.size[0], C = net.size[net.n_layers];
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    char shape[128];
    shape_text(&net, shape, sizeof shape);
    if (!args->quiet)
        printf("dnn benchmark: %s, batch %d, %s, random data (%d samples), %s (%s)\n", shape, rows,
               o->adam ? "Adam" : "SGD with momentum", n, gpu.prop.name, gpu.sm);

    lb_rng rng;
    lb_rng_seed(&rng, args->seed);
    dataset data = {
        n, F, C, lb_host_alloc(sizeof(float) * (size_t)n * F, "data"), lb_host_alloc(sizeof(int) * n, "labels"), NULL};
    int *perm = lb_host_alloc(sizeof(int) * n, "permutation");
    lb_fill_uniform(data.x, (size_t)n * F, -1.0f, 1.0f, &rng);
    for (int i = 0; i < n; i++) data.y[i] = (int)(lb_rng_next(&rng) % (uint64_t)C), perm[i] = i;
    shuffle(perm, n, &rng);
    net_alloc(&net, rows);
    float *h_p = lb_host_alloc(sizeof(float) * net.n_params, "parameters");
    init_params(&net, h_p, &rng);
    CUDA_CHECK(cudaMemcpy(net.d_params, h_p, sizeof(float) * net.n_params, cudaMemcpyHostToDevice));
    trainer t;
    trainer_create(&t, &net, rows, &data, o->adam,
                   (float)(o->lr > 0 ? o->lr
                           : o->adam ? 1e-3
                                     : 0.01),
                   (float)o->momentum);
    CUDA_CHECK(cudaMemcpy(t.d_perm, perm, sizeof(int) * n, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s)); /* blocking: the default stream's events order with it */
    CUBLAS_CHECK(cublasSetStream(net.h, s));

    epoch_job plain = {&t, NULL, steps, s}, graphed = {&t, capture_step(&t, s), steps, s};
    /* the check: the mean loss of an epoch must fall from the first epoch to the last (the
     * network memorizes its random labels); finite alone would pass a step that learns nothing */
    double first_loss = epoch_loss(&graphed);
    float plain_ms = lb_time_ms(run_epoch, &plain, 1, args->iters) / steps;
    float graph_ms = lb_time_ms(run_epoch, &graphed, 1, args->iters) / steps;
    double last_loss = epoch_loss(&graphed);
    int learns = isfinite(last_loss) && last_loss < first_loss;
    /* the baselines, like for like: the step's GEMMs launched one after another (against the
     * step's launches), and the same GEMMs captured as one graph (against the step's graph) */
    int L = net.n_layers, n_gemms = 3 * L - 1;
    gemm_job gj = {&net, -1, rows, NULL, s};
    float gemms_ms = lb_time_ms(run_gemms, &gj, 1, args->iters);
    gj.graph = capture_gemms(&gj);
    float gemms_graph_ms = lb_time_ms(run_gemms, &gj, 1, args->iters);
    CUDA_CHECK(cudaGraphExecDestroy(gj.graph));
    gj.graph = NULL;
    if (!args->quiet) {
        printf("the step's GEMMs, each timed alone (rows x cols x inner, us):");
        for (gj.which = 0; gj.which < n_gemms; gj.which++)
            printf(" %.1f", lb_time_ms(run_gemms, &gj, 1, args->iters) * 1e3);
        printf("\n");
    }
    double sps = rows / (graph_ms * 1e-3);
    if (!args->quiet) {
        printf(" per step (%d GEMMs + %d small kernels)    us    samples/s   vs its GEMMs alone (speed)\n", n_gemms,
               L + 3);
        printf(" launched one by one            %9.1f   %10.3g   %6.2f (the GEMMs launched: %.1f us)\n", plain_ms * 1e3,
               rows / (plain_ms * 1e-3), gemms_ms / plain_ms, gemms_ms * 1e3);
        printf(" replayed as one CUDA graph     %9.1f   %10.3g   %6.2f (the GEMMs as a graph: %.1f us; goal >= 0.80)\n",
               graph_ms * 1e3, sps, gemms_graph_ms / graph_ms, gemms_graph_ms * 1e3);
        printf("mean loss of an epoch: %.4f first, %.4f last: %s\n", first_loss, last_loss,
               learns ? "it learns" : "NOT LEARNING");
    }
    char sz[160];
    snprintf(sz, sizeof sz, "%s_b%d", shape, rows);
    lb_result rs[] = {
        {"dnn", -1, "step_graph", sz, graph_ms, "msamples_s", sps / 1e6, "gemms_graph", gemms_graph_ms / graph_ms,
         learns},
        {"dnn", -1, "gemms_graph", sz, gemms_graph_ms, "msamples_s", rows / (gemms_graph_ms * 1e-3) / 1e6,
         "gemms_graph", 1.0, -1},
        {"dnn", -1, "step_launches", sz, plain_ms, "msamples_s", rows / (plain_ms * 1e-3) / 1e6, "gemms_launched",
         gemms_ms / plain_ms, learns},
        {"dnn", -1, "gemms_launched", sz, gemms_ms, "msamples_s", rows / (gemms_ms * 1e-3) / 1e6, "gemms_launched", 1.0,
         -1},
    };
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) lb_print_result(&rs[i], args->quiet);
    if (args->quiet)
        printf("dnn: %s batch %d: %.1f us per step, %.3g samples/s, %.2fx the speed of its GEMMs as a graph, %s\n",
               shape, rows, graph_ms * 1e3, sps, gemms_graph_ms / graph_ms, learns ? "PASS" : "FAIL");
    CUDA_CHECK(cudaGraphExecDestroy(graphed.graph));
    CUDA_CHECK(cudaStreamDestroy(s));
    trainer_free(&t);
    net_free(&net);
    lb_free_dataset(&data);
    free(perm);
    free(h_p);
    return learns ? LB_EXIT_PASS : LB_EXIT_FAIL;
}

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

/* Data: the training file, and the rows to classify (--predict) with the same shape. */
static void load_data(const dnn_options *o, dataset *all, dataset *to_predict)
{
    char err[512];
    if (lb_load_csv(o->data_path, all, 0, err, sizeof err))
        lb_die(LB_EXIT_USAGE, "dnn: %s%s", err,
               strstr(err, "cannot open") ? " (run from ch09_dnn, or pass --data FILE)" : "");
    if (!o->predict_path) return;
    if (lb_load_csv(o->predict_path, to_predict, 1, err, sizeof err)) lb_die(LB_EXIT_USAGE, "dnn: %s", err);
    if (to_predict->features != all->features || to_predict->classes != all->classes)
        lb_die(LB_EXIT_USAGE, "dnn: %s has %d features and %d classes, the training data %d and %d", o->predict_path,
               to_predict->features, to_predict->classes, all->features, all->classes);
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

/* A seeded split into training and test rows, both z-scored with the training set's statistics
 * (or the loaded ones), and the rows to classify too. Fills in the size-dependent defaults. */
static void split_and_normalize(dnn_options *o, const dataset *all, lb_rng *rng, dataset *train, dataset *test,
                                dataset *to_predict, float **mean, float **sd)
{
    int *idx = lb_host_alloc(sizeof(int) * all->n, "indices");
    for (int i = 0; i < all->n; i++) idx[i] = i;
    shuffle(idx, all->n, rng);
    int n_test = (int)lround(all->n * o->test_frac), n_train = all->n - n_test;
    if (n_train < 1)
        lb_die(LB_EXIT_USAGE, "dnn: %s: no samples left for training with --test-frac %g", o->data_path, o->test_frac);
    *train = subset(all, idx, n_train);
    *test = subset(all, idx + n_train, n_test);
    free(idx);
    if (!*mean) {
        *mean = lb_host_alloc(sizeof(float) * all->features, "means");
        *sd = lb_host_alloc(sizeof(float) * all->features, "deviations");
        feature_stats(train, *mean, *sd);
    }
    normalize(train, *mean, *sd);
    normalize(test, *mean, *sd);
    if (o->predict_path) normalize(to_predict, *mean, *sd);
    int small = n_train < 500;
    if (o->epochs == UNSET_INT) o->epochs = o->load_path ? 0 : small ? 200 : 30;
    if (o->batch == UNSET_INT) o->batch = small ? 16 : 32;
    if (o->batch > n_train) o->batch = n_train;
    if (o->lr == UNSET_DOUBLE) o->lr = o->adam ? 1e-3 : 0.05;
}

/* The epochs: a fresh shuffle each, the step replayed as a graph (or launched), the loss and
 * accuracies printed per epoch. Returns the exit status; *train_ms the GPU time of the steps. */
static int train(const dnn_options *o, const lb_args *args, trainer *t, const dataset *train_set, const dataset *test,
                 lb_rng *rng, cudaStream_t s, double *train_ms)
{
    int n_train = train_set->n, steps = n_train / o->batch; /* the last partial batch of each epoch is left out */
    cudaGraphExec_t graph = (o->epochs > 0 && !o->no_graph) ? capture_step(t, s) : NULL;
    int *perm = lb_host_alloc(sizeof(int) * n_train, "permutation");
    for (int i = 0; i < n_train; i++) perm[i] = i;
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    int status = LB_EXIT_PASS;
    *train_ms = 0.0;
    for (int e = 0; e < o->epochs; e++) {
        shuffle(perm, n_train, rng);
        CUDA_CHECK(cudaMemcpyAsync(t->d_perm, perm, sizeof(int) * n_train, cudaMemcpyHostToDevice, s));
        CUDA_CHECK(cudaMemsetAsync(&t->d_state->cursor, 0, sizeof(int), s));
        CUDA_CHECK(cudaMemsetAsync(&t->d_state->loss_sum, 0, sizeof(float) + sizeof(int), s)); /* loss_sum, correct */
        CUDA_CHECK(cudaEventRecord(e0, s));
        for (int k = 0; k < steps; k++) {
            if (graph)
                CUDA_CHECK(cudaGraphLaunch(graph, s));
            else
                train_step(t, s);
        }
        CUDA_CHECK(cudaEventRecord(e1, s));
        step_state st;
        CUDA_CHECK(cudaMemcpyAsync(&st, t->d_state, sizeof st, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        *train_ms += ms;
        double loss = st.loss_sum / steps;
        if (!isfinite(loss)) {
            fprintf(stderr, "dnn: the loss is %g at epoch %d: training diverged (try a smaller --lr)\n", loss, e + 1);
            status = LB_EXIT_FAIL;
            break;
        }
        if (!args->quiet)
            printf("epoch %4d/%d: loss %.4f, train acc %5.1f%% (during the epoch), test acc %5.1f%%, %.2f ms\n", e + 1,
                   o->epochs, loss, 100.0 * st.correct / (steps * o->batch), 100.0 * accuracy(t->net, test, NULL, s),
                   ms);
    }
    if (graph) CUDA_CHECK(cudaGraphExecDestroy(graph));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    free(perm);
    return status;
}

/* Accuracies, the confusion matrix, and the RESULT line; --min-accuracy can fail the run. */
static int report(const dnn_options *o, const lb_args *args, network *net, const dataset *all, const dataset *train_set,
                  const dataset *test, cudaStream_t s, double train_ms, double t_start)
{
    int *confusion = calloc((size_t)all->classes * all->classes, sizeof(int));
    double train_acc = accuracy(net, train_set, NULL, s), test_acc = accuracy(net, test, confusion, s);
    double total_s = (lb_wall_ms() - t_start) / 1e3;
    int steps = o->epochs * (train_set->n / o->batch);
    char shape[128];
    shape_text(net, shape, sizeof shape);
    if (!args->quiet) {
        printf("final: train accuracy %.2f%%, test accuracy %.2f%% (%d of %d)\n", 100 * train_acc, 100 * test_acc,
               (int)lround(test_acc * test->n), test->n);
        if (test->n) print_confusion(all, confusion);
        printf("training %.1f ms (%d steps of %d, %.1f us each); whole run %.2f s\n", train_ms, steps, o->batch,
               steps > 0 ? 1e3 * train_ms / steps : 0.0, total_s);
    } else {
        printf("dnn: %s %s, %d epochs: test accuracy %.2f%%, whole run %.2f s\n", o->data_path, shape, o->epochs,
               100 * test_acc, total_s);
    }
    free(confusion);
    /* the data set's file name without folder and extension: ../datasets/iris.csv -> iris */
    const char *base = strrchr(o->data_path, '/') ? strrchr(o->data_path, '/') + 1 : o->data_path;
    char name[96], sz[160];
    snprintf(name, sizeof name, "%.*s_seed%llu", (int)strcspn(base, "."), base, args->seed);
    snprintf(sz, sizeof sz, "%s_e%d", shape, o->epochs);
    int acc_ok = o->min_accuracy < 0 || 100 * test_acc >= o->min_accuracy;
    if (!acc_ok)
        fprintf(stderr, "dnn: test accuracy %.2f%% is below --min-accuracy %g\n", 100 * test_acc, o->min_accuracy);
    lb_result r = {
        "dnn", -1, name, sz, train_ms, "test_acc_pct", 100 * test_acc, NULL, 0.0, o->min_accuracy < 0 ? -1 : acc_ok};
    lb_print_result(&r, args->quiet);
    return acc_ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}

/* --vs-linear: logistic regression (layers F,C: no hidden layer) trained by the same code on the
 * same split, with the same optimizer, learning rate, batch and epochs. The network must beat
 * it: an accuracy bar that a linear model also clears cannot tell a working hidden layer from
 * a broken one. */
static int beat_linear(const dnn_options *o, const lb_args *args, const dataset *train_set, const dataset *test,
                       int max_rows, lb_rng *rng, network *net, cudaStream_t s)
{
    network lin = {0};
    lin.act = net->act;
    lin.n_layers = 1;
    lin.size[0] = train_set->features;
    lin.size[1] = train_set->classes;
    net_alloc(&lin, max_rows);
    float *p = lb_host_alloc(sizeof(float) * lin.n_params, "parameters");
    init_params(&lin, p, rng);
    CUDA_CHECK(cudaMemcpy(lin.d_params, p, sizeof(float) * lin.n_params, cudaMemcpyHostToDevice));
    trainer t;
    trainer_create(&t, &lin, o->batch, train_set, o->adam, (float)o->lr, (float)o->momentum);
    CUBLAS_CHECK(cublasSetStream(lin.h, s));
    lb_args quiet = *args;
    quiet.quiet = 1;
    double ms;
    int status = train(o, &quiet, &t, train_set, test, rng, s, &ms);
    double lin_acc = accuracy(&lin, test, NULL, s), net_acc = accuracy(net, test, NULL, s);
    int ok = status == LB_EXIT_PASS && net_acc > lin_acc;
    printf("logistic regression %d-%d on the same split: test accuracy %.2f%%, the network's %.2f%%: %s\n", lin.size[0],
           lin.size[1], 100 * lin_acc, 100 * net_acc,
           ok ? "PASS (the hidden layers help)" : "FAIL (the network is no better than a linear model)");
    trainer_free(&t);
    net_free(&lin);
    free(p);
    return ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
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
    if (predict_only(&o)) return run_predict_only(&o);

    /* ---- setup: data, shape, split (all checked before the GPU is touched), then the GPU */
    dataset all, to_predict = {0}, train_set, test;
    load_data(&o, &all, &to_predict);
    network net = {0};
    float *mean = NULL, *sd = NULL;
    float *params = choose_shape(&o, &program, &all, &net, &mean, &sd);
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    split_and_normalize(&o, &all, &rng, &train_set, &test, &to_predict, &mean, &sd);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    int max_rows = o.batch > DNN_EVAL_ROWS ? o.batch : DNN_EVAL_ROWS;
    size_t act_floats = 0;
    for (int l = 0; l <= net.n_layers; l++) act_floats += (size_t)2 * max_rows * net.size[l];
    lb_require_device_memory(sizeof(float) * (4 * net.n_params + act_floats + (size_t)train_set.n * all.features) +
                                 (32u << 20),
                             "the network and the training set");
    char shape[128];
    shape_text(&net, shape, sizeof shape);
    if (!args.quiet)
        printf("dnn: %s (%d samples: %d train, %d test), layers %s, %s, %s lr %g, batch %d, %d epochs, seed %llu, %s "
               "(%s)\n",
               o.data_path, all.n, train_set.n, test.n, shape, net.act == ACT_RELU ? "ReLU" : "sigmoid",
               o.adam ? "Adam" : "SGD momentum", o.lr, o.batch, o.epochs, args.seed, gpu.prop.name, gpu.sm);
    net_alloc(&net, max_rows);
    if (!params) {
        params = lb_host_alloc(sizeof(float) * net.n_params, "parameters");
        init_params(&net, params, &rng);
    }
    CUDA_CHECK(cudaMemcpy(net.d_params, params, sizeof(float) * net.n_params, cudaMemcpyHostToDevice));
    trainer t;
    trainer_create(&t, &net, o.batch, &train_set, o.adam, (float)o.lr, (float)o.momentum);
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasSetStream(net.h, s));

    int status;
    if (o.gradcheck) {
        /* ---- check the gradients, and stop: fp32 gradients against a double-precision oracle;
         * 1e-3 is ten times what a correct backward pass shows, a wrong transpose or a missing
         * term gives order 1 */
        double worst = gradcheck(&t, &train_set, train_set.n < 8 ? train_set.n : 8, s, args.quiet);
        status = worst <= 1e-3 ? LB_EXIT_PASS : LB_EXIT_FAIL;
        if (args.quiet)
            printf("dnn gradcheck: %s, max relative error %.2e, %s\n", shape, worst, status ? "FAIL" : "PASS");
        else
            printf("%s\n", status ? "FAIL" : "PASS");
    } else {
        /* ---- train, then report; save and classify on request */
        double train_ms;
        status = train(&o, &args, &t, &train_set, &test, &rng, s, &train_ms);
        int report_status = report(&o, &args, &net, &all, &train_set, &test, s, train_ms, t_start);
        if (status == LB_EXIT_PASS) status = report_status;
        if (o.vs_linear) {
            int linear_status = beat_linear(&o, &args, &train_set, &test, max_rows, &rng, &net, s);
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

    CUDA_CHECK(cudaStreamDestroy(s));
    trainer_free(&t);
    net_free(&net);
    free(params);
    free(mean);
    free(sd);
    lb_free_dataset(&all);
    lb_free_dataset(&train_set);
    lb_free_dataset(&test);
    lb_free_dataset(&to_predict);
    return status;
}
