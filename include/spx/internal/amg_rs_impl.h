/* SPDX-License-Identifier: BSD-3-Clause */
/* AMG's classical Ruge-Stueben coarsening (options.coarsening SPX_AMG_RS; spx/amg.h, SETUP): the
 * classical strength of connection, the PMIS C/F split in parallel rounds (the same split for any
 * thread count), direct interpolation with truncation, then R = P^T and the Galerkin products of
 * amg_setup_impl.h; and, for spx_amg_update, P's values again over the split and pattern kept. On
 * the host only: a level coarsened this way never runs its setup on the GPU (amg_setup_impl.h
 * decides the side). */
#include "common.h"
#include "amg_levels.h"
#include "../amg.h"
#include "../csr.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

/* A row's PMIS state. */
enum { SPX__RS_U = 0, SPX__RS_C = 1, SPX__RS_F = 2 };

/* A level stalls when its C points are more than this share of its rows (as aggregates do). */
#define SPX__RS_STALL 0.9
/* Rows a thread takes at a time in the extended+i interpolation. */
#define SPX__RS_BLOCK 64

/* ---- Strength ---------------------------------------------------------------------------------- */
/* Row i's classical strength into mask (1 where A's entry is a strong off-diagonal). With s the
 * sign of the diagonal, the couplings of the other sign count: j is strong when
 * -s a_ij >= theta max_{k != i} (-s a_ik). A row without such a coupling (every off-diagonal of the
 * diagonal's sign) measures |a_ij| against max |a_ik| instead, so that it still finds neighbours.
 * Returns the row's weak off-diagonal nonzeros. */
static int64_t spx__amg_rs_strength_row(const spx_csr *A, double theta, int64_t i, uint8_t *mask) {
  const int64_t k0 = A->row_ptr[i], k1 = A->row_ptr[i + 1];
  double s = 1, mo = 0, ma = 0;
  int64_t k, weak = 0;
  for (k = k0; k < k1; k++)
    if (A->col_idx[k] == i) s = A->val.d[k] < 0 ? -1 : 1;
  for (k = k0; k < k1; k++)
    if (A->col_idx[k] != i) {
      mo = SPX__MAX(mo, -s * A->val.d[k]);
      ma = SPX__MAX(ma, SPX__ABS(A->val.d[k]));
    }
  for (k = k0; k < k1; k++) {
    const double a = A->val.d[k];
    const int off = A->col_idx[k] != i && a != 0;
    const int strong = off && (mo > 0 ? -s * a >= theta * mo : SPX__ABS(a) >= theta * ma);
    mask[k] = (uint8_t)strong;
    weak += off && !strong;
  }
  return weak;
}

static int64_t spx__amg_rs_strength(const spx_csr *A, double theta, uint8_t *mask) {
  const int64_t n = A->nrows;
  int64_t i, w = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : w) if (n > 16384)
#endif
  for (i = 0; i < n; i++) w += spx__amg_rs_strength_row(A, theta, i, mask);
  return w;
}

/* The strength graph's transpose: row j lists the rows i that j strongly influences (j in S_i), in
 * increasing order. A counting pass, serial: the same lists for any thread count. */
static spx_status spx__amg_rs_transpose(const spx_csr *A, const uint8_t *mask, spx__amg_graph *t) {
  const int64_t n = A->nrows;
  int64_t *next = NULL, i, k;
  t->n = n;
  t->ci = NULL;
  if (!(t->rp = (int64_t *)spx__calloc((size_t)n + 2, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
  for (k = 0; k < A->nnz; k++)
    if (mask[k]) t->rp[A->col_idx[k] + 1]++;
  spx__amg_scan(t->rp, n);
  if (!(t->ci = (int32_t *)spx__alloc((size_t)t->rp[n] + 1, sizeof(int32_t))) ||
      !(next = (int64_t *)spx__alloc((size_t)n + 1, sizeof(int64_t)))) {
    spx__amg_graph_free(t);
    return SPX_OUT_OF_MEMORY;
  }
  memcpy(next, t->rp, (size_t)n * sizeof(int64_t));
  for (i = 0; i < n; i++)
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
      if (mask[k]) t->ci[next[A->col_idx[k]]++] = (int32_t)i;
  SPX_FREE(next);
  return SPX_OK;
}

/* ---- The PMIS C/F split ------------------------------------------------------------------------ */
/* A fixed pseudo-random value in [0, 1) for row i (splitmix64's finalizer): the measures' tie
 * breaker, so that the C points do not follow the numbering, the same for any thread count. */
static double spx__amg_rs_hash(int64_t i) {
  return (double)(spx__amg_mix(i) >> 11) * (1.0 / 9007199254740992.0);
}

/* Row j ranks above row i: a larger measure, or the same and a larger index (a total order, so
 * that one of two neighbours always wins). */
static int spx__amg_rs_above(const double *lam, int64_t j, int64_t i) {
  return lam[j] > lam[i] || (lam[j] == lam[i] && j > i);
}

/* Undecided row i ranks above every undecided neighbour (S_i and S^T_i). */
static int spx__amg_rs_local_max(const spx_csr *A, const uint8_t *mask, const spx__amg_graph *t, const double *lam,
                                 const uint8_t *state, int64_t i) {
  int64_t k;
  if (state[i] != SPX__RS_U) return 0;
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
    if (mask[k] && state[A->col_idx[k]] == SPX__RS_U && spx__amg_rs_above(lam, A->col_idx[k], i)) return 0;
  for (k = t->rp[i]; k < t->rp[i + 1]; k++)
    if (state[t->ci[k]] == SPX__RS_U && spx__amg_rs_above(lam, t->ci[k], i)) return 0;
  return 1;
}

/* Row i strongly depends on a row that flag marks (some j in S_i). */
static int spx__amg_rs_depends(const spx_csr *A, const uint8_t *mask, const uint8_t *flag, int64_t i) {
  int64_t k;
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
    if (mask[k] && flag[A->col_idx[k]]) return 1;
  return 0;
}

/* One PMIS round from the last round's states only: the undecided local maxima become C (flag),
 * then each undecided row that strongly depends on one of them becomes F. Returns the rows still
 * undecided; the undecided row of highest rank always becomes C, so the rounds end. */
static int64_t spx__amg_rs_round(const spx_csr *A, const uint8_t *mask, const spx__amg_graph *t, const double *lam,
                                 uint8_t *state, uint8_t *flag) {
  const int64_t n = A->nrows, n_ = n;
  int64_t i, left = 0;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) flag[i] = (uint8_t)spx__amg_rs_local_max(A, mask, t, lam, state, i);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : left) if (n > 16384)
#endif
  for (i = 0; i < n; i++) {
    if (state[i] != SPX__RS_U) continue;
    if (flag[i]) state[i] = SPX__RS_C;
    else if (spx__amg_rs_depends(A, mask, flag, i)) state[i] = SPX__RS_F;
    else left++;
  }
  return left;
}

/* After the rounds: an F row with strong dependencies but no C point among them (it was made F for
 * influencing no row, or every row it depends on went F) becomes C, so that every F row with a
 * strong dependency interpolates from one. Decided from the rounds' states (flag), then applied. */
static void spx__amg_rs_fixup(const spx_csr *A, const uint8_t *mask, uint8_t *state, uint8_t *flag) {
  const int64_t n_ = A->nrows;
  int64_t i;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) flag[i] = state[i] == SPX__RS_C;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k;
    int has = 0;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) has |= mask[k];
    if (state[i] == SPX__RS_F && has && !spx__amg_rs_depends(A, mask, flag, i)) state[i] = SPX__RS_C;
  }
}

