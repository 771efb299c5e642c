/* dnn_data.h - the data of ch09's network: a CSV in the datasets/ layout (read by
 * common/lb_csv.c), the seeded train/validation/test split (and --kfold's folds), and the
 * z-score. Host-only C (no CUDA, no cuBLAS): tests/test_dnn_data links dnn_data.o and lb_csv.o
 * by themselves. */
#ifndef DNN_DATA_H
#define DNN_DATA_H
#include "lb_csv.h"
#include "dnn_options.h"

#define DNN_MAX_CLASSES LB_CSV_MAX_CLASSES

/* a data set as common/lb_csv.h reads it: x (n x features), y (labels), class names */
typedef lb_dataset dataset;

/* A seeded Fisher-Yates shuffle of idx[0..n). */
void shuffle(int *idx, int n, lb_rng *rng);
/* Rows idx[0..n) of src, copied into a new set (exits 2 when out of host memory). */
dataset subset(const dataset *src, const int *idx, int n);
/* z-score: each feature's mean and standard deviation over d (sd 0 -> 1), and applying them. */
void feature_stats(const dataset *d, float *mean, float *sd);
void normalize(dataset *d, const float *mean, const float *sd);

/* Data: the training file, and the rows to classify (--predict) with the same shape (exit 2 on
 * a file that cannot be read or does not match). */
void load_data(const dnn_options *o, dataset *all, dataset *to_predict);
/* The rows of one run: a seeded shuffle, the last test_frac of it for testing (or, for fold f
 * of --kfold, the f-th K-th), the rest split into training and validation; all three z-scored
 * with the training rows' statistics (or the loaded ones: *mean already set). */
void make_sets(const dnn_options *o, const dataset *all, const int *order, int fold, dataset *train, dataset *val,
               dataset *test, float **mean, float **sd);

#endif
