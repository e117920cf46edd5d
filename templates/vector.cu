/* SPDX-License-Identifier: BSD-3-Clause */
/* vector.cu: element-wise vector kernels (BLAS-1 style) and a bandwidth-measuring copy.
 *
 * MAPPING  one thread per element, grid-stride loop: thread t of the grid handles elements
 *          t, t + G, t + 2G, ... (G = gridDim.x * blockDim.x), so any grid size is correct and
 *          a grid of a few waves per SM is enough. Consecutive threads touch consecutive
 *          elements (coalesced). blockDim.x must not exceed SPX_BLOCK (launch bound).
 * BYTES    per element, with s = sizeof(SPX_VALUE_T):
 *            spx_axpby        3s  (read x, read y, write y); 2s when b == 0 (y is not read)
 *            spx_scale        2s  (read y, write y)
 *            spx_fill         1s  (write y)
 *            spx_copy_stream  2s  (read x, write y): the STREAM "copy" kernel, whose
 *                                 achieved bandwidth is the roof the SpMV kernels are held to
 *
 * CONSTANTS (pass as -D options; each has a default so that nvcc compiles the file alone)
 *   SPX_VALUE_T   element type: double or float                    (default double)
 *   SPX_BLOCK     the largest block size the kernels are built for  (default 256)
 *
 * Compile alone: nvcc -c -DSPX_VALUE_T=float templates/vector.cu */

#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif

typedef SPX_VALUE_T spx_value_t;

/* The grid-stride loop header shared by every kernel; 64-bit indices (n may exceed 2^31). */
#define SPX_FOR_EACH(i, n)                                                              \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);          \
       i += (long long)gridDim.x * blockDim.x)

/* y = a*x + b*y. With b == 0, y is written without being read (BLAS semantics: NaN or
 * garbage in y does not leak into the result). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_axpby(long long n, spx_value_t a, const spx_value_t *__restrict__ x, spx_value_t b,
          spx_value_t *__restrict__ y) {
  if (b == (spx_value_t)0) {
    SPX_FOR_EACH(i, n) y[i] = a * x[i];
  } else {
    SPX_FOR_EACH(i, n) y[i] = a * x[i] + b * y[i];
  }
}

/* y = a*y. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_scale(long long n, spx_value_t a, spx_value_t *__restrict__ y) {
  SPX_FOR_EACH(i, n) y[i] *= a;
}

/* y = v. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_fill(long long n, spx_value_t v, spx_value_t *__restrict__ y) {
  SPX_FOR_EACH(i, n) y[i] = v;
}

/* y = x, through the read-only data path (__ldg): measures achievable streaming bandwidth. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_copy_stream(long long n, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  SPX_FOR_EACH(i, n) y[i] = __ldg(x + i);
}
