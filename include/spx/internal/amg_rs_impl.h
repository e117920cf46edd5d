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

/* A row's PMIS state. */
enum { SPX__RS_U = 0, SPX__RS_C = 1, SPX__RS_F = 2 };

/* A level stalls when its C points are more than this share of its rows (as aggregates do). */
#define SPX__RS_STALL 0.9

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
 * diagonal whole; a~_ii of a sign other than a_ii's is replaced by a_ii. The weights of every row
 * are computed into E (columns ascending, each row's sums in A's column orders), then truncated
 * into P's pattern and scaled there (spx__amg_rs_ext_fill_row). */

/* Adds C point j to row i's set once (mark[j] == i once added); 1 when it was new. */
static int spx__amg_rs_ext_add(int32_t j, int64_t i, int64_t *mark, int32_t *list, int64_t c) {
  if (mark[j] == i) return 0;
  mark[j] = i;
  if (list) list[c] = j;
  return 1;
}

/* The work's read-only inputs: A, its strength mask, the split, A's diagonal, and each row's
 * strong C neighbours (sc; a strong F neighbour's are read without walking its whole row). */
typedef struct spx__amg_rs_ext {
  const spx_csr *A;
  const uint8_t *mask;
  const int32_t *cidx;
  double *diag;
  spx__amg_graph sc;
} spx__amg_rs_ext;

/* C^_i of F row i marked in mark (and listed in list, when given, in the order found); returns its
 * size, 0 for a C row. */
static int64_t spx__amg_rs_ext_set(const spx__amg_rs_ext *x, int64_t i, int64_t *mark, int32_t *list) {
  const spx__amg_graph *g = &x->sc;
  int64_t k, q, c = 0;
  if (x->cidx[i] >= 0) return 0;
  for (k = g->rp[i]; k < g->rp[i + 1]; k++) c += spx__amg_rs_ext_add(g->ci[k], i, mark, list, c);
  for (k = x->A->row_ptr[i]; k < x->A->row_ptr[i + 1]; k++) {
    const int32_t j = x->A->col_idx[k];
    if (!x->mask[k] || x->cidx[j] >= 0) continue;
    for (q = g->rp[j]; q < g->rp[j + 1]; q++) c += spx__amg_rs_ext_add(g->ci[q], i, mark, list, c);
  }
  return c;
}

/* x's diagonal and strong C graph (the strong C neighbours in A's column order). */
static spx_status spx__amg_rs_ext_prepare(spx__amg_rs_ext *x) {
  const spx_csr *A = x->A;
  const int64_t n = A->nrows, n_ = n;
  int64_t i;
  x->sc.n = n;
  x->sc.ci = NULL;
  x->diag = (double *)spx__alloc((size_t)n + 1, sizeof(double));
  x->sc.rp = (int64_t *)spx__calloc((size_t)n + 2, sizeof(int64_t));
  if (!x->diag || !x->sc.rp) return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k, c = 0;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) c += x->mask[k] && x->cidx[A->col_idx[k]] >= 0;
    x->sc.rp[i + 1] = c;
    x->diag[i] = spx__amg_rs_diag(A, i);
  }
  spx__amg_scan(x->sc.rp, n);
  if (!(x->sc.ci = (int32_t *)spx__alloc((size_t)x->sc.rp[n] + 1, sizeof(int32_t)))) return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    int64_t k, q = x->sc.rp[i];
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
      if (x->mask[k] && x->cidx[A->col_idx[k]] >= 0) x->sc.ci[q++] = A->col_idx[k];
  }
  return SPX_OK;
}

/* Strong F neighbour k's coupling a = a_ik spread over C^_i (marked with i) into acc and over i
 * itself: returns i's share (all of a when d_k = 0), which goes onto the diagonal. */
static double spx__amg_rs_ext_spread(const spx__amg_rs_ext *x, int64_t k, int64_t i, double a, const int64_t *mark,
                                     double *acc) {
  const spx_csr *A = x->A;
  const double s = x->diag[k] < 0 ? -1 : 1;
  double d = 0, f, own = 0;
  int64_t q;
  for (q = A->row_ptr[k]; q < A->row_ptr[k + 1]; q++) {
    const int32_t l = A->col_idx[q];
    if (s * A->val.d[q] < 0 && (l == i || mark[l] == i)) d += A->val.d[q];
  }
  if (d == 0) return a;
  f = a / d;
  for (q = A->row_ptr[k]; q < A->row_ptr[k + 1]; q++) {
    const int32_t l = A->col_idx[q];
    if (!(s * A->val.d[q] < 0)) continue;
    if (l == i) own += f * A->val.d[q];
    else if (mark[l] == i) acc[l] += f * A->val.d[q];
  }
  return own;
}

/* Row i of E: C^_i's coarse rows ascending and their weights (above). E->row_ptr holds the sizes
 * the counting pass found; mark and acc are the thread's (n each). */
