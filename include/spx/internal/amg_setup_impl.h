/* SPDX-License-Identifier: BSD-3-Clause */
/* AMG's setup on the host (amg_levels.h): strength of connection, aggregation, the smoothed
 * prolongation (the filtered operator, its spectral radius, the tentative P), the Galerkin
 * products, a level's coarsening from them, and the coarsest level's dense LU. It works on host
 * CSR matrices and the hierarchy's levels; nothing of the smoothers or the cycles above it. On
 * CUDA a large level's products (P = F T, R = P^T, R (A P)) go to amg_gpu_impl.h instead, and
 * this file's are their reference and fallback. */
#include "common.h"
#include "amg_levels.h"
#include "../amg.h"
#include "../csr.h"

/* A level stalls when its aggregates are more than this share of its rows. */
#define SPX__AMG_STALL 0.9
/* rho: the power iteration's Rayleigh quotient (a lower bound) times this. */
#define SPX__AMG_RHO_SAFETY 1.1

int spx__amg_finite(double x) { return x - x == 0.0; }

/* ---- Small sparse helpers ---------------------------------------------------------------------- */
void spx__amg_graph_free(spx__amg_graph *g) {
  SPX_FREE(g->rp);
  SPX_FREE(g->ci);
  g->rp = NULL;
  g->ci = NULL;
}

/* rp[0..n] from per-row counts in rp[1..n] (exclusive prefix sum in place). */
void spx__amg_scan(int64_t *rp, int64_t n) {
  int64_t i;
  rp[0] = 0;
  for (i = 0; i < n; i++) rp[i + 1] += rp[i];
}

/* The diagonal a_ii of each row; a zero or non-finite one is SPX_INVALID_ARGUMENT naming it. */
spx_status spx__amg_diag(const char *fn, const spx_csr *A, int level, double *d) {
  const int64_t n = A->nrows, n_ = n;
  int64_t i, bad = n;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k;
    d[i] = 0;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
      if (A->col_idx[k] == i) d[i] = A->val.d[k];
  }
  for (i = 0; i < n && bad == n; i++)
    if (d[i] == 0 || !spx__amg_finite(d[i])) bad = i;
  if (bad == n) return SPX_OK;
  if (level == 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: a[%lld][%lld] = %g: AMG needs a nonzero finite diagonal", fn,
                     (long long)bad, (long long)bad, d[bad]);
  return spx__fail(SPX_INVALID_ARGUMENT, "%s: the level-%d operator has a[%lld][%lld] = %g (a coarse "
                   "diagonal of zero: the matrix is not positive definite, or its entries overflow)", fn, level,
                   (long long)bad, (long long)bad, d[bad]);
}

/* j != i is a strong neighbour of i: a_ij^2 >= theta^2 |a_ii a_jj| (squares: no libm). */
static int spx__amg_strong(double aij, double di, double dj, double theta) {
  double p = di * dj;
  return aij != 0 && aij * aij >= theta * theta * (p < 0 ? -p : p);
}

/* S: each row's strong neighbours (columns in order); *weak counts the other off-diagonals. */
static spx_status spx__amg_strength(const spx_csr *A, const double *d, double theta, spx__amg_graph *S,
                                    int64_t *weak) {
  const int64_t n = A->nrows, n_ = n;
  int64_t i, nw = 0;
  S->n = n;
  S->ci = NULL;
  if (!(S->rp = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k, c = 0;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      int32_t j = A->col_idx[k];
      c += j != i && spx__amg_strong(A->val.d[k], d[i], d[j], theta);
    }
    S->rp[i + 1] = c;
  }
  spx__amg_scan(S->rp, n);
  if (!(S->ci = (int32_t *)spx__alloc((size_t)S->rp[n] + 1, sizeof(int32_t)))) {
    spx__amg_graph_free(S);
    return SPX_OUT_OF_MEMORY;
  }
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k, q = S->rp[i];
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      int32_t j = A->col_idx[k];
      if (j != i && spx__amg_strong(A->val.d[k], d[i], d[j], theta)) S->ci[q++] = j;
    }
  }
  for (i = 0; i < n; i++) nw += (A->row_ptr[i + 1] - A->row_ptr[i]) - (S->rp[i + 1] - S->rp[i]);
  *weak = nw - n; /* less the diagonals (every row has one) */
  return SPX_OK;
}

