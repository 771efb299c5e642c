/* dnn_options.c - the options of ch09's dnn: the table of flags, their defaults and their
 * checks (dnn_options.h). */
#define _POSIX_C_SOURCE 200809L
#include "dnn_options.h"

#include <string.h>

dnn_options default_options(void)
{
    dnn_options o = {.data_path = NULL, /* then DNN_DEFAULT_DATA, unless the run only predicts */
                     .act = "relu",
                     .schedule = DNN_DEFAULT_SCHEDULE,
                     .epochs = UNSET_INT,
                     .batch = UNSET_INT,
                     .patience = UNSET_INT,
                     .steps = UNSET_INT,
                     .seeds = 1,
                     .lr = UNSET_DOUBLE,
                     .momentum = 0.9,
                     .test_frac = 1.0 / 3.0,
                     .val_frac = DNN_DEFAULT_VAL_FRAC,
                     .weight_decay = UNSET_DOUBLE,
                     .min_accuracy = UNSET_DOUBLE};
    return o;
}

/* --load w.bin --predict rows.csv without --data: the weights file is all it needs */
int predict_only(const dnn_options *o) { return o->load_path && o->predict_path && !o->data_path; }

/* The flags (pointing into o), the program's description, the parse, and the checks of
 * every value; bad input exits 2 here, before anything is loaded. */
void parse_options(dnn_options *o, lb_args *args, lb_opt *opts, lb_program *program, int argc, char **argv)
{
    static int fused, cublas, lt; /* the flags of one choice, o->path (static: the table outlives this call) */
    fused = cublas = lt = 0;
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
        {"--synthetic", LB_OPT_STRING, &o->synthetic, "S = F,H,...,C: random data of that shape; time a training step"},
        {"--steps", LB_OPT_INT, &o->steps,
         "with --synthetic: steps in each timed pass (default " STR(DNN_SYNTHETIC_STEPS) "; 3 reach every kernel)"},
        {"--no-graph", LB_OPT_FLAG, &o->no_graph,
         "launch each step's kernels one by one instead of replaying a CUDA graph"},
        {"--min-accuracy", LB_OPT_DOUBLE, &o->min_accuracy,
         "fail (exit 1) if the test accuracy ends below X percent"},
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
         "train N times (seeds seed..seed+N-1: other splits and weights), report mean and sd of the test accuracy"},
        {"--kfold", LB_OPT_INT, &o->kfold, "N-fold cross-validation accuracy (each row tested once; N at most the rows)"},
        {"--fused", LB_OPT_FLAG, &fused,
         "the fused step: our GEMMs with bias, activation and update inside (not yet faster: NOTES.md)"},
        {"--cublas", LB_OPT_FLAG, &cublas, "the step on cuBLAS GEMMs with small kernels around them (default)"},
        {"--lt", LB_OPT_FLAG, &lt,
         "the step on cuBLASLt GEMMs with bias, ReLU, ReLU' and the bias sums in their epilogues (ReLU only)"},
        {"--tune-gemms", LB_OPT_FLAG, &o->tune_gemms,
         "with --lt: time 16 candidate algorithms for each GEMM and keep the fastest (runs may then differ in "
         "rounding)"},
        {"--tf32", LB_OPT_FLAG, &o->tf32,
         "TF32 tensor cores for the GEMMs, both paths (inputs rounded to 10-bit mantissas; sm_80 and newer)"},
        {"--check-optimizer", LB_OPT_FLAG, &o->check_optimizer,
         "one step of SGD with momentum and of Adam by the kernels against the CPU's formulas, then stop"},
        {"--check-tf32", LB_OPT_FLAG, &o->check_tf32,
         "one layer's products in fp32 and in TF32 on the cuBLAS and cuBLASLt paths against the CPU, then stop"},
        {"--compare-paths", LB_OPT_FLAG, &o->compare,
         "train from the same weights on the cuBLAS path and the fused one (with --lt: the cuBLASLt one); fail "
         "unless their weights differ by rounding only"},
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
    if (o->steps != UNSET_INT && (o->steps < 2 || o->steps > 100000)) lb_usage_error(program, "--steps must be 2..100000");
    if (o->steps != UNSET_INT && !o->synthetic) lb_usage_error(program, "--steps is --synthetic's: not without it");
    if (o->check_tf32 && (o->check_optimizer || o->synthetic || o->gradcheck || o->compare || o->load_path ||
                          o->predict_path))
        lb_usage_error(program, "--check-tf32 runs alone: no --check-optimizer, --synthetic, --gradcheck, "
                                "--compare-paths, --load or --predict with it");
    if (o->check_optimizer && (o->synthetic || o->gradcheck || o->compare || o->load_path || o->predict_path))
        lb_usage_error(program, "--check-optimizer runs alone: no --synthetic, --gradcheck, --compare-paths, --load "
                                "or --predict with it");
    if (o->kfold != 0 && (o->kfold < 2 || o->kfold > 1000)) lb_usage_error(program, "--kfold must be 2..1000");
    if (fused + cublas + lt > 1) lb_usage_error(program, "--fused, --cublas and --lt: pick one path");
    o->path = fused ? DNN_PATH_FUSED : lt ? DNN_PATH_LT : DNN_PATH_CUBLAS;
    if (o->tune_gemms && o->path != DNN_PATH_LT) lb_usage_error(program, "--tune-gemms tunes the cuBLASLt path: with --lt");
    if (o->path == DNN_PATH_LT && strcmp(o->act, "relu"))
        lb_usage_error(program, "--lt: cuBLASLt's epilogues have ReLU (and GELU), not the sigmoid; --cublas or --fused");
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

/* TF32 tensor cores came with sm_80: refuse --tf32 on an older GPU rather than run fp32 under its name */
void require_tf32(const dnn_options *o, const lb_gpu *gpu)
{
    if (o->tf32 && gpu->cc < 80)
        lb_die(LB_EXIT_USAGE, "dnn: --tf32 needs TF32 tensor cores (sm_80 or newer); this GPU is %s", gpu->sm);
}

/* the data set's file name without folder and extension: ../datasets/iris.csv -> iris */
void data_name(const dnn_options *o, char *buf, size_t len)
{
    const char *base = strrchr(o->data_path, '/') ? strrchr(o->data_path, '/') + 1 : o->data_path;
    snprintf(buf, len, "%.*s", (int)strcspn(base, "."), base);
}

/* The defaults that depend on the data set's size (n_train training rows) and the optimizer. */
void fill_defaults(dnn_options *o, int n_train)
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
