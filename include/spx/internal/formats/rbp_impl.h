/* SPDX-License-Identifier: BSD-3-Clause */
/* RBP-CSR, RBP-ELL, RBP-ELL-R (papers/000). One walker splits a row into blocks and isolated
 * entries and writes them with the strides of either layout; one merger reads them back.
 * O(nnz + n) for RBP-CSR, O(n (kv + kc) + nnz) for the ELL forms; rows in parallel. */

typedef struct spx__rbp_out {
  int32_t *comp_col;
  spx_val comp_val;
  int64_t cbase, cstride, vbase, vstride; /* first/last of block q at cbase + (2q, 2q+1) * cstride */
  int32_t *csr_col;                       /* isolated entries from csr_base on */
  spx_val csr_val;
  int64_t csr_base;
} spx__rbp_out;

/* Writes row i's blocks and isolated entries; counts them in *nb, *nv, *nn. */
static void spx__rbp_emit(const spx_csr *a, int64_t i, const spx__rbp_out *o, int64_t *nb, int64_t *nv, int64_t *nn) {
  int64_t k = a->row_ptr[i], e = a->row_ptr[i + 1];
  spx_val src = spx__csr_val(a);
  *nb = *nv = *nn = 0;
  while (k < e) {
    int64_t s = k, t;
    while (k + 1 < e && a->col_idx[k + 1] == a->col_idx[k] + 1) k++;
    k++;
    if (k - s >= 2) {
      o->comp_col[o->cbase + (2 * *nb) * o->cstride] = a->col_idx[s];
      o->comp_col[o->cbase + (2 * *nb + 1) * o->cstride] = a->col_idx[k - 1];
      for (t = s; t < k; t++, (*nv)++) spx_val_move(o->comp_val, o->vbase + *nv * o->vstride, src, t, a->dtype);
      (*nb)++;
    } else {
      o->csr_col[o->csr_base + *nn] = a->col_idx[s];
      spx_val_move(o->csr_val, o->csr_base + *nn, src, s, a->dtype);
      (*nn)++;
    }
  }
}

/* Row i back into CSR at o->row_ptr[i]: nb blocks and the isolated entries r0 .. r1-1 of `in`,
 * merged in column order. */
static void spx__rbp_merge(const spx__rbp_out *in, int64_t nb, int64_t r0, int64_t r1, spx_csr *o, int64_t i) {
  int64_t b = o->row_ptr[i], q = 0, v = 0, r = r0;
  spx_val dst;
  dst.p = o->val.p;
  while (q < nb || r < r1) {
    int32_t f = q < nb ? in->comp_col[in->cbase + 2 * q * in->cstride] : INT32_MAX;
    if (q < nb && (r >= r1 || f < in->csr_col[r])) {
      int32_t l = in->comp_col[in->cbase + (2 * q + 1) * in->cstride], c;
      for (c = f; c <= l; c++, v++, b++) {
        o->col_idx[b] = c;
        spx_val_move(dst, b, in->comp_val, in->vbase + v * in->vstride, o->dtype);
      }
      q++;
    } else {
      o->col_idx[b] = in->csr_col[r];
      spx_val_move(dst, b, in->csr_val, r, o->dtype);
      r++; b++;
    }
  }
}

/* Checks row i's runs (nb blocks, isolated r0 .. r1-1): in range, increasing, maximal, blocks of
 * two or more columns. *nv gets the values the blocks hold. */
