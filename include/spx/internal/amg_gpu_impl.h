/* SPDX-License-Identifier: BSD-3-Clause */
/* AMG's setup on the GPU (amg_levels.h): a level large enough to pay runs its steps here, the
 * device twin of the host's (amg_setup_impl.h decides the side and keeps the host twins as the
 * reference and the fallback). A stays on the device from the level's start (level 0 goes up once,
 * a level below is the product of the one above) through its smoother's rho:
 *   diagonal, strength (mask and A_F's diagonal), MIS(2) aggregation (rounds of two kernels, a
 *   count down each round), rho of D_F^-1 A_F (power iteration, partial sums per block summed in
 *   a fixed order: no copy per step), P row by row (counts, scan, fill): templates/amg_setup.cu;
 *   R = P^T (row counts, scan, an unordered fill, each row sorted); A_c = R (A P) by cuSPARSE's
 *   generic SpGEMM (reuse API).
 * What comes down: d (the smoothers' diagonal), the aggregates, P, R and A_c (the plans and the
 * level view read host copies), and a few counts (weak entries, undecided rows, the scans' totals,
 * rho's state): each is what the next step needs to size its arrays, or a result.
 *
 * WHY THESE CALLS  P = F T needs no general product: T has one entry per row, so row i of F T is
 * row i of A_F with its columns mapped through the aggregates and merged (the kernel's row walk,
 * short rows). cuSPARSE's SpGEMM takes non-transposed CSR operands with 32-bit indices only,
 * so R A P is two products, A P then R (A P), with R made on the device from P by spx's kernels
 * (a transposed operand avoided; the host wants R for its plan anyway). The
 * reuse API splits a product into its symbolic phase (work estimation, row counts, the pattern's
 * copy) and its numeric one (compute), which reads the descriptor and buffers 4 and 5 only: those
 * are kept per product, so spx_amg_update runs compute alone (no symbolic phase again). Each
 * buffer is sized once by cuSPARSE's own query; 1 and 2 go after the row counts, 3 after the copy
 * (the device allocator caches freed blocks, so the next product reuses them without a
 * cuMemAlloc). CSR_ALG_DETERMINITIC gives the same values bit for bit run to run, so an update to
 * 2 A equals a fresh setup of 2 A, as on the host.
 *
 * PATTERNS AND VALUES  The kernels give the host twins' integers (strength, aggregates, P's
 * pattern) exactly and P's values bit for bit for the same omega; rho's sums run per block, so
 * omega agrees with the host's to rounding. cuSPARSE keeps every entry the product's pattern has
 * (a sum that cancels to 0 stays an entry), as the host's Gustavson product does, and its rows come
 * with sorted columns: the patterns are the host's exactly. Each download checks the rows' order
 * (one out of order fails over to the host, whose products sort). The products' sums run in
 * another order than the host's, so their values agree to rounding.
 *
 * Every call runs on the context's stream with its CUDA context pushed; the kernels are queued
 * without waits, and a step waits only where a count or a result comes down. */
#include "common.h"
#include "cuda_types.h"
#include "amg_levels.h"
#include "../amg.h"
#include "../csr.h"
#include "../device.h"
#include "../jit.h"
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

/* bytes (a multiple of 4) of p set to the 32-bit word v in the stream's order (no wait). */
static spx_status spx__amg_gpu_fill(spx_amg *m, spx_devptr p, unsigned v, size_t bytes) {
  const spx__cuda_api *cu = spx__cuda();
  if (!cu) return spx__fail(SPX_NOT_AVAILABLE, "spx_amg: no CUDA driver");
  return bytes ? spx__cu_check(cu->cuMemsetD32Async((spx__CUdeviceptr)p, v, bytes / 4, m->ctx->stream),
                               "cuMemsetD32Async")
               : SPX_OK;
}
#define spx__amg_gpu_zero(m, p, bytes) spx__amg_gpu_fill(m, p, 0u, bytes)

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

