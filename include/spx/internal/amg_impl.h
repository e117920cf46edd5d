/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/amg.h: smoothed-aggregation setup on the host (strength, aggregation,
 * prolongation, Galerkin products, colorings, the coarse LU), and the V-cycle with a host twin and
 * a GPU path (templates/amg.cu) that take the same steps in the same order. */
#include "common.h"
#include "cuda_types.h"
#include "../amg.h"
#include "../device.h"
#include "../jit.h"
#include "../loader.h"

/* Host loops over n_ elements run in parallel past this many (each element on its own: the results
 * do not depend on the thread count). */
#if defined(_OPENMP)
#define SPX__AMG_FOR _Pragma("omp parallel for schedule(static) if (n_ > 16384)")
#else
#define SPX__AMG_FOR
#endif

/* Threads per block of every amg kernel (SPX_BLOCK of the template). */
#define SPX__AMG_BLOCK 256
/* A level stalls when its aggregates are more than this share of its rows. */
#define SPX__AMG_STALL 0.9
/* rho: the power iteration's Rayleigh quotient (a lower bound) times this. */
#define SPX__AMG_RHO_SAFETY 1.1

/* The kernels of templates/amg.cu. _(ENUM, "kernel name") */
#define SPX__AMG_KERNELS(_)  \
  _(JACOBI, "spx_amg_jacobi") \
  _(CHEB,   "spx_amg_cheb")   \
  _(GS,     "spx_amg_gs")     \
  _(PUT,    "spx_amg_put")    \
  _(DOT,    "spx_amg_dot")

enum {
#define SPX__AMG_KENUM(e, name) SPX__AK_##e,
  SPX__AMG_KERNELS(SPX__AMG_KENUM)
#undef SPX__AMG_KENUM
  SPX__AK_COUNT
};
static const char *const spx__amg_knames[] = {
#define SPX__AMG_KNAME(e, name) name,
    SPX__AMG_KERNELS(SPX__AMG_KNAME)
#undef SPX__AMG_KNAME
};

/* ---- Names and options ------------------------------------------------------------------------ */
static const char *const spx__amg_sm_names[] = {
#define SPX__AMG_SM_NAME(e, name, what) name,
    SPX_AMG_SMOOTHERS(SPX__AMG_SM_NAME)
#undef SPX__AMG_SM_NAME
};
static const char *const spx__amg_sm_what[] = {
#define SPX__AMG_SM_WHAT(e, name, what) what,
    SPX_AMG_SMOOTHERS(SPX__AMG_SM_WHAT)
#undef SPX__AMG_SM_WHAT
};

const char *spx_amg_smoother_name(spx_amg_smoother s) {
  return (unsigned)s < SPX_AMG_SMOOTHER_COUNT ? spx__amg_sm_names[s] : "unknown";
}
const char *spx_amg_smoother_description(spx_amg_smoother s) {
  return (unsigned)s < SPX_AMG_SMOOTHER_COUNT ? spx__amg_sm_what[s] : "unknown smoother";
}

static int spx__amg_streq_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    int x = *a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a, y = *b >= 'A' && *b <= 'Z' ? *b - 'A' + 'a' : *b;
    if (x != y) return 0;
  }
  return *a == *b;
}

spx_status spx_amg_smoother_parse(const char *name, spx_amg_smoother *out) {
  int k;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_smoother_parse: NULL argument");
  for (k = 0; k < SPX_AMG_SMOOTHER_COUNT; k++)
    if (spx__amg_streq_nocase(name, spx__amg_sm_names[k])) {
      *out = (spx_amg_smoother)k;
      return SPX_OK;
    }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown smoother '%s': jacobi, l1jacobi, chebyshev or gs", name);
}

static const char *const spx__amg_cycle_names[] = {
#define SPX__AMG_CYCLE_NAME(e, name, what) name,
    SPX_AMG_CYCLES(SPX__AMG_CYCLE_NAME)
#undef SPX__AMG_CYCLE_NAME
};

const char *spx_amg_cycle_type_name(spx_amg_cycle_type c) {
  return (unsigned)c < SPX_AMG_CYCLE_COUNT ? spx__amg_cycle_names[c] : "unknown";
}

spx_status spx_amg_cycle_type_parse(const char *name, spx_amg_cycle_type *out) {
  int k;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_cycle_type_parse: NULL argument");
  for (k = 0; k < SPX_AMG_CYCLE_COUNT; k++)
    if (spx__amg_streq_nocase(name, spx__amg_cycle_names[k])) {
      *out = (spx_amg_cycle_type)k;
      return SPX_OK;
    }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown cycle '%s': v, w or f", name);
}

void spx_amg_options_default(spx_amg_options *o) {
  int l;
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->theta = 0.08;
  o->theta_decay = 0.5;
  o->max_levels = 10;
  o->coarse_size = 500;
  o->dense_max = 2000;
  o->coarse_sweeps = 20;
  o->prolong_omega = 4.0 / 3.0;
  o->power_iters = 15;
  o->smoother = SPX_AMG_CHEBYSHEV;
  o->pre_sweeps = o->post_sweeps = 1;
  o->cheb_degree = 2;
  o->cheb_ratio = 0.3;
  o->coloring = SPX_AMG_COLOR_GREEDY;
  o->relaxed_fraction = 0.9;
  for (l = 0; l < SPX_AMG_MAX_LEVELS; l++) {
    o->level[l].smoother = o->level[l].pre_sweeps = o->level[l].post_sweeps = -1;
    o->level[l].damping = 0;
  }
}

/* ---- The hierarchy ----------------------------------------------------------------------------- */
typedef struct spx__amg_level {
  spx_csr *A, *P, *R;        /* host, double; P, R NULL on the coarsest */
  spx_csr *AP;               /* A P, kept for spx_amg_update's numeric products (NULL on the coarsest) */
  int32_t *agg;              /* rows -> aggregate (NULL on the coarsest) */
  double *dinv;              /* the smoother's inverse diagonal (l1jacobi: 1 / sum_j |a_ij|) */
  int smoother, pre, post;
  double w, rho;             /* damping; chebyshev's upper end */
  /* gs: the rows in color order (row k of C is row perm[k] of A), colors at coff[c] .. coff[c+1] */
  int ncolors;
  int32_t *color, *perm;
  int64_t *coff;
  spx_csr *C;
  spx_plan *pA, *pP, *pR;
  void *x, *b, *r, *t;       /* vectors: host arrays or device pointers (level 0: x, b the caller's) */
  spx_devptr ddinv, dsp, dcol, dval, dperm; /* CUDA: dinv and the gs slices (spx__amg_slices) */
  int64_t *soff;             /* CUDA gs: color c's first slice */
} spx__amg_level;

struct spx_amg {
  spx_context *ctx;
  int own_ctx, cuda, nl;
  int broken;                /* a failed spx_amg_update left the levels inconsistent: no cycles */
  spx_amg_options o;
  spx_plan_options po;       /* every level's plan options (o.plan copied: update makes plans again) */
  spx_plan_device pdev;      /* po.device's copy, when given */
  spx__amg_level lv[SPX_AMG_MAX_LEVELS];
  double *lu;                /* the coarsest level's dense LU (row-major), NULL when smoothed */
  int32_t *piv;
  double *hb, *hx;           /* CUDA: the coarsest b and x on the host */
  void *fn[SPX__AK_COUNT];   /* CUDA kernels */
  unsigned grid;
  spx_devptr part;           /* CUDA: the dot's per-block sums */
  double *hpart;
  int64_t spmv0;             /* fine-level SpMVs of A (spx_amg_solve's report) */
  spx_amg_report rep;
};

/* Vectors are void * on both backends: a host array, or a device pointer cast. */
#define SPX__AMG_DP(v) ((spx_devptr)(uintptr_t)(v))
#define SPX__AMG_VP(d) ((void *)(uintptr_t)(d))

static int spx__amg_finite(double x) { return x - x == 0.0; }

/* ---- Small sparse helpers ---------------------------------------------------------------------- */
/* A pattern: row pointers and columns (the strength graph, the coloring's adjacency). */
typedef struct spx__amg_graph {
  int64_t n;
  int64_t *rp;
  int32_t *ci;
} spx__amg_graph;

static void spx__amg_graph_free(spx__amg_graph *g) {
  SPX_FREE(g->rp);
  SPX_FREE(g->ci);
  g->rp = NULL;
  g->ci = NULL;
}

/* rp[0..n] from per-row counts in rp[1..n] (exclusive prefix sum in place). */
static void spx__amg_scan(int64_t *rp, int64_t n) {
  int64_t i;
  rp[0] = 0;
  for (i = 0; i < n; i++) rp[i + 1] += rp[i];
}

