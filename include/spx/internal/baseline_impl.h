/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/baseline.h: cuSPARSE's generic SpMV, set up once per matrix.
 *
 * Every entry point that calls cuSPARSE pushes the plan's CUDA context first (cuSPARSE, like the
 * runtime it sits on, works in the current context, which is the device's primary one here) and
 * pops it on the way out. */
#include "common.h"
#include "cuda_types.h"
#include "../baseline.h"

/* ---- Tables ----------------------------------------------------------------------------------- */
static const char *const spx__cs_names[] = {
#define SPX__CS_NAME(e, name, what) name,
    SPX_CUSPARSE_ALG_LIST(SPX__CS_NAME)
#undef SPX__CS_NAME
};
static const char *const spx__cs_whats[] = {
#define SPX__CS_WHAT(e, name, what) what,
    SPX_CUSPARSE_ALG_LIST(SPX__CS_WHAT)
#undef SPX__CS_WHAT
};

/* Device arrays a plan may hold; each algorithm names those it reads, so BEST can share the CSR
 * columns and values between CSR and COO and free what the winner does not read. */
enum {
  SPX__CS_CSR_PTR, SPX__CS_CSR_COL, SPX__CS_CSR_VAL, SPX__CS_COO_ROW,
  SPX__CS_SELL_OFF, SPX__CS_SELL_COL, SPX__CS_SELL_VAL,
  SPX__CS_BSR_PTR, SPX__CS_BSR_COL, SPX__CS_BSR_VAL,
  SPX__CS_NARR
};
#define SPX__CS_BIT(a) (1u << SPX__CS_##a)
#define SPX__CS_M_CSR (SPX__CS_BIT(CSR_PTR) | SPX__CS_BIT(CSR_COL) | SPX__CS_BIT(CSR_VAL))
#define SPX__CS_M_COO (SPX__CS_BIT(COO_ROW) | SPX__CS_BIT(CSR_COL) | SPX__CS_BIT(CSR_VAL))
#define SPX__CS_M_SELL (SPX__CS_BIT(SELL_OFF) | SPX__CS_BIT(SELL_COL) | SPX__CS_BIT(SELL_VAL))
#define SPX__CS_M_BSR (SPX__CS_BIT(BSR_PTR) | SPX__CS_BIT(BSR_COL) | SPX__CS_BIT(BSR_VAL))

/* Per algorithm: the layout, cuSPARSE's algorithm value and the arrays read.
 *  _(ALG,      layout, cusparseSpMVAlg_t,              arrays) */
#define SPX__CS_ALG_TABLE(_)                                                      \
  _(CSR_ALG1,   CSR,    SPX__CUSPARSE_SPMV_CSR_ALG1,    SPX__CS_M_CSR)            \
  _(CSR_ALG2,   CSR,    SPX__CUSPARSE_SPMV_CSR_ALG2,    SPX__CS_M_CSR)            \
  _(COO_ALG1,   COO,    SPX__CUSPARSE_SPMV_COO_ALG1,    SPX__CS_M_COO)            \
  _(COO_ALG2,   COO,    SPX__CUSPARSE_SPMV_COO_ALG2,    SPX__CS_M_COO)            \
  _(SELL,       SELL,   SPX__CUSPARSE_SPMV_SELL_ALG1,   SPX__CS_M_SELL)           \
  _(BSR,        BSR,    SPX__CUSPARSE_SPMV_BSR_ALG1,    SPX__CS_M_BSR)

