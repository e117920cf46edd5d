/* SPDX-License-Identifier: BSD-3-Clause */
/* The solver state of solve_impl.h and its host twin, as spx/dist.h's solvers share them: they run
 * the same CG and BiCGSTAB (spx__solve_host) with the matrix product, the preconditioner and the
 * global sums given as ops, so one rank's x is spx_solve_*'s bit for bit. */
#ifndef SPX_INTERNAL_SOLVE_HOST_H
#define SPX_INTERNAL_SOLVE_HOST_H

#include "common.h"
#include "../plan.h"
#include "../solve.h"
#include "../device.h"

/* The device state, indices into double st[SPX__ST_COUNT]. ORDER: the same as the SPX_ST_* of
 * templates/krylov.cu. */
#define SPX__ST_DONE 0
#define SPX__ST_STATUS 1
#define SPX__ST_IT 2
#define SPX__ST_FINISH 3
#define SPX__ST_TOL2 4
#define SPX__ST_BB 5
#define SPX__ST_RR 6
#define SPX__ST_RZ 7
#define SPX__ST_ALPHA 8
#define SPX__ST_BETA 9
#define SPX__ST_OMEGA 10
#define SPX__ST_R0N2 11
#define SPX__ST_SS 12
#define SPX__ST_BAD 13
#define SPX__ST_OUT 14
#define SPX__ST_COUNT 17

/* Why a solve stopped; the same codes as SPX_KS_* of templates/krylov.cu. */
enum {
  SPX__KS_RUNNING = 0,
  SPX__KS_CONVERGED = 1,
  SPX__KS_NOT_SPD = 2,
  SPX__KS_PREC_NOT_SPD = 3,
  SPX__KS_NONFINITE = 4,
  SPX__KS_RHO = 5,
  SPX__KS_R0V = 6,
  SPX__KS_OMEGA = 7,
  SPX__KS_GAP = 8 /* host side: the recurrence passed, the recomputed residual did not */
};

/* Restarts from x when the recurrence passed the tolerance and the recomputed residual did not. */
#define SPX__RESTARTS 3

/* BiCGSTAB breakdown: |x| <= SPX__KRY_EPS times the norms (SPX_KRY_EPS in the template). */
#define SPX__KRY_EPS 1e-14
/* Threads per block of every krylov kernel (SPX_BLOCK). */
#define SPX__KRY_BLOCK 256
/* Host reductions: fixed chunks, so the sums do not depend on the thread count. */
#define SPX__HCHUNK 8192

/* The kernels of templates/krylov.cu. _(ENUM, "kernel name") */
#define SPX__KRY_KERNELS(_)              \
  _(DOT2,     "spx_kry_dot2")            \
  _(COPY,     "spx_kry_copy")            \
  _(DINV,     "spx_kry_dinv")            \
  _(RESID,    "spx_kry_resid")           \
  _(SUM,      "spx_kry_sum")             \
  _(CG_INIT,  "spx_kry_cg_init")         \
  _(CG_START, "spx_kry_cg_start")        \
  _(CG_ALPHA, "spx_kry_cg_alpha")        \
  _(CG_R,     "spx_kry_cg_r")            \
  _(CG_BETA,  "spx_kry_cg_beta")         \
  _(CG_RZ,    "spx_kry_cg_rz")           \
  _(CG_XP,    "spx_kry_cg_xp")           \
  _(BI_INIT,  "spx_kry_bicg_init")       \
  _(BI_START, "spx_kry_bicg_start")      \
  _(BI_ALPHA, "spx_kry_bicg_alpha")      \
  _(BI_S,     "spx_kry_bicg_s")          \
  _(BI_HALF,  "spx_kry_bicg_half")       \
  _(BI_OMEGA, "spx_kry_bicg_omega")      \
  _(BI_XR,    "spx_kry_bicg_xr")         \
  _(BI_R,     "spx_kry_bicg_r")          \
  _(BI_P,     "spx_kry_bicg_p")

enum {
#define SPX__KRY_ENUM(e, name) SPX__K_##e,
  SPX__KRY_KERNELS(SPX__KRY_ENUM)
#undef SPX__KRY_ENUM
  SPX__K_COUNT
};
enum { SPX__SOLVE_CG, SPX__SOLVE_PCG_JACOBI, SPX__SOLVE_BICGSTAB };

struct spx__solver;
/* What the host twin asks of its matrix and its sums. spmv and precond: y = A x and z = M^-1 r on
 * this process's part; a failure they report stops the solve (ops that must not leave alone keep
 * it for the next sum and return SPX_OK). sum: out (this process's sums of the chunk partials) made
 * global in place; its status stops the solve on every process. max: the global max of m (b's
 * largest entry, for the scale). keep: a local failure for the next sum. */
typedef struct spx__solve_ops {
  spx_status (*spmv)(struct spx__solver *s, const void *x, void *y);
  spx_status (*precond)(struct spx__solver *s, const void *r, void *z);
  spx_status (*sum)(struct spx__solver *s, double out[3]);
  double (*max)(struct spx__solver *s, double m);
  void (*keep)(struct spx__solver *s, spx_status st);
} spx__solve_ops;

