/* SPDX-License-Identifier: BSD-3-Clause */
/* SELL-C-sigma: sort rows by length inside windows of sigma (qsort of (length, row) keys, so ties
 * keep row order), cut into slices of c, each slice an ELL block as wide as its longest row.
 * O(slots + n log sigma), parallel over windows and slices. */

static int spx__u64_cmp(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

static spx_status spx__sell_from_csr(const spx_csr *a, const spx__sell_params *p, spx_fmt_sell *s) {
  int64_t n = a->nrows, c = p->c, sigma = p->sigma, nsl = (n + c - 1) / c, i, sl, *sp = NULL;
  uint64_t *key = NULL;
  spx_status st = SPX_OUT_OF_MEMORY;
  s->nrows = n; s->ncols = a->ncols; s->nnz = a->nnz; s->c = (int32_t)c; s->sigma = (int32_t)sigma;
  s->nslices = nsl;
  if (!(sp = (int64_t *)spx__calloc((size_t)nsl + 1, sizeof *sp))) goto done;
  if (sigma > 1) {
    int64_t w;
    /* Key: longest first, then row order; rows fit 32 bits (checked by the caller). */
    if (!(key = (uint64_t *)spx__alloc((size_t)n + 1, sizeof *key))) goto done;
    for (i = 0; i < n; i++) key[i] = ((uint64_t)(INT32_MAX - spx__row_len(a, i)) << 32) | (uint64_t)i;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1) if (n >= SPX__FMT_OMP_MIN)
#endif
    for (w = 0; w < (n + sigma - 1) / sigma; w++)
      qsort(key + w * sigma, (size_t)SPX__MIN(sigma, n - w * sigma), sizeof *key, spx__u64_cmp);
  }
  for (sl = 0; sl < nsl; sl++) {
    int64_t width = 0, q;
    for (q = sl * c; q < SPX__MIN(n, (sl + 1) * c); q++)
      width = SPX__MAX(width, spx__row_len(a, key ? (int64_t)(key[q] & 0xffffffffu) : q));
    sp[sl + 1] = sp[sl] + width * c;
  }
  s->nslots = sp[nsl];
  if ((st = spx__fits32(s->nslots, "sell slots"))) goto done;
  if ((st = spx__sell_alloc(s))) goto done;
  for (sl = 0; sl <= nsl; sl++) s->slice_ptr[sl] = (int32_t)sp[sl];
  if (key)
    for (i = 0; i < n; i++) s->perm[i] = (int32_t)(key[i] & 0xffffffffu);
  SPX__FMT_OMP_FOR(nsl)
  for (sl = 0; sl < nsl; sl++) {
    int64_t width = (sp[sl + 1] - sp[sl]) / c, r, j;
    for (r = 0; r < c; r++) {
      int64_t q = sl * c + r;
      if (q < n) spx__pad_fill(a, s->perm ? s->perm[q] : q, width, s->col, s->val, sp[sl] + r, c);
      else
        for (j = 0; j < width; j++) { /* positions past the last row: padding on column 0 */
          s->col[sp[sl] + r + j * c] = 0;
          spx_val_pad(s->val, sp[sl] + r + j * c, a->dtype);
        }
    }
  }
  st = SPX_OK;
done:
  SPX_FREE(sp);
  SPX_FREE(key);
  return st;
}

static int64_t spx__sell_row(const spx_fmt_sell *s, int64_t q) { return s->perm ? s->perm[q] : q; }

static spx_status spx__sell_to_csr(const spx_fmt_sell *s, spx_csr *o) {
  int64_t q, n = s->nrows, c = s->c;
  spx_val dst;
  for (q = 0; q < n; q++) {
    int64_t sl = q / c, w = (s->slice_ptr[sl + 1] - s->slice_ptr[sl]) / c;
    o->row_ptr[spx__sell_row(s, q) + 1] = spx__pad_len(s->val, s->slice_ptr[sl] + q % c, c, w, s->dtype);
  }
  spx__prefix64(o->row_ptr, n);
  if (o->row_ptr[n] != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "sell holds %lld entries but says nnz = %lld",
                     (long long)o->row_ptr[n], (long long)s->nnz);
  dst.p = o->val.p;
  SPX__FMT_OMP_FOR(n)
  for (q = 0; q < n; q++) {
    int64_t r = spx__sell_row(s, q), b = o->row_ptr[r], m = o->row_ptr[r + 1] - b, j;
    int64_t base = s->slice_ptr[q / c] + q % c;
    for (j = 0; j < m; j++) {
      o->col_idx[b + j] = s->col[base + j * c];
      spx_val_move(dst, b + j, s->val, base + j * c, s->dtype);
    }
  }
  return SPX_OK;
}