enum { SPX__CS_LAYOUT_CSR, SPX__CS_LAYOUT_COO, SPX__CS_LAYOUT_SELL, SPX__CS_LAYOUT_BSR };
typedef struct spx__cs_alg_info {
  int layout, spalg;
  unsigned arrays;
} spx__cs_alg_info;
static const spx__cs_alg_info spx__cs_algs[SPX_CUSPARSE_ALG_COUNT] = {
#define SPX__CS_INFO(alg, layout, spalg, arrays) \
  [SPX_CUSPARSE_##alg] = {SPX__CS_LAYOUT_##layout, spalg, arrays},
    SPX__CS_ALG_TABLE(SPX__CS_INFO)
#undef SPX__CS_INFO
};
/* The table covers every algorithm of the public list. */
#define SPX__CS_ONE(...) +1
_Static_assert(0 SPX__CS_ALG_TABLE(SPX__CS_ONE) == SPX_CUSPARSE_ALG_COUNT, "SPX__CS_ALG_TABLE");
#undef SPX__CS_ONE

/* Block dims the automatic BSR choice considers. */
static const int spx__cs_bsr_dims[] = {2, 3, 4, 6, 8};

const char *spx_cusparse_alg_name(spx_cusparse_alg alg) {
  if (alg == SPX_CUSPARSE_BEST) return "best";
  return (int)alg >= 0 && alg < SPX_CUSPARSE_ALG_COUNT ? spx__cs_names[alg] : "unknown";
}

const char *spx_cusparse_alg_description(spx_cusparse_alg alg) {
  if (alg == SPX_CUSPARSE_BEST) return "the fastest of the others, by a timed trial";
  return (int)alg >= 0 && alg < SPX_CUSPARSE_ALG_COUNT ? spx__cs_whats[alg] : "";
}

spx_status spx_cusparse_alg_parse(const char *name, spx_cusparse_alg *out) {
  char list[256] = "best";
  size_t n = strlen(list);
  int i;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_alg_parse: NULL argument");
  if (!strcmp(name, "best")) {
    *out = SPX_CUSPARSE_BEST;
    return SPX_OK;
  }
  for (i = 0; i < SPX_CUSPARSE_ALG_COUNT; i++) {
    if (!strcmp(name, spx__cs_names[i])) {
      *out = (spx_cusparse_alg)i;
      return SPX_OK;
    }
    n += (size_t)snprintf(list + n, sizeof list - n, ", %s", spx__cs_names[i]);
    if (n >= sizeof list) n = sizeof list - 1;
  }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown cuSPARSE algorithm '%s' (use one of: %s)", name, list);
}

/* ---- The plan --------------------------------------------------------------------------------- */
typedef struct spx__cs_cand {
  spx__cusparseSpMatDescr_t mat;
  spx_devptr buf;
  size_t buf_bytes;
  int spalg;        /* the cuSPARSE algorithm value in use */
  int preprocessed;
} spx__cs_cand;

struct spx_cusparse_plan {
  spx_context *ctx;
  int64_t nrows, ncols, nnz;
  int64_t xcols;              /* columns as cuSPARSE sees them: a matrix of none gets one, empty */
  spx_dtype dtype;
  spx_cusparse_alg alg;       /* what spx_cusparse_spmv runs */
  spx_cusparse_options opt;   /* defaults filled in */
  int empty;                  /* no rows: nothing to run, no cuSPARSE objects */
  spx__cusparseHandle_t h;
  spx__CUstream bound;        /* the stream the handle was last bound to */
  int bound_set;
  spx__cusparseDnVecDescr_t vx, vy;
  spx_devptr xs, ys;          /* scratch vectors for setup and the trial */
  spx_devptr arr[SPX__CS_NARR];
  size_t arr_bytes[SPX__CS_NARR];
  unsigned owned;             /* arrays this plan allocated (a wrapped CSR's are the caller's) */
  int csr_ptr64, csr_col64;   /* index widths of the CSR arrays (COO rows follow csr_col64) */
  int64_t sell_size;          /* SELL entries, padding included */
  int sell64;
  int bsr_dim;
  int64_t bsr_bnnz;
  int bsr64;
  spx__cs_cand cand[SPX_CUSPARSE_ALG_COUNT];
  double ms[SPX_CUSPARSE_ALG_COUNT];
  char note[SPX_CUSPARSE_ALG_COUNT][1024]; /* as long as a last-error message */
};

static spx__cudaDataType spx__cs_vt(const spx_cusparse_plan *p) {
  return p->dtype == SPX_FLOAT ? SPX__CUDA_R_32F : SPX__CUDA_R_64F;
}

static spx__cusparseIndexType_t spx__cs_it(int wide) {
  return wide ? SPX__CUSPARSE_INDEX_64I : SPX__CUSPARSE_INDEX_32I;
}

static void *spx__cs_ptr(spx_devptr d) { return (void *)(uintptr_t)d; }

/* Record the current message as alg's note. */
static void spx__cs_note(spx_cusparse_plan *p, spx_cusparse_alg alg) {
  snprintf(p->note[alg], sizeof p->note[alg], "%s", spx_last_error());
}

/* ---- Device arrays ---------------------------------------------------------------------------- */
static spx_status spx__cs_upload(spx_cusparse_plan *p, int which, const void *host, size_t bytes) {
  spx_status s;
  spx_devptr d = 0;
  if ((s = spx_device_alloc(p->ctx, bytes, &d))) return s;
  if ((s = spx_device_upload(p->ctx, d, host, bytes))) {
    spx_device_free(p->ctx, d);
    return s;
  }
  p->arr[which] = d;
  p->arr_bytes[which] = bytes;
  p->owned |= 1u << which;
  return SPX_OK;
}

static void spx__cs_drop(spx_cusparse_plan *p, int which) {
  if (p->owned & (1u << which)) spx_device_free(p->ctx, p->arr[which]);
  p->owned &= ~(1u << which);
  p->arr[which] = 0;
  p->arr_bytes[which] = 0;
}

/* Indices of width 32 or 64 bits, converted from int64 or int32 sources. */
static void *spx__cs_index_array(int64_t n, int wide) {
  return spx__alloc((size_t)(n > 0 ? n : 1), wide ? sizeof(int64_t) : sizeof(int32_t));
}
static void spx__cs_index_set(void *arr, int wide, int64_t i, int64_t v) {
  if (wide) ((int64_t *)arr)[i] = v;
  else ((int32_t *)arr)[i] = (int32_t)v;
}

static spx_status spx__cs_build_csr_ptr(spx_cusparse_plan *p, const spx_csr *a) {
  size_t n = (size_t)a->nrows + 1;
  int32_t *rp;
  int64_t i;
  spx_status s;
  if (p->csr_ptr64) return spx__cs_upload(p, SPX__CS_CSR_PTR, a->row_ptr, n * sizeof(int64_t));
  if (!(rp = (int32_t *)spx__alloc(n, sizeof *rp))) return SPX_OUT_OF_MEMORY;
  for (i = 0; i <= a->nrows; i++) rp[i] = (int32_t)a->row_ptr[i];
  s = spx__cs_upload(p, SPX__CS_CSR_PTR, rp, n * sizeof *rp);
  SPX_FREE(rp);
  return s;
}

static spx_status spx__cs_build_csr_col(spx_cusparse_plan *p, const spx_csr *a) {
  int64_t *c, k;
  spx_status s;
  if (!p->csr_col64) return spx__cs_upload(p, SPX__CS_CSR_COL, a->col_idx, (size_t)a->nnz * sizeof(int32_t));
  if (!(c = (int64_t *)spx__alloc((size_t)a->nnz, sizeof *c))) return SPX_OUT_OF_MEMORY;
  for (k = 0; k < a->nnz; k++) c[k] = a->col_idx[k];
  s = spx__cs_upload(p, SPX__CS_CSR_COL, c, (size_t)a->nnz * sizeof *c);
  SPX_FREE(c);
  return s;
}

static spx_status spx__cs_build_coo_row(spx_cusparse_plan *p, const spx_csr *a) {
  void *r = spx__cs_index_array(a->nnz, p->csr_col64);
  int64_t i, k;
  spx_status s;
  if (!r) return SPX_OUT_OF_MEMORY;
  for (i = 0; i < a->nrows; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) spx__cs_index_set(r, p->csr_col64, k, i);
  s = spx__cs_upload(p, SPX__CS_COO_ROW, r, (size_t)a->nnz * (p->csr_col64 ? 8 : 4));
  SPX_FREE(r);
  return s;
}

/* cuSPARSE's sliced ELLPACK: slice q holds rows q*S .. q*S+S-1 (the last one padded to S rows),
 * w_q = its longest row, entries column-major: entry k of row q*S+i at off[q] + k*S + i. */
static spx_status spx__cs_build_sell(spx_cusparse_plan *p, const spx_csr *a) {
  const int64_t S = p->opt.sell_slice_size, nsl = (a->nrows + S - 1) / S;
  const size_t vs = SPX_DTYPE_SIZE(a->dtype);
  int64_t *off, q, i, k, total;
  void *offw = NULL, *col = NULL;
  char *val = NULL;
  spx_status s = SPX_OUT_OF_MEMORY;
  if (!(off = (int64_t *)spx__alloc((size_t)nsl + 1, sizeof *off))) return SPX_OUT_OF_MEMORY;
  off[0] = 0;
  for (q = 0; q < nsl; q++) {
    int64_t w = 0, end = SPX__MIN((q + 1) * S, a->nrows);
    for (i = q * S; i < end; i++) w = SPX__MAX(w, a->row_ptr[i + 1] - a->row_ptr[i]);
    off[q + 1] = off[q] + w * S;
  }
  total = off[nsl];
  p->sell_size = total;
  p->sell64 = total > INT32_MAX;
  if (!(offw = spx__cs_index_array(nsl + 1, p->sell64)) || !(col = spx__cs_index_array(total, p->sell64)) ||
      !(val = (char *)spx__calloc((size_t)(total > 0 ? total : 1), vs)))
    goto done;
  for (q = 0; q <= nsl; q++) spx__cs_index_set(offw, p->sell64, q, off[q]);
  for (k = 0; k < total; k++) spx__cs_index_set(col, p->sell64, k, -1); /* padding: column -1 */
  for (i = 0; i < a->nrows; i++) {
    int64_t base = off[i / S] + i % S;
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      int64_t at = base + (k - a->row_ptr[i]) * S;
      spx__cs_index_set(col, p->sell64, at, a->col_idx[k]);
      memcpy(val + (size_t)at * vs, (const char *)a->val.p + (size_t)k * vs, vs);
    }
  }
  if ((s = spx__cs_upload(p, SPX__CS_SELL_OFF, offw, (size_t)(nsl + 1) * (p->sell64 ? 8 : 4)))) goto done;
  if ((s = spx__cs_upload(p, SPX__CS_SELL_COL, col, (size_t)total * (p->sell64 ? 8 : 4)))) goto done;
  s = spx__cs_upload(p, SPX__CS_SELL_VAL, val, (size_t)total * vs);
done:
  SPX_FREE(off);
  SPX_FREE(offw);
  SPX_FREE(col);
  SPX_FREE(val);
  return s;
}

