/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/cuda_types.h: the slice of the CUDA driver API, NVRTC and cuSPARSE that spx calls,
 * declared here so that spx builds without any CUDA header; the loader's symbol tables; and the
 * internal entry points of the CUDA backend (the function tables, error checks, context helpers).
 * Internal: names carry the spx__ prefix and may change without notice.
 *
 * Every type below mirrors the ABI of the CUDA headers: handles are pointers to incomplete
 * structs, enums are int-sized, CUdeviceptr is 64-bit. The names are spx__-prefixed so that a file
 * may include <cuda.h> as well. Values are those of CUDA 13.0 (stable since CUDA 11). */
#ifndef SPX_INTERNAL_CUDA_TYPES_H
#define SPX_INTERNAL_CUDA_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include "../device.h"
#include "../loader.h"

/* ---- Types ---------------------------------------------------------------------------------- */
typedef int spx__CUresult;
typedef int spx__CUdevice;
typedef int spx__CUdevice_attribute;
typedef int spx__CUfunction_attribute;
typedef int spx__CUjit_option;
typedef unsigned long long spx__CUdeviceptr;
typedef struct spx__CUctx_st *spx__CUcontext;
typedef struct spx__CUmod_st *spx__CUmodule;
typedef struct spx__CUfunc_st *spx__CUfunction;
typedef struct spx__CUstream_st *spx__CUstream; /* also cudaStream_t, as cuSPARSE takes it */
typedef struct spx__CUevent_st *spx__CUevent;
typedef struct spx__CUgraph_st *spx__CUgraph;
typedef struct spx__CUgraphExec_st *spx__CUgraphExec;
typedef struct spx__CUipcMemHandle { char reserved[64]; } spx__CUipcMemHandle; /* CUipcMemHandle */
typedef size_t (*spx__CUoccupancyB2DSize)(int block_size);

typedef int spx__nvrtcResult;
typedef struct spx__nvrtcProgram_st *spx__nvrtcProgram;

typedef int spx__cusparseStatus_t;
typedef int spx__cusparseIndexType_t;
typedef int spx__cusparseIndexBase_t;
typedef int spx__cusparseOperation_t;
typedef int spx__cusparseSpMVAlg_t;
typedef int spx__cusparseOrder_t;
typedef int spx__cudaDataType;
typedef int spx__libraryPropertyType;
typedef struct spx__cusparseContext *spx__cusparseHandle_t;
typedef struct spx__cusparseSpMatDescr *spx__cusparseSpMatDescr_t;
typedef struct spx__cusparseDnVecDescr *spx__cusparseDnVecDescr_t;
typedef const struct spx__cusparseSpMatDescr *spx__cusparseConstSpMatDescr_t;
typedef const struct spx__cusparseDnVecDescr *spx__cusparseConstDnVecDescr_t;
typedef int spx__cusparseSpGEMMAlg_t;
typedef int spx__cusparseAction_t;
typedef int spx__cusparseCsr2CscAlg_t;
typedef struct spx__cusparseSpGEMMDescr *spx__cusparseSpGEMMDescr_t;

/* ---- Constants ------------------------------------------------------------------------------ */
/* Driver results spx names itself when cuGetErrorName cannot (a stub or too old a driver).
 *  _(NAME after CUDA_ERROR_,            value) */
#define SPX__CU_ERRORS(_)                         \
  _(INVALID_VALUE,                       1)      \
  _(OUT_OF_MEMORY,                       2)      \
  _(NOT_INITIALIZED,                     3)      \
  _(DEINITIALIZED,                       4)      \
  _(STUB_LIBRARY,                        34)     \
  _(INSUFFICIENT_DRIVER,                 35)     /* CUDA <= 12 */ \
  _(CALL_REQUIRES_NEWER_DRIVER,          36)     \
  _(DEVICE_UNAVAILABLE,                  46)     \
  _(NO_DEVICE,                           100)    \
  _(INVALID_DEVICE,                      101)    \
  _(INVALID_IMAGE,                       200)    \
  _(INVALID_CONTEXT,                     201)    \
  _(NO_BINARY_FOR_GPU,                   209)    \
  _(INVALID_PTX,                         218)    \
  _(JIT_COMPILER_NOT_FOUND,              221)    \
  _(UNSUPPORTED_PTX_VERSION,             222)    \
  _(SHARED_OBJECT_INIT_FAILED,           303)    \
  _(OPERATING_SYSTEM,                    304)    \
  _(INVALID_HANDLE,                      400)    \
  _(NOT_FOUND,                           500)    \
  _(NOT_READY,                           600)    \
  _(ILLEGAL_ADDRESS,                     700)    \
  _(LAUNCH_OUT_OF_RESOURCES,             701)    \
  _(LAUNCH_TIMEOUT,                      702)    \
  _(ILLEGAL_INSTRUCTION,                 715)    \
  _(MISALIGNED_ADDRESS,                  716)    \
  _(LAUNCH_FAILED,                       719)    \
  _(NOT_PERMITTED,                       800)    \
  _(NOT_SUPPORTED,                       801)    \
  _(SYSTEM_NOT_READY,                    802)    \
  _(SYSTEM_DRIVER_MISMATCH,              803)    \
  _(COMPAT_NOT_SUPPORTED_ON_DEVICE,      804)    \
  _(UNKNOWN,                             999)

enum {
  SPX__CUDA_SUCCESS = 0,
#define SPX__CU_ERROR_ENUM(name, value) SPX__CUDA_ERROR_##name = value,
  SPX__CU_ERRORS(SPX__CU_ERROR_ENUM)
#undef SPX__CU_ERROR_ENUM
};

