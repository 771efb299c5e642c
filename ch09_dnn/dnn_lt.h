/* dnn_lt.h - the training step's GEMMs on cuBLASLt, with the work around them in the GEMMs'
 * epilogues (dnn_lt.c). Forward: Z = relu(X W + b) in one GEMM, which also keeps ReLU's mask
 * (one bit an output) for the backward pass; the logits get their bias there too. Backward: the
 * dX GEMM multiplies by the mask of the layer below and sums that layer's bias gradient (ReLU's
 * derivative and the column sums in its epilogue). Left to small kernels: the gather, the loss
 * layer (with its own bias gradient) and the optimizer. ReLU only: cuBLASLt's epilogues have
 * ReLU and GELU, not the sigmoid. */
#ifndef DNN_LT_H
#define DNN_LT_H
#include <cuda_runtime_api.h>

struct dnn_network; /* dnn_net.h's network */
typedef struct dnn_lt dnn_lt;

/* The cuBLASLt handle, the ReLU masks for up to net->max_rows rows, and no plans yet. */
dnn_lt *lt_create(const struct dnn_network *net);
void lt_destroy(dnn_lt *lt);
/* Describe the GEMMs of a step of `rows` rows and let cuBLASLt's heuristic pick each one's
 * algorithm (host work only, unless net->tune_gemms: then each candidate is timed on stream 0,
 * so not while a graph is being captured). Done for a batch size once; lt_forward and
 * lt_backward do it themselves for one they have not seen. */
void lt_prepare(struct dnn_network *net, int rows);
/* Forward through every layer for `rows` rows in d_a[0]: hidden outputs relu(X W + b) with their
 * masks, logits X W + b (bias included). */
void lt_forward(struct dnn_network *net, int rows, cudaStream_t s);
/* Given dZ of the last layer in d_d[L] and its bias gradient (the loss layer's): dW of every
 * layer, dZ and db of every hidden layer. */
void lt_backward(struct dnn_network *net, int rows, cudaStream_t s);

#endif