/* 32-bit indices hold a matrix of this many rows, columns and entries (SpGEMM and the setup's
 * kernels take nothing wider). */
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
  if ((st = spx__amg_gpu_zero(m, C->val, (size_t)C->nnz * sizeof(double)))) return st;
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

/* ---- The setup's kernels and the level's device arrays -------------------------------------------- */
static const char *const spx__amgs_knames[] = {
#define SPX__AMGS_KNAME(e, name) name,
    SPX__AMGS_KERNELS(SPX__AMGS_KNAME)
#undef SPX__AMGS_KNAME
};

/* The kernels of templates/amg_setup.cu (compiled once, then from the JIT's caches). */
static spx_status spx__amg_gpu_kernels(spx_amg *m) {
  static const char *const defs[1] = {"SPX_BLOCK=256"};
  int k;
  spx_status st;
  for (k = 0; k < SPX__AS_COUNT; k++)
    if (!m->sfn[k] && (st = spx_jit_kernel(m->ctx, "amg_setup", spx__amgs_knames[k], 1, defs, &m->sfn[k])))
      return st;
  return SPX_OK;
}

/* Setup kernel k on grid blocks of SPX__AMG_BLOCK threads, queued on the context's stream (the
 * caller has the context pushed). */
static spx_status spx__amg_gpu_run(spx_amg *m, int k, unsigned grid, void **params) {
  const spx__cuda_api *cu = spx__cuda();
  if (!cu) return spx__fail(SPX_NOT_AVAILABLE, "spx_amg: no CUDA driver");
  return spx__cu_check(cu->cuLaunchKernel((spx__CUfunction)m->sfn[k], grid, 1, 1, SPX__AMG_BLOCK, 1, 1, 0,
                                          m->ctx->stream, params, NULL),
                       spx__amgs_knames[k]);
}

/* SPX_PLAN_TRACE: the time since *t of level l's step on stderr, the stream drained first so that
 * it is the step's own (only while tracing: otherwise nothing waits here). */
static void spx__amg_gpu_mark(spx_amg *m, int l, const char *step, double *t) {
  double now;
  if (!spx__plan_tracing()) return;
  (void)spx_context_synchronize(m->ctx);
  now = spx__now();
  fprintf(stderr, "spx amg: level %d gpu %-18s %8.3f ms\n", l, step, 1e3 * (now - *t));
  *t = now;
}

void spx__amg_gpu_work_free(spx_amg *m) {
  spx__amg_gwork *w = &m->gw;
  spx_devptr *const p[] = {&w->d,    &w->dF,  &w->mask,  &w->sub,  &w->tup,   &w->t1,   &w->agg,   &w->flag,
                           &w->off,  &w->tiles, &w->size, &w->scale, &w->part, &w->state, &w->cnt};
  size_t k;
  for (k = 0; k < sizeof p / sizeof *p; k++) {
    spx_device_free(m->ctx, *p[k]);
    *p[k] = 0;
  }
}

/* Level l's device arrays (the last level's freed first: the allocator keeps their blocks) and
 * its row kernels' grid: a few blocks per SM, at most one per SPX__AMG_BLOCK rows. */