/* Standard smoothed aggregation, rows in order (the header's three passes). agg[i] receives the
 * aggregate of row i, *nagg their number. Pass 2 marks what it attaches as -2 - aggregate, so that
 * rows attach only to the aggregates of pass 1. */
static void spx__amg_aggregate(const spx__amg_graph *S, int32_t *agg, int64_t *nagg) {
  const int64_t n = S->n;
  int64_t i, k, next = 0;
  for (i = 0; i < n; i++) agg[i] = -1;
  for (i = 0; i < n; i++) { /* pass 1: roots whose strong neighbours are all free */
    int free_all = S->rp[i + 1] > S->rp[i];
    if (agg[i] != -1) continue;
    for (k = S->rp[i]; k < S->rp[i + 1] && free_all; k++) free_all = agg[S->ci[k]] == -1;
    if (!free_all) continue;
    agg[i] = (int32_t)next;
    for (k = S->rp[i]; k < S->rp[i + 1]; k++) agg[S->ci[k]] = (int32_t)next;
    next++;
  }
  for (i = 0; i < n; i++) /* pass 2: the first strong neighbour in an aggregate of pass 1 */
    if (agg[i] == -1)
      for (k = S->rp[i]; k < S->rp[i + 1]; k++)
        if (agg[S->ci[k]] >= 0) {
          agg[i] = -2 - agg[S->ci[k]];
          break;
        }
  for (i = 0; i < n; i++) { /* pass 3: rows left (no strong neighbour) on their own */
    if (agg[i] <= -2) agg[i] = -2 - agg[i];
    else if (agg[i] == -1) agg[i] = (int32_t)next++;
  }
  *nagg = next;
}

/* A_F: A with its weak off-diagonal entries lumped onto the diagonal (A_F 1 = A 1; the pattern of
 * A's diagonal and strong entries), and dF its diagonal. A row whose lumping would leave a diagonal
 * of the other sign than a_ii (or zero) keeps a_ii. */
static spx_status spx__amg_filter(const spx_csr *A, const double *d, double theta, spx_csr **out, double *dF) {
  const int64_t n = A->nrows, n_ = n;
  spx_csr *F = NULL;
  spx_status st;
  int64_t i;
  int64_t *cnt = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t));
  if (!cnt) return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k, c = 0;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      int32_t j = A->col_idx[k];
      c += j == i || spx__amg_strong(A->val.d[k], d[i], d[j], theta);
    }
    cnt[i + 1] = c;
  }
  spx__amg_scan(cnt, n);
  if ((st = spx_csr_create(n, n, cnt[n], SPX_DOUBLE, &F))) {
    SPX_FREE(cnt);
    return st;
  }
  memcpy(F->row_ptr, cnt, ((size_t)n + 1) * sizeof(int64_t));
  SPX_FREE(cnt);
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k, q = F->row_ptr[i], qd = q;
    double lump = 0;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      int32_t j = A->col_idx[k];
      double v = A->val.d[k];
      if (j == i || spx__amg_strong(v, d[i], d[j], theta)) {
        if (j == i) qd = q;
        F->col_idx[q] = j;
        F->val.d[q++] = v;
      } else lump += v;
    }
    if (!((d[i] + lump) * d[i] > 0)) lump = 0;
    F->val.d[qd] = d[i] + lump;
    dF[i] = d[i] + lump;
  }
  *out = F;
  return SPX_OK;
}

/* In place: F (A_F, diagonal dF) becomes I - s D_F^-1 A_F. */
static void spx__amg_jacobi_operator(spx_csr *F, const double *dF, double s) {
  const int64_t n = F->nrows, n_ = n;
  int64_t i;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k;
    for (k = F->row_ptr[i]; k < F->row_ptr[i + 1]; k++)
      F->val.d[k] = (F->col_idx[k] == i ? 1.0 : 0.0) - s / dF[i] * F->val.d[k];
  }
}

