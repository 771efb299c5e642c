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
 * Files: dnn.c (options, main's phases, the benchmark), dnn_data.c (CSV, split, z-score),
 * dnn_net.c (the network on both paths, training step, evaluation, gradcheck, weights file),
 * dnn_kernels.cu (the cuBLAS path's small kernels), dnn_fused_kernels.cu (the fused GEMM),
 * dnn_math.cuh (what both share).
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
#include <float.h>
#include <math.h>
#include <string.h>
#include <unistd.h> /* isatty: an updating progress line only on a terminal */

/* ================================================================ options */

/* Every option of the program, in one place; main fills it from the command line. -1 means
 * "chosen from the data set" (see split_and_normalize). */
typedef struct {
    const char *data_path, *layers, *act, *save_path, *load_path, *predict_path, *synthetic, *schedule;
    int epochs, batch, adam, gradcheck, no_graph, vs_linear, patience, seeds, kfold, fused, cublas, tf32, compare;
    double lr, momentum, test_frac, min_accuracy, val_frac, weight_decay;
} dnn_options;

/* The defaults that shape generalization, chosen on iris and digits by validation accuracy only
 * (NOTES.md has the sweeps): a fifth of the training rows held out to pick the epoch whose
 * weights are kept, cosine decay of the learning rate, weight decay, and enough epochs for the
 * schedule to settle ("small": fewer than 500 training rows). */
#define DNN_DEFAULT_VAL_FRAC 0.2
#define DNN_DEFAULT_SCHEDULE "cosine"
#define DNN_DEFAULT_LR_SGD 0.1
#define DNN_DEFAULT_LR_ADAM 0.003
#define DNN_DEFAULT_DECAY_SGD 1e-3
#define DNN_DEFAULT_DECAY_ADAM 0.1
#define DNN_DEFAULT_EPOCHS_SMALL 400
#define DNN_DEFAULT_EPOCHS_LARGE 100
#define DNN_DEFAULT_PATIENCE 0 /* epochs without a better validation loss before stopping; 0: never */

#define STR_(x) #x
#define STR(x) STR_(x) /* a number's macro as text, for --help */

/* "Not given on the command line": values no flag can produce (an integer flag stops at
 * -(2^31 - 1), a number flag refuses infinities). So --epochs -1 is an error, not a silent
 * request for the default. */
#define UNSET_INT INT_MIN
#define UNSET_DOUBLE (-HUGE_VAL)

static dnn_options default_options(void)
{
    dnn_options o = {.data_path = NULL, /* then DNN_DEFAULT_DATA, unless the run only predicts */
                     .act = "relu",
                     .schedule = DNN_DEFAULT_SCHEDULE,
                     .epochs = UNSET_INT,
                     .batch = UNSET_INT,
                     .patience = UNSET_INT,
                     .seeds = 1,
                     .lr = UNSET_DOUBLE,
                     .momentum = 0.9,
                     .test_frac = 1.0 / 3.0,
                     .val_frac = DNN_DEFAULT_VAL_FRAC,
                     .weight_decay = UNSET_DOUBLE,
                     .min_accuracy = UNSET_DOUBLE};
    return o;
}

#define DNN_N_OPTIONS 27
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
         "passes over the training set (default " STR(DNN_DEFAULT_EPOCHS_SMALL) " for small sets, " STR(
             DNN_DEFAULT_EPOCHS_LARGE) " else; 0 with --load)"},
        {"--batch", LB_OPT_INT, &o->batch, "samples per step (default 16 for small sets, 32 else)"},
        {"--lr", LB_OPT_DOUBLE, &o->lr,
         "learning rate at the start (default " STR(DNN_DEFAULT_LR_SGD) " SGD, " STR(DNN_DEFAULT_LR_ADAM) " Adam)"},
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
        {"--val-frac", LB_OPT_DOUBLE, &o->val_frac,
         "share of the training rows held out for validation: picks the epoch whose weights are kept (0: none)"},
        {"--patience", LB_OPT_INT, &o->patience,
         "stop after this many epochs without a better validation loss (default " STR(
             DNN_DEFAULT_PATIENCE) ": run every epoch)"},
        {"--weight-decay", LB_OPT_DOUBLE, &o->weight_decay,
         "L2 weight decay (SGD: added to the gradient; Adam: decoupled, AdamW; default " STR(
             DNN_DEFAULT_DECAY_SGD) " SGD, " STR(DNN_DEFAULT_DECAY_ADAM) " Adam)"},
        {"--schedule", LB_OPT_STRING, &o->schedule,
         "learning rate over the epochs: cosine, step (x0.1 at 1/2 and 3/4) or none"},
        {"--seeds", LB_OPT_INT, &o->seeds,
         "K: train K times (seeds seed..seed+K-1: other splits and weights), report mean and sd of the test accuracy"},
        {"--kfold", LB_OPT_INT, &o->kfold, "K: K-fold cross-validation accuracy (each row tested once)"},
        {"--fused", LB_OPT_FLAG, &o->fused,
         "the fused step: our GEMMs with bias, activation and update inside (not yet faster: NOTES.md)"},
        {"--cublas", LB_OPT_FLAG, &o->cublas, "the step on cuBLAS GEMMs with small kernels around them (default)"},
        {"--tf32", LB_OPT_FLAG, &o->tf32,
         "TF32 tensor cores for the GEMMs, both paths (inputs rounded to 10-bit mantissas; sm_80 and newer)"},
        {"--compare-paths", LB_OPT_FLAG, &o->compare,
         "train from the same weights on both paths; fail unless they end with the same weights (within 1e-3)"},
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
    if (!(o->val_frac >= 0.0 && o->val_frac < 1.0)) lb_usage_error(program, "--val-frac must be in [0, 1)");
    if (o->patience != UNSET_INT && o->patience < 0) lb_usage_error(program, "--patience must be 0 or more");
    if (o->weight_decay != UNSET_DOUBLE && !(o->weight_decay >= 0.0 && o->weight_decay < 1.0))
        lb_usage_error(program, "--weight-decay must be in [0, 1)");
    if (strcmp(o->schedule, "cosine") && strcmp(o->schedule, "step") && strcmp(o->schedule, "none"))
        lb_usage_error(program, "--schedule must be cosine, step or none");
    if (o->seeds < 1 || o->seeds > 1000) lb_usage_error(program, "--seeds must be 1..1000");
    if (o->kfold != 0 && (o->kfold < 2 || o->kfold > 1000)) lb_usage_error(program, "--kfold must be 2..1000");
    if (o->fused && o->cublas) lb_usage_error(program, "--fused and --cublas: pick one path");
    o->cublas = !o->fused; /* the default path: cuBLAS, until the fused one wins (NOTES.md) */
    if (o->tf32 && o->gradcheck)
        lb_usage_error(program,
                       "--gradcheck compares fp32 gradients (1e-3); TF32's products alone differ by that much");
    if (o->tf32 && o->compare)
        lb_usage_error(program, "--compare-paths compares fp32 training: with --tf32 each path rounds its products its "
                                "own way, and over many steps the weights drift apart (compare the accuracies)");
    int repeated = o->seeds > 1 || o->kfold;
    if (o->kfold && o->seeds > 1) lb_usage_error(program, "--kfold and --seeds: pick one");
    if (repeated && (o->save_path || o->load_path || o->predict_path || o->gradcheck || o->vs_linear || o->compare))
        lb_usage_error(program,
                       "--seeds and --kfold train several networks: no --save, --load, --predict, --gradcheck, "
                       "--vs-linear or --compare-paths with them");
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

/* TF32 tensor cores came with sm_80: refuse --tf32 on an older GPU rather than run fp32 under its name */
static void require_tf32(const dnn_options *o, const lb_gpu *gpu)
{
    if (o->tf32 && gpu->cc < 80)
        lb_die(LB_EXIT_USAGE, "dnn: --tf32 needs TF32 tensor cores (sm_80 or newer); this GPU is %s", gpu->sm);
}

/* the data set's file name without folder and extension: ../datasets/iris.csv -> iris */
static void data_name(const dnn_options *o, char *buf, size_t len)
{
    const char *base = strrchr(o->data_path, '/') ? strrchr(o->data_path, '/') + 1 : o->data_path;
    snprintf(buf, len, "%.*s", (int)strcspn(base, "."), base);
}

static void setup_net(const dnn_options *o, const network *shape, const float *init, int max_rows,
                      const dataset *train_set, lb_rng *rng, cudaStream_t s, network *net, trainer *t);
static void free_net(network *net, trainer *t);

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

/* One path's step on the synthetic data: timed as a graph (and launched, for the cuBLAS path),
 * and whether it learns (the mean loss of an epoch falls from the first timed epoch to the last:
 * the network memorizes its random labels; "finite" alone would pass a step that learns nothing). */
typedef struct {
    float graph_ms, launch_ms;
    double first_loss, last_loss;
    int learns;
} path_timing;

static void time_path(trainer *t, const int *perm, int n, int steps, int launched_too, const lb_args *args,
                      cudaStream_t s, path_timing *pt)
{
    CUDA_CHECK(cudaMemcpy(t->d_perm, perm, sizeof(int) * n, cudaMemcpyHostToDevice));
    epoch_job plain = {t, NULL, steps, s}, graphed = {t, capture_step(t, s), steps, s};
    pt->first_loss = epoch_loss(&graphed);
    pt->launch_ms = launched_too ? lb_time_ms(run_epoch, &plain, 1, args->iters) / steps : 0.0f;
    pt->graph_ms = lb_time_ms(run_epoch, &graphed, 1, args->iters) / steps;
    pt->last_loss = epoch_loss(&graphed);
    pt->learns = isfinite(pt->last_loss) && pt->last_loss < pt->first_loss;
    CUDA_CHECK(cudaGraphExecDestroy(graphed.graph));
}

typedef struct {
    network *net;
    const fused_gemm *p;
    cudaStream_t s;
} fused_job;

static cudaError_t run_fused_gemm(void *ctx)
{
    fused_job *j = (fused_job *)ctx;
    fused_gemm_run(j->net, j->p, j->s);
    return cudaGetLastError();
}

/* the fused path's GEMMs, each timed alone, with its plan (tile, and parts of K) */
static void print_fused_gemms(trainer *t, const lb_args *args, cudaStream_t s)
{
    fused_gemm list[3 * DNN_MAX_LAYERS];
    int n = fused_step_gemms(t, list, 3 * DNN_MAX_LAYERS);
    /* the first GEMM gathers the batch through the permutation at the cursor, which the last
     * epoch left at its end: back to the first batch, or it would read past the permutation */
    CUDA_CHECK(cudaMemsetAsync(&t->d_state->cursor, 0, sizeof(int), s));
    printf("the fused path's GEMMs, each timed alone (M x N x K, tile/parts of K: us):");
    for (int i = 0; i < n; i++) {
        fused_job j = {t->net, &list[i], s};
        fused_plan plan = fused_plan_for(list[i].M, list[i].N, list[i].K, t->net->sms);
        printf(" %dx%dx%d %d/%d: %.1f;", list[i].M, list[i].N, list[i].K, plan.tile_m, plan.splits,
               lb_time_ms(run_fused_gemm, &j, 1, args->iters) * 1e3);
    }
    printf("\n");
}

/* --synthetic: random data of the given shape; time a training step on both paths (the cuBLAS one
 * launched, and as one CUDA graph; the fused one as a graph) against the cuBLAS path's GEMMs
 * alone (launched, and as one graph); check that each learns */
static int run_synthetic(const dnn_options *o, const lb_program *prog, const lb_args *args)
{
    network shape_net = {0};
    shape_net.act = strcmp(o->act, "sigmoid") == 0 ? ACT_SIGMOID : ACT_RELU;
    shape_net.n_layers = parse_layers(o->synthetic, &shape_net);
    if (shape_net.n_layers < 1)
        lb_usage_error(prog, "--synthetic takes sizes F,H,...,C (2 to %d numbers, each 1..65536)", DNN_MAX_LAYERS + 1);
    if (shape_net.size[shape_net.n_layers] > DNN_MAX_CLASSES)
        lb_usage_error(prog, "--synthetic: at most %d classes", DNN_MAX_CLASSES);
    layout(&shape_net);
    int rows = o->batch > 0 ? o->batch : 128, steps = 64, n = rows * steps, F = shape_net.size[0],
        C = shape_net.size[shape_net.n_layers];
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    require_tf32(o, &gpu);
    size_t act_floats = 0;
    for (int l = 0; l <= shape_net.n_layers; l++) act_floats += (size_t)2 * rows * shape_net.size[l];
    lb_require_device_memory(sizeof(float) * (2 * 5 * shape_net.n_params + 2 * act_floats + (size_t)n * F) +
                                 (80u << 20),
                             "two networks and the synthetic data");
    char shape[128];
    shape_text(&shape_net, shape, sizeof shape);
    if (!args->quiet)
        printf("dnn benchmark: %s, batch %d, %s, %s, random data (%d samples), %s (%s)\n", shape, rows,
               o->adam ? "Adam" : "SGD with momentum", o->tf32 ? "TF32 tensor cores" : "fp32", n, gpu.prop.name,
               gpu.sm);

    lb_rng rng;
    lb_rng_seed(&rng, args->seed);
    dataset data = {
        n, F, C, lb_host_alloc(sizeof(float) * (size_t)n * F, "data"), lb_host_alloc(sizeof(int) * n, "labels"), NULL};
    int *perm = lb_host_alloc(sizeof(int) * n, "permutation");
    lb_fill_uniform(data.x, (size_t)n * F, -1.0f, 1.0f, &rng);
    for (int i = 0; i < n; i++) data.y[i] = (int)(lb_rng_next(&rng) % (uint64_t)C), perm[i] = i;
    shuffle(perm, n, &rng);
    float *h_p = lb_host_alloc(sizeof(float) * shape_net.n_params, "parameters");
    init_params(&shape_net, h_p, &rng);
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s)); /* blocking: the default stream's events order with it */
    dnn_options po = *o;
    po.batch = rows;
    po.lr = o->lr > 0 ? o->lr : o->adam ? 1e-3 : 0.01;
    po.weight_decay = o->weight_decay != UNSET_DOUBLE ? o->weight_decay : 0.0;

    /* the cuBLAS path, and its GEMMs alone, like for like: launched one after another (against
     * the step's launches), and captured as one graph (against the step's graph) */
    network net;
    trainer t;
    path_timing cub, fus;
    po.cublas = 1;
    setup_net(&po, &shape_net, h_p, rows, &data, &rng, s, &net, &t);
    time_path(&t, perm, n, steps, 1, args, s, &cub);
    int L = net.n_layers, n_gemms = 3 * L - 1;
    gemm_job gj = {&net, -1, rows, NULL, s};
    float gemms_ms = lb_time_ms(run_gemms, &gj, 1, args->iters);
    gj.graph = capture_gemms(&gj);
    float gemms_graph_ms = lb_time_ms(run_gemms, &gj, 1, args->iters);
    CUDA_CHECK(cudaGraphExecDestroy(gj.graph));
    gj.graph = NULL;
    if (!args->quiet) {
        printf("the cuBLAS path's GEMMs, each timed alone (us):");
        for (gj.which = 0; gj.which < n_gemms; gj.which++)
            printf(" %.1f", lb_time_ms(run_gemms, &gj, 1, args->iters) * 1e3);
        printf("\n");
    }
    free_net(&net, &t);
    /* the fused path, from the same weights on the same batches */
    po.cublas = 0;
    setup_net(&po, &shape_net, h_p, rows, &data, &rng, s, &net, &t);
    time_path(&t, perm, n, steps, 0, args, s, &fus);
    if (!args->quiet) print_fused_gemms(&t, args, s);
    free_net(&net, &t);

    const char *suffix = o->tf32 ? "_tf32" : "";
    if (!args->quiet) {
        printf(" per step                                 us    samples/s   speed vs the cuBLAS GEMMs\n");
        printf(" cuBLAS path, launched one by one   %9.1f   %10.3g   %6.2f (the GEMMs launched: %.1f us)\n",
               cub.launch_ms * 1e3, rows / (cub.launch_ms * 1e-3), gemms_ms / cub.launch_ms, gemms_ms * 1e3);
        printf(" cuBLAS path, one CUDA graph        %9.1f   %10.3g   %6.2f (the GEMMs as a graph: %.1f us)\n",
               cub.graph_ms * 1e3, rows / (cub.graph_ms * 1e-3), gemms_graph_ms / cub.graph_ms, gemms_graph_ms * 1e3);
        printf(" fused path, one CUDA graph         %9.1f   %10.3g   %6.2f (goal >= 2: half the GEMMs' time)\n",
               fus.graph_ms * 1e3, rows / (fus.graph_ms * 1e-3), gemms_graph_ms / fus.graph_ms);
        printf("mean loss of an epoch, first and last: cuBLAS path %.4f -> %.4f (%s)", cub.first_loss, cub.last_loss,
               cub.learns ? "it learns" : "NOT LEARNING");
        printf(", fused path %.4f -> %.4f (%s)", fus.first_loss, fus.last_loss,
               fus.learns ? "it learns" : "NOT LEARNING");
        printf("\n");
    }
    char sz[160], names[5][48];
    snprintf(sz, sizeof sz, "%s_b%d", shape, rows);
    const char *stems[5] = {"step_fused_graph", "step_graph", "gemms_graph", "step_launches", "gemms_launched"};
    for (int i = 0; i < 5; i++) snprintf(names[i], sizeof names[i], "%s%s", stems[i], suffix);
    lb_result rs[] = {
        {"dnn", -1, names[0], sz, fus.graph_ms, "msamples_s", rows / (fus.graph_ms * 1e-3) / 1e6, names[2],
         gemms_graph_ms / fus.graph_ms, fus.learns},
        {"dnn", -1, names[1], sz, cub.graph_ms, "msamples_s", rows / (cub.graph_ms * 1e-3) / 1e6, names[2],
         gemms_graph_ms / cub.graph_ms, cub.learns},
        {"dnn", -1, names[2], sz, gemms_graph_ms, "msamples_s", rows / (gemms_graph_ms * 1e-3) / 1e6, names[2], 1.0,
         -1},
        {"dnn", -1, names[3], sz, cub.launch_ms, "msamples_s", rows / (cub.launch_ms * 1e-3) / 1e6, names[4],
         gemms_ms / cub.launch_ms, cub.learns},
        {"dnn", -1, names[4], sz, gemms_ms, "msamples_s", rows / (gemms_ms * 1e-3) / 1e6, names[4], 1.0, -1},
    };
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) lb_print_result(&rs[i], args->quiet);
    int pass = cub.learns && fus.learns;
    if (args->quiet)
        printf("dnn: %s batch %d: %.1f us per step fused, %.1f us cuBLAS path, its GEMMs as a graph %.1f us, %s\n",
               shape, rows, fus.graph_ms * 1e3, cub.graph_ms * 1e3, gemms_graph_ms * 1e3, pass ? "PASS" : "FAIL");
    CUDA_CHECK(cudaStreamDestroy(s));
    lb_free_dataset(&data);
    free(perm);
    free(h_p);
    return pass ? LB_EXIT_PASS : LB_EXIT_FAIL;
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