static spx_status spx__sell_check(const spx_fmt_sell *s) {
  int64_t n = s->nrows, c = s->c, q, sl, total = 0, prev = 0;
  if (c < 1 || s->sigma < 1 || s->nslices != (n + c - 1) / c)
    return spx__fail(SPX_INVALID_ARGUMENT, "sell: c = %lld, sigma = %d, %lld slices for %lld rows", (long long)c,
                     (int)s->sigma, (long long)s->nslices, (long long)n);
  if (s->slice_ptr[0] != 0 || s->slice_ptr[s->nslices] != s->nslots)
    return spx__fail(SPX_INVALID_ARGUMENT, "sell: slice_ptr must run from 0 to nslots = %lld", (long long)s->nslots);
  for (sl = 0; sl < s->nslices; sl++) {
    int64_t d = (int64_t)s->slice_ptr[sl + 1] - s->slice_ptr[sl];
    if (d < 0 || d % c)
      return spx__fail(SPX_INVALID_ARGUMENT, "sell: slice %lld spans %lld slots, not a multiple of c = %lld",
                       (long long)sl, (long long)d, (long long)c);
  }
  if (s->perm) {
    unsigned char *seen = (unsigned char *)spx__calloc((size_t)n + 1, 1);
    if (!seen) return SPX_OUT_OF_MEMORY;
    for (q = 0; q < n; q++) {
      int32_t r = s->perm[q];
      if (r < 0 || r >= n || seen[r] || r / s->sigma != q / s->sigma) {
        SPX_FREE(seen);
        return spx__fail(SPX_INVALID_ARGUMENT, "sell: perm[%lld] = %d is not a permutation within windows of %d",
                         (long long)q, (int)r, (int)s->sigma);
      }
      seen[r] = 1;
    }
    SPX_FREE(seen);
  }
  for (sl = 0; sl < s->nslices; sl++) {
    int64_t w = (s->slice_ptr[sl + 1] - s->slice_ptr[sl]) / c, longest = 0, r;
    for (r = 0; r < c; r++) {
      int64_t row = sl * c + r < n ? spx__sell_row(s, sl * c + r) : -1;
      int64_t m = spx__pad_check("sell", row, s->col, s->val, s->slice_ptr[sl] + r, c, w, s->ncols,
                                 row >= 0 ? spx__pad_col(row, s->ncols) : 0, s->dtype);
      if (m < 0) return SPX_INVALID_ARGUMENT;
      if (row < 0 && m > 0)
        return spx__fail(SPX_INVALID_ARGUMENT, "sell: position %lld past the last row holds entries",
                         (long long)(sl * c + r));
      if (row >= 0 && s->sigma > 1 && (sl * c + r) % s->sigma != 0 && m > prev)
        return spx__fail(SPX_INVALID_ARGUMENT, "sell: position %lld is longer than the one before it in its "
                         "sorting window", (long long)(sl * c + r));
      prev = m;
      total += m;
      longest = SPX__MAX(longest, m);
    }
    if (longest != w)
      return spx__fail(SPX_INVALID_ARGUMENT, "sell: slice %lld is %lld wide but its longest row has %lld",
                       (long long)sl, (long long)w, (long long)longest);
  }
  if (total != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "sell holds %lld entries but says nnz = %lld", (long long)total,
                     (long long)s->nnz);
  return SPX_OK;
}

/* One thread per slice row; a slice is c consecutive threads reading consecutive slots. */
#define SPX__SELL_SPMV(T)                                                      \
  {                                                                            \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                     \
    T *yv = (T *)y;                                                            \
    int64_t sl, c = s->c;                                                      \
    SPX__FMT_OMP_FOR(s->nslices)                                               \
    for (sl = 0; sl < s->nslices; sl++) {                                      \
      int64_t base = s->slice_ptr[sl], w = (s->slice_ptr[sl + 1] - base) / c, r, j; \
      for (r = 0; r < c && sl * c + r < s->nrows; r++) {                       \
        double sum = 0;                                                        \
        for (j = 0; j < w; j++) sum += (double)av[base + j * c + r] * (double)xv[s->col[base + j * c + r]]; \
        SPX__YSET(T, yv, spx__sell_row(s, sl * c + r), sum);                   \
      }                                                                        \
    }                                                                          \
  }

static spx_status spx__sell_spmv(const spx_fmt_sell *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__SELL_SPMV);
  return SPX_OK;
}

/* ---- SELL16: SELL-C-sigma with 16-bit column offsets from a per-slice base ------------------
 * Built through SELL (one converter for the layout), then the columns are re-based per slice;
 * to_csr and check decode into a SELL view and reuse SELL's. */

static int spx__i32_desc(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return (a < b) - (a > b);
}