static spx_status spx__amg_gpu_work(spx_amg *m, int l) {
  spx__amg_gwork *w = &m->gw;
  const int64_t n = m->lv[l].A->nrows, nnz = m->lv[l].A->nnz, sms = m->ctx->info.sm_count;
  const int64_t g = (n + SPX__AMG_BLOCK - 1) / SPX__AMG_BLOCK, want = sms > 0 ? 8 * sms : 1024;
  const size_t vb = ((size_t)n + 1) * sizeof(double), ib = ((size_t)n + 1) * sizeof(int32_t);
  spx_status st;
  spx__amg_gpu_work_free(m);
  w->grid = (unsigned)SPX__MAX(1, SPX__MIN(g, SPX__MIN(want, 4096)));
  if ((st = spx__amg_gpu_alloc(m, vb, &w->d)) || (st = spx__amg_gpu_alloc(m, vb, &w->dF)) ||
      (st = spx__amg_gpu_alloc(m, (size_t)nnz, &w->mask)) || (st = spx__amg_gpu_alloc(m, (size_t)nnz, &w->sub)) ||
      (st = spx__amg_gpu_alloc(m, vb, &w->tup)) ||
      (st = spx__amg_gpu_alloc(m, vb, &w->t1)) || (st = spx__amg_gpu_alloc(m, ib, &w->agg)) ||
      (st = spx__amg_gpu_alloc(m, ib, &w->flag)) || (st = spx__amg_gpu_alloc(m, ib, &w->off)) ||
      (st = spx__amg_gpu_alloc(m, ((size_t)(n / SPX__AMG_TILE) + 2) * sizeof(int64_t), &w->tiles)) ||
      (st = spx__amg_gpu_alloc(m, (size_t)w->grid * 3 * sizeof(double), &w->part)) ||
      (st = spx__amg_gpu_alloc(m, 4 * sizeof(double), &w->state)) ||
      (st = spx__amg_gpu_alloc(m, 2 * sizeof(uint64_t), &w->cnt))) {
    spx__amg_gpu_work_free(m);
    return st;
  }
  w->l = l;
  return SPX_OK;
}

/* out = the exclusive scan of the n 32-bit counts in (out[n] the total, *total too): tiles, their
 * scan, then each tile's; a total past 32 bits is SPX_UNSUPPORTED (the host takes over). */
static spx_status spx__amg_gpu_scan(spx_amg *m, int64_t n, spx_devptr in, spx_devptr out, int64_t *total) {
  long long nn = n, nt = n / SPX__AMG_TILE + 1;
  spx_devptr tiles = m->gw.tiles;
  void *pt[] = {&nn, &in, &tiles}, *pp[] = {&nt, &tiles}, *pa[] = {&nn, &in, &tiles, &out};
  int64_t sum = 0;
  spx_status st;
  if ((st = spx__amg_gpu_run(m, SPX__AS_SCAN_TILES, (unsigned)nt, pt)) ||
      (st = spx__amg_gpu_run(m, SPX__AS_SCAN_TOP, 1, pp)) ||
      (st = spx_device_download(m->ctx, &sum, tiles + (spx_devptr)nt * sizeof(int64_t), sizeof sum)))
    return st;
  if (sum > INT32_MAX)
    return spx__fail(SPX_UNSUPPORTED, "spx_amg: a count on the GPU reached %lld, past the 32-bit indices of its "
                     "kernels", (long long)sum);
  *total = sum;
  return spx__amg_gpu_run(m, SPX__AS_SCAN_APPLY, (unsigned)nt, pa);
}

/* ---- The level's steps --------------------------------------------------------------------------- */
/* The device's level l: its A (rows, 32-bit offsets and columns, values) as kernel arguments. */
#define SPX__AMG_GPU_A(L) long long n = (L)->A->nrows; spx_devptr rp = (L)->dA->rp, ci = (L)->dA->ci, va = (L)->dA->val

spx_status spx__amg_gpu_diag(spx_amg *m, int l, double *d) {
  spx__amg_level *L = &m->lv[l];
  const spx__cusparse_api *sp;
  spx_status st;
  double t = spx__now();
  if ((st = spx__amg_gpu_enter(m, &sp))) return st;
  if (!(st = spx__amg_gpu_kernels(m))) spx__amg_gpu_mark(m, l, "kernels", &t);
  if (!st && !L->dA) { /* level 0 (or below a host level): A goes up */
    if (!(L->dA = (spx__amg_dcsr *)spx__calloc(1, sizeof *L->dA))) st = SPX_OUT_OF_MEMORY;
    else if (!(st = spx__amg_dcsr_up(m, sp, L->A, L->dA))) spx__amg_gpu_mark(m, l, "A up", &t);
  }
  if (!st && !(st = spx__amg_gpu_work(m, l))) {
    SPX__AMG_GPU_A(L);
    spx_devptr dd = m->gw.d;
    void *pr[] = {&n, &rp, &ci, &va, &dd};
    if (!(st = spx__amg_gpu_run(m, SPX__AS_DIAG, m->gw.grid, pr)))
      st = spx_device_download(m->ctx, d, dd, (size_t)n * sizeof(double));
    if (!st) spx__amg_gpu_mark(m, l, "arrays, diagonal", &t);
  }
  spx__ctx_pop(m->ctx);
  return st;
}

