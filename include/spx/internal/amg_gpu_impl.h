/* SPDX-License-Identifier: BSD-3-Clause */
/* AMG's setup products on the GPU (amg_levels.h): the device twin of the host's smoothed
 * prolongation product and Galerkin products for the levels large enough to pay
 * (amg_setup_impl.h decides the side, and keeps the host path as the reference and the fallback).
 * P = F T and A_c = R (A P) by cuSPARSE's generic SpGEMM through its reuse API, R = P^T by
 * cusparseCsr2cscEx2.
 *
 * WHY THESE CALLS  cuSPARSE's SpGEMM takes non-transposed CSR operands with 32-bit indices only,
 * so R A P is two products, A P then R (A P), with R made on the device by csr2csc of P: one
 * linear pass instead of a transposed operand, and the host wants R (for its plan) anyway. The
 * reuse API splits a product into its symbolic phase (work estimation, row counts, the pattern's
 * copy) and its numeric one (compute), which reads the descriptor and buffers 4 and 5 only: those
 * are kept per product, so spx_amg_update runs compute alone (no symbolic phase again). Each
 * buffer is sized once by cuSPARSE's own query; 1 and 2 go after the row counts, 3 after the copy
 * (the device allocator caches freed blocks, so the next product reuses them without a
 * cuMemAlloc). CSR_ALG_DETERMINITIC gives the same values bit for bit run to run, so an update to
 * 2 A equals a fresh setup of 2 A, as on the host.
 *
 * PATTERNS AND VALUES  cuSPARSE keeps every entry the product's pattern has (a sum that cancels
 * to 0 stays an entry), as the host's Gustavson product does, and its rows come with sorted
 * columns: the patterns are the host's exactly. Each download checks the rows' order (one out of
 * order fails over to the host, whose products sort). The sums run in another order than the
 * host's, so the values agree to rounding.
 *
 * WHERE THE RESULTS GO  A_c stays on the device as the next level's A (no upload when that level
 * runs here too); P, R and A_c come down into the host's level arrays, which the host's steps
 * below and the plans read. Every call runs on the context's stream with its CUDA context
 * pushed. */
#include "common.h"
#include "cuda_types.h"
#include "amg_levels.h"
#include "../amg.h"
#include "../csr.h"
#include "../device.h"
#include "../loader.h"

#define SPX__AMG_GPU_OP SPX__CUSPARSE_OPERATION_NON_TRANSPOSE
#define SPX__AMG_GPU_ALG SPX__CUSPARSE_SPGEMM_CSR_ALG_DETERMINITIC
#define SPX__AMG_PTR(d) ((void *)(uintptr_t)(d))

int spx__amg_gpu_wanted(const spx_amg *m, int l) {
  return m->cuda && !m->gpu_off && m->o.gpu_setup_rows > 0 && m->lv[l].A->nrows >= m->o.gpu_setup_rows;
}

/* The first entry point the GPU setup calls beyond the SpMV's that this cuSPARSE lacks (NULL: all
 * there). They are optional in the loader's table: without them the setup runs on the host. */
static const char *spx__amg_gpu_missing(const spx__cusparse_api *sp) {
  if (!sp->cusparseSpMatGetSize) return "cusparseSpMatGetSize";
  if (!sp->cusparseCsrSetPointers) return "cusparseCsrSetPointers";
  if (!sp->cusparseSpGEMM_createDescr) return "cusparseSpGEMM_createDescr";
  if (!sp->cusparseSpGEMM_destroyDescr) return "cusparseSpGEMM_destroyDescr";
  if (!sp->cusparseSpGEMMreuse_workEstimation) return "cusparseSpGEMMreuse_workEstimation";
  if (!sp->cusparseSpGEMMreuse_nnz) return "cusparseSpGEMMreuse_nnz";
  if (!sp->cusparseSpGEMMreuse_copy) return "cusparseSpGEMMreuse_copy";
  if (!sp->cusparseSpGEMMreuse_compute) return "cusparseSpGEMMreuse_compute";
  if (!sp->cusparseCsr2cscEx2_bufferSize) return "cusparseCsr2cscEx2_bufferSize";
  if (!sp->cusparseCsr2cscEx2) return "cusparseCsr2cscEx2";
  return NULL;
}

