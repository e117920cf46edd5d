/* SPDX-License-Identifier: BSD-3-Clause */
/* AMG's setup (amg_levels.h): strength of connection, aggregation (greedy, or MIS(2) in parallel),
 * the smoothed prolongation row by row (P = (I - omega D_F^-1 A_F) T from A's kept entries, rho of
 * D_F^-1 A_F by the power iteration), the Galerkin products, a level's coarsening from them, and
 * the coarsest level's dense LU. The host functions here are the twins of templates/amg_setup.cu's
 * kernels (the same steps, the same integers, P's values the same for the same omega), used by the
 * host backend, by levels below gpu_setup_rows, as the tests' oracle and as the fallback; a level
 * set up on the GPU runs the same steps through amg_gpu_impl.h, and this file decides the side. */
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

/* ---- Strength of connection (twin of spx_amgs_strength) ---------------------------------------- */
/* j != i is a strong neighbour of i: a_ij^2 >= th2 |a_ii a_jj|, th2 = theta^2 (squares: no libm). */
static int spx__amg_strong(double aij, double di, double dj, double th2) {
  double p = di * dj;
  return aij != 0 && aij * aij >= th2 * (p < 0 ? -p : p);
}

/* Row i: mask[k] = 1 where entry k is a strong off-diagonal, else 0; dF[i] = a_ii plus the row's
 * weak off-diagonals in column order (A_F's diagonal: the weak entries lumped so that A_F 1 = A 1),
 * or a_ii where that sum would be zero or of the other sign. Returns the row's weak entries. */
static int64_t spx__amg_strength_row(const spx_csr *A, const double *d, double th2, int64_t i, uint8_t *mask,
                                     double *dF) {
  int64_t k, weak = 0;
  double lump = 0;
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
    const int32_t j = A->col_idx[k];
    const int s = j != i && spx__amg_strong(A->val.d[k], d[i], d[j], th2);
    mask[k] = (uint8_t)s;
    if (j != i && !s) {
      lump += A->val.d[k];
      weak++;
    }
  }
  if (!((d[i] + lump) * d[i] > 0)) lump = 0;
  dF[i] = d[i] + lump;
  return weak;
}

void spx__amg_strength(const spx_csr *A, const double *d, double theta, uint8_t *mask, double *dF, int64_t *weak) {
  const int64_t n = A->nrows;
  const double th2 = theta * theta;
  int64_t i, w = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : w) if (n > 16384)
#endif
  for (i = 0; i < n; i++) w += spx__amg_strength_row(A, d, th2, i, mask, dF);
  *weak = w;
}

/* ---- Aggregation (twins of spx_amgs_mis_* and spx_amgs_agg_*) ---------------------------------- */

/* Row i has a strong neighbour. */
static int spx__amg_has_strong(const spx_csr *A, const uint8_t *mask, int64_t i) {
  int64_t k;
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
    if (mask[k]) return 1;
  return 0;
}

/* Pass 1 of the greedy rule, rows in order: a row whose strong neighbours are all free (and that
 * has one) leads an aggregate of itself and them; agg -1 elsewhere. Returns the aggregates. */
static int64_t spx__amg_greedy_roots(const spx_csr *A, const uint8_t *mask, int32_t *agg) {
  const int64_t n = A->nrows;
  int64_t i, k, next = 0;
  for (i = 0; i < n; i++) agg[i] = -1;
  for (i = 0; i < n; i++) {
    int free_all = spx__amg_has_strong(A, mask, i);
    if (agg[i] != -1) continue;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1] && free_all; k++)
      if (mask[k]) free_all = agg[A->col_idx[k]] == -1;
    if (!free_all) continue;
    agg[i] = (int32_t)next;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
      if (mask[k]) agg[A->col_idx[k]] = (int32_t)next;
    next++;
  }
  return next;
}

/* splitmix64's finalizer of row index i: a fixed pseudo-random bijection, the same for any thread
 * count (the MIS(2) priorities, the power iteration's start, PMIS's tie breaker). */
uint64_t spx__amg_mix(int64_t i) {
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 29; x *= 0x94D049BB133111EBull; x ^= x >> 32;
  return x;
}

/* Row i's MIS(2) tuple: state in the top two bits, then a 31-bit hash of i (splitmix64's
 * finalizer: a fixed pseudo-random priority, so the set does not follow the numbering), then i. */
static uint64_t spx__amg_tuple(int64_t i, unsigned state) {
  return (uint64_t)state << 62 | (spx__amg_mix(i) >> 33) << 31 | (uint64_t)i;
}

