/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/cuda.h: sparse matrices on the GPU. A converted matrix (spx_fmt) is uploaded once, array by
 * array as its descriptor lists them, and multiplied by a kernel that NVRTC compiled for its shape
 * (the row width K of ELL, the slice height C of SELL, the threads per row of CSR ...).
 *
 *   spx_dmatrix *d;
 *   spx_dmatrix_create(ctx, m, NULL, &d);               upload + JIT (cached)
 *   spx_dmatrix_spmv(d, 1.0, x, 0.0, y);                 y = alpha*A*x + beta*y on ctx's stream
 *
 * x and y are device pointers (spx_devptr, or any cudaMalloc'd memory) of the matrix's dtype, of
 * length ncols and nrows. Each format names its kernel through a spec function (in-tree formats
 * have theirs; spx_format_set_kernel adds one for a registered format). When the specialized
 * kernel does not compile, spx warns, gives the NVRTC log, and uses the format's generic kernel. */
#ifndef SPX_CUDA_H
#define SPX_CUDA_H

#include "device.h"
#include "formats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spx_dmatrix_options {
  int threads_per_row; /* CSR-like kernels: 1..32 (power of two); 0 = from the mean row length */
  int block;           /* threads per block; 0 = the format's choice */
  int generic;         /* 1: the unspecialized kernel (shape read at run time), for comparison */
  int load_balance;    /* CSR: 1 = the merge-path kernel, -1 = never it, 0 = when rows are skewed */
  int stream;          /* CSR: 1 = the block-streaming kernel (short irregular rows), -1 = never it,
                        * 0 = the spec's choice */
  int plain_loads;     /* 1: matrix arrays read with plain loads instead of cache-streaming ones
                        * (the templates' SPX_LDS), for comparison */
  int exact_shape;     /* 1: kernels specialized for the exact shape constants (ELL's K, SELL's
                        * widest slice, ...) instead of their buckets, for comparison */
  int tiered;          /* 1: never wait for NVRTC at creation. When the JIT caches lack the
                        * specialized kernel, it compiles on a background thread while SpMVs run
                        * the format's generic kernel if the caches hold that (else the first SpMV
                        * waits for the compile; the generic kernel is compiled after, for the next
                        * new shape); the first SpMV after the compile ended switches (results may
                        * differ in rounding). spx_dmatrix_wait ends it early. 2: the same without
                        * the generic kernel (the caller has a stand-in of its own). */
  int split;           /* CSR's vector kernel: 1 = rows longer than 8 steps of their lanes summed by
                        * the whole block (small matrices with a few long rows); 0 = where the host
                        * rows say so (spx_csr_kernel_options sets it for a device-only CSR) */
} spx_dmatrix_options;

/* One kernel launch of an SpMV. Every kernel of a format takes the same arguments: the format's
 * scalars and arrays in descriptor order, then (double alpha, double beta, const T *x, T *y). */
#define SPX_KERNEL_DEFINES_MAX 12
typedef struct spx_kernel_launch {
  char template_name[32];   /* templates/<name>.cu, or a template added by spx_jit_template_add */
  char kernel[64];          /* extern "C" __global__ name */
  int ndefines;             /* specialization constants, "SPX_K=27" */
  int nshape;               /* the first nshape defines are the shape: dropped for the generic kernel */
  char defines[SPX_KERNEL_DEFINES_MAX][48];
  unsigned grid[3], block[3], shmem;
} spx_kernel_launch;

typedef struct spx_kernel_plan {
  int nlaunch;              /* launches run in order on the stream (e.g. scale y, then atomics) */
  spx_kernel_launch launch[3];
  char summary[160];        /* human-readable choice, e.g. "ell K=27 unrolled, 256 threads" */
} spx_kernel_plan;

/* Fills plan for matrix m on device dev. SPX_VALUE_T is added by spx; the spec adds the rest. */
typedef spx_status (*spx_kernel_spec_fn)(const spx_fmt *m, const spx_dmatrix_options *opt,
                                         const spx_device_info *dev, spx_kernel_plan *plan);
/* Gives a (registered) format its GPU kernel; in-tree formats come with theirs. The spec may name
 * a template the program added (spx_jit_template_add, spx/jit.h). With a kernel the format is a
 * candidate of the tuner, which prices it by the model spx_format_set_model gives (spx/plan.h). */
spx_status spx_format_set_kernel(spx_format f, spx_kernel_spec_fn fn);
/* 1 when format f has a GPU kernel. */
int spx_format_has_kernel(spx_format f);

typedef struct spx_dmatrix spx_dmatrix;

/* Uploads m to ctx's device and prepares its kernel(s). SPX_DEVICE_OUT_OF_MEMORY when it does not
 * fit (nothing is left allocated); SPX_UNSUPPORTED for a format without a kernel. m may be
 * destroyed afterwards. */
spx_status spx_dmatrix_create(spx_context *ctx, const spx_fmt *m, const spx_dmatrix_options *opt,
                              spx_dmatrix **out);
/* A CSR that already lives on the device (caller-owned cudaMalloc'd arrays: int32 row_ptr of
 * nrows+1, int32 col_idx and values of nnz), used in place: nothing is copied, and
 * spx_dmatrix_destroy leaves the arrays to their owner. */
spx_status spx_dmatrix_wrap_csr(spx_context *ctx, int64_t nrows, int64_t ncols, int64_t nnz,
                                spx_devptr row_ptr, spx_devptr col_idx, spx_devptr val, spx_dtype dtype,
                                const spx_dmatrix_options *opt, spx_dmatrix **out);