/* cuSPARSE with every entry point above, the context pushed (the caller pops on SPX_OK) and the
 * hierarchy's handle bound to the context's stream (made on first use). SPX_UNSUPPORTED, with the
 * reason, when this cuSPARSE cannot. */
static spx_status spx__amg_gpu_enter(spx_amg *m, const spx__cusparse_api **out) {
  const spx__cusparse_api *sp = spx__cusparse();
  const char *miss;
  spx_status st;
  *out = NULL;
  if (!sp) {
    spx_lib_status ls;
    spx_lib_status_get(SPX_LIB_CUSPARSE, &ls);
    return spx__fail(SPX_UNSUPPORTED, "the setup's products on the GPU need cuSPARSE, which is not available: %s",
                     ls.reason);
  }
  if ((miss = spx__amg_gpu_missing(sp)))
    return spx__fail(SPX_UNSUPPORTED, "this cuSPARSE has no %s (the SpGEMM reuse API came with CUDA 11.3)", miss);
  if ((st = spx__ctx_push(m->ctx))) return st;
  if (!m->sph && (st = spx__cusparse_check(sp->cusparseCreate(&m->sph), "cusparseCreate"))) m->sph = NULL;
  if (!st) st = spx__cusparse_check(sp->cusparseSetStream(m->sph, m->ctx->stream), "cusparseSetStream");
  if (st) {
    spx__ctx_pop(m->ctx);
    return st;
  }
  *out = sp;
  return SPX_OK;
}

/* ---- Device CSR ---------------------------------------------------------------------------------- */
static spx_status spx__amg_gpu_alloc(spx_amg *m, size_t bytes, spx_devptr *d) {
  return spx_device_alloc(m->ctx, bytes + 8, d); /* + 8: an empty array is a pointer still */
}

static void spx__amg_dcsr_free(spx_amg *m, const spx__cusparse_api *sp, spx__amg_dcsr *d) {
  if (!d) return;
  if (d->mat && sp) (void)sp->cusparseDestroySpMat(d->mat);
  spx_device_free(m->ctx, d->rp);
  spx_device_free(m->ctx, d->ci);
  spx_device_free(m->ctx, d->val);
  memset(d, 0, sizeof *d);
}

/* d's descriptor over its arrays (32-bit offsets and columns, double values). */
static spx_status spx__amg_dcsr_descr(const spx__cusparse_api *sp, spx__amg_dcsr *d) {
  return spx__cusparse_check(sp->cusparseCreateCsr(&d->mat, d->rows, d->cols, d->nnz, SPX__AMG_PTR(d->rp),
                                                   SPX__AMG_PTR(d->ci), SPX__AMG_PTR(d->val), SPX__CUSPARSE_INDEX_32I,
                                                   SPX__CUSPARSE_INDEX_32I, SPX__CUSPARSE_INDEX_BASE_ZERO,
                                                   SPX__CUDA_R_64F),
                             "cusparseCreateCsr");
}

/* 32-bit indices hold a matrix of this many rows, columns and entries (SpGEMM and csr2csc take
 * nothing wider). */
static spx_status spx__amg_gpu_fits(const char *what, int64_t rows, int64_t cols, int64_t nnz) {
  if (rows < INT32_MAX && cols < INT32_MAX && nnz <= INT32_MAX) return SPX_OK;
  return spx__fail(SPX_UNSUPPORTED, "%s is %lld x %lld with %lld entries: cuSPARSE's SpGEMM takes 32-bit indices only",
                   what, (long long)rows, (long long)cols, (long long)nnz);
}