/* The split: measures |S^T_i| + hash(i); a row that influences none starts F, the others undecided;
 * rounds until none is undecided; the fix-up. cidx[i] is C row i's coarse row (the C rows numbered
 * in increasing order), -1 for an F row; *nc the C rows. */
static spx_status spx__amg_rs_split(const spx_csr *A, const uint8_t *mask, int32_t *cidx, int64_t *nc) {
  const int64_t n = A->nrows, n_ = n;
  spx__amg_graph t = {0, NULL, NULL};
  uint8_t *state = (uint8_t *)spx__alloc((size_t)n + 1, 1), *flag = (uint8_t *)spx__alloc((size_t)n + 1, 1);
  double *lam = (double *)spx__alloc((size_t)n + 1, sizeof(double));
  int64_t i, next = 0;
  spx_status st = SPX_OUT_OF_MEMORY;
  if (!state || !flag || !lam || (st = spx__amg_rs_transpose(A, mask, &t))) goto done;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    lam[i] = (double)(t.rp[i + 1] - t.rp[i]) + spx__amg_rs_hash(i);
    state[i] = t.rp[i + 1] > t.rp[i] ? SPX__RS_U : SPX__RS_F;
  }
  while (spx__amg_rs_round(A, mask, &t, lam, state, flag) > 0) {}
  spx__amg_rs_fixup(A, mask, state, flag);
  for (i = 0; i < n; i++) cidx[i] = state[i] == SPX__RS_C ? (int32_t)next++ : -1;
  *nc = next;
  st = SPX_OK;
done:
  spx__amg_graph_free(&t);
  SPX_FREE(state);
  SPX_FREE(flag);
  SPX_FREE(lam);
  return st;
}

/* ---- Direct interpolation ---------------------------------------------------------------------- */
/* F row i's weights over the C points `in` marks among its entries: w_ij = f a_ij, f = wo for a
 * coupling of the sign opposite the diagonal's, ws for one of its sign. Each sign's couplings are
 * interpolated from that sign's marked ones, scaled to the sum of all of that sign
 * (alpha = sum_k a_ik / sum_{k in} a_ik, and beta likewise); a sign with no marked coupling is
 * lumped onto the diagonal instead (unless that would zero the diagonal or flip its sign). So
 * w_ij = -alpha a_ij / a_ii' and a zero row sum of A gives weights summing to 1. */
static void spx__amg_rs_factors(const spx_csr *A, const uint8_t *in, int64_t i, double *wo, double *ws) {
  double di = 0, so = 0, ss = 0, io = 0, is = 0, dia;
  int64_t k;
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
    if (A->col_idx[k] == i) di = A->val.d[k];
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
    const double a = A->val.d[k];
    if (A->col_idx[k] == i) continue;
    if (a * di < 0) {
      so += a;
      io += in[k] ? a : 0;
    } else if (a * di > 0) {
      ss += a;
      is += in[k] ? a : 0;
    }
  }
  dia = di + (io != 0 ? 0 : so) + (is != 0 ? 0 : ss);
  if (!(dia * di > 0)) dia = di;
  *wo = io != 0 ? -(so / io) / dia : 0;
  *ws = is != 0 ? -(ss / is) / dia : 0;
}

/* Entry k's weight in row i from the factors (the sign of a_ik against the diagonal's picks one). */
static double spx__amg_rs_weight(const spx_csr *A, int64_t k, double di, double wo, double ws) {
  return (A->val.d[k] * di < 0 ? wo : ws) * A->val.d[k];
}

static double spx__amg_rs_diag(const spx_csr *A, int64_t i) {
  int64_t k;
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
    if (A->col_idx[k] == i) return A->val.d[k];
  return 0;
}

/* Row i's interpolation set into keep (A's entries): for an F row its strong C neighbours, less
 * those whose weight is below trunc times the row's largest |weight| (the weights of the kept ones
 * are then recomputed over them: each sign's again sums as before, so the row sum is kept); none
 * for a C row. */