spx_status spx__amg_gpu_strength(spx_amg *m, int l, double theta, int64_t *weak) {
  spx__amg_level *L = &m->lv[l];
  spx__amg_gwork *w = &m->gw;
  const spx__cusparse_api *sp;
  uint64_t cnt = 0;
  double th2 = theta * theta;
  spx_status st;
  if ((st = spx__amg_gpu_enter(m, &sp))) return st;
  {
    SPX__AMG_GPU_A(L);
    spx_devptr d = w->d, mask = w->mask, dF = w->dF, c = w->cnt;
    void *pr[] = {&n, &rp, &ci, &va, &d, &th2, &mask, &dF, &c};
    double t = spx__now();
    if (!(st = spx__amg_gpu_zero(m, c, 2 * sizeof(uint64_t))) && !(st = spx__amg_gpu_run(m, SPX__AS_STRENGTH, w->grid, pr)))
      st = spx_device_download(m->ctx, &cnt, c, sizeof cnt);
    if (!st) spx__amg_gpu_mark(m, l, "strength", &t);
  }
  spx__ctx_pop(m->ctx);
  *weak = (int64_t)cnt;
  return st;
}

/* One MIS(2) pass over the rows still free and the entries in sub (spx__amg_mis2_pass's twin):
 * the start, rounds until no row is undecided (each decides at least the largest undecided tuple,
 * so at most n rounds; the undecided count comes down after each), the roots numbered from *next
 * (a scan), the rows joined. */
static spx_status spx__amg_gpu_mis_pass(spx_amg *m, spx__amg_level *L, spx_devptr sub, int minc, int64_t *next) {
  spx__amg_gwork *w = &m->gw;
  SPX__AMG_GPU_A(L);
  spx_devptr agg = w->agg, tup = w->tup, t1 = w->t1, flag = w->flag, off = w->off, und = w->cnt + sizeof(uint64_t);
  int next0 = (int)*next;
  void *pi[] = {&n, &rp, &ci, &sub, &agg, &minc, &tup}, *pm[] = {&n, &rp, &ci, &sub, &tup, &t1};
  void *pd[] = {&n, &rp, &ci, &sub, &t1, &tup, &und}, *pf[] = {&n, &tup, &flag};
  void *pj[] = {&n, &rp, &ci, &sub, &tup, &off, &next0, &agg};
  uint64_t left = 1;
  int64_t round, roots = 0;
  spx_status st = spx__amg_gpu_run(m, SPX__AS_MIS_INIT, w->grid, pi);
  (void)va;
  for (round = 0; !st && left > 0; round++) {
    if (round > n) return spx__fail(SPX_INTERNAL, "spx_amg: the MIS(2) rounds did not end");
    if (!(st = spx__amg_gpu_zero(m, und, sizeof(uint64_t))) && !(st = spx__amg_gpu_run(m, SPX__AS_MIS_MAX, w->grid, pm)) &&
        !(st = spx__amg_gpu_run(m, SPX__AS_MIS_DECIDE, w->grid, pd)))
      st = spx_device_download(m->ctx, &left, und, sizeof left);
  }
  if (st || (st = spx__amg_gpu_run(m, SPX__AS_ROOT_FLAG, w->grid, pf)) || (st = spx__amg_gpu_scan(m, n, flag, off, &roots)))
    return st;
  if (spx__plan_tracing())
    fprintf(stderr, "spx amg: MIS(2) pass (at least %d free neighbours): %lld rounds, %lld roots\n", minc, (long long)round,
            (long long)roots);
  if (*next + roots > INT32_MAX) return spx__fail(SPX_UNSUPPORTED, "spx_amg: too many aggregates for 32-bit indices");
  *next += roots;
  return spx__amg_gpu_run(m, SPX__AS_MIS_JOIN, w->grid, pj);
}