/* Host CSR a (double) up as d: offsets narrowed to 32 bits, columns and values as they are. */
static spx_status spx__amg_dcsr_up(spx_amg *m, const spx__cusparse_api *sp, const spx_csr *a, spx__amg_dcsr *d) {
  const int64_t n = a->nrows, n_ = n;
  int32_t *rp;
  int64_t i;
  spx_status st;
  memset(d, 0, sizeof *d);
  if ((st = spx__amg_gpu_fits("a level's operator", a->nrows, a->ncols, a->nnz))) return st;
  d->rows = a->nrows;
  d->cols = a->ncols;
  d->nnz = a->nnz;
  if (!(rp = (int32_t *)spx__alloc((size_t)n + 1, sizeof *rp))) return SPX_OUT_OF_MEMORY;
  SPX__AMG_FOR
  for (i = 0; i <= n_; i++) rp[i] = (int32_t)a->row_ptr[i];
  if (!(st = spx__amg_gpu_alloc(m, ((size_t)n + 1) * sizeof *rp, &d->rp)))
    st = spx_device_upload(m->ctx, d->rp, rp, ((size_t)n + 1) * sizeof *rp);
  SPX_FREE(rp);
  if (!st && !(st = spx__amg_gpu_alloc(m, (size_t)a->nnz * sizeof(int32_t), &d->ci)) && a->nnz)
    st = spx_device_upload(m->ctx, d->ci, a->col_idx, (size_t)a->nnz * sizeof(int32_t));
  if (!st && !(st = spx__amg_gpu_alloc(m, (size_t)a->nnz * sizeof(double), &d->val)) && a->nnz)
    st = spx_device_upload(m->ctx, d->val, a->val.d, (size_t)a->nnz * sizeof(double));
  if (!st) st = spx__amg_dcsr_descr(sp, d);
  return st;
}

/* d down into a new host CSR (offsets widened). Its rows must come with strictly increasing
 * columns, as the host's products give them: else SPX_UNSUPPORTED (the host takes over). */
static spx_status spx__amg_dcsr_down(spx_amg *m, const spx__amg_dcsr *d, spx_csr **out) {
  const int64_t n = d->rows;
  spx_csr *c = NULL;
  int32_t *rp = NULL;
  int64_t i, bad = 0;
  spx_status st;
  *out = NULL;
  if ((st = spx_csr_create(d->rows, d->cols, d->nnz, SPX_DOUBLE, &c))) return st;
  if (!(rp = (int32_t *)spx__alloc((size_t)n + 1, sizeof *rp))) st = SPX_OUT_OF_MEMORY;
  if (!st) st = spx_device_download(m->ctx, rp, d->rp, ((size_t)n + 1) * sizeof *rp);
  if (!st && d->nnz) st = spx_device_download(m->ctx, c->col_idx, d->ci, (size_t)d->nnz * sizeof(int32_t));
  if (!st && d->nnz) st = spx_device_download(m->ctx, c->val.d, d->val, (size_t)d->nnz * sizeof(double));
  if (!st && (rp[0] != 0 || rp[n] != d->nnz))
    st = spx__fail(SPX_CUSPARSE, "spx_amg: a product on the GPU came back with row offsets %d .. %d for %lld entries",
                   rp[0], rp[n], (long long)d->nnz);
  if (!st) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : bad) if (n > 16384)
#endif
    for (i = 0; i < n; i++) {
      int32_t k;
      c->row_ptr[i + 1] = rp[i + 1];
      if (rp[i + 1] < rp[i]) bad++;
      else
        for (k = rp[i] + 1; k < rp[i + 1]; k++) bad += c->col_idx[k] <= c->col_idx[k - 1];
    }
    if (bad)
      st = spx__fail(SPX_UNSUPPORTED, "spx_amg: a product on the GPU came back with %lld columns out of order (the "
                     "host's are sorted, and the patterns must match)", (long long)bad);
  }
  SPX_FREE(rp);
  if (st) {
    spx_csr_destroy(c);
    return st;
  }
  *out = c;
  return SPX_OK;
}

/* ---- Products ------------------------------------------------------------------------------------ */
static void spx__amg_gemm_free(spx_amg *m, const spx__cusparse_api *sp, spx__amg_gemm *g) {
  if (g->d && sp) (void)sp->cusparseSpGEMM_destroyDescr(g->d);
  spx_device_free(m->ctx, g->buf4);
  spx_device_free(m->ctx, g->buf5);
  memset(g, 0, sizeof *g);
}

/* The numeric phase: C's values = A B in C's pattern (C zeroed first: compute takes beta 0, and 0
 * times a NaN a failed update left would stay a NaN). */
