/* cuda.h's twin for tests/emu: the tensor-map types the kernels files name (CUtensorMap and the
 * encoder's enums), with the values of the real header. Nothing links libcuda here either. */
#pragma once
#include <cstdint>

typedef int CUresult;
#define CUDA_SUCCESS 0
typedef uint64_t cuuint64_t;
typedef uint32_t cuuint32_t;
typedef int CUtensorMapDataType, CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
    CUtensorMapFloatOOBfill;
#define CU_TENSOR_MAP_DATA_TYPE_UINT8 0
#define CU_TENSOR_MAP_DATA_TYPE_FLOAT32 7
#define CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 9
#define CU_TENSOR_MAP_INTERLEAVE_NONE 0
#define CU_TENSOR_MAP_SWIZZLE_128B 3
#define CU_TENSOR_MAP_L2_PROMOTION_NONE 0
#define CU_TENSOR_MAP_L2_PROMOTION_L2_256B 3
#define CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE 0
struct alignas(64) CUtensorMap {
    uint64_t opaque[16];
};
