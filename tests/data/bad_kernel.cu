extern "C" __global__ void mandelbrot_kernel(int *iters) { iters[0] = ; }
