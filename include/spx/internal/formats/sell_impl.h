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
