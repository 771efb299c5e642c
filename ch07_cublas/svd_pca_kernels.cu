/* svd_pca_kernels.cu - the few kernels svd_pca needs beside cuSOLVER and cuBLAS (see
 * svd_pca_kernels.h): reordering the eigen route's output, float to double, U^T U - I. */
#include "svd_pca_kernels.h"

/* One thread per element of v (n x n, column-major): column j comes from eigenvector n-1-j, so
 * that the singular values come out largest first like gesvd's. Row 0's thread of each column
 * also writes that column's singular value and its inverse. */
__global__ void eig_to_svd_kernel(const float *w, const float *z, int n, float *s, float *v, float *inv_s)
{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)n * n) return;
    int i = (int)(idx % n), j = (int)(idx / n), from = n - 1 - j;
    v[idx] = z[(long long)from * n + i];
    if (i == 0) {
        /* rounding can leave an eigenvalue of a rank-deficient Gram matrix slightly negative */
        float sigma = sqrtf(fmaxf(w[from], 0.0f));
        s[j] = sigma;
        inv_s[j] = sigma > 0.0f ? 1.0f / sigma : 0.0f;
    }
}

__global__ void to_double_kernel(const float *x, double *y, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = x[i];
}

__global__ void sub_identity_kernel(double *g, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) g[(size_t)i * n + i] -= 1.0;
}

extern "C" cudaError_t svd_pca_eig_to_svd_launch(const float *d_w, const float *d_z, int n, float *d_s, float *d_v,
                                                 float *d_inv_s)
{
    long long total = (long long)n * n;
    eig_to_svd_kernel<<<(unsigned)((total + 255) / 256), 256>>>(d_w, d_z, n, d_s, d_v, d_inv_s);
    return cudaGetLastError();
}

extern "C" cudaError_t svd_pca_to_double_launch(const float *d_x, double *d_y, size_t n)
{
    size_t blocks = (n + 255) / 256;
    to_double_kernel<<<(unsigned)(blocks < 65535 ? (blocks ? blocks : 1) : 65535), 256>>>(d_x, d_y, n);
    return cudaGetLastError();
}

extern "C" cudaError_t svd_pca_sub_identity_launch(double *d_g, int n)
{
    sub_identity_kernel<<<(n + 255) / 256, 256>>>(d_g, n);
    return cudaGetLastError();
}