/* The defaults that depend on the data set's size (n_train training rows) and the optimizer. */
static void fill_defaults(dnn_options *o, int n_train)
{
    int small = n_train < 500;
    if (o->epochs == UNSET_INT)
        o->epochs = o->load_path ? 0 : small ? DNN_DEFAULT_EPOCHS_SMALL : DNN_DEFAULT_EPOCHS_LARGE;
    if (o->batch == UNSET_INT) o->batch = small ? 16 : 32;
    if (o->batch > n_train) o->batch = n_train;
    if (o->lr == UNSET_DOUBLE) o->lr = o->adam ? DNN_DEFAULT_LR_ADAM : DNN_DEFAULT_LR_SGD;
    if (o->weight_decay == UNSET_DOUBLE) o->weight_decay = o->adam ? DNN_DEFAULT_DECAY_ADAM : DNN_DEFAULT_DECAY_SGD;
    if (o->patience == UNSET_INT) o->patience = DNN_DEFAULT_PATIENCE;
}

/* Rows idx[0..n) of all into train and validation sets (the last val_frac of them validate). */
static void split_rest(const dnn_options *o, const dataset *all, const int *idx, int n, dataset *train, dataset *val)
{
    int n_val = (int)lround(n * o->val_frac), n_train = n - n_val;
    if (n_train < 1)
        lb_die(LB_EXIT_USAGE, "dnn: %s: no samples left for training with --test-frac %g and --val-frac %g",
               o->data_path, o->test_frac, o->val_frac);
    *train = subset(all, idx, n_train);
    *val = subset(all, idx + n_train, n_val);
}