static void spx__amg_rs_ext_row(const spx__amg_rs_ext *x, int64_t i, int64_t *mark, double *acc, spx_csr *E) {
  const spx_csr *A = x->A;
  const int32_t *cidx = x->cidx;
  const int64_t e0 = E->row_ptr[i], c = spx__amg_rs_ext_set(x, i, mark, E->col_idx + e0);
  const double di = x->diag[i];
  double dia = di;
  int64_t k, e;
  if (!c) return;
  for (e = e0; e < e0 + c; e++) acc[E->col_idx[e]] = 0;
  for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
    const int32_t j = A->col_idx[k];
    const double a = A->val.d[k];
    if (j == i || a == 0) continue;
    if (mark[j] == i) acc[j] += a;
    else if (x->mask[k] && cidx[j] < 0) dia += spx__amg_rs_ext_spread(x, j, i, a, mark, acc);
    else dia += a;
  }
  if (!(dia * di > 0)) dia = di;
  spx__amg_sort_cols(E->col_idx + e0, c);
  for (e = e0; e < e0 + c; e++) {
    E->val.d[e] = -acc[E->col_idx[e]] / dia;
    E->col_idx[e] = cidx[E->col_idx[e]];
  }
}

/* A thread's marker (every entry -1) and accumulator of n entries; 0 when out of memory. */
static int spx__amg_rs_ext_scratch(int64_t n, int64_t **mark, double **acc) {
  int64_t i;
  *mark = (int64_t *)SPX_MALLOC(((size_t)n + 1) * sizeof(int64_t));
  *acc = (double *)SPX_MALLOC(((size_t)n + 1) * sizeof(double));
  if (!*mark || !*acc) return 0;
  for (i = 0; i < n; i++) (*mark)[i] = -1;
  return 1;
}

/* Row by row with a thread's scratch: with E NULL each row's |C^_i| into cnt[i + 1], else each F
 * row's weights into E (row pointers set). 0 when a thread's scratch failed. */
static int spx__amg_rs_ext_rows(const spx__amg_rs_ext *x, int64_t *cnt, spx_csr *E) {
  const int64_t n = x->A->nrows;
  int ok = 1;
#if defined(_OPENMP)
#pragma omp parallel if (n > 4096)
#endif
  {
    int64_t *mark, i;
    double *acc;
    const int mine = spx__amg_rs_ext_scratch(n, &mark, &acc);
    if (!mine) {
#if defined(_OPENMP)
#pragma omp atomic write
#endif
      ok = 0;
    }
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 512)
#endif
    for (i = 0; i < n; i++) {
      if (!mine) continue;
      if (E) spx__amg_rs_ext_row(x, i, mark, acc, E);
      else cnt[i + 1] = spx__amg_rs_ext_set(x, i, mark, NULL);
    }
    SPX_FREE(mark);
    SPX_FREE(acc);
  }
  return ok;
}

/* E (n x nc): every F row's extended+i weights over C^_i before truncation; C rows empty. */
static spx_status spx__amg_rs_ext_weights(const spx_csr *A, const uint8_t *mask, const int32_t *cidx, int64_t nc,
                                          spx_csr **out) {
  const int64_t n = A->nrows;
  int64_t *cnt = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t));
  spx__amg_rs_ext x = {A, mask, cidx, NULL, {0, NULL, NULL}};
  spx_csr *E = NULL;
  spx_status st = SPX_OUT_OF_MEMORY;
  *out = NULL;
  if (!cnt || (st = spx__amg_rs_ext_prepare(&x))) goto done;
  if (!spx__amg_rs_ext_rows(&x, cnt, NULL)) goto oom;
  spx__amg_scan(cnt, n);
  if ((st = spx_csr_create(n, nc, cnt[n], SPX_DOUBLE, &E))) goto done;
  memcpy(E->row_ptr, cnt, ((size_t)n + 1) * sizeof(int64_t));
  if (!spx__amg_rs_ext_rows(&x, NULL, E)) goto oom;
  *out = E;
  E = NULL;
  st = SPX_OK;
  goto done;
oom:
  st = spx__fail(SPX_OUT_OF_MEMORY, "spx_amg: out of host memory for the extended+i interpolation's work arrays");
done:
  spx_csr_destroy(E);
  spx__amg_graph_free(&x.sc);
  SPX_FREE(x.diag);
  SPX_FREE(cnt);
  return st;
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

/* Row i's truncation into keep (E's entries): the nonzero weights of at least trunc times the
 * row's largest |weight|, then the pmax largest of those (0: all). */
static int64_t spx__amg_rs_ext_keep(const spx_csr *E, int64_t i, double trunc, int pmax, uint8_t *keep) {
  const int64_t e0 = E->row_ptr[i], e1 = E->row_ptr[i + 1];
  double wmax = 0;
  int64_t e, c = 0;
  for (e = e0; e < e1; e++) wmax = SPX__MAX(wmax, SPX__ABS(E->val.d[e]));
  for (e = e0; e < e1; e++)
    keep[e] = (uint8_t)(E->val.d[e] != 0 && SPX__ABS(E->val.d[e]) >= trunc * wmax);
  spx__amg_rs_cap(E->val.d, e0, e1, pmax, keep);
  for (e = e0; e < e1; e++) c += keep[e];
  return c;
}

