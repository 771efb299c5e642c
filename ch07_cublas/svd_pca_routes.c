/* svd_pca_routes.c - the three SVD routes and the checks' measurements (see svd_pca_routes.h).
 *
 *   gesvd   Householder bidiagonalisation, then QR iteration on the bidiagonal (LAPACK's
 *           classic, the book's cusolverDnSgesvd); jobu = jobvt = 'S': the first n columns of
 *           U and all of V^T, "economy size"
 *   gesvdj  one-sided Jacobi: rotate pairs of columns until all are orthogonal (the method the
 *           CPU reference uses too), blocked for the GPU; converges to a tolerance within a
 *           number of sweeps, both settable
 *   syevd   the eigen route: G = B^T B (cublasSsyrk, n x n), G = V diag(lambda) V^T
 *           (cusolverDnSsyevd, divide and conquer), then S = sqrt(lambda), U = B V S^-1. Fast
 *           when n is small, but forming B^T B squares the condition number: a singular value
 *           sigma is only resolved down to about sqrt(eps) sigma_max, and U loses orthogonality
 *           like eps (sigma_max / sigma)^2
 */
#include "svd_pca_routes.h"

#include <math.h>

size_t svd_job_bytes(int M, int N)
{
    size_t m = (size_t)(M > N ? M : N), n = (size_t)(M > N ? N : M);
    /* B and U (m x n), S, V (n x n); the eigen route adds G (n x n), lambda and 1/S */
    return sizeof(float) * (2 * m * n + n + n * n) + sizeof(float) * (n * n + 2 * n) + sizeof(int);
}

static void *device_alloc(size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

void svd_job_setup(svd_job *j)
{
    j->b_is_a_t = j->N >= j->M;
    j->m = j->b_is_a_t ? j->N : j->M;
    j->n = j->b_is_a_t ? j->M : j->N;
    size_t m = (size_t)j->m, n = (size_t)j->n;
    j->d_b = device_alloc(sizeof(float) * m * n);
    j->d_u = device_alloc(sizeof(float) * m * n);
    j->d_s = device_alloc(sizeof(float) * n);
    j->d_v = device_alloc(sizeof(float) * n * n);
    j->d_info = device_alloc(sizeof(int));
    j->v_is_vt = j->route == ROUTE_GESVD;
    j->d_gram = j->d_eig = j->d_inv_s = NULL;
    j->gesvdj = NULL;
    j->work_bytes = 0;
    switch (j->route) {
    case ROUTE_GESVD: CUSOLVER_CHECK(cusolverDnSgesvd_bufferSize(j->solver, j->m, j->n, &j->lwork)); break;
    case ROUTE_GESVDJ:
        CUSOLVER_CHECK(cusolverDnCreateGesvdjInfo(&j->gesvdj));
        CUSOLVER_CHECK(cusolverDnXgesvdjSetMaxSweeps(j->gesvdj, j->max_sweeps));
        CUSOLVER_CHECK(cusolverDnSgesvdj_bufferSize(j->solver, CUSOLVER_EIG_MODE_VECTOR, 1, j->m, j->n, j->d_b, j->m,
                                                    j->d_s, j->d_u, j->m, j->d_v, j->n, &j->lwork, j->gesvdj));
        break;
    default:
        j->d_gram = device_alloc(sizeof(float) * n * n);
        j->d_eig = device_alloc(sizeof(float) * n);
        j->d_inv_s = device_alloc(sizeof(float) * n);
        j->work_bytes = sizeof(float) * (n * n + 2 * n);
        CUSOLVER_CHECK(cusolverDnSsyevd_bufferSize(j->solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, j->n,
                                                   j->d_gram, j->n, j->d_eig, &j->lwork));
    }
    j->d_work = device_alloc(sizeof(float) * (size_t)j->lwork);
    /* zeroed once, outside the timing: on a 150 x 4 matrix (iris) compute-sanitizer's initcheck
     * saw gesvd's QR kernel (geqr2) read workspace words nothing had written yet (one more
     * report, from its ormqr kernel, remains: NOTES.md) */
    CUDA_CHECK(cudaMemset(j->d_work, 0, sizeof(float) * (size_t)j->lwork));
    j->work_bytes += sizeof(float) * (size_t)j->lwork;
}

void svd_job_free(svd_job *j)
{
    float *bufs[] = {j->d_b, j->d_u, j->d_s, j->d_v, j->d_work, j->d_gram, j->d_eig, j->d_inv_s};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) CUDA_CHECK(cudaFree(bufs[i]));
    CUDA_CHECK(cudaFree(j->d_info));
    if (j->gesvdj) CUSOLVER_CHECK(cusolverDnDestroyGesvdjInfo(j->gesvdj));
}