/* The rows of one run: a seeded shuffle, the last test_frac of it for testing (or, for fold f
 * of --kfold, the f-th K-th), the rest split into training and validation; all three z-scored
 * with the training rows' statistics (or the loaded ones: *mean already set). */
static void make_sets(const dnn_options *o, const dataset *all, const int *order, int fold, dataset *train,
                      dataset *val, dataset *test, float **mean, float **sd)
{
    int n = all->n, *rest = lb_host_alloc(sizeof(int) * n, "indices"),
        *held = lb_host_alloc(sizeof(int) * n, "indices");
    int n_rest = 0, n_test = 0;
    if (o->kfold) { /* fold f: rows [f n / K, (f + 1) n / K) of the shuffled order */
        int lo = (int)((long long)fold * n / o->kfold), hi = (int)((long long)(fold + 1) * n / o->kfold);
        for (int i = 0; i < n; i++) {
            if (i >= lo && i < hi)
                held[n_test++] = order[i];
            else
                rest[n_rest++] = order[i];
        }
    } else {
        n_test = (int)lround(n * o->test_frac), n_rest = n - n_test;
        memcpy(rest, order, sizeof(int) * n_rest);
        memcpy(held, order + n_rest, sizeof(int) * n_test);
    }
    if (n_rest < 1)
        lb_die(LB_EXIT_USAGE, "dnn: %s: no samples left for training with --test-frac %g", o->data_path, o->test_frac);
    split_rest(o, all, rest, n_rest, train, val);
    *test = subset(all, held, n_test);
    if (!*mean) {
        *mean = lb_host_alloc(sizeof(float) * all->features, "means");
        *sd = lb_host_alloc(sizeof(float) * all->features, "deviations");
        feature_stats(train, *mean, *sd);
    }
    normalize(train, *mean, *sd);
    normalize(val, *mean, *sd);
    normalize(test, *mean, *sd);
    free(rest);
    free(held);
}

