/* compiled_code.c - the book's chapter 10 in C: one Mandelbrot kernel (mandelbrot_kernel.cu)
 * reached three ways, each checked to give the CPU's image exactly:
 *   1  a shared library built by nvcc (libmandel.so), loaded with dlopen/dlsym: the C twin of
 *      ctypes.CDLL
 *   2  the driver API loading a module built by make (mandelbrot_kernel.fatbin): cuModuleLoad,
 *      cuModuleGetFunction, cuLaunchKernel: the twin of PyCUDA's module loading. The context is
 *      the runtime's primary context, already current after lb_gpu_init.
 *   3  NVRTC compiling the kernel's source at run time (the twin of PyCUDA's SourceModule), then
 *      the driver loading the PTX; --source FILE: edit a kernel and rerun without make
 *   build: make ch10      run: ./compiled_code [--size WxH] [--max-iter M] [--source FILE]
 *
 * The driver API's functions are looked up through the runtime (cudaGetDriverEntryPointByVersion)
 * instead of linking libcuda: libcuda comes with the driver, so a program linked to it would not
 * even start on a machine without one, where this one says so and exits 77.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <cudaTypedefs.h>
#include <nvrtc.h>
#include "labbook.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

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
    if (!f) lb_die(LB_EXIT_USAGE, "compiled_code: %s (%s); build it with `make` in ch10_advanced", err, what);
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
    nvrtcProgram prog;
    NVRTC_CHECK(nvrtcCreateProgram(&prog, src, path, 0, NULL, NULL));
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=compute_%s", LB_ARCH_NAME + 3); /* sm_90 -> compute_90 */
    const char *opts[] = {arch, "--std=c++17"};
    nvrtcResult r = nvrtcCompileProgram(prog, 2, opts);
    size_t log_len;
    NVRTC_CHECK(nvrtcGetProgramLogSize(prog, &log_len));
    char *log = lb_host_alloc(log_len + 1, "the compile log");
    NVRTC_CHECK(nvrtcGetProgramLog(prog, log));
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "%s", log);
        lb_die(LB_EXIT_USAGE, "compiled_code: NVRTC could not compile %s: %s (the log is above)", path,
               nvrtcGetErrorString(r));
    }
    if (!quiet && log_len > 1) printf("NVRTC log for %s:\n%s", path, log);
    size_t ptx_len;
    NVRTC_CHECK(nvrtcGetPTXSize(prog, &ptx_len));
    char *ptx = lb_host_alloc(ptx_len, "the PTX");
    NVRTC_CHECK(nvrtcGetPTX(prog, ptx));
    NVRTC_CHECK(nvrtcDestroyProgram(&prog));
    free(log);
    free(src);
    return ptx;
}

/* ---------------------------------------------------------------- the driver API */

static struct {
    PFN_cuGetErrorName_v6000 get_error_name;
    PFN_cuModuleLoad_v2000 module_load;
    PFN_cuModuleLoadData_v2000 module_load_data;
    PFN_cuModuleGetFunction_v2000 module_get_function;
    PFN_cuModuleUnload_v2000 module_unload;
    PFN_cuLaunchKernel_v4000 launch_kernel;
} drv;

static void *driver_function(const char *name)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult found;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn)
        lb_die(LB_EXIT_CUDA, "compiled_code: the driver has no %s (driver too old?)", name);
    return fn;
}

