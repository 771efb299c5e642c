/* dnn_data.h - the data of ch09's network: a CSV in the datasets/ layout, the seeded
 * train/test split, and the z-score. Host-only C (no CUDA, no cuBLAS): tests/test_dnn_data
 * links dnn_data.o by itself. */
#ifndef DNN_DATA_H
#define DNN_DATA_H
#include "labbook.h"

#define DNN_MAX_CLASSES 1024

/* A data set: the header line is n_samples,n_features,class names...; each row holds the
 * features and an integer label 0..classes-1. */
typedef struct {
    int n, features, classes;
    float *x;           /* n x features */
    int *y;             /* n labels, -1 when the file has none (--predict) */
    char **class_names; /* classes names from the header */
} dataset;

/* Read a CSV into d; labels_optional lets rows without a label through (their y is -1, for
 * --predict). Returns 0, or -1 with a one-line reason naming the file and line in err. */
int load_csv(const char *path, dataset *d, int labels_optional, char *err, size_t err_len);
void free_dataset(dataset *d);

/* A seeded Fisher-Yates shuffle of idx[0..n). */
void shuffle(int *idx, int n, lb_rng *rng);
/* Rows idx[0..n) of src, copied into a new set (exits 2 when out of host memory). */
dataset subset(const dataset *src, const int *idx, int n);
/* z-score: each feature's mean and standard deviation over d (sd 0 -> 1), and applying them. */
void feature_stats(const dataset *d, float *mean, float *sd);
void normalize(dataset *d, const float *mean, const float *sd);

#endif