/* The learning rate of epoch e (from 0) of E: cosine decay from lr to 0, steps of x0.1 at one
 * half and three quarters, or constant. */
static double scheduled_lr(const dnn_options *o, int e)
{
    if (!strcmp(o->schedule, "cosine")) return o->lr * 0.5 * (1.0 + cos(3.141592653589793 * e / o->epochs));
    if (!strcmp(o->schedule, "step")) return o->lr * (e < o->epochs / 2 ? 1.0 : e < 3 * o->epochs / 4 ? 0.1 : 0.01);
    return o->lr;
}

/* What a training run ends with. */
typedef struct {
    double train_acc, val_acc, val_loss, test_acc, train_ms;
    int best_epoch, epochs_run, steps;
} fit_result;

/* The epochs: a fresh shuffle each, the step replayed as a graph (or launched), then the
 * validation set's loss and accuracy. The weights of the epoch with the lowest validation loss
 * are kept (the last epoch's without a validation set); --patience epochs without a better one
 * stop the run. progress: print each epoch (one updating line on a terminal). Returns the exit
 * status, and the run's numbers in r. */
static int train(const dnn_options *o, trainer *t, const dataset *train_set, const dataset *val, lb_rng *rng,
                 cudaStream_t s, int progress, fit_result *r)
{
    network *net = t->net;
    int n_train = train_set->n, steps = n_train / o->batch; /* the last partial batch of each epoch is left out */
    cudaGraphExec_t graph = (o->epochs > 0 && !o->no_graph) ? capture_step(t, s) : NULL;
    int *perm = lb_host_alloc(sizeof(int) * n_train, "permutation");
    for (int i = 0; i < n_train; i++) perm[i] = i;
    float *d_best = NULL;
    if (val->n) CUDA_CHECK(cudaMalloc((void **)&d_best, sizeof(float) * net->n_params));
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    int status = LB_EXIT_PASS, terminal = progress && isatty(fileno(stdout));
    double best_loss = HUGE_VAL;
    memset(r, 0, sizeof *r);
    for (int e = 0; e < o->epochs; e++) {
        shuffle(perm, n_train, rng);
        CUDA_CHECK(cudaMemcpyAsync(t->d_perm, perm, sizeof(int) * n_train, cudaMemcpyHostToDevice, s));
        CUDA_CHECK(cudaMemsetAsync(&t->d_state->cursor, 0, sizeof(int), s));
        CUDA_CHECK(cudaMemsetAsync(&t->d_state->loss_sum, 0, sizeof(float) + sizeof(int), s)); /* loss_sum, correct */
        set_lr(t, (float)scheduled_lr(o, e), s);
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
        r->train_ms += ms;
        r->epochs_run = e + 1;
        r->steps += steps;
        double loss = st.loss_sum / steps;
        if (!isfinite(loss)) {
            if (terminal) printf("\n");
            fprintf(stderr, "dnn: the loss is %g at epoch %d: training diverged (try a smaller --lr)\n", loss, e + 1);
            status = LB_EXIT_FAIL;
            break;
        }
        double val_acc = 0.0, val_loss = 0.0;
        if (val->n) {
            evaluate(net, val, &val_acc, &val_loss, s);
            if (val_loss < best_loss) { /* the best epoch so far: keep its weights */
                best_loss = val_loss, r->best_epoch = e + 1, r->val_acc = val_acc, r->val_loss = val_loss;
                CUDA_CHECK(
                    cudaMemcpyAsync(d_best, net->d_params, sizeof(float) * net->n_params, cudaMemcpyDeviceToDevice, s));
            }
        }
        if (progress) {
            printf("%sepoch %4d/%d: loss %.4f, train acc %5.1f%%", terminal ? "\r" : "", e + 1, o->epochs, loss,
                   100.0 * st.correct / (steps * o->batch));
            if (val->n)
                printf(", val loss %.4f, val acc %5.1f%% (best: epoch %d)", val_loss, 100 * val_acc, r->best_epoch);
            printf(", %.3g samples/s%s", steps * o->batch / (ms * 1e-3), terminal ? "\033[K" : "\n");
            fflush(stdout);
        }
        if (val->n && o->patience > 0 && e + 1 - r->best_epoch >= o->patience) break; /* no better for too long */
    }
    if (terminal && r->epochs_run) printf("\n");
    if (d_best && r->best_epoch) /* back to the best epoch's weights */
        CUDA_CHECK(cudaMemcpyAsync(net->d_params, d_best, sizeof(float) * net->n_params, cudaMemcpyDeviceToDevice, s));
    if (!val->n) r->best_epoch = r->epochs_run;
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (graph) CUDA_CHECK(cudaGraphExecDestroy(graph));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    CUDA_CHECK(cudaFree(d_best));
    free(perm);
    return status;
}