/* Slots SELL-c-sigma would store, from the row lengths alone (len: n ints of scratch). */
static int64_t spx__sell_slots(const spx_csr *a, int64_t c, int64_t sigma, int32_t *len) {
  int64_t n = a->nrows, i, w, slots = 0;
  for (i = 0; i < n; i++) len[i] = (int32_t)spx__row_len(a, i);
  if (sigma > 1)
    for (w = 0; w < n; w += sigma) qsort(len + w, (size_t)SPX__MIN(sigma, n - w), sizeof *len, spx__i32_desc);
  for (i = 0; i < n; i += c) {
    int64_t q, width = 0;
    for (q = i; q < SPX__MIN(n, i + c); q++) width = SPX__MAX(width, len[q]);
    slots += width * c;
  }
  return slots;
}

/* sigma auto: sort in windows of 256 only when the padding it removes outweighs the perm array. */
static spx_status spx__sell16_sigma(const spx_csr *a, int64_t c, int64_t *sigma) {
  int32_t *len;
  int64_t s1, s256, slot = 2 + (int64_t)SPX_DTYPE_SIZE(a->dtype);
  *sigma = 1;
  if (a->nrows <= 1) return SPX_OK;
  if (!(len = (int32_t *)spx__alloc((size_t)a->nrows, sizeof *len))) return SPX_OUT_OF_MEMORY;
  s1 = spx__sell_slots(a, c, 1, len);
  s256 = spx__sell_slots(a, c, 256, len);
  SPX_FREE(len);
  if (s256 * slot + 4 * a->nrows < s1 * slot) *sigma = 256;
  return SPX_OK;
}

static spx_status spx__sell16_from_csr(const spx_csr *a, const spx__sell16_params *p, spx_fmt_sell16 *s) {
  spx__sell_params q;
  spx_fmt_sell t;
  spx_status st;
  int64_t sl, c = p->c, sigma = p->sigma, bad = -1;
  (void)spx__sell16_alloc; /* the arrays come from SELL's converter, plus two allocated here */
  memset(&t, 0, sizeof t);
  t.dtype = a->dtype;
  if (sigma == SPX_AUTO && (st = spx__sell16_sigma(a, c, &sigma))) return st;
  q.spx__none = 0; q.c = c; q.sigma = sigma;
  if ((st = spx__sell_from_csr(a, &q, &t))) goto fail;
  s->nrows = t.nrows; s->ncols = t.ncols; s->nnz = t.nnz; s->c = t.c; s->sigma = t.sigma;
  s->nslices = t.nslices; s->nslots = t.nslots;
  /* The arrays SELL16 shares with SELL move over; cbase and the offsets are new. */
  s->perm = t.perm; s->slice_ptr = t.slice_ptr; s->val = t.val;
  t.perm = NULL; t.slice_ptr = NULL; t.val.p = NULL;
  st = SPX_OUT_OF_MEMORY;
  if ((t.nslices > 0 && !(s->cbase = (int32_t *)spx__calloc((size_t)t.nslices, sizeof *s->cbase))) ||
      (t.nslots > 0 && !(s->col = (uint16_t *)spx__calloc((size_t)t.nslots, sizeof *s->col))))
    goto fail;
  SPX__FMT_OMP_FOR(t.nslices)
  for (sl = 0; sl < t.nslices; sl++) {
    int64_t b = s->slice_ptr[sl], w = (s->slice_ptr[sl + 1] - b) / c, live = SPX__MIN(c, t.nrows - sl * c), r, j;
    int32_t lo = INT32_MAX, hi = -1;
    for (j = 0; j < w; j++)
      for (r = 0; r < live; r++) {
        int32_t col = t.col[b + j * c + r];
        lo = SPX__MIN(lo, col);
        hi = SPX__MAX(hi, col);
      }
    if (hi < 0) lo = hi = 0;
    s->cbase[sl] = lo;
    if ((int64_t)hi - lo > UINT16_MAX) {
#if defined(_OPENMP)
#pragma omp critical(spx__sell16_bad)
#endif
      bad = bad < 0 || sl < bad ? sl : bad;
      continue;
    }
    for (j = 0; j < w; j++) /* positions past the last row: offset 0 */
      for (r = 0; r < c; r++) s->col[b + j * c + r] = r < live ? (uint16_t)(t.col[b + j * c + r] - lo) : 0;
  }
  if (bad >= 0) {
    int64_t b = s->slice_ptr[bad], w = (s->slice_ptr[bad + 1] - b) / c, j;
    int32_t hi = 0;
    for (j = 0; j < w * c; j++)
      if ((bad * c + j % c) < t.nrows) hi = SPX__MAX(hi, t.col[b + j]);
    st = spx__fail(SPX_UNSUPPORTED, "sell16: slice %lld uses columns %d..%d, more than the 65536 a 16-bit offset "
                   "reaches (use sell, or reorder the matrix to a smaller bandwidth)", (long long)bad,
                   (int)s->cbase[bad], (int)hi);
    goto fail;
  }
  st = SPX_OK;
fail:
  spx_format_free(&spx__sell_layout, &t);
  return st;
}

