/* dnn_options.h - the options of ch09's dnn: every flag in one struct, the defaults that shape
 * training, and the parse with its checks (dnn_options.c). Host-only C. */
#ifndef DNN_OPTIONS_H
#define DNN_OPTIONS_H
#include <limits.h>
#include <math.h>
#include "labbook.h"

/* Every option of the program, in one place; main fills it from the command line. Unset means
 * "chosen from the data set" (UNSET_INT, UNSET_DOUBLE: see fill_defaults). */
/* The training step's path: cuBLAS GEMMs with small kernels around them (--cublas), cuBLASLt
 * GEMMs with bias, ReLU, its derivative and the bias sums in their epilogues (--lt), or our own
 * GEMMs with bias, activation and update in their epilogues (--fused). */
typedef enum { DNN_PATH_CUBLAS, DNN_PATH_FUSED, DNN_PATH_LT } dnn_path;
static inline const char *dnn_path_name(dnn_path p)
{
    return p == DNN_PATH_FUSED ? "fused" : p == DNN_PATH_LT ? "cuBLASLt" : "cuBLAS";
}

typedef struct {
    const char *data_path, *layers, *act, *save_path, *load_path, *predict_path, *synthetic, *schedule;
    int epochs, batch, adam, gradcheck, no_graph, vs_linear, patience, seeds, kfold, tf32, compare;
    int steps; /* --synthetic: steps in each timed pass (DNN_SYNTHETIC_STEPS unless given) */
    int check_optimizer; /* --check-optimizer: the update kernels against the CPU, then stop */
    int check_tf32;      /* --check-tf32: one layer in fp32 and TF32 on both cuBLAS paths against the CPU */
    int tune_gemms;      /* --tune-gemms: the cuBLASLt path times its GEMMs' candidate algorithms */
    dnn_path path;
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

#define DNN_DEFAULT_DATA "../datasets/iris.csv"

/* The options as nothing was given: the fields that depend on the data set stay UNSET */
dnn_options default_options(void);
/* The flags (pointing into o), the program's description, the parse, and the checks of every
 * value; bad input exits 2 here, before anything is loaded. opts holds DNN_N_OPTIONS entries. */
#define DNN_N_OPTIONS 32
/* --synthetic's training steps in each timed pass over its random data */
#define DNN_SYNTHETIC_STEPS 64
void parse_options(dnn_options *o, lb_args *args, lb_opt *opts, lb_program *program, int argc, char **argv);
/* --load w.bin --predict rows.csv without --data: the weights file is all it needs */
int predict_only(const dnn_options *o);
/* The defaults that depend on the data set's size (n_train training rows) and the optimizer. */
void fill_defaults(dnn_options *o, int n_train);
/* --tf32 refused on a GPU older than sm_80 (exit 2) */
void require_tf32(const dnn_options *o, const lb_gpu *gpu);
/* the data set's file name without folder and extension: ../datasets/iris.csv -> iris */
void data_name(const dnn_options *o, char *buf, size_t len);

#endif