/* A network of the chosen shape on the chosen path, with its first weights (from init, or drawn
 * from rng), and a trainer for train_set. */
static void setup_net(const dnn_options *o, const network *shape, const float *init, int max_rows,
                      const dataset *train_set, lb_rng *rng, cudaStream_t s, network *net, trainer *t)
{
    *net = *shape;
    net->fused = !o->cublas;
    net->tf32 = o->tf32;
    net_alloc(net, max_rows);
    float *p = lb_host_alloc(sizeof(float) * net->n_params, "parameters");
    if (init)
        memcpy(p, init, sizeof(float) * net->n_params);
    else
        init_params(net, p, rng);
    CUDA_CHECK(cudaMemcpy(net->d_params, p, sizeof(float) * net->n_params, cudaMemcpyHostToDevice));
    free(p);
    trainer_create(t, net, o->batch, train_set, o->adam, (float)o->momentum, (float)o->weight_decay);
    set_lr(t, (float)o->lr, s);
    CUBLAS_CHECK(cublasSetStream(net->h, s));
}

static void free_net(network *net, trainer *t)
{
    trainer_free(t);
    net_free(net);
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
               o->batch, r->steps > 0 ? 1e3 * r->train_ms / r->steps : 0.0, net->fused ? "fused" : "cuBLAS", total_s);
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

