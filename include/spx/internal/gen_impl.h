/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/gen.h. */
#include "common.h"
#include "../gen.h"

#if defined(_OPENMP)
#define SPX__GEN_OMP_FOR _Pragma("omp parallel for schedule(dynamic, 64)")
#else
#define SPX__GEN_OMP_FOR
#endif

static void spx__setv(spx_csr *a, int64_t k, double v) {
  if (a->dtype == SPX_DOUBLE) a->val.d[k] = v;
  else a->val.f[k] = (float)v;
}

static spx_status spx__gen_dtype(const char *fn, spx_dtype dtype) {
  if (dtype != SPX_DOUBLE && dtype != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: unknown dtype %d (use SPX_DOUBLE or SPX_FLOAT)", fn, (int)dtype);
  return SPX_OK;
}

/* Checks 1 <= nx, ny, nz and that mult*nx*ny*nz fits the 32-bit index range. */
static spx_status spx__gen_grid(const char *fn, int64_t nx, int64_t ny, int64_t nz, int64_t mult) {
  if (nx < 1 || ny < 1 || nz < 1)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: grid %lld x %lld x %lld must be at least 1 in every direction",
                     fn, (long long)nx, (long long)ny, (long long)nz);
  if ((double)nx * (double)ny * (double)nz * (double)mult > (double)INT32_MAX)
    return spx__fail(SPX_RANGE, "%s: grid %lld x %lld x %lld gives more than 2^31-1 rows", fn, (long long)nx,
                     (long long)ny, (long long)nz);
  return SPX_OK;
}

/* ---- Poisson ------------------------------------------------------------------------------- */

spx_status spx_gen_poisson3d(int64_t nx, int64_t ny, int64_t nz, int points, spx_dtype dtype, spx_csr **out) {
  static const char fn[] = "spx_gen_poisson3d";
  int64_t n, nnz, i, line;
  spx_csr *a;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (points != 7 && points != 27)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: points = %d (use 7 or 27)", fn, points);
  if ((s = spx__gen_dtype(fn, dtype)) || (s = spx__gen_grid(fn, nx, ny, nz, 1))) return s;
  n = nx * ny * nz;
  /* Each missing neighbour pair costs two entries; the 27-point pattern is a product of 1-D ones. */
  nnz = points == 7 ? n + 2 * ((nx - 1) * ny * nz + nx * (ny - 1) * nz + nx * ny * (nz - 1))
                    : (3 * nx - 2) * (3 * ny - 2) * (3 * nz - 2);
  if ((s = spx_csr_create(n, n, nnz, dtype, &a))) return s;
  for (line = 0; line < ny * nz; line++) {
    int64_t y = line % ny, z = line / ny, x;
    for (x = 0; x < nx; x++) {
      int64_t cnt;
      if (points == 7) cnt = 1 + (x > 0) + (x < nx - 1) + (y > 0) + (y < ny - 1) + (z > 0) + (z < nz - 1);
      else cnt = (1 + (x > 0) + (x < nx - 1)) * (1 + (y > 0) + (y < ny - 1)) * (1 + (z > 0) + (z < nz - 1));
      a->row_ptr[line * nx + x + 1] = cnt;
    }
  }
  for (i = 0; i < n; i++) a->row_ptr[i + 1] += a->row_ptr[i];
  if (a->row_ptr[n] != nnz) {
    long long got = (long long)a->row_ptr[n];
    spx_csr_destroy(a);
    return spx__fail(SPX_INTERNAL, "%s: row pointers sum to %lld, expected %lld", fn, got, (long long)nnz);
  }
  SPX__GEN_OMP_FOR
  for (line = 0; line < ny * nz; line++) {
    int64_t y = line % ny, z = line / ny, x, sxy = nx * ny;
    for (x = 0; x < nx; x++) {
      int64_t r = line * nx + x, k = a->row_ptr[r];
      if (points == 7) {
        /* Neighbours in ascending column order: -z, -y, -x, self, +x, +y, +z. */
        if (z > 0) { a->col_idx[k] = (int32_t)(r - sxy); spx__setv(a, k++, -1); }
        if (y > 0) { a->col_idx[k] = (int32_t)(r - nx); spx__setv(a, k++, -1); }
        if (x > 0) { a->col_idx[k] = (int32_t)(r - 1); spx__setv(a, k++, -1); }
        a->col_idx[k] = (int32_t)r; spx__setv(a, k++, 6);
        if (x < nx - 1) { a->col_idx[k] = (int32_t)(r + 1); spx__setv(a, k++, -1); }
        if (y < ny - 1) { a->col_idx[k] = (int32_t)(r + nx); spx__setv(a, k++, -1); }
        if (z < nz - 1) { a->col_idx[k] = (int32_t)(r + sxy); spx__setv(a, k++, -1); }
      } else {
        int64_t dx, dy, dz;
        for (dz = -1; dz <= 1; dz++)
          for (dy = -1; dy <= 1; dy++)
            for (dx = -1; dx <= 1; dx++) {
              if (x + dx < 0 || x + dx >= nx || y + dy < 0 || y + dy >= ny || z + dz < 0 || z + dz >= nz) continue;
              a->col_idx[k] = (int32_t)(r + dx + nx * dy + sxy * dz);
              spx__setv(a, k++, (dx | dy | dz) ? -1 : 26);
            }
      }
    }
  }
  *out = a;
  return SPX_OK;
}