static void spx__amg_rs_select_row(const spx_csr *A, const uint8_t *mask, const int32_t *cidx, double trunc,
                                   int64_t i, uint8_t *keep) {
  const int64_t k0 = A->row_ptr[i], k1 = A->row_ptr[i + 1];
  double wo, ws, di, wmax = 0;
  int64_t k;
  for (k = k0; k < k1; k++) keep[k] = (uint8_t)(cidx[i] < 0 && mask[k] && cidx[A->col_idx[k]] >= 0);
  if (cidx[i] >= 0 || trunc <= 0) return;
  di = spx__amg_rs_diag(A, i);
  spx__amg_rs_factors(A, keep, i, &wo, &ws);
  for (k = k0; k < k1; k++)
    if (keep[k]) wmax = SPX__MAX(wmax, SPX__ABS(spx__amg_rs_weight(A, k, di, wo, ws)));
  for (k = k0; k < k1; k++)
    if (keep[k] && SPX__ABS(spx__amg_rs_weight(A, k, di, wo, ws)) < trunc * wmax) keep[k] = 0;
}

/* Row i of P from P->row_ptr[i]: a C row the identity row of its coarse row, an F row the direct
 * interpolation over keep, columns the kept C points' coarse rows (increasing: A's columns are). */
static void spx__amg_rs_fill_row(const spx_csr *A, const int32_t *cidx, const uint8_t *keep, int64_t i, spx_csr *P) {
  int64_t q = P->row_ptr[i], k;
  double wo, ws, di;
  if (cidx[i] >= 0) {
    P->col_idx[q] = cidx[i];
    P->val.d[q] = 1.0;
    return;
  }
  di = spx__amg_rs_diag(A, i);
  spx__amg_rs_factors(A, keep, i, &wo, &ws);
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
    if (keep[k]) {
      P->col_idx[q] = cidx[A->col_idx[k]];
      P->val.d[q++] = spx__amg_rs_weight(A, k, di, wo, ws);
    }
}

/* P (n x nc) from the split and the interpolation sets. */
static spx_status spx__amg_rs_interp(const spx_csr *A, const int32_t *cidx, int64_t nc, const uint8_t *keep,
                                     spx_csr **out) {
  const int64_t n = A->nrows, n_ = n;
  int64_t *cnt = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t)), i;
  spx_csr *P = NULL;
  spx_status st;
  *out = NULL;
  if (!cnt) return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k, c = 0;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) c += keep[k];
    cnt[i + 1] = cidx[i] >= 0 ? 1 : c;
  }
  spx__amg_scan(cnt, n);
  if (!(st = spx_csr_create(n, nc, cnt[n], SPX_DOUBLE, &P))) {
    memcpy(P->row_ptr, cnt, ((size_t)n + 1) * sizeof(int64_t));
    SPX__AMG_FOR
    for (i = 0; i < n_; i++) spx__amg_rs_fill_row(A, cidx, keep, i, P);
    *out = P;
  }
  SPX_FREE(cnt);
  return st;
}

/* ---- Extended+i interpolation ------------------------------------------------------------------ */
/* (De Sterck, Falgout, Nolting, Yang 2008.) F row i interpolates from
 *   C^_i = C^s_i U (U_{k in F^s_i} C^s_k),
 * its strong C neighbours and those of its strong F neighbours (distance two through strong
 * connections), with
 *   w_ij   = -(a_ij + sum_{k in F^s_i} a_ik abar_kj / d_k) / a~_ii          (j in C^_i)
 *   d_k    = sum_{l in C^_i U {i}} abar_kl
 *   a~_ii  = a_ii + sum_{n not in C^_i U F^s_i, n != i} a_in + sum_{k in F^s_i} a_ik abar_ki / d_k
 * where abar_kl = a_kl for a coupling of the sign opposite a_kk's and 0 otherwise, and a_ij = 0
 * where j is no neighbour of i. A strong F neighbour's coupling is spread over C^_i and, the "+i",
 * over i itself (its share goes onto the diagonal), so that a row of A summing to zero interpolates
 * with weights summing to one; the weak couplings outside C^_i are lumped onto the diagonal. A
 * strong F neighbour with d_k = 0 (no coupling of that sign into C^_i U {i}) is lumped onto the
 * diagonal whole; a~_ii of a sign other than a_ii's is replaced by a_ii. One pass over the rows
 * makes each F row's weights (columns ascending, each sum in A's column orders), truncates and
 * rescales them (spx__amg_rs_ext_fill) into the thread's buffer; P is then those rows copied in
 * row order, so that it does not depend on which thread made which row. */

/* The work: A, its strength mask, the split, the truncation, and of each F row its diagonal, its
 * strong C neighbours (sc: columns) and its couplings to C points of the sign opposite its
 * diagonal's (oc: offsets in the row), both in A's column order, so that a strong F neighbour is
 * read without walking its whole row (all read only once prepared); and where setup puts the rows:
 * row i's kept entries number cnt[i + 1], and block b's rows (b B to b B + B - 1, B =
 * SPX__RS_BLOCK) lie in order from off[b] in thread own[b]'s buffer. */
typedef struct spx__amg_rs_ext {
  const spx_csr *A;
  const uint8_t *mask;
  const int32_t *cidx;
  int64_t nc;
  double trunc;
  int pmax;
  double *diag;
  spx__amg_graph sc, oc;
  int64_t longest; /* oc's longest row */
  int64_t guess;   /* setup: a thread's share of P's entries, its buffer's first size */
  int64_t *cnt, *off;
  int32_t *own;
} spx__amg_rs_ext;

/* A thread's scratch (mark and acc: n entries; col, w and keep: nc, as C^_i holds C points; hit:
 * oc's longest row and one), and the entries of the rows it kept. */
typedef struct spx__amg_rs_ext_work {
  int32_t *mark;  /* -1 at first; row i marks C^_i and i itself with i */
  int32_t *col;   /* C^_i, then its coarse rows ascending */
  double *acc;    /* the sums, by fine row */
  double *w;      /* col's weights */
  uint8_t *keep;  /* col's entries that truncation keeps */
  int64_t *hit;   /* a spread's entries of A */
  int32_t *pc;    /* setup: the kept entries, P's columns and values (len of cap) */
  double *pv;
  int64_t len, cap;
} spx__amg_rs_ext_work;

