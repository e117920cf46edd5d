/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/amg_levels.h: what AMG's rooms (amg_gpu_impl.h, amg_setup_impl.h, amg_rs_impl.h,
 * amg_smooth_impl.h, amg_impl.h, bottom up in spx.h) give the rooms above them: the hierarchy (struct spx_amg and its
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
/* A thread's failure (its scratch not allocated) flagged for the loop's end: flag = v, atomic. */
#if defined(_OPENMP)
#define SPX__AMG_FLAG(flag, v) do { _Pragma("omp atomic write") flag = v; } while (0)
#else
#define SPX__AMG_FLAG(flag, v) ((flag) = (v))
#endif
/* Row loops whose work is the rows' nonzeros also run in parallel past this many nonzeros: a
 * coarse level has few rows, each long. */
#define SPX__AMG_PAR_NNZ 131072

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

/* The setup's kernels of templates/amg_setup.cu (amg_gpu_impl.h). _(ENUM, "kernel name") */
#define SPX__AMGS_KERNELS(_)                 \
  _(DIAG,        "spx_amgs_diag")            \
  _(STRENGTH,    "spx_amgs_strength")        \
  _(SUB,         "spx_amgs_sub")             \
  _(MIS_INIT,    "spx_amgs_mis_init")        \
  _(MIS_MAX,     "spx_amgs_mis_max")         \
  _(MIS_DECIDE,  "spx_amgs_mis_decide")      \
  _(ROOT_FLAG,   "spx_amgs_root_flag")       \
  _(MIS_JOIN,    "spx_amgs_mis_join")        \
  _(AGG_ATTACH,  "spx_amgs_agg_attach")      \
  _(SINGLE_FLAG, "spx_amgs_single_flag")     \
  _(AGG_FINAL,   "spx_amgs_agg_final")       \
  _(AGG_SIZE,    "spx_amgs_agg_size")        \
  _(AGG_SCALE,   "spx_amgs_agg_scale")       \
  _(P_COUNT,     "spx_amgs_p_count")         \
  _(P_FILL,      "spx_amgs_p_fill")          \
  _(RHO_START,   "spx_amgs_rho_start")       \
  _(RHO_STEP,    "spx_amgs_rho_step")        \
  _(RHO_SUM,     "spx_amgs_rho_sum")         \
  _(RHO_SCALE,   "spx_amgs_rho_scale")       \
  _(GERSH,       "spx_amgs_gersh")           \
  _(GERSH_MAX,   "spx_amgs_gersh_max")       \
  _(SCAN_TILES,  "spx_amgs_scan_tiles")      \
  _(SCAN_TOP,    "spx_amgs_scan_top")        \
  _(SCAN_APPLY,  "spx_amgs_scan_apply")      \
  _(T_COUNT,     "spx_amgs_t_count")         \
  _(T_FILL,      "spx_amgs_t_fill")          \
  _(T_SORT,      "spx_amgs_t_sort")

enum {
#define SPX__AMGS_KENUM(e, name) SPX__AS_##e,
  SPX__AMGS_KERNELS(SPX__AMGS_KENUM)
#undef SPX__AMGS_KENUM
  SPX__AS_COUNT
};

/* A root of the MIS(2) rule's second pass needs this many free strong neighbours: an aggregate of
 * at least the size a first-pass root makes on a 7-point stencil; smaller ones raise the operator
 * complexity without helping the convergence. */
#define SPX__AMG_MIS2_MIN 6

/* Counts per tile of the setup's scan (SPX_TILE of the template: 8 per thread). */
#define SPX__AMG_TILE (8 * SPX__AMG_BLOCK)

/* MIS(2) states, a tuple's top two bits: (state, 31-bit hash of the row, row), compared whole. */
#define SPX__AMG_OUT 0u
#define SPX__AMG_UND 1u
#define SPX__AMG_IN 2u

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

/* The device arrays of the level being set up on the GPU (amg_gpu_impl.h), made with its diagonal
 * and kept through its smoother's rho; the next level's replace them. n of each unless said. */
typedef struct spx__amg_gwork {
  int l;                     /* their level (while d is not 0: none made otherwise) */
  unsigned grid;             /* blocks of the row kernels: fixed by the level's size and the device,
                                so that rho's per-block sums are the same run to run */
  spx_devptr d, dF;          /* A's diagonal; A_F's (lumped) */
  spx_devptr mask, sub;      /* nnz bytes: 1 where the entry is a strong off-diagonal; the same
                                between rows still free (the MIS(2) rule's second pass) */
  spx_devptr tup, t1;        /* MIS(2) tuples (64-bit); then rho's x and y (double) */
  spx_devptr agg, flag, off; /* aggregates; a scan's input and output (n + 1) */
  spx_devptr tiles;          /* the scan's per-tile sums (64-bit, n / tile + 2) */
  spx_devptr size, scale;    /* per aggregate: rows, the tentative P's column scale */
  spx_devptr part, state;    /* rho's per-block partials (3 a block), its state (4 doubles) */
  spx_devptr cnt;            /* two 64-bit counters: weak entries, undecided rows */
} spx__amg_gwork;

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
   * where each step ran (1: the GPU): the diagonal (setup_gpu: the level's steps go to the GPU),
   * strength and aggregation, rho_F with P and R, the next level's A, the smoother's rho */
  spx__amg_dcsr *dA;
  spx__amg_gpu *gpu;
  int setup_gpu, agg_gpu, p_gpu, rap_gpu, rho_gpu;
  int mis2;                  /* the aggregates by the MIS(2) rule (else the greedy one) */
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
  void *sfn[SPX__AS_COUNT];  /* the setup's kernels (NULL until a level needs them) */
  spx__amg_gwork gw;         /* the device arrays of the level set up on the GPU */
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

/* ---- amg_gpu_impl.h: the setup on the GPU ------------------------------------------------------ */
/* Level l runs its setup steps on the GPU: CUDA, gpu_setup_rows > 0, the level that large, and the
 * GPU setup not turned off (by a missing cuSPARSE entry point or a failure). */
int spx__amg_gpu_wanted(const spx_amg *m, int l);
/* Level l's diagonal on the GPU into host d (A goes up first where the device lacks it; the level's
 * device arrays made): the start of a level set up there. */
spx_status spx__amg_gpu_diag(spx_amg *m, int l, double *d);
/* The strength of level l (theta) on the device: mask and A_F's diagonal kept there; *weak. */
spx_status spx__amg_gpu_strength(spx_amg *m, int l, double theta, int64_t *weak);
/* The MIS(2) aggregation on the device: its aggregates into host agg (n), *nagg. */
spx_status spx__amg_gpu_aggregate(spx_amg *m, int l, int32_t *agg, int64_t *nagg);
/* The strength mask down (for the host's greedy aggregation), and aggregates up from the host. */
spx_status spx__amg_gpu_mask_down(spx_amg *m, int l, uint8_t *mask);
spx_status spx__amg_gpu_agg_up(spx_amg *m, int l, const int32_t *agg);
/* The power iteration for rho of D^-1 A (filtered 0: host d goes up unless the device has level
 * l's) or of D_F^-1 A_F (filtered 1: after the strength) on the device, the twin of spx__amg_rho's
 * to rounding: *lam the last Rayleigh quotient (0 when iters is 0), *gersh the Gershgorin bound. */
spx_status spx__amg_gpu_rho(spx_amg *m, int l, int filtered, const double *d, int iters, double *lam, double *gersh);
/* P = (I - omega D_F^-1 A_F) T (plain: T) and R = P^T on the device from the aggregates there,
 * their host copies into L->P and L->R; L->gpu made. */
spx_status spx__amg_gpu_prolong(spx_amg *m, int l, int64_t nagg, double omega, int plain);
/* A_c = R (A P) on the device from level l's P and R there (L->gpu), its host copy into the next
 * level's A; the products' states kept for spx__amg_gpu_update. */
spx_status spx__amg_gpu_rap(spx_amg *m, int l);
/* Level l's Galerkin values again (its A's values on the host new; level 0's go up first): the
 * numeric phases only, A_c's values down into the next level's A. */
spx_status spx__amg_gpu_update(spx_amg *m, int l);
/* After a failure of the GPU path at level l in `step`: its message kept in the report's note,
 * level l's device state freed, the GPU setup off for the levels left (the host makes level l again
 * from its A). Returns 1 when the host can take over (the failure was cuSPARSE's, the device's
 * memory or an unsupported case), else 0 (fail). */
int spx__amg_gpu_fallback(spx_amg *m, int l, const char *step, spx_status st);
/* The device arrays of the level set up last (nothing when none). */
void spx__amg_gpu_work_free(spx_amg *m);
/* Level l's device state (and its A on the device); the handle with m. */
void spx__amg_gpu_free_level(spx_amg *m, int l);
void spx__amg_gpu_free(spx_amg *m);

/* ---- amg_setup_impl.h: the levels (on the host, or the GPU's through the room above) ----------- */
/* x is finite (not NaN, not an infinity). */
int spx__amg_finite(double x);
void spx__amg_graph_free(spx__amg_graph *g);
/* rp[0..n] from per-row counts in rp[1..n] (exclusive prefix sum in place). */
void spx__amg_scan(int64_t *rp, int64_t n);
/* The diagonal a_ii of each row; a zero or non-finite one is SPX_INVALID_ARGUMENT naming it. */
spx_status spx__amg_diag(const char *fn, const spx_csr *A, int level, double *d);
/* Level l's diagonal at the create (the GPU's where level l's setup runs there: L->setup_gpu). */
spx_status spx__amg_level_diag(spx_amg *m, int l, int coarsens, double *d);
/* The host twins of the GPU's steps (templates/amg_setup.cu), rows in parallel and the same result
 * for any thread count. The strength of every row: mask[k] = 1 where entry k of A is a strong
 * off-diagonal (a_ij^2 >= theta^2 |a_ii a_jj|), dF A_F's diagonal (weak entries lumped), *weak. */
void spx__amg_strength(const spx_csr *A, const double *d, double theta, uint8_t *mask, double *dF, int64_t *weak);
/* The aggregates on A's strong entries (mask): agg[i] for every row, *nagg. mis2: the MIS(2) rule
 * (the GPU's), else the greedy one (rows in order). */
spx_status spx__amg_aggregate(const spx_csr *A, const uint8_t *mask, int mis2, int32_t *agg, int64_t *nagg);
/* P = (I - omega D_F^-1 A_F) T, or T when omega is 0: rows from A's kept entries (diagonal and
 * strong), columns the aggregates in increasing order. */
spx_status spx__amg_prolong(const spx_csr *A, const uint8_t *mask, const double *dF, const int32_t *agg, int64_t nagg,
                            double omega, spx_csr **P);
/* An upper estimate of rho(D^-1 W) for W = A with diagonal dd (mask given: its weak off-diagonals
 * left out, A_F): iters power iterations, capped by the Gershgorin bound. */
spx_status spx__amg_rho(const spx_csr *A, const uint8_t *mask, const double *dd, int iters, double *rho);
/* rho(D^-1 A) of level l for its smoother (on the GPU where its device A is current). */
spx_status spx__amg_level_rho(spx_amg *m, int l, const double *d, double *rho);
/* C = A B (Gustavson: columns sorted, each row's sums in A's then B's column order). */
spx_status spx__amg_spgemm(const spx_csr *A, const spx_csr *B, spx_csr **out);
/* splitmix64's finalizer of a row index (amg_setup_impl.h). */
uint64_t spx__amg_mix(int64_t i);
/* c[0..k) ascending. */
void spx__amg_sort_cols(int32_t *c, int64_t k);
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

/* ---- amg_rs_impl.h: classical Ruge-Stueben coarsening (options.coarsening SPX_AMG_RS) ---------- */
/* Level l's C/F split (L->agg: a C row's coarse row, -1 for an F row), P by direct interpolation,
 * R = P^T and the next level's A, on the host (*stalled: the C points were too many or none;
 * *rhoA -1). */
spx_status spx__amg_rs_coarsen(spx_amg *m, int l, int *stalled, double *rhoA);
/* Level l's P values again from its A's (the split and P's pattern kept), and R's (spx_amg_update). */
spx_status spx__amg_rs_values(spx_amg *m, int l);

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
