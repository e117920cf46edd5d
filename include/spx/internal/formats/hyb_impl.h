/* SPDX-License-Identifier: BSD-3-Clause */
/* HYB: ELL part of width k (padding as ELL), the rest of each row in a row-major COO part.
 * O(n k + nnz); the ELL part is filled in parallel, the COO part in one pass. */

/* Bell and Garland's k (CUSP's compute_optimal_entries_per_row): stop widening the ELL part when
 * fewer than a third of the rows, or fewer than 4096 rows, would fill the next column. */
static spx_status spx__hyb_auto_k(const spx_csr *a, int64_t *k) {
  int64_t longest = spx__max_row(a), i, rows = a->nrows, *hist;
  *k = longest;
  if (!(hist = (int64_t *)spx__calloc((size_t)longest + 1, sizeof *hist))) return SPX_OUT_OF_MEMORY;
  for (i = 0; i < a->nrows; i++) hist[spx__row_len(a, i)]++;
  for (i = 0; i < longest; i++) {
    rows -= hist[i]; /* rows longer than i */
    if (3 * rows < a->nrows || rows < 4096) { *k = i; break; }
  }
  SPX_FREE(hist);
  return SPX_OK;
}

static spx_status spx__hyb_from_csr(const spx_csr *a, const spx__hyb_params *p, spx_fmt_hyb *s) {
  int64_t k = p->k, i, ncoo = 0, w = 0;
  spx_status st;
  spx_val src = spx__csr_val(a);
  if (k == SPX_AUTO && (st = spx__hyb_auto_k(a, &k))) return st;
  if (k > 0 && a->ncols == 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "hyb_k = %lld on a matrix with no columns: padding needs a column",
                     (long long)k);
  for (i = 0; i < a->nrows; i++) ncoo += SPX__MAX(0, spx__row_len(a, i) - k);
  s->nrows = a->nrows; s->ncols = a->ncols; s->nnz = a->nnz; s->k = (int32_t)k; s->ncoo = ncoo;
  if ((st = spx__hyb_alloc(s))) return st;
  SPX__FMT_OMP_FOR(a->nrows)
  for (i = 0; i < a->nrows; i++) spx__pad_fill(a, i, k, s->ell_col, s->ell_val, i, a->nrows);
  for (i = 0; i < a->nrows; i++) {
    int64_t q;
    for (q = a->row_ptr[i] + k; q < a->row_ptr[i + 1]; q++, w++) {
      s->coo_row[w] = (int32_t)i;
      s->coo_col[w] = a->col_idx[q];
      spx_val_move(s->coo_val, w, src, q, a->dtype);
    }
  }
  return SPX_OK;
}

static spx_status spx__hyb_to_csr(const spx_fmt_hyb *s, spx_csr *o) {
  int64_t i, q, n = s->nrows, w = 0;
  spx_val dst;
  for (i = 0; i < n; i++) o->row_ptr[i + 1] = spx__pad_len(s->ell_val, i, n, s->k, s->dtype);
  for (q = 0; q < s->ncoo; q++) o->row_ptr[s->coo_row[q] + 1]++;
  spx__prefix64(o->row_ptr, n);
  if (o->row_ptr[n] != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "hyb holds %lld entries but says nnz = %lld",
                     (long long)o->row_ptr[n], (long long)s->nnz);
  dst.p = o->val.p;
  for (i = 0; i < n; i++) { /* ELL entries of a row come first: the COO part has its later columns */
    int64_t b = o->row_ptr[i], j;
    for (j = 0; j < s->k && !spx_val_is_pad(s->ell_val, i + j * n, s->dtype); j++, b++) {
      o->col_idx[b] = s->ell_col[i + j * n];
      spx_val_move(dst, b, s->ell_val, i + j * n, s->dtype);
    }
    for (; w < s->ncoo && s->coo_row[w] == i; w++, b++) {
      o->col_idx[b] = s->coo_col[w];
      spx_val_move(dst, b, s->coo_val, w, s->dtype);
    }
  }
  return SPX_OK;
}

static spx_status spx__hyb_check(const spx_fmt_hyb *s) {
  int64_t i, n = s->nrows, total = s->ncoo, w = 0;
  for (i = 0; i < n; i++) {
    int64_t m = spx__pad_check("hyb", i, s->ell_col, s->ell_val, i, n, s->k, s->ncols,
                               s->ncols > 0 ? spx__pad_col(i, s->ncols) : 0, s->dtype);
    int32_t last = m > 0 ? s->ell_col[i + (m - 1) * n] : -1;
    if (m < 0) return SPX_INVALID_ARGUMENT;
    total += m;
    if (w < s->ncoo && s->coo_row[w] < i)
      return spx__fail(SPX_INVALID_ARGUMENT, "hyb: COO entry %lld (row %d) out of order", (long long)w,
                       (int)s->coo_row[w]);
    if (w < s->ncoo && s->coo_row[w] == i && m < s->k)
      return spx__fail(SPX_INVALID_ARGUMENT, "hyb: row %lld has COO entries but only %lld of %d ELL slots used",
                       (long long)i, (long long)m, (int)s->k);
    for (; w < s->ncoo && s->coo_row[w] == i; w++) {
      if (s->coo_col[w] <= last || s->coo_col[w] >= s->ncols)
        return spx__fail(SPX_INVALID_ARGUMENT, "hyb: COO entry %lld: column %d out of range or order",
                         (long long)w, (int)s->coo_col[w]);
      last = s->coo_col[w];
    }
  }
  if (w != s->ncoo)
    return spx__fail(SPX_INVALID_ARGUMENT, "hyb: COO entry %lld has row %d outside the matrix", (long long)w,
                     (int)s->coo_row[w]);
  if (total != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "hyb holds %lld entries but says nnz = %lld", (long long)total,
                     (long long)s->nnz);
  return SPX_OK;
}

/* The ELL part one thread per row, then the COO part added row run by row run. */
#define SPX__HYB_SPMV(T)                                                       \
  {                                                                            \
    const T *xv = (const T *)x, *ev = (const T *)s->ell_val.p, *cv = (const T *)s->coo_val.p; \
    T *yv = (T *)y;                                                            \
    int64_t i, n = s->nrows, q = 0;                                            \
    SPX__FMT_OMP_FOR(n)                                                        \
    for (i = 0; i < n; i++) {                                                  \
      double sum = 0;                                                          \
      int64_t j;                                                               \
      for (j = 0; j < s->k; j++) sum += (double)ev[i + j * n] * (double)xv[s->ell_col[i + j * n]]; \
      SPX__YSET(T, yv, i, sum);                                                \
    }                                                                          \
    while (q < s->ncoo) {                                                      \
      int32_t r = s->coo_row[q];                                               \
      double sum = 0;                                                          \
      for (; q < s->ncoo && s->coo_row[q] == r; q++) sum += (double)cv[q] * (double)xv[s->coo_col[q]]; \
      yv[r] = (T)((double)yv[r] + alpha * sum);                                \
    }                                                                          \
  }

static spx_status spx__hyb_spmv(const spx_fmt_hyb *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__HYB_SPMV);
  return SPX_OK;
}