/* out[i] = the largest tuple of row i and its strong neighbours. */
static void spx__amg_mis_max(const spx_csr *A, const uint8_t *mask, const uint64_t *in, uint64_t *out) {
  const int64_t n_ = A->nrows;
  int64_t i;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    uint64_t t = in[i];
    int64_t k;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
      if (mask[k] && in[A->col_idx[k]] > t) t = in[A->col_idx[k]];
    out[i] = t;
  }
}

/* One round's decision (reads t1, writes each undecided row's own tuple): the largest tuple within
 * two strong steps joins the set, a row with a member within two steps leaves. Returns the rows
 * still undecided. */
static int64_t spx__amg_mis_decide(const spx_csr *A, const uint8_t *mask, const uint64_t *t1, uint64_t *tup) {
  const int64_t n = A->nrows;
  int64_t i, left = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : left) if (n > 16384)
#endif
  for (i = 0; i < n; i++) {
    uint64_t t = t1[i];
    int64_t k;
    if (tup[i] >> 62 != SPX__AMG_UND) continue;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
      if (mask[k] && t1[A->col_idx[k]] > t) t = t1[A->col_idx[k]];
    if (t == tup[i]) tup[i] = spx__amg_tuple(i, SPX__AMG_IN);
    else if (t >> 62 == SPX__AMG_IN) tup[i] = spx__amg_tuple(i, SPX__AMG_OUT);
    else left++;
  }
  return left;
}

/* Row i's strong entries (mask) to rows still free (agg -1). */
static int64_t spx__amg_free_count(const spx_csr *A, const uint8_t *mask, const int32_t *agg, int64_t i) {
  int64_t k, c = 0;
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) c += mask[k] && agg[A->col_idx[k]] == -1;
  return c;
}

/* One MIS(2) pass over the free rows (agg -1) and the strong entries between them (sub: mask with
 * the entries to or from a placed row cleared): the roots are a maximal set of free rows with at
 * least minc free strong neighbours, no two within two steps, found in rounds (each undecided row
 * compares its tuple with those two steps away); numbered from *next in row order they lead new
 * aggregates, and a free row with a root among its neighbours joins the one of largest tuple
 * (symmetric strength: the only one). Every round decides at least the largest undecided tuple. */
static spx_status spx__amg_mis2_pass(const spx_csr *A, const uint8_t *sub, int64_t minc, int32_t *agg, int64_t *next) {
  const int64_t n = A->nrows, n_ = n;
  uint64_t *tup = (uint64_t *)spx__alloc((size_t)n + 1, sizeof(uint64_t));
  uint64_t *t1 = (uint64_t *)spx__alloc((size_t)n + 1, sizeof(uint64_t));
  int64_t i;
  if (!tup || !t1) {
    SPX_FREE(tup);
    SPX_FREE(t1);
    return SPX_OUT_OF_MEMORY;
  }
  SPX__AMG_FOR
  for (i = 0; i < n_; i++)
    tup[i] = spx__amg_tuple(i, agg[i] == -1 && spx__amg_free_count(A, sub, agg, i) >= minc ? SPX__AMG_UND : SPX__AMG_OUT);
  do spx__amg_mis_max(A, sub, tup, t1);
  while (spx__amg_mis_decide(A, sub, t1, tup) > 0);
  for (i = 0; i < n; i++)
    if (tup[i] >> 62 == SPX__AMG_IN) agg[i] = (int32_t)(*next)++;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    uint64_t best = 0;
    int64_t k;
    if (agg[i] != -1) continue; /* placed, or a root (only roots' numbers are read) */
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      const uint64_t u = tup[A->col_idx[k]];
      if (sub[k] && u >> 62 == SPX__AMG_IN && u > best) best = u;
    }
    if (best) agg[i] = agg[best & 0x7FFFFFFFu];
  }
  SPX_FREE(tup);
  SPX_FREE(t1);
  return SPX_OK;
}

/* Pass 1 of the MIS(2) rule: a pass over every row with a strong neighbour (no two roots' strong
 * neighbourhoods meet: each root's aggregate is itself and its neighbours), then a second over
 * the rows left, with the entries among them, for rows with at least SPX__AMG_MIS2_MIN free
 * neighbours: random roots leave more rows two steps away than the greedy order does, and the
 * second pass makes aggregates of them where the first left room. */
