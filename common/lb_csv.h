/* lb_csv.h - the data sets' CSV layout (datasets/README.md), read by ch07's PCA and ch09's
 * network. The header line is n_samples,n_features,class names...; each row holds the
 * features and an integer label 0..classes-1. Host-only C: a program that reads a data set
 * lists it in its Makefile (OBJS_prog := lb_csv.o). */
#ifndef LB_CSV_H
#define LB_CSV_H
#include "labbook.h"

#define LB_CSV_MAX_CLASSES 1024

typedef struct {
    int n, features, classes;
    float *x;           /* n x features, row-major */
    int *y;             /* n labels, -1 when the file has none (labels_optional) */
    char **class_names; /* classes names from the header */
} lb_dataset;

/* Read a CSV into d; labels_optional lets rows without a label through (their y is -1).
 * Returns 0, or -1 with a one-line reason naming the file and line in err: a missing file, a
 * folder, a bad header, a short or long row, a field that is not a finite number (NaN and
 * Inf are refused), a label out of range, more or fewer rows than the header says. */
int lb_load_csv(const char *path, lb_dataset *d, int labels_optional, char *err, size_t err_len);
void lb_free_dataset(lb_dataset *d);

#endif