static spx_status spx__rbp_check_row(const char *fmt, const spx__rbp_out *in, int64_t i, int64_t nb, int64_t r0,
                                     int64_t r1, int64_t ncols, int64_t *nv) {
  int64_t q = 0, r = r0, prev = -2;
  spx_status s;
  *nv = 0;
  while (q < nb || r < r1) {
    int64_t f = q < nb ? in->comp_col[in->cbase + 2 * q * in->cstride] : INT64_MAX;
    if (q < nb && (r >= r1 || f < in->csr_col[r])) {
      int64_t l = in->comp_col[in->cbase + (2 * q + 1) * in->cstride];
      if (l <= f)
        return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld block %lld = [%lld, %lld] spans fewer than two "
                         "columns", fmt, (long long)i, (long long)q, (long long)f, (long long)l);
      if ((s = spx__rbp_interval(fmt, i, f, l, ncols, &prev))) return s;
      *nv += l - f + 1;
      q++;
    } else {
      if ((s = spx__rbp_interval(fmt, i, in->csr_col[r], in->csr_col[r], ncols, &prev))) return s;
      r++;
    }
  }
  return SPX_OK;
}

/* Pointer arrays: start at 0, never decrease, end at `end`. */
static spx_status spx__rbp_ptr(const char *fmt, const char *name, const int32_t *p, int64_t n, int64_t end) {
  int64_t i;
  if (p[0] != 0 || p[n] != end)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: %s must run from 0 to %lld", fmt, name, (long long)end);
  for (i = 0; i < n; i++)
    if (p[i + 1] < p[i])
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: %s[%lld] decreases", fmt, name, (long long)i + 1);
  return SPX_OK;
}

/* ---- RBP-CSR ---- */
static spx_status spx__rbp_csr_from_csr(const spx_csr *a, const spx__rbp_csr_params *p, spx_fmt_rbp_csr *s) {
  int64_t n = a->nrows, i, nb = 0, nv = 0, nn = 0;
  spx_status st;
  (void)p;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 256) reduction(+ : nb, nv, nn) if (n >= SPX__FMT_OMP_MIN)
#endif
  for (i = 0; i < n; i++) {
    int64_t b, v, m;
    spx__rbp_row(a, i, &b, &v, &m);
    nb += b; nv += v; nn += m;
  }
  s->nrows = n; s->ncols = a->ncols; s->nnz = a->nnz; s->nblocks = nb; s->nval = nv; s->nnon = nn;
  if ((st = spx__rbp_csr_alloc(s))) return st;
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) {
    int64_t b, v, m;
    spx__rbp_row(a, i, &b, &v, &m);
    s->val_ptr[i + 1] = (int32_t)v; s->col_ptr[i + 1] = (int32_t)(2 * b); s->row_ptr[i + 1] = (int32_t)m;
  }
  spx__prefix32(s->val_ptr, n); spx__prefix32(s->col_ptr, n); spx__prefix32(s->row_ptr, n);
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) {
    spx__rbp_out o;
    int64_t b, v, m;
    o.comp_col = s->comp_col; o.comp_val = s->comp_val; o.cbase = s->col_ptr[i]; o.cstride = 1;
    o.vbase = s->val_ptr[i]; o.vstride = 1; o.csr_col = s->csr_col; o.csr_val = s->csr_val; o.csr_base = s->row_ptr[i];
    spx__rbp_emit(a, i, &o, &b, &v, &m);
  }
  return SPX_OK;
}

static spx__rbp_out spx__rbp_csr_in(const spx_fmt_rbp_csr *s, int64_t i) {
  spx__rbp_out o;
  o.comp_col = s->comp_col; o.comp_val = s->comp_val; o.cbase = s->col_ptr[i]; o.cstride = 1;
  o.vbase = s->val_ptr[i]; o.vstride = 1; o.csr_col = s->csr_col; o.csr_val = s->csr_val; o.csr_base = 0;
  return o;
}

