/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/solve.h: Krylov solvers on any plan (any format, spx kernel or cuSPARSE), on the GPU and on
 * the host, with one API.
 *
 *   spx_solve_options o;  spx_solve_options_default(&o);  o.rtol = 1e-8;
 *   spx_solve_report r;
 *   spx_solve_cg(plan, b, x, &o, &r);           x: the initial guess in, the solution out
 *   printf("%lld iterations, true residual %.3g\n", (long long)r.iterations, r.true_rel_resid);
 *
 * VECTORS  b and x are of the plan's dtype and length nrows (== ncols): host arrays on the host
 *   backend, device pointers (cast to void *) on the CUDA backend, as for spx_plan_spmv. With
 *   options.host_vectors = 1 they are host arrays on either backend (copied in and out; the copies
 *   count as setup and finish, not as iteration time).
 *
 * METHODS
 *   spx_solve_cg           conjugate gradients (A symmetric positive definite)
 *   spx_solve_pcg_jacobi   CG preconditioned by the diagonal (z = r / diag(A)); the diagonal is the
 *                          one the plan kept at creation (spx_plan_diagonal); a zero on it is
 *                          SPX_INVALID_ARGUMENT naming the row
 *   spx_solve_bicgstab     BiCGSTAB (any nonsingular A), right-preconditioned by options.precond
 *   options.precond (z = M^-1 r, vectors in the backend's memory space) preconditions cg and
 *   bicgstab; the AMG of spx plugs in here. pcg_jacobi refuses a second preconditioner.
 *
 * STOPPING  iteration k stops when ||r_k|| <= max(rtol * ||b||, atol), with ||r_k|| the recurrence's
 *   (unpreconditioned) residual 2-norm, checked every iteration; BiCGSTAB also stops at the half
 *   step when ||s|| passes. After the last iteration the true residual ||b - A x|| is recomputed
 *   from scratch and reported beside the recurrence's. When the recurrence passed and the true
 *   residual did not (rounding drift on ill-conditioned systems), the method starts again from x
 *   (r = b - Ax exactly; up to 3 times, within maxit): SPX_OK means both passed. BiCGSTAB's rho ~ 0
 *   breakdown starts again the same way (a new r0^ = r), within the same 3 restarts.
 * STATUS  SPX_OK: converged. SPX_NOT_CONVERGED: maxit iterations done (x holds the last iterate),
 *   or the true residual still missed after the restarts.
 *   SPX_BREAKDOWN: CG found p.Ap <= 0 (A not SPD) or r.z <= 0 (preconditioner not SPD); BiCGSTAB
 *   found rho = r0^.r, r0^.v or omega ~ 0 (|.| <= 1e-14 times the norms) or t = 0; a NaN or Inf
 *   residual is a breakdown too, never a success. x then holds the last good iterate, and the
 *   report says what happened (report.message, spx_last_error). SPX_INVALID_ARGUMENT: NULL, a
 *   non-square plan, rtol and atol both <= 0, negative tolerances, maxit < 1, a bad history.
 *   In every case with a report, the report is filled as far as the solve got.
 *
 * SCALE  The recurrences square residuals, so a b far from 1 (entries below 2^-100 or above 2^100)
 *   is solved as A (s x) = s b with s a power of two that brings b's largest entry near 1: exact
 *   (exponents only), the same iterates and x to the bit, the report in the caller's units and
 *   its message saying so. A's own scale matters where it is squared: CG's p.Ap is fine for any A
 *   in double range; BiCGSTAB's (A s).(A s) needs A's entries within about 1e+-150.
 *
 * GPU  The vector operations are NVRTC kernels from templates/krylov.cu, fused so that CG moves
 *   10 vectors of n per iteration besides its SpMV (p.Ap: 2; r -= alpha Ap with ||r||^2: 3;
 *   x += alpha p and p = r + beta p: 5), Jacobi PCG 12, BiCGSTAB 18 besides two SpMVs. The
 *   scalars (alpha, beta, omega, rho, the residual, the iteration count, the stop flag) live on the
 *   device and are updated there by one-block kernels; the host reads that small state back every
 *   options.poll iterations (default 8; 1 with a preconditioner callback), and once the device has
 *   stopped, the kernels queued behind the stop do nothing (only their SpMVs run), so iteration
 *   counts and x are exactly those of checking every iteration. Each iteration runs as one CUDA
 *   graph (captured once per run, the plan's SpMV included) where nothing in it can change from
 *   iteration to iteration: no callback, one rank, a plan that no longer races, compiles or waits
 *   to upgrade (options.no_graph turns it off). Reductions are deterministic:
 *   double accumulators (float vectors too), a fixed grid per device, per-block tree sums in
 *   shared memory, then one block summing the partials in a fixed order: the same x bit for bit on
 *   every run on the same device. The host twin runs the same algorithm with the same stopping
 *   and breakdown rules (double accumulation in fixed chunks, OpenMP-parallel and deterministic). */
#ifndef SPX_SOLVE_H
#define SPX_SOLVE_H

#include "status.h"
#include "types.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* z = M^-1 r on vectors of the plan's dtype and length n, host arrays on the host backend and device
 * pointers on CUDA (work queued on the plan's context stream, or completed before returning).
 * Anything but SPX_OK stops the solve with that status. */
typedef spx_status (*spx_precond_fn)(void *data, const void *r, void *z);

typedef struct spx_solve_options {
  double rtol;             /* stop when ||r|| <= rtol * ||b||  [1e-8] */
  double atol;             /* ... or when ||r|| <= atol  [0] */
  int64_t maxit;           /* iterations at most  [1000] */
  double *history;         /* NULL, or room for history_len residual norms: ||r_0||, ||r_1||, ...
                            * (caller-owned; the report says how many were written) */
  int64_t history_len;
  spx_precond_fn precond;  /* NULL: none */
  void *precond_data;
  int host_vectors;        /* 1: b and x are host arrays also on the CUDA backend */
  int poll;                /* CUDA: read the device's state every poll iterations (0: default) */
  int64_t upgrade_at;      /* a deferred plan (spx_plan_options.defer): -1 [default] upgrade it
                            * once the residual's rate so far says the iterations left repay the
                            * conversion (checked after 4, 8, 16, ... iterations; on a GPU at the
                            * next state read); 0: never; k > 0: at iteration k (or the first state
                            * read after it) */
  int no_graph;            /* CUDA: 1 launches every kernel of every iteration; 0 [default] the
                            * solvers run each iteration as one CUDA graph once the plan is settled
                            * (no race, compile or pending choice), without a preconditioner
                            * callback or other ranks: the same kernels in the same order, one
                            * launch (the same x to the bit). The capture points the context's
                            * stream at the solver's own for one iteration's launches: no other
                            * thread may use the context meanwhile (docs/runtime.md, Threads) */
} spx_solve_options;

void spx_solve_options_default(spx_solve_options *o);

typedef struct spx_solve_report {
  spx_status status;       /* what the solve returned */
  const char *method;      /* "cg", "pcg_jacobi", "bicgstab" (static storage) */
  int64_t n;               /* unknowns */
  int64_t iterations;      /* completed iterations (BiCGSTAB: a half step that converged counts) */
  int64_t spmvs;           /* matrix products, including the true-residual check */
  int64_t precond_calls;   /* options.precond calls */
  int restarts;            /* runs started again from x because the recomputed residual missed
                            * the tolerance that the recurrence's passed (at most 3) */
  double bnorm;            /* ||b|| */
  double tol;              /* max(rtol * ||b||, atol), what ||r|| was held to */
  double resid;            /* ||r|| from the recurrence at the end */
  double rel_resid;        /* resid / ||b|| (resid when b = 0) */
  double true_resid;       /* ||b - A x|| recomputed from scratch after the last iteration */
  double true_rel_resid;   /* true_resid / ||b|| (true_resid when b = 0) */
  int64_t history_count;   /* entries written to options.history (min(iterations + 1, history_len)) */
  double analysis_ms;      /* the plan's analysis and choice (spx_plan_select_ms) */
  double build_ms;         /* the plan's conversion, upload and SpMV compile (spx_plan_build_ms) */
  double setup_ms;         /* this call before the first iteration, besides the plan's build (a
                            * lazy plan builds here; that is build_ms): the solver's kernels
                            * (jit_ms), workspace, copies */
  double jit_ms;           /* getting the solver's vector kernels (compile or cache) */
  double solve_ms;         /* the iterations (wall, until the device finished) */
  double per_iter_us;      /* solve_ms / iterations */
  double check_ms;         /* the true residual (and copying x out with host_vectors) */
  int64_t vector_bytes_per_iter; /* bytes the vector passes of one iteration move (the model above) */
  int spmvs_per_iter;      /* 1 (CG) or 2 (BiCGSTAB) */
  int64_t upgraded_at;     /* a deferred plan upgraded after this many iterations (-1: not) */
  double upgrade_ms;       /* what the upgrade took (inside solve_ms) */
  int64_t graph_launches;  /* iterations run as one CUDA graph launch (options.no_graph) */
  char message[256];       /* a sentence on how it ended */
} spx_solve_report;

/* Each: A a square plan; b, x as said above; options NULL: defaults; report may be NULL. */
spx_status spx_solve_cg(spx_plan *A, const void *b, void *x, const spx_solve_options *options,
                        spx_solve_report *report);
spx_status spx_solve_pcg_jacobi(spx_plan *A, const void *b, void *x, const spx_solve_options *options,
                                spx_solve_report *report);
spx_status spx_solve_bicgstab(spx_plan *A, const void *b, void *x, const spx_solve_options *options,
                              spx_solve_report *report);

/* The report as one JSON object, or as text lines (json == 0). */
spx_status spx_solve_report_print(const spx_solve_report *r, FILE *f, int json);

#ifdef __cplusplus
}
#endif
#endif /* SPX_SOLVE_H */
