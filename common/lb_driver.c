/* lb_driver.c - the driver API found in libcuda at run time (see lb_driver.h). */
#define _POSIX_C_SOURCE 200809L
#include "lb_driver.h"
#include "labbook.h"

#include <dlfcn.h>

lb_driver_api lb_cu;

void lb_cu_fail(CUresult r, const char *call, const char *file, int line)
{
    /* the driver's "no device / no image" mean what the runtime's do: the same message, exit 77 */
    if (r == CUDA_ERROR_NO_DEVICE) lb_cuda_fail(cudaErrorNoDevice, call, file, line);
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU) lb_cuda_fail(cudaErrorNoKernelImageForDevice, call, file, line);
    const char *name = "CUDA_ERROR_UNKNOWN", *text = "unknown driver error";
    if (lb_cu.cuGetErrorName) lb_cu.cuGetErrorName(r, &name);
    if (lb_cu.cuGetErrorString) lb_cu.cuGetErrorString(r, &text);
    fprintf(stderr, "%s:%d: driver API error %s (%s) in %s\n", file, line, name, text, call);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        fprintf(stderr, "the problem is too large for the device's memory: try a smaller --size\n");
        exit(LB_EXIT_USAGE);
    }
    /* a module file that is missing or not a module is the input's fault, not the GPU's */
    exit(r == CUDA_ERROR_FILE_NOT_FOUND || r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_INVALID_PTX ? LB_EXIT_USAGE
                                                                                                        : LB_EXIT_CUDA);
}

void lb_driver_load(void)
{
    static int loaded;
    if (loaded) return;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr,
                "no NVIDIA GPU/driver found (libcuda.so.1, the driver's library, cannot be opened: %s); "
                "run `make env` to see what is missing\n",
                dlerror());
        exit(LB_EXIT_NO_GPU);
    }
    /* LB_STR expands the name first: "cuCtxCreate" -> "cuCtxCreate_v4", the symbol to look up.
     * (*(void **)&p = dlsym(...) is the POSIX way to turn a void * into a function pointer.) */
#define LB_DRIVER_FIND(fn)                                                                                    \
    *(void **)&lb_cu.fn = dlsym(lib, LB_STR(fn));                                                             \
    if (!lb_cu.fn) {                                                                                          \
        fprintf(stderr, "the NVIDIA driver is too old: its libcuda has no %s; run `make env`\n", LB_STR(fn)); \
        exit(LB_EXIT_NO_GPU);                                                                                 \
    }
    LB_DRIVER_FUNCTIONS(LB_DRIVER_FIND)
#undef LB_DRIVER_FIND
    CUresult r = lb_cu.cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_STUB_LIBRARY)
        lb_cuda_fail(r == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : cudaErrorStubLibrary, "cuInit(0)", __FILE__,
                     __LINE__);
    if (r == CUDA_ERROR_INVALID_DEVICE || r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ||
        r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
        lb_cuda_fail(cudaErrorInsufficientDriver, "cuInit(0)", __FILE__, __LINE__);
    CU_CHECK(r);
    loaded = 1;
}
