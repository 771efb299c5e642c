/* lb_csv.c - the data sets' CSV layout (see lb_csv.h). Host-only C. */
#define _POSIX_C_SOURCE 200809L
#include "lb_csv.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

void lb_free_dataset(lb_dataset *d)
{
    if (d->class_names)
        for (int c = 0; c < d->classes; c++) free(d->class_names[c]);
    free(d->class_names);
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof *d);
}

/* Split a line at commas in place; returns the number of fields (at most max). */
static int split_fields(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n < max) fields[n] = p;
        n++;
        char *comma = strchr(p, ',');
        if (!comma) break;
        *comma = 0;
        p = comma + 1;
    }
    return n;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r' || s[len - 1] == '\n')) s[--len] = 0;
    return s;
}

static int parse_float(const char *s, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) return -1;
    if (fabs(v) > FLT_MAX) return -2; /* 1e40: a number, but a float would hold inf */
    *out = (float)v;
    return 0;
}

/* A header count: a whole number ("150", or "150.0" as some writers put it) */
static int parse_count(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v != floor(v)) return -1;
    *out = v;
    return 0;
}

/* Read "n_samples,n_features,class names..." then n_samples rows of n_features numbers and an
 * integer label in 0..classes-1. labels_optional: rows may also end without the label (y = -1).
 * Returns 0, or -1 with "file:line: reason" in err. */
int lb_load_csv(const char *path, lb_dataset *d, int labels_optional, char *err, size_t err_len)
{
    memset(d, 0, sizeof *d);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st; /* a folder opens for reading on Linux, and then reads as nothing */
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, err_len, "%s: is a folder, not a CSV file", path);
        fclose(f);
        return -1;
    }
    char *line = NULL, **fields = NULL;
    size_t cap = 0;
    int lineno = 1, rc = -1;
    if (getline(&line, &cap, f) < 0) {
        snprintf(err, err_len, "%s: empty file (expected a header n_samples,n_features,class names...)", path);
        goto done;
    }
    {
        char *hdr[LB_CSV_MAX_CLASSES + 2];
        int nh = split_fields(line, hdr, LB_CSV_MAX_CLASSES + 2);
        double n_f, feat_f; /* counts in double: a float would round 16,777,217 rows to 16,777,216 */
        if (nh < 3 || nh > LB_CSV_MAX_CLASSES + 2 || parse_count(trim(hdr[0]), &n_f) ||
            parse_count(trim(hdr[1]), &feat_f) || n_f < 1 || feat_f < 1 || n_f > 1e8 || feat_f > 1e6) {
            snprintf(err, err_len,
                     "%s:1: bad header (expected n_samples,n_features,class names..., with at least 1 sample, "
                     "1 feature and 2 classes)",
                     path);
            goto done;
        }
        if (nh == 3) {
            snprintf(err, err_len, "%s:1: one class ('%s'): a classifier needs at least 2", path, trim(hdr[2]));
            goto done;
        }
        d->n = (int)n_f, d->features = (int)feat_f, d->classes = nh - 2;
        d->class_names = calloc((size_t)d->classes, sizeof(char *));
        for (int c = 0; c < d->classes; c++) {
            char *name = trim(hdr[c + 2]);
            if (!*name) {
                snprintf(err, err_len, "%s:1: bad header: class name %d is empty", path, c + 1);
                goto done;
            }
            d->class_names[c] = strdup(name);
        }
    }
    d->x = malloc(sizeof(float) * (size_t)d->n * d->features);
    d->y = malloc(sizeof(int) * (size_t)d->n);
    fields = malloc(sizeof(char *) * ((size_t)d->features + 2));
    if (!d->x || !d->y || !fields) {
        snprintf(err, err_len, "%s: out of memory for %d x %d values", path, d->n, d->features);
        goto done;
    }
    for (int r = 0; r < d->n; r++) {
        lineno++;
        if (getline(&line, &cap, f) < 0) {
            snprintf(err, err_len, "%s:%d: the header promises %d samples, the file ends after %d", path, lineno, d->n,
                     r);
            goto done;
        }
        int nf = split_fields(line, fields, d->features + 2), bad;
        int labelled = nf == d->features + 1;
        if (!labelled && !(labels_optional && nf == d->features)) {
            snprintf(err, err_len, "%s:%d: %d fields, expected %d features and a label", path, lineno, nf, d->features);
            goto done;
        }
        for (int j = 0; j < d->features; j++)
            if ((bad = parse_float(trim(fields[j]), &d->x[(size_t)r * d->features + j]))) {
                snprintf(err, err_len, "%s:%d: field %d ('%.40s') %s", path, lineno, j + 1, trim(fields[j]),
                         bad == -2 ? "is too large for a float (at most 3.4e38)" : "is not a number");
                goto done;
            }
        d->y[r] = -1;
        if (labelled) {
            float lab;
            char *s = trim(fields[d->features]);
            if (parse_float(s, &lab) || lab != floorf(lab) || lab < 0 || lab >= d->classes) {
                snprintf(err, err_len, "%s:%d: label '%s' is not a class number 0..%d", path, lineno, s,
                         d->classes - 1);
                goto done;
            }
            d->y[r] = (int)lab;
        }
    }
    /* nothing but blank lines may follow */
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        if (*trim(line)) {
            snprintf(err, err_len, "%s:%d: more rows than the header's %d samples", path, lineno, d->n);
            goto done;
        }
    }
    rc = 0;
done:
    free(line);
    free(fields);
    fclose(f);
    if (rc) lb_free_dataset(d);
    return rc;
}