static spx_status spx__amg_mis2_roots(const spx_csr *A, const uint8_t *mask, int32_t *agg, int64_t *nroots) {
  const int64_t n = A->nrows, n_ = n;
  uint8_t *sub;
  int64_t i;
  spx_status st;
  *nroots = 0;
  for (i = 0; i < n; i++) agg[i] = -1;
  if ((st = spx__amg_mis2_pass(A, mask, 1, agg, nroots))) return st;
  if (!(sub = (uint8_t *)spx__alloc((size_t)A->nnz + 1, 1))) return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) sub[k] = mask[k] && agg[i] == -1 && agg[A->col_idx[k]] == -1;
  }
  st = spx__amg_mis2_pass(A, sub, SPX__AMG_MIS2_MIN, agg, nroots);
  SPX_FREE(sub);
  return st;
}

/* Pass 2: out[i] = agg[i] where pass 1 placed row i, else the aggregate of a strong neighbour that
 * pass 1 placed: the first in column order (greedy), or the smallest (size given: MIS(2), whose
 * rows left are more, so that they spread over the aggregates), the first of the smallest; -1 when
 * none. */
static void spx__amg_agg_attach(const spx_csr *A, const uint8_t *mask, const int32_t *agg, const int32_t *size,
                                int32_t *out) {
  const int64_t n_ = A->nrows;
  int64_t i;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k;
    out[i] = agg[i];
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1] && agg[i] == -1; k++) {
      const int32_t a = agg[A->col_idx[k]];
      if (mask[k] && a >= 0 && (out[i] == -1 || (size && size[a] < size[out[i]]))) out[i] = a;
      if (out[i] >= 0 && !size) break;
    }
  }
}

/* The rows of each aggregate of pass 1 (agg -1: none), for the MIS(2) rule's pass 2. */
static int32_t *spx__amg_agg_sizes(int64_t n, const int32_t *agg, int64_t nagg) {
  int32_t *size = (int32_t *)spx__calloc((size_t)nagg + 1, sizeof(int32_t));
  int64_t i;
  if (size)
    for (i = 0; i < n; i++)
      if (agg[i] >= 0) size[agg[i]]++;
  return size;
}

spx_status spx__amg_aggregate(const spx_csr *A, const uint8_t *mask, int mis2, int32_t *agg, int64_t *nagg) {
  const int64_t n = A->nrows;
  int32_t *first = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t)), *size = NULL;
  int64_t i, next = 0;
  spx_status st = SPX_OK;
  if (!first) return SPX_OUT_OF_MEMORY;
  if (mis2) {
    if (!(st = spx__amg_mis2_roots(A, mask, first, &next)) && !(size = spx__amg_agg_sizes(n, first, next)))
      st = SPX_OUT_OF_MEMORY;
  } else next = spx__amg_greedy_roots(A, mask, first);
  if (!st) {
    spx__amg_agg_attach(A, mask, first, size, agg);
    for (i = 0; i < n; i++) /* pass 3: rows left (no strong neighbour placed) on their own */
      if (agg[i] == -1) agg[i] = (int32_t)next++;
    *nagg = next;
  }
  SPX_FREE(first);
  SPX_FREE(size);
  return st;
}

/* ---- The smoothed prolongation (twin of spx_amgs_p_count and spx_amgs_p_fill) ------------------- */
/* Entry k of row i is one A_F keeps: the diagonal or a strong off-diagonal. */
#define SPX__AMG_KEPT(A, mask, k, i) ((A)->col_idx[k] == (i) || (mask)[k])

/* Sorts n values of type T ascending (short runs by insertion, long ones by heap sort: no
 * recursion, O(k log k)): P's row keys (int64_t) and a product's row columns (int32_t). */