/* A fixed pseudo-random value in [-1, 1) for row i: the power iteration's start, the same for any
 * thread count. */
static double spx__amg_hash01(int64_t i) {
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 29; x *= 0x94D049BB133111EBull; x ^= x >> 32;
  return (double)(x >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Rows per chunk of the power iteration's sums: per-chunk partials added in chunk order, so the
 * estimate does not depend on the thread count. */
#define SPX__AMG_CHUNK 4096

/* An upper estimate of rho(D^-1 A) for A whose diagonal is d (the header's rule): iters power
 * iterations, the Rayleigh quotient x.Ax / x.Dx times 1.1, capped by the Gershgorin bound. Each
 * step is one pass over the rows (y = A x, the two sums and max |y_i / d_i| per chunk), then x =
 * D^-1 y scaled by that max. */
spx_status spx__amg_rho(const spx_csr *A, const double *d, int iters, double *rho) {
  const int64_t n = A->nrows, nc = (n + SPX__AMG_CHUNK - 1) / SPX__AMG_CHUNK, n_ = n;
  double gersh = 0, lam = 0, *x, *y, *part;
  int64_t i, c;
  int k;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(max : gersh) if (n > 16384)
#endif
  for (i = 0; i < n; i++) {
    double s = 0, di = d[i] < 0 ? -d[i] : d[i];
    int64_t q;
    for (q = A->row_ptr[i]; q < A->row_ptr[i + 1]; q++) s += SPX__ABS(A->val.d[q]);
    if (s / di > gersh) gersh = s / di;
  }
  *rho = gersh;
  if (iters <= 0 || n == 0) return SPX_OK;
  x = (double *)spx__alloc((size_t)n + 1, sizeof(double));
  y = (double *)spx__alloc((size_t)n + 1, sizeof(double));
  part = (double *)spx__alloc((size_t)(3 * nc) + 3, sizeof(double));
  if (!x || !y || !part) {
    SPX_FREE(x);
    SPX_FREE(y);
    SPX_FREE(part);
    return SPX_OUT_OF_MEMORY;
  }
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) x[i] = spx__amg_hash01(i);
  for (k = 0; k < iters; k++) {
    double xy = 0, xdx = 0, m = 0, sc;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (nc > 4)
#endif
    for (c = 0; c < nc; c++) {
      const int64_t lo = c * SPX__AMG_CHUNK, hi = SPX__MIN(n, lo + SPX__AMG_CHUNK);
      double p0 = 0, p1 = 0, mx = 0;
      int64_t r, q;
      for (r = lo; r < hi; r++) {
        double t = 0;
        for (q = A->row_ptr[r]; q < A->row_ptr[r + 1]; q++) t += A->val.d[q] * x[A->col_idx[q]];
        y[r] = t;
        p0 += x[r] * t;
        p1 += x[r] * d[r] * x[r];
        t /= d[r];
        if (SPX__ABS(t) > mx) mx = SPX__ABS(t);
      }
      part[3 * c] = p0;
      part[3 * c + 1] = p1;
      part[3 * c + 2] = mx;
    }
    for (c = 0; c < nc; c++) {
      xy += part[3 * c];
      xdx += part[3 * c + 1];
      if (part[3 * c + 2] > m) m = part[3 * c + 2];
    }
    lam = xdx != 0 ? xy / xdx : 0;
    if (!(m > 0) || !spx__amg_finite(m)) break;
    sc = 1.0 / m;
    SPX__AMG_FOR
    for (i = 0; i < n_; i++) x[i] = y[i] / d[i] * sc;
  }
  SPX_FREE(x);
  SPX_FREE(y);
  SPX_FREE(part);
  if (lam > 0 && spx__amg_finite(lam) && SPX__AMG_RHO_SAFETY * lam < gersh) *rho = SPX__AMG_RHO_SAFETY * lam;
  return SPX_OK;
}

/* T: n x nagg, T[i][agg[i]] = 1 / sqrt(|aggregate|) (orthonormal columns). */
static spx_status spx__amg_tentative(int64_t n, const int32_t *agg, int64_t nagg, spx_csr **out) {
  spx_csr *T = NULL;
  double *scale;
  int64_t i, c;
  spx_status st;
  if (!(scale = (double *)spx__calloc((size_t)nagg + 1, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  if ((st = spx_csr_create(n, nagg, n, SPX_DOUBLE, &T))) {
    SPX_FREE(scale);
    return st;
  }
  for (i = 0; i < n; i++) scale[agg[i]] += 1;
  for (c = 0; c < nagg; c++) scale[c] = 1.0 / spx__sqrt(scale[c]);
  for (i = 0; i < n; i++) {
    T->row_ptr[i + 1] = i + 1;
    T->col_idx[i] = agg[i];
    T->val.d[i] = scale[agg[i]];
  }
  SPX_FREE(scale);
  *out = T;
  return SPX_OK;
}

/* Sorts a row's columns ascending (short rows by insertion, long ones by heap sort: no recursion,
 * O(k log k)). */
static void spx__amg_sort_cols(int32_t *c, int64_t k) {
  int64_t i, j;
  if (k <= 32) {
    for (i = 1; i < k; i++) {
      int32_t v = c[i];
      for (j = i; j > 0 && c[j - 1] > v; j--) c[j] = c[j - 1];
      c[j] = v;
    }
    return;
  }
  for (i = k / 2 - 1; i >= 0; i--) { /* heapify */
    int64_t r = i;
    for (;;) {
      int64_t ch = 2 * r + 1;
      int32_t t;
      if (ch >= k) break;
      if (ch + 1 < k && c[ch + 1] > c[ch]) ch++;
      if (c[r] >= c[ch]) break;
      t = c[r]; c[r] = c[ch]; c[ch] = t;
      r = ch;
    }
  }
  for (i = k - 1; i > 0; i--) {
    int64_t r = 0;
    int32_t t = c[0];
    c[0] = c[i]; c[i] = t;
    for (;;) {
      int64_t ch = 2 * r + 1;
      if (ch >= i) break;
      if (ch + 1 < i && c[ch + 1] > c[ch]) ch++;
      if (c[r] >= c[ch]) break;
      t = c[r]; c[r] = c[ch]; c[ch] = t;
      r = ch;
    }
  }
}

/* C = A B (Gustavson, two passes: each row's distinct columns with a marker, then its values in a
 * dense accumulator; columns sorted). Rows in parallel, each thread with its own marker and
 * accumulator of B's width; a row's sums run in A's then B's column order whatever the thread. */
static spx_status spx__amg_spgemm(const spx_csr *A, const spx_csr *B, spx_csr **out) {
  const int64_t n = A->nrows, m = B->ncols;
  spx_csr *C = NULL;
  int64_t *cnt;
  int fail = 0;
  spx_status st;
  if (A->ncols != B->nrows)
    return spx__fail(SPX_INTERNAL, "spx_amg: product of %lld x %lld and %lld x %lld matrices", (long long)A->nrows,
                     (long long)A->ncols, (long long)B->nrows, (long long)B->ncols);
  if (!(cnt = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
#if defined(_OPENMP)
#pragma omp parallel if (n > 4096)
#endif
  {
    int64_t *mark = (int64_t *)SPX_MALLOC(((size_t)m + 1) * sizeof(int64_t)), i;
    if (!mark) {
#if defined(_OPENMP)
#pragma omp atomic write
#endif
      fail = 1;
    } else
      for (i = 0; i < m; i++) mark[i] = -1;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 512)
#endif
    for (i = 0; i < n; i++) {
      int64_t k, q, c = 0;
      if (!mark) continue;
      for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
        int32_t j = A->col_idx[k];
        for (q = B->row_ptr[j]; q < B->row_ptr[j + 1]; q++)
          if (mark[B->col_idx[q]] != i) {
            mark[B->col_idx[q]] = i;
            c++;
          }
      }
      cnt[i + 1] = c;
    }
    SPX_FREE(mark);
  }
  if (fail) {
    SPX_FREE(cnt);
    return spx__fail(SPX_OUT_OF_MEMORY, "spx_amg: out of host memory in a sparse matrix product");
  }
  spx__amg_scan(cnt, n);
  if ((st = spx_csr_create(n, m, cnt[n], SPX_DOUBLE, &C))) {
    SPX_FREE(cnt);
    return st;
  }
  memcpy(C->row_ptr, cnt, ((size_t)n + 1) * sizeof(int64_t));
  SPX_FREE(cnt);
#if defined(_OPENMP)
#pragma omp parallel if (n > 4096)
#endif
  {
    int64_t *mark = (int64_t *)SPX_MALLOC(((size_t)m + 1) * sizeof(int64_t)), i;
    double *acc = (double *)SPX_MALLOC(((size_t)m + 1) * sizeof(double));
    if (!mark || !acc) {
#if defined(_OPENMP)
#pragma omp atomic write
#endif
      fail = 1;
    } else
      for (i = 0; i < m; i++) mark[i] = -1;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 512)
#endif
    for (i = 0; i < n; i++) {
      int64_t k, q, c0 = C->row_ptr[i], c = c0;
      if (!mark || !acc) continue;
      for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
        int32_t j = A->col_idx[k];
        double a = A->val.d[k];
        for (q = B->row_ptr[j]; q < B->row_ptr[j + 1]; q++) {
          int32_t col = B->col_idx[q];
          if (mark[col] != i) {
            mark[col] = i;
            acc[col] = a * B->val.d[q];
            C->col_idx[c++] = col;
          } else acc[col] += a * B->val.d[q];
        }
      }
      spx__amg_sort_cols(C->col_idx + c0, c - c0);
      for (k = c0; k < c; k++) C->val.d[k] = acc[C->col_idx[k]];
    }
    SPX_FREE(mark);
    SPX_FREE(acc);
  }
  if (fail) {
    spx_csr_destroy(C);
    return spx__fail(SPX_OUT_OF_MEMORY, "spx_amg: out of host memory in a sparse matrix product");
  }
  *out = C;
  return SPX_OK;
}

/* The values of C = A B into C's pattern (the symbolic pass's row pointers and sorted columns, from
 * spx__amg_spgemm of matrices of the same patterns): each row's sums in A's then B's column order,
 * as spx__amg_spgemm adds them (0 + x is x), so the values are that product's bit for bit. The
 * accumulator is cleared at the row's columns only: O(the row's products). */
spx_status spx__amg_spgemm_values(const spx_csr *A, const spx_csr *B, spx_csr *C) {
  const int64_t n = A->nrows, m = B->ncols;
  int fail = 0;
#if defined(_OPENMP)
#pragma omp parallel if (n > 4096)
#endif
  {
    double *acc = (double *)SPX_MALLOC(((size_t)m + 1) * sizeof(double));
    int64_t i;
    if (!acc) {
#if defined(_OPENMP)
#pragma omp atomic write
#endif
      fail = 1;
    }
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 512)
#endif
    for (i = 0; i < n; i++) {
      int64_t k, q;
      if (!acc) continue;
      for (k = C->row_ptr[i]; k < C->row_ptr[i + 1]; k++) acc[C->col_idx[k]] = 0;
      for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
        const double a = A->val.d[k];
        const int32_t j = A->col_idx[k];
        for (q = B->row_ptr[j]; q < B->row_ptr[j + 1]; q++) acc[B->col_idx[q]] += a * B->val.d[q];
      }
      for (k = C->row_ptr[i]; k < C->row_ptr[i + 1]; k++) C->val.d[k] = acc[C->col_idx[k]];
    }
    SPX_FREE(acc);
  }
  return fail ? spx__fail(SPX_OUT_OF_MEMORY, "spx_amg: out of host memory in a sparse matrix product") : SPX_OK;
}