/* Adds C point j to row i's set once; returns the set's new size. */
static int64_t spx__amg_rs_ext_add(int32_t j, int32_t i, int32_t *mark, int32_t *list, int64_t c) {
  if (mark[j] == i) return c;
  mark[j] = i;
  list[c] = j;
  return c + 1;
}

/* C^_i of F row i into w->col (in the order found) and marked, with i itself; returns its size. */
static int64_t spx__amg_rs_ext_set(const spx__amg_rs_ext *x, int64_t i, spx__amg_rs_ext_work *w) {
  const spx__amg_graph *g = &x->sc;
  const spx_csr *A = x->A;
  const int32_t r = (int32_t)i;
  int64_t k, q, c = 0;
  w->mark[i] = r;
  for (k = g->rp[i]; k < g->rp[i + 1]; k++) c = spx__amg_rs_ext_add(g->ci[k], r, w->mark, w->col, c);
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
    const int32_t j = A->col_idx[k];
    if (!x->mask[k] || x->cidx[j] >= 0) continue;
    for (q = g->rp[j]; q < g->rp[j + 1]; q++) c = spx__amg_rs_ext_add(g->ci[q], r, w->mark, w->col, c);
  }
  return c;
}

/* Entry (k, j) of A, -1 when none (columns sorted and unique: spx/csr.h). A binary search whose
 * steps are selects, not branches: a row's columns give no pattern a branch predictor learns. */
static int64_t spx__amg_rs_find(const spx_csr *A, int64_t k, int64_t j) {
  const int32_t *c = A->col_idx + A->row_ptr[k];
  int64_t len = A->row_ptr[k + 1] - A->row_ptr[k], b = 0;
  if (len <= 0) return -1;
  while (len > 1) {
    const int64_t half = len / 2;
    b = c[b + half] <= j ? b + half : b;
    len -= half;
  }
  return c[b] == j ? A->row_ptr[k] + b : -1;
}

/* x's diagonal, sc and oc of the F rows (only F rows are made or spread over; a C row's are left
 * empty). */
static spx_status spx__amg_rs_ext_prepare(spx__amg_rs_ext *x) {
  const spx_csr *A = x->A;
  const int64_t n = A->nrows, n_ = n;
  const int32_t *col = A->col_idx, *cidx = x->cidx;
  const uint8_t *mask = x->mask;
  const double *v = A->val.d;
  int64_t i;
  x->sc.n = x->oc.n = n;
  x->diag = (double *)spx__alloc((size_t)n + 1, sizeof(double));
  x->sc.rp = (int64_t *)spx__calloc((size_t)n + 2, sizeof(int64_t));
  x->oc.rp = (int64_t *)spx__calloc((size_t)n + 2, sizeof(int64_t));
  if (!x->diag || !x->sc.rp || !x->oc.rp) return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    const int64_t p = cidx[i] < 0 ? spx__amg_rs_find(A, i, i) : -1;
    const double s = (x->diag[i] = p >= 0 ? v[p] : 0) < 0 ? -1 : 1;
    int64_t k, c = 0, o = 0;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1] && cidx[i] < 0; k++) {
      const int isc = cidx[col[k]] >= 0;
      c += isc & mask[k];
      o += isc & (s * v[k] < 0);
    }
    x->sc.rp[i + 1] = c;
    x->oc.rp[i + 1] = o;
  }
  for (i = 0; i < n; i++) x->longest = SPX__MAX(x->longest, x->oc.rp[i + 1]);
  spx__amg_scan(x->sc.rp, n);
  spx__amg_scan(x->oc.rp, n);
  if (!(x->sc.ci = (int32_t *)spx__alloc((size_t)x->sc.rp[n] + 1, sizeof(int32_t))) ||
      !(x->oc.ci = (int32_t *)spx__alloc((size_t)x->oc.rp[n] + 1, sizeof(int32_t))))
    return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    const int64_t r0 = A->row_ptr[i];
    const double s = x->diag[i] < 0 ? -1 : 1;
    int32_t *sc = x->sc.ci + x->sc.rp[i], *oc = x->oc.ci + x->oc.rp[i];
    int64_t k;
    for (k = r0; k < A->row_ptr[i + 1] && cidx[i] < 0; k++) {
      if (cidx[col[k]] < 0) continue;
      if (mask[k]) *sc++ = col[k];
      if (s * v[k] < 0) *oc++ = (int32_t)(k - r0);
    }
  }
  return SPX_OK;
}

/* Strong F neighbour k's coupling a = a_ik spread over C^_i (marked with i) into acc and over i
 * itself: returns i's share (all of a when d_k = 0), which goes onto the diagonal. The entries of
 * k's row that take a share are its oc entries marked and a_ki when of oc's sign (the only F
 * column of k's row that can): into hit in the row's order, d_k summed in that order. */
static double spx__amg_rs_ext_spread(const spx__amg_rs_ext *x, int64_t k, int64_t i, double a,
                                     spx__amg_rs_ext_work *w) {
  const spx_csr *A = x->A;
  const int64_t r0 = A->row_ptr[k], t1 = x->oc.rp[k + 1];
  const int32_t *col = A->col_idx, *oc = x->oc.ci, *mark = w->mark, r = (int32_t)i;
  const double *v = A->val.d;
  const double s = x->diag[k] < 0 ? -1 : 1;
  int64_t *hit = w->hit, p = spx__amg_rs_find(A, k, i), q, t, h = 0;
  double d = 0, f, own = 0;
  if (p >= 0 && !(s * v[p] < 0)) p = -1;
  for (t = x->oc.rp[k]; t < t1; t++) {
    q = r0 + oc[t];
    if (p >= 0 && p < q) {
      d += v[p];
      hit[h++] = p;
      p = -1;
    }
    if (mark[col[q]] == r) {
      d += v[q];
      hit[h++] = q;
    }
  }
  if (p >= 0) {
    d += v[p];
    hit[h++] = p;
  }
  if (d == 0) return a;
  f = a / d;
  for (t = 0; t < h; t++) {
    q = hit[t];
    if (col[q] == r) own += f * v[q];
    else w->acc[col[q]] += f * v[q];
  }
  return own;
}