/* The 7-point pattern, then each row's values by direction: the pattern's row order (-z, -y, -x,
 * self, +x, +y, +z, each where the neighbour exists) tells which entry is which, whatever the
 * grid's extents (with nx = 1 the column r + 1 is a y neighbour, so columns alone would not). */
spx_status spx_gen_poisson3d_aniso(int64_t nx, int64_t ny, int64_t nz, double cx, double cy, double cz,
                                   spx_dtype dtype, spx_csr **out) {
  static const char fn[] = "spx_gen_poisson3d_aniso";
  int64_t line;
  spx_csr *a;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (!(cx > 0 && cy > 0 && cz > 0) || cx - cx != 0 || cy - cy != 0 || cz - cz != 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: coefficients %g, %g, %g must be positive and finite (SPD)", fn, cx,
                     cy, cz);
  if ((s = spx_gen_poisson3d(nx, ny, nz, 7, dtype, &a))) return spx__wrap(s, "%s", fn);
  SPX__GEN_OMP_FOR
  for (line = 0; line < ny * nz; line++) {
    int64_t y = line % ny, z = line / ny, x;
    for (x = 0; x < nx; x++) {
      int64_t k = a->row_ptr[line * nx + x];
      if (z > 0) spx__setv(a, k++, -cz);
      if (y > 0) spx__setv(a, k++, -cy);
      if (x > 0) spx__setv(a, k++, -cx);
      spx__setv(a, k++, 2 * (cx + cy + cz));
      if (x < nx - 1) spx__setv(a, k++, -cx);
      if (y < ny - 1) spx__setv(a, k++, -cy);
      if (z < nz - 1) spx__setv(a, k, -cz);
    }
  }
  *out = a;
  return SPX_OK;
}

/* ---- Elasticity ---------------------------------------------------------------------------- */

/* Stiffness of one unit-cube Q1 element, 24 x 24, local node a = ax + 2*ay + 4*az (ax, ay, az in
 * {0,1}), unknown 3*a + c. Entry (3a+c, 3b+d) = integral of
 *   lambda d_c N_a d_d N_b + mu d_d N_a d_c N_b + mu delta_cd grad N_a . grad N_b
 * (the Voigt B^T D B written out), by 2x2x2 Gauss (exact for these polynomials on a cube).
 * Averaging with the transpose makes it bitwise symmetric, so the assembly is too. */