static spx_status spx__rbp_csr_to_csr(const spx_fmt_rbp_csr *s, spx_csr *o) {
  int64_t i, n = s->nrows;
  for (i = 0; i < n; i++)
    o->row_ptr[i + 1] = (s->val_ptr[i + 1] - s->val_ptr[i]) + (s->row_ptr[i + 1] - s->row_ptr[i]);
  spx__prefix64(o->row_ptr, n);
  if (o->row_ptr[n] != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "rbp_csr holds %lld entries but says nnz = %lld",
                     (long long)o->row_ptr[n], (long long)s->nnz);
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) {
    spx__rbp_out in = spx__rbp_csr_in(s, i);
    spx__rbp_merge(&in, (s->col_ptr[i + 1] - s->col_ptr[i]) / 2, s->row_ptr[i], s->row_ptr[i + 1], o, i);
  }
  return SPX_OK;
}

static spx_status spx__rbp_csr_check(const spx_fmt_rbp_csr *s) {
  int64_t i, n = s->nrows;
  spx_status st;
  if (s->nval + s->nnon != s->nnz || s->nval < 2 * s->nblocks)
    return spx__fail(SPX_INVALID_ARGUMENT, "rbp_csr: nval %lld + nnon %lld != nnz %lld, or fewer than two "
                     "values per block", (long long)s->nval, (long long)s->nnon, (long long)s->nnz);
  if ((st = spx__rbp_ptr("rbp_csr", "val_ptr", s->val_ptr, n, s->nval)) ||
      (st = spx__rbp_ptr("rbp_csr", "col_ptr", s->col_ptr, n, 2 * s->nblocks)) ||
      (st = spx__rbp_ptr("rbp_csr", "row_ptr", s->row_ptr, n, s->nnon)))
    return st;
  for (i = 0; i < n; i++) {
    spx__rbp_out in = spx__rbp_csr_in(s, i);
    int64_t nv, d = s->col_ptr[i + 1] - s->col_ptr[i];
    if (d % 2) return spx__fail(SPX_INVALID_ARGUMENT, "rbp_csr: row %lld has an odd number of block columns", (long long)i);
    if ((st = spx__rbp_check_row("rbp_csr", &in, i, d / 2, s->row_ptr[i], s->row_ptr[i + 1], s->ncols, &nv)))
      return st;
    if (nv != s->val_ptr[i + 1] - s->val_ptr[i])
      return spx__fail(SPX_INVALID_ARGUMENT, "rbp_csr: row %lld blocks span %lld columns but val_ptr gives %d values",
                       (long long)i, (long long)nv, (int)(s->val_ptr[i + 1] - s->val_ptr[i]));
  }
  return SPX_OK;
}

/* Algorithm 2 of the paper, one thread per row: each block's columns are rebuilt from its first and
 * last by counting, then the isolated part as CSR. */
#define SPX__RBP_CSR_SPMV(T)                                                   \
  {                                                                            \
    const T *xv = (const T *)x, *cv = (const T *)s->comp_val.p, *iv = (const T *)s->csr_val.p; \
    T *yv = (T *)y;                                                            \
    int64_t i;                                                                 \
    SPX__FMT_OMP_FOR(s->nrows)                                                 \
    for (i = 0; i < s->nrows; i++) {                                           \
      double sum = 0;                                                          \
      int64_t jj, j, count = 0, rs = s->col_ptr[i];                            \
      for (jj = s->val_ptr[i]; jj < s->val_ptr[i + 1]; jj++) {                 \
        int64_t now = s->comp_col[rs + count], next = s->comp_col[rs + count + 1]; \
        sum += (double)cv[jj] * (double)xv[now];                               \
        for (j = now + 1; j <= next; j++) { jj++; sum += (double)cv[jj] * (double)xv[j]; } \
        count += 2;                                                            \
      }                                                                        \
      for (j = s->row_ptr[i]; j < s->row_ptr[i + 1]; j++) sum += (double)iv[j] * (double)xv[s->csr_col[j]]; \
      SPX__YSET(T, yv, i, sum);                                                \
    }                                                                          \
  }

static spx_status spx__rbp_csr_spmv(const spx_fmt_rbp_csr *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__RBP_CSR_SPMV);
  return SPX_OK;
}

