/* BSR: count the distinct block columns of each block row (a stamp per block column), pick the
 * block size, then place every entry. O(nnz + n/r + ncols/c) per size tried (8 for auto); the
 * placement is serial (its position map is per block row). */

/* Blocks of the r x c tiling of a; with ptr, block row I's count goes to ptr[I+1]. mark holds
 * ceil(ncols/c) stamps, -1 on entry. */
static int64_t spx__bsr_count(const spx_csr *a, int64_t r, int64_t c, int64_t *mark, int32_t *ptr) {
  int64_t I, total = 0, nbr = (a->nrows + r - 1) / r;
  for (I = 0; I < nbr; I++) {
    int64_t i, k, cnt = 0;
    for (i = I * r; i < SPX__MIN(a->nrows, I * r + r); i++)
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
        if (mark[a->col_idx[k] / c] != I) { mark[a->col_idx[k] / c] = I; cnt++; }
    if (ptr) ptr[I + 1] = (int32_t)cnt;
    total += cnt;
  }
  return total;
}

static int64_t spx__bsr_bytes(const spx_csr *a, int64_t r, int64_t c, int64_t nblocks) {
  return 4 * ((a->nrows + r - 1) / r + 1) + 4 * nblocks + (int64_t)SPX_DTYPE_SIZE(a->dtype) * nblocks * r * c;
}

static int spx__i32_cmp(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return (a > b) - (a < b);
}

static spx_status spx__bsr_from_csr(const spx_csr *a, const spx__bsr_params *p, spx_fmt_bsr *s) {
  int64_t r = p->r, c = p->c, n = a->nrows, I, i, k, t, nb, *mark;
  int32_t *pos = NULL, *list = NULL;
  spx_status st = SPX_OUT_OF_MEMORY;
  spx_val src = spx__csr_val(a);
  if (!(mark = (int64_t *)spx__alloc((size_t)a->ncols + 1, sizeof *mark))) return SPX_OUT_OF_MEMORY;
  if (r == SPX_AUTO && c == SPX_AUTO) { /* the square size of least bytes; ties to the smaller */
    int64_t b, best = -1;
    for (b = 1; b <= 8; b++) {
      int64_t bytes;
      for (k = 0; k <= a->ncols / b; k++) mark[k] = -1;
      bytes = spx__bsr_bytes(a, b, b, spx__bsr_count(a, b, b, mark, NULL));
      if (best < 0 || bytes < best) { best = bytes; r = c = b; }
    }
  } else if (r == SPX_AUTO) r = c;
  else if (c == SPX_AUTO) c = r;
  for (k = 0; k <= a->ncols / c; k++) mark[k] = -1;
  nb = spx__bsr_count(a, r, c, mark, NULL);
  if ((st = spx__fits32(nb, "bsr blocks"))) goto done;
  s->nrows = n; s->ncols = a->ncols; s->nnz = a->nnz; s->r = (int32_t)r; s->c = (int32_t)c;
  s->nbrows = (n + r - 1) / r; s->nbcols = (a->ncols + c - 1) / c; s->nblocks = nb;
  if ((st = spx__bsr_alloc(s))) goto done;
  st = SPX_OUT_OF_MEMORY;
  if (!(pos = (int32_t *)spx__alloc((size_t)s->nbcols + 1, sizeof *pos)) ||
      !(list = (int32_t *)spx__alloc((size_t)s->nbcols + 1, sizeof *list)))
    goto done;
  for (k = 0; k <= a->ncols / c; k++) mark[k] = -1;
  spx__bsr_count(a, r, c, mark, s->row_ptr);
  spx__prefix32(s->row_ptr, s->nbrows);
  for (t = 0; t < nb * r * c; t++) spx_val_pad(s->val, t, a->dtype);
  for (k = 0; k <= a->ncols / c; k++) mark[k] = -1;
  for (I = 0; I < s->nbrows; I++) {
    int64_t m = 0, base = s->row_ptr[I];
    for (i = I * r; i < SPX__MIN(n, I * r + r); i++)
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
        if (mark[a->col_idx[k] / c] != I) { mark[a->col_idx[k] / c] = I; list[m++] = (int32_t)(a->col_idx[k] / c); }
    qsort(list, (size_t)m, sizeof *list, spx__i32_cmp);
    for (t = 0; t < m; t++) { s->col[base + t] = list[t]; pos[list[t]] = (int32_t)(base + t); }
    for (i = I * r; i < SPX__MIN(n, I * r + r); i++)
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
        int64_t bc = a->col_idx[k] / c;
        spx_val_store(s->val, ((int64_t)pos[bc] * r + (i - I * r)) * c + (a->col_idx[k] - bc * c), src, k, a->dtype);
      }
  }
  st = SPX_OK;
done:
  SPX_FREE(mark); SPX_FREE(pos); SPX_FREE(list);
  return st;
}

/* Row i's entries: the non-padding slots of its block row inside the matrix. With o->col_idx
 * NULL only counts. */
