/* mandelbrot_kernels.h - launchers for mandelbrot_kernels.cu (callable from C). */
#ifndef MANDELBROT_KERNELS_H
#define MANDELBROT_KERNELS_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* The image: width x height pixels; pixel (x, y) is the point
 *   c = (x0 + (x + 0.5) * dx,  y0 - (y + 0.5) * dy)      (y = 0 is the top row)
 * computed with fmaf exactly as mandelbrot_cpu does. counts[y * width + x] receives the
 * number of iterations z = z*z + c before |z| > 2, or max_iter if it never escaped. */
typedef struct {
    int width, height, max_iter;
    float x0, dx, y0, dy;
} mandel_view;

/* Versions 0 (the CPU, in mandelbrot.c) .. 3; mandelbrot.c's version table has a row for each. */
#define MANDELBROT_VERSIONS 4

/* Launch kernel `version` (1..MANDELBROT_VERSIONS-1); returns the launch error. */
cudaError_t mandelbrot_launch(int version, mandel_view view, int *d_counts);

#ifdef __cplusplus
}
#endif
#endif