/* B into d_b: A's buffer as it is when B = A^T; else A transposed into column-major order
 * (geam computes C = alpha op(A) + beta B; with beta = 0 it only transposes, and cuBLAS allows
 * the unread B to be C itself) */
static cudaError_t make_b(svd_job *j)
{
    size_t bytes = sizeof(float) * (size_t)j->m * j->n;
    if (j->b_is_a_t) return cudaMemcpyAsync(j->d_b, j->d_a, bytes, cudaMemcpyDeviceToDevice, 0);
    const float one = 1.0f, zero = 0.0f;
    /* A row-major (M,N) is, column-major, A^T (N,M) with leading dimension N: op = T gives A */
    CUBLAS_CHECK(cublasSgeam(j->blas, CUBLAS_OP_T, CUBLAS_OP_N, j->m, j->n, &one, j->d_a, j->N, &zero, j->d_b, j->m,
                             j->d_b, j->m));
    return cudaGetLastError();
}

cudaError_t svd_run(void *job)
{
    svd_job *j = (svd_job *)job;
    cudaError_t err = make_b(j);
    if (err != cudaSuccess) return err;
    int m = j->m, n = j->n;
    switch (j->route) {
    case ROUTE_GESVD:
        CUSOLVER_CHECK(cusolverDnSgesvd(j->solver, 'S', 'S', m, n, j->d_b, m, j->d_s, j->d_u, m, j->d_v, n, j->d_work,
                                        j->lwork, NULL, j->d_info));
        break;
    case ROUTE_GESVDJ:
        CUSOLVER_CHECK(cusolverDnSgesvdj(j->solver, CUSOLVER_EIG_MODE_VECTOR, 1, m, n, j->d_b, m, j->d_s, j->d_u, m,
                                         j->d_v, n, j->d_work, j->lwork, j->d_info, j->gesvdj));
        break;
    default: {
        const float one = 1.0f, zero = 0.0f;
        /* G = B^T B, lower triangle (syrk writes one triangle; syevd reads the same one) */
        CUBLAS_CHECK(
            cublasSsyrk(j->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n, m, &one, j->d_b, m, &zero, j->d_gram, n));
        CUSOLVER_CHECK(cusolverDnSsyevd(j->solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, j->d_gram, n,
                                        j->d_eig, j->d_work, j->lwork, j->d_info));
        err = svd_pca_eig_to_svd_launch(j->d_eig, j->d_gram, n, j->d_s, j->d_v, j->d_inv_s);
        if (err != cudaSuccess) return err;
        /* U = B V, then each column divided by its singular value */
        CUBLAS_CHECK(
            cublasSgemm(j->blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, n, &one, j->d_b, m, j->d_v, n, &zero, j->d_u, m));
        CUBLAS_CHECK(cublasSdgmm(j->blas, CUBLAS_SIDE_RIGHT, m, n, j->d_u, m, j->d_inv_s, 1, j->d_u, m));
    }
    }
    return cudaGetLastError();
}

