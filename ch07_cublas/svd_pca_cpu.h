/* svd_pca_cpu.h - svd_pca's CPU side that needs no GPU: the double-precision references (a
 * one-sided Jacobi SVD, a Jacobi eigen solver for the covariance route of PCA), the count of
 * components that keep a share of the variance, and the scatter picture. Host-only C:
 * tests/test_svd_pca links svd_pca_cpu.o by itself. */
#ifndef SVD_PCA_CPU_H
#define SVD_PCA_CPU_H
#include "labbook.h"

/* Singular values of the row-major M x N matrix a, largest first, into s[0..min(M,N)), by
 * one-sided Jacobi in double (rotate pairs of columns until every pair is orthogonal; the
 * column norms are then the singular values). Returns the sweeps it took, or -1 when 60 sweeps
 * did not converge. Costs about 3 M N min(M,N) flops per sweep: for test sizes only. */
int svd_values_cpu(const float *a, int M, int N, double *s);

/* Eigenvalues of the symmetric n x n matrix g (row-major, destroyed), largest first, into w, by
 * cyclic Jacobi rotations in double. Returns the sweeps, or -1 without convergence. */
int sym_eigenvalues_cpu(double *g, int n, double *w);

/* The covariance route of PCA: the mean of each of the f columns of x (n x f, row-major) and
 * the covariance matrix cov = Xc^T Xc / (n - 1) (f x f, row-major) of the centred data Xc. */
void covariance_cpu(const float *x, int n, int f, double *mean, double *cov);

/* How many leading components (variances var[0..k), largest first, summing to total) keep at
 * least the share frac of the total: the smallest c with var[0] + ... + var[c-1] >= frac total. */
int components_for(const double *var, int k, double total, double frac);

/* A scatter plot as a PNG: point i at (px[i], py[i]), coloured by label[i] (-1: grey), the axes
 * through 0 drawn where they fall inside, a colour key (one square per class, class 0 on the
 * left) along the top. Returns 0, or -1 with errno set. */
int write_scatter_png(const char *path, const float *px, const float *py, const int *label, int n);
/* The name of the colour class c is drawn in (for the printed key). */
const char *scatter_colour_name(int c);

#endif