/* Number of b x b blocks with a nonzero; -1 when out of host memory. O(nnz + ncols/b). */
static int64_t spx__cs_bsr_count(const spx_csr *a, int b) {
  int64_t nb = a->ncols / b, I, r, k, count = 0;
  int32_t *mark = (int32_t *)spx__alloc((size_t)(nb > 0 ? nb : 1), sizeof *mark);
  if (!mark) return -1;
  for (k = 0; k < nb; k++) mark[k] = -1;
  for (I = 0; I < a->nrows / b; I++)
    for (r = I * b; r < I * b + b; r++)
      for (k = a->row_ptr[r]; k < a->row_ptr[r + 1]; k++) {
        int32_t bc = a->col_idx[k] / b;
        if (mark[bc] != (int32_t)I) {
          mark[bc] = (int32_t)I;
          count++;
        }
      }
  SPX_FREE(mark);
  return count;
}

static int spx__cs_cmp_i32(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return (a > b) - (a < b);
}

/* BSR with p->bsr_dim: block row I = rows I*b .. I*b+b-1; its block columns sorted; values of a
 * block row-major. Explicit zeros fill what the CSR does not have. */
static spx_status spx__cs_build_bsr(spx_cusparse_plan *p, const spx_csr *a) {
  const int b = p->bsr_dim;
  const int64_t mb = a->nrows / b, nb = a->ncols / b, bb = (int64_t)b * b;
  const size_t vs = SPX_DTYPE_SIZE(a->dtype);
  int64_t *ptr = NULL, *slot = NULL, I, r, k, j, widest = 0;
  int32_t *mark = NULL, *lst = NULL;
  void *ptrw = NULL, *col = NULL;
  char *val = NULL;
  spx_status s = SPX_OUT_OF_MEMORY;
  if (!(ptr = (int64_t *)spx__alloc((size_t)mb + 1, sizeof *ptr)) ||
      !(mark = (int32_t *)spx__alloc((size_t)(nb > 0 ? nb : 1), sizeof *mark)) ||
      !(slot = (int64_t *)spx__alloc((size_t)(nb > 0 ? nb : 1), sizeof *slot)))
    goto done;
  /* Pass 1: blocks per block row. */
  for (k = 0; k < nb; k++) mark[k] = -1;
  ptr[0] = 0;
  for (I = 0; I < mb; I++) {
    int64_t n = 0;
    for (r = I * b; r < I * b + b; r++)
      for (k = a->row_ptr[r]; k < a->row_ptr[r + 1]; k++) {
        int32_t bc = a->col_idx[k] / b;
        if (mark[bc] != (int32_t)I) {
          mark[bc] = (int32_t)I;
          n++;
        }
      }
    ptr[I + 1] = ptr[I] + n;
    widest = SPX__MAX(widest, n);
  }
  p->bsr_bnnz = ptr[mb];
  p->bsr64 = p->bsr_bnnz > INT32_MAX;
  if (!(lst = (int32_t *)spx__alloc((size_t)(widest > 0 ? widest : 1), sizeof *lst)) ||
      !(ptrw = spx__cs_index_array(mb + 1, p->bsr64)) ||
      !(col = spx__cs_index_array(p->bsr_bnnz, p->bsr64)) ||
      !(val = (char *)spx__calloc((size_t)(p->bsr_bnnz > 0 ? p->bsr_bnnz * bb : 1), vs)))
    goto done;
  /* Pass 2: sorted block columns, then the values into their slots. */
  for (k = 0; k < nb; k++) mark[k] = -1;
  for (I = 0; I < mb; I++) {
    int64_t n = 0;
    for (r = I * b; r < I * b + b; r++)
      for (k = a->row_ptr[r]; k < a->row_ptr[r + 1]; k++) {
        int32_t bc = a->col_idx[k] / b;
        if (mark[bc] != (int32_t)I) {
          mark[bc] = (int32_t)I;
          lst[n++] = bc;
        }
      }
    qsort(lst, (size_t)n, sizeof *lst, spx__cs_cmp_i32);
    for (j = 0; j < n; j++) {
      slot[lst[j]] = ptr[I] + j;
      spx__cs_index_set(col, p->bsr64, ptr[I] + j, lst[j]);
    }
    for (r = I * b; r < I * b + b; r++)
      for (k = a->row_ptr[r]; k < a->row_ptr[r + 1]; k++) {
        int32_t c = a->col_idx[k];
        int64_t at = slot[c / b] * bb + (r - I * b) * b + c % b;
        memcpy(val + (size_t)at * vs, (const char *)a->val.p + (size_t)k * vs, vs);
      }
  }
  for (I = 0; I <= mb; I++) spx__cs_index_set(ptrw, p->bsr64, I, ptr[I]);
  if ((s = spx__cs_upload(p, SPX__CS_BSR_PTR, ptrw, (size_t)(mb + 1) * (p->bsr64 ? 8 : 4)))) goto done;
  if ((s = spx__cs_upload(p, SPX__CS_BSR_COL, col, (size_t)p->bsr_bnnz * (p->bsr64 ? 8 : 4)))) goto done;
  s = spx__cs_upload(p, SPX__CS_BSR_VAL, val, (size_t)(p->bsr_bnnz * bb) * vs);
done:
  SPX_FREE(ptr);
  SPX_FREE(slot);
  SPX_FREE(mark);
  SPX_FREE(lst);
  SPX_FREE(ptrw);
  SPX_FREE(col);
  SPX_FREE(val);
  return s;
}