/* The MIS(2) rule's passes (spx__amg_aggregate's twin): the first over every row, the second over
 * the rows left and the entries among them, then pass 2 (a row left joins the smallest aggregate
 * among its strong neighbours) and pass 3 (the rows left on their own, numbered after: a scan). */
static spx_status spx__amg_gpu_mis2(spx_amg *m, spx__amg_level *L, int64_t *nagg) {
  spx__amg_gwork *w = &m->gw;
  SPX__AMG_GPU_A(L);
  spx_devptr mask = w->mask, sub = w->sub, agg = w->agg, flag = w->flag, off = w->off, size = 0;
  int64_t next = 0, single = 0;
  int next0 = 0;
  void *pb[] = {&n, &rp, &ci, &mask, &agg, &sub}, *pz[] = {&n, &agg, &size};
  void *pa[] = {&n, &rp, &ci, &mask, &size, &agg}, *ps[] = {&n, &agg, &flag}, *pe[] = {&n, &off, &next0, &agg};
  spx_status st;
  (void)va;
  if ((st = spx__amg_gpu_fill(m, agg, 0xFFFFFFFFu, (size_t)n * sizeof(int32_t))) ||
      (st = spx__amg_gpu_mis_pass(m, L, mask, 1, &next)) || (st = spx__amg_gpu_run(m, SPX__AS_SUB, w->grid, pb)) ||
      (st = spx__amg_gpu_mis_pass(m, L, sub, SPX__AMG_MIS2_MIN, &next)) ||
      (st = spx__amg_gpu_alloc(m, ((size_t)next + 1) * sizeof(int32_t), &w->size)))
    return st;
  size = w->size;
  if ((st = spx__amg_gpu_zero(m, size, (size_t)next * sizeof(int32_t))) ||
      (st = spx__amg_gpu_run(m, SPX__AS_AGG_SIZE, w->grid, pz)) || (st = spx__amg_gpu_run(m, SPX__AS_AGG_ATTACH, w->grid, pa)) ||
      (st = spx__amg_gpu_run(m, SPX__AS_SINGLE_FLAG, w->grid, ps)) || (st = spx__amg_gpu_scan(m, n, flag, off, &single)))
    return st;
  if (next + single > INT32_MAX) return spx__fail(SPX_UNSUPPORTED, "spx_amg: too many aggregates for 32-bit indices");
  next0 = (int)next;
  *nagg = next + single;
  spx_device_free(m->ctx, w->size); /* P sizes its own per aggregate */
  w->size = 0;
  return spx__amg_gpu_run(m, SPX__AS_AGG_FINAL, w->grid, pe);
}

spx_status spx__amg_gpu_aggregate(spx_amg *m, int l, int32_t *agg, int64_t *nagg) {
  spx__amg_level *L = &m->lv[l];
  const spx__cusparse_api *sp;
  spx_status st;
  double t = spx__now();
  if ((st = spx__amg_gpu_enter(m, &sp))) return st;
  if (!(st = spx__amg_gpu_mis2(m, L, nagg))) {
    spx__amg_gpu_mark(m, l, "MIS(2) aggregates", &t);
    if (!(st = spx_device_download(m->ctx, agg, m->gw.agg, (size_t)L->A->nrows * sizeof(int32_t))))
      spx__amg_gpu_mark(m, l, "aggregates down", &t);
  }
  spx__ctx_pop(m->ctx);
  return st;
}

spx_status spx__amg_gpu_mask_down(spx_amg *m, int l, uint8_t *mask) {
  return spx_device_download(m->ctx, mask, m->gw.mask, (size_t)m->lv[l].A->nnz);
}