static int64_t spx__bsr_row(const spx_fmt_bsr *s, int64_t i, spx_csr *o, int64_t at) {
  int64_t I = i / s->r, ii = i % s->r, b, jj, m = 0;
  spx_val dst;
  dst.p = o ? o->val.p : NULL;
  for (b = s->row_ptr[I]; b < s->row_ptr[I + 1]; b++)
    for (jj = 0; jj < s->c; jj++) {
      int64_t col = (int64_t)s->col[b] * s->c + jj, slot = (b * s->r + ii) * s->c + jj;
      if (col >= s->ncols || spx_val_is_pad(s->val, slot, s->dtype)) continue;
      if (o) {
        o->col_idx[at + m] = (int32_t)col;
        spx_val_move(dst, at + m, s->val, slot, s->dtype);
      }
      m++;
    }
  return m;
}

static spx_status spx__bsr_to_csr(const spx_fmt_bsr *s, spx_csr *o) {
  int64_t i, n = s->nrows;
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) o->row_ptr[i + 1] = spx__bsr_row(s, i, NULL, 0);
  spx__prefix64(o->row_ptr, n);
  if (o->row_ptr[n] != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "bsr holds %lld entries but says nnz = %lld",
                     (long long)o->row_ptr[n], (long long)s->nnz);
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) spx__bsr_row(s, i, o, o->row_ptr[i]);
  return SPX_OK;
}

static spx_status spx__bsr_check(const spx_fmt_bsr *s) {
  int64_t I, b, ii, jj, total = 0;
  if (s->r < 1 || s->c < 1 || s->nbrows != (s->nrows + s->r - 1) / s->r || s->nbcols != (s->ncols + s->c - 1) / s->c)
    return spx__fail(SPX_INVALID_ARGUMENT, "bsr: %d x %d blocks, %lld x %lld block grid for a %lld x %lld matrix",
                     (int)s->r, (int)s->c, (long long)s->nbrows, (long long)s->nbcols, (long long)s->nrows,
                     (long long)s->ncols);
  if (s->row_ptr[0] != 0 || s->row_ptr[s->nbrows] != s->nblocks)
    return spx__fail(SPX_INVALID_ARGUMENT, "bsr: row_ptr must run from 0 to nblocks = %lld", (long long)s->nblocks);
  for (I = 0; I < s->nbrows; I++) {
    if (s->row_ptr[I + 1] < s->row_ptr[I])
      return spx__fail(SPX_INVALID_ARGUMENT, "bsr: row_ptr[%lld] decreases", (long long)I + 1);
    for (b = s->row_ptr[I]; b < s->row_ptr[I + 1]; b++) {
      int64_t real = 0;
      if (s->col[b] < 0 || s->col[b] >= s->nbcols || (b > s->row_ptr[I] && s->col[b] <= s->col[b - 1]))
        return spx__fail(SPX_INVALID_ARGUMENT, "bsr: block row %lld block %lld: column %d out of range or order",
                         (long long)I, (long long)b, (int)s->col[b]);
      for (ii = 0; ii < s->r; ii++)
        for (jj = 0; jj < s->c; jj++) {
          int64_t pad = spx_val_is_pad(s->val, (b * s->r + ii) * s->c + jj, s->dtype);
          if (!pad && (I * s->r + ii >= s->nrows || (int64_t)s->col[b] * s->c + jj >= s->ncols))
            return spx__fail(SPX_INVALID_ARGUMENT, "bsr: block %lld has an entry past the matrix edge", (long long)b);
          real += !pad;
        }
      if (!real) return spx__fail(SPX_INVALID_ARGUMENT, "bsr: block %lld holds only padding", (long long)b);
      total += real;
    }
  }
  if (total != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "bsr holds %lld entries but says nnz = %lld", (long long)total,
                     (long long)s->nnz);
  return SPX_OK;
}

/* One thread per block row; the columns of the last block column are guarded at the edge. */
#define SPX__BSR_SPMV(T)                                                       \
  {                                                                            \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                     \
    T *yv = (T *)y;                                                            \
    int64_t I, r = s->r, c = s->c;                                             \
    SPX__FMT_OMP_FOR(s->nbrows)                                                \
    for (I = 0; I < s->nbrows; I++) {                                          \
      double acc[64];                                                          \
      int64_t b, ii, jj, rr = SPX__MIN(r, s->nrows - I * r);                   \
      for (ii = 0; ii < r; ii++) acc[ii] = 0;                                  \
      for (b = s->row_ptr[I]; b < s->row_ptr[I + 1]; b++) {                    \
        int64_t c0 = (int64_t)s->col[b] * c, cc = SPX__MIN(c, s->ncols - c0);  \
        for (ii = 0; ii < rr; ii++)                                            \
          for (jj = 0; jj < cc; jj++)                                          \
            acc[ii] += (double)av[(b * r + ii) * c + jj] * (double)xv[c0 + jj]; \
      }                                                                        \
      for (ii = 0; ii < rr; ii++) SPX__YSET(T, yv, I * r + ii, acc[ii]);       \
    }                                                                          \
  }

static spx_status spx__bsr_spmv(const spx_fmt_bsr *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__BSR_SPMV);
  return SPX_OK;
}