/* Uploads the arrays in `need` that the plan does not hold yet (a is the host CSR). */
static spx_status spx__cs_ensure(spx_cusparse_plan *p, const spx_csr *a, unsigned need) {
  spx_status s = SPX_OK;
  unsigned missing = need;
  int i;
  for (i = 0; i < SPX__CS_NARR; i++)
    if (p->arr[i]) missing &= ~(1u << i);
  if (!missing) return SPX_OK;
  if (!a) return spx__fail(SPX_INTERNAL, "cuSPARSE plan: a wrapped device CSR lacks arrays 0x%x", missing);
  if (missing & SPX__CS_BIT(CSR_PTR) && (s = spx__cs_build_csr_ptr(p, a))) return s;
  if (missing & SPX__CS_BIT(CSR_COL) && (s = spx__cs_build_csr_col(p, a))) return s;
  if (missing & SPX__CS_BIT(CSR_VAL) &&
      (s = spx__cs_upload(p, SPX__CS_CSR_VAL, a->val.p, (size_t)a->nnz * SPX_DTYPE_SIZE(a->dtype))))
    return s;
  if (missing & SPX__CS_BIT(COO_ROW) && (s = spx__cs_build_coo_row(p, a))) return s;
  if (missing & SPX__CS_M_SELL) {
    for (i = SPX__CS_SELL_OFF; i <= SPX__CS_SELL_VAL; i++) spx__cs_drop(p, i);
    if ((s = spx__cs_build_sell(p, a))) return s;
  }
  if (missing & SPX__CS_M_BSR) {
    for (i = SPX__CS_BSR_PTR; i <= SPX__CS_BSR_VAL; i++) spx__cs_drop(p, i);
    if ((s = spx__cs_build_bsr(p, a))) return s;
  }
  return SPX_OK;
}

/* Frees the plan's arrays outside `keep`. */
static void spx__cs_prune(spx_cusparse_plan *p, unsigned keep) {
  int i;
  for (i = 0; i < SPX__CS_NARR; i++)
    if (p->arr[i] && !(keep & (1u << i))) spx__cs_drop(p, i);
}

/* ---- cuSPARSE objects (the context is current) ------------------------------------------------ */
static void spx__cs_release(spx_cusparse_plan *p, spx_cusparse_alg alg) {
  spx__cs_cand *c = &p->cand[alg];
  if (c->mat) (void)spx__cusparse()->cusparseDestroySpMat(c->mat);
  spx_device_free(p->ctx, c->buf);
  memset(c, 0, sizeof *c);
}

static spx_status spx__cs_bind(spx_cusparse_plan *p) {
  spx_status s;
  if (p->bound_set && p->bound == p->ctx->stream) return SPX_OK;
  if ((s = spx__cusparse_check(spx__cusparse()->cusparseSetStream(p->h, p->ctx->stream),
                               "cusparseSetStream")))
    return s;
  p->bound = p->ctx->stream;
  p->bound_set = 1;
  return SPX_OK;
}

static spx_status spx__cs_descr(spx_cusparse_plan *p, spx_cusparse_alg alg, spx__cusparseSpMatDescr_t *m) {
  const spx__cusparse_api *sp = spx__cusparse();
  spx__cusparseStatus_t r;
  switch (spx__cs_algs[alg].layout) {
  case SPX__CS_LAYOUT_CSR:
    r = sp->cusparseCreateCsr(m, p->nrows, p->xcols, p->nnz, spx__cs_ptr(p->arr[SPX__CS_CSR_PTR]),
                              spx__cs_ptr(p->arr[SPX__CS_CSR_COL]), spx__cs_ptr(p->arr[SPX__CS_CSR_VAL]),
                              spx__cs_it(p->csr_ptr64), spx__cs_it(p->csr_col64),
                              SPX__CUSPARSE_INDEX_BASE_ZERO, spx__cs_vt(p));
    return spx__cusparse_check(r, "cusparseCreateCsr");
  case SPX__CS_LAYOUT_COO:
    r = sp->cusparseCreateCoo(m, p->nrows, p->xcols, p->nnz, spx__cs_ptr(p->arr[SPX__CS_COO_ROW]),
                              spx__cs_ptr(p->arr[SPX__CS_CSR_COL]), spx__cs_ptr(p->arr[SPX__CS_CSR_VAL]),
                              spx__cs_it(p->csr_col64), SPX__CUSPARSE_INDEX_BASE_ZERO, spx__cs_vt(p));
    return spx__cusparse_check(r, "cusparseCreateCoo");
  case SPX__CS_LAYOUT_SELL:
    if (!sp->cusparseCreateSlicedEll)
      return spx__fail(SPX_UNSUPPORTED, "this cuSPARSE has no cusparseCreateSlicedEll (CUDA 12 added it)");
    r = sp->cusparseCreateSlicedEll(m, p->nrows, p->xcols, p->nnz, p->sell_size, p->opt.sell_slice_size,
                                    spx__cs_ptr(p->arr[SPX__CS_SELL_OFF]),
                                    spx__cs_ptr(p->arr[SPX__CS_SELL_COL]),
                                    spx__cs_ptr(p->arr[SPX__CS_SELL_VAL]), spx__cs_it(p->sell64),
                                    spx__cs_it(p->sell64), SPX__CUSPARSE_INDEX_BASE_ZERO, spx__cs_vt(p));
    return spx__cusparse_check(r, "cusparseCreateSlicedEll");
  default:
    if (!sp->cusparseCreateBsr)
      return spx__fail(SPX_UNSUPPORTED, "this cuSPARSE has no cusparseCreateBsr (CUDA 12 added it)");
    r = sp->cusparseCreateBsr(m, p->nrows / p->bsr_dim, p->xcols / p->bsr_dim, p->bsr_bnnz, p->bsr_dim,
                              p->bsr_dim, spx__cs_ptr(p->arr[SPX__CS_BSR_PTR]),
                              spx__cs_ptr(p->arr[SPX__CS_BSR_COL]), spx__cs_ptr(p->arr[SPX__CS_BSR_VAL]),
                              spx__cs_it(p->bsr64), spx__cs_it(p->bsr64), SPX__CUSPARSE_INDEX_BASE_ZERO,
                              spx__cs_vt(p), SPX__CUSPARSE_ORDER_ROW);
    return spx__cusparse_check(r, "cusparseCreateBsr");
  }
}