static void spx__hex_stiffness(double E, double nu, double ke[24][24]) {
  const double lam = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
  const double gp = 0.57735026918962576451; /* 1/sqrt(3) */
  int g, a, b, c, d;
  memset(ke, 0, 24 * 24 * sizeof(double));
  for (g = 0; g < 8; g++) {
    double xi[3], grad[8][3];
    xi[0] = g & 1 ? gp : -gp; xi[1] = g & 2 ? gp : -gp; xi[2] = g & 4 ? gp : -gp;
    for (a = 0; a < 8; a++) {
      double s[3], f[3];
      for (c = 0; c < 3; c++) { s[c] = (a >> c) & 1 ? 1 : -1; f[c] = 1 + s[c] * xi[c]; }
      /* N_a = f0 f1 f2 / 8 on [-1,1]^3; x = (xi+1)/2 doubles each derivative. */
      grad[a][0] = 0.25 * s[0] * f[1] * f[2];
      grad[a][1] = 0.25 * f[0] * s[1] * f[2];
      grad[a][2] = 0.25 * f[0] * f[1] * s[2];
    }
    for (a = 0; a < 8; a++)
      for (b = 0; b < 8; b++) {
        double dot = grad[a][0] * grad[b][0] + grad[a][1] * grad[b][1] + grad[a][2] * grad[b][2];
        for (c = 0; c < 3; c++)
          for (d = 0; d < 3; d++) /* weight 1, det J = 1/8 */
            ke[3 * a + c][3 * b + d] += 0.125 * (lam * grad[a][c] * grad[b][d] + mu * grad[a][d] * grad[b][c] +
                                                 (c == d ? mu * dot : 0));
      }
  }
  for (a = 0; a < 24; a++)
    for (b = 0; b < a; b++) ke[a][b] = ke[b][a] = 0.5 * (ke[a][b] + ke[b][a]);
}

spx_status spx_gen_elasticity3d(int64_t nx, int64_t ny, int64_t nz, spx_dtype dtype, spx_csr **out) {
  static const char fn[] = "spx_gen_elasticity3d";
  double ke[24][24];
  int64_t nfree, n, nnz, f, i;
  spx_csr *a;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if ((s = spx__gen_dtype(fn, dtype)) || (s = spx__gen_grid(fn, nx, ny, nz, 1))) return s;
  if (3.0 * (double)nx * (double)(ny + 1) * (double)(nz + 1) > (double)INT32_MAX)
    return spx__fail(SPX_RANGE, "%s: %lld x %lld x %lld elements give 3*%lld*%lld*%lld unknowns, more than 2^31-1",
                     fn, (long long)nx, (long long)ny, (long long)nz, (long long)nx, (long long)ny + 1,
                     (long long)nz + 1);
  nfree = nx * (ny + 1) * (nz + 1);
  n = 3 * nfree;
  /* Per direction the neighbour pairs number 3m-2 over m nodes (free x nodes: m = nx). */
  nnz = 9 * (3 * nx - 2) * (3 * ny + 1) * (3 * nz + 1);
  if ((s = spx_csr_create(n, n, nnz, dtype, &a))) return s;
  spx__hex_stiffness(1.0, 0.3, ke);
  for (f = 0; f < nfree; f++) {
    int64_t ix = f % nx + 1, iy = f / nx % (ny + 1), iz = f / nx / (ny + 1);
    int64_t len = 3 * (1 + (ix > 1) + (ix < nx)) * (1 + (iy > 0) + (iy < ny)) * (1 + (iz > 0) + (iz < nz));
    a->row_ptr[3 * f + 1] = a->row_ptr[3 * f + 2] = a->row_ptr[3 * f + 3] = len;
  }
  for (i = 0; i < n; i++) a->row_ptr[i + 1] += a->row_ptr[i];
  if (a->row_ptr[n] != nnz) {
    long long got = (long long)a->row_ptr[n];
    spx_csr_destroy(a);
    return spx__fail(SPX_INTERNAL, "%s: row pointers sum to %lld, expected %lld", fn, got, (long long)nnz);
  }
  /* Gather assembly, one node (3 rows) at a time: no atomics, and each entry sums its elements in
   * ascending element order, the same order for (I,J) as for (J,I). */
  SPX__GEN_OMP_FOR
  for (f = 0; f < nfree; f++) {
    int64_t ix = f % nx + 1, iy = f / nx % (ny + 1), iz = f / nx / (ny + 1);
    int64_t x0 = ix > 1 ? ix - 1 : 1, x1 = ix < nx ? ix + 1 : nx, y0 = iy > 0 ? iy - 1 : 0,
            y1 = iy < ny ? iy + 1 : ny, z0 = iz > 0 ? iz - 1 : 0, z1 = iz < nz ? iz + 1 : nz;
    int64_t cx = x1 - x0 + 1, cy = y1 - y0 + 1, ex, ey, ez, jx, jy, jz, c, q;
    double row[3][81];
    memset(row, 0, sizeof row);
    for (ez = iz - 1; ez <= iz; ez++)
      for (ey = iy - 1; ey <= iy; ey++)
        for (ex = ix - 1; ex <= ix; ex++) {
          int li, lj;
          if (ez < 0 || ez >= nz || ey < 0 || ey >= ny || ex < 0 || ex >= nx) continue;
          li = (int)((ix - ex) + 2 * (iy - ey) + 4 * (iz - ez));
          for (lj = 0; lj < 8; lj++) {
            jx = ex + (lj & 1); jy = ey + ((lj >> 1) & 1); jz = ez + (lj >> 2);
            if (jx == 0) continue; /* clamped node: its column is gone */
            q = 3 * (((jz - z0) * cy + (jy - y0)) * cx + (jx - x0));
            for (c = 0; c < 3; c++) {
              const double *kr = ke[3 * li + c] + 3 * lj;
              row[c][q] += kr[0]; row[c][q + 1] += kr[1]; row[c][q + 2] += kr[2];
            }
          }
        }
    for (c = 0; c < 3; c++) {
      int64_t k = a->row_ptr[3 * f + c];
      q = 0;
      for (jz = z0; jz <= z1; jz++)
        for (jy = y0; jy <= y1; jy++)
          for (jx = x0; jx <= x1; jx++) {
            int64_t col = 3 * ((jx - 1) + nx * (jy + (ny + 1) * jz)), d;
            for (d = 0; d < 3; d++, q++, k++) {
              a->col_idx[k] = (int32_t)(col + d);
              spx__setv(a, k, row[c][q]);
            }
          }
    }
  }
  *out = a;
  return SPX_OK;
}

