/* SPDX-License-Identifier: BSD-3-Clause */
/* BSR: the block columns of a block row are the r sorted rows' column blocks merged (no stamp
 * array, no sort, a division only where a row enters a new block column), so block rows convert
 * independently, in parallel: count, prefix, then merge again into col and place the values.
 * O(nnz + nblocks * r) per size tried (8 for auto). The elasticity 48^3 matrix (27M nonzeros, 3x3)
 * took 836 ms with a stamp per block column, a qsort per block row and a serial placement. */

/* Block columns of block row I (rows I*r .. I*r+r-1) merged, increasing and distinct, into out
 * (NULL: counted only). -1 when a row's columns do not increase or leave [0, ncols) (not a valid
 * spx_csr; the device converter rejects the same rows). */
static int64_t spx__bsr_merge(const spx_csr *a, int64_t I, int32_t r, int32_t c, int32_t *out) {
  int64_t k[64], e[64], cnt = 0, i, i1 = SPX__MIN(a->nrows, I * r + r);
  int32_t hb[64], last = -1;
  int nr = 0, j;
  for (i = I * r; i < i1; i++) {
    k[nr] = a->row_ptr[i];
    e[nr] = a->row_ptr[i + 1];
    if (k[nr] < e[nr]) { /* rows with entries only */
      /* first and last column bound an increasing row (the merge checks the order): a column in
       * the last block past ncols, or in (-c, 0), would pass the block checks below */
      if (a->col_idx[k[nr]] < 0 || a->col_idx[e[nr] - 1] >= a->ncols) return -1;
      hb[nr] = a->col_idx[k[nr]] / c;
      nr++;
    }
  }
  while (nr > 0) {
    int32_t m = hb[0];
    int64_t lim;
    for (j = 1; j < nr; j++) m = hb[j] < m ? hb[j] : m;
    if (m <= last || (int64_t)m * c >= a->ncols) return -1;
    lim = (int64_t)m * c + c; /* 64-bit: past INT32_MAX when ncols is within c of it */
    for (j = 0; j < nr; j++) {
      if (hb[j] != m) continue;
      while (k[j] < e[j] && a->col_idx[k[j]] < lim) {
        if (k[j] + 1 < e[j] && a->col_idx[k[j] + 1] <= a->col_idx[k[j]]) return -1;
        k[j]++;
      }
      if (k[j] < e[j]) hb[j] = a->col_idx[k[j]] / c;
      else { /* the row is done: move the last one here */
        nr--;
        k[j] = k[nr]; e[j] = e[nr]; hb[j] = hb[nr];
        j--;
      }
    }
    if (out) out[cnt] = m;
    cnt++;
    last = m;
  }
  return cnt;
}

/* Blocks of the r x c tiling of a; with cnt, block row I's count goes to cnt[I+1]. -1 when a row's
 * columns do not increase. */
static int64_t spx__bsr_count(const spx_csr *a, int32_t r, int32_t c, int32_t *cnt) {
  int64_t I, total = 0, nbr = (a->nrows + r - 1) / r;
  int bad = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1024) reduction(+ : total) reduction(| : bad) if (a->nnz >= SPX__FMT_OMP_MIN)
#endif
  for (I = 0; I < nbr; I++) {
    int64_t m = spx__bsr_merge(a, I, r, c, NULL);
    bad |= m < 0;
    if (cnt) cnt[I + 1] = (int32_t)(m < 0 ? 0 : m);
    total += m < 0 ? 0 : m;
  }
  return bad ? -1 : total;
}

int64_t spx__bsr_bytes(const spx_csr *a, int64_t r, int64_t c, int64_t nblocks) {
  return 4 * ((a->nrows + r - 1) / r + 1) + 4 * nblocks + (int64_t)SPX_DTYPE_SIZE(a->dtype) * nblocks * r * c;
}

spx_status spx__bsr_unsorted(void) {
  return spx__fail(SPX_INVALID_ARGUMENT, "bsr: a row's columns are not strictly increasing or leave the matrix "
                   "(spx_csr_validate says where)");
}

static spx_status spx__bsr_from_csr(const spx_csr *a, const spx__bsr_params *p, spx_fmt_bsr *s) {
  int64_t r = p->r, c = p->c, n = a->nrows, I, nb;
  int bad = 0;
  spx_status st;
  spx_val src = spx__csr_val(a);
  if (r == SPX_AUTO && c == SPX_AUTO) { /* the square size of least bytes; ties to the smaller */
    int64_t b, best = -1;
    for (b = 1; b <= 8; b++) {
      int64_t bytes, blocks = spx__bsr_count(a, (int32_t)b, (int32_t)b, NULL);
      if (blocks < 0) return spx__bsr_unsorted();
      bytes = spx__bsr_bytes(a, b, b, blocks);
      if (best < 0 || bytes < best) { best = bytes; r = c = b; }
    }
  } else if (r == SPX_AUTO) r = c;
  else if (c == SPX_AUTO) c = r;
  s->nrows = n; s->ncols = a->ncols; s->nnz = a->nnz; s->r = (int32_t)r; s->c = (int32_t)c;
  s->nbrows = (n + r - 1) / r; s->nbcols = (a->ncols + c - 1) / c;
  {
    /* counts first into a scratch row_ptr: the arrays are sized by the total */
    int32_t *cnt = (int32_t *)spx__alloc((size_t)s->nbrows + 1, sizeof *cnt);
    if (!cnt) return SPX_OUT_OF_MEMORY;
    nb = spx__bsr_count(a, (int32_t)r, (int32_t)c, cnt);
    if (nb < 0) { SPX_FREE(cnt); return spx__bsr_unsorted(); }
    if ((st = spx__fits32(nb, "bsr blocks"))) { SPX_FREE(cnt); return st; }
    s->nblocks = nb;
    if ((st = spx__bsr_alloc(s))) { SPX_FREE(cnt); return st; }
    memcpy(s->row_ptr, cnt, ((size_t)s->nbrows + 1) * sizeof *cnt);
    SPX_FREE(cnt);
  }
  spx__prefix32(s->row_ptr, s->nbrows);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1024) reduction(| : bad) if (a->nnz >= SPX__FMT_OMP_MIN)
#endif
  for (I = 0; I < s->nbrows; I++) {
    int64_t base = s->row_ptr[I], m = s->row_ptr[I + 1] - base, t, i;
    int32_t *list;
    if (!m) continue; /* no entries (and col is NULL when no block row has any) */
    list = s->col + base;
    /* padding first, in this thread (first touch); then the merge again and the values */
    for (t = base * r * c; t < (base + m) * r * c; t++) spx_val_pad(s->val, t, a->dtype);
    if (spx__bsr_merge(a, I, (int32_t)r, (int32_t)c, list) != m) { bad = 1; continue; }
    for (i = I * r; i < SPX__MIN(n, I * r + r); i++) {
      int64_t k, q = 0, ii = i - I * r;
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
        int64_t cc = a->col_idx[k];
        while (q < m && ((int64_t)list[q] + 1) * c <= cc) q++; /* both increase: one walk */
        if (q == m) { bad = 1; break; }
        spx_val_store(s->val, ((base + q) * r + ii) * c + (cc - (int64_t)list[q] * c), src, k, a->dtype);
      }
    }
  }
  if (bad) return spx__bsr_unsorted();
  return SPX_OK;
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