/* The diagonal a_ii of each row; a zero or non-finite one is SPX_INVALID_ARGUMENT naming it. */
static spx_status spx__amg_diag(const char *fn, const spx_csr *A, int level, double *d) {
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
static spx_status spx__amg_rho(const spx_csr *A, const double *d, int iters, double *rho) {
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
static spx_status spx__amg_spgemm_values(const spx_csr *A, const spx_csr *B, spx_csr *C) {
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

/* ---- Coloring ---------------------------------------------------------------------------------- */
/* G: the couplings the coloring keeps, |a_ij| > 0 off the diagonal (relaxed: |a_ij| at least frac
 * times the row's largest off-diagonal |a_ik|). */
static spx_status spx__amg_couplings(const spx_csr *A, int relaxed, double frac, spx__amg_graph *G) {
  const int64_t n = A->nrows, n_ = n;
  int64_t i;
  G->n = n;
  G->ci = NULL;
  if (!(G->rp = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
  for (i = 0; i < 2; i++) { /* pass 0 counts, pass 1 fills */
    int64_t r;
    if (i == 1) {
      spx__amg_scan(G->rp, n);
      if (!(G->ci = (int32_t *)spx__alloc((size_t)G->rp[n] + 1, sizeof(int32_t)))) {
        spx__amg_graph_free(G);
        return SPX_OUT_OF_MEMORY;
      }
    }
    SPX__AMG_FOR
    for (r = 0; r < n_; r++) {
      int64_t k, c = 0, q = i ? G->rp[r] : 0;
      double mx = 0, cut;
      for (k = A->row_ptr[r]; k < A->row_ptr[r + 1]; k++)
        if (A->col_idx[k] != r && SPX__ABS(A->val.d[k]) > mx) mx = SPX__ABS(A->val.d[k]);
      cut = relaxed ? frac * mx : 0;
      for (k = A->row_ptr[r]; k < A->row_ptr[r + 1]; k++) {
        double v = SPX__ABS(A->val.d[k]);
        if (A->col_idx[k] == r || v == 0 || (relaxed && v < cut)) continue;
        if (i) G->ci[q++] = A->col_idx[k];
        else c++;
      }
      if (!i) G->rp[r + 1] = c;
    }
  }
  return SPX_OK;
}

/* G^T (the couplings seen from the other row: rows of one color must not touch either way). */
static spx_status spx__amg_graph_transpose(const spx__amg_graph *G, spx__amg_graph *T) {
  const int64_t n = G->n;
  int64_t i, k, *pos;
  T->n = n;
  T->ci = NULL;
  if (!(T->rp = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
  if (!(T->ci = (int32_t *)spx__alloc((size_t)G->rp[n] + 1, sizeof(int32_t))) ||
      !(pos = (int64_t *)spx__alloc((size_t)n + 1, sizeof(int64_t)))) {
    spx__amg_graph_free(T);
    return SPX_OUT_OF_MEMORY;
  }
  for (k = 0; k < G->rp[n]; k++) T->rp[G->ci[k] + 1]++;
  spx__amg_scan(T->rp, n);
  memcpy(pos, T->rp, (size_t)n * sizeof(int64_t));
  for (i = 0; i < n; i++)
    for (k = G->rp[i]; k < G->rp[i + 1]; k++) T->ci[pos[G->ci[k]]++] = (int32_t)i;
  SPX_FREE(pos);
  return SPX_OK;
}

/* The visiting order: rows in order, or Welsh-Powell (degree in G and G^T, highest first, ties in
 * row order: a counting sort, O(n + max degree)). */
static spx_status spx__amg_color_order(const spx__amg_graph *G, const spx__amg_graph *T, int wp, int32_t *order) {
  const int64_t n = G->n;
  int64_t i, maxd = 0, *cnt;
  if (!wp) {
    for (i = 0; i < n; i++) order[i] = (int32_t)i;
    return SPX_OK;
  }
  for (i = 0; i < n; i++) maxd = SPX__MAX(maxd, G->rp[i + 1] - G->rp[i] + T->rp[i + 1] - T->rp[i]);
  if (!(cnt = (int64_t *)spx__calloc((size_t)maxd + 2, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
  for (i = 0; i < n; i++) cnt[maxd - (G->rp[i + 1] - G->rp[i] + T->rp[i + 1] - T->rp[i]) + 1]++;
  for (i = 0; i <= maxd; i++) cnt[i + 1] += cnt[i];
  for (i = 0; i < n; i++) order[cnt[maxd - (G->rp[i + 1] - G->rp[i] + T->rp[i + 1] - T->rp[i])]++] = (int32_t)i;
  SPX_FREE(cnt);
  return SPX_OK;
}

/* Greedy coloring of A's couplings (the header's rule): color[i], *ncolors. */
static spx_status spx__amg_color(const spx_csr *A, int relaxed, double frac, int wp, int32_t *color, int *ncolors) {
  spx__amg_graph G = {0, NULL, NULL}, T = {0, NULL, NULL};
  int32_t *order = NULL, *seen = NULL;
  int64_t n = A->nrows, i, k, nc = 0, maxd = 0;
  spx_status st;
  if ((st = spx__amg_couplings(A, relaxed, frac, &G)) || (st = spx__amg_graph_transpose(&G, &T))) goto done;
  for (i = 0; i < n; i++) maxd = SPX__MAX(maxd, G.rp[i + 1] - G.rp[i] + T.rp[i + 1] - T.rp[i]);
  if (!(order = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t))) ||
      !(seen = (int32_t *)spx__alloc((size_t)maxd + 2, sizeof(int32_t)))) {
    st = SPX_OUT_OF_MEMORY;
    goto done;
  }
  if ((st = spx__amg_color_order(&G, &T, wp, order))) goto done;
  for (i = 0; i <= maxd + 1; i++) seen[i] = -1;
  for (i = 0; i < n; i++) color[i] = -1;
  for (i = 0; i < n; i++) {
    int32_t v = order[i], c = 0;
    for (k = G.rp[v]; k < G.rp[v + 1]; k++)
      if (color[G.ci[k]] >= 0) seen[color[G.ci[k]]] = v;
    for (k = T.rp[v]; k < T.rp[v + 1]; k++)
      if (color[T.ci[k]] >= 0) seen[color[T.ci[k]]] = v;
    while (seen[c] == v) c++; /* at most maxd colors are taken: c <= maxd */
    color[v] = c;
    if (c + 1 > nc) nc = c + 1;
  }
  *ncolors = (int)nc;
done:
  spx__amg_graph_free(&G);
  spx__amg_graph_free(&T);
  SPX_FREE(order);
  SPX_FREE(seen);
  return st;
}

/* The rows of A in color order (a counting sort, stable): coff, perm and C (row k = row perm[k]). */
static spx_status spx__amg_color_csr(const spx_csr *A, const int32_t *color, int ncolors, int64_t **coff,
                                     int32_t **perm, spx_csr **C) {
  const int64_t n = A->nrows;
  int64_t i, *pos = NULL, k;
  spx_status st;
  *coff = NULL;
  *perm = NULL;
  *C = NULL;
  if (!(*coff = (int64_t *)spx__calloc((size_t)ncolors + 1, sizeof(int64_t))) ||
      !(*perm = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t))) ||
      !(pos = (int64_t *)spx__alloc((size_t)ncolors + 1, sizeof(int64_t)))) {
    st = SPX_OUT_OF_MEMORY;
    goto fail;
  }
  for (i = 0; i < n; i++) (*coff)[color[i] + 1]++;
  for (i = 0; i < ncolors; i++) (*coff)[i + 1] += (*coff)[i];
  memcpy(pos, *coff, (size_t)ncolors * sizeof(int64_t));
  for (i = 0; i < n; i++) (*perm)[pos[color[i]]++] = (int32_t)i;
  if ((st = spx_csr_create(n, A->ncols, A->nnz, SPX_DOUBLE, C))) goto fail;
  for (k = 0; k < n; k++) {
    int32_t r = (*perm)[k];
    int64_t len = A->row_ptr[r + 1] - A->row_ptr[r];
    (*C)->row_ptr[k + 1] = (*C)->row_ptr[k] + len;
    memcpy((*C)->col_idx + (*C)->row_ptr[k], A->col_idx + A->row_ptr[r], (size_t)len * sizeof(int32_t));
    memcpy((*C)->val.d + (*C)->row_ptr[k], A->val.d + A->row_ptr[r], (size_t)len * sizeof(double));
  }
  SPX_FREE(pos);
  return SPX_OK;
fail:
  SPX_FREE(pos);
  SPX_FREE(*coff);
  SPX_FREE(*perm);
  spx_csr_destroy(*C);
  *C = NULL;
  return st;
}

/* ---- The coarsest level: dense LU with partial pivoting ---------------------------------------- */
/* A pivot at most 16 n eps max|a_ij| is a zero: the coarsest operator of a singular problem (pure
 * Neumann: P keeps the constant null space) is singular to rounding. The solve then sets that
 * unknown to 0 (a generalized inverse: a consistent system still converges) and *zeros counts them. */
static spx_status spx__amg_lu(const spx_csr *A, double **lu_out, int32_t **piv_out, int64_t *zeros) {
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
static void spx__amg_lu_solve(int64_t n, const double *lu, const int32_t *piv, const double *b, double *x) {
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

/* ---- Setup: the hierarchy ---------------------------------------------------------------------- */
/* The smoother, sweeps and damping of level l (its overrides, else the global options, else the
 * smoother's own damping). */
static void spx__amg_level_cfg(const spx_amg_options *o, int l, spx__amg_level *L) {
  const spx_amg_level_options *lo = &o->level[l];
  L->smoother = lo->smoother >= 0 ? lo->smoother : (int)o->smoother;
  L->pre = lo->pre_sweeps >= 0 ? lo->pre_sweeps : o->pre_sweeps;
  L->post = lo->post_sweeps >= 0 ? lo->post_sweeps : o->post_sweeps;
  L->w = lo->damping > 0 ? lo->damping : o->damping > 0 ? o->damping : L->smoother == SPX_AMG_JACOBI ? 2.0 / 3.0 : 1.0;
}

/* Level l's aggregates, P, R and the next level's A from A and its diagonal d. *stalled: the
 * aggregates were too many (nothing made). *rhoA: rho(D^-1 A) when it came out on the way (no weak
 * entries: A_F = A), else -1. */
static spx_status spx__amg_coarsen(spx_amg *m, int l, const double *d, int *stalled, double *rhoA) {
  spx__amg_level *L = &m->lv[l];
  spx_amg_report *rep = &m->rep;
  const spx_amg_options *o = &m->o;
  const int64_t n = L->A->nrows;
  spx__amg_graph S = {0, NULL, NULL};
  spx_csr *F = NULL, *T = NULL;
  double *dF = NULL, t = spx__now(), rho = 0, omega = 0, theta = o->theta;
  int64_t nagg = 0, weak = 0;
  int k;
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
  if (o->prolong_omega > 0) {
    if (!(dF = (double *)spx__alloc((size_t)n + 1, sizeof(double)))) st = SPX_OUT_OF_MEMORY;
    if (!st) st = spx__amg_filter(L->A, d, theta, &F, dF);
    if (!st) st = spx__amg_rho(F, dF, o->power_iters, &rho);
    if (!st) {
      omega = o->prolong_omega / rho;
      if (weak == 0) *rhoA = rho;
      spx__amg_jacobi_operator(F, dF, omega);
      st = spx__amg_spgemm(F, T, &L->P);
    }
    spx_csr_destroy(F);
    spx_csr_destroy(T);
    SPX_FREE(dF);
    if (st) return st;
  } else L->P = T;
  rep->level[l].omega = omega;
  if ((st = spx_csr_transpose(L->P, &L->R))) return st;
  rep->prolong_ms += 1e3 * (spx__now() - t);
  t = spx__now();
  st = spx__amg_galerkin(L->A, L->P, L->R, &L->AP, &m->lv[l + 1].A);
  rep->rap_ms += 1e3 * (spx__now() - t);
  return st;
}

/* The values of level l's smoother from its diagonal d (L->dinv allocated): the inverse diagonal,
 * rho (chebyshev; rhoA when known, else estimated), and C's values (gs: A's rows in color order). */
static spx_status spx__amg_smoother_values(spx_amg *m, int l, const double *d, double rhoA) {
  spx__amg_level *L = &m->lv[l];
  const spx_csr *A = L->A;
  const int64_t n = A->nrows, n_ = n;
  int64_t i;
  spx_status st;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    if (L->smoother == SPX_AMG_L1_JACOBI) {
      double s = 0;
      int64_t k;
      for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) s += SPX__ABS(A->val.d[k]);
      L->dinv[i] = 1.0 / (d[i] < 0 ? -s : s);
    } else L->dinv[i] = 1.0 / d[i];
  }
  if (L->smoother == SPX_AMG_CHEBYSHEV) {
    if (rhoA > 0) L->rho = rhoA;
    else if ((st = spx__amg_rho(A, d, m->o.power_iters, &L->rho))) return st;
  }
  if (L->C) {
    SPX__AMG_FOR
    for (i = 0; i < n_; i++) {
      const int32_t r = L->perm[i];
      memcpy(L->C->val.d + L->C->row_ptr[i], A->val.d + A->row_ptr[r],
             (size_t)(A->row_ptr[r + 1] - A->row_ptr[r]) * sizeof(double));
    }
  }
  return SPX_OK;
}

/* Level l's smoother from its diagonal d: the inverse diagonal, rho (chebyshev), the coloring and
 * the color-ordered rows (gs). */
static spx_status spx__amg_smoother_setup(spx_amg *m, int l, const double *d, double rhoA) {
  spx__amg_level *L = &m->lv[l];
  const spx_csr *A = L->A;
  const int64_t n = A->nrows;
  spx_status st;
  if (!(L->dinv = (double *)spx__alloc((size_t)n + 1, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  if ((st = spx__amg_smoother_values(m, l, d, rhoA))) return st;
  if (L->smoother == SPX_AMG_GS) {
    if (!(L->color = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t)))) return SPX_OUT_OF_MEMORY;
    if ((st = spx__amg_color(A, m->o.relaxed_coloring, m->o.relaxed_fraction, m->o.coloring == SPX_AMG_COLOR_WELSH_POWELL,
                             L->color, &L->ncolors)) ||
        (st = spx__amg_color_csr(A, L->color, L->ncolors, &L->coff, &L->perm, &L->C)))
      return st;
  }
  return SPX_OK;
}

/* The levels, their smoothers and the coarse LU, all on the host. */
static spx_status spx__amg_hierarchy(spx_amg *m, const spx_csr *a) {
  spx_amg_report *rep = &m->rep;
  double rhoA[SPX_AMG_MAX_LEVELS], *d = NULL, t;
  int l, stop = 0;
  spx_status st;
  if ((st = spx_csr_copy(a, SPX_DOUBLE, &m->lv[0].A))) return st;
  for (l = 0; !stop; l++) {
    spx__amg_level *L = &m->lv[l];
    const int64_t n = L->A->nrows;
    int stalled = 0;
    rhoA[l] = -1;
    spx__amg_level_cfg(&m->o, l, L);
    t = spx__now();
    if (!(d = (double *)spx__alloc((size_t)n + 1, sizeof(double)))) return SPX_OUT_OF_MEMORY;
    if ((st = spx__amg_diag("spx_amg_create", L->A, l, d))) goto fail;
    rep->smoother_ms += 1e3 * (spx__now() - t);
    if (n <= m->o.coarse_size) {
      snprintf(rep->stop, sizeof rep->stop, "level %d has %lld rows <= coarse_size %lld", l + 1, (long long)n,
               (long long)m->o.coarse_size);
      stop = 1;
    } else if (l + 1 == m->o.max_levels) {
      snprintf(rep->stop, sizeof rep->stop, "max_levels %d reached (the coarsest has %lld rows)", m->o.max_levels,
               (long long)n);
      stop = 1;
    } else {
      if ((st = spx__amg_coarsen(m, l, d, &stalled, &rhoA[l]))) goto fail;
      stop = stalled;
    }
    m->nl = l + 1;
    t = spx__now();
    /* the coarsest level by LU needs no smoother */
    if (!(stop && n <= m->o.dense_max) && (st = spx__amg_smoother_setup(m, l, d, rhoA[l]))) goto fail;
    rep->smoother_ms += 1e3 * (spx__now() - t);
    SPX_FREE(d);
  }
  if (m->lv[m->nl - 1].A->nrows <= m->o.dense_max) {
    t = spx__now();
    st = spx__amg_lu(m->lv[m->nl - 1].A, &m->lu, &m->piv, &rep->coarse_zero_pivots);
    rep->coarse_ms = 1e3 * (spx__now() - t);
  }
  return st;
fail:
  SPX_FREE(d);
  return st;
}

/* ---- Setup: plans and vectors ------------------------------------------------------------------ */
static void spx__amg_plan_name(const spx_plan *p, char *buf, size_t len) {
  if (!p) buf[0] = 0;
  else snprintf(buf, len, "%s", spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr"
                                                                                   : spx_format_name(spx_plan_format(p)));
}

/* A plan of a with the options every level shares (force NULL: theirs), built and its kernel final
 * (tiered JIT): a stand-in kernel would make the cycle's rounding depend on timing. */
static spx_status spx__amg_plan(spx_amg *m, const spx_csr *a, int no_diag, const char *force, spx_plan **p) {
  spx_plan_options o = m->po;
  spx_status st;
  o.dtype = SPX_DOUBLE;
  if (force) o.force = force;
  if (no_diag) o.no_diagonal = 1;
  if ((st = spx_plan_create(m->ctx, a, &o, p)) || (st = spx_plan_build(*p)) || (st = spx_plan_wait(*p)))
    return spx__wrap(st, "spx_amg_create: the plan of a %lld x %lld operator", (long long)a->nrows, (long long)a->ncols);
  return SPX_OK;
}

static spx_status spx__amg_plans(spx_amg *m) {
  double t = spx__now();
  int l;
  spx_status st;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    if ((st = spx__amg_plan(m, L->A, 0, NULL, &L->pA))) return st;
    if (L->P && ((st = spx__amg_plan(m, L->P, 1, NULL, &L->pP)) || (st = spx__amg_plan(m, L->R, 1, NULL, &L->pR))))
      return st;
  }
  m->rep.plan_ms = 1e3 * (spx__now() - t);
  return SPX_OK;
}

/* Work vectors of every level (level 0's x and b are the caller's): host arrays. */
static spx_status spx__amg_host_vectors(spx_amg *m) {
  int l;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    size_t n = (size_t)L->A->nrows + 1;
    if ((l > 0 && (!(L->x = spx__calloc(n, sizeof(double))) || !(L->b = spx__calloc(n, sizeof(double))))) ||
        !(L->r = spx__calloc(n, sizeof(double))) || !(L->t = spx__calloc(n, sizeof(double))))
      return SPX_OUT_OF_MEMORY;
  }
  return SPX_OK;
}

static spx_status spx__amg_upload(spx_amg *m, const void *src, size_t bytes, spx_devptr *dst) {
  spx_status st;
  if ((st = spx_device_alloc(m->ctx, bytes + 8, dst))) return st;
  return bytes ? spx_device_upload(m->ctx, *dst, src, bytes) : SPX_OK;
}

/* CUDA gs: the color-ordered rows of C in slices of 32 rows, column major (the template's layout):
 * soff[c] the first slice of color c, sp[s] slice s's first slot, sp[s + 1] - sp[s] 32 times its
 * longest row; padding is (the row's own column, 0), lanes past a color's last row (0, 0). Built
 * on the host, uploaded with perm, freed. values_only: the layout is on the device already (the
 * same pattern, so the same slots): only the values go up. */
static spx_status spx__amg_slices(spx_amg *m, spx__amg_level *L, int values_only) {
  const spx_csr *C = L->C;
  int64_t ns = 0, s, c, k, *sp = NULL;
  int32_t *col = NULL;
  double *val = NULL;
  spx_status st = SPX_OUT_OF_MEMORY;
  if (!L->soff && !(L->soff = (int64_t *)spx__alloc((size_t)L->ncolors + 1, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
  for (c = 0; c < L->ncolors; c++) {
    L->soff[c] = ns;
    ns += (L->coff[c + 1] - L->coff[c] + 31) / 32;
  }
  L->soff[L->ncolors] = ns;
  if (!(sp = (int64_t *)spx__calloc((size_t)ns + 1, sizeof(int64_t)))) goto done;
  for (c = 0; c < L->ncolors; c++)
    for (s = L->soff[c]; s < L->soff[c + 1]; s++) {
      int64_t k0 = L->coff[c] + 32 * (s - L->soff[c]), k1 = SPX__MIN(k0 + 32, L->coff[c + 1]), w = 0;
      for (k = k0; k < k1; k++) w = SPX__MAX(w, C->row_ptr[k + 1] - C->row_ptr[k]);
      sp[s + 1] = sp[s] + 32 * w;
    }
  if (!(col = (int32_t *)spx__calloc((size_t)sp[ns] + 1, sizeof(int32_t))) ||
      !(val = (double *)spx__calloc((size_t)sp[ns] + 1, sizeof(double))))
    goto done;
  for (c = 0; c < L->ncolors; c++)
    for (s = L->soff[c]; s < L->soff[c + 1]; s++) {
      int64_t k0 = L->coff[c] + 32 * (s - L->soff[c]), k1 = SPX__MIN(k0 + 32, L->coff[c + 1]);
      int64_t w = (sp[s + 1] - sp[s]) / 32, j;
      for (k = k0; k < k1; k++)
        for (j = 0; j < w; j++) {
          int64_t q = sp[s] + 32 * j + (k - k0), e = C->row_ptr[k] + j;
          col[q] = e < C->row_ptr[k + 1] ? C->col_idx[e] : L->perm[k];
          val[q] = e < C->row_ptr[k + 1] ? C->val.d[e] : 0.0;
        }
    }
  if (values_only) st = sp[ns] ? spx_device_upload(m->ctx, L->dval, val, (size_t)sp[ns] * sizeof(double)) : SPX_OK;
  else if (!(st = spx__amg_upload(m, sp, ((size_t)ns + 1) * sizeof(int64_t), &L->dsp)) &&
      !(st = spx__amg_upload(m, col, (size_t)sp[ns] * sizeof(int32_t), &L->dcol)) &&
      !(st = spx__amg_upload(m, val, (size_t)sp[ns] * sizeof(double), &L->dval)))
    st = spx__amg_upload(m, L->perm, (size_t)C->nrows * sizeof(int32_t), &L->dperm);
done:
  SPX_FREE(sp);
  SPX_FREE(col);
  SPX_FREE(val);
  return st;
}

/* CUDA: the kernels, the vectors, the inverse diagonals and the gs arrays on the device; the
 * coarsest b and x on the host. */
static spx_status spx__amg_device(spx_amg *m) {
  const char *defs[2] = {"SPX_VALUE_T=double", "SPX_BLOCK=256"};
  const int64_t n0 = m->lv[0].A->nrows;
  double t = spx__now();
  int64_t g, want;
  int l, k;
  spx_status st;
  for (k = 0; k < SPX__AK_COUNT; k++)
    if ((st = spx_jit_kernel(m->ctx, "amg", spx__amg_knames[k], 2, defs, &m->fn[k]))) return st;
  /* a fixed grid (the dot's partials, and so its sums, depend on it): a few blocks per SM */
  want = m->ctx->info.sm_count > 0 ? 8 * (int64_t)m->ctx->info.sm_count : 1024;
  g = (n0 + SPX__AMG_BLOCK - 1) / SPX__AMG_BLOCK;
  m->grid = (unsigned)SPX__MAX(1, SPX__MIN(g, SPX__MIN(want, 4096)));
  if ((st = spx_device_alloc(m->ctx, (size_t)m->grid * sizeof(double), &m->part))) return st;
  if (!(m->hpart = (double *)spx__alloc(m->grid, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    const int64_t n = L->A->nrows;
    const size_t vb = ((size_t)n + 1) * sizeof(double);
    spx_devptr v[4] = {0, 0, 0, 0};
    for (k = l > 0 ? 0 : 2; k < 4; k++) {
      if ((st = spx_device_alloc(m->ctx, vb, &v[k]))) return st;
      if (k == 0) L->x = SPX__AMG_VP(v[0]);
      if (k == 1) L->b = SPX__AMG_VP(v[1]);
      if (k == 2) L->r = SPX__AMG_VP(v[2]);
      if (k == 3) L->t = SPX__AMG_VP(v[3]);
    }
    if (L->dinv && (st = spx__amg_upload(m, L->dinv, (size_t)n * sizeof(double), &L->ddinv))) return st;
    if (L->C && (st = spx__amg_slices(m, L, 0))) return st;
  }
  if (m->lu) {
    const size_t nc = (size_t)m->lv[m->nl - 1].A->nrows + 1;
    if (!(m->hb = (double *)spx__alloc(nc, sizeof(double))) || !(m->hx = (double *)spx__alloc(nc, sizeof(double))))
      return SPX_OUT_OF_MEMORY;
  }
  st = spx_context_synchronize(m->ctx);
  m->rep.device_ms = 1e3 * (spx__now() - t);
  return st;
}

/* ---- The vector operations: each once, a host twin and a kernel -------------------------------- */
static spx_status spx__amg_launch(spx_amg *m, int k, void **params) {
  const spx__cuda_api *cu = spx__cuda();
  spx_status st;
  if (!cu) return spx__fail(SPX_NOT_AVAILABLE, "spx_amg: no CUDA driver");
  if ((st = spx__ctx_push(m->ctx))) return st;
  st = spx__cu_check(cu->cuLaunchKernel((spx__CUfunction)m->fn[k], m->grid, 1, 1, SPX__AMG_BLOCK, 1, 1, 0, m->ctx->stream,
                                        params, NULL),
                     spx__amg_knames[k]);
  spx__ctx_pop(m->ctx);
  return st;
}

/* y = x */
static spx_status spx__amg_copy(spx_amg *m, int64_t n, void *y, const void *x) {
  if (m->cuda) return spx_device_copy(m->ctx, SPX__AMG_DP(y), SPX__AMG_DP(x), (size_t)n * sizeof(double));
  memcpy(y, x, (size_t)n * sizeof(double));
  return SPX_OK;
}

/* x = 0 */
static spx_status spx__amg_zero(spx_amg *m, int64_t n, void *x) {
  if (m->cuda) return spx_device_memset(m->ctx, SPX__AMG_DP(x), 0, (size_t)n * sizeof(double));
  memset(x, 0, (size_t)n * sizeof(double));
  return SPX_OK;
}

static spx_status spx__amg_spmv(spx_amg *m, spx_plan *p, double alpha, const void *x, double beta, void *y) {
  if (p == m->lv[0].pA) m->spmv0++;
  return spx_plan_spmv(p, alpha, x, beta, y);
}

/* r = b - A x on level l. */
static spx_status spx__amg_resid(spx_amg *m, int l, const void *b, const void *x, void *r) {
  spx_status st;
  if ((st = spx__amg_copy(m, m->lv[l].A->nrows, r, b))) return st;
  return spx__amg_spmv(m, m->lv[l].pA, -1.0, x, 1.0, r);
}

/* x = w dinv r (keep 0: x not read) or x += w dinv r (keep 1). */
static spx_status spx__amg_jacobi(spx_amg *m, int l, const void *r, int keep, void *x) {
  spx__amg_level *L = &m->lv[l];
  const int64_t n = L->A->nrows, n_ = n;
  const double w = L->w, *dinv = L->dinv, *rv = (const double *)r;
  double *xv = (double *)x;
  int64_t i;
  if (m->cuda) {
    long long nn = n;
    double ww = w;
    int kp = keep;
    spx_devptr dd = L->ddinv, rr = SPX__AMG_DP(r), xx = SPX__AMG_DP(x);
    void *pr[] = {&nn, &ww, &dd, &rr, &kp, &xx};
    return spx__amg_launch(m, SPX__AK_JACOBI, pr);
  }
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    double v = w * dinv[i] * rv[i];
    xv[i] = keep ? xv[i] + v : v;
  }
  return SPX_OK;
}

/* d = a d + c dinv r (a 0: d not read), x += d. */
static spx_status spx__amg_cheb_step(spx_amg *m, int l, double a, double c, const void *r, void *d, void *x) {
  spx__amg_level *L = &m->lv[l];
  const int64_t n = L->A->nrows, n_ = n;
  const double *dinv = L->dinv, *rv = (const double *)r;
  double *dv = (double *)d, *xv = (double *)x;
  int64_t i;
  if (m->cuda) {
    long long nn = n;
    double aa = a, cc = c;
    spx_devptr di = L->ddinv, rr = SPX__AMG_DP(r), dd = SPX__AMG_DP(d), xx = SPX__AMG_DP(x);
    void *pr[] = {&nn, &aa, &cc, &di, &rr, &dd, &xx};
    return spx__amg_launch(m, SPX__AK_CHEB, pr);
  }
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    double v = c * dinv[i] * rv[i];
    if (a != 0.0) v += a * dv[i];
    dv[i] = v;
    xv[i] += v;
  }
  return SPX_OK;
}

/* Gauss-Seidel on the rows of color c (the template's spx_amg_gs and spx_amg_put). */
static spx_status spx__amg_gs_color(spx_amg *m, int l, int c, const void *b, void *x) {
  spx__amg_level *L = &m->lv[l];
  const int64_t off = L->coff[c], cnt = L->coff[c + 1] - off, n_ = cnt;
  const int relaxed = m->o.relaxed_coloring;
  const spx_csr *C = L->C;
  const double w = L->w, *dinv = L->dinv, *bv = (const double *)b;
  double *xv = (double *)x, *tv = (double *)L->t;
  int64_t k;
  if (cnt == 0) return SPX_OK;
  if (m->cuda) {
    long long nn = cnt;
    double ww = w;
    spx_devptr rp = L->dsp + (spx_devptr)L->soff[c] * sizeof(int64_t), col = L->dcol, val = L->dval;
    spx_devptr perm = L->dperm + (spx_devptr)off * sizeof(int32_t), di = L->ddinv;
    spx_devptr bb = SPX__AMG_DP(b), xx = SPX__AMG_DP(x), tt = relaxed ? SPX__AMG_DP(L->t) : 0;
    void *pr[] = {&nn, &rp, &col, &val, &perm, &di, &ww, &bb, &xx, &tt};
    void *pp[] = {&nn, &perm, &tt, &xx};
    spx_status st;
    if ((st = spx__amg_launch(m, SPX__AK_GS, pr))) return st;
    return relaxed ? spx__amg_launch(m, SPX__AK_PUT, pp) : SPX_OK;
  }
  SPX__AMG_FOR
  for (k = 0; k < n_; k++) {
    const int32_t row = L->perm[off + k];
    double s = bv[row], v;
    int64_t q;
    for (q = C->row_ptr[off + k]; q < C->row_ptr[off + k + 1]; q++) s -= C->val.d[q] * xv[C->col_idx[q]];
    v = xv[row] + w * dinv[row] * s;
    if (relaxed) tv[k] = v;
    else xv[row] = v;
  }
  if (relaxed) {
    SPX__AMG_FOR
    for (k = 0; k < n_; k++) xv[L->perm[off + k]] = tv[k];
  }
  return SPX_OK;
}

/* a.b: on the host in fixed chunks summed in order; on the GPU per-block sums added in order. */
static spx_status spx__amg_dot(spx_amg *m, int64_t n, const void *a, const void *b, double *out) {
  double s = 0;
  int64_t i;
  if (m->cuda) {
    long long nn = n;
    spx_devptr aa = SPX__AMG_DP(a), bb = SPX__AMG_DP(b);
    void *pr[] = {&nn, &aa, &bb, &m->part};
    spx_status st;
    if ((st = spx__amg_launch(m, SPX__AK_DOT, pr)) ||
        (st = spx_device_download(m->ctx, m->hpart, m->part, (size_t)m->grid * sizeof(double))))
      return st;
    for (i = 0; i < (int64_t)m->grid; i++) s += m->hpart[i];
  } else {
    const double *av = (const double *)a, *bv = (const double *)b;
    for (i = 0; i < n; i++) s += av[i] * bv[i];
  }
  *out = s;
  return SPX_OK;
}

/* ---- The V-cycle ------------------------------------------------------------------------------- */
/* Chebyshev of D^-1 A on [cheb_ratio rho, rho] (Saad, Iterative Methods, Algorithm 12.1, with the
 * diagonal as preconditioner): degree steps, the first from the residual, each later one after
 * r -= A d. r: the level's residual vector, d: its t vector. */
static spx_status spx__amg_chebyshev(spx_amg *m, int l, const void *b, void *x, int xzero) {
  spx__amg_level *L = &m->lv[l];
  const double hi = L->rho, lo = m->o.cheb_ratio * hi;
  const double theta = 0.5 * (hi + lo), delta = 0.5 * (hi - lo), sigma = theta / delta;
  double rho_old = 1.0 / sigma, rho_new;
  int k;
  spx_status st;
  if (xzero) {
    if ((st = spx__amg_zero(m, L->A->nrows, x)) || (st = spx__amg_copy(m, L->A->nrows, L->r, b))) return st;
  } else if ((st = spx__amg_resid(m, l, b, x, L->r)))
    return st;
  if ((st = spx__amg_cheb_step(m, l, 0.0, 1.0 / theta, L->r, L->t, x))) return st;
  for (k = 1; k < m->o.cheb_degree; k++) {
    if ((st = spx__amg_spmv(m, L->pA, -1.0, L->t, 1.0, L->r))) return st;
    rho_new = 1.0 / (2.0 * sigma - rho_old);
    if ((st = spx__amg_cheb_step(m, l, rho_new * rho_old, 2.0 * rho_new / delta, L->r, L->t, x))) return st;
    rho_old = rho_new;
  }
  return SPX_OK;
}

/* sweeps applications of level l's smoother to A x = b (xzero: x is taken as 0, not read). */
static spx_status spx__amg_smooth(spx_amg *m, int l, const void *b, void *x, int sweeps, int xzero) {
  spx__amg_level *L = &m->lv[l];
  int s, c;
  spx_status st;
  if (sweeps <= 0) return xzero ? spx__amg_zero(m, L->A->nrows, x) : SPX_OK;
  if (xzero && L->smoother == SPX_AMG_GS && (st = spx__amg_zero(m, L->A->nrows, x))) return st;
  for (s = 0; s < sweeps; s++, xzero = 0) {
    switch (L->smoother) {
    case SPX_AMG_JACOBI:
    case SPX_AMG_L1_JACOBI:
      if (xzero) st = spx__amg_jacobi(m, l, b, 0, x);
      else if (!(st = spx__amg_resid(m, l, b, x, L->r))) st = spx__amg_jacobi(m, l, L->r, 1, x);
      break;
    case SPX_AMG_CHEBYSHEV:
      st = spx__amg_chebyshev(m, l, b, x, xzero);
      break;
    default: /* gs: the colors forward, then backward */
      st = SPX_OK;
      for (c = 0; c < L->ncolors && !st; c++) st = spx__amg_gs_color(m, l, c, b, x);
      for (c = L->ncolors - 1; c >= 0 && !st; c--) st = spx__amg_gs_color(m, l, c, b, x);
    }
    if (st) return st;
  }
  return SPX_OK;
}

/* The coarsest level: the LU (on the host; on CUDA b goes down and x up), else its smoother. */
static spx_status spx__amg_coarse(spx_amg *m, const void *b, void *x, int xzero) {
  const int l = m->nl - 1;
  const int64_t n = m->lv[l].A->nrows;
  spx_status st;
  if (!m->lu) return spx__amg_smooth(m, l, b, x, m->o.coarse_sweeps, xzero);
  if (!m->cuda) {
    spx__amg_lu_solve(n, m->lu, m->piv, (const double *)b, (double *)x);
    return SPX_OK;
  }
  if ((st = spx_device_download(m->ctx, m->hb, SPX__AMG_DP(b), (size_t)n * sizeof(double)))) return st;
  spx__amg_lu_solve(n, m->lu, m->piv, m->hb, m->hx);
  return spx_device_upload(m->ctx, SPX__AMG_DP(x), m->hx, (size_t)n * sizeof(double));
}

/* One cycle of type c (an spx_amg_cycle_type) from level l down. The coarse correction solves
 * A_{l+1} e = R r: V by one cycle, W by two (the second from the first's e), F by an F-cycle then a
 * V-cycle. A second visit reads only N->b, which the first left as it was, and skips the coarsest
 * level's LU (an exact solve again would change nothing). */
static spx_status spx__amg_cycle_from(spx_amg *m, int l, int c, const void *b, void *x, int xzero) {
  spx__amg_level *L = &m->lv[l], *N;
  spx_status st;
  if (l == m->nl - 1) return spx__amg_coarse(m, b, x, xzero);
  N = &m->lv[l + 1];
  if ((st = spx__amg_smooth(m, l, b, x, L->pre, xzero)) || (st = spx__amg_resid(m, l, b, x, L->r)) ||
      (st = spx__amg_spmv(m, L->pR, 1.0, L->r, 0.0, N->b)) || (st = spx__amg_cycle_from(m, l + 1, c, N->b, N->x, 1)))
    return st;
  if (c != SPX_AMG_CYCLE_V && !(l + 1 == m->nl - 1 && m->lu) &&
      (st = spx__amg_cycle_from(m, l + 1, c == SPX_AMG_CYCLE_W ? SPX_AMG_CYCLE_W : SPX_AMG_CYCLE_V, N->b, N->x, 0)))
    return st;
  if ((st = spx__amg_spmv(m, L->pP, 1.0, N->x, 1.0, x))) return st;
  return spx__amg_smooth(m, l, b, x, L->post, 0);
}

/* The options' cycle on the fine level; refused while a failed update left the levels inconsistent. */
static spx_status spx__amg_vcycle(spx_amg *m, int l, const void *b, void *x, int xzero) {
  if (m->broken)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg: the last spx_amg_update failed part way, so the levels are "
                     "inconsistent; update again with a good matrix, or destroy the hierarchy");
  return spx__amg_cycle_from(m, l, (int)m->o.cycle, b, x, xzero);
}

/* ---- Entry points ------------------------------------------------------------------------------ */
static spx_status spx__amg_check_options(const spx_amg_options *o) {
  const char *fn = "spx_amg_create";
  int l;
  if (!(o->theta >= 0 && o->theta <= 1) || !(o->theta_decay > 0 && o->theta_decay <= 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: theta = %g (0 to 1) or theta_decay = %g (above 0, at most 1) out of "
                     "range", fn, o->theta, o->theta_decay);
  if (o->max_levels < 1 || o->max_levels > SPX_AMG_MAX_LEVELS)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: max_levels = %d; it is 1 to %d", fn, o->max_levels, SPX_AMG_MAX_LEVELS);
  if (o->coarse_size < 1 || o->dense_max < 0 || o->coarse_sweeps < 1 || o->coarse_sweeps > 1000)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: coarse_size = %lld (>= 1), dense_max = %lld (>= 0), coarse_sweeps = %d "
                     "(1 to 1000)", fn, (long long)o->coarse_size, (long long)o->dense_max, o->coarse_sweeps);
  if (!(o->prolong_omega >= 0 && o->prolong_omega < 2) || o->power_iters < 0 || o->power_iters > 1000)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: prolong_omega = %g (0 to 2) or power_iters = %d (0 to 1000) out of range",
                     fn, o->prolong_omega, o->power_iters);
  if ((unsigned)o->smoother >= SPX_AMG_SMOOTHER_COUNT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: smoother %d is not an spx_amg_smoother", fn, (int)o->smoother);
  if (o->pre_sweeps < 0 || o->pre_sweeps > 100 || o->post_sweeps < 0 || o->post_sweeps > 100)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: pre_sweeps = %d and post_sweeps = %d; each is 0 to 100", fn,
                     o->pre_sweeps, o->post_sweeps);
  if (!(o->damping >= 0 && o->damping < 2))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: damping = %g; it is 0 (the smoother's own) or below 2", fn, o->damping);
  if (o->cheb_degree < 1 || o->cheb_degree > 8 || !(o->cheb_ratio > 0 && o->cheb_ratio < 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: cheb_degree = %d (1 to 8) or cheb_ratio = %g (between 0 and 1) out of "
                     "range", fn, o->cheb_degree, o->cheb_ratio);
  if ((unsigned)o->coloring > SPX_AMG_COLOR_WELSH_POWELL || !(o->relaxed_fraction > 0 && o->relaxed_fraction <= 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: coloring %d or relaxed_fraction %g (above 0, at most 1) out of range", fn,
                     (int)o->coloring, o->relaxed_fraction);
  for (l = 0; l < SPX_AMG_MAX_LEVELS; l++) {
    const spx_amg_level_options *lo = &o->level[l];
    if (lo->smoother < -1 || lo->smoother >= SPX_AMG_SMOOTHER_COUNT || lo->pre_sweeps < -1 || lo->pre_sweeps > 100 ||
        lo->post_sweeps < -1 || lo->post_sweeps > 100 || !(lo->damping >= 0 && lo->damping < 2))
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: level[%d] = {smoother %d, sweeps %d/%d, damping %g} out of range", fn,
                       l, lo->smoother, lo->pre_sweeps, lo->post_sweeps, lo->damping);
  }
  if ((unsigned)o->cycle >= SPX_AMG_CYCLE_COUNT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: cycle %d is not an spx_amg_cycle_type (V, W or F)", fn, (int)o->cycle);
  if (o->plan && o->plan->dtype == SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: plans of float are not supported: AMG runs in double", fn);
  return SPX_OK;
}

static spx_status spx__amg_check_matrix(const char *fn, const spx_csr *a) {
  int64_t i, k;
  spx_status st;
  if (!a) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL matrix", fn);
  if (a->nrows != a->ncols)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: the matrix is %lld x %lld; AMG needs a square matrix", fn,
                     (long long)a->nrows, (long long)a->ncols);
  if (a->nrows == 0) return spx__fail(SPX_INVALID_ARGUMENT, "%s: the matrix is empty (0 x 0)", fn);
  if ((st = spx_csr_validate(a))) return spx__wrap(st, "%s", fn);
  for (i = 0; i < a->nrows; i++) /* a NaN or Inf would surface levels down, far from its cause */
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      double v = a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k];
      if (!spx__amg_finite(v))
        return spx__fail(SPX_INVALID_ARGUMENT, "%s: a[%lld][%d] = %g: AMG needs finite entries", fn,
                         (long long)i, a->col_idx[k], v);
    }
  return SPX_OK;
}

/* Frees everything a hierarchy holds, built or half built. */
void spx_amg_destroy(spx_amg *m) {
  int l;
  if (!m) return;
  for (l = 0; l < SPX_AMG_MAX_LEVELS; l++) {
    spx__amg_level *L = &m->lv[l];
    spx_plan_destroy(L->pA);
    spx_plan_destroy(L->pP);
    spx_plan_destroy(L->pR);
    spx_csr_destroy(L->A);
    spx_csr_destroy(L->P);
    spx_csr_destroy(L->R);
    spx_csr_destroy(L->AP);
    spx_csr_destroy(L->C);
    SPX_FREE(L->agg);
    SPX_FREE(L->dinv);
    SPX_FREE(L->color);
    SPX_FREE(L->perm);
    SPX_FREE(L->coff);
    SPX_FREE(L->soff);
    if (m->cuda) {
      spx_device_free(m->ctx, SPX__AMG_DP(L->x));
      spx_device_free(m->ctx, SPX__AMG_DP(L->b));
      spx_device_free(m->ctx, SPX__AMG_DP(L->r));
      spx_device_free(m->ctx, SPX__AMG_DP(L->t));
      spx_device_free(m->ctx, L->ddinv);
      spx_device_free(m->ctx, L->dsp);
      spx_device_free(m->ctx, L->dcol);
      spx_device_free(m->ctx, L->dval);
      spx_device_free(m->ctx, L->dperm);
    } else {
      SPX_FREE(L->x);
      SPX_FREE(L->b);
      SPX_FREE(L->r);
      SPX_FREE(L->t);
    }
  }
  if (m->cuda) spx_device_free(m->ctx, m->part);
  SPX_FREE(m->hpart);
  SPX_FREE(m->lu);
  SPX_FREE(m->piv);
  SPX_FREE(m->hb);
  SPX_FREE(m->hx);
  if (m->own_ctx) spx_context_destroy(m->ctx);
  SPX_FREE(m);
}

/* The report's per-level lines and complexities. */
static void spx__amg_fill_report(spx_amg *m) {
  spx_amg_report *r = &m->rep;
  double nnz = 0, rows = 0;
  int l;
  r->levels = m->nl;
  r->cycle = m->o.cycle;
  r->coarse_direct = m->lu != NULL;
  for (l = 0; l < m->nl; l++) {
    const spx__amg_level *L = &m->lv[l];
    spx_amg_level_info *li = &r->level[l];
    li->rows = L->A->nrows;
    li->nnz = L->A->nnz;
    li->p_cols = L->P ? L->P->ncols : 0;
    li->p_nnz = L->P ? L->P->nnz : 0;
    li->smoother = (spx_amg_smoother)L->smoother;
    li->pre_sweeps = L->pre;
    li->post_sweeps = L->post;
    li->damping = L->w;
    li->colors = L->ncolors;
    li->rho = L->rho;
    spx__amg_plan_name(L->pA, li->format, sizeof li->format);
    spx__amg_plan_name(L->pP, li->p_format, sizeof li->p_format);
    spx__amg_plan_name(L->pR, li->r_format, sizeof li->r_format);
    nnz += (double)L->A->nnz;
    rows += (double)L->A->nrows;
  }
  r->operator_complexity = nnz / (double)SPX__MAX(1, m->lv[0].A->nnz);
  r->grid_complexity = rows / (double)m->lv[0].A->nrows;
}

spx_status spx_amg_create(spx_context *ctx, const spx_csr *a, const spx_amg_options *options, spx_amg **out) {
  spx_amg *m;
  spx_amg_options o;
  double t0 = spx__now();
  spx_status st;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_create: NULL output");
  *out = NULL;
  if (options) o = *options;
  else spx_amg_options_default(&o);
  if ((st = spx__amg_check_options(&o)) || (st = spx__amg_check_matrix("spx_amg_create", a))) return st;
  if (!(m = (spx_amg *)spx__calloc(1, sizeof *m))) return SPX_OUT_OF_MEMORY;
  m->o = o; /* o.plan is copied (with its device) for spx_amg_update's plans, and forgotten */
  if (o.plan) {
    m->po = *o.plan;
    if (o.plan->device) {
      m->pdev = *o.plan->device;
      m->po.device = &m->pdev;
    }
  } else {
    spx_plan_options_default(&m->po);
    m->po.eager = 1;
  }
  if (!ctx) {
    spx_context_options co = {o.plan ? o.plan->backend : SPX_BACKEND_AUTO, 0};
    if ((st = spx_context_create(&co, &m->ctx))) goto fail;
    m->own_ctx = 1;
  } else m->ctx = ctx;
  m->cuda = spx_context_backend(m->ctx) == SPX_BACKEND_CUDA;
  if ((st = spx__amg_hierarchy(m, a)) || (st = spx__amg_plans(m)) ||
      (st = m->cuda ? spx__amg_device(m) : spx__amg_host_vectors(m)))
    goto fail;
  m->o.plan = NULL;
  m->po.force = NULL; /* the caller's string; an update forces each plan's own choice */
  spx__amg_fill_report(m);
  m->rep.setup_ms = 1e3 * (spx__now() - t0);
  *out = m;
  return SPX_OK;
fail:
  spx_amg_destroy(m);
  return st;
}

/* ---- Setup reuse (spx_amg_update) --------------------------------------------------------------- */
/* a has the pattern of the fine level and a nonzero diagonal (checked before anything changes, so
 * that a refusal leaves the hierarchy as it was). */
static spx_status spx__amg_same_pattern(const spx_amg *m, const spx_csr *a) {
  const spx_csr *A0 = m->lv[0].A;
  int64_t i, k;
  if (a->nrows != A0->nrows || a->nnz != A0->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: the matrix is %lld x %lld with %lld nonzeros; the hierarchy "
                     "was set up for %lld x %lld with %lld (setup reuse needs the same pattern: create a new hierarchy)",
                     (long long)a->nrows, (long long)a->ncols, (long long)a->nnz, (long long)A0->nrows,
                     (long long)A0->ncols, (long long)A0->nnz);
  for (i = 0; i < a->nrows; i++) {
    int diag = 0;
    if (a->row_ptr[i + 1] != A0->row_ptr[i + 1])
      return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: row %lld has %lld nonzeros where the hierarchy's matrix has "
                       "%lld (setup reuse needs the same pattern: create a new hierarchy)", (long long)i,
                       (long long)(a->row_ptr[i + 1] - a->row_ptr[i]), (long long)(A0->row_ptr[i + 1] - A0->row_ptr[i]));
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      if (a->col_idx[k] != A0->col_idx[k])
        return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: row %lld has column %d where the hierarchy's matrix has "
                         "%d (setup reuse needs the same pattern: create a new hierarchy)", (long long)i, a->col_idx[k],
                         A0->col_idx[k]);
      if (a->col_idx[k] == i) diag = (a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k]) != 0;
    }
    if (!diag)
      return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: a[%lld][%lld] = 0: AMG needs a nonzero diagonal",
                       (long long)i, (long long)i);
  }
  return SPX_OK;
}

/* The name that forces plan p's choice again: "cusparse", or its format's. */
static const char *spx__amg_force_name(const spx_plan *p) {
  return spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse" : spx_format_name(spx_plan_format(p));
}

/* The Galerkin operators' values, level by level: A P into its kept pattern, then R (A P). */
static spx_status spx__amg_update_rap(spx_amg *m) {
  int l;
  spx_status st;
  for (l = 0; l + 1 < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    if ((st = spx__amg_spgemm_values(L->A, L->P, L->AP)) || (st = spx__amg_spgemm_values(L->R, L->AP, m->lv[l + 1].A)))
      return st;
  }
  return SPX_OK;
}

/* Every level's diagonal checked and its smoother's values made again (the levels with a smoother:
 * all but a coarsest solved by LU). */
static spx_status spx__amg_update_smoothers(spx_amg *m) {
  double *d = NULL;
  int l;
  spx_status st = SPX_OK;
  if (!(d = (double *)spx__alloc((size_t)m->lv[0].A->nrows + 1, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  for (l = 0; l < m->nl && !st; l++) { /* coarser levels are smaller: d fits them all */
    if (!(st = spx__amg_diag("spx_amg_update", m->lv[l].A, l, d)) && m->lv[l].dinv)
      st = spx__amg_smoother_values(m, l, d, -1);
  }
  SPX_FREE(d);
  return st;
}

/* Each level's plan of A made again, forced to its first choice; the old one goes once the new one
 * stands. */
static spx_status spx__amg_update_plans(spx_amg *m) {
  int l;
  spx_status st;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    spx_plan *p = NULL;
    if ((st = spx__amg_plan(m, L->A, 0, spx__amg_force_name(L->pA), &p))) return st;
    spx_plan_destroy(L->pA);
    L->pA = p;
  }
  return SPX_OK;
}

/* CUDA: the inverse diagonals and the gs slices' values into the arrays already there. */
static spx_status spx__amg_update_device(spx_amg *m) {
  int l;
  spx_status st;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    if (L->dinv && (st = spx_device_upload(m->ctx, L->ddinv, L->dinv, (size_t)L->A->nrows * sizeof(double)))) return st;
    if (L->C && (st = spx__amg_slices(m, L, 1))) return st;
  }
  return spx_context_synchronize(m->ctx);
}

spx_status spx_amg_update(spx_amg *m, const spx_csr *a) {
  spx_amg_report *rep;
  spx__amg_level *L0;
  double t0 = spx__now(), t;
  int64_t k;
  spx_status st;
  if (!m) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: NULL hierarchy");
  if ((st = spx__amg_check_matrix("spx_amg_update", a)) || (st = spx__amg_same_pattern(m, a))) return st;
  rep = &m->rep;
  L0 = &m->lv[0];
  m->broken = 1; /* until every step below has run */
  rep->strength_ms = rep->aggregate_ms = rep->prolong_ms = 0;
  rep->coarse_zero_pivots = 0;
  t = spx__now();
  for (k = 0; k < a->nnz; k++) L0->A->val.d[k] = a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k];
  st = spx__amg_update_rap(m);
  rep->rap_ms = 1e3 * (spx__now() - t);
  if (st) return st;
  t = spx__now();
  st = spx__amg_update_smoothers(m);
  rep->smoother_ms = 1e3 * (spx__now() - t);
  if (st) return st;
  if (rep->coarse_direct) { /* the create's choice (m->lu is NULL after a failed update) */
    t = spx__now();
    SPX_FREE(m->lu);
    SPX_FREE(m->piv);
    st = spx__amg_lu(m->lv[m->nl - 1].A, &m->lu, &m->piv, &rep->coarse_zero_pivots);
    rep->coarse_ms = 1e3 * (spx__now() - t);
    if (st) return st;
  }
  t = spx__now();
  st = spx__amg_update_plans(m);
  rep->plan_ms = 1e3 * (spx__now() - t);
  if (st) return st;
  rep->device_ms = 0;
  if (m->cuda) {
    t = spx__now();
    st = spx__amg_update_device(m);
    rep->device_ms = 1e3 * (spx__now() - t);
    if (st) return st;
  }
  spx__amg_fill_report(m);
  rep->updates++;
  rep->setup_ms = 1e3 * (spx__now() - t0);
  m->broken = 0;
  return SPX_OK;
}

spx_status spx_amg_cycle(spx_amg *m, const void *b, void *x) {
  if (!m || !b || !x) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_cycle: NULL argument");
  m->rep.cycles++;
  return spx__amg_vcycle(m, 0, b, x, 0);
}

spx_status spx_amg_precond(void *data, const void *r, void *z) {
  spx_amg *m = (spx_amg *)data;
  if (!m || !r || !z) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_precond: NULL argument");
  m->rep.cycles++;
  return spx__amg_vcycle(m, 0, r, z, 1);
}

spx_plan *spx_amg_plan(const spx_amg *m) { return m ? m->lv[0].pA : NULL; }
spx_context *spx_amg_context(const spx_amg *m) { return m ? m->ctx : NULL; }
const spx_amg_report *spx_amg_report_of(const spx_amg *m) { return m ? &m->rep : NULL; }

spx_status spx_amg_level(const spx_amg *m, int level, spx_amg_level_view *out) {
  const spx__amg_level *L;
  if (!m || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_level: NULL argument");
  if (level < 0 || level >= m->nl)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_level: level %d; the hierarchy has levels 0 to %d", level, m->nl - 1);
  L = &m->lv[level];
  out->A = L->A;
  out->P = L->P;
  out->R = L->R;
  out->aggregate = L->agg;
  out->color = L->color;
  out->colors = L->ncolors;
  out->plan_A = L->pA;
  out->plan_P = L->pP;
  out->plan_R = L->pR;
  return SPX_OK;
}

/* ---- AMG as the solver --------------------------------------------------------------------------- */
static spx_status spx__amg_solve_end(spx_solve_report *r, spx_status st, const char *msg) {
  r->status = st;
  snprintf(r->message, sizeof r->message, "%s", msg);
  if (st) spx__fail(st, "%s", msg);
  return st;
}

/* The cycles of spx_amg_solve on vectors of the backend (b, x). */
static spx_status spx__amg_iterate(spx_amg *m, const void *b, void *x, const spx_solve_options *o,
                                   spx_solve_report *r) {
  const int64_t n = m->lv[0].A->nrows;
  void *res = m->lv[0].r; /* free between cycles */
  double bb, rr, t0 = spx__now();
  int64_t it = 0, s0;
  char msg[256];
  spx_status st;
  if ((st = spx__amg_dot(m, n, b, b, &bb)) || (st = spx__amg_resid(m, 0, b, x, res)) ||
      (st = spx__amg_dot(m, n, res, res, &rr)))
    return st;
  r->bnorm = spx__sqrt(bb);
  r->tol = SPX__MAX(o->rtol * r->bnorm, o->atol);
  r->setup_ms += 1e3 * (spx__now() - t0);
  t0 = spx__now();
  s0 = m->spmv0;
  for (;;) {
    r->resid = spx__sqrt(rr);
    if (it < o->history_len) o->history[it] = r->resid;
    if (!spx__amg_finite(rr)) {
      snprintf(msg, sizeof msg, "amg: the residual norm became %g after cycle %lld (NaN or Inf in the matrix, b or x)",
               r->resid, (long long)it);
      st = SPX_BREAKDOWN;
      break;
    }
    if (r->resid <= r->tol) {
      snprintf(msg, sizeof msg, "amg: converged in %lld cycles, ||r|| = %.3g <= %.3g", (long long)it, r->resid, r->tol);
      st = SPX_OK;
      break;
    }
    if (it >= o->maxit) {
      snprintf(msg, sizeof msg, "amg: not converged in %lld cycles: ||r|| = %.3g > %.3g (||r||/||b|| = %.3g)",
               (long long)it, r->resid, r->tol, r->bnorm > 0 ? r->resid / r->bnorm : r->resid);
      st = SPX_NOT_CONVERGED;
      break;
    }
    m->rep.cycles++;
    if ((st = spx__amg_vcycle(m, 0, b, x, 0)) || (st = spx__amg_resid(m, 0, b, x, res)) ||
        (st = spx__amg_dot(m, n, res, res, &rr)))
      return st;
    it++;
  }
  r->iterations = it;
  r->solve_ms = 1e3 * (spx__now() - t0);
  r->spmvs = m->spmv0 - s0 + 1;
  r->spmvs_per_iter = it > 0 ? (int)((m->spmv0 - s0) / it) : 0;
  r->true_resid = r->resid; /* every cycle's residual is computed from scratch */
  r->history_count = o->history_len > 0 ? SPX__MIN(it + 1, o->history_len) : 0;
  return spx__amg_solve_end(r, st, msg);
}

spx_status spx_amg_solve(spx_amg *m, const void *b, void *x, const spx_solve_options *options,
                         spx_solve_report *report) {
  spx_solve_options o;
  spx_solve_report scratch, *r = report ? report : &scratch;
  const void *db = b;
  void *dx = x;
  spx_devptr ub = 0, ux = 0;
  double t0 = spx__now();
  int64_t n;
  spx_status st;
  memset(r, 0, sizeof *r);
  r->method = "amg";
  r->upgraded_at = -1;
  if (options) o = *options;
  else spx_solve_options_default(&o);
  if (!m || !b || !x) return spx__amg_solve_end(r, SPX_INVALID_ARGUMENT, "spx_amg_solve: NULL argument");
  n = r->n = m->lv[0].A->nrows;
  if (!(o.rtol >= 0) || !(o.atol >= 0) || !spx__amg_finite(o.rtol) || !spx__amg_finite(o.atol) ||
      (!(o.rtol > 0) && !(o.atol > 0)) || o.maxit < 1 || o.history_len < 0 || (o.history_len > 0 && !o.history) ||
      o.precond)
    return spx__amg_solve_end(r, SPX_INVALID_ARGUMENT, "spx_amg_solve: rtol and atol must be finite, >= 0 and not both "
                              "0, maxit >= 1, history given for history_len > 0, and precond NULL (AMG is the method)");
  r->analysis_ms = spx_plan_select_ms(m->lv[0].pA);
  r->build_ms = spx_plan_build_ms(m->lv[0].pA);
  if (m->cuda && o.host_vectors) { /* the caller's host arrays through device copies */
    const size_t bytes = (size_t)n * sizeof(double);
    if ((st = spx_device_alloc(m->ctx, bytes + 8, &ub)) || (st = spx_device_alloc(m->ctx, bytes + 8, &ux)) ||
        (st = spx_device_upload(m->ctx, ub, b, bytes)) || (st = spx_device_upload(m->ctx, ux, x, bytes)))
      goto done;
    db = SPX__AMG_VP(ub);
    dx = SPX__AMG_VP(ux);
  }
  r->setup_ms = 1e3 * (spx__now() - t0);
  st = spx__amg_iterate(m, db, dx, &o, r);
  if (ux && (st == SPX_OK || st == SPX_NOT_CONVERGED || st == SPX_BREAKDOWN)) {
    double t1 = spx__now();
    spx_status s2 = spx_device_download(m->ctx, x, ux, (size_t)n * sizeof(double));
    r->check_ms = 1e3 * (spx__now() - t1);
    if (s2) st = s2;
  }
done:
  if (st && st != SPX_NOT_CONVERGED && st != SPX_BREAKDOWN) {
    r->status = st;
    snprintf(r->message, sizeof r->message, "%.250s", spx_last_error());
  }
  r->rel_resid = r->bnorm > 0 ? r->resid / r->bnorm : r->resid;
  r->true_rel_resid = r->bnorm > 0 ? r->true_resid / r->bnorm : r->true_resid;
  r->per_iter_us = r->iterations > 0 ? 1e3 * r->solve_ms / (double)r->iterations : 0;
  if (m && m->cuda) {
    spx_device_free(m->ctx, ub);
    spx_device_free(m->ctx, ux);
  }
  return st;
}

/* ---- The report -------------------------------------------------------------------------------- */
spx_status spx_amg_report_print(const spx_amg_report *r, FILE *f, int json) {
  int l;
  if (!r || !f) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_report_print: NULL argument");
  if (json) {
    const char *c;
    fprintf(f, "{\"levels\": %d, \"operator_complexity\": %.6g, \"grid_complexity\": %.6g, \"coarse_direct\": %d, "
               "\"setup_ms\": %.6g, \"strength_ms\": %.6g, \"aggregate_ms\": %.6g, \"prolong_ms\": %.6g, \"rap_ms\": %.6g, "
               "\"smoother_ms\": %.6g, \"coarse_ms\": %.6g, \"plan_ms\": %.6g, \"device_ms\": %.6g, \"cycles\": %lld, "
               "\"coarse_zero_pivots\": %lld, \"cycle\": \"%s\", \"updates\": %lld, \"stop\": \"",
            r->levels, r->operator_complexity, r->grid_complexity, r->coarse_direct, r->setup_ms, r->strength_ms,
            r->aggregate_ms, r->prolong_ms, r->rap_ms, r->smoother_ms, r->coarse_ms, r->plan_ms, r->device_ms,
            (long long)r->cycles, (long long)r->coarse_zero_pivots, spx_amg_cycle_type_name(r->cycle),
            (long long)r->updates);
    for (c = r->stop; *c; c++) {
      if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
      else if ((unsigned char)*c >= 0x20) fputc(*c, f);
    }
    fprintf(f, "\", \"level\": [");
    for (l = 0; l < r->levels; l++) {
      const spx_amg_level_info *li = &r->level[l];
      fprintf(f, "%s{\"rows\": %lld, \"nnz\": %lld, \"p_cols\": %lld, \"p_nnz\": %lld, \"weak\": %lld, \"smoother\": \"%s\", "
                 "\"pre_sweeps\": %d, \"post_sweeps\": %d, \"damping\": %.6g, \"colors\": %d, \"rho\": %.6g, "
                 "\"omega\": %.6g, \"format\": \"%s\", \"p_format\": \"%s\", \"r_format\": \"%s\"}",
              l ? ", " : "", (long long)li->rows, (long long)li->nnz, (long long)li->p_cols, (long long)li->p_nnz,
              (long long)li->weak, spx_amg_smoother_name(li->smoother), li->pre_sweeps, li->post_sweeps, li->damping,
              li->colors, li->rho, li->omega, li->format, li->p_format, li->r_format);
    }
    fprintf(f, "]}");
    return SPX_OK;
  }
  fprintf(f, "amg               %d levels, %s-cycle, operator complexity %.3f, grid complexity %.3f; %s\n", r->levels,
          r->cycle == SPX_AMG_CYCLE_W ? "W" : r->cycle == SPX_AMG_CYCLE_F ? "F" : "V", r->operator_complexity,
          r->grid_complexity, r->stop);
  fprintf(f, "  level      rows        nnz  nnz/row  smoother   sweeps  damping colors      rho  P omega  format (A, P, R)\n");
  for (l = 0; l < r->levels; l++) {
    const spx_amg_level_info *li = &r->level[l];
    const int last = l == r->levels - 1;
    char sm[16];
    snprintf(sm, sizeof sm, "%s", last && r->coarse_direct ? "dense LU" : spx_amg_smoother_name(li->smoother));
    fprintf(f, "  %5d %9lld %10lld %8.2f  %-10s %2d/%-2d %8.3f %6d %8.4f %8.4f  %s%s%s%s%s\n", l, (long long)li->rows,
            (long long)li->nnz, (double)li->nnz / (double)SPX__MAX(1, li->rows), sm, li->pre_sweeps, li->post_sweeps,
            li->damping, li->colors, li->rho, li->omega, li->format, li->p_format[0] ? ", " : "", li->p_format,
            li->r_format[0] ? ", " : "", li->r_format);
  }
  if (r->coarse_zero_pivots)
    fprintf(f, "  the coarsest matrix is singular to rounding: %lld zero pivots, those unknowns set to 0 (a consistent "
               "singular system still converges)\n", (long long)r->coarse_zero_pivots);
  if (r->updates)
    fprintf(f, "  reused          the last of %lld updates (same pattern): aggregates, P, R, colorings and their plans "
               "kept; the times below are that update's\n", (long long)r->updates);
  fprintf(f, "  setup %.3f ms: strength %.3f, aggregation %.3f, prolongation %.3f, RAP %.3f, smoothers %.3f, coarse LU "
             "%.3f, plans %.3f, device %.3f\n",
          r->setup_ms, r->strength_ms, r->aggregate_ms, r->prolong_ms, r->rap_ms, r->smoother_ms, r->coarse_ms, r->plan_ms,
          r->device_ms);
  return SPX_OK;
}