/* A status of cuSPARSE refusing a layout or algorithm (not a broken call). */
static int spx__cs_refusal(spx__cusparseStatus_t r) {
  return r == SPX__CUSPARSE_STATUS_NOT_SUPPORTED || r == SPX__CUSPARSE_STATUS_INVALID_VALUE;
}

/* Descriptor, buffer size, buffer, preprocess: everything alg needs before its first run. */
static spx_status spx__cs_prepare(spx_cusparse_plan *p, spx_cusparse_alg alg) {
  const spx__cusparse_api *sp = spx__cusparse();
  spx__cs_cand *c = &p->cand[alg];
  double one_d = 1, zero_d = 0;
  float one_f = 1, zero_f = 0;
  const void *one = p->dtype == SPX_FLOAT ? (const void *)&one_f : (const void *)&one_d;
  const void *zero = p->dtype == SPX_FLOAT ? (const void *)&zero_f : (const void *)&zero_d;
  spx__cusparseStatus_t r;
  spx_status s;
  size_t bytes = 0;
  if ((s = spx__cs_descr(p, alg, &c->mat))) goto fail;
  (void)sp->cusparseDnVecSetValues(p->vx, spx__cs_ptr(p->xs));
  (void)sp->cusparseDnVecSetValues(p->vy, spx__cs_ptr(p->ys));
  c->spalg = spx__cs_algs[alg].spalg;
  r = sp->cusparseSpMV_bufferSize(p->h, SPX__CUSPARSE_OPERATION_NON_TRANSPOSE, one, c->mat, p->vx, zero,
                                  p->vy, spx__cs_vt(p), c->spalg, &bytes);
  if (r != SPX__CUSPARSE_STATUS_SUCCESS && alg == SPX_CUSPARSE_BSR && spx__cs_refusal(r)) {
    /* Libraries before CUDA 13 do not know BSR_ALG1; their default is the only other choice. */
    c->spalg = SPX__CUSPARSE_SPMV_ALG_DEFAULT;
    r = sp->cusparseSpMV_bufferSize(p->h, SPX__CUSPARSE_OPERATION_NON_TRANSPOSE, one, c->mat, p->vx, zero,
                                    p->vy, spx__cs_vt(p), c->spalg, &bytes);
  }
  if (r != SPX__CUSPARSE_STATUS_SUCCESS) {
    s = spx__cusparse_check(r, "cusparseSpMV_bufferSize");
    if (spx__cs_refusal(r) && (alg == SPX_CUSPARSE_SELL || alg == SPX_CUSPARSE_BSR)) {
      int v = 0;
      spx_cusparse_version(&v);
      s = spx__wrap(SPX_UNSUPPORTED, "cuSPARSE %d.%d.%d does not run SpMV on %s here", v / 1000,
                    v % 1000 / 100, v % 100, alg == SPX_CUSPARSE_BSR ? "BSR" : "sliced ELLPACK");
    }
    goto fail;
  }
  if ((s = spx_device_alloc(p->ctx, bytes, &c->buf))) goto fail;
  c->buf_bytes = bytes ? bytes : 1;
  if (!p->opt.no_preprocess && sp->cusparseSpMV_preprocess) {
    r = sp->cusparseSpMV_preprocess(p->h, SPX__CUSPARSE_OPERATION_NON_TRANSPOSE, one, c->mat, p->vx, zero,
                                    p->vy, spx__cs_vt(p), c->spalg, spx__cs_ptr(c->buf));
    /* An algorithm with nothing to analyse may say so; it runs as well without. */
    if (r == SPX__CUSPARSE_STATUS_SUCCESS) c->preprocessed = 1;
    else if (r != SPX__CUSPARSE_STATUS_NOT_SUPPORTED &&
             (s = spx__cusparse_check(r, "cusparseSpMV_preprocess")))
      goto fail;
  }
  if (c->spalg != spx__cs_algs[alg].spalg)
    snprintf(p->note[alg], sizeof p->note[alg], "runs with CUSPARSE_SPMV_ALG_DEFAULT: this cuSPARSE does not "
             "know CUSPARSE_SPMV_BSR_ALG1");
  return SPX_OK;
fail:
  spx__cs_release(p, alg);
  return s;
}

/* One cusparseSpMV on the context's stream. */
static spx_status spx__cs_run(spx_cusparse_plan *p, spx_cusparse_alg alg, double alpha, spx_devptr x,
                              double beta, spx_devptr y) {
  const spx__cusparse_api *sp = spx__cusparse();
  spx__cs_cand *c = &p->cand[alg];
  float af = (float)alpha, bf = (float)beta;
  const void *pa = p->dtype == SPX_FLOAT ? (const void *)&af : (const void *)&alpha;
  const void *pb = p->dtype == SPX_FLOAT ? (const void *)&bf : (const void *)&beta;
  spx_status s;
  if ((s = spx__cs_bind(p))) return s;
  if ((s = spx__cusparse_check(sp->cusparseDnVecSetValues(p->vx, spx__cs_ptr(x)),
                               "cusparseDnVecSetValues")) ||
      (s = spx__cusparse_check(sp->cusparseDnVecSetValues(p->vy, spx__cs_ptr(y)), "cusparseDnVecSetValues")))
    return s;
  return spx__cusparse_check(sp->cusparseSpMV(p->h, SPX__CUSPARSE_OPERATION_NON_TRANSPOSE, pa, c->mat, p->vx,
                                              pb, p->vy, spx__cs_vt(p), c->spalg, spx__cs_ptr(c->buf)),
                             "cusparseSpMV");
}

static int spx__cs_cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Median milliseconds of reps runs, each bracketed by events recorded back to back on the stream
 * (the GPU time of a run in a stream of runs, as a solver would issue them). */
