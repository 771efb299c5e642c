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

/* ================================================================ the sets of a run */

/* Data: the training file, and the rows to classify (--predict) with the same shape. */
void load_data(const dnn_options *o, dataset *all, dataset *to_predict)
{
    char err[512];
    if (lb_load_csv(o->data_path, all, 0, err, sizeof err))
        lb_die(LB_EXIT_USAGE, "dnn: %s%s", err,
               strstr(err, "cannot open") ? " (run from ch09_dnn, or pass --data FILE)" : "");
    if (!o->predict_path) return;
    if (lb_load_csv(o->predict_path, to_predict, 1, err, sizeof err)) lb_die(LB_EXIT_USAGE, "dnn: %s", err);
    if (to_predict->features != all->features || to_predict->classes != all->classes)
        lb_die(LB_EXIT_USAGE, "dnn: %s has %d features and %d classes, the training data %d and %d", o->predict_path,
               to_predict->features, to_predict->classes, all->features, all->classes);
}

/* Rows idx[0..n) of all into train and validation sets (the last val_frac of them validate). */
static void split_rest(const dnn_options *o, const dataset *all, const int *idx, int n, dataset *train, dataset *val)
{
    int n_val = (int)lround(n * o->val_frac), n_train = n - n_val;
    if (n_train < 1)
        lb_die(LB_EXIT_USAGE, "dnn: %s: no samples left for training with --test-frac %g and --val-frac %g",
               o->data_path, o->test_frac, o->val_frac);
    *train = subset(all, idx, n_train);
    *val = subset(all, idx + n_train, n_val);
}

/* The rows of one run: a seeded shuffle, the last test_frac of it for testing (or, for fold f
 * of --kfold, the f-th K-th), the rest split into training and validation; all three z-scored
 * with the training rows' statistics (or the loaded ones: *mean already set). */
void make_sets(const dnn_options *o, const dataset *all, const int *order, int fold, dataset *train,
                      dataset *val, dataset *test, float **mean, float **sd)
{
    int n = all->n, *rest = lb_host_alloc(sizeof(int) * n, "indices"),
        *held = lb_host_alloc(sizeof(int) * n, "indices");
    int n_rest = 0, n_test = 0;
    if (o->kfold) { /* fold f: rows [f n / K, (f + 1) n / K) of the shuffled order */
        int lo = (int)((long long)fold * n / o->kfold), hi = (int)((long long)(fold + 1) * n / o->kfold);
        for (int i = 0; i < n; i++) {
            if (i >= lo && i < hi)
                held[n_test++] = order[i];
            else
                rest[n_rest++] = order[i];
        }
    } else {
        n_test = (int)lround(n * o->test_frac), n_rest = n - n_test;
        memcpy(rest, order, sizeof(int) * n_rest);
        memcpy(held, order + n_rest, sizeof(int) * n_test);
    }
    if (n_rest < 1)
        lb_die(LB_EXIT_USAGE, "dnn: %s: no samples left for training with --test-frac %g", o->data_path, o->test_frac);
    split_rest(o, all, rest, n_rest, train, val);
    *test = subset(all, held, n_test);
    if (!*mean) {
        *mean = lb_host_alloc(sizeof(float) * all->features, "means");
        *sd = lb_host_alloc(sizeof(float) * all->features, "deviations");
        feature_stats(train, *mean, *sd);
    }
    normalize(train, *mean, *sd);
    normalize(val, *mean, *sd);
    normalize(test, *mean, *sd);
    free(rest);
    free(held);
}
