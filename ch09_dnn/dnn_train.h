/* dnn_train.h - training ch09's network: the epoch loop with its schedule and the kept best
 * epoch, the network and trainer of a run, and the modes that train several networks
 * (--seeds and --kfold, --vs-linear, --compare-paths). dnn_train.c. */
#ifndef DNN_TRAIN_H
#define DNN_TRAIN_H
#include "dnn_net.h"
#include "dnn_options.h"

/* What a training run ends with. */
typedef struct {
    double train_acc, val_acc, val_loss, test_acc, train_ms;
    int best_epoch, epochs_run, steps;
} fit_result;

/* The epochs: a fresh shuffle each, the step replayed as a graph (or launched), then the
 * validation set's loss and accuracy; the weights of the epoch with the lowest validation loss
 * are kept. progress: print each epoch. Returns the exit status, and the run's numbers in r. */
int train(const dnn_options *o, trainer *t, const dataset *train_set, const dataset *val, lb_rng *rng, cudaStream_t s,
          int progress, fit_result *r);
/* A network of the chosen shape on the chosen path, with its first weights, and its trainer */
void setup_net(const dnn_options *o, const network *shape, const float *init, int max_rows, const dataset *train_set,
               lb_rng *rng, cudaStream_t s, network *net, trainer *t);
void free_net(network *net, trainer *t);
/* "4-16-16-3": the layer sizes, for titles and RESULT sizes */
void shape_text(const network *net, char *buf, size_t len);
/* --vs-linear: logistic regression on the same split; the network must beat it */
int beat_linear(const dnn_options *o, const dataset *train_set, const dataset *val, const dataset *test, int max_rows,
                lb_rng *rng, network *net, cudaStream_t s);
/* --seeds K, --kfold K: K trainings, reported as the mean and sd (or the pooled folds) */
int run_repeated(const dnn_options *o, const lb_args *args, const dataset *all, const network *shape, int max_rows,
                 cudaStream_t s, double t_start);
/* --compare-paths: both paths from the same weights must end with the same weights, to rounding */
int compare_paths(const dnn_options *o, const lb_args *args, const network *shape, const float *init,
                  const dataset *train_set, int max_rows, const lb_rng *rng, cudaStream_t s);

#endif
