/* dynamic_parallelism_kernels.h - launchers for dynamic_parallelism_kernels.cu (callable from C).
 * Built with -rdc=true and linked with -lcudadevrt: kernels launch kernels. */
#ifndef DYNAMIC_PARALLELISM_KERNELS_H
#define DYNAMIC_PARALLELISM_KERNELS_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

#define HELLO_THREADS 4 /* threads at each level of the recursive hello */
#define QS_SMALL 32     /* partitions this small are insertion-sorted */

/* Level 1 launches level 2 from the device, and so on to max_depth; every thread adds 1 to
 * *d_count (expected: HELLO_THREADS * max_depth) and, if print, says hello. */
cudaError_t hello_launch(int max_depth, int print, unsigned int *d_count);

/* Sort n ints in place: a one-thread kernel partitions around a median-of-three pivot and
 * launches two children for the halves; partitions of QS_SMALL or fewer are insertion-sorted,
 * and at max_depth a partition is heap-sorted by its thread (no more launches). *d_error is
 * set if a child launch failed (the parent then heap-sorts that part itself). */
cudaError_t quicksort_launch(int *d_data, int n, int max_depth, int *d_error);

/* dwell[y * w + x] = Mandelbrot iterations (as in compiled_code) for a w x h image of the
 * plane from (x_min, y_min) with pixel size step. mariani = 0: one thread per pixel;
 * mariani = 1: Mariani-Silver, a block computes its square's border and, if every border
 * pixel has the same dwell, fills the square; otherwise it launches a child grid for the
 * four quarters, down to max_depth or squares of 16 pixels. */
cudaError_t mandel_dp_launch(int mariani, int *d_dwell, int w, int h, float x_min, float y_min, float step,
                             int max_iter, int max_depth);

#ifdef __cplusplus
}
#endif
#endif