/* A_c = R (A P); *AP is kept (spx_amg_update's numeric pass reuses its pattern). */
static spx_status spx__amg_galerkin(const spx_csr *A, const spx_csr *P, const spx_csr *R, spx_csr **AP, spx_csr **Ac) {
  spx_status st;
  if ((st = spx__amg_spgemm(A, P, AP))) return st;
  return spx__amg_spgemm(R, *AP, Ac);
}

/* ---- A level: strength, aggregates, P, R, the next A ------------------------------------------ */
/* Level l's aggregates, P, R and the next level's A from A and its diagonal d. *stalled: the
 * aggregates were too many (nothing made). *rhoA: rho(D^-1 A) when it came out on the way (no weak
 * entries: A_F = A), else -1. */
spx_status spx__amg_coarsen(spx_amg *m, int l, const double *d, int *stalled, double *rhoA) {
  spx__amg_level *L = &m->lv[l];
  spx_amg_report *rep = &m->rep;
  const spx_amg_options *o = &m->o;
  const int64_t n = L->A->nrows;
  spx__amg_graph S = {0, NULL, NULL};
  spx_csr *F = NULL, *T = NULL;
  double *dF = NULL, t = spx__now(), rho = 0, omega = 0, theta = o->theta;
  int64_t nagg = 0, weak = 0;
  int k, gpu = spx__amg_gpu_wanted(m, l);
  spx_status st;
  for (k = 0; k < l; k++) theta *= o->theta_decay;
  *stalled = 0;
  *rhoA = -1;
  if ((st = spx__amg_strength(L->A, d, theta, &S, &weak))) return st;
  rep->level[l].weak = weak;
  rep->strength_ms += 1e3 * (spx__now() - t);
  t = spx__now();
  if (!(L->agg = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t)))) {
    spx__amg_graph_free(&S);
    return SPX_OUT_OF_MEMORY;
  }
  spx__amg_aggregate(&S, L->agg, &nagg);
  spx__amg_graph_free(&S);
  rep->aggregate_ms += 1e3 * (spx__now() - t);
  if ((double)nagg > SPX__AMG_STALL * (double)n) {
    SPX_FREE(L->agg);
    L->agg = NULL;
    *stalled = 1;
    snprintf(rep->stop, sizeof rep->stop, "coarsening stalled: level %d's %lld rows made %lld aggregates", l + 1,
             (long long)n, (long long)nagg);
    return SPX_OK;
  }
  t = spx__now();
  if ((st = spx__amg_tentative(n, L->agg, nagg, &T))) return st;
  if (o->prolong_omega > 0) { /* F = I - omega D_F^-1 A_F, on the host on either side */
    if (!(dF = (double *)spx__alloc((size_t)n + 1, sizeof(double)))) st = SPX_OUT_OF_MEMORY;
    if (!st) st = spx__amg_filter(L->A, d, theta, &F, dF);
    if (!st) st = spx__amg_rho(F, dF, o->power_iters, &rho);
    if (!st) {
      omega = o->prolong_omega / rho;
      if (weak == 0) *rhoA = rho;
      spx__amg_jacobi_operator(F, dF, omega);
    }
    SPX_FREE(dF);
  }
  rep->level[l].omega = omega;
  /* P = F T (or T) and R = P^T: on the GPU where it pays (amg_gpu_impl.h), else here; a GPU path
   * that cannot run leaves this level and those below to the host */
  if (!st && gpu) {
    double tg = spx__now();
    st = spx__amg_gpu_prolong(m, l, F, T);
    rep->prolong_gpu_ms += 1e3 * (spx__now() - tg);
    if (st && spx__amg_gpu_fallback(m, l, st)) st = SPX_OK, gpu = 0;
  }
  if (!st && !gpu) {
    if (F) st = spx__amg_spgemm(F, T, &L->P);
    else {
      L->P = T;
      T = NULL;
    }
    if (!st) st = spx_csr_transpose(L->P, &L->R);
  }
  spx_csr_destroy(F);
  spx_csr_destroy(T);
  rep->prolong_ms += 1e3 * (spx__now() - t);
  if (st) return st;
  t = spx__now();
  if (gpu) {
    st = spx__amg_gpu_rap(m, l);
    if (st && spx__amg_gpu_fallback(m, l, st)) st = SPX_OK, gpu = 0;
    rep->rap_gpu_ms += 1e3 * (spx__now() - t);
  }
  if (!st && !gpu) st = spx__amg_galerkin(L->A, L->P, L->R, &L->AP, &m->lv[l + 1].A);
  rep->rap_ms += 1e3 * (spx__now() - t);
  return st;
}