/* F row i's weights before truncation: w->col C^_i's coarse rows ascending, w->w their weights
 * (above); returns |C^_i|. */
static int64_t spx__amg_rs_ext_row(const spx__amg_rs_ext *x, int64_t i, spx__amg_rs_ext_work *w) {
  const spx_csr *A = x->A;
  const int32_t *cidx = x->cidx;
  const int64_t c = spx__amg_rs_ext_set(x, i, w);
  const double di = x->diag[i];
  double dia = di;
  int64_t k, e;
  if (!c) return 0;
  for (e = 0; e < c; e++) w->acc[w->col[e]] = 0;
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
    const int32_t j = A->col_idx[k];
    const double a = A->val.d[k];
    if (j == i || a == 0) continue;
    if (w->mark[j] == (int32_t)i) w->acc[j] += a;
    else if (x->mask[k] && cidx[j] < 0) dia += spx__amg_rs_ext_spread(x, j, i, a, w);
    else dia += a;
  }
  if (!(dia * di > 0)) dia = di;
  spx__amg_sort_cols(w->col, c);
  for (e = 0; e < c; e++) {
    w->w[e] = -w->acc[w->col[e]] / dia;
    w->col[e] = cidx[w->col[e]];
  }
  return c;
}

/* Entry e ranks above entry f of a row: a larger |weight|, or the same and a smaller column (a
 * total order, so the entries a cap keeps are defined whatever the order they are seen in). */
static int spx__amg_rs_ranks_above(const double *w, int64_t e, int64_t f) {
  return SPX__ABS(w[e]) > SPX__ABS(w[f]) || (SPX__ABS(w[e]) == SPX__ABS(w[f]) && e < f);
}

/* Of the entries keep marks in [e0, e1), only the pmax of highest rank stay marked. */
static void spx__amg_rs_cap(const double *w, int64_t e0, int64_t e1, int pmax, uint8_t *keep) {
  int64_t top[SPX_AMG_RS_PMAX_MAX], e;
  int t = 0, p, kept = 0;
  for (e = e0; e < e1; e++) kept += keep[e];
  if (pmax <= 0 || kept <= pmax) return;
  for (e = e0; e < e1; e++) {
    if (!keep[e]) continue;
    if (t < pmax) p = t++;
    else if (spx__amg_rs_ranks_above(w, e, top[pmax - 1])) p = pmax - 1;
    else continue;
    for (; p > 0 && spx__amg_rs_ranks_above(w, e, top[p - 1]); p--) top[p] = top[p - 1];
    top[p] = e;
  }
  for (e = e0; e < e1; e++) keep[e] = 0;
  for (p = 0; p < t; p++) keep[top[p]] = 1;
}

/* A row's values over a pattern (pc: m columns ascending, into pv) from its weights (ec, ew: c
 * columns ascending): each column's weight (0 where the row lacks it), the positive ones scaled by
 * the sum of all the row's positive weights over the pattern's and the negative ones likewise, so
 * that the row keeps each sign's sum, and the row sum, through truncation. Setup and update both
 * fill through here: the same values for the same pattern. */
static void spx__amg_rs_ext_fill(const int32_t *ec, const double *ew, int64_t c, const int32_t *pc, double *pv,
                                 int64_t m) {
  double fp = 0, fn = 0, kp = 0, kn = 0;
  int64_t e, q;
  for (e = 0; e < c; e++) {
    fp += ew[e] > 0 ? ew[e] : 0;
    fn += ew[e] < 0 ? ew[e] : 0;
  }
  for (q = 0, e = 0; q < m; q++) {
    double v;
    while (e < c && ec[e] < pc[q]) e++;
    v = e < c && ec[e] == pc[q] ? ew[e] : 0;
    pv[q] = v;
    kp += v > 0 ? v : 0;
    kn += v < 0 ? v : 0;
  }
  for (q = 0; q < m; q++) {
    const double v = pv[q];
    pv[q] = v > 0 ? v * (fp / kp) : v < 0 ? v * (fn / kn) : 0;
  }
}

/* Room for m more kept entries in w's buffer; 0 when it could not grow. */
static int spx__amg_rs_ext_grow(spx__amg_rs_ext_work *w, int64_t m) {
  int64_t cap = w->cap;
  int32_t *pc;
  double *pv;
  if (w->len + m <= cap) return 1;
  cap = SPX__MAX(SPX__MAX(2 * cap, w->len + m), 4096);
  if (!(pc = (int32_t *)SPX_REALLOC(w->pc, (size_t)cap * sizeof(int32_t)))) return 0;
  w->pc = pc;
  if (!(pv = (double *)SPX_REALLOC(w->pv, (size_t)cap * sizeof(double)))) return 0;
  w->pv = pv;
  w->cap = cap;
  return 1;
}

/* Row i of P onto w's buffer: a C row its coarse row; an F row the nonzero weights of at least
 * trunc times its largest |weight|, then the pmax largest of those (0: all), filled by
 * spx__amg_rs_ext_fill. 0 when the buffer could not grow. */
