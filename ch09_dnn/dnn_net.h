/* dnn_net.h - the network of ch09: dense layers (X W + b) with ReLU or sigmoid and a softmax
 * cross-entropy loss, trained on cuBLAS and dnn_kernels.cu. Row-major: X is (rows, in), W is
 * (in, out), b is (out); all parameters live in one buffer, layer by layer (W then b).
 *
 *   network   net_alloc / net_free, init_params, forward / backward
 *   training  trainer_create / trainer_free, loss_and_grads (no update), train_step (one
 *             optimizer step), capture_step (that step as a CUDA graph); three paths: cuBLAS
 *             GEMMs with small kernels around them, cuBLASLt GEMMs with that work in their
 *             epilogues (dnn_lt.c), or the fused GEMMs of dnn_fused_kernels.cu
 *   results   predict_set, evaluate (accuracy and loss); gradcheck against loss_cpu (double, CPU)
 *   files     save_weights / load_weights; parse_layers ("4,16,16,3")
 */
#ifndef DNN_NET_H
#define DNN_NET_H
#include <cublas_v2.h>
#include "labbook.h"
#include "dnn_data.h"
#include "dnn_kernels.h"
#include "dnn_fused_kernels.h"
#include "dnn_lt.h"

#define DNN_MAX_LAYERS 8   /* weight layers */
#define DNN_EVAL_ROWS 4096 /* rows per forward pass when evaluating a whole set */

typedef struct dnn_network {
    int n_layers;                 /* weight layers */
    int size[DNN_MAX_LAYERS + 1]; /* size[0] features .. size[n_layers] classes */
    int act;
    size_t w_off[DNN_MAX_LAYERS], b_off[DNN_MAX_LAYERS], n_params; /* offsets into one parameter buffer */
    float *d_params, *d_grads, *d_opt1, *d_opt2;                   /* parameters, gradients, optimizer state */
    int max_rows;                                                  /* rows the activation buffers hold */
    float *d_a[DNN_MAX_LAYERS + 1]; /* d_a[0] the input batch, d_a[l] layer l's output (logits for the last) */
    float *d_d[DNN_MAX_LAYERS + 1]; /* d_d[l]: dLoss/d(layer l's output), then dZ in place */
    cublasHandle_t h;
    void *d_workspace;
    dnn_path path;  /* cuBLAS and small kernels, cuBLASLt with epilogues (dnn_lt.c), or the fused GEMMs */
    dnn_lt *lt;     /* the cuBLASLt path's handle, ReLU masks and GEMM plans (NULL on the others) */
    int tune_gemms; /* cuBLASLt path: time the heuristic's candidates for each GEMM, keep the fastest */
    int tf32;       /* TF32 tensor cores for the GEMMs (both paths; sm_80 and newer) */
    int sms;        /* the GPU's multiprocessors: the fused GEMMs' plans fill them */
    float *d_split; /* the fused GEMMs' split-K workspace and tile counters */
    int *d_tile_count;
    dnn_scratch scratch;    /* what the loss and column-sum kernels pass between their blocks */
    int *d_pred, *d_labels; /* evaluation: a chunk's predictions, labels, */
    float *d_prob, *d_nll;  /* probabilities and losses */
} network;

typedef struct {
    network *net;
    int rows;   /* the batch */
    float *d_x; /* the training set, on the device */
    int *d_y;
    int *d_perm;         /* this epoch's order of the training rows */
    int *d_yb;           /* the batch's labels */
    step_state *d_state; /* the cursor, step count, loss sums and learning rate */
    int adam;
    float momentum, weight_decay;
} trainer;

/* Layer l's weights and biases inside a parameter-sized buffer (parameters, gradients, ...). */
static inline float *net_w(const network *n, float *base, int l) { return base + n->w_off[l]; }
static inline float *net_b(const network *n, float *base, int l) { return base + n->b_off[l]; }

/* The offsets and n_params from n_layers and size[]. */
void layout(network *net);
/* Device buffers for activations of up to max_rows rows, the parameters and optimizer state,
 * and a cuBLAS handle with its own workspace (so a graph capture allocates nothing); set fused
 * and tf32 first. */
void net_alloc(network *net, int max_rows);
void net_free(network *net);
/* Weights from N(0, 2/in) for ReLU (He) or N(0, 1/in) for sigmoid (Xavier), biases 0, into h. */
void init_params(const network *net, float *h, lb_rng *rng);
/* Row-major C (M,N) = op(A) op(B) on cuBLAS (trans_a, trans_b: 1 = transposed). */
cublasStatus_t gemm_rm(cublasHandle_t h, int trans_a, int trans_b, int M, int N, int K, const float *A, const float *Bm,
                       float *C);