enum {
  /* CUdevice_attribute */
  SPX__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  SPX__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  SPX__CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  SPX__CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  SPX__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  SPX__CU_DEVICE_ATTRIBUTE_ECC_ENABLED = 32,
  SPX__CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
  SPX__CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
  SPX__CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
  SPX__CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
  SPX__CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  SPX__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  SPX__CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
  SPX__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  SPX__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  SPX__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  SPX__CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
  SPX__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  /* CUfunction_attribute */
  SPX__CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  SPX__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  SPX__CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  SPX__CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  SPX__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  /* CUjit_option */
  SPX__CU_JIT_INFO_LOG_BUFFER = 3,
  SPX__CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  SPX__CU_JIT_ERROR_LOG_BUFFER = 5,
  SPX__CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  /* stream and event flags */
  SPX__CU_STREAM_DEFAULT = 0,
  SPX__CU_STREAM_NON_BLOCKING = 1,
  SPX__CU_EVENT_DEFAULT = 0,
  SPX__CU_EVENT_BLOCKING_SYNC = 1,
  SPX__CU_EVENT_DISABLE_TIMING = 2
};

enum {
  SPX__NVRTC_SUCCESS = 0,
  SPX__NVRTC_ERROR_COMPILATION = 6
};

enum {
  SPX__CUSPARSE_STATUS_SUCCESS = 0,
  SPX__CUSPARSE_STATUS_ALLOC_FAILED = 2,
  SPX__CUSPARSE_STATUS_INVALID_VALUE = 3,
  SPX__CUSPARSE_STATUS_NOT_SUPPORTED = 10,
  SPX__CUSPARSE_STATUS_INSUFFICIENT_RESOURCES = 11,
  SPX__CUSPARSE_INDEX_32I = 2,
  SPX__CUSPARSE_INDEX_64I = 3,
  SPX__CUSPARSE_INDEX_BASE_ZERO = 0,
  SPX__CUSPARSE_OPERATION_NON_TRANSPOSE = 0,
  SPX__CUSPARSE_ORDER_ROW = 2,
  SPX__CUSPARSE_SPMV_ALG_DEFAULT = 0,
  SPX__CUSPARSE_SPMV_COO_ALG1 = 1,
  SPX__CUSPARSE_SPMV_CSR_ALG1 = 2,
  SPX__CUSPARSE_SPMV_CSR_ALG2 = 3,
  SPX__CUSPARSE_SPMV_COO_ALG2 = 4,
  SPX__CUSPARSE_SPMV_SELL_ALG1 = 5,
  SPX__CUSPARSE_SPMV_BSR_ALG1 = 6, /* in the CUDA 13 headers, not in CUDA 12's */
  SPX__CUSPARSE_SPGEMM_CSR_ALG_DETERMINITIC = 1, /* cuSPARSE's spelling; bitwise reproducible values */
  SPX__CUSPARSE_ACTION_NUMERIC = 1,
  SPX__CUSPARSE_CSR2CSC_ALG1 = 1,
  SPX__CUDA_R_32F = 0,
  SPX__CUDA_R_64F = 1,
  SPX__LIBRARY_MAJOR_VERSION = 0,
  SPX__LIBRARY_MINOR_VERSION = 1,
  SPX__LIBRARY_PATCH_LEVEL = 2
};

/* ---- Symbol tables ---------------------------------------------------------------------------
 * One list per library; each is expanded into the function table (spx__cuda_api, ...), the
 * name/offset table the loader walks with dlsym, and an enum whose duplicate members would not
 * compile (so no symbol is listed twice, by member or by exported name).
 *   req:      1 = the library is unusable without it; 0 = optional, the member is NULL if absent
 *   ret:      return type
 *   member:   the name spx calls it by (api->member)
 *   exported: the name dlsym looks up: the versioned export (_v2) where <cuda.h> maps the plain
 *             name to one, since the plain export keeps the old ABI for old binaries
 *   params:   parameter list
 * ORDER: free. cuEventElapsedTime stays unversioned: its _v2 exists only in drivers >= 12.8. */