/* ---- Power law ----------------------------------------------------------------------------- */

/* splitmix64: turns (seed, stream number) into a well-mixed xorshift state. */
static uint64_t spx__splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x ? x : 0x2545F4914F6CDD1Dull; /* xorshift must not start at 0 */
}

/* xorshift64*. */
static uint64_t spx__xs(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  *s = x;
  return x * 2685821657736338717ull;
}

static double spx__xs_unit(uint64_t *s) { return (double)(spx__xs(s) >> 11) * (1.0 / 9007199254740992.0); }

/* Uniform in [0, m), m < 2^32 (multiply-shift; the bias is below 2^-32). */
static int64_t spx__xs_below(uint64_t *s, int64_t m) { return (int64_t)(((spx__xs(s) >> 32) * (uint64_t)m) >> 32); }

#define SPX__LN2 0.69314718055994530942

/* log and exp without libm (users link -ldl -lz only); accurate to a few ulps, enough for
 * sampling weights. */
static double spx__log(double x) {
  double t, t2, term, sum = 0;
  int e = 0, k;
  while (x > 1.4142135623730951) { x *= 0.5; e++; }
  while (x < 0.7071067811865476) { x *= 2; e--; }
  t = (x - 1) / (x + 1); /* log x = 2 atanh t, |t| < 0.172 */
  t2 = t * t;
  term = t;
  for (k = 1; k < 60; k += 2) {
    double add = term / k;
    if (sum + add == sum) break;
    sum += add;
    term *= t2;
  }
  return 2 * sum + e * SPX__LN2;
}

static double spx__exp(double x) {
  double r, term = 1, sum = 1, p = 1, b = 2;
  int64_t k;
  int i;
  if (x < -740) return 0;
  if (x > 709) return 1.7976931348623157e308;
  k = (int64_t)(x / SPX__LN2 + (x < 0 ? -0.5 : 0.5));
  r = x - (double)k * SPX__LN2; /* |r| <= ln2/2 */
  for (i = 1; i < 30; i++) {
    term *= r / i;
    if (sum + term == sum) break;
    sum += term;
  }
  /* 2^k by squaring (k may be below the normal range: the product just underflows gracefully). */
  if (k < 0) { k = -k; b = 0.5; }
  for (; k; k >>= 1, b *= b)
    if (k & 1) p *= b;
  return sum * p;
}

static int spx__cmp_i32(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return (a > b) - (a < b);
}