#define SPX__AMG_SORT(name, T)                                                 \
  static void name##_sift(T *c, int64_t r, int64_t end) {                      \
    for (;;) {                                                                 \
      int64_t ch = 2 * r + 1;                                                  \
      T t;                                                                     \
      if (ch >= end) return;                                                   \
      if (ch + 1 < end && c[ch + 1] > c[ch]) ch++;                             \
      if (c[r] >= c[ch]) return;                                               \
      t = c[r]; c[r] = c[ch]; c[ch] = t;                                       \
      r = ch;                                                                  \
    }                                                                          \
  }                                                                            \
  static void name(T *c, int64_t k) {                                          \
    int64_t i, j;                                                              \
    T t;                                                                       \
    if (k <= 32) {                                                             \
      for (i = 1; i < k; i++) {                                                \
        t = c[i];                                                              \
        for (j = i; j > 0 && c[j - 1] > t; j--) c[j] = c[j - 1];               \
        c[j] = t;                                                              \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    for (i = k / 2 - 1; i >= 0; i--) name##_sift(c, i, k);                     \
    for (i = k - 1; i > 0; i--) {                                              \
      t = c[0]; c[0] = c[i]; c[i] = t;                                         \
      name##_sift(c, 0, i);                                                    \
    }                                                                          \
  }
SPX__AMG_SORT(spx__amg_sort_keys, int64_t)
SPX__AMG_SORT(spx__amg_sort_i32, int32_t)
#undef SPX__AMG_SORT

/* Row i's kept entries as keys (aggregate << 32 | the entry's offset in the row), sorted: P's
 * columns in increasing order, each column's entries in A's column order. key holds the row. */
static int64_t spx__amg_p_keys(const spx_csr *A, const uint8_t *mask, const int32_t *agg, int64_t i, int64_t *key) {
  const int64_t lo = A->row_ptr[i];
  int64_t k, m = 0;
  for (k = lo; k < A->row_ptr[i + 1]; k++)
    if (SPX__AMG_KEPT(A, mask, k, i)) key[m++] = ((int64_t)agg[A->col_idx[k]] << 32) | (k - lo);
  spx__amg_sort_keys(key, m);
  return m;
}

/* P's entries in row i: the distinct aggregates of its kept entries. */
static int64_t spx__amg_p_count(const spx_csr *A, const uint8_t *mask, const int32_t *agg, int64_t i, int64_t *key) {
  const int64_t m = spx__amg_p_keys(A, mask, agg, i, key);
  int64_t c = 0, q;
  for (q = 0; q < m; q++) c += q == 0 || (key[q] >> 32) != (key[q - 1] >> 32);
  return c;
}

/* Row i of P = F T from P->row_ptr[i]: F = I - s D_F^-1 A_F, T[j][agg[j]] = scale[agg[j]]; each
 * column an aggregate (increasing), its value the sum in A's column order of
 * (delta_ij - (s / dF[i]) a_F,ij) scale: the kernel's order, each step rounded alone (the kernel
 * finds each next aggregate by a pass over the row; the host sorts the row once, as coarse rows
 * are long). */
static void spx__amg_p_fill(const spx_csr *A, const uint8_t *mask, const double *dF, const int32_t *agg,
                            const double *scale, double s, int64_t i, spx_csr *P, int64_t *key) {
  const double sd = s / dF[i];
  const int64_t m = spx__amg_p_keys(A, mask, agg, i, key), lo = A->row_ptr[i];
  int64_t q = P->row_ptr[i], e;
  for (e = 0; e < m; e++) {
    const int32_t c = (int32_t)(key[e] >> 32);
    const int64_t k = lo + (key[e] & 0xffffffff);
    const int diag = A->col_idx[k] == i;
    const double f = (diag ? 1.0 : 0.0) - sd * (diag ? dF[i] : A->val.d[k]), t = f * scale[c];
    if (e == 0 || (key[e - 1] >> 32) != c) {
      if (e > 0) q++;
      P->col_idx[q] = c;
      P->val.d[q] = t;
    } else {
      P->val.d[q] = P->val.d[q] + t;
    }
  }
}

/* The tentative P's column scales 1 / sqrt(|aggregate|) (orthonormal columns: T^T T = I). */
static double *spx__amg_agg_scales(int64_t n, const int32_t *agg, int64_t nagg) {
  double *scale = (double *)spx__calloc((size_t)nagg + 1, sizeof(double));
  int64_t i, c;
  if (!scale) return NULL;
  for (i = 0; i < n; i++) scale[agg[i]] += 1;
  for (c = 0; c < nagg; c++) scale[c] = 1.0 / spx__sqrt(scale[c]);
  return scale;
}

spx_status spx__amg_prolong(const spx_csr *A, const uint8_t *mask, const double *dF, const int32_t *agg, int64_t nagg,
                            double omega, spx_csr **out) {
  const int64_t n = A->nrows;
  double *scale = spx__amg_agg_scales(n, agg, nagg);
  int64_t *cnt = NULL, i, rmax = 0;
  spx_csr *P = NULL;
  spx_status st = SPX_OK;
  int pass, fail = 0;
  *out = NULL;
  if (!scale || !(cnt = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t)))) {
    SPX_FREE(scale);
    return SPX_OUT_OF_MEMORY;
  }
  for (i = 0; i < n; i++) rmax = SPX__MAX(rmax, A->row_ptr[i + 1] - A->row_ptr[i]);
  for (pass = 0; pass < 2 && !st; pass++) {
    if (pass == 1) {
      spx__amg_scan(cnt, n);
      if ((st = spx_csr_create(n, nagg, cnt[n], SPX_DOUBLE, &P))) break;
      memcpy(P->row_ptr, cnt, ((size_t)n + 1) * sizeof(int64_t));
    }
    /* rows in parallel where the work is (a coarse level's rows are few and long), each thread
     * with its own keys */
#if defined(_OPENMP)
#pragma omp parallel if (n > 16384 || A->nnz > SPX__AMG_PAR_NNZ)
#endif
    {
      int64_t *key = (int64_t *)spx__alloc((size_t)rmax + 1, sizeof(int64_t)), r;
      if (!key) SPX__AMG_FLAG(fail, 1);
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
      for (r = 0; r < n; r++) {
        if (!key) continue;
        if (pass == 0) cnt[r + 1] = omega == 0 ? 1 : spx__amg_p_count(A, mask, agg, r, key);
        else if (omega != 0) spx__amg_p_fill(A, mask, dF, agg, scale, omega, r, P, key);
        else {
          P->col_idx[r] = agg[r];
          P->val.d[r] = scale[agg[r]];
        }
      }
      SPX_FREE(key);
    }
    if (fail) st = SPX_OUT_OF_MEMORY;
  }
  if (st) spx_csr_destroy(P);
  else *out = P;
  SPX_FREE(scale);
  SPX_FREE(cnt);
  return st;
}

