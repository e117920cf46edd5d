/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/amg_levels.h: what AMG's rooms (amg_gpu_impl.h, amg_setup_impl.h, amg_smooth_impl.h,
 * amg_impl.h, bottom up in spx.h) give the rooms above them: the hierarchy (struct spx_amg and its
 * levels), the host loops' pragma, the kernels of templates/amg.cu, a sparsity pattern, then each
 * room's functions. Each section names the file that defines it; a room calls only the sections before
 * its own. Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_AMG_LEVELS_H
#define SPX_INTERNAL_AMG_LEVELS_H

#include "common.h"
#include "cuda_types.h"
#include "../amg.h"
#include "../device.h"

/* Host loops over n_ elements run in parallel past this many (each element on its own: the results
 * do not depend on the thread count). */
#if defined(_OPENMP)
#define SPX__AMG_FOR _Pragma("omp parallel for schedule(static) if (n_ > 16384)")
#else
#define SPX__AMG_FOR
#endif

/* Threads per block of every amg kernel (SPX_BLOCK of the template). */
#define SPX__AMG_BLOCK 256

/* The kernels of templates/amg.cu. _(ENUM, "kernel name") */
#define SPX__AMG_KERNELS(_)  \
  _(JACOBI, "spx_amg_jacobi") \
  _(CHEB,   "spx_amg_cheb")   \
  _(GS,     "spx_amg_gs")     \
  _(PUT,    "spx_amg_put")    \
  _(DOT,    "spx_amg_dot")

enum {
#define SPX__AMG_KENUM(e, name) SPX__AK_##e,
  SPX__AMG_KERNELS(SPX__AMG_KENUM)
#undef SPX__AMG_KENUM
  SPX__AK_COUNT
};
/* Their names, in enum order (amg_smooth_impl.h). */
extern const char *const spx__amg_knames[];

/* ---- The hierarchy ---------------------------------------------------------------------------- */
/* A CSR matrix on the device as cuSPARSE's SpGEMM takes it (32-bit offsets and columns, double
 * values) and its descriptor (NULL until made). */
typedef struct spx__amg_dcsr {
  int64_t rows, cols, nnz;
  spx_devptr rp, ci, val;
  spx__cusparseSpMatDescr_t mat;
} spx__amg_dcsr;

/* One product C = A B of cuSPARSE's SpGEMM reuse API: its descriptor and the two buffers its
 * numeric phase reads (buffers 1 to 3 go with the symbolic phase). */
typedef struct spx__amg_gemm {
  spx__cusparseSpGEMMDescr_t d;
  spx_devptr buf4, buf5;
} spx__amg_gemm;

/* A level whose Galerkin product ran on the GPU: P, R and A P on the device with the two
 * products' states, kept so that spx_amg_update recomputes values only (amg_gpu_impl.h). */
typedef struct spx__amg_gpu {
  spx__amg_dcsr P, R, AP;
  spx__amg_gemm ap, rap;
} spx__amg_gpu;

typedef struct spx__amg_level {
  spx_csr *A, *P, *R;        /* host, double; P, R NULL on the coarsest */
  spx_csr *AP;               /* A P, kept for spx_amg_update's numeric products (NULL on the coarsest) */
  int32_t *agg;              /* rows -> aggregate (NULL on the coarsest) */
  double *dinv;              /* the smoother's inverse diagonal (l1jacobi: 1 / sum_j |a_ij|) */
  int smoother, pre, post;
  double w, rho;             /* damping; chebyshev's upper end */
  /* gs: the rows in color order (row k of C is row perm[k] of A), colors at coff[c] .. coff[c+1] */
  int ncolors;
  int32_t *color, *perm;
  int64_t *coff;
  spx_csr *C;
  spx_plan *pA, *pP, *pR;
  void *x, *b, *r, *t;       /* vectors: host arrays or device pointers (level 0: x, b the caller's) */
  spx_devptr ddinv, dsp, dcol, dval, dperm; /* CUDA: dinv and the gs slices (spx__amg_slices) */
  int64_t *soff;             /* CUDA gs: color c's first slice */
  /* CUDA setup on the GPU (amg_gpu_impl.h): A on the device (level 0 uploaded, level l + 1 the
   * product of level l's gpu), level l's device products (NULL: its A_c came from the host), and
   * where P and R (p_gpu) and the next level's A (rap_gpu) were formed (1: the GPU) */
  spx__amg_dcsr *dA;
  spx__amg_gpu *gpu;
  int p_gpu, rap_gpu;
} spx__amg_level;

struct spx_amg {
  spx_context *ctx;
  int own_ctx, cuda, nl;
  int broken;                /* a failed spx_amg_update left the levels inconsistent: no cycles */
  spx_amg_options o;
  spx_plan_options po;       /* every level's plan options (o.plan copied: update makes plans again) */
  spx_plan_device pdev;      /* po.device's copy, when given */
  spx__amg_level lv[SPX_AMG_MAX_LEVELS];
  double *lu;                /* the coarsest level's dense LU (row-major), NULL when smoothed */
  int32_t *piv;
  double *hb, *hx;           /* CUDA: the coarsest b and x on the host */
  void *fn[SPX__AK_COUNT];   /* CUDA kernels */
  unsigned grid;
  spx_devptr part;           /* CUDA: the dot's per-block sums */
  double *hpart;
  int64_t spmv0;             /* fine-level SpMVs of A (spx_amg_solve's report) */
  spx__cusparseHandle_t sph; /* CUDA setup on the GPU: cuSPARSE's handle (NULL until a level needs it) */
  int gpu_off;               /* the GPU setup cannot run or failed: the levels left go to the host (rep.gpu_note) */
  spx_amg_report rep;
};