/* --vs-linear: logistic regression (layers F,C: no hidden layer) trained by the same code on the
 * same split, with the same optimizer, learning rate, batch and epochs. The network must beat
 * it: an accuracy bar that a linear model also clears cannot tell a working hidden layer from
 * a broken one. */
static int beat_linear(const dnn_options *o, const dataset *train_set, const dataset *val, const dataset *test,
                       int max_rows, lb_rng *rng, network *net, cudaStream_t s)
{
    network lin = {0}, shape = {0};
    trainer t;
    shape.act = net->act;
    shape.n_layers = 1;
    shape.size[0] = train_set->features;
    shape.size[1] = train_set->classes;
    setup_net(o, &shape, NULL, max_rows, train_set, rng, s, &lin, &t);
    fit_result r;
    int status = train(o, &t, train_set, val, rng, s, 0, &r);
    double lin_acc = accuracy(&lin, test, NULL, s), net_acc = accuracy(net, test, NULL, s);
    int ok = status == LB_EXIT_PASS && net_acc > lin_acc;
    printf("logistic regression %d-%d on the same split: test accuracy %.2f%%, the network's %.2f%%: %s\n", lin.size[0],
           lin.size[1], 100 * lin_acc, 100 * net_acc,
           ok ? "PASS (the hidden layers help)" : "FAIL (the network is no better than a linear model)");
    free_net(&lin, &t);
    return ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}