#define SPX__CUDA_SYMBOLS(_)                                                                        \
  /* req  ret            member                             exported                            params */ \
  _(1, spx__CUresult, cuInit,                            cuInit,                            (unsigned int flags)) \
  _(1, spx__CUresult, cuDriverGetVersion,                cuDriverGetVersion,                (int *version)) \
  _(1, spx__CUresult, cuGetErrorName,                    cuGetErrorName,                    (spx__CUresult r, const char **s)) \
  _(1, spx__CUresult, cuGetErrorString,                  cuGetErrorString,                  (spx__CUresult r, const char **s)) \
  _(1, spx__CUresult, cuDeviceGetCount,                  cuDeviceGetCount,                  (int *count)) \
  _(1, spx__CUresult, cuDeviceGet,                       cuDeviceGet,                       (spx__CUdevice *dev, int ordinal)) \
  _(1, spx__CUresult, cuDeviceGetName,                   cuDeviceGetName,                   (char *name, int len, spx__CUdevice dev)) \
  _(1, spx__CUresult, cuDeviceGetAttribute,              cuDeviceGetAttribute,              (int *v, spx__CUdevice_attribute a, spx__CUdevice dev)) \
  _(1, spx__CUresult, cuDeviceTotalMem,                  cuDeviceTotalMem_v2,               (size_t *bytes, spx__CUdevice dev)) \
  _(1, spx__CUresult, cuDevicePrimaryCtxRetain,          cuDevicePrimaryCtxRetain,          (spx__CUcontext *ctx, spx__CUdevice dev)) \
  _(1, spx__CUresult, cuDevicePrimaryCtxRelease,         cuDevicePrimaryCtxRelease_v2,      (spx__CUdevice dev)) \
  _(1, spx__CUresult, cuCtxSetCurrent,                   cuCtxSetCurrent,                   (spx__CUcontext ctx)) \
  _(1, spx__CUresult, cuCtxGetCurrent,                   cuCtxGetCurrent,                   (spx__CUcontext *ctx)) \
  _(1, spx__CUresult, cuCtxPushCurrent,                  cuCtxPushCurrent_v2,               (spx__CUcontext ctx)) \
  _(1, spx__CUresult, cuCtxPopCurrent,                   cuCtxPopCurrent_v2,                (spx__CUcontext *ctx)) \
  _(1, spx__CUresult, cuCtxSynchronize,                  cuCtxSynchronize,                  (void)) \
  _(1, spx__CUresult, cuMemGetInfo,                      cuMemGetInfo_v2,                   (size_t *free_bytes, size_t *total_bytes)) \
  _(1, spx__CUresult, cuMemAlloc,                        cuMemAlloc_v2,                     (spx__CUdeviceptr *p, size_t bytes)) \
  _(1, spx__CUresult, cuMemFree,                         cuMemFree_v2,                      (spx__CUdeviceptr p)) \
  _(0, spx__CUresult, cuIpcGetMemHandle,                 cuIpcGetMemHandle,                 (spx__CUipcMemHandle *h, spx__CUdeviceptr p)) \
  _(0, spx__CUresult, cuIpcOpenMemHandle,                cuIpcOpenMemHandle_v2,             (spx__CUdeviceptr *p, spx__CUipcMemHandle h, unsigned int flags)) \
  _(0, spx__CUresult, cuIpcCloseMemHandle,               cuIpcCloseMemHandle,               (spx__CUdeviceptr p)) \
  _(1, spx__CUresult, cuMemGetAddressRange,              cuMemGetAddressRange_v2,           (spx__CUdeviceptr *base, size_t *bytes, spx__CUdeviceptr p)) \
  _(1, spx__CUresult, cuMemcpyHtoD,                      cuMemcpyHtoD_v2,                   (spx__CUdeviceptr dst, const void *src, size_t bytes)) \
  _(1, spx__CUresult, cuMemcpyDtoH,                      cuMemcpyDtoH_v2,                   (void *dst, spx__CUdeviceptr src, size_t bytes)) \
  _(1, spx__CUresult, cuMemcpyDtoD,                      cuMemcpyDtoD_v2,                   (spx__CUdeviceptr dst, spx__CUdeviceptr src, size_t bytes)) \
  _(1, spx__CUresult, cuMemcpyHtoDAsync,                 cuMemcpyHtoDAsync_v2,              (spx__CUdeviceptr dst, const void *src, size_t bytes, spx__CUstream s)) \
  _(1, spx__CUresult, cuMemcpyDtoHAsync,                 cuMemcpyDtoHAsync_v2,              (void *dst, spx__CUdeviceptr src, size_t bytes, spx__CUstream s)) \
  _(1, spx__CUresult, cuMemcpyDtoDAsync,                 cuMemcpyDtoDAsync_v2,              (spx__CUdeviceptr dst, spx__CUdeviceptr src, size_t bytes, spx__CUstream s)) \
  _(1, spx__CUresult, cuMemHostAlloc,                    cuMemHostAlloc,                    (void **p, size_t bytes, unsigned int flags)) \
  _(1, spx__CUresult, cuMemFreeHost,                     cuMemFreeHost,                     (void *p)) \
  _(0, spx__CUresult, cuMemHostRegister,                 cuMemHostRegister_v2,              (void *p, size_t bytes, unsigned int flags)) \
  _(0, spx__CUresult, cuMemHostUnregister,               cuMemHostUnregister,               (void *p)) \
  _(1, spx__CUresult, cuMemsetD8,                        cuMemsetD8_v2,                     (spx__CUdeviceptr p, unsigned char v, size_t n)) \
  _(1, spx__CUresult, cuMemsetD32,                       cuMemsetD32_v2,                    (spx__CUdeviceptr p, unsigned int v, size_t n)) \
  _(1, spx__CUresult, cuMemsetD32Async,                  cuMemsetD32Async,                  (spx__CUdeviceptr p, unsigned int v, size_t n, spx__CUstream s)) \
  _(1, spx__CUresult, cuStreamCreate,                    cuStreamCreate,                    (spx__CUstream *s, unsigned int flags)) \
  _(1, spx__CUresult, cuStreamDestroy,                   cuStreamDestroy_v2,                (spx__CUstream s)) \
  _(1, spx__CUresult, cuStreamSynchronize,               cuStreamSynchronize,               (spx__CUstream s)) \
  _(1, spx__CUresult, cuStreamWaitEvent,                 cuStreamWaitEvent,                 (spx__CUstream s, spx__CUevent e, unsigned int flags)) \
  _(1, spx__CUresult, cuEventCreate,                     cuEventCreate,                     (spx__CUevent *e, unsigned int flags)) \
  _(1, spx__CUresult, cuEventRecord,                     cuEventRecord,                     (spx__CUevent e, spx__CUstream s)) \
  _(1, spx__CUresult, cuEventSynchronize,                cuEventSynchronize,                (spx__CUevent e)) \
  _(1, spx__CUresult, cuEventQuery,                      cuEventQuery,                      (spx__CUevent e)) \
  _(1, spx__CUresult, cuEventElapsedTime,                cuEventElapsedTime,                (float *ms, spx__CUevent start, spx__CUevent end)) \
  _(1, spx__CUresult, cuEventDestroy,                    cuEventDestroy_v2,                 (spx__CUevent e)) \
  _(1, spx__CUresult, cuModuleLoadDataEx,                cuModuleLoadDataEx,                (spx__CUmodule *m, const void *image, unsigned int nopt, spx__CUjit_option *opt, void **optval)) \
  _(1, spx__CUresult, cuModuleUnload,                    cuModuleUnload,                    (spx__CUmodule m)) \
  _(1, spx__CUresult, cuModuleGetFunction,               cuModuleGetFunction,               (spx__CUfunction *f, spx__CUmodule m, const char *name)) \
  _(1, spx__CUresult, cuFuncGetAttribute,                cuFuncGetAttribute,                (int *v, spx__CUfunction_attribute a, spx__CUfunction f)) \
  _(1, spx__CUresult, cuFuncSetAttribute,                cuFuncSetAttribute,                (spx__CUfunction f, spx__CUfunction_attribute a, int v)) \
  _(0, spx__CUresult, cuLaunchHostFunc,                  cuLaunchHostFunc,                  (spx__CUstream s, void (*fn)(void *), void *data)) \
  _(0, spx__CUresult, cuStreamBeginCapture,              cuStreamBeginCapture_v2,           (spx__CUstream s, int mode)) \
  _(0, spx__CUresult, cuStreamEndCapture,                cuStreamEndCapture,                (spx__CUstream s, spx__CUgraph *g)) \
  _(0, spx__CUresult, cuGraphInstantiateWithFlags,       cuGraphInstantiateWithFlags,       (spx__CUgraphExec *e, spx__CUgraph g, unsigned long long flags)) \
  _(0, spx__CUresult, cuGraphLaunch,                     cuGraphLaunch,                     (spx__CUgraphExec e, spx__CUstream s)) \
  _(0, spx__CUresult, cuGraphExecDestroy,                cuGraphExecDestroy,                (spx__CUgraphExec e)) \
  _(0, spx__CUresult, cuGraphDestroy,                    cuGraphDestroy,                    (spx__CUgraph g)) \
  _(1, spx__CUresult, cuLaunchKernel,                    cuLaunchKernel,                    (spx__CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, spx__CUstream s, void **args, void **extra)) \
  _(0, spx__CUresult, cuOccupancyMaxPotentialBlockSize,  cuOccupancyMaxPotentialBlockSize,  (int *min_grid, int *block, spx__CUfunction f, spx__CUoccupancyB2DSize smem_of_block, size_t smem, int block_limit)) \
  _(0, spx__CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor, (int *blocks, spx__CUfunction f, int block, size_t smem))