static spx_status spx__amg_gemm_values(spx_amg *m, const spx__cusparse_api *sp, const spx__amg_dcsr *A,
                                       const spx__amg_dcsr *B, spx__amg_dcsr *C, spx__amg_gemm *g) {
  const double one = 1.0, zero = 0.0;
  spx_status st;
  if (C->nnz && (st = spx_device_memset(m->ctx, C->val, 0, (size_t)C->nnz * sizeof(double)))) return st;
  return spx__cusparse_check(sp->cusparseSpGEMMreuse_compute(m->sph, SPX__AMG_GPU_OP, SPX__AMG_GPU_OP, &one, A->mat,
                                                             B->mat, &zero, C->mat, SPX__CUDA_R_64F, SPX__AMG_GPU_ALG,
                                                             g->d),
                             "cusparseSpGEMMreuse_compute");
}

/* C = A B: the reuse API's symbolic phase (C's arrays allocated here, its pattern from cuSPARSE),
 * then the numeric one. g keeps what compute needs again. On failure the caller frees C and g. */
static spx_status spx__amg_gemm_make(spx_amg *m, const spx__cusparse_api *sp, const spx__amg_dcsr *A,
                                     const spx__amg_dcsr *B, spx__amg_dcsr *C, spx__amg_gemm *g) {
  spx_devptr b1 = 0, b2 = 0, b3 = 0;
  size_t s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0;
  int64_t rows = 0, cols = 0, nnz = 0;
  spx_status st;
  memset(C, 0, sizeof *C);
  memset(g, 0, sizeof *g);
  C->rows = A->rows;
  C->cols = B->cols;
  if ((st = spx__amg_gpu_alloc(m, ((size_t)C->rows + 1) * sizeof(int32_t), &C->rp))) return st;
  /* C without columns and values yet: cuSPARSE writes the offsets during the row counts */
  if ((st = spx__cusparse_check(sp->cusparseCreateCsr(&C->mat, C->rows, C->cols, 0, SPX__AMG_PTR(C->rp), NULL, NULL,
                                                      SPX__CUSPARSE_INDEX_32I, SPX__CUSPARSE_INDEX_32I,
                                                      SPX__CUSPARSE_INDEX_BASE_ZERO, SPX__CUDA_R_64F),
                                "cusparseCreateCsr")) ||
      (st = spx__cusparse_check(sp->cusparseSpGEMM_createDescr(&g->d), "cusparseSpGEMM_createDescr")))
    return st;
  st = spx__cusparse_check(sp->cusparseSpGEMMreuse_workEstimation(m->sph, SPX__AMG_GPU_OP, SPX__AMG_GPU_OP, A->mat,
                                                                  B->mat, C->mat, SPX__AMG_GPU_ALG, g->d, &s1, NULL),
                           "cusparseSpGEMMreuse_workEstimation (size)");
  if (!st) st = spx__amg_gpu_alloc(m, s1, &b1);
  if (!st)
    st = spx__cusparse_check(sp->cusparseSpGEMMreuse_workEstimation(m->sph, SPX__AMG_GPU_OP, SPX__AMG_GPU_OP, A->mat,
                                                                    B->mat, C->mat, SPX__AMG_GPU_ALG, g->d, &s1,
                                                                    SPX__AMG_PTR(b1)),
                             "cusparseSpGEMMreuse_workEstimation");
  if (!st)
    st = spx__cusparse_check(sp->cusparseSpGEMMreuse_nnz(m->sph, SPX__AMG_GPU_OP, SPX__AMG_GPU_OP, A->mat, B->mat,
                                                         C->mat, SPX__AMG_GPU_ALG, g->d, &s2, NULL, &s3, NULL, &s4,
                                                         NULL),
                             "cusparseSpGEMMreuse_nnz (sizes)");
  if (!st && !(st = spx__amg_gpu_alloc(m, s2, &b2)) && !(st = spx__amg_gpu_alloc(m, s3, &b3)) &&
      !(st = spx__amg_gpu_alloc(m, s4, &g->buf4)))
    st = spx__cusparse_check(sp->cusparseSpGEMMreuse_nnz(m->sph, SPX__AMG_GPU_OP, SPX__AMG_GPU_OP, A->mat, B->mat,
                                                         C->mat, SPX__AMG_GPU_ALG, g->d, &s2, SPX__AMG_PTR(b2), &s3,
                                                         SPX__AMG_PTR(b3), &s4, SPX__AMG_PTR(g->buf4)),
                             "cusparseSpGEMMreuse_nnz");
  spx_device_free(m->ctx, b1); /* stream ordered: reused only after the work queued before */
  spx_device_free(m->ctx, b2);
  b1 = b2 = 0;
  if (!st) st = spx__cusparse_check(sp->cusparseSpMatGetSize(C->mat, &rows, &cols, &nnz), "cusparseSpMatGetSize");
  if (!st) st = spx__amg_gpu_fits("a Galerkin or prolongation product", rows, cols, nnz);
  C->nnz = nnz;
  if (!st && !(st = spx__amg_gpu_alloc(m, (size_t)nnz * sizeof(int32_t), &C->ci)) &&
      !(st = spx__amg_gpu_alloc(m, (size_t)nnz * sizeof(double), &C->val)))
    st = spx__cusparse_check(sp->cusparseCsrSetPointers(C->mat, SPX__AMG_PTR(C->rp), SPX__AMG_PTR(C->ci),
                                                        SPX__AMG_PTR(C->val)),
                             "cusparseCsrSetPointers");
  if (!st)
    st = spx__cusparse_check(sp->cusparseSpGEMMreuse_copy(m->sph, SPX__AMG_GPU_OP, SPX__AMG_GPU_OP, A->mat, B->mat,
                                                          C->mat, SPX__AMG_GPU_ALG, g->d, &s5, NULL),
                             "cusparseSpGEMMreuse_copy (size)");
  if (!st && !(st = spx__amg_gpu_alloc(m, s5, &g->buf5)))
    st = spx__cusparse_check(sp->cusparseSpGEMMreuse_copy(m->sph, SPX__AMG_GPU_OP, SPX__AMG_GPU_OP, A->mat, B->mat,
                                                          C->mat, SPX__AMG_GPU_ALG, g->d, &s5, SPX__AMG_PTR(g->buf5)),
                             "cusparseSpGEMMreuse_copy");
  spx_device_free(m->ctx, b3);
  if (!st) st = spx__amg_gemm_values(m, sp, A, B, C, g);
  return st;
}

