/* SPDX-License-Identifier: BSD-3-Clause */
/* AMG's smoothers (amg_levels.h): the greedy coloring Gauss-Seidel runs in, a level's smoother
 * (inverse diagonal, rho, the color-ordered rows), the vector operations with a host twin and a
 * kernel of templates/amg.cu each, and the sweeps (Jacobi, l1-Jacobi, Chebyshev, Gauss-Seidel by
 * colors). It calls the setup's pattern helpers and rho (amg_setup_impl.h) and the levels' plans;
 * the cycles above it choose when each runs. */
#include "common.h"
#include "cuda_types.h"
#include "amg_levels.h"
#include "../amg.h"
#include "../csr.h"
#include "../device.h"
#include "../plan.h"

const char *const spx__amg_knames[] = {
#define SPX__AMG_KNAME(e, name) name,
    SPX__AMG_KERNELS(SPX__AMG_KNAME)
#undef SPX__AMG_KNAME
};

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


/* ---- A level's smoother ----------------------------------------------------------------------- */
/* The values of level l's smoother from its diagonal d (L->dinv allocated): the inverse diagonal,
 * rho (chebyshev; rhoA when known, else estimated), and C's values (gs: A's rows in color order). */
spx_status spx__amg_smoother_values(spx_amg *m, int l, const double *d, double rhoA) {
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
    if (rhoA > 0) { /* the prolongation's (A_F = A), from its side */
      L->rho = rhoA;
      L->rho_gpu = L->p_gpu;
    } else if ((st = spx__amg_level_rho(m, l, d, &L->rho))) return st;
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
spx_status spx__amg_smoother_setup(spx_amg *m, int l, const double *d, double rhoA) {
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

spx_status spx__amg_spmv(spx_amg *m, spx_plan *p, double alpha, const void *x, double beta, void *y) {
  if (p == m->lv[0].pA) m->spmv0++;
  return spx_plan_spmv(p, alpha, x, beta, y);
}

/* r = b - A x on level l. */
spx_status spx__amg_resid(spx_amg *m, int l, const void *b, const void *x, void *r) {
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
spx_status spx__amg_dot(spx_amg *m, int64_t n, const void *a, const void *b, double *out) {
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

/* ---- The sweeps ------------------------------------------------------------------------------- */
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
spx_status spx__amg_smooth(spx_amg *m, int l, const void *b, void *x, int sweeps, int xzero) {
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