spx_status spx__amg_gpu_agg_up(spx_amg *m, int l, const int32_t *agg) {
  return spx_device_upload(m->ctx, m->gw.agg, agg, (size_t)m->lv[l].A->nrows * sizeof(int32_t));
}

spx_status spx__amg_gpu_rho(spx_amg *m, int l, int filtered, const double *d, int iters, double *lam, double *gersh) {
  spx__amg_level *L = &m->lv[l];
  spx__amg_gwork *w = &m->gw;
  const spx__cusparse_api *sp;
  double state[4] = {0, 0, 0, 0}, t = spx__now();
  spx_status st;
  if (!L->dA || (filtered && (!w->d || w->l != l)))
    return spx__fail(SPX_INTERNAL, "spx_amg: level %d's operator is not on the device for rho", l);
  if ((st = spx__amg_gpu_enter(m, &sp))) return st;
  if ((!w->d || w->l != l) && !(st = spx__amg_gpu_work(m, l))) /* an update's smoother: d goes up */
    st = spx_device_upload(m->ctx, w->d, d, (size_t)L->A->nrows * sizeof(double));
  if (!st) {
    SPX__AMG_GPU_A(L);
    spx_devptr mask = filtered ? w->mask : 0, dd = filtered ? w->dF : w->d, x = w->tup, y = w->t1;
    spx_devptr part = w->part, sta = w->state;
    int nb = (int)w->grid, k;
    void *pg[] = {&n, &rp, &ci, &va, &mask, &dd, &part}, *pgm[] = {&nb, &part, &sta}, *px[] = {&n, &x};
    void *ps[] = {&n, &rp, &ci, &va, &mask, &dd, &x, &y, &sta, &part}, *pu[] = {&nb, &part, &sta};
    void *pc[] = {&n, &y, &dd, &sta, &x};
    if (!(st = spx__amg_gpu_zero(m, sta, sizeof state)) && !(st = spx__amg_gpu_run(m, SPX__AS_GERSH, w->grid, pg)))
      st = spx__amg_gpu_run(m, SPX__AS_GERSH_MAX, 1, pgm);
    if (!st && iters > 0 && n > 0) st = spx__amg_gpu_run(m, SPX__AS_RHO_START, w->grid, px);
    for (k = 0; !st && n > 0 && k < iters; k++)
      if (!(st = spx__amg_gpu_run(m, SPX__AS_RHO_STEP, w->grid, ps)) && !(st = spx__amg_gpu_run(m, SPX__AS_RHO_SUM, 1, pu)))
        st = spx__amg_gpu_run(m, SPX__AS_RHO_SCALE, w->grid, pc);
    if (!st) st = spx_device_download(m->ctx, state, sta, sizeof state);
  }
  if (!st) spx__amg_gpu_mark(m, l, filtered ? "rho_F" : "rho", &t);
  spx__ctx_pop(m->ctx);
  *lam = iters > 0 && L->A->nrows > 0 ? state[0] : 0;
  *gersh = state[3];
  return st;
}

/* P's pattern and values on the device (G->P): the tentative scales, the row counts, their scan,
 * the rows. */