/* R = P^T on the device by csr2csc (rows of R in order, each row's columns increasing: the host
 * transpose's arrays), with its descriptor. */
static spx_status spx__amg_transpose(spx_amg *m, const spx__cusparse_api *sp, const spx__amg_dcsr *P,
                                     spx__amg_dcsr *R) {
  spx_devptr buf = 0;
  size_t bytes = 0;
  spx_status st;
  memset(R, 0, sizeof *R);
  R->rows = P->cols;
  R->cols = P->rows;
  R->nnz = P->nnz;
  if ((st = spx__amg_gpu_alloc(m, ((size_t)R->rows + 1) * sizeof(int32_t), &R->rp)) ||
      (st = spx__amg_gpu_alloc(m, (size_t)R->nnz * sizeof(int32_t), &R->ci)) ||
      (st = spx__amg_gpu_alloc(m, (size_t)R->nnz * sizeof(double), &R->val)))
    return st;
  st = spx__cusparse_check(sp->cusparseCsr2cscEx2_bufferSize(m->sph, (int)P->rows, (int)P->cols, (int)P->nnz,
                                                              SPX__AMG_PTR(P->val), (const int *)SPX__AMG_PTR(P->rp),
                                                              (const int *)SPX__AMG_PTR(P->ci), SPX__AMG_PTR(R->val),
                                                              (int *)SPX__AMG_PTR(R->rp), (int *)SPX__AMG_PTR(R->ci),
                                                              SPX__CUDA_R_64F, SPX__CUSPARSE_ACTION_NUMERIC,
                                                              SPX__CUSPARSE_INDEX_BASE_ZERO, SPX__CUSPARSE_CSR2CSC_ALG1,
                                                              &bytes),
                           "cusparseCsr2cscEx2_bufferSize");
  if (!st) st = spx__amg_gpu_alloc(m, bytes, &buf);
  if (!st)
    st = spx__cusparse_check(sp->cusparseCsr2cscEx2(m->sph, (int)P->rows, (int)P->cols, (int)P->nnz,
                                                    SPX__AMG_PTR(P->val), (const int *)SPX__AMG_PTR(P->rp),
                                                    (const int *)SPX__AMG_PTR(P->ci), SPX__AMG_PTR(R->val),
                                                    (int *)SPX__AMG_PTR(R->rp), (int *)SPX__AMG_PTR(R->ci),
                                                    SPX__CUDA_R_64F, SPX__CUSPARSE_ACTION_NUMERIC,
                                                    SPX__CUSPARSE_INDEX_BASE_ZERO, SPX__CUSPARSE_CSR2CSC_ALG1,
                                                    SPX__AMG_PTR(buf)),
                             "cusparseCsr2cscEx2");
  spx_device_free(m->ctx, buf);
  if (!st) st = spx__amg_dcsr_descr(sp, R);
  return st;
}