static int spx__amg_rs_ext_keep_row(const spx__amg_rs_ext *x, int64_t i, spx__amg_rs_ext_work *w) {
  int64_t c, e, m = 0, q;
  double wmax = 0;
  if (x->cidx[i] >= 0) {
    if (!spx__amg_rs_ext_grow(w, 1)) return 0;
    w->pc[w->len] = x->cidx[i];
    w->pv[w->len] = 1.0;
    m = 1;
  } else {
    c = spx__amg_rs_ext_row(x, i, w);
    for (e = 0; e < c; e++) wmax = SPX__MAX(wmax, SPX__ABS(w->w[e]));
    for (e = 0; e < c; e++) w->keep[e] = (uint8_t)(w->w[e] != 0 && SPX__ABS(w->w[e]) >= x->trunc * wmax);
    spx__amg_rs_cap(w->w, 0, c, x->pmax, w->keep);
    for (e = 0; e < c; e++) m += w->keep[e];
    if (!spx__amg_rs_ext_grow(w, m)) return 0;
    for (e = 0, q = w->len; e < c; e++)
      if (w->keep[e]) w->pc[q++] = w->col[e];
    spx__amg_rs_ext_fill(w->col, w->w, c, w->pc + w->len, w->pv + w->len, m);
  }
  x->cnt[i + 1] = m;
  w->len += m;
  return 1;
}

/* A thread's scratch (mark every entry -1); 0 when out of memory. */
static int spx__amg_rs_ext_scratch(const spx__amg_rs_ext *x, spx__amg_rs_ext_work *w) {
  const int64_t n = x->A->nrows;
  int64_t i;
  w->mark = (int32_t *)SPX_MALLOC(((size_t)n + 1) * sizeof(int32_t));
  w->col = (int32_t *)SPX_MALLOC(((size_t)x->nc + 1) * sizeof(int32_t));
  w->acc = (double *)SPX_MALLOC(((size_t)n + 1) * sizeof(double));
  w->w = (double *)SPX_MALLOC(((size_t)x->nc + 1) * sizeof(double));
  w->keep = (uint8_t *)SPX_MALLOC((size_t)x->nc + 1);
  w->hit = (int64_t *)SPX_MALLOC(((size_t)x->longest + 2) * sizeof(int64_t));
  if (!w->mark || !w->col || !w->acc || !w->w || !w->keep || !w->hit || !spx__amg_rs_ext_grow(w, x->guess)) return 0;
  for (i = 0; i < n; i++) w->mark[i] = -1;
  return 1;
}

static void spx__amg_rs_ext_scratch_free(spx__amg_rs_ext_work *w) {
  SPX_FREE(w->mark);
  SPX_FREE(w->col);
  SPX_FREE(w->acc);
  SPX_FREE(w->w);
  SPX_FREE(w->keep);
  SPX_FREE(w->hit);
  w->mark = w->col = NULL;
  w->acc = w->w = NULL;
  w->keep = NULL;
  w->hit = NULL;
}

/* Threads for the rows: all where there is enough work (a small coarse level's rows are long). */
static int spx__amg_rs_ext_threads(const spx_csr *A) {
#if defined(_OPENMP)
  const int t = omp_get_max_threads();
  return A->nrows > 4096 || A->nnz > 65536 ? SPX__MAX(t, 1) : 1;
#else
  (void)A;
  return 1;
#endif
}

/* Block b's rows with a thread's scratch w: with P NULL onto w's buffer (spx__amg_rs_ext_keep_row),
 * else an F row's values over P's row and a C row's 1 (update). 0 when w's buffer could not grow. */
static int spx__amg_rs_ext_block(const spx__amg_rs_ext *x, int64_t b, int t, spx__amg_rs_ext_work *w, spx_csr *P) {
  const int64_t n = x->A->nrows, i1 = SPX__MIN(n, (b + 1) * SPX__RS_BLOCK);
  int64_t i;
  if (!P) {
    x->off[b] = w->len;
    x->own[b] = t;
  }
  for (i = b * SPX__RS_BLOCK; i < i1; i++) {
    const int64_t q = P ? P->row_ptr[i] : 0;
    if (!P) {
      if (!spx__amg_rs_ext_keep_row(x, i, w)) return 0;
    } else if (x->cidx[i] >= 0)
      P->val.d[q] = 1.0;
    else
      spx__amg_rs_ext_fill(w->col, w->w, spx__amg_rs_ext_row(x, i, w), P->col_idx + q, P->val.d + q,
                           P->row_ptr[i + 1] - q);
  }
  return 1;
}

/* Every block of rows by a thread with its scratch (work[t]; nt of them), the blocks shared out
 * as the threads come free (rows cost unevenly). 0 when a thread's memory failed. */
static int spx__amg_rs_ext_rows(const spx__amg_rs_ext *x, spx__amg_rs_ext_work *work, int nt, spx_csr *P) {
  const int64_t nb = (x->A->nrows + SPX__RS_BLOCK - 1) / SPX__RS_BLOCK;
  int ok = 1;
#if defined(_OPENMP)
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
#if defined(_OPENMP)
    const int t = omp_get_thread_num();
#else
    const int t = 0;
    (void)nt;
#endif
    spx__amg_rs_ext_work *w = &work[t];
    int mine = spx__amg_rs_ext_scratch(x, w);
    int64_t b;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 1)
#endif
    for (b = 0; b < nb; b++)
      if (mine) mine = spx__amg_rs_ext_block(x, b, t, w, P);
    if (!mine) SPX__AMG_FLAG(ok, 0);
    spx__amg_rs_ext_scratch_free(w);
  }
  return ok;
}

/* x's arrays and the threads' buffers, whatever was made of them. */
static void spx__amg_rs_ext_free(spx__amg_rs_ext *x, spx__amg_rs_ext_work *work, int nt) {
  int t;
  for (t = 0; work && t < nt; t++) {
    spx__amg_rs_ext_scratch_free(&work[t]);
    SPX_FREE(work[t].pc);
    SPX_FREE(work[t].pv);
  }
  SPX_FREE(work);
  SPX_FREE(x->diag);
  spx__amg_graph_free(&x->sc);
  spx__amg_graph_free(&x->oc);
  SPX_FREE(x->cnt);
  SPX_FREE(x->off);
  SPX_FREE(x->own);
}

/* The work over A, its strength mask and split into nc C points (arrays NULL until prepared). */
static spx__amg_rs_ext spx__amg_rs_ext_of(const spx_csr *A, const uint8_t *mask, const int32_t *cidx, int64_t nc,
                                          double trunc, int pmax) {
  spx__amg_rs_ext x;
  memset(&x, 0, sizeof x);
  x.A = A;
  x.mask = mask;
  x.cidx = cidx;
  x.nc = nc;
  x.trunc = trunc;
  x.pmax = pmax;
  return x;
}