/* A CSR that lives on the device, in the caller's memory (cudaMalloc'd, or spx_device_alloc'd on
 * the context that uses it): what spx_plan_create_device (spx/plan.h) takes. 32-bit row pointers,
 * so nnz < 2^31; every pointer non-zero, also where nnz is 0. */
typedef struct spx_dcsr {
  int64_t nrows, ncols, nnz; /* each < 2^31 */
  spx_dtype dtype;           /* the values' type: SPX_DOUBLE or SPX_FLOAT */
  spx_devptr row_ptr;        /* nrows + 1 int32 offsets: row_ptr[0] = 0, row_ptr[nrows] = nnz */
  spx_devptr col_idx;        /* nnz int32 columns, strictly increasing within a row, in [0, ncols) */
  spx_devptr val;            /* nnz values of dtype */
} spx_dcsr;
/* The options under which spx_dmatrix_wrap_csr runs the CSR kernel spx's rule picks for a host CSR
 * (CSR-stream for short rows, merge path for skewed ones, else the vector kernel with lanes per row
 * from the mean), from the row-length histogram alone (row_hist[len]: rows of length len, 0 ..
 * row_max), for a CSR that lives on the device only. Matrices under 100000 nonzeros get the vector
 * kernel, widened (and split) where a few long rows would hold it up, as the host rule does.
 * SPX_INVALID_ARGUMENT when the histogram does not sum to nrows rows and nnz nonzeros. */
spx_status spx_csr_kernel_options(int64_t nrows, int64_t nnz, const int64_t *row_hist, int64_t row_max,
                                  spx_dmatrix_options *out);
/* A host CSR (valid, spx_csr_validate) converted to format f for ctx's device: SELL, SELL16, SDIA,
 * BSR (r <= 32), ELL, ELL-R and JDS are converted on the device (the CSR is uploaded once and the
 * arrays written by kernels, the same arrays as spx_fmt_from_csr gives, declines and errors
 * included); other formats on the host, then uploaded. SPX_DEVICE_CONVERT=0 in the environment
 * forces the host path. */
spx_status spx_dmatrix_convert(spx_context *ctx, const spx_csr *a, spx_format f, const spx_format_params *params,
                               const spx_dmatrix_options *opt, spx_dmatrix **out);
/* y = alpha*A*x + beta*y, queued on the context's stream (asynchronous). beta == 0 does not read y. */
spx_status spx_dmatrix_spmv(spx_dmatrix *d, double alpha, spx_devptr x, double beta, spx_devptr y);
void spx_dmatrix_destroy(spx_dmatrix *d);
/* A tiered dmatrix: 1 while its specialized kernel is still to be switched to (compiling, or
 * compiled and not yet bound), else 0. */
int spx_dmatrix_compiling(const spx_dmatrix *d);
/* Removes d's kernels from the JIT's memory and disk caches (spx_jit_forget): `which` is
 * SPX_KERNELS_SPECIALIZED, SPX_KERNELS_GENERIC or both or'ed. With both, the next matrix of this
 * shape and format starts as on a machine that never ran it. For benchmarks and tests of a cold
 * start; d must not run again, nor any other matrix of the same kernels. */
#define SPX_KERNELS_SPECIALIZED 1
#define SPX_KERNELS_GENERIC 2
spx_status spx_dmatrix_forget_kernels(const spx_dmatrix *d, int which);
/* Waits for a tiered dmatrix's compile and switches to the specialized kernel now (no-op otherwise);
 * a failed compile keeps the generic kernel, with a warning. */
spx_status spx_dmatrix_wait(spx_dmatrix *d);

/* Device bytes of the matrix arrays. */
int64_t spx_dmatrix_bytes(const spx_dmatrix *d);
/* What runs: "ell: spx_ell_spmv SPX_K=27, 256 threads" (and "(generic fallback)" if it fell back). */
const char *spx_dmatrix_describe(const spx_dmatrix *d);
/* Milliseconds spent getting the kernels (compile or cache), and 1 if any was compiled now. */
double spx_dmatrix_jit_ms(const spx_dmatrix *d, int *compiled);
spx_format spx_dmatrix_format(const spx_dmatrix *d);
spx_dtype spx_dmatrix_dtype(const spx_dmatrix *d);

/* The kernels spx_dmatrix_create would launch for m (templates, specialization constants, launch
 * shape, summary), decided on the host: no GPU needed. */
spx_status spx_dmatrix_plan(const spx_fmt *m, const spx_dmatrix_options *opt, spx_kernel_plan *plan);

/* Compiles (or finds cached) the kernels spx_dmatrix_create would use for m, without a GPU, for
 * architecture arch ("sm_90"; NULL: device 0's): how a build machine pre-fills the JIT disk cache
 * for GPU machines (`spx jit --warm FILE --arch sm_90`). Counts what was compiled and what was
 * already cached. */
spx_status spx_dmatrix_warm(const spx_fmt *m, const spx_dmatrix_options *opt, const char *arch,
                            int *compiled, int *cached);

/* The device's achievable streaming bandwidth: a copy kernel (templates/vector.cu) moving `bytes`
 * bytes one way, best of `reps` runs after a warm-up, counting bytes read plus bytes written. This
 * is the roof that spx measures its SpMV kernels against, in the same run. */
spx_status spx_copy_bandwidth(spx_context *ctx, size_t bytes, int reps, double *gbs);

#ifdef __cplusplus
}
#endif
#endif /* SPX_CUDA_H */
