/* dnn_kernels.h - launchers for dnn_kernels.cu (callable from C). Every launcher queues its
 * kernel on `stream` and returns cudaGetLastError(). Matrices are row-major, one sample a row. */
#ifndef DNN_KERNELS_H
#define DNN_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

enum { ACT_RELU = 0, ACT_SIGMOID = 1 };

/* What the training step keeps on the device between kernels and steps (see dnn.c). */
typedef struct {
    int cursor;     /* next position in this epoch's permutation */
    int t;          /* optimizer steps so far (Adam's bias correction) */
    float loss_sum; /* this epoch: sum of the batches' mean losses */
    int correct;    /* this epoch: training samples classified right */
    float lr;       /* this epoch's learning rate (the schedule's), written by the host between epochs */
} step_state;

/* xb[i] = X[perm[cursor + i]], yb[i] = y[...] for i < rows (F features a row) */
cudaError_t gather_batch_launch(const float *d_x, const int *d_y, const int *d_perm, const step_state *d_state,
                                int rows, int features, float *d_xb, int *d_yb, cudaStream_t stream);

/* Z = act(Z + b), in place; Z is rows x cols */
cudaError_t bias_act_launch(float *d_z, const float *d_b, int rows, int cols, int act, cudaStream_t stream);

/* Device scratch the loss layer and the column sums pass between their blocks, for batches of up
 * to max_rows rows and layers of up to max_cols units: the rows' losses and hits, the chunks'
 * partial column sums (dnn_scratch_part_floats), and counters (dnn_scratch_counters, zero at
 * the start; every kernel leaves them zero). One launch at a time uses them (one stream). */
typedef struct {
    float *row_loss; /* max_rows */
    int *row_ok;     /* max_rows */
    float *part;     /* dnn_scratch_part_floats(max_rows, max_cols) */
    unsigned *counters;
    int max_rows, max_cols;
} dnn_scratch;
size_t dnn_scratch_part_floats(int max_rows, int max_cols);
size_t dnn_scratch_counters(int max_cols);

/* The loss layer, a warp per row: logits = Z + b (rows x classes; d_b NULL: Z holds the bias
 * already); p = softmax(logits); state->loss_sum += mean over rows of -log p[y];
 * state->correct += rows with argmax = y; dZ = (p - onehot(y)) / rows; db = column sums of dZ
 * (d_db NULL: not wanted; a second kernel). Row r's label is d_y[r], or
 * d_y[d_perm[state->cursor + r]] when d_perm is given. advance: then state->cursor += rows,
 * state->t += 1 (the step is over for whoever reads them). */
cudaError_t softmax_xent_launch(const float *d_z, const float *d_b, const int *d_y, const int *d_perm, int rows,
                                int classes, float *d_dz, float *d_db, dnn_scratch sc, step_state *d_state,
                                int advance, cudaStream_t stream);

/* Back through the activation, in place: dZ = dA * act'(A) (A is the layer's output), and
 * db = column sums of dZ (rows x cols) */
cudaError_t act_backward_launch(float *d_da, const float *d_a, int rows, int cols, int act, float *d_db,
                                dnn_scratch sc, cudaStream_t stream);

/* Optimizers over all n parameters at once, with the learning rate state->lr and weight decay wd.
 * SGD with momentum: g' = g + wd w (L2), v = mu v - lr g'; w += v.
 * Adam: m, v moments of g, bias-corrected with the step count in state->t; then the decay,
 * decoupled from the moments (AdamW): w -= lr (m^ / (sqrt(v^) + eps) + wd w). */
cudaError_t sgd_momentum_launch(float *d_w, const float *d_g, float *d_v, size_t n, float mu, float wd,
                                const step_state *d_state, cudaStream_t stream);
cudaError_t adam_launch(float *d_w, const float *d_g, float *d_m, float *d_v, size_t n, float wd,
                        const step_state *d_state, cudaStream_t stream);

/* pred[r] = argmax over classes of (Z + b)[r] (d_b NULL: no bias to add), prob[r] its softmax
 * probability; with labels d_y, nll[r] = -log p[y[r]] (the row's cross-entropy) */
cudaError_t predict_launch(const float *d_z, const float *d_b, const int *d_y, int rows, int classes, int *d_pred,
                           float *d_prob, float *d_nll, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