/* Row i of P's values over its pattern from E's row: a C row is the identity; an F row takes each
 * kept column's weight (0 where E's row lacks the column), the positive ones scaled by the sum of
 * all of E's row's positive weights over the kept ones' sum and the negative ones likewise, so
 * that the row keeps each sign's sum, and the row sum, through truncation. */
static void spx__amg_rs_ext_fill_row(const spx_csr *E, const int32_t *cidx, int64_t i, spx_csr *P) {
  const int64_t e0 = E->row_ptr[i], e1 = E->row_ptr[i + 1], q0 = P->row_ptr[i], q1 = P->row_ptr[i + 1];
  double fp = 0, fn = 0, kp = 0, kn = 0;
  int64_t e, q;
  if (cidx[i] >= 0) {
    P->val.d[q0] = 1.0;
    return;
  }
  for (e = e0; e < e1; e++) {
    fp += E->val.d[e] > 0 ? E->val.d[e] : 0;
    fn += E->val.d[e] < 0 ? E->val.d[e] : 0;
  }
  for (q = q0, e = e0; q < q1; q++) {
    double w;
    while (e < e1 && E->col_idx[e] < P->col_idx[q]) e++;
    w = e < e1 && E->col_idx[e] == P->col_idx[q] ? E->val.d[e] : 0;
    P->val.d[q] = w;
    kp += w > 0 ? w : 0;
    kn += w < 0 ? w : 0;
  }
  for (q = q0; q < q1; q++) {
    const double w = P->val.d[q];
    P->val.d[q] = w > 0 ? w * (fp / kp) : w < 0 ? w * (fn / kn) : 0;
  }
}

/* Row i of P's pattern: a C row its coarse row, an F row E's kept columns. */
static void spx__amg_rs_ext_pattern_row(const spx_csr *E, const int32_t *cidx, const uint8_t *keep, int64_t i,
                                        spx_csr *P) {
  int64_t q = P->row_ptr[i], e;
  if (cidx[i] >= 0) {
    P->col_idx[q] = cidx[i];
    return;
  }
  for (e = E->row_ptr[i]; e < E->row_ptr[i + 1]; e++)
    if (keep[e]) P->col_idx[q++] = E->col_idx[e];
}

/* P (n x nc) by extended+i interpolation with truncation. */
static spx_status spx__amg_rs_ext_interp(const spx_csr *A, const uint8_t *mask, const int32_t *cidx, int64_t nc,
                                         double trunc, int pmax, spx_csr **out) {
  const int64_t n = A->nrows, n_ = n;
  spx_csr *E = NULL, *P = NULL;
  uint8_t *keep = NULL;
  int64_t *cnt = NULL, i;
  spx_status st;
  *out = NULL;
  if ((st = spx__amg_rs_ext_weights(A, mask, cidx, nc, &E))) return st;
  st = SPX_OUT_OF_MEMORY;
  if (!(keep = (uint8_t *)spx__alloc((size_t)E->nnz + 1, 1)) ||
      !(cnt = (int64_t *)spx__calloc((size_t)n + 1, sizeof(int64_t))))
    goto done;
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) cnt[i + 1] = cidx[i] >= 0 ? 1 : spx__amg_rs_ext_keep(E, i, trunc, pmax, keep);
  spx__amg_scan(cnt, n);
  if ((st = spx_csr_create(n, nc, cnt[n], SPX_DOUBLE, &P))) goto done;
  memcpy(P->row_ptr, cnt, ((size_t)n + 1) * sizeof(int64_t));
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) {
    spx__amg_rs_ext_pattern_row(E, cidx, keep, i, P);
    spx__amg_rs_ext_fill_row(E, cidx, i, P);
  }
  *out = P;
done:
  spx_csr_destroy(E);
  SPX_FREE(keep);
  SPX_FREE(cnt);
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

/* Extended+i: the strength of the new values, E over the kept split, P's values over its kept
 * pattern (spx__amg_rs_ext_fill_row: what a fresh setup computes over the same pattern). */
static spx_status spx__amg_rs_ext_values(spx_amg *m, int l) {
  spx__amg_level *L = &m->lv[l];
  const int64_t n_ = L->A->nrows;
  uint8_t *mask = (uint8_t *)spx__alloc((size_t)L->A->nnz + 1, 1);
  spx_csr *E = NULL;
  int64_t i;
  spx_status st = SPX_OUT_OF_MEMORY;
  if (!mask) return st;
  spx__amg_rs_strength(L->A, m->o.rs_theta, mask);
  if (!(st = spx__amg_rs_ext_weights(L->A, mask, L->agg, L->P->ncols, &E))) {
    SPX__AMG_FOR
    for (i = 0; i < n_; i++) spx__amg_rs_ext_fill_row(E, L->agg, i, L->P);
  }
  spx_csr_destroy(E);
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