/* Vectors are void * on both backends: a host array, or a device pointer cast. */
#define SPX__AMG_DP(v) ((spx_devptr)(uintptr_t)(v))
#define SPX__AMG_VP(d) ((void *)(uintptr_t)(d))

/* A pattern: row pointers and columns (the strength graph, the coloring's adjacency). */
typedef struct spx__amg_graph {
  int64_t n;
  int64_t *rp;
  int32_t *ci;
} spx__amg_graph;

/* ---- amg_gpu_impl.h: the setup's products on the GPU ------------------------------------------- */
/* Level l forms P, R and the next level's A on the GPU: CUDA, gpu_setup_rows > 0, the level that
 * large, and the GPU setup not turned off (by a missing cuSPARSE entry point or a failure). */
int spx__amg_gpu_wanted(const spx_amg *m, int l);
/* P = F T (F: I - omega D_F^-1 A_F; NULL when P is T itself) and R = P^T on the device, their host
 * copies into L->P and L->R. */
spx_status spx__amg_gpu_prolong(spx_amg *m, int l, const spx_csr *F, const spx_csr *T);
/* A_c = R (A P) on the device from level l's P and R there (L->gpu), its host copy into the next
 * level's A; the products' states kept for spx__amg_gpu_update. */
spx_status spx__amg_gpu_rap(spx_amg *m, int l);
/* Level l's Galerkin values again (its A's values on the host new; level 0's go up first): the
 * numeric phases only, A_c's values down into the next level's A. */
spx_status spx__amg_gpu_update(spx_amg *m, int l);
/* After a failure of the GPU path at level l: its message kept in the report's note, level l's
 * device products freed, the GPU setup off for the levels left (the host forms what level l still
 * lacks). Returns 1 when the host can take over (the failure was cuSPARSE's, the device's memory
 * or an unsupported case), else 0 (fail). */
int spx__amg_gpu_fallback(spx_amg *m, int l, spx_status st);
/* Level l's device state (and its A on the device); the handle with m. */
void spx__amg_gpu_free_level(spx_amg *m, int l);
void spx__amg_gpu_free(spx_amg *m);

/* ---- amg_setup_impl.h: the levels, on the host ------------------------------------------------ */
/* x is finite (not NaN, not an infinity). */
int spx__amg_finite(double x);
void spx__amg_graph_free(spx__amg_graph *g);
/* rp[0..n] from per-row counts in rp[1..n] (exclusive prefix sum in place). */
void spx__amg_scan(int64_t *rp, int64_t n);
/* The diagonal a_ii of each row; a zero or non-finite one is SPX_INVALID_ARGUMENT naming it. */
spx_status spx__amg_diag(const char *fn, const spx_csr *A, int level, double *d);
/* An upper estimate of rho(D^-1 A) for A whose diagonal is d: iters power iterations, capped by
 * the Gershgorin bound. */
spx_status spx__amg_rho(const spx_csr *A, const double *d, int iters, double *rho);
/* The values of C = A B into C's pattern (a product of matrices of the same patterns), bit for bit
 * those of the product that made it. */
spx_status spx__amg_spgemm_values(const spx_csr *A, const spx_csr *B, spx_csr *C);
/* Level l's aggregates, P, R and the next level's A from A and its diagonal d (*stalled: the
 * aggregates were too many; *rhoA: rho(D^-1 A) when it came out on the way, else -1). */
spx_status spx__amg_coarsen(spx_amg *m, int l, const double *d, int *stalled, double *rhoA);
/* The coarsest level's dense LU with partial pivoting (*zeros: pivots taken as zero), and x = A^-1 b
 * through it (x may be b). */
spx_status spx__amg_lu(const spx_csr *A, double **lu_out, int32_t **piv_out, int64_t *zeros);
void spx__amg_lu_solve(int64_t n, const double *lu, const int32_t *piv, const double *b, double *x);

/* ---- amg_smooth_impl.h: smoothers and the vector operations ----------------------------------- */
/* The values of level l's smoother from its diagonal d (L->dinv allocated), and the whole smoother
 * (the inverse diagonal, rho, the coloring and the color-ordered rows). */
spx_status spx__amg_smoother_values(spx_amg *m, int l, const double *d, double rhoA);
spx_status spx__amg_smoother_setup(spx_amg *m, int l, const double *d, double rhoA);
/* y = alpha p x + beta y (counts the fine level's SpMVs); r = b - A x on level l; *out = a.b. */
spx_status spx__amg_spmv(spx_amg *m, spx_plan *p, double alpha, const void *x, double beta, void *y);
spx_status spx__amg_resid(spx_amg *m, int l, const void *b, const void *x, void *r);
spx_status spx__amg_dot(spx_amg *m, int64_t n, const void *a, const void *b, double *out);
/* sweeps applications of level l's smoother to A x = b (xzero: x is taken as 0, not read). */
spx_status spx__amg_smooth(spx_amg *m, int l, const void *b, void *x, int sweeps, int xzero);

#endif /* SPX_INTERNAL_AMG_LEVELS_H */