static spx_status spx__amg_rs_ext_oom(void) {
  return spx__fail(SPX_OUT_OF_MEMORY, "spx_amg: out of host memory for the extended+i interpolation's work arrays");
}

/* P (n x nc) by extended+i interpolation with truncation: the rows into the threads' buffers, then
 * their counts scanned into P's row pointers and the blocks copied. */
static spx_status spx__amg_rs_ext_interp(const spx_csr *A, const uint8_t *mask, const int32_t *cidx, int64_t nc,
                                         double trunc, int pmax, spx_csr **out) {
  const int64_t n = A->nrows, nb = (n + SPX__RS_BLOCK - 1) / SPX__RS_BLOCK;
  const int nt = spx__amg_rs_ext_threads(A);
  spx__amg_rs_ext x = spx__amg_rs_ext_of(A, mask, cidx, nc, trunc, pmax);
  spx__amg_rs_ext_work *work = (spx__amg_rs_ext_work *)spx__calloc((size_t)nt, sizeof *work);
  spx_csr *P = NULL;
  int64_t b;
  spx_status st = SPX_OUT_OF_MEMORY;
  *out = NULL;
  x.guess = (nc + (pmax ? pmax : 8) * (n - nc)) / nt + 1; /* C rows 1 entry, F rows pmax (uncapped: 8) */
  x.cnt = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t));
  x.off = (int64_t *)spx__alloc((size_t)nb + 1, sizeof(int64_t));
  x.own = (int32_t *)spx__alloc((size_t)nb + 1, sizeof(int32_t));
  if (!work || !x.cnt || !x.off || !x.own || (st = spx__amg_rs_ext_prepare(&x))) goto done;
  if (!spx__amg_rs_ext_rows(&x, work, nt, NULL)) {
    st = spx__amg_rs_ext_oom();
    goto done;
  }
  spx__amg_scan(x.cnt, n);
  if ((st = spx_csr_create(n, nc, x.cnt[n], SPX_DOUBLE, &P))) goto done;
  memcpy(P->row_ptr, x.cnt, ((size_t)n + 1) * sizeof(int64_t));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (n > 16384)
#endif
  for (b = 0; b < nb; b++) {
    const spx__amg_rs_ext_work *w = &work[x.own[b]];
    const int64_t q = P->row_ptr[b * SPX__RS_BLOCK], m = P->row_ptr[SPX__MIN(n, (b + 1) * SPX__RS_BLOCK)] - q;
    memcpy(P->col_idx + q, w->pc + x.off[b], (size_t)m * sizeof(int32_t));
    memcpy(P->val.d + q, w->pv + x.off[b], (size_t)m * sizeof(double));
  }
  *out = P;
done:
  spx__amg_rs_ext_free(&x, work, nt);
  return st;
}

/* P by direct interpolation: each row's interpolation set, then its weights. */
static spx_status spx__amg_rs_direct(const spx_csr *A, const uint8_t *mask, const int32_t *cidx, int64_t nc,
                                     double trunc, spx_csr **out) {
  const int64_t n_ = A->nrows;
  uint8_t *keep = (uint8_t *)spx__alloc((size_t)A->nnz + 1, 1);
  int64_t i;
  spx_status st;
  *out = NULL;
  if (!keep) return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) spx__amg_rs_select_row(A, mask, cidx, trunc, i, keep);
  st = spx__amg_rs_interp(A, cidx, nc, keep, out);
  SPX_FREE(keep);
  return st;
}

/* ---- A level ----------------------------------------------------------------------------------- */
/* The stall test: nc C points of n rows are too many, or none (no strong connection left). */
static int spx__amg_rs_stalls(spx_amg *m, int l, int64_t n, int64_t nc) {
  if (nc > 0 && (double)nc <= SPX__RS_STALL * (double)n) return 0;
  snprintf(m->rep.stop, sizeof m->rep.stop, "coarsening stalled: level %d's %lld rows made %lld C points%s", l + 1,
           (long long)n, (long long)nc, nc ? "" : " (no strong connections)");
  return 1;
}

spx_status spx__amg_rs_coarsen(spx_amg *m, int l, int *stalled, double *rhoA) {
  spx__amg_level *L = &m->lv[l];
  spx_amg_report *rep = &m->rep;
  const int64_t n = L->A->nrows;
  uint8_t *mask = (uint8_t *)spx__alloc((size_t)L->A->nnz + 1, 1);
  double t = spx__now();
  int64_t nc = 0;
  spx_status st = SPX_OUT_OF_MEMORY;
  *stalled = 0;
  *rhoA = -1;
  L->mis2 = 0;
  rep->level[l].omega = 0;
  if (!mask || !(L->agg = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t)))) goto done;
  rep->level[l].weak = spx__amg_rs_strength(L->A, m->o.rs_theta, mask);
  rep->strength_ms += 1e3 * (spx__now() - t);
  t = spx__now();
  st = spx__amg_rs_split(L->A, mask, L->agg, &nc);
  rep->aggregate_ms += 1e3 * (spx__now() - t);
  if (st || (*stalled = spx__amg_rs_stalls(m, l, n, nc))) {
    SPX_FREE(L->agg);
    L->agg = NULL;
    goto done;
  }
  t = spx__now();
  st = m->o.rs_interp == SPX_AMG_RS_EXTENDED_I
           ? spx__amg_rs_ext_interp(L->A, mask, L->agg, nc, m->o.rs_trunc, m->o.rs_pmax, &L->P)
           : spx__amg_rs_direct(L->A, mask, L->agg, nc, m->o.rs_trunc, &L->P);
  if (!st) st = spx_csr_transpose(L->P, &L->R);
  rep->prolong_ms += 1e3 * (spx__now() - t);
  if (st) goto done;
  t = spx__now();
  if (!(st = spx__amg_spgemm(L->A, L->P, &L->AP))) st = spx__amg_spgemm(L->R, L->AP, &m->lv[l + 1].A);
  rep->rap_ms += 1e3 * (spx__now() - t);
