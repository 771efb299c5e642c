/* lb_driver.h - the CUDA driver API (cu* functions, cuda.h) for the programs that use it
 * directly: contexts, modules, launches by hand.
 *
 * The functions are looked up in libcuda at run time (dlopen + dlsym) instead of linking it:
 * libcuda comes with the driver, not with the toolkit, so a program linked to it would not even
 * start on a machine without a driver, where this one says so and exits 77. Calls read almost
 * like the plain API:
 *
 *     lb_driver_load();                                     libcuda, cuInit, exit 77 if no GPU
 *     CU_CHECK(lb_cu.cuCtxCreate(&ctx, NULL, 0, dev));      every call checked, with its name
 *
 * Link with lb_driver.o and -ldl (a chapter Makefile: OBJS_prog := lb_driver.o).
 */
#ifndef LB_DRIVER_H
#define LB_DRIVER_H

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The functions the lab book calls. cuda.h renames many of them to their current version
 * (cuCtxCreate is cuCtxCreate_v4 since CUDA 13, cuMemAlloc is cuMemAlloc_v2), so the names
 * below expand to the versioned ones, and each pointer gets the prototype cuda.h declares. */
/* clang-format off */
#define LB_DRIVER_FUNCTIONS(X) \
    X(cuGetErrorName) X(cuGetErrorString) X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) \
    X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) \
    X(cuDevicePrimaryCtxRelease) X(cuCtxCreate) X(cuCtxDestroy) X(cuCtxPushCurrent) \
    X(cuCtxPopCurrent) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuModuleLoad) \
    X(cuModuleLoadData) X(cuModuleGetFunction) X(cuModuleUnload) X(cuMemAlloc) X(cuMemAllocAsync) \
    X(cuMemFreeAsync) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemGetInfo) \
    X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) \
    X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) \
    X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy)
/* clang-format on */

/* One pointer per function, named as the function: lb_cu.cuInit(0). */
typedef struct {
#define LB_DRIVER_POINTER(fn) __typeof__(fn) *fn;
    LB_DRIVER_FUNCTIONS(LB_DRIVER_POINTER)
#undef LB_DRIVER_POINTER
} lb_driver_api;

extern lb_driver_api lb_cu;

/* Open libcuda, find every function above and call cuInit(0). No driver, no device: the
 * lab book's "no NVIDIA GPU/driver found" message and exit 77. Safe to call more than once. */
void lb_driver_load(void);

/* "file:line: driver API error CUDA_ERROR_X (text) in <call>" and exit: 77 for no device or
 * no kernel image, 2 for a missing or invalid module file, 3 otherwise. */
void lb_cu_fail(CUresult r, const char *call, const char *file, int line);
#define CU_CHECK(call)                                                           \
    do {                                                                         \
        CUresult lb_r_ = (call);                                                 \
        if (lb_r_ != CUDA_SUCCESS) lb_cu_fail(lb_r_, #call, __FILE__, __LINE__); \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
