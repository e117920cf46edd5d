/* SPDX-License-Identifier: BSD-3-Clause */
/* dia.h: DIA (diagonal storage) as an out-of-tree spx format, built with the public macros only.
 *
 * This file is the "Adding a format" recipe of docs/formats.md, complete: a descriptor, the
 * generated struct and layout, four handwritten functions, the generated vtable, and
 * dia_register(). It never edits or includes anything from spx/internal. Include it in C after
 * spx.h, call dia_register() once, then use the id like any built-in format (spx_fmt_from_csr,
 * spx_fmt_spmv, spx_fmt_bytes, spx_format_params_set(&p, "dia_max_fill", 8), ...).
 *
 * Layout: diagonal d (offset off[d] = column - row, offsets increasing) holds row i's entry at
 * val[d*nrows + i], for the rows where that column exists. Slots that are not nonzeros hold -0.0,
 * spx's padding mark, which is how dia_to_csr tells fill from an explicit zero.
 * Conversion O(nnz + nrows * ndiag). A matrix whose diagonals would store more than max_fill slots
 * per nonzero is refused with SPX_UNSUPPORTED (DIA is for banded matrices). */
#ifndef DIA_H
#define DIA_H

#include <stdlib.h>
#include <spx/spx.h>
#include <spx/formats.h>

/* 1. The descriptor: parameters, scalars (nrows, ncols, nnz first), arrays with their lengths. */
#define DIA_DESC(X, PARAM, SCALAR, ARRAY)                                                        \
  PARAM (X, max_fill, 20, 1, 1000000, "refuse when slots exceed max_fill x nnz")               \
  SCALAR(X, int64_t, nrows, "rows")                                                             \
  SCALAR(X, int64_t, ncols, "columns")                                                          \
  SCALAR(X, int64_t, nnz,   "nonzeros")                                                         \
  SCALAR(X, int32_t, ndiag, "diagonals stored")                                                 \
  ARRAY (X, int32_t, off,   ndiag,         "offset (column - row) of each diagonal, increasing") \
  ARRAY (X, SPX_VAL, val,   ndiag * nrows, "row i of diagonal d at val[d*nrows + i]; fill is -0.0")

/* 2. The generated struct (dia_fmt) and implementation (dia_params, dia_layout, dia_alloc). */
SPX_FORMAT_STRUCT(dia_fmt, DIA_DESC)
SPX_FORMAT_IMPL(dia_, dia_fmt, DIA_DESC)