/* One solve in progress. */
typedef struct spx__solver {
  spx_plan *A;
  spx_context *ctx;
  int method, cuda, f;       /* f: 1 for float vectors */
  int64_t n, nchunks;
  size_t vs;
  spx_solve_options o;
  spx_solve_report *rep;
  /* The host twin's matrix product, preconditioner and sums: the plan's and this process's when
   * NULL; spx/dist.h's solvers give theirs (the distributed product, sums over the ranks). */
  const struct spx__solve_ops *ops;
  void *op;                  /* the ops' own state */
  int ranks;                 /* > 0: the messages say over how many ranks */
  double *diag;              /* Jacobi on the host: 1 / a_ii (double) */
  int jacobi;                /* Jacobi (on the GPU: dv[4] = 1 / a_ii, made there from the plan's diagonal) */
  /* Host twin */
  double *hpart;             /* 3 per chunk */
  void *hv[8];
  /* GPU */
  void *fn[SPX__K_COUNT];
  unsigned grid;
  spx_devptr dv[9], part, st, hist, bd, xd;
  spx_devptr tpart;          /* the partials the next scalar kernel reads: part, or (ops) hmap's */
  double *hmap;              /* ops: pinned host memory the kernels reach (unified addressing): a
                              * state whose sums slots spx_kry_sum fills, and the global sums */
  void *hb, *hx;             /* host: b and x scaled, when they had to be (spx__scale_of) */
  spx_devptr sb, sx;         /* the same on the GPU */
  double scale;              /* the power of two b and x were multiplied by (1: none) */
  int64_t hcap;
  double hst[SPX__ST_COUNT];
  int64_t it0;               /* iterations before this run (restarts) */
  int restarts, why;
  double r0;                 /* ||r|| at the start of this run (the deferred plan's rate) */
  int64_t next_check;        /* the deferred plan's next look at the rate */
  /* CUDA graph of one iteration (options.no_graph 0): captured on gstream once per run, launched
   * on the context's stream; gno: not this run (not capturable, or it failed) */
  void *gexec, *gstream;
  int gno;
} spx__solver;

/* The host twin: CG (with s->diag Jacobi, with o.precond the callback) or BiCGSTAB on host vectors,
 * restarts and the recomputed residual included; s->n, nchunks, vs, f, method, o and rep set. */
spx_status spx__solve_host(spx__solver *s, const void *b, void *x);
/* Its workspace (spx__solve_host makes it when absent): a caller that must agree on a failure
 * first (over the ranks) makes it before. */
spx_status spx__solve_host_alloc(spx__solver *s);
/* The GPU path: the same methods with the krylov kernels on s->ctx (s->A's context), b and x device
 * pointers (host arrays with o.host_vectors); s->cuda, jacobi and grid-independent fields set as for
 * the host twin. With ops (spx/dist.h) the product is ops->spmv on device vectors, and every sum of
 * block partials is first summed on this process, then made global by ops->sum and handed to the
 * scalar kernel as its only partial; a local failure is kept (ops->keep) for the next global sum,
 * so every process leaves together. spx__g_free releases what it allocated on the device. */
spx_status spx__solve_gpu(spx__solver *s, const void *b, void *x);
void spx__g_free(spx__solver *s);
/* The checks of b, x and the options every solver entry makes (fn: its name; cg: the CG of its
 * family, for the sentence that sends a preconditioner callback there). */
spx_status spx__solve_check_args(const spx__solver *s, const char *fn, const char *cg, const void *b, const void *x);
/* The end of a solve: the report in the caller's units (relative residuals, restarts, time per
 * iteration, the history's length, a failure's status and sentence), then the workspace freed (host
 * and device). Returns st. */
spx_status spx__solve_finish(spx__solver *s, spx_status st);
/* The report in the caller's units after a scaled solve (s->scale != 1). */
void spx__solve_unscale(spx__solver *s);

/* What the host twin (solve_host_impl.h) and the GPU path (solve_impl.h) share. */
extern const char *const spx__solve_names[]; /* by SPX__SOLVE_* */
/* 1, or the power of two that brings b's largest entry m near 1 (solve_impl.h's scaling). */
double spx__scale_of(double m);
/* The largest |v[i]| of n values (float where f), NaN where one is. */
double spx__vmaxabs(const void *v, int f, int64_t n);
/* The solve's end in s->rep (why: SPX__KS_*, bad the offending value, it the iterations): its
 * status and sentence. */
spx_status spx__solve_end(spx__solver *s, int why, double bad, int64_t it);
/* The adaptive upgrade's rate after iteration it at residual res (a pending plan's). */
void spx__solve_adapt(spx__solver *s, int64_t it, double res);
/* Whether to run again from x (a restart: the recomputed residual missed the tolerance), *st the
 * run's status, rewritten where it restarts. */
int spx__solve_restart(spx__solver *s, spx_status *st);

static inline int spx__finite(double x) { return x - x == 0.0; }
static inline double spx__fabs(double x) { return x < 0 ? -x : x; }
/* Element i of a float (f) or double vector, as a double; stored back. */
static inline double spx__vld(const void *v, int f, int64_t i) {
  return f ? (double)((const float *)v)[i] : ((const double *)v)[i];
}
static inline void spx__vst(void *v, int f, int64_t i, double x) {
  if (f) ((float *)v)[i] = (float)x;
  else ((double *)v)[i] = x;
}
/* x rounded to the vector type and back, as it is once stored. */
static inline double spx__rd(int f, double x) { return f ? (double)(float)x : x; }

#endif /* SPX_INTERNAL_SOLVE_HOST_H */