/* A SELL view of s with decoded 32-bit columns (positions past the last row on column 0, as SELL
 * stores them); *v's col must be freed. Checks what decoding relies on first. */
static spx_status spx__sell16_view(const spx_fmt_sell16 *s, spx_fmt_sell *v) {
  int64_t n = s->nrows, c = s->c, sl;
  memset(v, 0, sizeof *v);
  if (c < 1 || s->nslices != (n + c - 1) / c || s->slice_ptr[0] != 0 || s->slice_ptr[s->nslices] != s->nslots)
    return spx__fail(SPX_INVALID_ARGUMENT, "sell16: c = %lld, %lld slices for %lld rows, slice_ptr must run "
                     "from 0 to nslots = %lld", (long long)c, (long long)s->nslices, (long long)n, (long long)s->nslots);
  for (sl = 0; sl < s->nslices; sl++) {
    int64_t d = (int64_t)s->slice_ptr[sl + 1] - s->slice_ptr[sl];
    if (d < 0 || d % c)
      return spx__fail(SPX_INVALID_ARGUMENT, "sell16: slice %lld spans %lld slots, not a multiple of c = %lld",
                       (long long)sl, (long long)d, (long long)c);
    if (s->cbase[sl] < 0 || (s->cbase[sl] >= s->ncols && s->ncols > 0))
      return spx__fail(SPX_INVALID_ARGUMENT, "sell16: slice %lld base column %d outside [0, %lld)", (long long)sl,
                       (int)s->cbase[sl], (long long)s->ncols);
  }
  v->dtype = s->dtype; v->nrows = n; v->ncols = s->ncols; v->nnz = s->nnz; v->c = s->c; v->sigma = s->sigma;
  v->nslices = s->nslices; v->nslots = s->nslots; v->perm = s->perm; v->slice_ptr = s->slice_ptr; v->val = s->val;
  if (s->nslots > 0 && !(v->col = (int32_t *)spx__alloc((size_t)s->nslots, sizeof *v->col))) return SPX_OUT_OF_MEMORY;
  for (sl = 0; sl < s->nslices; sl++) {
    int64_t b = s->slice_ptr[sl], w = (s->slice_ptr[sl + 1] - b) / c, j, r;
    for (j = 0; j < w; j++)
      for (r = 0; r < c; r++) {
        int64_t k = b + j * c + r;
        if (sl * c + r < n) v->col[k] = s->cbase[sl] + (int32_t)s->col[k];
        else if (s->col[k] != 0) {
          SPX_FREE(v->col);
          return spx__fail(SPX_INVALID_ARGUMENT, "sell16: position %lld past the last row has offset %u, not 0",
                           (long long)(sl * c + r), (unsigned)s->col[k]);
        } else v->col[k] = 0;
      }
  }
  return SPX_OK;
}

static spx_status spx__sell16_to_csr(const spx_fmt_sell16 *s, spx_csr *o) {
  spx_fmt_sell v;
  spx_status st = spx__sell16_view(s, &v);
  if (!st) st = spx__sell_to_csr(&v, o);
  SPX_FREE(v.col);
  return st;
}

static spx_status spx__sell16_check(const spx_fmt_sell16 *s) {
  spx_fmt_sell v;
  spx_status st = spx__sell16_view(s, &v);
  if (!st) st = spx__sell_check(&v);
  SPX_FREE(v.col);
  return st;
}

/* As SELL's, the column rebuilt from the slice base. */
#define SPX__SELL16_SPMV(T)                                                    \
  {                                                                            \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                     \
    T *yv = (T *)y;                                                            \
    int64_t sl, c = s->c;                                                      \
    SPX__FMT_OMP_FOR(s->nslices)                                               \
    for (sl = 0; sl < s->nslices; sl++) {                                      \
      int64_t base = s->slice_ptr[sl], w = (s->slice_ptr[sl + 1] - base) / c, r, j; \
      const T *xb = xv + s->cbase[sl];                                         \
      for (r = 0; r < c && sl * c + r < s->nrows; r++) {                       \
        double sum = 0;                                                        \
        for (j = 0; j < w; j++) sum += (double)av[base + j * c + r] * (double)xb[s->col[base + j * c + r]]; \
        SPX__YSET(T, yv, s->perm ? s->perm[sl * c + r] : sl * c + r, sum);     \
      }                                                                        \
    }                                                                          \
  }

static spx_status spx__sell16_spmv(const spx_fmt_sell16 *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__SELL16_SPMV);
  return SPX_OK;
}