/* ---- The coarsest level: dense LU with partial pivoting ---------------------------------------- */
/* A pivot at most 16 n eps max|a_ij| is a zero: the coarsest operator of a singular problem (pure
 * Neumann: P keeps the constant null space) is singular to rounding. The solve then sets that
 * unknown to 0 (a generalized inverse: a consistent system still converges) and *zeros counts them. */
spx_status spx__amg_lu(const spx_csr *A, double **lu_out, int32_t **piv_out, int64_t *zeros) {
  const int64_t n = A->nrows;
  double *lu, amax = 0, tiny;
  int32_t *piv;
  int64_t i, j, k;
  *lu_out = NULL;
  *piv_out = NULL;
  *zeros = 0;
  lu = (double *)spx__calloc((size_t)(n * n) + 1, sizeof(double));
  piv = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t));
  if (!lu || !piv) {
    SPX_FREE(lu);
    SPX_FREE(piv);
    return SPX_OUT_OF_MEMORY;
  }
  for (i = 0; i < n; i++)
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      lu[i * n + A->col_idx[k]] = A->val.d[k];
      amax = SPX__MAX(amax, SPX__ABS(A->val.d[k]));
    }
  tiny = 16.0 * (double)n * 2.220446049250313e-16 * amax;
  for (k = 0; k < n; k++) {
    int64_t p = k;
    double pv = SPX__ABS(lu[k * n + k]);
    for (i = k + 1; i < n; i++)
      if (SPX__ABS(lu[i * n + k]) > pv) {
        pv = SPX__ABS(lu[i * n + k]);
        p = i;
      }
    piv[k] = (int32_t)p;
    if (!spx__amg_finite(pv)) {
      SPX_FREE(lu);
      SPX_FREE(piv);
      return spx__fail(SPX_BREAKDOWN, "spx_amg_create: the coarsest matrix (%lld rows) has %g in its LU (pivot %lld)",
                       (long long)n, pv, (long long)k);
    }
    if (p != k)
      for (j = 0; j < n; j++) {
        double t = lu[k * n + j];
        lu[k * n + j] = lu[p * n + j];
        lu[p * n + j] = t;
      }
    if (pv <= tiny) { /* a zero pivot, and below it (partial pivoting: no larger) zeros too */
      for (i = k; i < n; i++) lu[i * n + k] = 0;
      ++*zeros;
      continue;
    }
    for (i = k + 1; i < n; i++) {
      double l = lu[i * n + k] / lu[k * n + k];
      lu[i * n + k] = l;
      if (l != 0)
        for (j = k + 1; j < n; j++) lu[i * n + j] -= l * lu[k * n + j];
    }
  }
  *lu_out = lu;
  *piv_out = piv;
  return SPX_OK;
}

/* x = A^-1 b through the LU (x may be b). */
void spx__amg_lu_solve(int64_t n, const double *lu, const int32_t *piv, const double *b, double *x) {
  int64_t i, j;
  if (x != b) memcpy(x, b, (size_t)n * sizeof(double));
  for (i = 0; i < n; i++) {
    double t = x[piv[i]];
    x[piv[i]] = x[i];
    x[i] = t;
  }
  for (i = 0; i < n; i++) {
    double s = x[i];
    for (j = 0; j < i; j++) s -= lu[i * n + j] * x[j];
    x[i] = s;
  }
  for (i = n - 1; i >= 0; i--) {
    double s = x[i];
    for (j = i + 1; j < n; j++) s -= lu[i * n + j] * x[j];
    x[i] = lu[i * n + i] != 0 ? s / lu[i * n + i] : 0; /* a zero pivot's unknown: 0 */
  }
}