static spx_status spx__amg_gpu_p(spx_amg *m, const spx__cusparse_api *sp, spx__amg_level *L, int64_t nagg,
                                 double omega, int plain) {
  spx__amg_gwork *w = &m->gw;
  spx__amg_dcsr *P = &L->gpu->P;
  SPX__AMG_GPU_A(L);
  long long na = nagg;
  spx_devptr mask = w->mask, dF = w->dF, agg = w->agg, flag = w->flag, size, scale;
  void *pz[] = {&n, &agg, &size}, *pc[] = {&na, &size, &scale}, *pn[] = {&n, &rp, &ci, &mask, &agg, &plain, &flag};
  void *pf[] = {&n, &rp, &ci, &va, &mask, &dF, &agg, &scale, &omega, &plain, &P->rp, &P->ci, &P->val};
  int64_t nnz = 0;
  spx_status st;
  memset(P, 0, sizeof *P);
  P->rows = n;
  P->cols = nagg;
  if ((st = spx__amg_gpu_alloc(m, ((size_t)nagg + 1) * sizeof(int32_t), &w->size)) ||
      (st = spx__amg_gpu_alloc(m, ((size_t)nagg + 1) * sizeof(double), &w->scale)) ||
      (st = spx__amg_gpu_alloc(m, ((size_t)n + 1) * sizeof(int32_t), &P->rp)))
    return st;
  size = w->size;
  scale = w->scale;
  if ((st = spx__amg_gpu_zero(m, size, (size_t)nagg * sizeof(int32_t))) ||
      (st = spx__amg_gpu_run(m, SPX__AS_AGG_SIZE, w->grid, pz)) || (st = spx__amg_gpu_run(m, SPX__AS_AGG_SCALE, w->grid, pc)) ||
      (st = spx__amg_gpu_run(m, SPX__AS_P_COUNT, w->grid, pn)) || (st = spx__amg_gpu_scan(m, n, flag, P->rp, &nnz)))
    return st;
  P->nnz = nnz;
  if ((st = spx__amg_gpu_alloc(m, (size_t)nnz * sizeof(int32_t), &P->ci)) ||
      (st = spx__amg_gpu_alloc(m, (size_t)nnz * sizeof(double), &P->val)) ||
      (st = spx__amg_gpu_run(m, SPX__AS_P_FILL, w->grid, pf)))
    return st;
  return spx__amg_dcsr_descr(sp, P);
}

/* R = P^T on the device (templates/amg_setup.cu: R's row lengths, their scan, an unordered fill,
 * each row sorted): rows of R in order, each row's columns increasing, the host transpose's arrays
 * bit for bit. */
static spx_status spx__amg_gpu_transpose(spx_amg *m, const spx__cusparse_api *sp, const spx__amg_dcsr *P,
                                         spx__amg_dcsr *R) {
  spx__amg_gwork *w = &m->gw;
  long long n = P->rows, nr = P->cols;
  spx_devptr cnt = 0, cur = 0;
  int64_t nnz = 0;
  void *pc[] = {&n, (void *)&P->rp, (void *)&P->ci, &cnt};
  void *pf[] = {&n, (void *)&P->rp, (void *)&P->ci, (void *)&P->val, &R->rp, &cur, &R->ci, &R->val};
  void *ps[] = {&nr, &R->rp, &R->ci, &R->val};
  spx_status st;
  memset(R, 0, sizeof *R);
  R->rows = P->cols;
  R->cols = P->rows;
  R->nnz = P->nnz;
  if ((st = spx__amg_gpu_alloc(m, ((size_t)nr + 1) * sizeof(int32_t), &R->rp)) ||
      (st = spx__amg_gpu_alloc(m, (size_t)R->nnz * sizeof(int32_t) + 1, &R->ci)) ||
      (st = spx__amg_gpu_alloc(m, (size_t)R->nnz * sizeof(double) + 1, &R->val)) ||
      (st = spx__amg_gpu_alloc(m, ((size_t)nr + 1) * sizeof(int32_t), &cnt)) ||
      (st = spx__amg_gpu_alloc(m, ((size_t)nr + 1) * sizeof(int32_t), &cur)) ||
      (st = spx__amg_gpu_zero(m, cnt, (size_t)nr * sizeof(int32_t))) ||
      (st = spx__amg_gpu_zero(m, cur, (size_t)nr * sizeof(int32_t))) ||
      (st = spx__amg_gpu_run(m, SPX__AS_T_COUNT, w->grid, pc)) || (st = spx__amg_gpu_scan(m, nr, cnt, R->rp, &nnz)))
    goto done;
  if (nnz != P->nnz) {
    st = spx__fail(SPX_INTERNAL, "spx_amg: the transpose counted %lld entries of P's %lld", (long long)nnz,
                   (long long)P->nnz);
    goto done;
  }
  if ((st = spx__amg_gpu_run(m, SPX__AS_T_FILL, w->grid, pf)) || (st = spx__amg_gpu_run(m, SPX__AS_T_SORT, w->grid, ps)))
    goto done;
  st = spx__amg_dcsr_descr(sp, R);
done:
  spx_device_free(m->ctx, cnt);
  spx_device_free(m->ctx, cur);
  return st;
}

