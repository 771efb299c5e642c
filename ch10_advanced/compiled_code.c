/* compiled_code.c - the book's chapter 10 in C: one Mandelbrot kernel (mandelbrot_kernel.cu)
 * reached four ways, each checked to give the CPU's image exactly:
 *   1  a shared library built by nvcc (libmandel.so), loaded with dlopen/dlsym: the C twin of
 *      ctypes.CDLL (mandel_ctypes.py does it from Python, the book's way)
 *   2  the driver API loading a module built by make (mandelbrot_kernel.fatbin): cuModuleLoad,
 *      cuModuleGetFunction, cuLaunchKernel: the twin of PyCUDA's module loading. The context is
 *      the runtime's primary context, already current after lb_gpu_init.
 *   3  NVRTC compiling the kernel's source at run time (the twin of PyCUDA's SourceModule), then
 *      the driver loading the PTX; --source FILE: edit a kernel and rerun without make
 *   4  the driver API from start to end, not one runtime call (the book's cuda_driver and
 *      mandelbrot_driver): cuInit, a context of its own, the PTX that make builds
 *      (mandelbrot_kernel.ptx, compiled for this GPU by the driver when loaded), memory, launch,
 *      copies, and everything destroyed again
 *   build: make ch10      run: ./compiled_code [--size WxH] [--max-iter M] [--source FILE]
 *
 * It also times loading the kernel each way (median of 3): machine code from the fatbin, PTX
 * compiled by the driver (JIT), and NVRTC's compile plus that JIT. The driver keeps the code it
 * compiles in a cache on disk (~/.nv/ComputeCache), which would hide the JIT's cost from every
 * run after the first; this program turns the cache off for itself (CUDA_CACHE_DISABLE=1) unless
 * the environment already sets CUDA_CACHE_DISABLE.
 *
 * The driver API's functions are looked up in libcuda at run time (common/lb_driver.h) instead
 * of linking it: libcuda comes with the driver, so a program linked to it would not even start
 * on a machine without one, where this one says so and exits 77.
 */
#define _POSIX_C_SOURCE 200809L
#include <nvrtc.h>
#include "lb_driver.h"
#include "labbook.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h> /* access */

#define X_MIN -2.0f
#define Y_MIN -1.25f
#define SPAN 2.5f /* the width in the complex plane */

/* ---------------------------------------------------------------- CPU reference */

/* the kernel's arithmetic in plain float (compiled with -ffp-contract=off: no fused multiply-adds) */
static void mandelbrot_cpu(int *iters, int width, int height, float x_min, float y_min, float step, int max_iter)
{
    for (int py = 0; py < height; py++)
        for (int px = 0; px < width; px++) {
            float cr = x_min + (float)px * step, ci = y_min + (float)py * step, zr = 0.0f, zi = 0.0f;
            int it = 0;
            while (it < max_iter) {
                float zr2 = zr * zr, zi2 = zi * zi;
                if (zr2 + zi2 > 4.0f) break;
                float next_r = (zr2 - zi2) + cr;
                zi = (2.0f * zr) * zi + ci;
                zr = next_r;
                it++;
            }
            iters[(size_t)py * width + px] = it;
        }
}

/* ---------------------------------------------------------------- files */

/* fopen for reading a file that must be a file: a folder opens too on Linux, then reads as
 * nothing. NULL with the reason in err. */
static FILE *open_file(const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f)
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
    else if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(err, err_len, "%s: is a folder, not a file", path), fclose(f), f = NULL;
    return f;
}