static void spx__sort_i32(int32_t *c, int64_t m) {
  int64_t i, j;
  if (m > 32) { qsort(c, (size_t)m, sizeof *c, spx__cmp_i32); return; }
  for (i = 1; i < m; i++) {
    int32_t v = c[i];
    for (j = i - 1; j >= 0 && c[j] > v; j--) c[j + 1] = c[j];
    c[j + 1] = v;
  }
}

/* m distinct values of [0, N), ascending, into c. Sparse rows: draw, sort, drop repeats, draw the
 * shortfall again (expected < 2 rounds for m <= N/2). Dense rows: selection sampling (Knuth's
 * Algorithm S), one pass over [0, N) that comes out sorted. */
static void spx__sample_distinct(uint64_t *s, int64_t N, int64_t m, int32_t *c) {
  int64_t have = 0, t, w;
  if (2 * m > N) {
    for (t = 0; t < N && have < m; t++)
      if ((double)(N - t) * spx__xs_unit(s) < (double)(m - have)) c[have++] = (int32_t)t;
    return;
  }
  while (have < m) {
    for (t = have; t < m; t++) c[t] = (int32_t)spx__xs_below(s, N);
    spx__sort_i32(c, m);
    for (w = 1, t = 1; t < m; t++)
      if (c[t] != c[w - 1]) c[w++] = c[t];
    have = w;
  }
}

/* The stream of row i, stream 0 for its length and 1 for its columns and values. */
static uint64_t spx__row_stream(uint64_t seed, int64_t i, int which) {
  return spx__splitmix(spx__splitmix(seed) ^ (2 * (uint64_t)i + (uint64_t)which) * 0xD1B54A32D192ED03ull);
}