spx_status spx__amg_gpu_prolong(spx_amg *m, int l, int64_t nagg, double omega, int plain) {
  spx__amg_level *L = &m->lv[l];
  const spx__cusparse_api *sp;
  spx_csr *P = NULL, *R = NULL;
  double t = spx__now();
  spx_status st;
  if ((st = spx__amg_gpu_enter(m, &sp))) return st;
  if (!L->gpu && !(L->gpu = (spx__amg_gpu *)spx__calloc(1, sizeof *L->gpu))) st = SPX_OUT_OF_MEMORY;
  if (!st && !(st = spx__amg_gpu_p(m, sp, L, nagg, omega, plain))) spx__amg_gpu_mark(m, l, "P", &t);
  if (!st && !(st = spx__amg_gpu_transpose(m, sp, &L->gpu->P, &L->gpu->R))) spx__amg_gpu_mark(m, l, "R = P^T", &t);
  if (!st && !(st = spx__amg_dcsr_down(m, &L->gpu->P, &P))) spx__amg_gpu_mark(m, l, "P down", &t);
  if (!st && !(st = spx__amg_dcsr_down(m, &L->gpu->R, &R))) spx__amg_gpu_mark(m, l, "R down", &t);
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
  double t = spx__now();
  spx_status st;
  if (!G) return spx__fail(SPX_INTERNAL, "spx_amg: level %d's P is not on the device", l);
  if ((st = spx__amg_gpu_enter(m, &sp))) return st;
  if (!L->dA) { /* level 0 (or below a host level): A goes up */
    if (!(L->dA = (spx__amg_dcsr *)spx__calloc(1, sizeof *L->dA))) st = SPX_OUT_OF_MEMORY;
    else st = spx__amg_dcsr_up(m, sp, L->A, L->dA);
  }
  if (!st && !(N->dA = (spx__amg_dcsr *)spx__calloc(1, sizeof *N->dA))) st = SPX_OUT_OF_MEMORY;
  if (!st && !(st = spx__amg_gemm_make(m, sp, L->dA, &G->P, &G->AP, &G->ap))) spx__amg_gpu_mark(m, l, "A P (SpGEMM)", &t);
  if (!st && !(st = spx__amg_gemm_make(m, sp, &G->R, &G->AP, N->dA, &G->rap))) spx__amg_gpu_mark(m, l, "R (A P) (SpGEMM)", &t);
  if (!st && !(st = spx__amg_dcsr_down(m, N->dA, &Ac))) spx__amg_gpu_mark(m, l, "A_c down", &t);
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

int spx__amg_gpu_fallback(spx_amg *m, int l, const char *step, spx_status st) {
  const int host = st == SPX_UNSUPPORTED || st == SPX_CUSPARSE || st == SPX_DEVICE_OUT_OF_MEMORY;
  snprintf(m->rep.gpu_note, sizeof m->rep.gpu_note, "from level %d's %s on (the GPU path failed): %.130s", l, step,
           spx_last_error());
  spx__amg_gpu_free_level(m, l);
  spx__amg_gpu_work_free(m);
  m->lv[l].setup_gpu = 0;
  m->gpu_off = 1;
  if (host) spx_clear_error();
  return host;
}

void spx__amg_gpu_free(spx_amg *m) {
  const spx__cusparse_api *sp;
  int l, pushed;
  for (l = 0; l < SPX_AMG_MAX_LEVELS; l++) spx__amg_gpu_free_level(m, l);
  spx__amg_gpu_work_free(m);
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
