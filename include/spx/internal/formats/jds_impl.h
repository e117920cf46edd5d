/* SPDX-License-Identifier: BSD-3-Clause */
/* JDS: counting sort of rows by length (stable), then diagonal d of position p at jd_ptr[d] + p.
 * O(nnz + n + njd). */

static spx_status spx__jds_from_csr(const spx_csr *a, const spx__jds_params *p, spx_fmt_jds *s) {
  int64_t n = a->nrows, longest = spx__max_row(a), i, L, acc = 0, *start;
  spx_status st;
  spx_val src = spx__csr_val(a);
  (void)p;
  s->nrows = n; s->ncols = a->ncols; s->nnz = a->nnz; s->njd = (int32_t)longest;
  if ((st = spx__jds_alloc(s))) return st;
  if (!(start = (int64_t *)spx__calloc((size_t)longest + 1, sizeof *start))) return SPX_OUT_OF_MEMORY;
  for (i = 0; i < n; i++) start[spx__row_len(a, i)]++;
  /* start[L] = rows longer than L: where rows of length L begin, and the length of diagonal L. */
  for (L = longest; L >= 0; L--) { int64_t c = start[L]; start[L] = acc; acc += c; }
  s->jd_ptr[0] = 0;
  for (L = 0; L < longest; L++) s->jd_ptr[L + 1] = s->jd_ptr[L] + (int32_t)start[L];
  for (i = 0; i < n; i++) s->perm[start[spx__row_len(a, i)]++] = (int32_t)i;
  SPX_FREE(start);
  SPX__FMT_OMP_FOR(n)
  for (i = 0; i < n; i++) {
    int64_t r = s->perm[i], b = a->row_ptr[r], m = spx__row_len(a, r), d;
    for (d = 0; d < m; d++) {
      s->col[s->jd_ptr[d] + i] = a->col_idx[b + d];
      spx_val_move(s->val, s->jd_ptr[d] + i, src, b + d, a->dtype);
    }
  }
  return SPX_OK;
}

static spx_status spx__jds_to_csr(const spx_fmt_jds *s, spx_csr *o) {
  int64_t d, p;
  spx_val dst;
  if (s->jd_ptr[s->njd] != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "jds: jd_ptr ends at %d, not nnz = %lld", (int)s->jd_ptr[s->njd],
                     (long long)s->nnz);
  for (d = 0; d < s->njd; d++)
    for (p = 0; p < s->jd_ptr[d + 1] - s->jd_ptr[d]; p++) o->row_ptr[s->perm[p] + 1]++;
  spx__prefix64(o->row_ptr, s->nrows);
  dst.p = o->val.p;
  SPX__FMT_OMP_FOR(s->nrows)
  for (p = 0; p < s->nrows; p++) {
    int64_t b = o->row_ptr[s->perm[p]], e;
    for (e = 0; e < s->njd && p < s->jd_ptr[e + 1] - s->jd_ptr[e]; e++) {
      o->col_idx[b + e] = s->col[s->jd_ptr[e] + p];
      spx_val_move(dst, b + e, s->val, s->jd_ptr[e] + p, s->dtype);
    }
  }
  return SPX_OK;
}

static spx_status spx__jds_check(const spx_fmt_jds *s) {
  int64_t n = s->nrows, d, p;
  unsigned char *seen;
  if (s->jd_ptr[0] != 0 || s->jd_ptr[s->njd] != s->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "jds: jd_ptr must run from 0 to nnz = %lld", (long long)s->nnz);
  for (d = 0; d < s->njd; d++) {
    int64_t len = s->jd_ptr[d + 1] - s->jd_ptr[d];
    if (len < 1 || len > n || (d > 0 && len > s->jd_ptr[d] - s->jd_ptr[d - 1]))
      return spx__fail(SPX_INVALID_ARGUMENT, "jds: diagonal %lld has length %lld (lengths must be in [1, n] "
                       "and not increase)", (long long)d, (long long)len);
  }
  if (!(seen = (unsigned char *)spx__calloc((size_t)n + 1, 1))) return SPX_OUT_OF_MEMORY;
  for (p = 0; p < n; p++) {
    if (s->perm[p] < 0 || s->perm[p] >= n || seen[s->perm[p]]) {
      SPX_FREE(seen);
      return spx__fail(SPX_INVALID_ARGUMENT, "jds: perm is not a permutation (position %lld)", (long long)p);
    }
    seen[s->perm[p]] = 1;
  }
  SPX_FREE(seen);
  for (p = 0; p < n; p++)
    for (d = 0; d < s->njd && p < s->jd_ptr[d + 1] - s->jd_ptr[d]; d++) {
      int32_t c = s->col[s->jd_ptr[d] + p];
      if (c < 0 || c >= s->ncols || (d > 0 && c <= s->col[s->jd_ptr[d - 1] + p]))
        return spx__fail(SPX_INVALID_ARGUMENT, "jds: position %lld diagonal %lld: column %d out of range or order",
                         (long long)p, (long long)d, (int)c);
    }
  return SPX_OK;
}

/* One thread per sorted position, as papers/001 Figure 4: walk the diagonals while they reach it. */
#define SPX__JDS_SPMV(T)                                                       \
  {                                                                            \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                     \
    T *yv = (T *)y;                                                            \
    int64_t p;                                                                 \
    SPX__FMT_OMP_FOR(s->nrows)                                                 \
    for (p = 0; p < s->nrows; p++) {                                           \
      double sum = 0;                                                          \
      int64_t d, r = s->perm[p];                                               \
      for (d = 0; d < s->njd && s->jd_ptr[d] + p < s->jd_ptr[d + 1]; d++)      \
        sum += (double)av[s->jd_ptr[d] + p] * (double)xv[s->col[s->jd_ptr[d] + p]]; \
      SPX__YSET(T, yv, r, sum);                                                \
    }                                                                          \
  }

static spx_status spx__jds_spmv(const spx_fmt_jds *s, double alpha, const void *x, double beta, void *y) {
  SPX__DISPATCH(s->dtype, SPX__JDS_SPMV);
  return SPX_OK;
}
