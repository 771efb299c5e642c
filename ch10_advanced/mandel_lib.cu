/* mandel_lib.cu - the shared library of compiled_code.c's first path (libmandel.so): the
 * kernel and a plain C function around it, the C twin of calling a compiled library from
 * Python with ctypes. It takes and returns host memory, so the caller needs nothing but dlopen.
 *   build: make (nvcc -shared -Xcompiler -fPIC mandel_lib.cu -o libmandel.so)
 */
#include "mandelbrot_kernel.cu"
#include <stdio.h>

/* Returns 0, or -1 with the CUDA error in err. */
extern "C" int mandel_run(int *host_iters, int width, int height, float x_min, float y_min, float step, int max_iter,
                          char *err, int err_len)
{
    int *d = NULL;
    size_t bytes = sizeof(int) * (size_t)width * height;
    cudaError_t e = cudaMalloc((void **)&d, bytes);
    if (!e) {
        dim3 block(16, 16), grid((width + 15) / 16, (height + 15) / 16);
        mandelbrot_kernel<<<grid, block>>>(d, width, height, x_min, y_min, step, max_iter);
        e = cudaGetLastError();
    }
    if (!e) e = cudaMemcpy(host_iters, d, bytes, cudaMemcpyDeviceToHost);
    if (d) cudaFree(d);
    if (e) {
        snprintf(err, (size_t)err_len, "%s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
        return -1;
    }
    return 0;
}