/* ---- RBP-ELL and RBP-ELL-R: the same arrays, plus rl for -R ---- */
typedef struct spx__rbpe {
  int64_t nrows, ncols, nnz, kv, kc, nnon;
  spx_val comp_val, csr_val;
  int32_t *comp_col, *rl, *row_ptr, *csr_col;
  spx_dtype dtype;
} spx__rbpe;

static spx__rbp_out spx__rbpe_io(const spx__rbpe *e, int64_t i) {
  spx__rbp_out o;
  o.comp_col = e->comp_col; o.comp_val = e->comp_val; o.cbase = i; o.cstride = e->nrows;
  o.vbase = i; o.vstride = e->nrows; o.csr_col = e->csr_col; o.csr_val = e->csr_val;
  o.csr_base = e->row_ptr ? e->row_ptr[i] : 0;
  return o;
}

/* Pass 1: kv, kc, nnon. */
static void spx__rbpe_size(const spx_csr *a, int64_t *kv, int64_t *kc, int64_t *nnon) {
  int64_t i, mv = 0, mb = 0, nn = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 256) reduction(max : mv, mb) reduction(+ : nn) if (a->nrows >= SPX__FMT_OMP_MIN)
#endif
  for (i = 0; i < a->nrows; i++) {
    int64_t b, v, m;
    spx__rbp_row(a, i, &b, &v, &m);
    mv = SPX__MAX(mv, v); mb = SPX__MAX(mb, b); nn += m;
  }
  *kv = mv; *kc = 2 * mb; *nnon = nn;
}

/* Passes 2 and 3 into allocated arrays: isolated pointers, then every row with its padding. */
static void spx__rbpe_fill(const spx_csr *a, spx__rbpe *e) {
  int64_t i, n = a->nrows;
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) {
    int64_t b, v, m;
    spx__rbp_row(a, i, &b, &v, &m);
    e->row_ptr[i + 1] = (int32_t)m;
  }
  spx__prefix32(e->row_ptr, n);
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) {
    spx__rbp_out o = spx__rbpe_io(e, i);
    int64_t b, v, m, t;
    spx__rbp_emit(a, i, &o, &b, &v, &m);
    for (t = v; t < e->kv; t++) spx_val_pad(e->comp_val, i + t * n, a->dtype);
    for (t = b; t < e->kc / 2; t++) { /* padding pairs: the empty run (1, 0) */
      e->comp_col[i + 2 * t * n] = 1;
      e->comp_col[i + (2 * t + 1) * n] = 0;
    }
    if (e->rl) e->rl[i] = (int32_t)b;
  }
}

/* Blocks of row i: rl[i], or the pairs before the first empty one. */
static int64_t spx__rbpe_blocks(const spx__rbpe *e, int64_t i) {
  int64_t q;
  if (e->rl) return e->rl[i];
  for (q = 0; q < e->kc / 2 && e->comp_col[i + (2 * q + 1) * e->nrows] >= e->comp_col[i + 2 * q * e->nrows]; q++) {}
  return q;
}

static spx_status spx__rbpe_to_csr(const char *fmt, const spx__rbpe *e, spx_csr *o) {
  int64_t i, n = e->nrows;
  for (i = 0; i < n; i++) {
    int64_t q, nb = spx__rbpe_blocks(e, i), len = e->row_ptr[i + 1] - e->row_ptr[i];
    if (nb < 0 || nb > e->kc / 2) return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld has %lld blocks", fmt,
                                                   (long long)i, (long long)nb);
    for (q = 0; q < nb; q++) len += (int64_t)e->comp_col[i + (2 * q + 1) * n] - e->comp_col[i + 2 * q * n] + 1;
    o->row_ptr[i + 1] = len;
  }
  spx__prefix64(o->row_ptr, n);
  if (o->row_ptr[n] != e->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s holds %lld entries but says nnz = %lld", fmt,
                     (long long)o->row_ptr[n], (long long)e->nnz);
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) {
    spx__rbp_out in = spx__rbpe_io(e, i);
    spx__rbp_merge(&in, spx__rbpe_blocks(e, i), e->row_ptr[i], e->row_ptr[i + 1], o, i);
  }
  return SPX_OK;
}