/* --seeds K, --kfold K: K trainings, each on its own sets, network and shuffles, reported as the
 * test accuracy's mean and standard deviation (--seeds: seed k gives the run `./dnn --seed k`
 * would), or pooled over the folds (--kfold: every row is tested once, by the one network that
 * did not train on it). */
static int run_repeated(const dnn_options *o, const lb_args *args, const dataset *all, const network *shape,
                        int max_rows, cudaStream_t s, double t_start)
{
    int runs = o->kfold ? o->kfold : o->seeds, status = LB_EXIT_PASS,
        *order = lb_host_alloc(sizeof(int) * all->n, "order");
    double *acc = lb_host_alloc(sizeof(double) * runs, "accuracies"), mean = 0.0, var = 0.0, val_mean = 0.0;
    long right = 0, tested = 0;
    lb_rng rng;
    for (int k = 0; k < runs; k++) {
        if (k == 0 || !o->kfold) { /* --seeds: a new shuffle per run; --kfold: one, cut into folds */
            lb_rng_seed(&rng, args->seed + (o->kfold ? 0 : (unsigned long long)k));
            for (int i = 0; i < all->n; i++) order[i] = i;
            shuffle(order, all->n, &rng);
        }
        dataset train_set, val, test;
        float *mean_x = NULL, *sd_x = NULL;
        make_sets(o, all, order, k, &train_set, &val, &test, &mean_x, &sd_x);
        network net;
        trainer t;
        setup_net(o, shape, NULL, max_rows, &train_set, &rng, s, &net, &t);
        fit_result r;
        if (train(o, &t, &train_set, &val, &rng, s, 0, &r) != LB_EXIT_PASS) status = LB_EXIT_FAIL;
        acc[k] = accuracy(&net, &test, NULL, s);
        right += lround(acc[k] * test.n), tested += test.n;
        mean += acc[k] / runs, val_mean += r.val_acc / runs;
        if (!args->quiet)
            printf("%s %d: test accuracy %6.2f%% (%d of %d), validation %6.2f%%, the weights of epoch %d of %d\n",
                   o->kfold ? "fold" : "seed", o->kfold ? k + 1 : (int)(args->seed + k), 100 * acc[k],
                   (int)lround(acc[k] * test.n), test.n, 100 * r.val_acc, r.best_epoch, r.epochs_run);
        free_net(&net, &t);
        lb_free_dataset(&train_set);
        lb_free_dataset(&val);
        lb_free_dataset(&test);
        free(mean_x);
        free(sd_x);
    }
    for (int k = 0; k < runs; k++) var += (acc[k] - mean) * (acc[k] - mean) / (runs > 1 ? runs - 1 : 1);
    double sd = sqrt(var), pooled = tested ? (double)right / tested : 0.0, score = o->kfold ? pooled : mean;
    char shape_s[128], name[128], sz[160];
    shape_text(shape, shape_s, sizeof shape_s);
    data_name(o, name, sizeof name);
    snprintf(name + strlen(name), sizeof name - strlen(name), o->kfold ? "_kfold%d" : "_%dseeds", runs);
    snprintf(sz, sizeof sz, "%s_e%d", shape_s, o->epochs);
    if (o->kfold)
        printf("dnn: %s %s: %d-fold cross-validation accuracy %.2f%% (%ld of %ld rows; folds %.2f%% +- %.2f sd), "
               "validation %.2f%%, whole run %.2f s\n",
               o->data_path, shape_s, runs, 100 * pooled, right, tested, 100 * mean, 100 * sd, 100 * val_mean,
               (lb_wall_ms() - t_start) / 1e3);
    else
        printf("dnn: %s %s, seeds %llu..%llu: test accuracy %.2f%% +- %.2f (mean +- sd of %d runs), validation "
               "%.2f%%, whole run %.2f s\n",
               o->data_path, shape_s, args->seed, args->seed + runs - 1, 100 * mean, 100 * sd, runs, 100 * val_mean,
               (lb_wall_ms() - t_start) / 1e3);
    int acc_ok = o->min_accuracy < 0 || 100 * score >= o->min_accuracy;
    if (!acc_ok)
        fprintf(stderr, "dnn: %s accuracy %.2f%% is below --min-accuracy %g\n",
                o->kfold ? "cross-validation" : "mean test", 100 * score, o->min_accuracy);
    lb_result res = {"dnn",          -1,          name, sz,  0.0,
                     "test_acc_pct", 100 * score, NULL, 0.0, o->min_accuracy < 0 ? -1 : acc_ok};
    lb_print_result(&res, args->quiet);
    if (!o->kfold) {
        char sd_name[160];
        snprintf(sd_name, sizeof sd_name, "%s_sd", name);
        lb_result rs = {"dnn", -1, sd_name, sz, 0.0, "sd_pct", 100 * sd, NULL, 0.0, -1};
        lb_print_result(&rs, args->quiet);
    }
    free(order);
    free(acc);
    return status != LB_EXIT_PASS ? status : acc_ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}

