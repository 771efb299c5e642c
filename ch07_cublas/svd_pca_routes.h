/* svd_pca_routes.h - the GPU work of svd_pca: three ways to the SVD of a row-major matrix with
 * cuSOLVER and cuBLAS, and the measurements its checks read (in double, on the GPU).
 *
 * Row-major and column-major: cuSOLVER, like cuBLAS and LAPACK, reads matrices column by
 * column. Our A is (M,N) row-major; the same bytes read column-major are A^T, (N,M). gesvd
 * also wants at least as many rows as columns. So the solver factors B, (m,n) column-major
 * with m >= n:
 *   N >= M (wide A, the book's 1000 x 5000): B = A^T, the buffer as it is, no copy;
 *           A = B^T = V_B S U_B^T, so A's U is B's V and A's V is B's U.
 *   N <  M (tall A): B = A, transposed into column-major order once (cublasSgeam);
 *           A's U, S, V are B's.
 * Everything below works on B; svd_pca.c maps the factors back to A where it needs them (PCA).
 */
#ifndef SVD_PCA_ROUTES_H
#define SVD_PCA_ROUTES_H
#include <cublas_v2.h>
#include <cusolverDn.h>
#include "labbook.h"
#include "svd_pca_kernels.h"

enum { ROUTE_GESVD, ROUTE_GESVDJ, ROUTE_SYEVD };

typedef struct {
    cusolverDnHandle_t solver;
    cublasHandle_t blas;
    int route;
    int M, N;         /* A, (M,N) row-major */
    const float *d_a; /* A itself, never written */
    int m, n;         /* B, (m,n) column-major, m >= n */
    int b_is_a_t;     /* 1: B = A^T (no copy), 0: B = A (transposed into d_b) */
    float *d_b;       /* B's working copy: gesvd and gesvdj overwrite it */
    float *d_u, *d_s; /* U (m,n), S (n), largest first */
    float *d_v;       /* V (n,n); V^T for gesvd (v_is_vt) */
    int v_is_vt;
    float *d_work; /* the solver's workspace, lwork floats */
    int lwork;
    int *d_info;         /* the solver's verdict: 0 success, > 0 no convergence, < 0 bad argument */
    gesvdjInfo_t gesvdj; /* gesvdj's tolerance and sweep limit */
    int max_sweeps;
    float *d_gram, *d_eig, *d_inv_s; /* the eigen route: B^T B, its eigenvalues, 1/S */
    size_t work_bytes;               /* device memory the route needs beyond A, B, U, S, V */
} svd_job;

/* Fill in B's shape from M and N, allocate the route's buffers and ask its workspace size.
 * solver, blas, route, M, N, d_a and (for gesvdj) max_sweeps are set by the caller. */
void svd_job_setup(svd_job *j);
void svd_job_free(svd_job *j);
/* Device memory svd_job_setup will ask for, for the size check before anything is allocated:
 * B, U, S, V and the largest of the three routes' extras (without the workspace, asked later). */
size_t svd_job_bytes(int M, int N);

/* One SVD: B from A, then the route (lb_work_fn, for lb_time_ms). The outputs are in d_u,
 * d_s, d_v; the solver's info in d_info. */
cudaError_t svd_run(void *job);

/* Read the solver's info. 0: success. Otherwise a one-line reason in why and returns 1 (the
 * factorisation failed: no convergence), or exits 3 (info < 0: a bad argument, a bug here). */
int svd_failed(const svd_job *j, char *why, size_t len);

/* The singular values, copied to h_s[0..n). */
void svd_download_s(const svd_job *j, float *h_s);

/* The checks' numbers, computed in double from the float factors:
 *   resid   ||B - U S V^T||_F / ||B||_F (||B - U S V^T||_F when B = 0)
 *   orth_u  largest |entry| of U^T U - I over U's first u_cols columns (0 when u_cols = 0)
 *   orth_v  largest |entry| of V^T V - I */
typedef struct {
    double resid, orth_u, orth_v;
} svd_quality;
svd_quality svd_measure(svd_job *j, int u_cols);

#endif
