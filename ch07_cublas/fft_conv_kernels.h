/* fft_conv_kernels.h - launchers for fft_conv_kernels.cu (callable from C). */
#ifndef FFT_CONV_KERNELS_H
#define FFT_CONV_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#include <cufft.h>
#ifdef __cplusplus
extern "C" {
#endif

#define FFT_CONV_TILE 16 /* the direct kernel's output tile: FFT_CONV_TILE x FFT_CONV_TILE pixels */
#define DIRECT_MAX_R 96  /* its halo must fit in shared memory: (16 + 2r)^2 floats <= 227 KB */

/* spec[i] *= filter[i] * scale for n complex values: the convolution theorem's product,
 * with cuFFT's missing 1/(PH*PW) folded in as `scale` */
cudaError_t pointwise_mul_launch(cufftComplex *d_spec, const cufftComplex *d_filter, size_t n, float scale,
                                 cudaStream_t stream);

/* out(y,x) = sum over |dy|,|dx| <= r of img(y+dy, x+dx) w[(dy+r)(2r+1) + dx+r], zero outside the
 * W x H image; shared-memory tiles with a halo of r */
cudaError_t direct_conv_launch(const float *d_img, float *d_out, int W, int H, const float *d_w, int r,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