done:
  SPX_FREE(mask);
  return st;
}

/* ---- Setup reuse ------------------------------------------------------------------------------- */
/* Row i's interpolation set from P's row (its columns are coarse rows of C points among A's
 * entries, increasing as A's columns are): keep marks those entries. Returns 0 when P's row has a
 * column no entry of A's row gives (not a pattern this level made). */
static int spx__amg_rs_keep_of(const spx_csr *A, const int32_t *cidx, const spx_csr *P, int64_t i, uint8_t *keep) {
  int64_t q = P->row_ptr[i], k;
  const int64_t q1 = P->row_ptr[i + 1];
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
    const int32_t c = A->col_idx[k] == i ? -1 : cidx[A->col_idx[k]];
    keep[k] = (uint8_t)(cidx[i] < 0 && c >= 0 && q < q1 && P->col_idx[q] == c);
    q += keep[k];
  }
  return cidx[i] >= 0 || q == q1;
}

/* R's values from P's (R = P^T, its pattern the transpose's: rows of P walked in order). */
static spx_status spx__amg_rs_transpose_values(const spx_csr *P, spx_csr *R) {
  int64_t *next = (int64_t *)spx__alloc((size_t)R->nrows + 1, sizeof(int64_t)), i, k;
  if (!next) return SPX_OUT_OF_MEMORY;
  memcpy(next, R->row_ptr, (size_t)R->nrows * sizeof(int64_t));
  for (i = 0; i < P->nrows; i++)
    for (k = P->row_ptr[i]; k < P->row_ptr[i + 1]; k++) R->val.d[next[P->col_idx[k]]++] = P->val.d[k];
  SPX_FREE(next);
  return SPX_OK;
}

/* Row i of an extended+i P is a pattern this level made: a C row one entry, its coarse row; an F
 * row's columns strictly increasing coarse rows. */
static int spx__amg_rs_ext_pattern_ok(const spx_csr *P, const int32_t *cidx, int64_t i) {
  int64_t q;
  if (cidx[i] >= 0) return P->row_ptr[i + 1] - P->row_ptr[i] == 1 && P->col_idx[P->row_ptr[i]] == cidx[i];
  for (q = P->row_ptr[i]; q < P->row_ptr[i + 1]; q++)
    if (P->col_idx[q] < 0 || P->col_idx[q] >= P->ncols || (q > P->row_ptr[i] && P->col_idx[q] <= P->col_idx[q - 1]))
      return 0;
  return 1;
}

/* The first row of level l's P that is no pattern this level made (n when none); direct: each
 * row's interpolation set into keep. */
static int64_t spx__amg_rs_bad_row(const spx__amg_level *L, uint8_t *keep, int ext) {
  const int64_t n = L->A->nrows;
  int64_t i, bad = n;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(min : bad) if (n > 16384)
#endif
  for (i = 0; i < n; i++) {
    const int ok = ext ? spx__amg_rs_ext_pattern_ok(L->P, L->agg, i)
                       : spx__amg_rs_keep_of(L->A, L->agg, L->P, i, keep);
    if (!ok && i < bad) bad = i;
  }
  return bad;
}

/* Extended+i: the strength of the new values, then each F row's weights over the kept split and
 * its values over P's kept pattern (spx__amg_rs_ext_fill: what a fresh setup computes over the
 * same pattern). */
static spx_status spx__amg_rs_ext_values(spx_amg *m, int l) {
  spx__amg_level *L = &m->lv[l];
  const int nt = spx__amg_rs_ext_threads(L->A);
  uint8_t *mask = (uint8_t *)spx__alloc((size_t)L->A->nnz + 1, 1);
  spx__amg_rs_ext x = spx__amg_rs_ext_of(L->A, mask, L->agg, L->P->ncols, 0, 0);
  spx__amg_rs_ext_work *work = (spx__amg_rs_ext_work *)spx__calloc((size_t)nt, sizeof *work);
  spx_status st = SPX_OUT_OF_MEMORY;
  if (mask && work) {
    spx__amg_rs_strength(L->A, m->o.rs_theta, mask);
    if (!(st = spx__amg_rs_ext_prepare(&x)) && !spx__amg_rs_ext_rows(&x, work, nt, L->P)) st = spx__amg_rs_ext_oom();
  }
  spx__amg_rs_ext_free(&x, work, nt);
  SPX_FREE(mask);
  return st;
}

/* Direct: each row's interpolation set read back from P's pattern, the weights over it. */
static spx_status spx__amg_rs_direct_values(spx__amg_level *L, uint8_t *keep) {
  const int64_t n_ = L->A->nrows;
  int64_t i;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) spx__amg_rs_fill_row(L->A, L->agg, keep, i, L->P);
  return SPX_OK;
}

spx_status spx__amg_rs_values(spx_amg *m, int l) {
  spx__amg_level *L = &m->lv[l];
  const int ext = m->o.rs_interp == SPX_AMG_RS_EXTENDED_I;
  uint8_t *keep = (uint8_t *)spx__alloc((size_t)L->A->nnz + 1, 1);
  int64_t bad;
  spx_status st;
  if (!keep) return SPX_OUT_OF_MEMORY;
  if ((bad = spx__amg_rs_bad_row(L, keep, ext)) < L->A->nrows) {
    SPX_FREE(keep);
    return spx__fail(SPX_INTERNAL, "spx_amg_update: row %lld of level %d's P is not an interpolation from its C points",
                     (long long)bad, l);
  }
  st = ext ? spx__amg_rs_ext_values(m, l) : spx__amg_rs_direct_values(L, keep);
  SPX_FREE(keep);
  if (!st) st = spx__amg_rs_transpose_values(L->P, L->R);
  return st;
}