#define SPX__NVRTC_SYMBOLS(_)                                                                       \
  /* req  ret               member                     exported                   params */        \
  _(1, spx__nvrtcResult, nvrtcVersion,              nvrtcVersion,              (int *major, int *minor)) \
  _(1, const char *,     nvrtcGetErrorString,       nvrtcGetErrorString,       (spx__nvrtcResult r)) \
  _(1, spx__nvrtcResult, nvrtcGetNumSupportedArchs, nvrtcGetNumSupportedArchs, (int *n)) \
  _(1, spx__nvrtcResult, nvrtcGetSupportedArchs,    nvrtcGetSupportedArchs,    (int *archs)) \
  _(1, spx__nvrtcResult, nvrtcCreateProgram,        nvrtcCreateProgram,        (spx__nvrtcProgram *p, const char *src, const char *name, int nheaders, const char *const *headers, const char *const *include_names)) \
  _(1, spx__nvrtcResult, nvrtcDestroyProgram,       nvrtcDestroyProgram,       (spx__nvrtcProgram *p)) \
  _(1, spx__nvrtcResult, nvrtcCompileProgram,       nvrtcCompileProgram,       (spx__nvrtcProgram p, int nopt, const char *const *opt)) \
  _(1, spx__nvrtcResult, nvrtcGetProgramLogSize,    nvrtcGetProgramLogSize,    (spx__nvrtcProgram p, size_t *size)) \
  _(1, spx__nvrtcResult, nvrtcGetProgramLog,        nvrtcGetProgramLog,        (spx__nvrtcProgram p, char *log)) \
  _(1, spx__nvrtcResult, nvrtcGetPTXSize,           nvrtcGetPTXSize,           (spx__nvrtcProgram p, size_t *size)) \
  _(1, spx__nvrtcResult, nvrtcGetPTX,               nvrtcGetPTX,               (spx__nvrtcProgram p, char *ptx)) \
  _(1, spx__nvrtcResult, nvrtcGetCUBINSize,         nvrtcGetCUBINSize,         (spx__nvrtcProgram p, size_t *size)) \
  _(1, spx__nvrtcResult, nvrtcGetCUBIN,             nvrtcGetCUBIN,             (spx__nvrtcProgram p, char *cubin)) \
  _(0, spx__nvrtcResult, nvrtcAddNameExpression,    nvrtcAddNameExpression,    (spx__nvrtcProgram p, const char *expr)) \
  _(0, spx__nvrtcResult, nvrtcGetLoweredName,       nvrtcGetLoweredName,       (spx__nvrtcProgram p, const char *expr, const char **lowered))

/* cusparseSpMV_preprocess came with CUDA 12.4; cusparseCreateSlicedEll and cusparseCreateBsr are
 * CUDA 12 additions too (SpMV on BSR only with CUDA 13), so all three are optional. The SpGEMM
 * reuse API (CUDA 11.3), cusparseSpMatGetSize, cusparseCsrSetPointers and csr2cscEx2 are AMG's
 * setup on the GPU (amg_gpu_impl.h): optional too, as without them the setup runs on the host
 * (the report names the one missing). CUDA 11 declared the Const descriptors plain; the ABI is
 * the same. */
