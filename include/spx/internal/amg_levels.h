/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/amg_levels.h: what AMG's rooms (amg_setup_impl.h, amg_smooth_impl.h, amg_impl.h,
 * bottom up in spx.h) give the rooms above them: the hierarchy (struct spx_amg and its levels), the
 * host loops' pragma, the kernels of templates/amg.cu, a sparsity pattern, then each room's
 * functions. Each section names the file that defines it; a room calls only the sections before
 * its own. Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_AMG_LEVELS_H
#define SPX_INTERNAL_AMG_LEVELS_H

#include "common.h"
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