/* 3. The four handwritten functions. */
static spx_status dia_from_csr(const spx_csr *a, const dia_params *p, dia_fmt *s) {
  int64_t n = a->nrows, m = a->ncols, span = n + m, i, k, d = 0;
  int32_t *slot;
  spx_val src, dst;
  spx_status st;
  /* Which diagonals occur: index col - row + n, in [1, n + m - 1]. */
  if (!(slot = (int32_t *)calloc((size_t)span + 1, sizeof *slot)))
    return spx_format_fail(SPX_OUT_OF_MEMORY, "out of memory for %lld diagonal marks", (long long)span);
  for (i = 0; i < n; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) slot[a->col_idx[k] - i + n] = 1;
  for (k = 0; k <= span; k++) d += slot[k];
  if (d * n > p->max_fill * (a->nnz > 0 ? a->nnz : 1)) {
    free(slot);
    return spx_format_fail(SPX_UNSUPPORTED, "%lld diagonals would store %lld slots for %lld nonzeros "
                           "(more than dia_max_fill = %lld per nonzero)", (long long)d, (long long)(d * n),
                           (long long)a->nnz, (long long)p->max_fill);
  }
  s->nrows = n; s->ncols = m; s->nnz = a->nnz; s->ndiag = (int32_t)d;
  if ((st = dia_alloc(s))) { free(slot); return st; }
  for (k = 0, d = 0; k <= span; k++)
    if (slot[k]) { s->off[d] = (int32_t)(k - n); slot[k] = (int32_t)d++; }
  for (k = 0; k < s->ndiag * n; k++) spx_val_pad(s->val, k, a->dtype);
  src.p = a->val.p;
  dst = s->val;
  for (i = 0; i < n; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
      spx_val_store(dst, (int64_t)slot[a->col_idx[k] - i + n] * n + i, src, k, a->dtype);
  free(slot);
  return SPX_OK;
}

/* Row i's entries in column order (offsets increase); with o->col_idx NULL only counts. */
static int64_t dia_row(const dia_fmt *s, int64_t i, spx_csr *o, int64_t at) {
  int64_t d, m = 0;
  spx_val dst;
  dst.p = o ? o->val.p : NULL;
  for (d = 0; d < s->ndiag; d++) {
    int64_t j = i + s->off[d];
    if (j < 0 || j >= s->ncols || spx_val_is_pad(s->val, d * s->nrows + i, s->dtype)) continue;
    if (o) {
      o->col_idx[at + m] = (int32_t)j;
      spx_val_move(dst, at + m, s->val, d * s->nrows + i, s->dtype);
    }
    m++;
  }
  return m;
}

static spx_status dia_to_csr(const dia_fmt *s, spx_csr *o) {
  int64_t i;
  for (i = 0; i < s->nrows; i++) o->row_ptr[i + 1] = o->row_ptr[i] + dia_row(s, i, NULL, 0);
  if (o->row_ptr[s->nrows] != s->nnz)
    return spx_format_fail(SPX_INVALID_ARGUMENT, "dia holds %lld entries but says nnz = %lld",
                           (long long)o->row_ptr[s->nrows], (long long)s->nnz);
  for (i = 0; i < s->nrows; i++) dia_row(s, i, o, o->row_ptr[i]);
  return SPX_OK;
}

static spx_status dia_check(const dia_fmt *s) {
  int64_t d, i, total = 0;
  for (d = 0; d < s->ndiag; d++) {
    int64_t real = 0;
    if (s->off[d] <= -s->nrows || s->off[d] >= s->ncols || (d > 0 && s->off[d] <= s->off[d - 1]))
      return spx_format_fail(SPX_INVALID_ARGUMENT, "dia: offset %d out of range or order", (int)s->off[d]);
    for (i = 0; i < s->nrows; i++) {
      int pad = spx_val_is_pad(s->val, d * s->nrows + i, s->dtype);
      if (!pad && (i + s->off[d] < 0 || i + s->off[d] >= s->ncols))
        return spx_format_fail(SPX_INVALID_ARGUMENT, "dia: diagonal %d has an entry outside the matrix",
                               (int)s->off[d]);
      real += !pad;
    }
    if (!real) return spx_format_fail(SPX_INVALID_ARGUMENT, "dia: diagonal %d is empty", (int)s->off[d]);
    total += real;
  }
  if (total != s->nnz)
    return spx_format_fail(SPX_INVALID_ARGUMENT, "dia holds %lld entries but says nnz = %lld",
                           (long long)total, (long long)s->nnz);
  return SPX_OK;
}

/* One thread per row, every diagonal, guarded at the matrix edge. */
#define DIA_SPMV(T)                                                                        \
  {                                                                                        \
    const T *xv = (const T *)x, *av = (const T *)s->val.p;                                 \
    T *yv = (T *)y;                                                                        \
    int64_t i, d;                                                                          \
    for (i = 0; i < s->nrows; i++) {                                                       \
      double sum = 0;                                                                      \
      for (d = 0; d < s->ndiag; d++) {                                                     \
        int64_t j = i + s->off[d];                                                         \
        if (j >= 0 && j < s->ncols) sum += (double)av[d * s->nrows + i] * (double)xv[j];  \
      }                                                                                    \
      yv[i] = (T)(beta == 0 ? alpha * sum : alpha * sum + beta * (double)yv[i]);           \
    }                                                                                      \
  }

static spx_status dia_spmv(const dia_fmt *s, double alpha, const void *x, double beta, void *y) {
  if (s->dtype == SPX_DOUBLE) DIA_SPMV(double)
  else DIA_SPMV(float)
  return SPX_OK;
}

/* 4. The generated vtable (dia_vtable), and the one call that makes "dia" a format. */
SPX_FORMAT_VTABLE(dia_, dia_fmt, "dia", "diagonals (out-of-tree example)", "O(nnz + n ndiag)")

static inline spx_status dia_register(spx_format *id) {
  spx_format f;
  if (spx_format_from_name("dia", &f) == SPX_OK) { *id = f; return SPX_OK; } /* already there */
  spx_clear_error();
  return spx_format_register(&dia_vtable, id);
}

#endif /* DIA_H */
