/* mandelbrot_kernel.cu - one Mandelbrot kernel, reached three ways by compiled_code.c:
 *   built into a shared library with a C launcher (mandel_lib.cu, loaded with dlopen),
 *   built into a fatbin that the driver API loads (cuModuleLoad), and
 *   compiled at run time from this very file by NVRTC (edit it and rerun: no make needed).
 * So it must compile alone: no #include, and extern "C" so that its name is not mangled
 * (cuModuleGetFunction looks it up as "mandelbrot_kernel").
 *
 * iters[py * width + px] = the iterations of z <- z^2 + c before |z| > 2 (at most max_iter),
 * c = (x_min + px * step, y_min + py * step). The arithmetic uses __fmul_rn / __fadd_rn /
 * __fsub_rn: each rounds once and is never fused into an FMA, so every compiler (nvcc, NVRTC)
 * and the CPU reference produce the same iterations, bit for bit.
 */
/* the iterations for pixel (px, py); dynamic_parallelism_kernels.cu includes this file for it */
__device__ __forceinline__ int mandel_dwell(int px, int py, float x_min, float y_min, float step, int max_iter)
{
    float cr = __fadd_rn(x_min, __fmul_rn((float)px, step)), ci = __fadd_rn(y_min, __fmul_rn((float)py, step));
    float zr = 0.0f, zi = 0.0f;
    int it = 0;
    while (it < max_iter) {
        float zr2 = __fmul_rn(zr, zr), zi2 = __fmul_rn(zi, zi);
        if (__fadd_rn(zr2, zi2) > 4.0f) break;
        float next_r = __fadd_rn(__fsub_rn(zr2, zi2), cr);
        zi = __fadd_rn(__fmul_rn(__fmul_rn(2.0f, zr), zi), ci);
        zr = next_r;
        it++;
    }
    return it;
}

extern "C" __global__ void mandelbrot_kernel(int *iters, int width, int height, float x_min, float y_min, float step,
                                             int max_iter)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x, py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px < width && py < height)
        iters[(long long)py * width + px] = mandel_dwell(px, py, x_min, y_min, step, max_iter);
}