/* A fixed pseudo-random value in [-1, 1) for row i: the power iteration's start, the same for any
 * thread count. */
static double spx__amg_hash01(int64_t i) {
  return (double)(spx__amg_mix(i) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Rows per chunk of the power iteration's sums: per-chunk partials added in chunk order, so the
 * estimate does not depend on the thread count. SPX__AMG_CHUNK rows, halved (to 64) while a chunk
 * holds more than SPX__AMG_CHUNK_NNZ nonzeros, so that a coarse level's few long rows still make
 * chunks enough for the threads; the size comes from the matrix alone. */
#define SPX__AMG_CHUNK 4096
#define SPX__AMG_CHUNK_NNZ 32768
static int64_t spx__amg_chunk_rows(const spx_csr *A) {
  int64_t c = SPX__AMG_CHUNK;
  while (c > 64 && A->nrows > 0 && c * A->nnz > SPX__AMG_CHUNK_NNZ * A->nrows) c /= 2;
  return c;
}

/* Entry k of row i counts in W: always without a mask, else the diagonal and strong entries. */
#define SPX__AMG_IN_W(A, mask, k, i) (!(mask) || (A)->col_idx[k] == (i) || (mask)[k])
/* Its weight: dd on the diagonal, a_ik elsewhere. */
#define SPX__AMG_W(A, dd, k, i) ((A)->col_idx[k] == (i) ? (dd)[i] : (A)->val.d[k])

/* rho from the power iteration's last Rayleigh quotient lam (a lower bound) and the Gershgorin
 * bound: 1.1 lam where that is below the bound, else the bound. */
static double spx__amg_rho_of(double lam, double gersh) {
  return lam > 0 && spx__amg_finite(lam) && SPX__AMG_RHO_SAFETY * lam < gersh ? SPX__AMG_RHO_SAFETY * lam : gersh;
}

/* The Gershgorin bound max_i sum_k |W_ik| / |dd_i|. */
static double spx__amg_gershgorin(const spx_csr *A, const uint8_t *mask, const double *dd) {
  const int64_t n = A->nrows;
  double gersh = 0;
  int64_t i;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(max : gersh) if (n > 16384 || A->nnz > SPX__AMG_PAR_NNZ)
#endif
  for (i = 0; i < n; i++) {
    double s = 0, di = dd[i] < 0 ? -dd[i] : dd[i];
    int64_t q;
    for (q = A->row_ptr[i]; q < A->row_ptr[i + 1]; q++)
      if (SPX__AMG_IN_W(A, mask, q, i)) s += SPX__ABS(SPX__AMG_W(A, dd, q, i));
    if (s / di > gersh) gersh = s / di;
  }
  return gersh;
}

/* An upper estimate of rho(D^-1 W) (the header's rule; W = A with diagonal dd, its weak entries
 * left out when mask is given): iters power iterations, the Rayleigh quotient x.Wx / x.Dx times
 * 1.1, capped by the Gershgorin bound. Each step is one pass over the rows (y = W x, the two sums
 * and max |y_i / dd_i| per chunk), then x = D^-1 y scaled by that max. */
spx_status spx__amg_rho(const spx_csr *A, const uint8_t *mask, const double *dd, int iters, double *rho) {
  const int64_t n = A->nrows, chunk = spx__amg_chunk_rows(A), nc = (n + chunk - 1) / chunk, n_ = n;
  double gersh = spx__amg_gershgorin(A, mask, dd), lam = 0, *x, *y, *part;
  int64_t i, c;
  int k;
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
      const int64_t lo = c * chunk, hi = SPX__MIN(n, lo + chunk);
      double p0 = 0, p1 = 0, mx = 0;
      int64_t r, q;
      for (r = lo; r < hi; r++) {
        double t = 0;
        for (q = A->row_ptr[r]; q < A->row_ptr[r + 1]; q++)
          if (SPX__AMG_IN_W(A, mask, q, r)) t += SPX__AMG_W(A, dd, q, r) * x[A->col_idx[q]];
        y[r] = t;
        p0 += x[r] * t;
        p1 += x[r] * dd[r] * x[r];
        t /= dd[r];
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
    for (i = 0; i < n_; i++) x[i] = y[i] / dd[i] * sc;
  }
  SPX_FREE(x);
  SPX_FREE(y);
  SPX_FREE(part);
  *rho = spx__amg_rho_of(lam, gersh);
  return SPX_OK;
}

/* Sorts a row's columns ascending (spx__amg_sort_i32). */
void spx__amg_sort_cols(int32_t *c, int64_t k) { spx__amg_sort_i32(c, k); }

/* C = A B (Gustavson, two passes: each row's distinct columns with a marker, then its values in a
 * dense accumulator; columns sorted). Rows in parallel, each thread with its own marker and
 * accumulator of B's width; a row's sums run in A's then B's column order whatever the thread. */
spx_status spx__amg_spgemm(const spx_csr *A, const spx_csr *B, spx_csr **out) {
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
    if (!mark) SPX__AMG_FLAG(fail, 1);
    else
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
    if (!mark || !acc) SPX__AMG_FLAG(fail, 1);
    else
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
    if (!acc) SPX__AMG_FLAG(fail, 1);
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

/* ---- A level: strength, aggregates, P, R, the next A ------------------------------------------ */
/* The diagonal d's first zero or non-finite entry is SPX_INVALID_ARGUMENT naming it. */
static spx_status spx__amg_diag_check(const char *fn, int level, int64_t n, const double *d) {
  int64_t i, bad = n;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(min : bad) if (n > 16384)
#endif
  for (i = 0; i < n; i++)
    if ((d[i] == 0 || !spx__amg_finite(d[i])) && i < bad) bad = i;
  if (bad == n) return SPX_OK;
  if (level == 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: a[%lld][%lld] = %g: AMG needs a nonzero finite diagonal", fn,
                     (long long)bad, (long long)bad, d[bad]);
  return spx__fail(SPX_INVALID_ARGUMENT, "%s: the level-%d operator has a[%lld][%lld] = %g (a coarse "
                   "diagonal of zero: the matrix is not positive definite, or its entries overflow)", fn, level,
                   (long long)bad, (long long)bad, d[bad]);
}

spx_status spx__amg_diag(const char *fn, const spx_csr *A, int level, double *d) {
  const int64_t n_ = A->nrows;
  int64_t i;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k;
    d[i] = 0;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
      if (A->col_idx[k] == i) d[i] = A->val.d[k];
  }
  return spx__amg_diag_check(fn, level, A->nrows, d);
}

/* A GPU level runs its steps there while its A is on the device or it coarsens (a level that only
 * smooths is not worth the upload). */
spx_status spx__amg_level_diag(spx_amg *m, int l, int coarsens, double *d) {
  spx__amg_level *L = &m->lv[l];
  spx_status st;
  L->setup_gpu = 0;
  /* classical coarsening runs on the host only (amg_rs_impl.h has no GPU twin) */
  if (m->o.coarsening == SPX_AMG_SA && spx__amg_gpu_wanted(m, l) && (coarsens || L->dA)) {
    if (!(st = spx__amg_gpu_diag(m, l, d))) {
      L->setup_gpu = 1;
      return spx__amg_diag_check("spx_amg_create", l, L->A->nrows, d);
    }
    if (!spx__amg_gpu_fallback(m, l, "diagonal", st)) return st;
  }
  return spx__amg_diag("spx_amg_create", L->A, l, d);
}

/* Level l's device A has the host's values: set up there, or refreshed by an update (the level's
 * own products ran there, or the level above's made it). */
static int spx__amg_gpu_current(const spx_amg *m, int l) {
  const spx__amg_level *L = &m->lv[l];
  return m->cuda && L->dA && (L->gpu || (l > 0 && m->lv[l - 1].gpu) || (L->setup_gpu && m->gw.d && m->gw.l == l));
}

spx_status spx__amg_level_rho(spx_amg *m, int l, const double *d, double *rho) {
  spx__amg_level *L = &m->lv[l];
  double lam = 0, gersh = 0;
  spx_status st;
  L->rho_gpu = 0;
  if (spx__amg_gpu_current(m, l)) {
    if (!(st = spx__amg_gpu_rho(m, l, 0, d, m->o.power_iters, &lam, &gersh))) {
      L->rho_gpu = 1;
      *rho = spx__amg_rho_of(lam, gersh);
      return SPX_OK;
    }
    if (st != SPX_UNSUPPORTED && st != SPX_DEVICE_OUT_OF_MEMORY) return st;
    spx_clear_error(); /* the host's estimate instead */
  }
  return spx__amg_rho(L->A, NULL, d, m->o.power_iters, rho);
}

/* Level l's host results freed (a GPU path that failed part way: the host makes them again). */
static void spx__amg_level_reset(spx_amg *m, int l) {
  spx__amg_level *L = &m->lv[l];
  SPX_FREE(L->agg);
  spx_csr_destroy(L->P);
  spx_csr_destroy(L->R);
  spx_csr_destroy(L->AP);
  spx_csr_destroy(m->lv[l + 1].A);
  L->agg = NULL;
  L->P = L->R = L->AP = m->lv[l + 1].A = NULL;
  L->agg_gpu = L->p_gpu = L->rap_gpu = 0;
}

/* The stall test: nagg aggregates of n rows are too many (the report says why it stopped). */
static int spx__amg_stalls(spx_amg *m, int l, int64_t n, int64_t nagg) {
  if ((double)nagg <= SPX__AMG_STALL * (double)n) return 0;
  snprintf(m->rep.stop, sizeof m->rep.stop, "coarsening stalled: level %d's %lld rows made %lld aggregates", l + 1,
           (long long)n, (long long)nagg);
  return 1;
}

/* Level l on the host: the twins, then R = P^T and the Galerkin products. */
static spx_status spx__amg_coarsen_host(spx_amg *m, int l, const double *d, double theta, int *stalled, double *rhoA) {
  spx__amg_level *L = &m->lv[l];
  spx_amg_report *rep = &m->rep;
  const int64_t n = L->A->nrows;
  uint8_t *mask = (uint8_t *)spx__alloc((size_t)L->A->nnz + 1, 1);
  double *dF = (double *)spx__alloc((size_t)n + 1, sizeof(double)), t = spx__now(), rho = 0, omega = 0;
  int64_t nagg = 0, weak = 0;
  spx_status st = SPX_OK;
  if (!mask || !dF || !(L->agg = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t)))) {
    st = SPX_OUT_OF_MEMORY;
    goto done;
  }
  spx__amg_strength(L->A, d, theta, mask, dF, &weak);
  rep->level[l].weak = weak;
  rep->strength_ms += 1e3 * (spx__now() - t);
  t = spx__now();
  L->mis2 = m->o.aggregation == SPX_AMG_AGG_MIS2;
  st = spx__amg_aggregate(L->A, mask, L->mis2, L->agg, &nagg);
  rep->aggregate_ms += 1e3 * (spx__now() - t);
  if (st || (*stalled = spx__amg_stalls(m, l, n, nagg))) {
    SPX_FREE(L->agg);
    L->agg = NULL;
    goto done;
  }
  t = spx__now();
  if (m->o.prolong_omega > 0) {
    if ((st = spx__amg_rho(L->A, mask, dF, m->o.power_iters, &rho))) goto done;
    omega = m->o.prolong_omega / rho;
    if (weak == 0) *rhoA = rho; /* A_F = A */
  }
  rep->level[l].omega = omega;
  if (!(st = spx__amg_prolong(L->A, mask, dF, L->agg, nagg, omega, &L->P))) st = spx_csr_transpose(L->P, &L->R);
  rep->prolong_ms += 1e3 * (spx__now() - t);
  if (st) goto done;
  t = spx__now();
  if (!(st = spx__amg_spgemm(L->A, L->P, &L->AP))) st = spx__amg_spgemm(L->R, L->AP, &m->lv[l + 1].A);
  rep->rap_ms += 1e3 * (spx__now() - t);
done:
  SPX_FREE(mask);
  SPX_FREE(dF);
  return st;
}

