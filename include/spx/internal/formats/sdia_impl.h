/* SPDX-License-Identifier: BSD-3-Clause */
/* SDIA, sliced diagonals: per slice of c rows the union of its rows' offsets (column - row), then
 * c values per offset. Two passes over the slices (find the offsets, fill), parallel over slices;
 * the tuner's profile counts the same unions with spx__sdia_offsets. */

/* The distinct offsets (column - row) of rows [r0, r1), increasing, into u; returns how many, or
 * cap + 1 as soon as there are more than cap. A row's offsets increase with its columns, so one
 * forward walk over u per row finds or places them (O(len + w) a row, w the slice's offsets; the
 * walk restarts should a row's columns not increase). A stencil or FEM slice has a few dozen. */
int64_t spx__sdia_offsets(const spx_csr *a, int64_t r0, int64_t r1, int32_t *u, int64_t cap) {
  int64_t n = 0, i, k;
  for (i = r0; i < r1; i++) {
    int64_t q = 0;
    int32_t prev = INT32_MIN;
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      int32_t o = (int32_t)((int64_t)a->col_idx[k] - i);
      if (o < prev) q = 0;
      prev = o;
      while (q < n && u[q] < o) q++;
      if (q < n && u[q] == o) continue;
      if (n == cap) return cap + 1;
      memmove(u + q + 1, u + q, (size_t)(n - q) * sizeof *u);
      u[q] = o;
      n++;
    }
  }
  return n;
}

/* The decline past max_fill (the device converter says the same): real slots in real rows, over
 * when the counts stopped early. */
spx_status spx__sdia_overfill(int64_t real, int over, int64_t nnz, int64_t max_fill) {
  return spx__fail(SPX_UNSUPPORTED, "sdia: the slices' diagonals would store %s%lld slots for %lld nonzeros "
                   "(more than sdia_max_fill = %lld per nonzero)", over ? "over " : "", (long long)real,
                   (long long)nnz, (long long)max_fill);
}

static spx_status spx__sdia_from_csr(const spx_csr *a, const spx__sdia_params *p, spx_fmt_sdia *s) {
  int64_t n = a->nrows, c = p->c, nsl = (n + c - 1) / c, sl, *sp = NULL, limit = p->max_fill * a->nnz, real = 0;
  int32_t *u = NULL;
  spx_status st = SPX_OUT_OF_MEMORY;
  s->nrows = n; s->ncols = a->ncols; s->nnz = a->nnz; s->c = (int32_t)c; s->nslices = nsl;
  /* A slice has no more offsets than entries, so slice sl keeps its offsets in u from its first
   * entry's index on: one pass finds them, the fill pass reads them back. */
  if (!(sp = (int64_t *)spx__calloc((size_t)nsl + 1, sizeof *sp)) ||
      !(u = (int32_t *)spx__alloc((size_t)a->nnz + 1, sizeof *u)))
    goto done;
  spx__advise_huge(u, ((size_t)a->nnz + 1) * sizeof *u);
  SPX__FMT_OMP_FOR(n)
  for (sl = 0; sl < nsl; sl++) {
    int64_t r0 = sl * c, r1 = SPX__MIN(n, r0 + c), b = a->row_ptr[r0];
    /* past the whole matrix's limit the count stops (a slice has a real row: it declines) */
    sp[sl + 1] = spx__sdia_offsets(a, r0, r1, u + b, SPX__MIN(a->row_ptr[r1] - b, limit + 1));
  }
  /* The fill counts the slots of real rows (the last slice's rows past nrows are not fill a
   * kernel pays for beyond its own thread). */
  for (sl = 0; sl < nsl; sl++) {
    real += sp[sl + 1] * (SPX__MIN(n, (sl + 1) * c) - sl * c);
    sp[sl + 1] += sp[sl];
  }
  if (real > limit) {
    st = spx__sdia_overfill(real, sp[nsl] > limit, a->nnz, p->max_fill);
    goto done;
  }
  s->ndiags = sp[nsl];
  if ((st = spx__fits32(s->ndiags, "sdia diagonals"))) goto done;
  if ((st = spx__sdia_alloc(s))) goto done;
  for (sl = 0; sl <= nsl; sl++) s->slice_ptr[sl] = (int32_t)sp[sl];
  SPX__FMT_OMP_FOR(n)
  for (sl = 0; sl < nsl; sl++) {
    int64_t r0 = sl * c, r1 = SPX__MIN(n, r0 + c), w = sp[sl + 1] - sp[sl], i, k, j;
    const int32_t *o = u + a->row_ptr[r0];
    spx_val src = spx__csr_val(a);
    if (w > 0) memcpy(s->off + sp[sl], o, (size_t)w * sizeof *o); /* off is NULL when no slice has one */
    for (j = sp[sl] * c; j < sp[sl + 1] * c; j++) spx_val_pad(s->val, j, a->dtype);
    for (i = r0; i < r1; i++) {
      int64_t d = 0;
      int32_t prev = INT32_MIN;
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
        int32_t off = (int32_t)((int64_t)a->col_idx[k] - i);
        if (off < prev) d = 0; /* the same forward walk as spx__sdia_offsets: off is among o */
        prev = off;
        while (d < w - 1 && o[d] < off) d++;
        spx_val_store(s->val, (sp[sl] + d) * c + (i - r0), src, k, a->dtype);
      }
    }
  }
  st = SPX_OK;
