/* SPDX-License-Identifier: BSD-3-Clause */
/* dia.h: DIA (diagonal storage) as an out-of-tree spx format, built with the public macros only.
 *
 * This file is the "Adding a format" recipe of docs/formats.md, complete: a descriptor, the
 * generated struct and layout, four handwritten functions, the generated vtable, a GPU kernel with
 * its spec, the tuner's model, and dia_register(). It never edits or includes anything from
 * spx/internal. Include it in C after spx.h, call dia_register() once, then use the id like any
 * built-in format (spx_fmt_from_csr, spx_fmt_spmv, spx_fmt_bytes, spx_format_params_set(&p,
 * "dia_max_fill", 8), spx_dmatrix_create, ...); with a kernel and a model it is also a candidate
 * of the auto-tuner (spx_plan_create), priced as an in-tree format.
 *
 * Layout: diagonal d (offset off[d] = column - row, offsets increasing) holds row i's entry at
 * val[d*nrows + i], for the rows where that column exists. Slots that are not nonzeros hold -0.0,
 * spx's padding mark, which is how dia_to_csr tells fill from an explicit zero.
 * Conversion O(nnz + nrows * ndiag). A matrix whose diagonals would store more than max_fill slots
 * per nonzero is refused with SPX_UNSUPPORTED (DIA is for banded matrices). */
#ifndef DIA_H
#define DIA_H

#include <stdio.h>
#include <stdlib.h>
#include <spx/spx.h>
#include <spx/formats.h>
#include <spx/cuda.h>
#include <spx/jit.h>
#include <spx/plan.h>

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

/* 4. The generated vtable (dia_vtable). */
SPX_FORMAT_VTABLE(dia_, dia_fmt, "dia", "diagonals (out-of-tree example)", "O(nnz + n ndiag)")

/* 5. The GPU kernel: a template added to spx's JIT (compiled by NVRTC, cached like spx's own) and
 * the spec that launches it. One thread per row walks every diagonal: thread i reads val[d*nrows + i],
 * so a warp reads 32 consecutive values per diagonal (coalesced), and x[i + off[d]], 32 consecutive
 * entries too. The arguments are what spx passes every kernel of a format: the descriptor's scalars
 * (int64_t as long long, int32_t as int) and arrays in order, then alpha, beta, x, y. spx defines
 * SPX_VALUE_T (double or float); the spec adds SPX_BLOCK, the threads per block. */
static const char dia_kernel_source[] =
    "#ifndef SPX_VALUE_T\n"
    "#define SPX_VALUE_T double\n"
    "#endif\n"
    "#ifndef SPX_BLOCK\n"
    "#define SPX_BLOCK 256\n"
    "#endif\n"
    "typedef SPX_VALUE_T spx_value_t;\n"
    "extern \"C\" __global__ void __launch_bounds__(SPX_BLOCK)\n"
    "dia_spmv(long long nrows, long long ncols, long long nnz, int ndiag, const int *__restrict__ off,\n"
    "         const spx_value_t *__restrict__ val, double alpha, double beta,\n"
    "         const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {\n"
    "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  spx_value_t sum = 0;\n"
    "  (void)nnz;\n"
    "  if (i >= nrows) return;\n"
    "  for (int d = 0; d < ndiag; d++) {\n"
    "    const long long j = i + off[d];\n"
    "    if (j >= 0 && j < ncols) sum += val[(long long)d * nrows + i] * x[j];\n"
    "  }\n"
    "  /* beta == 0 does not read y (it may hold NaN) */\n"
    "  y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * (double)y[i]);\n"
    "}\n";

static spx_status dia_kernel_spec(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                                  spx_kernel_plan *plan) {
  spx_kernel_launch *l = &plan->launch[0];
  unsigned b = o->block >= 32 && o->block <= 1024 ? (unsigned)o->block : 256;
  int64_t grid = (m->nrows + b - 1) / b;
  (void)dev;
  plan->nlaunch = 1;
  snprintf(l->template_name, sizeof l->template_name, "dia");
  snprintf(l->kernel, sizeof l->kernel, "dia_spmv");
  l->ndefines = 1;
  l->nshape = 0; /* no shape constants: the generic kernel is this one */
  snprintf(l->defines[0], sizeof l->defines[0], "SPX_BLOCK=%u", b);
  l->grid[0] = (unsigned)(grid < 1 ? 1 : grid); /* never an empty grid, even for 0 rows */
  l->grid[1] = l->grid[2] = 1;
  l->block[0] = b;
  l->block[1] = l->block[2] = 1;
  l->shmem = 0;
  snprintf(plan->summary, sizeof plan->summary, "dia: dia_spmv, %lld diagonals, a thread per row, %u threads/block",
           (long long)spx_fmt_scalar(m, "ndiag"), b);
  return SPX_OK;
}

/* 6. The tuner's model, the fields of an in-tree format's registry line (spx/plan.h,
 * spx_format_set_model). The predictor counts the diagonals as dia_from_csr does, one pass over the
 * columns, and gives the bytes spx_fmt_bytes will report after a conversion with default
 * parameters (4 per offset, a value per slot), or declines where the converter would. The kernel
 * walks every diagonal in every row: padding is in the bytes (PADDED), and the walk is ndiag steps. */
static spx_status dia_predict(const spx_csr *a, const spx_format_profile *p, int64_t vb, spx_format_estimate *out) {
  int64_t n = a->nrows, span = a->nrows + a->ncols, i, k, d = 0, max_fill = dia_param_info[0].def;
  unsigned char *seen;
  (void)p;
  if (!(seen = (unsigned char *)calloc((size_t)span + 1, 1)))
    return spx_format_fail(SPX_OUT_OF_MEMORY, "out of memory for %lld diagonal marks", (long long)span);
  for (i = 0; i < n; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      unsigned char *s = &seen[a->col_idx[k] - i + n];
      d += !*s;
      *s = 1;
    }
  free(seen);
  if (n > 0 && d > max_fill * (a->nnz > 0 ? a->nnz : 1) / n) /* d * n slots over the limit, as dia_from_csr refuses */
    return spx_format_fail(SPX_UNSUPPORTED, "%lld diagonals would store %lld slots for %lld nonzeros", (long long)d,
                           (long long)(d * n), (long long)a->nnz);
  out->bytes = 4 * d + vb * d * n;
  out->slots = d * n;
  out->steps = d;
  return SPX_OK;
}

static const spx_format_model dia_model = {
    dia_predict, SPX_LANES_PADDED, 1 /* launch */, 1 /* reads columns */, SPX_WALK_STEPS, 1.0 /* a step as ELL's */,
    "the diagonals exceed dia_max_fill slots per nonzero"};

/* The calls that make "dia" a format with a GPU kernel and a model; once per process (a second call
 * gives the same id). */
static inline spx_status dia_register(spx_format *id) {
  spx_format f;
  spx_status s;
  if (spx_format_from_name("dia", &f) == SPX_OK) { *id = f; return SPX_OK; } /* already there */
  spx_clear_error();
  if ((s = spx_format_register(&dia_vtable, id)) || (s = spx_jit_template_add("dia", dia_kernel_source)) ||
      (s = spx_format_set_kernel(*id, dia_kernel_spec)) || (s = spx_format_set_model(*id, &dia_model)))
    return s;
  return SPX_OK;
}

#endif /* DIA_H */