#define SPX__CUSPARSE_SYMBOLS(_)                                                                    \
  /* req  ret                    member                    exported                  params */     \
  _(1, spx__cusparseStatus_t, cusparseCreate,           cusparseCreate,           (spx__cusparseHandle_t *h)) \
  _(1, spx__cusparseStatus_t, cusparseDestroy,          cusparseDestroy,          (spx__cusparseHandle_t h)) \
  _(1, spx__cusparseStatus_t, cusparseGetVersion,       cusparseGetVersion,       (spx__cusparseHandle_t h, int *version)) \
  _(1, spx__cusparseStatus_t, cusparseGetProperty,      cusparseGetProperty,      (spx__libraryPropertyType t, int *v)) \
  _(1, const char *,          cusparseGetErrorString,   cusparseGetErrorString,   (spx__cusparseStatus_t s)) \
  _(0, const char *,          cusparseGetErrorName,     cusparseGetErrorName,     (spx__cusparseStatus_t s)) \
  _(1, spx__cusparseStatus_t, cusparseSetStream,        cusparseSetStream,        (spx__cusparseHandle_t h, spx__CUstream s)) \
  _(1, spx__cusparseStatus_t, cusparseCreateCsr,        cusparseCreateCsr,        (spx__cusparseSpMatDescr_t *m, int64_t rows, int64_t cols, int64_t nnz, void *row_ptr, void *col_idx, void *val, spx__cusparseIndexType_t row_ptr_type, spx__cusparseIndexType_t col_idx_type, spx__cusparseIndexBase_t base, spx__cudaDataType val_type)) \
  _(1, spx__cusparseStatus_t, cusparseCreateCoo,        cusparseCreateCoo,        (spx__cusparseSpMatDescr_t *m, int64_t rows, int64_t cols, int64_t nnz, void *row_idx, void *col_idx, void *val, spx__cusparseIndexType_t idx_type, spx__cusparseIndexBase_t base, spx__cudaDataType val_type)) \
  _(0, spx__cusparseStatus_t, cusparseCreateSlicedEll,  cusparseCreateSlicedEll,  (spx__cusparseSpMatDescr_t *m, int64_t rows, int64_t cols, int64_t nnz, int64_t values_size, int64_t slice_size, void *slice_offsets, void *col_idx, void *val, spx__cusparseIndexType_t slice_offsets_type, spx__cusparseIndexType_t col_idx_type, spx__cusparseIndexBase_t base, spx__cudaDataType val_type)) \
  _(0, spx__cusparseStatus_t, cusparseCreateBsr,        cusparseCreateBsr,        (spx__cusparseSpMatDescr_t *m, int64_t brows, int64_t bcols, int64_t bnnz, int64_t row_block_dim, int64_t col_block_dim, void *row_ptr, void *col_idx, void *val, spx__cusparseIndexType_t row_ptr_type, spx__cusparseIndexType_t col_idx_type, spx__cusparseIndexBase_t base, spx__cudaDataType val_type, spx__cusparseOrder_t order)) \
  _(1, spx__cusparseStatus_t, cusparseDestroySpMat,     cusparseDestroySpMat,     (spx__cusparseConstSpMatDescr_t m)) \
  _(1, spx__cusparseStatus_t, cusparseCreateDnVec,      cusparseCreateDnVec,      (spx__cusparseDnVecDescr_t *v, int64_t n, void *val, spx__cudaDataType val_type)) \
  _(1, spx__cusparseStatus_t, cusparseDestroyDnVec,     cusparseDestroyDnVec,     (spx__cusparseConstDnVecDescr_t v)) \
  _(1, spx__cusparseStatus_t, cusparseDnVecSetValues,   cusparseDnVecSetValues,   (spx__cusparseDnVecDescr_t v, void *val)) \
  _(1, spx__cusparseStatus_t, cusparseSpMV_bufferSize,  cusparseSpMV_bufferSize,  (spx__cusparseHandle_t h, spx__cusparseOperation_t op, const void *alpha, spx__cusparseConstSpMatDescr_t a, spx__cusparseConstDnVecDescr_t x, const void *beta, spx__cusparseDnVecDescr_t y, spx__cudaDataType compute, spx__cusparseSpMVAlg_t alg, size_t *bytes)) \
  _(0, spx__cusparseStatus_t, cusparseSpMV_preprocess,  cusparseSpMV_preprocess,  (spx__cusparseHandle_t h, spx__cusparseOperation_t op, const void *alpha, spx__cusparseConstSpMatDescr_t a, spx__cusparseConstDnVecDescr_t x, const void *beta, spx__cusparseDnVecDescr_t y, spx__cudaDataType compute, spx__cusparseSpMVAlg_t alg, void *buffer)) \
  _(1, spx__cusparseStatus_t, cusparseSpMV,             cusparseSpMV,             (spx__cusparseHandle_t h, spx__cusparseOperation_t op, const void *alpha, spx__cusparseConstSpMatDescr_t a, spx__cusparseConstDnVecDescr_t x, const void *beta, spx__cusparseDnVecDescr_t y, spx__cudaDataType compute, spx__cusparseSpMVAlg_t alg, void *buffer)) \
  _(0, spx__cusparseStatus_t, cusparseSpMatGetSize,     cusparseSpMatGetSize,     (spx__cusparseConstSpMatDescr_t m, int64_t *rows, int64_t *cols, int64_t *nnz)) \
  _(0, spx__cusparseStatus_t, cusparseCsrSetPointers,   cusparseCsrSetPointers,   (spx__cusparseSpMatDescr_t m, void *row_ptr, void *col_idx, void *val)) \
  _(0, spx__cusparseStatus_t, cusparseSpGEMM_createDescr, cusparseSpGEMM_createDescr, (spx__cusparseSpGEMMDescr_t *d)) \
  _(0, spx__cusparseStatus_t, cusparseSpGEMM_destroyDescr, cusparseSpGEMM_destroyDescr, (spx__cusparseSpGEMMDescr_t d)) \
  _(0, spx__cusparseStatus_t, cusparseSpGEMMreuse_workEstimation, cusparseSpGEMMreuse_workEstimation, (spx__cusparseHandle_t h, spx__cusparseOperation_t opa, spx__cusparseOperation_t opb, spx__cusparseConstSpMatDescr_t a, spx__cusparseConstSpMatDescr_t b, spx__cusparseSpMatDescr_t c, spx__cusparseSpGEMMAlg_t alg, spx__cusparseSpGEMMDescr_t d, size_t *bytes1, void *buf1)) \
  _(0, spx__cusparseStatus_t, cusparseSpGEMMreuse_nnz,  cusparseSpGEMMreuse_nnz,  (spx__cusparseHandle_t h, spx__cusparseOperation_t opa, spx__cusparseOperation_t opb, spx__cusparseConstSpMatDescr_t a, spx__cusparseConstSpMatDescr_t b, spx__cusparseSpMatDescr_t c, spx__cusparseSpGEMMAlg_t alg, spx__cusparseSpGEMMDescr_t d, size_t *bytes2, void *buf2, size_t *bytes3, void *buf3, size_t *bytes4, void *buf4)) \
  _(0, spx__cusparseStatus_t, cusparseSpGEMMreuse_copy, cusparseSpGEMMreuse_copy, (spx__cusparseHandle_t h, spx__cusparseOperation_t opa, spx__cusparseOperation_t opb, spx__cusparseConstSpMatDescr_t a, spx__cusparseConstSpMatDescr_t b, spx__cusparseSpMatDescr_t c, spx__cusparseSpGEMMAlg_t alg, spx__cusparseSpGEMMDescr_t d, size_t *bytes5, void *buf5)) \
  _(0, spx__cusparseStatus_t, cusparseSpGEMMreuse_compute, cusparseSpGEMMreuse_compute, (spx__cusparseHandle_t h, spx__cusparseOperation_t opa, spx__cusparseOperation_t opb, const void *alpha, spx__cusparseConstSpMatDescr_t a, spx__cusparseConstSpMatDescr_t b, const void *beta, spx__cusparseSpMatDescr_t c, spx__cudaDataType compute, spx__cusparseSpGEMMAlg_t alg, spx__cusparseSpGEMMDescr_t d)) \
  _(0, spx__cusparseStatus_t, cusparseCsr2cscEx2_bufferSize, cusparseCsr2cscEx2_bufferSize, (spx__cusparseHandle_t h, int m, int n, int nnz, const void *csr_val, const int *csr_row_ptr, const int *csr_col_ind, void *csc_val, int *csc_col_ptr, int *csc_row_ind, spx__cudaDataType val_type, spx__cusparseAction_t copy_values, spx__cusparseIndexBase_t base, spx__cusparseCsr2CscAlg_t alg, size_t *bytes)) \
  _(0, spx__cusparseStatus_t, cusparseCsr2cscEx2,       cusparseCsr2cscEx2,       (spx__cusparseHandle_t h, int m, int n, int nnz, const void *csr_val, const int *csr_row_ptr, const int *csr_col_ind, void *csc_val, int *csc_col_ptr, int *csc_row_ind, spx__cudaDataType val_type, spx__cusparseAction_t copy_values, spx__cusparseIndexBase_t base, spx__cusparseCsr2CscAlg_t alg, void *buffer))