static spx_status spx__cs_trial(spx_cusparse_plan *p, spx_cusparse_alg alg, double *ms) {
  const spx__cuda_api *cu = spx__cuda();
  const int n = p->opt.reps;
  spx__CUevent *ev = (spx__CUevent *)spx__calloc((size_t)n + 1, sizeof *ev);
  double *t = (double *)spx__alloc((size_t)n, sizeof *t);
  spx_status s = SPX_OUT_OF_MEMORY;
  int i, made = 0;
  *ms = -1;
  if (!ev || !t) goto done;
  for (s = SPX_OK; made <= n && !s; made++)
    s = spx__cu_check(cu->cuEventCreate(&ev[made], 0), "cuEventCreate");
  for (i = 0; i < p->opt.warmup && !s; i++) s = spx__cs_run(p, alg, 1.0, p->xs, 0.0, p->ys);
  if (!s) s = spx__cu_check(cu->cuEventRecord(ev[0], p->ctx->stream), "cuEventRecord");
  for (i = 0; i < n && !s; i++) {
    s = spx__cs_run(p, alg, 1.0, p->xs, 0.0, p->ys);
    if (!s) s = spx__cu_check(cu->cuEventRecord(ev[i + 1], p->ctx->stream), "cuEventRecord");
  }
  if (!s) s = spx__cu_check(cu->cuEventSynchronize(ev[n]), "cuEventSynchronize (after the cuSPARSE trial)");
  for (i = 0; i < n && !s; i++) {
    float f = 0;
    s = spx__cu_check(cu->cuEventElapsedTime(&f, ev[i], ev[i + 1]), "cuEventElapsedTime");
    t[i] = f;
  }
  if (!s) {
    qsort(t, (size_t)n, sizeof *t, spx__cs_cmp_double);
    *ms = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  }
done:
  if (ev) {
    /* Finish any queued runs before the events go (an error path may leave some). */
    (void)cu->cuStreamSynchronize(p->ctx->stream);
    for (i = 0; i < made; i++)
      if (ev[i]) (void)cu->cuEventDestroy(ev[i]);
  }
  SPX_FREE(ev);
  SPX_FREE(t);
  return s;
}

/* ---- Which algorithms apply ------------------------------------------------------------------- */
/* SPX_OK when alg can be built for this matrix; else SPX_UNSUPPORTED with the reason. Chooses the
 * BSR block dim. a is NULL for a wrapped device CSR. */
static spx_status spx__cs_applies(spx_cusparse_plan *p, const spx_csr *a, spx_cusparse_alg alg) {
  const int *dims = spx__cs_bsr_dims;
  const int ndims = (int)(sizeof spx__cs_bsr_dims / sizeof *dims);
  double best_fill = 0;
  int i, best = 0;
  if (!a && spx__cs_algs[alg].layout != SPX__CS_LAYOUT_CSR)
    return spx__fail(SPX_UNSUPPORTED, "%s needs a conversion on the host; a CSR wrapped on the device "
                     "runs csr_alg1 or csr_alg2 only", spx__cs_names[alg]);
  if (alg != SPX_CUSPARSE_BSR) return SPX_OK;
  if (p->opt.bsr_block_dim > 0) {
    int b = p->opt.bsr_block_dim;
    p->bsr_dim = b;
    if (p->nrows % b || p->xcols % b)
      return spx__fail(SPX_UNSUPPORTED, "bsr: the %lld x %lld matrix is not a whole number of %d x %d blocks",
                       (long long)p->nrows, (long long)p->ncols, b, b);
    return SPX_OK;
  }
  for (i = 0; i < ndims; i++) {
    int b = dims[i];
    int64_t blocks;
    double fill;
    if (p->nrows % b || p->xcols % b) continue;
    if ((blocks = spx__cs_bsr_count(a, b)) < 0) return SPX_OUT_OF_MEMORY;
    fill = p->nnz > 0 ? (double)blocks * b * b / (double)p->nnz : 1.0;
    if (!best || fill <= best_fill) { /* ties go to the larger block */
      best = b;
      best_fill = fill;
    }
  }
  if (!best)
    return spx__fail(SPX_UNSUPPORTED, "bsr: no block dim of 2, 3, 4, 6 or 8 divides the %lld x %lld matrix",
                     (long long)p->nrows, (long long)p->ncols);
  p->bsr_dim = best;
  if (best_fill > p->opt.bsr_max_fill)
    return spx__fail(SPX_UNSUPPORTED,
                     "bsr: the best block dim, %d, stores %.2f times the nonzeros (the "
                     "limit is %.2f; set bsr_block_dim to build it anyway)",
                     best, best_fill, p->opt.bsr_max_fill);
  return SPX_OK;
}

/* ---- Create and destroy ----------------------------------------------------------------------- */
void spx_cusparse_plan_destroy(spx_cusparse_plan *p) {
  const spx__cusparse_api *sp = spx__cusparse();
  int i, pushed;
  if (!p) return;
  pushed = !p->empty && sp && spx__ctx_push(p->ctx) == SPX_OK;
  if (pushed) {
    for (i = 0; i < SPX_CUSPARSE_ALG_COUNT; i++) spx__cs_release(p, (spx_cusparse_alg)i);
    if (p->vx) (void)sp->cusparseDestroyDnVec(p->vx);
    if (p->vy) (void)sp->cusparseDestroyDnVec(p->vy);
    if (p->h) (void)sp->cusparseDestroy(p->h);
    spx__ctx_pop(p->ctx);
  }
  spx__cs_prune(p, 0);
  spx_device_free(p->ctx, p->xs);
  spx_device_free(p->ctx, p->ys);
  SPX_FREE(p);
}