/* ---- The level's steps --------------------------------------------------------------------------- */
spx_status spx__amg_gpu_prolong(spx_amg *m, int l, const spx_csr *F, const spx_csr *T) {
  spx__amg_level *L = &m->lv[l];
  const spx__cusparse_api *sp;
  spx__amg_dcsr dF, dT;
  spx__amg_gemm g;
  spx__amg_gpu *G;
  spx_csr *P = NULL, *R = NULL;
  spx_status st;
  memset(&dF, 0, sizeof dF);
  memset(&dT, 0, sizeof dT);
  memset(&g, 0, sizeof g);
  if ((st = spx__amg_gpu_enter(m, &sp))) return st;
  if (!(G = L->gpu = (spx__amg_gpu *)spx__calloc(1, sizeof *G))) st = SPX_OUT_OF_MEMORY;
  else if (F) { /* P = F T; F and T go once P is made */
    if (!(st = spx__amg_dcsr_up(m, sp, F, &dF)) && !(st = spx__amg_dcsr_up(m, sp, T, &dT)))
      st = spx__amg_gemm_make(m, sp, &dF, &dT, &G->P, &g);
  } else st = spx__amg_dcsr_up(m, sp, T, &G->P); /* prolong_omega 0: P = T */
  if (!st) st = spx__amg_transpose(m, sp, &G->P, &G->R);
  if (!st) st = spx__amg_dcsr_down(m, &G->P, &P);
  if (!st) st = spx__amg_dcsr_down(m, &G->R, &R);
  spx__amg_dcsr_free(m, sp, &dF);
  spx__amg_dcsr_free(m, sp, &dT);
  spx__amg_gemm_free(m, sp, &g);
  spx__ctx_pop(m->ctx);
  if (st) { /* L->gpu goes with the caller's spx__amg_gpu_fallback */
    spx_csr_destroy(P);
    spx_csr_destroy(R);
    return st;
  }
  L->P = P;
  L->R = R;
  L->p_gpu = 1;
  return SPX_OK;
}

spx_status spx__amg_gpu_rap(spx_amg *m, int l) {
  spx__amg_level *L = &m->lv[l], *N = &m->lv[l + 1];
  spx__amg_gpu *G = L->gpu;
  const spx__cusparse_api *sp;
  spx_csr *Ac = NULL;
  spx_status st;
  if (!G) return spx__fail(SPX_INTERNAL, "spx_amg: level %d's P is not on the device", l);
  if ((st = spx__amg_gpu_enter(m, &sp))) return st;
  if (!L->dA) { /* level 0 (or below a host level): A goes up */
    if (!(L->dA = (spx__amg_dcsr *)spx__calloc(1, sizeof *L->dA))) st = SPX_OUT_OF_MEMORY;
    else st = spx__amg_dcsr_up(m, sp, L->A, L->dA);
  }
  if (!st && !(N->dA = (spx__amg_dcsr *)spx__calloc(1, sizeof *N->dA))) st = SPX_OUT_OF_MEMORY;
  if (!st) st = spx__amg_gemm_make(m, sp, L->dA, &G->P, &G->AP, &G->ap);
  if (!st) st = spx__amg_gemm_make(m, sp, &G->R, &G->AP, N->dA, &G->rap);
  if (!st) st = spx__amg_dcsr_down(m, N->dA, &Ac);
  spx__ctx_pop(m->ctx);
  if (st) return st;
  N->A = Ac;
  L->rap_gpu = 1;
  return SPX_OK;
}