static spx_status spx__rbpe_check(const char *fmt, const spx__rbpe *e) {
  int64_t i, q, t, n = e->nrows, total = 0, mv = 0, mb = 0;
  spx_status st;
  if (e->kc % 2) return spx__fail(SPX_INVALID_ARGUMENT, "%s: kc = %lld is odd", fmt, (long long)e->kc);
  if ((st = spx__rbp_ptr(fmt, "row_ptr", e->row_ptr, n, e->nnon))) return st;
  for (i = 0; i < n; i++) {
    spx__rbp_out in = spx__rbpe_io(e, i);
    int64_t nb = spx__rbpe_blocks(e, i), nv;
    if (nb < 0 || nb > e->kc / 2)
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: rl[%lld] = %lld outside [0, kc/2]", fmt, (long long)i, (long long)nb);
    in.csr_base = 0;
    if ((st = spx__rbp_check_row(fmt, &in, i, nb, e->row_ptr[i], e->row_ptr[i + 1], e->ncols, &nv))) return st;
    if (nv > e->kv)
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld needs %lld values, more than kv = %lld", fmt,
                       (long long)i, (long long)nv, (long long)e->kv);
    for (q = nb; q < e->kc / 2; q++)
      if (e->comp_col[i + 2 * q * n] != 1 || e->comp_col[i + (2 * q + 1) * n] != 0)
        return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld pair %lld should be the padding pair (1, 0)", fmt,
                         (long long)i, (long long)q);
    for (t = nv; t < e->kv; t++)
      if (!spx_val_is_pad(e->comp_val, i + t * n, e->dtype))
        return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld value slot %lld should be padding (-0.0)", fmt,
                         (long long)i, (long long)t);
    total += nv + e->row_ptr[i + 1] - e->row_ptr[i];
    mv = SPX__MAX(mv, nv); mb = SPX__MAX(mb, nb);
  }
  if (total != e->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s holds %lld entries but says nnz = %lld", fmt, (long long)total,
                     (long long)e->nnz);
  if (mv != e->kv || 2 * mb != e->kc)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: kv = %lld, kc = %lld but the rows need %lld and %lld", fmt,
                     (long long)e->kv, (long long)e->kc, (long long)mv, (long long)(2 * mb));
  return SPX_OK;
}

/* One thread per row: pairs (all kc/2, the padding ones empty; or rl[i] for -R), values consumed in
 * order down the row's value column, then the isolated part as CSR. */
#define SPX__RBPE_SPMV(T)                                                      \
  {                                                                            \
    const T *xv = (const T *)x, *cv = (const T *)e->comp_val.p, *iv = (const T *)e->csr_val.p; \
    T *yv = (T *)y;                                                            \
    int64_t i, n = e->nrows;                                                   \
    SPX__FMT_OMP_FOR(n)                                                        \
    for (i = 0; i < n; i++) {                                                  \
      double sum = 0;                                                          \
      int64_t q, v = 0, j, nb = e->rl ? e->rl[i] : e->kc / 2;                  \
      for (q = 0; q < nb; q++) {                                               \
        int64_t f = e->comp_col[i + 2 * q * n], l = e->comp_col[i + (2 * q + 1) * n]; \
        for (j = f; j <= l; j++, v++) sum += (double)cv[i + v * n] * (double)xv[j]; \
      }                                                                        \
      for (j = e->row_ptr[i]; j < e->row_ptr[i + 1]; j++) sum += (double)iv[j] * (double)xv[e->csr_col[j]]; \
      SPX__YSET(T, yv, i, sum);                                                \
    }                                                                          \
  }