int svd_failed(const svd_job *j, char *why, size_t len)
{
    int info = 0;
    CUDA_CHECK(cudaMemcpy(&info, j->d_info, sizeof info, cudaMemcpyDeviceToHost));
    if (info < 0) lb_die(LB_EXIT_CUDA, "svd_pca: the solver rejected its argument %d (a bug in svd_pca)", -info);
    if (info == 0) return 0;
    switch (j->route) {
    case ROUTE_GESVD:
        snprintf(why, len, "gesvd did not converge: %d superdiagonals of the bidiagonal form are left (info = %d)",
                 info, info);
        break;
    case ROUTE_GESVDJ: {
        double resid = 0;
        int sweeps = 0;
        CUSOLVER_CHECK(cusolverDnXgesvdjGetResidual(j->solver, j->gesvdj, &resid));
        CUSOLVER_CHECK(cusolverDnXgesvdjGetSweeps(j->solver, j->gesvdj, &sweeps));
        snprintf(why, len,
                 "gesvdj did not converge in %d sweeps (info = %d, residual %.2e); raise --sweeps (default 100)",
                 sweeps, info, resid);
        break;
    }
    default:
        snprintf(why, len, "syevd did not converge: %d off-diagonal elements did not reach zero (info = %d)", info,
                 info);
    }
    return 1;
}

void svd_download_s(const svd_job *j, float *h_s)
{
    CUDA_CHECK(cudaMemcpy(h_s, j->d_s, sizeof(float) * (size_t)j->n, cudaMemcpyDeviceToHost));
}

static double *to_double(const float *d_x, size_t count)
{
    double *d_y = device_alloc(sizeof(double) * count);
    CUDA_CHECK(svd_pca_to_double_launch(d_x, d_y, count));
    return d_y;
}

/* Largest |entry| of X^T X - I for X (rows x cols, column-major) in double */
static double max_off_identity(cublasHandle_t blas, const double *d_x, int rows, int cols)
{
    if (cols == 0) return 0.0;
    double *d_g = device_alloc(sizeof(double) * (size_t)cols * cols), one = 1.0, zero = 0.0, worst = 0.0;
    CUBLAS_CHECK(
        cublasDgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, cols, cols, rows, &one, d_x, rows, d_x, rows, &zero, d_g, cols));
    CUDA_CHECK(svd_pca_sub_identity_launch(d_g, cols));
    int at = 0; /* 1-based, as in Fortran */
    CUBLAS_CHECK(cublasIdamax(blas, cols * cols, d_g, 1, &at));
    CUDA_CHECK(cudaMemcpy(&worst, d_g + at - 1, sizeof worst, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d_g));
    return fabs(worst);
}

svd_quality svd_measure(svd_job *j, int u_cols)
{
    svd_quality q = {0, 0, 0};
    int m = j->m, n = j->n;
    size_t mn = (size_t)m * n;
    CUDA_CHECK(make_b(j)); /* the solvers overwrote d_b: B again, from A */
    double *d_b = to_double(j->d_b, mn), *d_u = to_double(j->d_u, mn);
    double *d_s = to_double(j->d_s, (size_t)n), *d_v = to_double(j->d_v, (size_t)n * n);
    q.orth_u = max_off_identity(j->blas, d_u, m, u_cols);
    /* V is square: V^T V = I exactly when V V^T = I, so gesvd's V^T is checked the same way */
    q.orth_v = max_off_identity(j->blas, d_v, n, n);
    double norm_b = 0, norm_r = 0, minus_one = -1.0, one = 1.0;
    CUBLAS_CHECK(cublasDnrm2(j->blas, (int)mn, d_b, 1, &norm_b));
    /* R = B - (U S) V^T: scale U's columns by S, then one GEMM subtracts the product from B */
    CUBLAS_CHECK(cublasDdgmm(j->blas, CUBLAS_SIDE_RIGHT, m, n, d_u, m, d_s, 1, d_u, m));
    CUBLAS_CHECK(cublasDgemm(j->blas, CUBLAS_OP_N, j->v_is_vt ? CUBLAS_OP_N : CUBLAS_OP_T, m, n, n, &minus_one, d_u, m,
                             d_v, n, &one, d_b, m));
    CUBLAS_CHECK(cublasDnrm2(j->blas, (int)mn, d_b, 1, &norm_r));
    q.resid = norm_b > 0 ? norm_r / norm_b : norm_r;
    double *bufs[] = {d_b, d_u, d_s, d_v};
    for (int i = 0; i < 4; i++) CUDA_CHECK(cudaFree(bufs[i]));
    return q;
}