spx_status spx__amg_gpu_update(spx_amg *m, int l) {
  spx__amg_level *L = &m->lv[l], *N = &m->lv[l + 1];
  spx__amg_gpu *G = L->gpu;
  const spx__cusparse_api *sp;
  spx_status st = SPX_OK;
  if (!G || !L->dA || !N->dA || N->A->nnz != N->dA->nnz)
    return spx__fail(SPX_INTERNAL, "spx_amg_update: level %d's products are not on the device", l);
  if ((st = spx__amg_gpu_enter(m, &sp))) return st;
  /* A's values go up where no product of the level above left them there */
  if ((l == 0 || !m->lv[l - 1].gpu) && L->A->nnz)
    st = spx_device_upload(m->ctx, L->dA->val, L->A->val.d, (size_t)L->A->nnz * sizeof(double));
  if (!st) st = spx__amg_gemm_values(m, sp, L->dA, &G->P, &G->AP, &G->ap);
  if (!st) st = spx__amg_gemm_values(m, sp, &G->R, &G->AP, N->dA, &G->rap);
  if (!st && N->A->nnz)
    st = spx_device_download(m->ctx, N->A->val.d, N->dA->val, (size_t)N->A->nnz * sizeof(double));
  spx__ctx_pop(m->ctx);
  return st;
}

/* ---- Failures and release ------------------------------------------------------------------------ */
void spx__amg_gpu_free_level(spx_amg *m, int l) {
  spx__amg_level *L = &m->lv[l];
  const spx__cusparse_api *sp;
  int pushed;
  if (!L->gpu && !(l + 1 < SPX_AMG_MAX_LEVELS && m->lv[l + 1].dA)) return; /* nothing: no context call either */
  sp = spx__cusparse();
  pushed = spx__ctx_push(m->ctx) == SPX_OK; /* cuSPARSE's destroys as its other calls (they free host memory) */
  if (L->gpu) {
    spx__amg_dcsr_free(m, sp, &L->gpu->P);
    spx__amg_dcsr_free(m, sp, &L->gpu->R);
    spx__amg_dcsr_free(m, sp, &L->gpu->AP);
    spx__amg_gemm_free(m, sp, &L->gpu->ap);
    spx__amg_gemm_free(m, sp, &L->gpu->rap);
    SPX_FREE(L->gpu);
    L->gpu = NULL;
  }
  if (l + 1 < SPX_AMG_MAX_LEVELS && m->lv[l + 1].dA) { /* level l's product */
    spx__amg_dcsr_free(m, sp, m->lv[l + 1].dA);
    SPX_FREE(m->lv[l + 1].dA);
    m->lv[l + 1].dA = NULL;
  }
  if (pushed) spx__ctx_pop(m->ctx);
}

int spx__amg_gpu_fallback(spx_amg *m, int l, spx_status st) {
  const int host = st == SPX_UNSUPPORTED || st == SPX_CUSPARSE || st == SPX_DEVICE_OUT_OF_MEMORY;
  snprintf(m->rep.gpu_note, sizeof m->rep.gpu_note, "from level %d's %s on (the GPU path failed): %.130s", l,
           m->lv[l].p_gpu ? "RAP" : "P", spx_last_error());
  spx__amg_gpu_free_level(m, l);
  m->lv[l].rap_gpu = 0; /* p_gpu stays: a P made on the GPU is the host's P now */
  m->gpu_off = 1;
  if (host) spx_clear_error();
  return host;
}

void spx__amg_gpu_free(spx_amg *m) {
  const spx__cusparse_api *sp;
  int l, pushed;
  for (l = 0; l < SPX_AMG_MAX_LEVELS; l++) spx__amg_gpu_free_level(m, l);
  if (!m->lv[0].dA && !m->sph) return;
  sp = spx__cusparse();
  pushed = spx__ctx_push(m->ctx) == SPX_OK;
  if (m->lv[0].dA) { /* the one upload; the levels below were products */
    spx__amg_dcsr_free(m, sp, m->lv[0].dA);
    SPX_FREE(m->lv[0].dA);
    m->lv[0].dA = NULL;
  }
  if (m->sph && sp && pushed) (void)sp->cusparseDestroy(m->sph);
  m->sph = NULL;
  if (pushed) spx__ctx_pop(m->ctx);
}