/* Checks shared by both constructors; fills the defaults into o. */
static spx_status spx__cs_check(spx_context *ctx, spx_cusparse_alg alg, spx_dtype dtype,
                                const spx_cusparse_options *opt, spx_cusparse_options *o,
                                spx_cusparse_plan **out) {
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_plan_create: out is NULL");
  *out = NULL;
  if (!ctx) return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_plan_create: NULL context");
  if (alg != SPX_CUSPARSE_BEST && ((int)alg < 0 || alg >= SPX_CUSPARSE_ALG_COUNT))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_plan_create: unknown algorithm %d", (int)alg);
  if (dtype != SPX_DOUBLE && dtype != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_plan_create: unknown dtype %d", (int)dtype);
  memset(o, 0, sizeof *o);
  if (opt) *o = *opt;
  if (o->sell_slice_size < 0 || o->bsr_block_dim < 0 || o->warmup < 0 || o->reps < 0 ||
      !(o->bsr_max_fill >= 0))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_plan_create: negative option");
  if (!o->sell_slice_size) o->sell_slice_size = 32;
  if (!o->bsr_max_fill) o->bsr_max_fill = 2.0;
  if (!o->warmup) o->warmup = 5;
  if (!o->reps) o->reps = 20;
  if (o->reps > 10000 || o->warmup > 10000 || o->sell_slice_size > (1 << 20) || o->bsr_block_dim > (1 << 15))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_plan_create: option out of range (reps and warmup "
                     "<= 10000, sell_slice_size <= 2^20, bsr_block_dim <= 2^15)");
  return SPX_OK;
}

/* The context can run cuSPARSE. */
static spx_status spx__cs_usable(const spx_context *ctx) {
  int v;
  if (ctx->backend != SPX_BACKEND_CUDA)
    return spx__fail(SPX_NOT_AVAILABLE,
                     "cuSPARSE needs a CUDA context; this one uses the host backend (no GPU)");
  if (spx_cusparse_version(&v)) return spx__wrap(SPX_NOT_AVAILABLE, "no cuSPARSE baseline");
  return SPX_OK;
}

/* The plan's shell: handle, scratch vectors and their descriptors. The context is current. */
static spx_status spx__cs_shell(spx_cusparse_plan *p) {
  const spx__cusparse_api *sp = spx__cusparse();
  const size_t vs = SPX_DTYPE_SIZE(p->dtype);
  spx_status s;
  if ((s = spx__cusparse_check(sp->cusparseCreate(&p->h), "cusparseCreate"))) return s;
  if ((s = spx__cs_bind(p))) return s;
  if ((s = spx_device_alloc(p->ctx, (size_t)p->xcols * vs, &p->xs)) ||
      (s = spx_device_alloc(p->ctx, (size_t)p->nrows * vs, &p->ys)))
    return s;
  /* Scratch x: 0x3f bytes are ordinary numbers in float and double (no zeros for a kernel to skip). */
  if ((s = spx_device_memset(p->ctx, p->xs, 0x3f, (size_t)p->xcols * vs))) return s;
  if ((s = spx__cusparse_check(sp->cusparseCreateDnVec(&p->vx, p->xcols, spx__cs_ptr(p->xs), spx__cs_vt(p)),
                               "cusparseCreateDnVec")) ||
      (s = spx__cusparse_check(sp->cusparseCreateDnVec(&p->vy, p->nrows, spx__cs_ptr(p->ys), spx__cs_vt(p)),
                               "cusparseCreateDnVec")))
    return s;
  return SPX_OK;
}

/* Statuses after which BEST goes on with the next algorithm. */
static int spx__cs_skippable(spx_status s) {
  return s == SPX_UNSUPPORTED || s == SPX_CUSPARSE || s == SPX_DEVICE_OUT_OF_MEMORY || s == SPX_OUT_OF_MEMORY;
}

/* Builds alg alone, or (BEST) each applicable alg in turn, timing each and keeping the fastest.
 * The context is current. */
static spx_status spx__cs_build(spx_cusparse_plan *p, const spx_csr *a, spx_cusparse_alg alg) {
  int applies[SPX_CUSPARSE_ALG_COUNT] = {0}, i, j, tried = 0;
  spx_cusparse_alg best = SPX_CUSPARSE_ALG_COUNT, first_fail = SPX_CUSPARSE_ALG_COUNT;
  spx_status s, first_s = SPX_OK;
  if (alg != SPX_CUSPARSE_BEST) {
    double t = spx__now();
    if ((s = spx__cs_applies(p, a, alg)) || (s = spx__cs_ensure(p, a, spx__cs_algs[alg].arrays))) return s;
    spx__conv_mark(spx__plan_tracing(), "cusparse", "arrays", &t);
    if ((s = spx__cs_prepare(p, alg))) return s;
    spx__conv_mark(spx__plan_tracing(), "cusparse", "matrix, buffer", &t);
    p->alg = alg;
    return SPX_OK;
  }
  for (i = 0; i < SPX_CUSPARSE_ALG_COUNT; i++) {
    s = spx__cs_applies(p, a, (spx_cusparse_alg)i);
    if (s && s != SPX_UNSUPPORTED) return s;
    if (s) spx__cs_note(p, (spx_cusparse_alg)i);
    applies[i] = !s;
  }
  for (i = 0; i < SPX_CUSPARSE_ALG_COUNT; i++) {
    spx_cusparse_alg c = (spx_cusparse_alg)i;
    unsigned keep;
    double ms = -1;
    if (!applies[i]) continue;
    tried++;
    s = spx__cs_ensure(p, a, spx__cs_algs[c].arrays);
    if (!s) s = spx__cs_prepare(p, c);
    if (!s) s = spx__cs_trial(p, c, &ms);
    if (s) {
      if (!spx__cs_skippable(s)) return s;
      spx__cs_note(p, c);
      spx__cs_release(p, c);
      if (first_fail == SPX_CUSPARSE_ALG_COUNT) first_fail = c, first_s = s;
    } else {
      p->ms[c] = ms;
      if (best == SPX_CUSPARSE_ALG_COUNT || ms < p->ms[best]) {
        if (best < SPX_CUSPARSE_ALG_COUNT) spx__cs_release(p, best);
        best = c;
      } else {
        spx__cs_release(p, c);
      }
    }
    /* Keep what the leader and the algorithms still to try read; free the rest now, so that at
     * most two layouts share the device at any time. */
    keep = best < SPX_CUSPARSE_ALG_COUNT ? spx__cs_algs[best].arrays : 0;
    for (j = i + 1; j < SPX_CUSPARSE_ALG_COUNT; j++)
      if (applies[j]) keep |= spx__cs_algs[j].arrays;
    spx__cs_prune(p, keep);
  }
  if (best == SPX_CUSPARSE_ALG_COUNT) {
    if (!tried) return spx__fail(SPX_INTERNAL, "cuSPARSE plan: no algorithm applies");
    return spx__fail(first_s, "no cuSPARSE SpMV algorithm ran on this matrix; %s: %s",
                     spx__cs_names[first_fail], p->note[first_fail]);
  }
  p->alg = best;
  return SPX_OK;
}

static spx_status spx__cs_create(spx_context *ctx, const spx_csr *a, const spx_cusparse_device_csr *d,
                                 spx_cusparse_alg alg, const spx_cusparse_options *o,
                                 spx_cusparse_plan **out) {
  spx_cusparse_plan *p;
  spx_status s;
  int i;
  if (!(p = (spx_cusparse_plan *)spx__calloc(1, sizeof *p))) return SPX_OUT_OF_MEMORY;
  p->ctx = ctx;
  p->opt = *o;
  p->alg = alg == SPX_CUSPARSE_BEST ? SPX_CUSPARSE_CSR_ALG1 : alg;
  for (i = 0; i < SPX_CUSPARSE_ALG_COUNT; i++) p->ms[i] = -1;
  if (a) {
    p->nrows = a->nrows, p->ncols = a->ncols, p->nnz = a->nnz, p->dtype = a->dtype;
    p->csr_ptr64 = p->csr_col64 = a->nnz > INT32_MAX; /* one width for both: what SpMV surely takes */
  } else {
    p->nrows = d->nrows, p->ncols = d->ncols, p->nnz = d->nnz, p->dtype = d->dtype;
    p->csr_ptr64 = d->row_ptr_64 != 0;
    p->csr_col64 = d->col_idx_64 != 0;
    p->arr[SPX__CS_CSR_PTR] = d->row_ptr;
    p->arr[SPX__CS_CSR_COL] = d->col_idx;
    p->arr[SPX__CS_CSR_VAL] = d->val;
  }
  p->xcols = p->ncols > 0 ? p->ncols : 1;
  if (p->nrows == 0) { /* y has no entries: every call is a no-op */
    p->empty = 1;
    if (alg != SPX_CUSPARSE_BEST && (s = spx__cs_applies(p, a, alg))) goto fail;
    *out = p;
    return SPX_OK;
  }
  if ((s = spx__ctx_push(ctx))) goto fail;
  {
    double t = spx__now();
    s = spx__cs_shell(p);
    spx__conv_mark(spx__plan_tracing(), "cusparse", "handle, x, y", &t);
  }
  if (!s && !a) {
    /* An empty wrapped matrix may come without column and value arrays; cuSPARSE wants pointers. */
    if (!p->arr[SPX__CS_CSR_COL]) p->arr[SPX__CS_CSR_COL] = p->xs;
    if (!p->arr[SPX__CS_CSR_VAL]) p->arr[SPX__CS_CSR_VAL] = p->xs;
  }
  if (!s) s = spx__cs_build(p, a, alg);
  if (!s) spx__cs_prune(p, spx__cs_algs[p->alg].arrays);
  spx__ctx_pop(ctx);
  if (s) goto fail;
  *out = p;
  return SPX_OK;
fail:
  spx_cusparse_plan_destroy(p);
  return s;
}

spx_status spx_cusparse_plan_create(spx_context *ctx, const spx_csr *a, spx_cusparse_alg alg,
                                    const spx_cusparse_options *opt, spx_cusparse_plan **out) {
  spx_cusparse_options o;
  spx_status s;
  if (!a) {
    if (out) *out = NULL;
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_plan_create: NULL matrix");
  }
  if ((s = spx__cs_check(ctx, alg, a->dtype, opt, &o, out))) return s;
  if (a->nrows < 0 || a->ncols < 0 || a->nnz < 0 || !a->row_ptr || (a->nnz > 0 && (!a->col_idx || !a->val.p)))
    return spx__fail(SPX_INVALID_ARGUMENT,
                     "spx_cusparse_plan_create: malformed CSR (negative size or NULL array)");
  if ((s = spx__cs_usable(ctx))) return s;
  return spx__cs_create(ctx, a, NULL, alg, &o, out);
}

spx_status spx_cusparse_plan_create_device_csr(spx_context *ctx, const spx_cusparse_device_csr *a,
                                               spx_cusparse_alg alg, const spx_cusparse_options *opt,
                                               spx_cusparse_plan **out) {
  spx_cusparse_options o;
  spx_status s;
  if (!a) {
    if (out) *out = NULL;
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_plan_create_device_csr: NULL matrix");
  }
  if ((s = spx__cs_check(ctx, alg, a->dtype, opt, &o, out))) return s;
  if (a->nrows < 0 || a->ncols < 0 || a->nnz < 0 || (!a->row_ptr && a->nrows > 0) ||
      (a->nnz > 0 && (!a->col_idx || !a->val)))
    return spx__fail(SPX_INVALID_ARGUMENT,
                     "spx_cusparse_plan_create_device_csr: negative size or NULL array");
  if ((!a->row_ptr_64 && a->nnz > INT32_MAX) || (!a->col_idx_64 && a->ncols > (int64_t)INT32_MAX + 1))
    return spx__fail(SPX_INVALID_ARGUMENT,
                     "spx_cusparse_plan_create_device_csr: %lld entries or %lld columns "
                     "do not fit 32-bit indices",
                     (long long)a->nnz, (long long)a->ncols);
  /* cusparseCreateCsr refuses (and logs to stderr) offsets and columns of different widths. */
  if (!a->row_ptr_64 != !a->col_idx_64)
    return spx__fail(SPX_UNSUPPORTED, "cuSPARSE takes CSR row offsets and column indices of one width only "
                     "(both 32-bit or both 64-bit); these are %d- and %d-bit", a->row_ptr_64 ? 64 : 32,
                     a->col_idx_64 ? 64 : 32);
  if ((s = spx__cs_usable(ctx))) return s;
  return spx__cs_create(ctx, NULL, a, alg, &o, out);
}

/* ---- Use -------------------------------------------------------------------------------------- */
spx_status spx_cusparse_spmv(spx_cusparse_plan *p, double alpha, spx_devptr x, double beta, spx_devptr y) {
  spx_status s;
  if (!p) return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_spmv: NULL plan");
  if (p->empty) return SPX_OK;
  if (!y || (!x && p->ncols > 0)) return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_spmv: NULL vector");
  if ((s = spx__ctx_push(p->ctx))) return s;
  /* No columns: A*x is empty and y = beta*y; cuSPARSE runs that as one empty column of scratch. */
  s = spx__cs_run(p, p->alg, alpha, p->ncols > 0 ? x : p->xs, beta, y);
  spx__ctx_pop(p->ctx);
  return s;
}

spx_cusparse_alg spx_cusparse_plan_alg(const spx_cusparse_plan *p) {
  return p ? p->alg : SPX_CUSPARSE_ALG_COUNT;
}

spx_status spx_cusparse_plan_times(const spx_cusparse_plan *p, double ms[SPX_CUSPARSE_ALG_COUNT]) {
  int i;
  if (!p || !ms) return spx__fail(SPX_INVALID_ARGUMENT, "spx_cusparse_plan_times: NULL argument");
  for (i = 0; i < SPX_CUSPARSE_ALG_COUNT; i++) ms[i] = p->ms[i];
  return SPX_OK;
}

const char *spx_cusparse_plan_note(const spx_cusparse_plan *p, spx_cusparse_alg alg) {
  if (!p || (int)alg < 0 || alg >= SPX_CUSPARSE_ALG_COUNT) return "";
  return p->note[alg];
}

int spx_cusparse_plan_bsr_block_dim(const spx_cusparse_plan *p) { return p ? p->bsr_dim : 0; }

int spx_cusparse_plan_preprocessed(const spx_cusparse_plan *p) {
  return p && !p->empty ? p->cand[p->alg].preprocessed : 0;
}

int64_t spx_cusparse_plan_device_bytes(const spx_cusparse_plan *p) {
  int64_t n = 0;
  int i;
  if (!p || p->empty) return 0;
  for (i = 0; i < SPX__CS_NARR; i++)
    if (p->owned & (1u << i)) n += (int64_t)p->arr_bytes[i];
  n += (int64_t)p->cand[p->alg].buf_bytes;
  n += (int64_t)((size_t)(p->nrows + p->xcols) * SPX_DTYPE_SIZE(p->dtype));
  return n;
}