static spx_status spx__rbpe_spmv(const spx__rbpe *e, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(e->dtype, SPX__RBPE_SPMV);
  return SPX_OK;
}

/* The two structs differ only in rl: view both through spx__rbpe. */
#define SPX__RBPE_VIEW(s, e, RL)                                                          \
  e.nrows = (s)->nrows; e.ncols = (s)->ncols; e.nnz = (s)->nnz; e.kv = (s)->kv;            \
  e.kc = (s)->kc; e.nnon = (s)->nnon; e.comp_val = (s)->comp_val; e.csr_val = (s)->csr_val; \
  e.comp_col = (s)->comp_col; e.rl = RL; e.row_ptr = (s)->row_ptr; e.csr_col = (s)->csr_col; \
  e.dtype = (s)->dtype

static spx_status spx__rbp_ell_from_csr(const spx_csr *a, const spx__rbp_ell_params *p, spx_fmt_rbp_ell *s) {
  int64_t kv, kc, nnon;
  spx_status st;
  spx__rbpe e;
  (void)p;
  spx__rbpe_size(a, &kv, &kc, &nnon);
  s->nrows = a->nrows; s->ncols = a->ncols; s->nnz = a->nnz; s->kv = (int32_t)kv; s->kc = (int32_t)kc; s->nnon = nnon;
  if ((st = spx__rbp_ell_alloc(s))) return st;
  SPX__RBPE_VIEW(s, e, NULL);
  spx__rbpe_fill(a, &e);
  return SPX_OK;
}
static spx_status spx__rbp_ell_to_csr(const spx_fmt_rbp_ell *s, spx_csr *o) {
  spx__rbpe e;
  SPX__RBPE_VIEW(s, e, NULL);
  return spx__rbpe_to_csr("rbp_ell", &e, o);
}
static spx_status spx__rbp_ell_check(const spx_fmt_rbp_ell *s) {
  spx__rbpe e;
  SPX__RBPE_VIEW(s, e, NULL);
  return spx__rbpe_check("rbp_ell", &e);
}
static spx_status spx__rbp_ell_spmv(const spx_fmt_rbp_ell *s, double alpha, const void *x, double beta, void *y) {
  spx__rbpe e;
  SPX__RBPE_VIEW(s, e, NULL);
  return spx__rbpe_spmv(&e, alpha, x, beta, y);
}

static spx_status spx__rbp_ell_r_from_csr(const spx_csr *a, const spx__rbp_ell_r_params *p, spx_fmt_rbp_ell_r *s) {
  int64_t kv, kc, nnon;
  spx_status st;
  spx__rbpe e;
  (void)p;
  spx__rbpe_size(a, &kv, &kc, &nnon);
  s->nrows = a->nrows; s->ncols = a->ncols; s->nnz = a->nnz; s->kv = (int32_t)kv; s->kc = (int32_t)kc; s->nnon = nnon;
  if ((st = spx__rbp_ell_r_alloc(s))) return st;
  SPX__RBPE_VIEW(s, e, s->rl);
  spx__rbpe_fill(a, &e);
  return SPX_OK;
}
static spx_status spx__rbp_ell_r_to_csr(const spx_fmt_rbp_ell_r *s, spx_csr *o) {
  spx__rbpe e;
  SPX__RBPE_VIEW(s, e, s->rl);
  return spx__rbpe_to_csr("rbp_ell_r", &e, o);
}
static spx_status spx__rbp_ell_r_check(const spx_fmt_rbp_ell_r *s) {
  spx__rbpe e;
  SPX__RBPE_VIEW(s, e, s->rl);
  return spx__rbpe_check("rbp_ell_r", &e);
}
static spx_status spx__rbp_ell_r_spmv(const spx_fmt_rbp_ell_r *s, double alpha, const void *x, double beta, void *y) {
  spx__rbpe e;
  SPX__RBPE_VIEW(s, e, s->rl);
  return spx__rbpe_spmv(&e, alpha, x, beta, y);
}