/* --compare-paths: the same first weights, batches and learning rates on the cuBLAS path and on
 * the fused one. Their sums run in other orders, so the weights drift apart by rounding only.
 * The tolerance: a step's update rounds each weight once on each path (an ulp of the largest
 * weight at most: 2^-23 of it), and the gradients' other summation orders change the update by
 * far less (K roundings of a gradient, times the learning rate). These differences have random
 * signs, so over the steps they add like a random walk: sqrt(steps) of them, with a factor 4
 * of margin. Adam divides each gradient by its running size, so where a gradient is mostly
 * cancellation (small against its terms, and so different on the two paths by a good fraction
 * of itself) the two updates differ by that fraction of the learning rate: up to lr x 2^-10 a
 * step is allowed, added linearly (digits, batch 100, 27 steps: 8.8e-6, a tenth of it).
 * A path that computes something else drifts every step the same way, linearly: exercise 1's
 * bias decay on one path, even at --weight-decay 1e-5 (tests/ch09_dnn.sh). */
static int compare_paths(const dnn_options *o, const lb_args *args, const network *shape, const float *init,
                         const dataset *train_set, int max_rows, const lb_rng *rng, cudaStream_t s)
{
    float *w[2];
    dataset no_val = {0, train_set->features, train_set->classes, NULL, NULL, NULL}; /* no early stopping */
    fit_result r;
    int status = LB_EXIT_PASS;
    for (int path = 0; path < 2; path++) { /* 0 cuBLAS, 1 fused */
        dnn_options po = *o;
        po.cublas = path == 0, po.fused = path == 1;
        lb_rng same = *rng; /* the same shuffles on both paths */
        network net;
        trainer t;
        setup_net(&po, shape, init, max_rows, train_set, &same, s, &net, &t);
        if (train(&po, &t, train_set, &no_val, &same, s, 0, &r) != LB_EXIT_PASS) status = LB_EXIT_FAIL;
        w[path] = lb_host_alloc(sizeof(float) * net.n_params, "parameters");
        CUDA_CHECK(cudaMemcpy(w[path], net.d_params, sizeof(float) * net.n_params, cudaMemcpyDeviceToHost));
        free_net(&net, &t);
    }
    double gap = 0.0, largest = 0.0;
    for (size_t i = 0; i < shape->n_params; i++) {
        double d = fabs((double)w[0][i] - w[1][i]);
        if (!(d <= gap)) gap = d; /* NaN sticks */
        largest = fmax(largest, fabs((double)w[0][i]));
    }
    double tol = 4.0 * FLT_EPSILON * fmax(largest, 1.0) * sqrt((double)(r.steps > 1 ? r.steps : 1));
    if (o->adam) tol += r.steps * o->lr / 1024.0;
    int ok = status == LB_EXIT_PASS && gap <= tol;
    printf("dnn: %d epochs (%d steps) from the same weights: the cuBLAS and fused paths' weights differ by at most "
           "%.2e (the largest weight is %.3f): %s (tolerance %.2e)\n",
           r.epochs_run, r.steps, gap, largest, ok ? "PASS" : "FAIL", tol);
    (void)args;
    free(w[0]);
    free(w[1]);
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

    /* ---- setup: data, shape and defaults (all checked before the GPU is touched), then the GPU */
    dataset all, to_predict = {0};
    load_data(&o, &all, &to_predict);
    network shape = {0};
    float *mean = NULL, *sd = NULL;
    float *params = choose_shape(&o, &program, &all, &shape, &mean, &sd);
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
        printf("dnn: %s (%d samples), layers %s, %s, %s lr %g (%s), weight decay %g, batch %d, %d epochs, %s path, "
               "seed %llu, %s (%s)\n",
               o.data_path, all.n, shape_s, shape.act == ACT_RELU ? "ReLU" : "sigmoid",
               o.adam ? "Adam" : "SGD momentum", o.lr, o.schedule, o.weight_decay, o.batch, o.epochs,
               o.cublas ? (o.tf32 ? "cuBLAS TF32" : "cuBLAS") : (o.tf32 ? "fused TF32" : "fused"), args.seed,
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
            double worst = gradcheck(&t, &train_set, train_set.n < 8 ? train_set.n : 8, s, args.quiet);
            status = worst <= 1e-3 ? LB_EXIT_PASS : LB_EXIT_FAIL;
            if (args.quiet)
                printf("dnn gradcheck: %s, %s path, max relative error %.2e, %s\n", shape_s,
                       net.fused ? "fused" : "cuBLAS", worst, status ? "FAIL" : "PASS");
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