done:
  SPX_FREE(sp);
  SPX_FREE(u);
  return st;
}

/* Row i's entries in column order (offsets increase in a slice) into o from position at; with o
 * NULL only counts them. */
static int64_t spx__sdia_row(const spx_fmt_sdia *s, int64_t i, spx_csr *o, int64_t at) {
  int64_t sl = i / s->c, l = i - sl * s->c, d, m = 0;
  spx_val dst;
  dst.p = o ? o->val.p : NULL;
  for (d = s->slice_ptr[sl]; d < s->slice_ptr[sl + 1]; d++) {
    int64_t j = i + s->off[d];
    if (j < 0 || j >= s->ncols || spx_val_is_pad(s->val, d * s->c + l, s->dtype)) continue;
    if (o) {
      o->col_idx[at + m] = (int32_t)j;
      spx_val_move(dst, at + m, s->val, d * s->c + l, s->dtype);
    }
    m++;
  }
  return m;
}

static spx_status spx__sdia_to_csr(const spx_fmt_sdia *s, spx_csr *o) {
  int64_t i, n = s->nrows;
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) o->row_ptr[i + 1] = spx__sdia_row(s, i, NULL, 0);
  spx__prefix64(o->row_ptr, n);
  if (o->row_ptr[n] != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "sdia holds %lld entries but says nnz = %lld",
                     (long long)o->row_ptr[n], (long long)s->nnz);
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) spx__sdia_row(s, i, o, o->row_ptr[i]);
  return SPX_OK;
}

static spx_status spx__sdia_check(const spx_fmt_sdia *s) {
  int64_t c = s->c, sl, d, l, total = 0;
  if (c < 1 || s->nslices != (s->nrows + c - 1) / c)
    return spx__fail(SPX_INVALID_ARGUMENT, "sdia: c = %lld, %lld slices for %lld rows", (long long)c,
                     (long long)s->nslices, (long long)s->nrows);
  if (s->slice_ptr[0] != 0 || s->slice_ptr[s->nslices] != s->ndiags)
    return spx__fail(SPX_INVALID_ARGUMENT, "sdia: slice_ptr must run from 0 to ndiags = %lld", (long long)s->ndiags);
  for (sl = 0; sl < s->nslices; sl++) {
    if (s->slice_ptr[sl + 1] < s->slice_ptr[sl])
      return spx__fail(SPX_INVALID_ARGUMENT, "sdia: slice_ptr decreases at slice %lld", (long long)sl);
    for (d = s->slice_ptr[sl]; d < s->slice_ptr[sl + 1]; d++) {
      int64_t real = 0;
      if (d > s->slice_ptr[sl] && s->off[d] <= s->off[d - 1])
        return spx__fail(SPX_INVALID_ARGUMENT, "sdia: slice %lld: offsets not increasing at diagonal %lld",
                         (long long)sl, (long long)d);
      for (l = 0; l < c; l++) {
        int64_t i = sl * c + l, j = i + s->off[d];
        if (spx_val_is_pad(s->val, d * c + l, s->dtype)) continue;
        if (i >= s->nrows || j < 0 || j >= s->ncols)
          return spx__fail(SPX_INVALID_ARGUMENT, "sdia: slice %lld: an entry of diagonal %d lies outside the "
                           "matrix (row %lld, column %lld)", (long long)sl, (int)s->off[d], (long long)i, (long long)j);
        real++;
      }
      if (!real)
        return spx__fail(SPX_INVALID_ARGUMENT, "sdia: slice %lld: diagonal %d holds no entry", (long long)sl,
                         (int)s->off[d]);
      total += real;
    }
  }
  if (total != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "sdia holds %lld entries but says nnz = %lld", (long long)total,
                     (long long)s->nnz);
  return SPX_OK;
}

/* One row at a time within a slice, every diagonal of the slice, guarded at the matrix edge. */
#define SPX__SDIA_SPMV(T)                                                              \
  {                                                                                    \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                             \
    T *yv = (T *)y;                                                                    \
    int64_t sl, c = s->c;                                                              \
    SPX__FMT_OMP_FOR(s->nslices)                                                       \
    for (sl = 0; sl < s->nslices; sl++) {                                              \
      int64_t l, d;                                                                    \
      for (l = 0; l < c && sl * c + l < s->nrows; l++) {                               \
        int64_t i = sl * c + l;                                                        \
        double sum = 0;                                                                \
        for (d = s->slice_ptr[sl]; d < s->slice_ptr[sl + 1]; d++) {                    \
          int64_t j = i + s->off[d];                                                   \
          if (j >= 0 && j < s->ncols) sum += (double)av[d * c + l] * (double)xv[j];    \
        }                                                                              \
        SPX__YSET(T, yv, i, sum);                                                      \
      }                                                                                \
    }                                                                                  \
  }

static spx_status spx__sdia_spmv(const spx_fmt_sdia *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__SDIA_SPMV);
  return SPX_OK;
}
