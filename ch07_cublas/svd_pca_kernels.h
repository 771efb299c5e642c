/* svd_pca_kernels.h - launchers for svd_pca_kernels.cu (callable from C). The SVD itself is
 * cuSOLVER's; these small kernels turn the eigen route's output into an SVD and help the
 * checks, which compute in double. */
#ifndef SVD_PCA_KERNELS_H
#define SVD_PCA_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* The routes in svd_pca.c's version table: gesvd, gesvdj, syrk + syevd. */
#define SVD_PCA_VERSIONS 3

/* The eigen route's last step. syevd leaves the Gram matrix's eigenvalues w[0..n) ascending and
 * its eigenvectors in the columns of z (n x n, column-major). Write them as an SVD, largest
 * first: s[j] = sqrt(max(w[n-1-j], 0)), column j of v = column n-1-j of z, and inv_s[j] = 1/s[j]
 * (0 where s[j] is 0), for U = B V diag(inv_s). */
cudaError_t svd_pca_eig_to_svd_launch(const float *d_w, const float *d_z, int n, float *d_s, float *d_v,
                                      float *d_inv_s);

/* y[i] = (double)x[i]: the checks multiply the factors back together in double. */
cudaError_t svd_pca_to_double_launch(const float *d_x, double *d_y, size_t n);

/* g -= I for an n x n matrix: G = U^T U becomes U^T U - I, whose largest entry the check reads. */
cudaError_t svd_pca_sub_identity_launch(double *d_g, int n);

#ifdef __cplusplus
}
#endif
#endif
