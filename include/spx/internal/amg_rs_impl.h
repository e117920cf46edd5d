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
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 29; x *= 0x94D049BB133111EBull; x ^= x >> 32;
  return (double)(x >> 11) * (1.0 / 9007199254740992.0);
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
  const int64_t n = L->A->nrows, n_ = n;
  uint8_t *mask = (uint8_t *)spx__alloc((size_t)L->A->nnz + 1, 1), *keep = NULL;
  double t = spx__now();
  int64_t nc = 0, i;
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
  if (!(keep = (uint8_t *)spx__alloc((size_t)L->A->nnz + 1, 1))) {
    st = SPX_OUT_OF_MEMORY;
    goto done;
  }
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) spx__amg_rs_select_row(L->A, mask, L->agg, m->o.rs_trunc, i, keep);
  if (!(st = spx__amg_rs_interp(L->A, L->agg, nc, keep, &L->P))) st = spx_csr_transpose(L->P, &L->R);
  rep->prolong_ms += 1e3 * (spx__now() - t);
  if (st) goto done;
  t = spx__now();
  if (!(st = spx__amg_spgemm(L->A, L->P, &L->AP))) st = spx__amg_spgemm(L->R, L->AP, &m->lv[l + 1].A);
  rep->rap_ms += 1e3 * (spx__now() - t);
done:
  SPX_FREE(mask);
  SPX_FREE(keep);
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

spx_status spx__amg_rs_values(spx_amg *m, int l) {
  spx__amg_level *L = &m->lv[l];
  const spx_csr *A = L->A;
  const int64_t n = A->nrows, n_ = n;
  uint8_t *keep = (uint8_t *)spx__alloc((size_t)A->nnz + 1, 1);
  int64_t i, bad = n;
  spx_status st;
  if (!keep) return SPX_OUT_OF_MEMORY;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(min : bad) if (n > 16384)
#endif
  for (i = 0; i < n; i++)
    if (!spx__amg_rs_keep_of(A, L->agg, L->P, i, keep) && i < bad) bad = i;
  if (bad < n) {
    SPX_FREE(keep);
    return spx__fail(SPX_INTERNAL, "spx_amg_update: row %lld of level %d's P is not an interpolation from its C points",
                     (long long)bad, l);
  }
  SPX__AMG_FOR
  for (i = 0; i < n_; i++) spx__amg_rs_fill_row(A, L->agg, keep, i, L->P);
  SPX_FREE(keep);
  st = spx__amg_rs_transpose_values(L->P, L->R);
  return st;
}