/* CU_CHECK, with the driver's own error name found the same way */
#define DRV_CHECK(call)                                                                                              \
    do {                                                                                                             \
        CUresult r_ = (call);                                                                                        \
        if (r_ != CUDA_SUCCESS) {                                                                                    \
            const char *name_ = "CUDA_ERROR";                                                                        \
            drv.get_error_name(r_, &name_);                                                                          \
            lb_die(r_ == CUDA_ERROR_FILE_NOT_FOUND || r_ == CUDA_ERROR_INVALID_IMAGE ? LB_EXIT_USAGE : LB_EXIT_CUDA, \
                   "%s:%d: %s failed: %s", __FILE__, __LINE__, #call, name_);                                        \
        }                                                                                                            \
    } while (0)

static void load_driver(void)
{
    drv.get_error_name = (PFN_cuGetErrorName_v6000)driver_function("cuGetErrorName");
    drv.module_load = (PFN_cuModuleLoad_v2000)driver_function("cuModuleLoad");
    drv.module_load_data = (PFN_cuModuleLoadData_v2000)driver_function("cuModuleLoadData");
    drv.module_get_function = (PFN_cuModuleGetFunction_v2000)driver_function("cuModuleGetFunction");
    drv.module_unload = (PFN_cuModuleUnload_v2000)driver_function("cuModuleUnload");
    drv.launch_kernel = (PFN_cuLaunchKernel_v4000)driver_function("cuLaunchKernel");
}

/* launch mandelbrot_kernel from a loaded module; the arguments go as an array of pointers */
static void launch_from_module(CUmodule mod, int *d_iters, int width, int height, float step, int max_iter)
{
    CUfunction f;
    DRV_CHECK(drv.module_get_function(&f, mod, "mandelbrot_kernel"));
    float x_min = X_MIN, y_min = Y_MIN;
    void *params[] = {&d_iters, &width, &height, &x_min, &y_min, &step, &max_iter};
    DRV_CHECK(drv.launch_kernel(f, (unsigned int)(width + 15) / 16, (unsigned int)(height + 15) / 16, 1, 16, 16, 1, 0,
                                NULL, params, NULL));
    CUDA_CHECK(cudaDeviceSynchronize());
}

/* ---------------------------------------------------------------- main */

static const char *lib_path = "./libmandel.so", *module_path = "mandelbrot_kernel.fatbin",
                  *source_path = "mandelbrot_kernel.cu", *png_path = "compiled_code.png";
static int max_iter = 256;
static const lb_opt options[] = {
    {"--max-iter", LB_OPT_INT, &max_iter, "iterations before a point counts as inside"},
    {"--lib", LB_OPT_STRING, &lib_path, "path 1: the shared library (built by make)"},
    {"--module", LB_OPT_STRING, &module_path, "path 2: the module for cuModuleLoad (built by make)"},
    {"--source", LB_OPT_STRING, &source_path, "path 3: the kernel source NVRTC compiles at run time"},
    {"--output", LB_OPT_STRING, &png_path, "the image (PNG; empty: none)"},
};
static const lb_program program = {
    .name = "compiled_code",
    .synopsis = "one Mandelbrot kernel three ways: a dlopen'd shared library, a driver-API module, NVRTC at run time",
    .details = "--size is the image, WxH (default 1024x768).\n",
    .uses = LB_USE_SIZE | LB_USE_QUIET,
    .opts = options,
    .n_opts = 5,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1024, 768}, 2}, .max_size_dims = 2, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    lb_check_output_path(&program, "--output", png_path);
    int width = (int)args.size.v[0], height = args.size.n == 2 ? (int)args.size.v[1] : width;
    if (width > 16384 || height > 16384) lb_usage_error(&program, "--size: each side at most 16384");
    if (max_iter < 1 || max_iter > 1000000) lb_usage_error(&program, "--max-iter must be 1..1000000");
    /* everything that can be checked without a GPU first: the files, and compiling the source */
    require_file(lib_path, "the shared library");
    require_file(module_path, "the module");
    double t0 = lb_wall_ms();
    char *ptx = compile_to_ptx(source_path, args.quiet);
    double nvrtc_ms = lb_wall_ms() - t0;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t bytes = sizeof(int) * (size_t)width * height;
    lb_require_device_memory(bytes, "the image");
    float step = SPAN / width;
    if (!args.quiet)
        printf("compiled_code: %dx%d, %d iterations, %s (%s)\n", width, height, max_iter, gpu.prop.name, gpu.sm);
    int *want = lb_host_alloc(bytes, "the CPU image"), *got = lb_host_alloc(bytes, "an image");
    mandelbrot_cpu(want, width, height, X_MIN, Y_MIN, step, max_iter);
    int failures = 0;
    const char *how[3] = {"1 shared library (dlopen)", "2 driver API module (cuModuleLoad)", "3 NVRTC at run time"};

    for (int path = 1; path <= 3; path++) {
        lb_poison_host(got, bytes);
        double t = lb_wall_ms();
        if (path == 1) {
            void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
            if (!lib)
                lb_die(LB_EXIT_USAGE, "compiled_code: %s: %s; rebuild it with `make` in ch10_advanced", lib_path,
                       dlerror());
            int (*run)(int *, int, int, float, float, float, int, char *, int);
            *(void **)&run = dlsym(lib, "mandel_run"); /* (the POSIX way to turn a void * into a function pointer) */
            if (!run) lb_die(LB_EXIT_USAGE, "compiled_code: %s has no mandel_run: %s", lib_path, dlerror());
            char err[256];
            if (run(got, width, height, X_MIN, Y_MIN, step, max_iter, err, (int)sizeof err))
                lb_die(LB_EXIT_CUDA, "compiled_code: mandel_run in %s failed: %s", lib_path, err);
            dlclose(lib);
        } else {
            if (path == 2) load_driver();
            /* runtime memory first: that also makes sure the runtime's primary context exists and is
             * current, the context the driver calls below work in (same context, same pointers) */
            int *d_iters;
            CUDA_CHECK(cudaMalloc((void **)&d_iters, bytes));
            lb_poison_device(d_iters, bytes);
            CUmodule mod;
            if (path == 2)
                DRV_CHECK(drv.module_load(&mod, module_path));
            else
                DRV_CHECK(drv.module_load_data(&mod, ptx));
            launch_from_module(mod, d_iters, width, height, step, max_iter);
            CUDA_CHECK(cudaMemcpy(got, d_iters, bytes, cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaFree(d_iters));
            DRV_CHECK(drv.module_unload(mod));
        }
        double ms = lb_wall_ms() - t;
        lb_check c = lb_check_i32(how[path - 1], got, want, (size_t)width * height, args.quiet);
        failures += c.n_bad != 0;
        if (!args.quiet)
            printf("  %-36s %s  (%.1f ms from load to image%s)\n", how[path - 1],
                   c.n_bad ? "FAIL" : "PASS (= the CPU's image)", ms, path == 3 ? ", after compiling" : "");
    }
    if (!args.quiet) printf("  NVRTC compiled %s in %.1f ms\n", source_path, nvrtc_ms);
    if (png_path[0]) {
        unsigned char *px = lb_host_alloc((size_t)width * height, "the PNG");
        for (size_t i = 0; i < (size_t)width * height; i++)
            px[i] = want[i] >= max_iter ? 0 : (unsigned char)(255 - (255 * want[i]) / max_iter);
        if (lb_write_png(png_path, width, height, 1, px, NULL))
            lb_die(LB_EXIT_USAGE, "compiled_code: cannot write %s: %s", png_path, strerror(errno));
        if (!args.quiet) printf("  wrote %s\n", png_path);
        free(px);
    }
    if (args.quiet) printf("compiled_code: %dx%d, 3 paths, %s\n", width, height, failures ? "FAIL" : "PASS");
    free(ptx);
    free(want);
    free(got);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