/* Level l on the GPU (its diagonal there already): the same steps by templates/amg_setup.cu, the
 * greedy aggregation on the host from the GPU's strength; R and the products by cuSPARSE. Each
 * phase's time counts in its field and in the GPU's share. */
static spx_status spx__amg_coarsen_gpu(spx_amg *m, int l, double theta, int *stalled, double *rhoA, const char **step) {
  spx__amg_level *L = &m->lv[l];
  spx_amg_report *rep = &m->rep;
  const int64_t n = L->A->nrows;
  uint8_t *mask = NULL;
  double t = spx__now(), dt, lam = 0, gersh = 0, omega = 0;
  int64_t nagg = 0, weak = 0;
  spx_status st;
  *step = "strength";
  st = spx__amg_gpu_strength(m, l, theta, &weak);
  rep->level[l].weak = weak;
  dt = 1e3 * (spx__now() - t);
  rep->strength_ms += dt;
  rep->strength_gpu_ms += dt;
  if (st) return st;
  t = spx__now();
  *step = "aggregation";
  if (!(L->agg = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t)))) return SPX_OUT_OF_MEMORY;
  L->mis2 = m->o.aggregation != SPX_AMG_AGG_GREEDY; /* AUTO: the GPU's rule */
  if (L->mis2) st = spx__amg_gpu_aggregate(m, l, L->agg, &nagg);
  else if (!(mask = (uint8_t *)spx__alloc((size_t)L->A->nnz + 1, 1))) st = SPX_OUT_OF_MEMORY;
  else if (!(st = spx__amg_gpu_mask_down(m, l, mask)) && !(st = spx__amg_aggregate(L->A, mask, 0, L->agg, &nagg)))
    st = spx__amg_gpu_agg_up(m, l, L->agg);
  SPX_FREE(mask);
  dt = 1e3 * (spx__now() - t);
  rep->aggregate_ms += dt;
  rep->aggregate_gpu_ms += dt;
  if (st) return st;
  L->agg_gpu = 1;
  if ((*stalled = spx__amg_stalls(m, l, n, nagg))) {
    SPX_FREE(L->agg);
    L->agg = NULL;
    return SPX_OK;
  }
  t = spx__now();
  *step = "P";
  if (m->o.prolong_omega > 0 && !(st = spx__amg_gpu_rho(m, l, 1, NULL, m->o.power_iters, &lam, &gersh))) {
    omega = m->o.prolong_omega / spx__amg_rho_of(lam, gersh);
    if (weak == 0) *rhoA = spx__amg_rho_of(lam, gersh);
  }
  rep->level[l].omega = omega;
  if (!st) st = spx__amg_gpu_prolong(m, l, nagg, omega, omega == 0);
  dt = 1e3 * (spx__now() - t);
  rep->prolong_ms += dt;
  rep->prolong_gpu_ms += dt;
  if (st) return st;
  t = spx__now();
  *step = "RAP";
  st = spx__amg_gpu_rap(m, l);
  dt = 1e3 * (spx__now() - t);
  rep->rap_ms += dt;
  rep->rap_gpu_ms += dt;
  return st;
}

spx_status spx__amg_coarsen(spx_amg *m, int l, const double *d, int *stalled, double *rhoA) {
  spx__amg_level *L = &m->lv[l];
  double theta = m->o.theta;
  const char *step = "strength";
  int k;
  spx_status st;
  for (k = 0; k < l; k++) theta *= m->o.theta_decay;
  *stalled = 0;
  *rhoA = -1;
  if (L->setup_gpu) {
    if (!(st = spx__amg_coarsen_gpu(m, l, theta, stalled, rhoA, &step))) return SPX_OK;
    if (!spx__amg_gpu_fallback(m, l, step, st)) return st;
    spx__amg_level_reset(m, l); /* the level again, on the host */
    *stalled = 0;
    *rhoA = -1;
  }
  return spx__amg_coarsen_host(m, l, d, theta, stalled, rhoA);
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