spx_status spx_gen_powerlaw(int64_t n, double alpha, int64_t min_row, int64_t max_row, uint64_t seed,
                            spx_dtype dtype, spx_csr **out) {
  static const char fn[] = "spx_gen_powerlaw";
  int64_t nk, k, i, *rp;
  double *cdf, lref;
  spx_csr *a;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if ((s = spx__gen_dtype(fn, dtype))) return s;
  if (n < 1) return spx__fail(SPX_INVALID_ARGUMENT, "%s: n = %lld must be at least 1", fn, (long long)n);
  if (n > INT32_MAX) return spx__fail(SPX_RANGE, "%s: n = %lld exceeds 2^31-1", fn, (long long)n);
  if (min_row < 1 || max_row < min_row || max_row > n)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: row lengths [%lld, %lld] must satisfy 1 <= min_row <= max_row <= n = %lld",
                     fn, (long long)min_row, (long long)max_row, (long long)n);
  if (alpha != alpha || alpha - alpha != 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: alpha must be finite", fn);
  /* CDF over k = min_row..max_row of (k/kref)^-alpha, kref the most likely length, so the largest
   * weight is 1 and nothing overflows. */
  nk = max_row - min_row + 1;
  if (!(cdf = (double *)spx__alloc((size_t)nk, sizeof *cdf))) return SPX_OUT_OF_MEMORY;
  lref = spx__log((double)(alpha >= 0 ? min_row : max_row));
  for (k = 0; k < nk; k++) cdf[k] = spx__exp(-alpha * (spx__log((double)(min_row + k)) - lref));
  for (k = 1; k < nk; k++) cdf[k] += cdf[k - 1];
  if ((s = spx_csr_create(n, n, 0, dtype, &a))) { SPX_FREE(cdf); return s; }
  rp = a->row_ptr;
  SPX__GEN_OMP_FOR
  for (i = 0; i < n; i++) {
    uint64_t st = spx__row_stream(seed, i, 0);
    double u = spx__xs_unit(&st) * cdf[nk - 1];
    int64_t lo = 0, hi = nk - 1; /* first k with cdf[k] > u */
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (cdf[mid] > u) hi = mid;
      else lo = mid + 1;
    }
    rp[i + 1] = min_row + lo;
  }
  SPX_FREE(cdf);
  for (i = 0; i < n; i++) rp[i + 1] += rp[i];
  /* Now that nnz is known, give the matrix its entry arrays (same allocator spx_csr_destroy uses). */
  SPX_FREE(a->col_idx); SPX_FREE(a->val.p);
  a->nnz = rp[n];
  a->col_idx = (int32_t *)spx__alloc((size_t)a->nnz, sizeof(int32_t));
  a->val.p = spx__alloc((size_t)a->nnz, SPX_DTYPE_SIZE(dtype));
  if (!a->col_idx || !a->val.p) {
    spx_csr_destroy(a);
    return spx__fail(SPX_OUT_OF_MEMORY, "%s: out of host memory for %lld nonzeros", fn, (long long)rp[n]);
  }
  SPX__GEN_OMP_FOR
  for (i = 0; i < n; i++) {
    uint64_t st = spx__row_stream(seed, i, 1);
    int64_t b = rp[i], m = rp[i + 1] - b - 1, t, dpos;
    int32_t *c = a->col_idx + b;
    double sum = 0;
    /* Off-diagonal columns drawn from the n-1 others: t < i maps to t, t >= i to t+1 (still sorted);
     * then the diagonal slides into its place. */
    spx__sample_distinct(&st, n - 1, m, c);
    for (dpos = m, t = 0; t < m; t++)
      if (c[t] >= i) { if (dpos == m) dpos = t; c[t]++; }
    for (t = m; t > dpos; t--) c[t] = c[t - 1];
    c[dpos] = (int32_t)i;
    for (t = 0; t <= m; t++) {
      double v;
      if (t == dpos) continue;
      v = (double)((spx__xs(&st) >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
      if (spx__xs(&st) >> 63) v = -v;
      if (dtype == SPX_FLOAT) v = (float)v; /* the diagonal must dominate the stored values */
      spx__setv(a, b + t, v);
      sum += SPX__ABS(v);
    }
    spx__setv(a, b + dpos, 1 + sum);
  }
  *out = a;
  return SPX_OK;
}

/* ---- Replication --------------------------------------------------------------------------- */

#define SPX__REP_BLOCK ((int64_t)1 << 18)

spx_status spx_gen_replicate(const spx_csr *a, int64_t copies, spx_csr **out) {
  static const char fn[] = "spx_gen_replicate";
  int64_t r, t, nb;
  spx_csr *b;
  spx_status s;
  size_t vsz;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (!a) return spx__fail(SPX_INVALID_ARGUMENT, "%s: matrix is NULL", fn);
  if (copies < 1) return spx__fail(SPX_INVALID_ARGUMENT, "%s: copies = %lld must be at least 1", fn, (long long)copies);
  if ((s = spx_csr_validate(a))) return spx__wrap(s, "%s: input", fn);
  if ((double)copies * (double)SPX__MAX(a->nrows, a->ncols) > (double)INT32_MAX ||
      (double)copies * (double)a->nnz > 9.2e18)
    return spx__fail(SPX_RANGE, "%s: %lld copies of a %lld x %lld matrix pass the 2^31-1 index limit", fn,
                     (long long)copies, (long long)a->nrows, (long long)a->ncols);
  if ((s = spx_csr_create(copies * a->nrows, copies * a->ncols, copies * a->nnz, a->dtype, &b))) return s;
  vsz = SPX_DTYPE_SIZE(a->dtype);
  nb = (a->nnz + SPX__REP_BLOCK - 1) / SPX__REP_BLOCK;
  /* Work in blocks of up to 2^18 entries of one copy, so a few copies of a big matrix still keep
   * every thread busy. */
  SPX__GEN_OMP_FOR
  for (t = 0; t < copies * nb; t++) {
    int64_t c = t / nb, k0 = t % nb * SPX__REP_BLOCK, k1 = SPX__MIN(k0 + SPX__REP_BLOCK, a->nnz), k, z0 = c * a->nnz;
    int32_t off = (int32_t)(c * a->ncols);
    for (k = k0; k < k1; k++) b->col_idx[z0 + k] = a->col_idx[k] + off;
    memcpy((char *)b->val.p + (size_t)(z0 + k0) * vsz, (const char *)a->val.p + (size_t)k0 * vsz,
           (size_t)(k1 - k0) * vsz);
  }
  for (r = 0; r < copies; r++) {
    int64_t i, *rp = b->row_ptr + r * a->nrows + 1, z0 = r * a->nnz;
    for (i = 0; i < a->nrows; i++) rp[i] = z0 + a->row_ptr[i + 1];
  }
  *out = b;
  return SPX_OK;
}

#undef SPX__GEN_OMP_FOR
#undef SPX__LN2
#undef SPX__REP_BLOCK