/* The cuBLAS path's GEMMs of layer l for `rows` rows: Z = X W (into d_a[l + 1]), dW = X^T dZ
 * (into the gradients), dX = dZ W^T (into d_d[l]); the benchmark times them on their own. */
void gemm_forward(network *net, int l, int rows);
void gemm_weight_grad(network *net, int l, int rows);
void gemm_input_grad(network *net, int l, int rows);
/* Forward through every layer for `rows` rows in d_a[0]; the logits end in d_a[L]. Returns the
 * last layer's bias for whoever reads the logits: the cuBLAS path leaves it out (the loss kernel
 * adds it), the fused path adds it in the GEMM (NULL: nothing left to add). */
const float *forward(network *net, int rows, cudaStream_t s);
void backward(network *net, int rows, cudaStream_t s);

/* The training set on the device, the batch and the step's state; d_perm is the caller's to fill,
 * and the learning rate (state->lr) too: set_lr. */
void trainer_create(trainer *t, network *net, int rows, const dataset *train, int adam, float momentum,
                    float weight_decay);
void set_lr(trainer *t, float lr, cudaStream_t s);
void trainer_free(trainer *t);
/* Gather `rows` rows, forward, loss, backward: gradients in net->d_grads, no update. */
void loss_and_grads(trainer *t, int rows, cudaStream_t s);
/* One training step (loss_and_grads of a batch, then the optimizer), queued on s. The fused
 * path applies the optimizer inside the gradient GEMMs instead. */
void train_step(trainer *t, cudaStream_t s);
/* The fused path's GEMMs of one step, in launch order (forward, dX, dW with the update; the loss
 * kernel runs between the forward and the dX ones), into list (at most max): to time each alone
 * with fused_gemm_run. Returns how many. */
int fused_step_gemms(trainer *t, fused_gemm *list, int max);
void fused_gemm_run(network *net, const fused_gemm *p, cudaStream_t s);
/* train_step captured once as a CUDA graph, to replay every step. */
cudaGraphExec_t capture_step(trainer *t, cudaStream_t s);

/* Predicted class and its probability for every row of d (on the host). */
void predict_set(network *net, const dataset *d, int *pred, float *prob, cudaStream_t s);
/* The share of d classified right; confusion (classes x classes, or NULL) counts true x predicted. */
double accuracy(network *net, const dataset *d, int *confusion, cudaStream_t s);
/* Accuracy and mean cross-entropy of the network on d (both 0 when d is empty). */
void evaluate(network *net, const dataset *d, double *acc, double *loss, cudaStream_t s);
/* The mean cross-entropy on n rows, in double on the CPU: the oracle of gradcheck. */
double loss_cpu(const network *net, const float *params, const float *x, const int *y, int n);
/* One parameter's analytic gradient `an` against the loss at p + hp (lp), p (l0) and p - hm (lm):
 * fd the central difference; rel the relative error against it, or, where the one-sided slopes
 * differ (a ReLU kink within the step) and the gradient is one of them, against that one (kink
 * 1). rel <= GRADCHECK_TOL passes. */
#define GRADCHECK_TOL 1e-3
typedef struct {
    double fd, rel;
    int kink;
} grad_verdict;
grad_verdict compare_gradient(double an, double lp, double l0, double lm, double hp, double hm);
/* Analytic gradients of `rows` training rows against finite differences of loss_cpu; returns
 * the largest relative error. */
double gradcheck(trainer *t, const dataset *train, int rows, cudaStream_t s, int quiet);
/* --check-optimizer: one step of SGD with momentum and of Adam (steps 1, 2, 10) by the kernels
 * on random parameters, gradients and state, against the formulas in double on the CPU.
 * Returns the exit code. */
int check_optimizers(const lb_args *args);
/* --check-tf32: one layer's logits (random inputs and weights) on the cuBLAS and cuBLASLt paths,
 * fp32 and TF32, against the CPU in double: fp32 within fp32's bound, TF32 within TF32's and
 * far past fp32's error (else --tf32 did not use TF32). Returns the exit code. */
int check_tf32(const lb_args *args);

/* The weights file: shape, the z-score, the class names and the parameters. 0 / a malloc'd
 * parameter array on success, else -1 / NULL with a one-line reason in err. */
int save_weights(const char *path, const network *net, const float *mean, const float *sd, char *const *class_names,
                 char *err, size_t len);
float *load_weights(const char *path, network *net, float **mean, float **sd, char ***class_names, char *err,
                    size_t len);
void free_names(char **names, int n);
/* "4,16,16,3" into net->size; returns the number of weight layers, or -1. */
int parse_layers(const char *s, network *net);

#endif