/* The function tables: one pointer per symbol, in list order. */
#define SPX__SYM_MEMBER(req, ret, member, exported, params) ret(*member) params;
typedef struct spx__cuda_api { SPX__CUDA_SYMBOLS(SPX__SYM_MEMBER) } spx__cuda_api;
typedef struct spx__nvrtc_api { SPX__NVRTC_SYMBOLS(SPX__SYM_MEMBER) } spx__nvrtc_api;
typedef struct spx__cusparse_api { SPX__CUSPARSE_SYMBOLS(SPX__SYM_MEMBER) } spx__cusparse_api;
#undef SPX__SYM_MEMBER

/* Symbol counts; the enums also reject a name listed twice (by member or by exported name). */
#define SPX__SYM_ENUM(req, ret, member, exported, params) SPX__SYM_##member,
#define SPX__SYM_EXPORT_ENUM(req, ret, member, exported, params) SPX__SYM_EXPORT_##exported,
enum { SPX__CUDA_SYMBOLS(SPX__SYM_ENUM) SPX__CUDA_SYMBOL_COUNT };
enum { SPX__NVRTC_SYMBOLS(SPX__SYM_ENUM) SPX__NVRTC_SYMBOL_COUNT };
enum { SPX__CUSPARSE_SYMBOLS(SPX__SYM_ENUM) SPX__CUSPARSE_SYMBOL_COUNT };
enum { SPX__CUDA_SYMBOLS(SPX__SYM_EXPORT_ENUM) SPX__CUDA_EXPORT_COUNT };
enum { SPX__NVRTC_SYMBOLS(SPX__SYM_EXPORT_ENUM) SPX__NVRTC_EXPORT_COUNT };
enum { SPX__CUSPARSE_SYMBOLS(SPX__SYM_EXPORT_ENUM) SPX__CUSPARSE_EXPORT_COUNT };
#undef SPX__SYM_ENUM
#undef SPX__SYM_EXPORT_ENUM

