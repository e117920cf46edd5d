/* SPDX-License-Identifier: BSD-3-Clause */
/* amg.cu: the vector kernels of the AMG V-cycle (spx/amg.h): the smoothers' updates and a dot
 * product. The SpMVs (residual, restriction, prolongation) are the levels' plans.
 *
 * MAPPING  one thread per element, grid-stride loop (thread t of a grid of G blocks handles t,
 *          t + G*SPX_BLOCK, ...), launched with exactly SPX_BLOCK threads per block.
 *          spx_amg_gs and spx_amg_put: one thread per row of one color. The color's rows are stored
 *          in slices of 32 (row k of the color is lane k % 32 of slice k / 32), each slice column
 *          major and as wide as its longest row (papers/003 section 3.2: rows regrouped per color so
 *          that the lanes of a warp read consecutive addresses); perm[k] is the row in the level.
 *          spx_amg_dot: each block leaves its sum in part[block] (tree in shared memory, fixed
 *          order); the host adds the G partials in order. Same device, same grid: same bits.
 * BYTES    per element, s = sizeof(SPX_VALUE_T), dinv in double (8):
 *            spx_amg_jacobi   2s + 8 (read r, write x; +s when x is kept)
 *            spx_amg_cheb     4s + 8 (read r, d, x; write d, x)
 *            spx_amg_gs       per row: 4 + its slots x (4 + s, and s gathered) + 8 + 3s; per slice 8
 *            spx_amg_put      2s + 4
 *            spx_amg_dot      2s
 *
 * CONSTANTS (pass as -D options; each has a default so that nvcc compiles the file alone)
 *   SPX_VALUE_T   element type of the vectors and matrix values   (default double)
 *   SPX_BLOCK     threads per block, a power of two, exactly the launch's (default 256)
 *
 * Compile alone: nvcc -c templates/amg.cu */

#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif

typedef SPX_VALUE_T spx_value_t;

#define SPX_FOR_EACH(i, n)                                                              \
  for (long long i = (long long)blockIdx.x * SPX_BLOCK + threadIdx.x; i < (n);           \
       i += (long long)gridDim.x * SPX_BLOCK)

/* x = w dinv r (keep == 0: x is not read) or x += w dinv r (keep == 1). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amg_jacobi(long long n, double w, const double *__restrict__ dinv, const spx_value_t *__restrict__ r, int keep,
               spx_value_t *__restrict__ x) {
  SPX_FOR_EACH(i, n) {
    double v = w * dinv[i] * (double)r[i];
    x[i] = (spx_value_t)(keep ? (double)x[i] + v : v);
  }
}

/* A Chebyshev step: d = a d + c dinv r (a == 0: d is not read), x += d. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amg_cheb(long long n, double a, double c, const double *__restrict__ dinv, const spx_value_t *__restrict__ r,
             spx_value_t *__restrict__ d, spx_value_t *__restrict__ x) {
  SPX_FOR_EACH(i, n) {
    double v = c * dinv[i] * (double)r[i];
    if (a != 0.0) v += a * (double)d[i];
    d[i] = (spx_value_t)v;
    x[i] = (spx_value_t)((double)x[i] + v);
  }
}

/* Gauss-Seidel on the count rows of one color: row perm[k] gets x + w dinv (b - A x). Its entries
 * are slots base + 32 j + k % 32, j < width, of slice k / 32 (base = sp[k / 32], width = (sp[k / 32
 * + 1] - base) / 32), in column order; a shorter row's padding is (its own column, 0), which adds
 * an exact 0. t == NULL (strict coloring: the rows of a color do not couple) writes x in place;
 * else the new values go to t[k] and spx_amg_put stores them after every row of the color has read
 * x (relaxed coloring: same-color couplings read the old values). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amg_gs(long long count, const long long *__restrict__ sp, const int *__restrict__ col,
           const spx_value_t *__restrict__ val, const int *__restrict__ perm, const double *__restrict__ dinv, double w,
           const spx_value_t *__restrict__ b, spx_value_t *x, spx_value_t *__restrict__ t) {
  SPX_FOR_EACH(k, count) {
    const long long base = sp[k >> 5], width = (sp[(k >> 5) + 1] - base) >> 5;
    const int row = perm[k];
    double s = (double)b[row];
    for (long long j = 0, q = base + (k & 31); j < width; j++, q += 32) s -= (double)val[q] * (double)x[col[q]];
    double v = (double)x[row] + w * dinv[row] * s;
    if (t) t[k] = (spx_value_t)v;
    else x[row] = (spx_value_t)v;
  }
}

/* x[perm[k]] = t[k] for the count rows of one color. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amg_put(long long count, const int *__restrict__ perm, const spx_value_t *__restrict__ t,
            spx_value_t *__restrict__ x) {
  SPX_FOR_EACH(k, count) x[perm[k]] = t[k];
}

/* part[block] = this block's share of a.b, in double. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amg_dot(long long n, const spx_value_t *__restrict__ a, const spx_value_t *__restrict__ b,
            double *__restrict__ part) {
  __shared__ double sh[SPX_BLOCK];
  double s = 0;
  SPX_FOR_EACH(i, n) s += (double)a[i] * (double)b[i];
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int h = SPX_BLOCK / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}
