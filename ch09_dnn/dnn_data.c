/* dnn_data.c - the train/test split and the z-score for ch09's network (see dnn_data.h; the
 * CSV itself is read by common/lb_csv.c). Host-only C. */
#define _POSIX_C_SOURCE 200809L
#include "dnn_data.h"

#include <math.h>
#include <string.h>

/* A seeded Fisher-Yates shuffle of 0..n-1. */
void shuffle(int *idx, int n, lb_rng *rng)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(lb_rng_next(rng) % (uint64_t)(i + 1));
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* rows idx[0..n) of src into a new set */
dataset subset(const dataset *src, const int *idx, int n)
{
    dataset d = {n,
                 src->features,
                 src->classes,
                 malloc(sizeof(float) * (size_t)(n ? n : 1) * src->features),
                 malloc(sizeof(int) * (size_t)(n ? n : 1)),
                 NULL};
    if (!d.x || !d.y) lb_die(LB_EXIT_USAGE, "out of host memory");
    for (int i = 0; i < n; i++) {
        memcpy(d.x + (size_t)i * src->features, src->x + (size_t)idx[i] * src->features, sizeof(float) * src->features);
        d.y[i] = src->y[idx[i]];
    }
    return d;
}

/* z-score: mean and standard deviation of each feature over the training set (sd 0 -> 1) */
void feature_stats(const dataset *d, float *mean, float *sd)
{
    for (int j = 0; j < d->features; j++) {
        double s = 0.0, s2 = 0.0;
        for (int i = 0; i < d->n; i++) {
            double v = d->x[(size_t)i * d->features + j];
            s += v;
            s2 += v * v;
        }
        double m = s / d->n, var = s2 / d->n - m * m;
        mean[j] = (float)m;
        sd[j] = var > 1e-12 ? (float)sqrt(var) : 1.0f;
    }
}

void normalize(dataset *d, const float *mean, const float *sd)
{
    for (int i = 0; i < d->n; i++)
        for (int j = 0; j < d->features; j++) {
            float *v = &d->x[(size_t)i * d->features + j];
            *v = (*v - mean[j]) / sd[j];
        }
}