/* ---- Internal entry points (implemented in loader_impl.h) ------------------------------------ */
/* The tables, loading the library on first use (once, thread-safe); NULL when it cannot be used.
 * spx__cuda() is non-NULL only when the driver loaded and cuInit succeeded. */
const spx__cuda_api *spx__cuda(void);
const spx__nvrtc_api *spx__nvrtc(void);
const spx__cusparse_api *spx__cusparse(void);

/* Turn a result into a status with a message naming `what` and the library's error name and text.
 * Out-of-memory results map to SPX_DEVICE_OUT_OF_MEMORY; success returns SPX_OK and records
 * nothing. */
spx_status spx__cu_check(spx__CUresult r, const char *what);
spx_status spx__nvrtc_check(spx__nvrtcResult r, const char *what);
spx_status spx__cusparse_check(spx__cusparseStatus_t r, const char *what);
/* "CUDA_ERROR_OUT_OF_MEMORY", from the driver when it can, else from SPX__CU_ERRORS. */
const char *spx__cu_error_name(spx__CUresult r);

/* `SPX__CU_TRY(cu->cuMemAlloc(&p, n));` returns the failure status from the enclosing function. */
#define SPX__CU_TRY(call)                                                 \
  do {                                                                    \
    spx_status spx__try_s_ = spx__cu_check((call), #call);                \
    if (spx__try_s_ != SPX_OK) return spx__try_s_;                        \
  } while (0)

/* The arch the JIT compiles for on a device of compute capability major.minor ("sm_90"), memoized
 * (jit_key_impl.h). */
spx_status spx__jit_device_arch(int major, int minor, char arch[32]);
/* Where a kernel lives (jit_impl.h's spx__jit_where): what getting it would cost, for the planner. */
enum { SPX__JIT_NOWHERE = 0, SPX__JIT_HELD = 1, SPX__JIT_LOADED = 2 };
int spx__jit_where(spx_context *ctx, const char *template_name, const char *kernel_name, int ndefines,
                   const char *const *defines);

/* NVRTC: compile CUDA C++ `src` (named `name` in messages) with `opts`. cubin != 0 asks for a
 * CUBIN (the options must name a real sm_XY), else PTX (NUL-terminated). On success *image and
 * *size hold the binary (free with SPX_FREE). log, when non-NULL, receives the compile log
 * (SPX_FREE it; "" when empty) on success and failure. A compile error returns SPX_NVRTC with the
 * log in the message. */
spx_status spx__nvrtc_compile(const char *src, const char *name, int nopts, const char *const *opts,
                              int cubin, void **image, size_t *size, char **log);
/* The --gpu-architecture option for a device of compute capability major.minor: sm_XY (CUBIN,
 * *cubin = 1) when NVRTC supports it, else compute_XY of the newest supported arch below it (PTX
 * that the driver compiles, *cubin = 0); SPX_UNSUPPORTED when NVRTC knows nothing that old. */
spx_status spx__nvrtc_arch(int major, int minor, char *opt, size_t len, int *cubin);

/* A context as spx keeps it. Objects made in a context keep a pointer to it. */
struct spx_context {
  spx_backend backend;    /* SPX_BACKEND_HOST or SPX_BACKEND_CUDA, never AUTO */
  int device;             /* ordinal; -1 on the host */
  spx__CUdevice cu_device;
  spx__CUcontext cu_ctx;  /* the device's primary context, retained by this spx_context */
  spx__CUstream stream;   /* NULL: the legacy default stream */
  spx_device_info info;   /* device properties read at creation (library versions not filled) */
  struct spx__dcache *dcache; /* freed blocks kept for reuse, the small copies' pinned buffer (device_impl.h) */
};

/* Make ctx's CUDA context current on this thread for a run of driver calls, and restore the
 * caller's afterwards; spx never leaves its context current behind a caller's back. */
spx_status spx__ctx_push(const spx_context *ctx);
void spx__ctx_pop(const spx_context *ctx);

/* What the contexts (context_impl.h) take from the loader. Device `ordinal`'s properties (library
 * versions not filled) and its CUdevice. */
spx_status spx__device_props(const spx__cuda_api *cu, int ordinal, spx__CUdevice *dev, spx_device_info *o);
/* Free device memory, read inside the (retained) primary context `ctx`. */
spx_status spx__free_mem(const spx__cuda_api *cu, spx__CUcontext ctx, int64_t *out);
/* Tests only: how many times spx__free_mem asked the driver in this process. */
long long spx__free_mem_count(void);
/* The library versions every device_info carries (loading NVRTC and cuSPARSE if needed). */
void spx__lib_versions(spx_device_info *o);
/* SPX_OK when `ordinal` names a device here; else the failure, with `why` there is no GPU. */
spx_status spx__check_ordinal(int ordinal, char *why, size_t len);
/* Why there is no CUDA backend now ("" when there is one). */
void spx__no_gpu_reason(char *buf, size_t len);
/* The one-per-process notice that AUTO fell back to the host (counted: spx__loader_notice_count). */
void spx__fallback_notice(const char *why);

/* Tests only: forget everything the loader learned (libraries, driver state, the fallback notice)
 * and read the environment again (spx__config_reload), so that the next call loads again under the
 * current environment. Libraries stay mapped (CUDA
 * libraries start threads and must not be unloaded). Not safe while other threads use spx. */
void spx__loader_reset(void);
/* How many times the host-fallback notice was issued in this process (it should be once). */
int spx__loader_notice_count(void);
/* Tests only: how many spx_device_upload calls went through the pinned pool (device_impl.h). */
long long spx__h2d_count(void);
/* The smallest upload the pool takes (smaller copies go through the context's pinned buffer). */
size_t spx__h2d_min(void);
/* Tests: spx_device_upload on at most `want` of the pool's workers (0: all), as a plan's pattern
 * goes up beside its column sample. */
spx_status spx__h2d_upload_workers(spx_context *ctx, spx_devptr dst, const void *src, size_t bytes, int want);
/* A pooled upload under way (device_impl.h). */
typedef struct spx__h2d_async spx__h2d_async;
/* The upload, through the pool where it can be had, else the driver's way; ordered after the
 * context stream's queued work, as a copy on the stream would be. pending NULL: done on return.
 * Else the pool's workers may go on after the return: *pending, for spx__h2d_end before dst is
 * read or freed, is NULL when it is done. want: at most that many workers (0: all). */
spx_status spx__h2d_upload(spx_context *ctx, spx_devptr dst, const void *src, size_t bytes, int want,
                           spx__h2d_async **pending);
/* Waits for the upload (NULL: nothing pending) and frees its record: its data is on the device after. */
spx_status spx__h2d_end(spx__h2d_async *a);
/* Workers for an upload with host work of its own beside it (the plan's pattern, while a thread
 * samples its columns); 0 only when there is no pool. */
int spx__h2d_workers_beside(void);
/* Streams, events, async copies and page-locked host memory for code that schedules its own work
 * over streams (device_impl.h; the stencil). The context is current; failures are checked as
 * spx__cu_check does. Streams are non-blocking; events time only with timing != 0. */
spx_status spx__stream_new(const spx__cuda_api *cu, spx__CUstream *st);
void spx__stream_free(const spx__cuda_api *cu, spx__CUstream st);
void spx__stream_drain(const spx__cuda_api *cu, spx__CUstream st); /* its result ignored, no message kept */
spx_status spx__stream_sync(const spx__cuda_api *cu, spx__CUstream st, const char *what);
spx_status spx__stream_wait(const spx__cuda_api *cu, spx__CUstream st, spx__CUevent ev);
spx_status spx__event_new(const spx__cuda_api *cu, spx__CUevent *ev, int timing);
void spx__event_free(const spx__cuda_api *cu, spx__CUevent ev);
spx_status spx__event_record(const spx__cuda_api *cu, spx__CUevent ev, spx__CUstream st);
spx_status spx__event_sync(const spx__cuda_api *cu, spx__CUevent ev);
/* 1 when ev has completed, 0 while work queued before it has not (no wait); -1 on a failure (its
 * message as spx__cu_check gives it). */
int spx__event_done(const spx__cuda_api *cu, spx__CUevent ev);
spx_status spx__event_ms(const spx__cuda_api *cu, float *ms, spx__CUevent from, spx__CUevent to);
/* CUDA graphs of a stream's work: whether the driver has them; capture begins on st (this thread's
 * calls only: another thread's work goes on) and ends into an executable graph (*out NULL and a
 * status where the capture failed: something in it cannot be captured); launch and release. */
int spx__graph_usable(const spx__cuda_api *cu);
spx_status spx__graph_begin(const spx__cuda_api *cu, spx__CUstream st);
spx_status spx__graph_end(const spx__cuda_api *cu, spx__CUstream st, spx__CUgraphExec *out);
spx_status spx__graph_launch(const spx__cuda_api *cu, spx__CUgraphExec e, spx__CUstream st);
void spx__graph_free(const spx__cuda_api *cu, spx__CUgraphExec e);
spx_status spx__copy_h2d_async(const spx__cuda_api *cu, spx_devptr dst, const void *src, size_t bytes,
                               spx__CUstream st);
spx_status spx__copy_d2h_async(const spx__cuda_api *cu, void *dst, spx_devptr src, size_t bytes, spx__CUstream st);
spx_status spx__copy_d2d_async(const spx__cuda_api *cu, spx_devptr dst, spx_devptr src, size_t bytes,
                               spx__CUstream st);
/* Page-locked host memory (cuMemHostAlloc; `what` names it in a failure), and its release. */
spx_status spx__host_alloc(const spx__cuda_api *cu, void **out, size_t bytes, const char *what);
void spx__host_free(const spx__cuda_api *cu, void *p);
/* The link's bandwidth to and from pinned host memory (spx_stencil_pcie_bandwidth's measure). */
spx_status spx__link_bandwidth(spx_context *ctx, size_t bytes, int reps, double *h2d_gbs, double *d2h_gbs,
                               double *duplex_gbs);
/* The upload pool's users (device_impl.h): each CUDA spx_context counts on its device from
 * creation to destruction, and the last one's destruction lets the device's pool go (its pinned
 * buffers, streams and events), so that nothing registered outlives the contexts. */
void spx__h2d_retain(int device);
void spx__h2d_release(const spx_context *ctx);
/* The context's cache of freed device blocks and its small copies' pinned buffer (device_impl.h):
 * made with the context, emptied and let go before it releases its primary context. */
spx_status spx__dcache_create(spx_context *ctx);
void spx__dcache_destroy(spx_context *ctx);
/* Tests: cache hits so far, blocks and bytes held now. */
void spx__dcache_stats(const spx_context *ctx, long long *hits, int *blocks, size_t *bytes);
size_t spx__dcache_bytes(const spx_context *ctx);
/* The device's free memory as last read (the context's creation, spx_context_device_info): set
 * with the driver's figure, read back with the blocks the cache holds now, which are spx's to use
 * (0: never read). A reading, not the present: a caller that may come near it reads the driver
 * again. */
void spx__free_seen_set(const spx_context *ctx, int64_t raw);
int64_t spx__free_seen(const spx_context *ctx);
/* Tests: copies that went through the context's pinned buffer (device_impl.h). */
long long spx__pin_count(const spx_context *ctx);

#endif /* SPX_INTERNAL_CUDA_TYPES_H */
