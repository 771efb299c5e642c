/* scan_kernels.h - launchers for scan_kernels.cu (callable from C). */
#ifndef SCAN_KERNELS_H
#define SCAN_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

#define SCAN_VERSIONS 6 /* 0 (CUB) .. 5; scan.c's version table has a row for each */
enum { SCAN_INT = 0, SCAN_FLOAT = 1 };

size_t scan_scratch_bytes(int version, size_t n);

/* out = the inclusive (exclusive = 0) or exclusive (exclusive = 1) prefix sums of n values of
 * type `type` (SCAN_INT: int32, added with wrap-around; SCAN_FLOAT: float), by version v
 * (0 = cub::DeviceScan). d_in may equal d_out. d_scratch holds scratch_bytes >=
 * scan_scratch_bytes(v, n) bytes. */
cudaError_t scan_launch(int version, int type, int exclusive, const void *d_in, void *d_out, size_t n, void *d_scratch,
                        size_t scratch_bytes);

/* version 0, in scan_cub.cu (CUB's headers compiled apart from our kernels) */
size_t scan_cub_scratch_bytes(size_t n);
cudaError_t scan_cub(int type, int exclusive, const void *d_in, void *d_out, size_t n, void *d_scratch,
                     size_t scratch_bytes);

#ifdef __cplusplus
}
#endif
#endif