/* a file's bytes, NUL-terminated; NULL with the reason in err (an empty file is an error) */
static char *read_file(const char *path, size_t *len, char *err, size_t err_len)
{
    FILE *f = open_file(path, err, err_len);
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        char *bigger = realloc(buf, cap *= 2);
        if (!bigger) free(buf);
        buf = bigger;
    }
    fclose(f);
    if (!buf) {
        snprintf(err, err_len, "%s: out of memory", path);
        return NULL;
    }
    if (n == 0) {
        snprintf(err, err_len, "%s: the file is empty", path);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static void require_file(const char *path, const char *what)
{
    char err[512];
    FILE *f = open_file(path, err, sizeof err);
    if (!f) /* run from another folder, the relative paths of the built files miss */
        lb_die(LB_EXIT_USAGE, "compiled_code: %s (%s); %s", err, what,
               access("compiled_code.c", F_OK) ? "run it from ch10_advanced, where make builds it"
                                                : "build it with `make` here");
    fclose(f);
}

/* ---------------------------------------------------------------- path 3: NVRTC */

/* The kernel source to PTX for the architecture this program was built for (PTX also runs on
 * newer GPUs: the driver compiles it for them). On a compile error: the log, and exit 2. */
static char *compile_to_ptx(const char *path, int quiet)
{
    char err[512];
    size_t len;
    char *src = read_file(path, &len, err, sizeof err);
    if (!src) lb_die(LB_EXIT_USAGE, "compiled_code: %s (the kernel source for NVRTC)", err);
    nvrtcResult r;
    char *log, *ptx = lb_nvrtc_ptx(src, path, &r, &log);
    if (!ptx) {
        fprintf(stderr, "%s", log);
        lb_die(LB_EXIT_USAGE, "compiled_code: NVRTC could not compile %s: %s (the log is above)", path,
               nvrtcGetErrorString(r));
    }
    if (!quiet && log[0]) printf("NVRTC log for %s:\n%s", path, log);
    free(log);
    free(src);
    return ptx;
}

/* ---------------------------------------------------------------- the driver API */

/* launch mandelbrot_kernel from a loaded module and wait for it (paths 2-4; all driver calls, in
 * whatever context is current); the arguments go as an array of pointers */
static void launch_from_module(CUmodule mod, CUdeviceptr d_iters, int width, int height, float step, int max_iter)
{
    CUfunction f;
    CU_CHECK(lb_cu.cuModuleGetFunction(&f, mod, "mandelbrot_kernel"));
    float x_min = X_MIN, y_min = Y_MIN;
    void *params[] = {&d_iters, &width, &height, &x_min, &y_min, &step, &max_iter};
    CU_CHECK(lb_cu.cuLaunchKernel(f, (unsigned int)(width + 15) / 16, (unsigned int)(height + 15) / 16, 1, 16, 16, 1, 0,
                                  NULL, params, NULL));
    CU_CHECK(lb_cu.cuCtxSynchronize()); /* a launch error shows here at the latest */
}

/* Path 4: the driver API from start to end (the book's mandelbrot_driver). Nothing here calls
 * the runtime: the context, the memory, the copies and the launch are all the driver's. The
 * image comes back in got; *load_ms is what loading the PTX (the driver's JIT) took. */
static void run_driver_only(const char *ptx_path, int *got, int width, int height, float step, int max_iter,
                            double *load_ms)
{
    size_t bytes = sizeof(int) * (size_t)width * height;
    CU_CHECK(lb_cu.cuInit(0)); /* (lb_driver_load did it already; the first call of any driver program) */
    CUdevice dev;
    CU_CHECK(lb_cu.cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU_CHECK(lb_cu.cuCtxCreate(&ctx, NULL, 0, dev)); /* a new context, current in this thread */
    CUmodule mod;
    double t0 = lb_wall_ms();
    CU_CHECK(lb_cu.cuModuleLoad(&mod, ptx_path)); /* PTX: the driver compiles it for this GPU now */
    *load_ms = lb_wall_ms() - t0;
    CUdeviceptr d_iters;
    CU_CHECK(lb_cu.cuMemAlloc(&d_iters, bytes));
    CU_CHECK(lb_cu.cuMemcpyHtoD(d_iters, got, bytes)); /* got is poisoned: so is the device image now */
    launch_from_module(mod, d_iters, width, height, step, max_iter);
    CU_CHECK(lb_cu.cuMemcpyDtoH(got, d_iters, bytes));
    CU_CHECK(lb_cu.cuMemFree(d_iters));
    CU_CHECK(lb_cu.cuModuleUnload(mod));
    CU_CHECK(lb_cu.cuCtxDestroy(ctx)); /* also pops it: the runtime's context is current again */
}

/* ---------------------------------------------------------------- module load times */

/* The median of 3 loads (and unloads) of one module, in the current context: from a file
 * (path) or from memory (image). */
static double median_load_ms(const char *path, const void *image)
{
    double t[3];
    for (int i = 0; i < 3; i++) {
        CUmodule mod;
        double t0 = lb_wall_ms();
        if (path)
            CU_CHECK(lb_cu.cuModuleLoad(&mod, path));
        else
            CU_CHECK(lb_cu.cuModuleLoadData(&mod, image));
        t[i] = lb_wall_ms() - t0;
        CU_CHECK(lb_cu.cuModuleUnload(mod));
    }
    return lb_median(t, 3);
}

/* ---------------------------------------------------------------- main */

static const char *lib_path = "./libmandel.so", *module_path = "mandelbrot_kernel.fatbin",
                  *source_path = "mandelbrot_kernel.cu", *ptx_path = "mandelbrot_kernel.ptx",
                  *png_path = "compiled_code.png";
static int max_iter = 256;
static const lb_opt options[] = {
    {"--max-iter", LB_OPT_INT, &max_iter, "iterations before a point counts as inside"},
    {"--lib", LB_OPT_STRING, &lib_path, "path 1: the shared library (built by make)"},
    {"--module", LB_OPT_STRING, &module_path, "path 2: the module for cuModuleLoad (built by make)"},
    {"--source", LB_OPT_STRING, &source_path, "path 3: the kernel source NVRTC compiles at run time"},
    {"--ptx", LB_OPT_STRING, &ptx_path, "path 4: the PTX the driver compiles when it loads it (built by make)"},
    {"--output", LB_OPT_STRING, &png_path, "the image (PNG; empty: none)"},
};
static const lb_program program = {
    .name = "compiled_code",
    .synopsis = "one Mandelbrot kernel four ways: a dlopen'd shared library, a driver-API module, NVRTC at run "
                "time, the driver API alone",
    .details = "--size is the image, WxH (default 1024x768).\n",
    .uses = LB_USE_SIZE | LB_USE_QUIET,
    .opts = options,
    .n_opts = 6,
};

/* path 1: the shared library's mandel_run, found with dlopen/dlsym */
static void run_shared_library(int *got, int width, int height, float step)
{
    void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lb_die(LB_EXIT_USAGE, "compiled_code: %s: %s; rebuild it with `make` in ch10_advanced", lib_path, dlerror());
    int (*run)(int *, int, int, float, float, float, int, char *, int);
    *(void **)&run = dlsym(lib, "mandel_run"); /* (the POSIX way to turn a void * into a function pointer) */
    if (!run) lb_die(LB_EXIT_USAGE, "compiled_code: %s has no mandel_run: %s", lib_path, dlerror());
    char err[256];
    if (run(got, width, height, X_MIN, Y_MIN, step, max_iter, err, (int)sizeof err))
        lb_die(LB_EXIT_CUDA, "compiled_code: mandel_run in %s failed: %s", lib_path, err);
    dlclose(lib);
}

/* paths 2 and 3: a module in the runtime's primary context, from a file or from memory */
static void run_module(const char *path, const char *ptx, int *got, int width, int height, float step)
{
    size_t bytes = sizeof(int) * (size_t)width * height;
    /* runtime memory first: that also makes sure the runtime's primary context exists and is
     * current, the context the driver calls below work in (same context, same pointers) */
    int *d_iters;
    CUDA_CHECK(cudaMalloc((void **)&d_iters, bytes));
    lb_poison_device(d_iters, bytes);
    CUmodule mod;
    if (path)
        CU_CHECK(lb_cu.cuModuleLoad(&mod, path));
    else
        CU_CHECK(lb_cu.cuModuleLoadData(&mod, ptx));
    launch_from_module(mod, (CUdeviceptr)(uintptr_t)d_iters, width, height, step, max_iter);
    CUDA_CHECK(cudaMemcpy(got, d_iters, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d_iters));
    CU_CHECK(lb_cu.cuModuleUnload(mod));
}

int main(int argc, char **argv)
{
    /* before anything starts the driver (see the top of the file) */
    if (!getenv("CUDA_CACHE_DISABLE")) setenv("CUDA_CACHE_DISABLE", "1", 1);
    lb_args args = {.size = {{1024, 768}, 2}, .max_size_dims = 2, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    lb_check_output_path(&program, "--output", png_path);
    /* the sides checked as they were read (64-bit), before they become ints: 2^32 + 5 is too large,
     * not 5 */
    long long w64 = args.size.v[0], h64 = args.size.n == 2 ? args.size.v[1] : w64;
    if (w64 > 16384 || h64 > 16384) lb_usage_error(&program, "--size: each side at most 16384");
    int width = (int)w64, height = (int)h64;
    if (max_iter < 1 || max_iter > 1000000) lb_usage_error(&program, "--max-iter must be 1..1000000");
    /* everything that can be checked without a GPU first: the files, and compiling the source */
    require_file(lib_path, "the shared library");
    require_file(module_path, "the module");
    require_file(ptx_path, "the PTX");
    double t0 = lb_wall_ms();
    char *ptx = compile_to_ptx(source_path, args.quiet);
    double nvrtc_ms = lb_wall_ms() - t0;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_driver_load();
    size_t bytes = sizeof(int) * (size_t)width * height;
    lb_require_device_memory(bytes, "the image");
    float step = SPAN / width;
    if (!args.quiet)
        printf("compiled_code: %dx%d, %d iterations, %s (%s)\n", width, height, max_iter, gpu.prop.name, gpu.sm);
    int *want = lb_host_alloc(bytes, "the CPU image"), *got = lb_host_alloc(bytes, "an image");
    mandelbrot_cpu(want, width, height, X_MIN, Y_MIN, step, max_iter);
    int failures = 0;
    const char *how[4] = {"1 shared library (dlopen)", "2 driver API module (cuModuleLoad)", "3 NVRTC at run time",
                          "4 driver API alone (own context, PTX)"};
    double jit_ms = 0;
    for (int path = 1; path <= 4; path++) {
        lb_poison_host(got, bytes);
        double t = lb_wall_ms();
        if (path == 1) run_shared_library(got, width, height, step);
        if (path == 2) run_module(module_path, NULL, got, width, height, step);
        if (path == 3) run_module(NULL, ptx, got, width, height, step);
        if (path == 4) run_driver_only(ptx_path, got, width, height, step, max_iter, &jit_ms);
        double ms = lb_wall_ms() - t;
        lb_check c = lb_check_i32(how[path - 1], got, want, (size_t)width * height, args.quiet);
        failures += c.n_bad != 0;
        if (!args.quiet)
            printf("  %-40s %s  (%.1f ms from load to image%s)\n", how[path - 1],
                   c.n_bad ? "FAIL" : "PASS (= the CPU's image)", ms,
                   path == 3   ? ", after compiling"
                   : path == 4 ? ", context included"
                               : "");
    }

    /* loading the kernel: machine code vs PTX the driver compiles vs NVRTC, in the primary context */
    double fatbin_ms = median_load_ms(module_path, NULL), ptx_ms = median_load_ms(ptx_path, NULL);
    double nvrtc_load_ms = median_load_ms(NULL, ptx);
    const char *cache = getenv("CUDA_CACHE_DISABLE");
    char size[32];
    snprintf(size, sizeof size, "%dx%d", width, height);
    if (!args.quiet) {
        printf("loading the kernel (median of 3; the driver's JIT cache %s):\n",
               strcmp(cache, "1") == 0 ? "off, so PTX is compiled every time" : "as CUDA_CACHE_DISABLE sets it");
        printf("  fatbin, machine code for %s        %8.2f ms\n", LB_ARCH_NAME, fatbin_ms);
        printf("  PTX file, compiled by the driver      %8.2f ms  (path 4's first load: %.2f ms)\n", ptx_ms, jit_ms);
        printf("  NVRTC: source to PTX, then the driver %8.2f ms  (%.2f compiling + %.2f loading)\n",
               nvrtc_ms + nvrtc_load_ms, nvrtc_ms, nvrtc_load_ms);
    }
    lb_result r1 = {"compiled_code", -1, "load_fatbin", size, fatbin_ms, "x_fatbin", 1.0, NULL, 0.0, !failures};
    lb_result r2 = {"compiled_code", -1, "load_ptx_jit", size, ptx_ms, "x_fatbin", ptx_ms / fatbin_ms, NULL, 0.0,
                    !failures};
    lb_result r3 = {"compiled_code",
                    -1,
                    "load_nvrtc",
                    size,
                    nvrtc_ms + nvrtc_load_ms,
                    "x_fatbin",
                    (nvrtc_ms + nvrtc_load_ms) / fatbin_ms,
                    NULL,
                    0.0,
                    !failures};
    lb_print_result(&r1, args.quiet);
    lb_print_result(&r2, args.quiet);
    lb_print_result(&r3, args.quiet);
    if (png_path[0]) {
        unsigned char *px = lb_host_alloc((size_t)width * height, "the PNG");
        for (size_t i = 0; i < (size_t)width * height; i++)
            px[i] = want[i] >= max_iter ? 0 : (unsigned char)(255 - (255 * want[i]) / max_iter);
        if (lb_write_png(png_path, width, height, 1, px, NULL))
            lb_die(LB_EXIT_USAGE, "compiled_code: cannot write %s: %s", png_path, strerror(errno));
        if (!args.quiet) printf("  wrote %s\n", png_path);
        free(px);
    }
    if (args.quiet)
        printf("compiled_code: %dx%d, 4 paths, loads: fatbin %.2f ms, PTX %.2f ms, NVRTC %.2f ms, %s\n", width, height,
               fatbin_ms, ptx_ms, nvrtc_ms + nvrtc_load_ms, failures ? "FAIL" : "PASS");
    free(ptx);
    free(want);
    free(got);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
