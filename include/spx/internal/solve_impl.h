/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/solve.h: CG, Jacobi PCG and BiCGSTAB on a plan, a host twin and a GPU path
 * (templates/krylov.cu) that take the same decisions in the same order. */
#include <math.h> /* NAN: a macro only, no libm */
#include "common.h"
#include "cuda_types.h"
#include "dmatrix.h" /* the plan trace */
#include "tuner.h"   /* the plan's diagonal */
#include "../solve.h"
#include "solve_host.h"
#include "../cuda.h"
#include "../jit.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

const char *const spx__solve_names[] = {"cg", "pcg_jacobi", "bicgstab"};

static const char *const spx__kry_names[] = {
#define SPX__KRY_NAME(e, name) name,
    SPX__KRY_KERNELS(SPX__KRY_NAME)
#undef SPX__KRY_NAME
};

void spx_solve_options_default(spx_solve_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->rtol = 1e-8;
  o->atol = 0;
  o->maxit = 1000;
  o->upgrade_at = -1;
}


/* ---- Scaling: the system times a power of two when b is far from 1 ------------------------------
 * The recurrences square the residual: for ||b|| of 1e-160 or 1e200 those squares underflow or
 * overflow (CG then stops at x = 0 as if b were 0, or calls an SPD matrix indefinite). A (s x) = s b
 * with s = 2^k bringing b's largest entry near 1 is the same system, scaled exactly (only exponents
 * change), so every iterate is the unscaled run's times s wherever that one stayed in range: same
 * iterations, same determinism. The report is scaled back. b's largest entry within
 * [2^-100, 2^100] (on the GPU: b.b within [2^-200, 2^200]) needs nothing. */
#define SPX__SCALE_LO 0x1p-100
#define SPX__SCALE_HI 0x1p100

/* The power of two that brings m (> 0, finite) into [0.5, 2), within the double range. */
static double spx__scale_for(double m) {
  double sc = 1;
  while (m * sc >= 2 && sc > 0x1p-1020) sc *= 0.5;
  while (m * sc < 0.5 && sc < 0x1p1020) sc *= 2;
  return sc;
}

/* 1, or the scale for a b whose largest entry is m. */
double spx__scale_of(double m) {
  return m > 0 && m - m == 0.0 && (m < SPX__SCALE_LO || m > SPX__SCALE_HI) ? spx__scale_for(m) : 1;
}

double spx__vmaxabs(const void *v, int f, int64_t n) {
  double m = 0;
  int64_t i;
  for (i = 0; i < n; i++) {
    double a = f ? (double)((const float *)v)[i] : ((const double *)v)[i];
    a = a < 0 ? -a : a;
    if (a > m || a != a) m = a; /* NaN stays: no scale then, the solver reports it */
  }
  return m;
}

/* The report in the caller's units: norms and the history divided by the scale, and a note. */
void spx__solve_unscale(spx__solver *s) {
  spx_solve_report *r = s->rep;
  const double u = 1.0 / s->scale;
  int64_t i, nh = s->o.history_len > 0 ? SPX__MIN(r->iterations + 1, s->o.history_len) : 0;
  size_t m;
  if (s->scale == 1) return;
  r->bnorm *= u; r->tol *= u; r->resid *= u; r->true_resid *= u;
  for (i = 0; i < nh && s->o.history; i++) s->o.history[i] *= u;
  m = strlen(r->message);
  snprintf(r->message + m, sizeof r->message - m, " (solved as A (s x) = s b, s = %.3g, since b's entries are of %.3g)",
           s->scale, u);
}

/* ---- The end of a solve: status, message, report ------------------------------------------------ */
spx_status spx__solve_end(spx__solver *s, int why, double bad, int64_t it) {
  spx_solve_report *r = s->rep;
  const char *m = spx__solve_names[s->method];
  char msg[256];
  spx_status st;
  r->rel_resid = r->bnorm > 0 ? r->resid / r->bnorm : r->resid;
  s->why = why;
  switch (why) {
  case SPX__KS_CONVERGED:
    st = SPX_OK;
    snprintf(msg, sizeof msg, "%s: converged in %lld iterations, ||r|| = %.3g <= %.3g", m, (long long)it, r->resid, r->tol);
    break;
  case SPX__KS_NOT_SPD:
    st = SPX_BREAKDOWN;
    snprintf(msg, sizeof msg, "%s: p.Ap = %.3g <= 0 in iteration %lld: the matrix is not symmetric positive definite",
             m, bad, (long long)it + 1);
    break;
  case SPX__KS_PREC_NOT_SPD:
    st = SPX_BREAKDOWN;
    snprintf(msg, sizeof msg, "%s: r.z = %.3g <= 0 after iteration %lld: the preconditioner (or the matrix) is not "
             "symmetric positive definite", m, bad, (long long)it);
    break;
  case SPX__KS_NONFINITE:
    st = SPX_BREAKDOWN;
    snprintf(msg, sizeof msg, "%s: the residual norm became %g after iteration %lld (NaN or Inf in the matrix, b, x "
             "or the preconditioner)", m, bad, (long long)it);
    break;
  case SPX__KS_RHO:
    st = SPX_BREAKDOWN;
    snprintf(msg, sizeof msg, "%s: rho = r0^.r = %.3g ~ 0 after iteration %lld (breakdown; restart from x with a new r0^)",
             m, bad, (long long)it);
    break;
  case SPX__KS_R0V:
    st = SPX_BREAKDOWN;
    snprintf(msg, sizeof msg, "%s: r0^.v = %.3g ~ 0 in iteration %lld (breakdown)", m, bad, (long long)it + 1);
    break;
  case SPX__KS_OMEGA:
    st = SPX_BREAKDOWN;
    snprintf(msg, sizeof msg, "%s: omega = t.s/t.t ~ 0 (t.s = %.3g) in iteration %lld (breakdown; x took the half step)",
             m, bad, (long long)it + 1);
    break;
  case SPX__KS_GAP:
    st = SPX_NOT_CONVERGED;
    snprintf(msg, sizeof msg, "%s: the recurrence passed (||r|| = %.3g <= %.3g) but the recomputed ||b - Ax|| = %.3g did "
             "not, after %d restarts from x and %lld iterations (the attainable accuracy: loosen the tolerance)",
             m, r->resid, r->tol, r->true_resid, s->restarts, (long long)it);
    break;
  default:
    st = SPX_NOT_CONVERGED;
    snprintf(msg, sizeof msg, "%s: not converged in %lld iterations: ||r|| = %.3g > %.3g (||r||/||b|| = %.3g)", m,
             (long long)it, r->resid, r->tol, r->rel_resid);
  }
  r->iterations = it;
  r->status = st;
  if (s->ranks > 0) snprintf(r->message, sizeof r->message, "%.236s (%d ranks)", msg, s->ranks);
  else snprintf(r->message, sizeof r->message, "%s", msg);
  if (st) spx__fail(st, "%s", r->message);
  return st;
}

/* ---- GPU ------------------------------------------------------------------------------------------ */
/* 1 when the GPU path's sums go through the ranks (ops over more than one rank); one rank's global
 * sums are its own, so it runs as the single-GPU solver does, without a synchronization per sum. */
static int spx__g_dist(const spx__solver *s) { return s->ops && s->ranks > 1; }

/* A distributed solve keeps a local failure for the next global sum, which stops every process at
 * once; alone, the failure returns. */
static spx_status spx__g_kept(spx__solver *s, spx_status st) {
  if (!st || !spx__g_dist(s)) return st;
  s->ops->keep(s, st);
  return SPX_OK;
}

static spx_status spx__k(spx__solver *s, int k, unsigned grid, void **params) {
  const spx__cuda_api *cu = spx__cuda();
  spx_status st;
  if (!cu) return spx__fail(SPX_NOT_AVAILABLE, "spx_solve: no CUDA driver");
  if ((st = spx__ctx_push(s->ctx))) return st;
  st = spx__cu_check(cu->cuLaunchKernel((spx__CUfunction)s->fn[k], grid, 1, 1, SPX__KRY_BLOCK, 1, 1, 0, s->ctx->stream,
                                        params, NULL),
                     spx__kry_names[k]);
  spx__ctx_pop(s->ctx);
  return spx__g_kept(s, st);
}

#define SPX__VP(d) ((void *)(uintptr_t)(d))

static spx_status spx__g_spmv(spx__solver *s, spx_devptr x, spx_devptr y) {
  s->rep->spmvs++;
  if (s->ops) return s->ops->spmv(s, SPX__VP(x), SPX__VP(y));
  return spx_plan_spmv(s->A, 1.0, SPX__VP(x), 0.0, SPX__VP(y));
}

/* The host's copy of the device state. */
static spx_status spx__g_state(spx__solver *s) {
  return spx__g_kept(s, spx_device_download(s->ctx, s->hst, s->st, sizeof s->hst));
}

/* Where hmap keeps the global sums for the scalar kernels (after a state's SPX__ST_COUNT slots). */
#define SPX__HMAP_SUMS 20
#define SPX__HMAP_LEN 24

/* out = the sums of the three terms of the block partials: on this process (spx_kry_sum, the
 * scalar kernels' order), then with ops over every process. With ops spx_kry_sum writes into
 * pinned host memory (hmap): a stream synchronization, no copy call. */
static spx_status spx__g_sums(spx__solver *s, double out[3]) {
  int g = (int)s->grid, three = 3;
  spx_devptr dst = s->hmap ? (spx_devptr)(uintptr_t)s->hmap : s->st;
  const double *src = s->hmap ? s->hmap : s->hst;
  void *a[] = {&g, &three, &s->part, &dst};
  spx_status st;
  out[0] = out[1] = out[2] = 0;
  if ((st = spx__k(s, SPX__K_SUM, 1, a)) ||
      (st = s->hmap ? spx__g_kept(s, spx_context_synchronize(s->ctx)) : spx__g_state(s)))
    return st;
  out[0] = src[SPX__ST_OUT];
  out[1] = src[SPX__ST_OUT + 1];
  out[2] = src[SPX__ST_OUT + 2];
  return spx__g_dist(s) ? s->ops->sum(s, out) : SPX_OK;
}

/* Before a scalar kernel: *gs = how many partials it reads, from tpart. Alone, the grid's block
 * partials; distributed, the global sums (one partial each, in hmap: the device reads them where
 * the host wrote them), so every process's scalar kernel sees the same numbers and takes the same
 * decisions. The last scalar kernel that read hmap ran before spx__g_sums' synchronization. */
static spx_status spx__g_total(spx__solver *s, int *gs) {
  double out[3];
  spx_status st;
  *gs = (int)s->grid;
  s->tpart = s->part;
  if (!spx__g_dist(s)) return SPX_OK;
  if ((st = spx__g_sums(s, out))) return st;
  *gs = 1;
  if (!s->hmap) return spx__g_kept(s, spx_device_upload(s->ctx, s->part, out, sizeof out));
  memcpy(s->hmap + SPX__HMAP_SUMS, out, sizeof out);
  s->tpart = (spx_devptr)(uintptr_t)(s->hmap + SPX__HMAP_SUMS);
  return SPX_OK;
}

static spx_status spx__g_precond(spx__solver *s, spx_devptr r, spx_devptr z, int *skipped) {
  spx_status st;
  *skipped = 0;
  /* Exactly the host's calls: none once the device stopped. */
  if ((st = spx__g_state(s))) return st;
  if (s->hst[SPX__ST_DONE] != 0) { *skipped = 1; return SPX_OK; }
  s->rep->precond_calls++;
  if ((st = s->o.precond(s->o.precond_data, SPX__VP(r), SPX__VP(z))))
    return spx__g_kept(s, spx__wrap(st, "%s: the preconditioner callback failed", spx__solve_names[s->method]));
  return SPX_OK;
}

/* Kernel arguments: cuLaunchKernel takes the address of each. */
static spx_status spx__g_dot2(spx__solver *s, spx_devptr a, spx_devptr b, spx_devptr c) {
  long long n = s->n;
  void *pr[] = {&n, &a, &b, &c, &s->part, &s->st};
  return spx__k(s, SPX__K_DOT2, s->grid, pr);
}

/* A deferred plan's rate starts from the residual the start kernel computed (one state read, only
 * when an upgrade may come). */
static spx_status spx__g_adapt_start(spx__solver *s) {
  spx_status st;
  if (!spx_plan_pending(s->A, NULL) || s->o.upgrade_at == 0) return SPX_OK;
  if ((st = spx__g_state(s))) return st;
  s->r0 = spx__sqrt(s->hst[SPX__ST_RR]);
  s->rep->tol = spx__sqrt(s->hst[SPX__ST_TOL2]);
  return SPX_OK;
}

/* CG's vectors and the scalar kernels' arguments, for its iterations. */
typedef struct spx__g_cgv {
  spx_devptr x, r, p, q, z, dinv, hist;
  long long n, hcap;
  int g, have_rz;
} spx__g_cgv;

/* CG's iteration up to beta: the product, p.Ap, alpha, r and ||r||^2, beta (which, with a
 * callback, the caller's r.z completes before x and p). */
static spx_status spx__g_cg_head(spx__solver *s, spx__g_cgv *v) {
  void *aa[] = {&v->g, &s->tpart, &s->st};
  void *ar[] = {&v->n, &v->q, &v->r, &v->dinv, &s->part, &s->st};
  void *ab[] = {&v->g, &s->tpart, &s->st, &v->hist, &v->hcap, &v->have_rz};
  spx_devptr none = 0;
  spx_status st;
  if ((st = spx__g_spmv(s, v->p, v->q)) || (st = spx__g_dot2(s, v->p, v->q, none)) || (st = spx__g_total(s, &v->g)) ||
      (st = spx__k(s, SPX__K_CG_ALPHA, 1, aa)) || (st = spx__k(s, SPX__K_CG_R, s->grid, ar)) ||
      (st = spx__g_total(s, &v->g)))
    return st;
  return spx__k(s, SPX__K_CG_BETA, 1, ab);
}

/* CG's iteration's end: x and p. */
static spx_status spx__g_cg_xp(spx__solver *s, spx__g_cgv *v) {
  void *ax[] = {&v->n, &v->x, &v->p, &v->r, &v->dinv, &v->z, &s->st};
  return spx__k(s, SPX__K_CG_XP, s->grid, ax);
}

/* One CG iteration without a preconditioner callback. */
static spx_status spx__g_cg_step(spx__solver *s, void *vv) {
  spx_status st = spx__g_cg_head(s, (spx__g_cgv *)vv);
  return st ? st : spx__g_cg_xp(s, (spx__g_cgv *)vv);
}

/* Whether this run's iterations may be one graph: no callback, no other ranks, a plan that runs
 * the same kernels from call to call (no race, compile or pending choice), a driver with graphs. */
static int spx__g_graphable(const spx__solver *s) {
  return !s->o.no_graph && !s->gno && !s->o.precond && !s->ops && s->A && !spx_plan_racing(s->A, NULL) &&
         !spx_plan_compiling(s->A) && !spx_plan_pending(s->A, NULL) && spx__graph_usable(spx__cuda());
}

static void spx__g_graph_free(spx__solver *s) {
  const spx__cuda_api *cu = spx__cuda();
  if (!cu || (!s->gexec && !s->gstream) || spx__ctx_push(s->ctx)) return;
  spx__graph_free(cu, (spx__CUgraphExec)s->gexec);
  if (s->gstream) spx__stream_free(cu, (spx__CUstream)s->gstream);
  spx__ctx_pop(s->ctx);
  s->gexec = s->gstream = NULL;
}

/* One iteration's launches (CG's or BiCGSTAB's, without a callback) on its vectors v. */
typedef spx_status (*spx__g_step_fn)(spx__solver *s, void *v);

/* One iteration as a graph on the context's stream: captured at the first call of a run (its
 * launches on a stream of the solver's own, from a copy of v), launched at each. One iteration, not
 * the poll iterations between state reads: a graph's instantiation grows with its nodes, and one
 * graph launch an iteration already keeps the device ahead of the host. *ran 0: not this time (the
 * caller launches the kernels), and where the capture failed not this run. */
static spx_status spx__g_graph(spx__solver *s, spx__g_step_fn step, const void *v, size_t vsize, int *ran) {
  const spx__cuda_api *cu = spx__cuda();
  spx_status st = SPX_OK;
  *ran = 0;
  if (!s->gexec) {
    spx__CUstream keep = s->ctx->stream, gs = (spx__CUstream)s->gstream;
    const int64_t spmvs = s->rep->spmvs;
    double w[16]; /* the vectors' struct, copied (aligned as its fields): a capture changes nothing of the caller's */
    if (vsize > sizeof w || !spx__g_graphable(s)) return SPX_OK; /* maybe later: a compile or race may end */
    memcpy(w, v, vsize);
    if ((st = spx__ctx_push(s->ctx))) return st;
    if (!gs && !(st = spx__stream_new(cu, &gs))) s->gstream = gs;
    if (!st) st = spx__graph_begin(cu, gs);
    if (!st) {
      spx__CUgraphExec e = NULL;
      s->ctx->stream = gs; /* every launch below, the plan's product's included, into the capture */
      st = step(s, w);
      s->ctx->stream = keep;
      if (!spx__graph_end(cu, gs, &e) && !st) s->gexec = e;
      else spx__graph_free(cu, e);
    }
    spx__ctx_pop(s->ctx);
    s->rep->spmvs = spmvs; /* captured, not run */
    if (!s->gexec) { /* something in the steps would not be captured: launched as they are */
      spx_clear_error();
      s->gno = 1;
      return SPX_OK;
    }
  }
  if ((st = spx__ctx_push(s->ctx))) return st;
  st = spx__graph_launch(cu, (spx__CUgraphExec)s->gexec, s->ctx->stream);
  spx__ctx_pop(s->ctx);
  if (st) return spx__g_kept(s, st);
  s->rep->spmvs += s->rep->spmvs_per_iter;
  s->rep->graph_launches++;
  *ran = 1;
  return SPX_OK;
}

/* One iteration without a callback: its graph where it can be one, else its launches. */
static spx_status spx__g_step(spx__solver *s, spx__g_step_fn step, void *v, size_t vsize) {
  int ran = 0;
  spx_status st = spx__g_graph(s, step, v, vsize, &ran);
  return st || ran ? st : step(s, v);
}

static spx_status spx__g_cg(spx__solver *s, spx_devptr b, spx_devptr x) {
  const int cb = s->o.precond != NULL, jac = s->jacobi;
  spx__g_cgv v;
  spx_devptr none = 0;
  int one = 1, zero = 0, skipped; /* v.g: the partials the next scalar kernel reads */
  double rtol2 = s->o.rtol * s->o.rtol, atol2 = s->o.atol * s->o.atol;
  int64_t it;
  spx_status st;
  memset(&v, 0, sizeof v);
  v.x = x; v.r = s->dv[0]; v.p = s->dv[1]; v.q = s->dv[2]; v.z = cb ? s->dv[3] : 0; v.dinv = jac ? s->dv[4] : 0;
  v.n = s->n;
  v.hcap = s->hcap > s->it0 ? s->hcap - s->it0 : 0;
  v.hist = v.hcap ? s->hist + (spx_devptr)s->it0 * sizeof(double) : 0;
  v.have_rz = !cb;
  spx__g_graph_free(s); /* a run's graph holds its history's offset: captured anew */
  s->gno = 0;
  if ((st = spx__g_spmv(s, x, v.q))) return st;
  {
    spx_devptr pp = cb ? none : v.p;
    void *a1[] = {&v.n, &b, &v.q, &v.r, &v.dinv, &pp, &s->part};
    void *a2[] = {&v.g, &s->tpart, &s->st, &v.hist, &v.hcap, &rtol2, &atol2, &v.have_rz};
    if ((st = spx__k(s, SPX__K_CG_INIT, s->grid, a1)) || (st = spx__g_total(s, &v.g)) ||
        (st = spx__k(s, SPX__K_CG_START, 1, a2)))
      return st;
  }
  if ((st = spx__g_adapt_start(s))) return st;
  if (cb) {
    void *a3[] = {&v.g, &s->tpart, &s->st, &one};
    void *a4[] = {&v.n, &v.z, &v.p};
    if ((st = spx__g_precond(s, v.r, v.z, &skipped)) || (st = spx__g_dot2(s, v.r, v.z, none)) ||
        (st = spx__g_total(s, &v.g)) || (st = spx__k(s, SPX__K_CG_RZ, 1, a3)) || (st = spx__k(s, SPX__K_COPY, s->grid, a4)))
      return st;
  }
  for (it = s->it0; it < s->o.maxit; it++) {
    if (!cb) {
      if ((st = spx__g_step(s, spx__g_cg_step, &v, sizeof v))) return st;
    } else { /* r.z from the callback's z between beta's kernel and x and p */
      void *az[] = {&v.g, &s->tpart, &s->st, &zero};
      if ((st = spx__g_cg_head(s, &v)) || (st = spx__g_precond(s, v.r, v.z, &skipped)) ||
          (st = spx__g_dot2(s, v.r, v.z, none)) || (st = spx__g_total(s, &v.g)) || (st = spx__k(s, SPX__K_CG_RZ, 1, az)) ||
          (st = spx__g_cg_xp(s, &v)))
        return st;
    }
    if ((it + 1) % s->o.poll == 0 || it + 1 == s->o.maxit) {
      if ((st = spx__g_state(s))) return st;
      if (s->hst[SPX__ST_DONE] != 0) break;
      spx__solve_adapt(s, it + 1, spx__sqrt(s->hst[SPX__ST_RR]));
    }
  }
  return SPX_OK;
}

/* BiCGSTAB's vectors and the scalar kernels' arguments, for its iterations. */
typedef struct spx__g_biv {
  spx_devptr x, r, r0, p, v, t, ph, sh, hist;
  long long n, hcap;
  int g;
} spx__g_biv;

/* BiCGSTAB's first half step: the product of p^ (p, or the callback's M^-1 p), alpha, s = r - alpha
 * v in r and its norm. */
static spx_status spx__g_bi_first(spx__solver *s, spx__g_biv *b) {
  void *aa[] = {&b->g, &s->tpart, &s->st};
  void *as[] = {&b->n, &b->v, &b->r, &s->part, &s->st};
  void *ah[] = {&b->g, &s->tpart, &s->st, &b->hist, &b->hcap};
  spx_status st;
  if ((st = spx__g_spmv(s, b->ph, b->v)) || (st = spx__g_dot2(s, b->r0, b->v, b->v)) || (st = spx__g_total(s, &b->g)) ||
      (st = spx__k(s, SPX__K_BI_ALPHA, 1, aa)) || (st = spx__k(s, SPX__K_BI_S, s->grid, as)) ||
      (st = spx__g_total(s, &b->g)))
    return st;
  return spx__k(s, SPX__K_BI_HALF, 1, ah);
}

/* The second: the product of s^, omega, x and r, the residual, and p. */
static spx_status spx__g_bi_second(spx__solver *s, spx__g_biv *b) {
  void *aa[] = {&b->g, &s->tpart, &s->st};
  void *ah[] = {&b->g, &s->tpart, &s->st, &b->hist, &b->hcap};
  void *ax[] = {&b->n, &b->x, &b->ph, &b->sh, &b->t, &b->r, &b->r0, &s->part, &s->st};
  void *ap[] = {&b->n, &b->r, &b->p, &b->v, &s->st};
  spx_status st;
  if ((st = spx__g_spmv(s, b->sh, b->t)) || (st = spx__g_dot2(s, b->r, b->t, b->t)) || (st = spx__g_total(s, &b->g)) ||
      (st = spx__k(s, SPX__K_BI_OMEGA, 1, aa)) || (st = spx__k(s, SPX__K_BI_XR, s->grid, ax)) ||
      (st = spx__g_total(s, &b->g)) || (st = spx__k(s, SPX__K_BI_R, 1, ah)))
    return st;
  return spx__k(s, SPX__K_BI_P, s->grid, ap);
}

/* One BiCGSTAB iteration without a preconditioner callback. */
static spx_status spx__g_bi_step(spx__solver *s, void *vv) {
  spx_status st = spx__g_bi_first(s, (spx__g_biv *)vv);
  return st ? st : spx__g_bi_second(s, (spx__g_biv *)vv);
}

static spx_status spx__g_bicgstab(spx__solver *s, spx_devptr b, spx_devptr x) {
  const int cb = s->o.precond != NULL;
  spx__g_biv w;
  int skipped; /* w.g: the partials the next scalar kernel reads */
  double rtol2 = s->o.rtol * s->o.rtol, atol2 = s->o.atol * s->o.atol;
  int64_t it;
  spx_status st;
  memset(&w, 0, sizeof w);
  w.x = x; w.r = s->dv[0]; w.r0 = s->dv[1]; w.p = s->dv[2]; w.v = s->dv[3]; w.t = s->dv[4];
  w.ph = cb ? s->dv[5] : w.p;
  w.sh = cb ? s->dv[6] : w.r;
  w.n = s->n;
  w.hcap = s->hcap > s->it0 ? s->hcap - s->it0 : 0;
  w.hist = w.hcap ? s->hist + (spx_devptr)s->it0 * sizeof(double) : 0;
  spx__g_graph_free(s); /* a run's graph holds its history's offset: captured anew */
  s->gno = 0;
  if ((st = spx__g_spmv(s, x, w.v))) return st;
  {
    void *a1[] = {&w.n, &b, &w.v, &w.r, &w.r0, &w.p, &s->part};
    void *a2[] = {&w.g, &s->tpart, &s->st, &w.hist, &w.hcap, &rtol2, &atol2};
    if ((st = spx__k(s, SPX__K_BI_INIT, s->grid, a1)) || (st = spx__g_total(s, &w.g)) ||
        (st = spx__k(s, SPX__K_BI_START, 1, a2)))
      return st;
  }
  if ((st = spx__g_adapt_start(s))) return st;
  for (it = s->it0; it < s->o.maxit; it++) {
    if (!cb) {
      if ((st = spx__g_step(s, spx__g_bi_step, &w, sizeof w))) return st;
    } else { /* the callback before each half step's product */
      if ((st = spx__g_precond(s, w.p, w.ph, &skipped))) return st;
      if (skipped) break; /* stopped at the end of the last iteration: nothing is pending */
      if ((st = spx__g_bi_first(s, &w)) || (st = spx__g_precond(s, w.r, w.sh, &skipped)) ||
          (st = spx__g_bi_second(s, &w)))
        return st;
    }
    if ((it + 1) % s->o.poll == 0 || it + 1 == s->o.maxit) {
      if ((st = spx__g_state(s))) return st;
      if (s->hst[SPX__ST_DONE] != 0) break;
      spx__solve_adapt(s, it + 1, spx__sqrt(s->hst[SPX__ST_RR]));
    }
  }
  return SPX_OK;
}

/* A zero or non-finite a_ii, for both Jacobi setups (the host's and the GPU's). */
static spx_status spx__jacobi_bad(const char *fn, int64_t i, double v) {
  return spx__fail(SPX_INVALID_ARGUMENT, "%s: a[%lld][%lld] = %g: Jacobi needs a nonzero finite diagonal", fn,
                   (long long)i, (long long)i, v);
}

/* Kernels, workspace, the Jacobi diagonal, b and x on the device (host_vectors). */
static spx_status spx__g_setup(spx__solver *s, const void *b, void *x, spx_devptr *db, spx_devptr *dx) {
  const char *defs[2] = {s->f ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double", "SPX_BLOCK=256"};
  size_t vb = (size_t)(s->n + 1) * s->vs;
  int64_t g, want;
  int k, nv = s->method == SPX__SOLVE_BICGSTAB ? (s->o.precond ? 7 : 5) : (s->o.precond ? 4 : 3);
  const int tr = spx__plan_tracing();
  double t0 = spx__now(), tm = t0;
  spx_status st;
  for (k = 0; k < SPX__K_COUNT; k++)
    if ((st = spx_jit_kernel(s->ctx, "krylov", spx__kry_names[k], 2, defs, &s->fn[k]))) return st;
  s->rep->jit_ms = 1e3 * (spx__now() - t0);
  spx__conv_mark(tr, "solve", "kernels", &tm);
  if (tr) { /* what the plan's build left queued, apart (only under the trace) */
    (void)spx_context_synchronize(s->ctx);
    spx__conv_mark(tr, "solve", "plan's tail", &tm);
  }
  /* A fixed grid per device: a few blocks per SM, fewer for short vectors. */
  want = s->ctx->info.sm_count > 0 ? 8 * (int64_t)s->ctx->info.sm_count : 1024;
  g = (s->n + SPX__KRY_BLOCK - 1) / SPX__KRY_BLOCK;
  g = SPX__MAX(1, SPX__MIN(g, SPX__MIN(want, 4096)));
  s->grid = (unsigned)g;
  for (k = 0; k < nv; k++)
    if ((st = spx_device_alloc(s->ctx, vb, &s->dv[k]))) return st;
  if ((st = spx_device_alloc(s->ctx, (size_t)(3 * g + 3) * sizeof(double), &s->part)) ||
      (st = spx_device_alloc(s->ctx, SPX__ST_COUNT * sizeof(double), &s->st)) ||
      (st = spx_device_memset(s->ctx, s->st, 0, SPX__ST_COUNT * sizeof(double))))
    return st;
  s->tpart = s->part;
  if (spx__g_dist(s)) { /* the global sums' way between the kernels and the host */
    void *h = NULL;
    if ((st = spx__ctx_push(s->ctx))) return st;
    st = spx__host_alloc(spx__cuda(), &h, SPX__HMAP_LEN * sizeof(double), "spx_dist: pinned sums");
    spx__ctx_pop(s->ctx);
    if (st) return st;
    s->hmap = (double *)h;
    memset(s->hmap, 0, SPX__HMAP_LEN * sizeof(double));
  }
  s->hcap = s->o.history_len > 0 ? SPX__MIN(s->o.history_len, s->o.maxit + 1) : 0;
  if (s->hcap && (st = spx_device_alloc(s->ctx, (size_t)s->hcap * sizeof(double), &s->hist))) return st;
  spx__conv_mark(tr, "solve", "workspace", &tm);
  if (s->jacobi && s->n == 0 && (st = spx_device_alloc(s->ctx, vb, &s->dv[4]))) return st; /* a rank without rows */
  if (s->jacobi && s->n > 0) {
    /* dinv in the vector type, from the plan's diagonal on the device: the host passes (copy,
     * invert, convert) cost several times the upload and a kernel (docs/performance.md, "The
     * Jacobi setup"). Double
     * vectors invert in place; float ones from a staging copy. */
    const double *d = spx__plan_diag_kept(s->A);
    long long n = s->n;
    unsigned long long bad = ~0ull;
    spx_devptr dd = 0, badp = s->part;
    void *pr[4];
    if (!d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_solve_pcg_jacobi: the plan kept no diagonal (made with options.no_diagonal)");
    s->dv[4] = 0;
    if ((st = spx_device_alloc(s->ctx, vb, &s->dv[4]))) return st;
    if (s->f && (st = spx_device_alloc(s->ctx, (size_t)n * sizeof(double), &dd))) return st;
    if (!s->f) dd = s->dv[4];
    pr[0] = &n; pr[1] = &dd; pr[2] = &s->dv[4]; pr[3] = &badp;
    st = spx_device_upload(s->ctx, dd, d, (size_t)n * sizeof(double));
    if (!st) st = spx_device_upload(s->ctx, badp, &bad, sizeof bad);
    if (!st) st = spx__k(s, SPX__K_DINV, s->grid, pr);
    if (!st) st = spx_device_download(s->ctx, &bad, badp, sizeof bad);
    if (s->f) spx_device_free(s->ctx, dd);
    if (st) return st;
    if (bad < (unsigned long long)n) return spx__jacobi_bad("spx_solve_pcg_jacobi", (int64_t)bad, d[bad]);
    spx__conv_mark(tr, "solve", "jacobi", &tm);
  }
  if (s->o.host_vectors) {
    if ((st = spx_device_alloc(s->ctx, vb, &s->bd)) || (st = spx_device_alloc(s->ctx, vb, &s->xd)) ||
        (st = spx_device_upload(s->ctx, s->bd, b, (size_t)s->n * s->vs)) ||
        (st = spx_device_upload(s->ctx, s->xd, x, (size_t)s->n * s->vs)))
      return st;
    *db = s->bd;
    *dx = s->xd;
    spx__conv_mark(tr, "solve", "b, x up", &tm);
  } else {
    *db = (spx_devptr)(uintptr_t)b;
    *dx = (spx_devptr)(uintptr_t)x;
  }
  st = spx_context_synchronize(s->ctx);
  spx__conv_mark(tr, "solve", "sync", &tm);
  return st;
}

void spx__g_free(spx__solver *s) {
  int k;
  for (k = 0; k < 9; k++) spx_device_free(s->ctx, s->dv[k]);
  spx_device_free(s->ctx, s->part);
  spx_device_free(s->ctx, s->st);
  spx_device_free(s->ctx, s->hist);
  spx_device_free(s->ctx, s->bd);
  spx_device_free(s->ctx, s->xd);
  spx_device_free(s->ctx, s->sb);
  spx_device_free(s->ctx, s->sx);
  spx__g_graph_free(s);
  if (s->hmap && !spx__ctx_push(s->ctx)) {
    spx__host_free(spx__cuda(), s->hmap);
    spx__ctx_pop(s->ctx);
  }
  s->hmap = NULL;
}

/* b.b on the device (the residual kernel against a zeroed vector), then, only where it leaves
 * [2^-200, 2^200], b's largest entry on the host and scaled copies of b and x in s->sb, s->sx. */
static spx_status spx__g_scale(spx__solver *s, spx_devptr *db, spx_devptr *dx) {
  long long n = s->n;
  spx_devptr z = s->dv[2];
  void *a1[] = {&n, db, &z, &s->part};
  double sums[3], m = 0;
  size_t bytes = (size_t)s->n * s->vs;
  void *hb = NULL, *hx = NULL;
  int64_t i;
  spx_status st;
  if ((st = spx__g_kept(s, spx_device_memset(s->ctx, z, 0, bytes))) || (st = spx__k(s, SPX__K_RESID, s->grid, a1)) ||
      (st = spx__g_sums(s, sums)))
    return st;
  if (sums[0] >= SPX__SCALE_LO * SPX__SCALE_LO && sums[0] <= SPX__SCALE_HI * SPX__SCALE_HI) return SPX_OK;
  /* distributed: every process comes here (b.b is global) and takes part in the max */
  if (!(hb = spx__alloc((size_t)s->n + 1, s->vs)) || !(hx = spx__alloc((size_t)s->n + 1, s->vs))) st = SPX_OUT_OF_MEMORY;
  if (!st) st = spx_device_download(s->ctx, hb, *db, bytes);
  if (!st) m = spx__vmaxabs(hb, s->f, s->n);
  if (spx__g_dist(s)) {
    s->ops->keep(s, st);
    m = s->ops->max(s, m);
    if ((st = s->ops->sum(s, sums))) goto done; /* a failure anywhere stops every process here */
  }
  if (st) goto done;
  if ((s->scale = spx__scale_of(m)) == 1) goto done;
  if ((st = spx_device_download(s->ctx, hx, *dx, bytes))) goto done;
  for (i = 0; i < s->n; i++) {
    spx__vst(hb, s->f, i, s->scale * spx__vld(hb, s->f, i));
    spx__vst(hx, s->f, i, s->scale * spx__vld(hx, s->f, i));
  }
  if ((st = spx_device_alloc(s->ctx, bytes + s->vs, &s->sb)) || (st = spx_device_alloc(s->ctx, bytes + s->vs, &s->sx)) ||
      (st = spx_device_upload(s->ctx, s->sb, hb, bytes)) || (st = spx_device_upload(s->ctx, s->sx, hx, bytes))) {
    st = spx__g_kept(s, st); /* distributed: the next sum stops every process */
    goto done;
  }
  *db = s->sb;
  *dx = s->sx;
  s->o.atol *= s->scale;
done:
  SPX_FREE(hb);
  SPX_FREE(hx);
  return st;
}

/* x = the scaled solution sx / scale, into the caller's x (or its upload). */
static spx_status spx__g_unscale(spx__solver *s, spx_devptr dx) {
  size_t bytes = (size_t)s->n * s->vs;
  void *h = spx__alloc((size_t)s->n + 1, s->vs);
  spx_status st;
  int64_t i;
  if (!h) return SPX_OUT_OF_MEMORY;
  if (!(st = spx_device_download(s->ctx, h, s->sx, bytes))) {
    for (i = 0; i < s->n; i++) spx__vst(h, s->f, i, spx__vld(h, s->f, i) / s->scale);
    st = spx_device_upload(s->ctx, dx, h, bytes);
  }
  SPX_FREE(h);
  return st;
}

spx_status spx__solve_gpu(spx__solver *s, const void *b, void *x) {
  spx_solve_report *rep = s->rep;
  spx_devptr db = 0, dx = 0, ux;
  double t0 = spx__now(), t1;
  spx_status st;
  if (!s->o.poll) s->o.poll = s->o.precond ? 1 : 8;
  st = spx__g_setup(s, b, x, &db, &dx);
  if (spx__g_dist(s)) { /* every process set up, or none goes on */
    double none[3] = {0, 0, 0};
    s->ops->keep(s, st);
    st = s->ops->sum(s, none);
  }
  if (st) return st;
  ux = dx;
  if ((st = spx__g_scale(s, &db, &dx))) return st;
  t1 = spx__now();
  rep->setup_ms += 1e3 * (t1 - t0);
  do {
    t1 = spx__now();
    st = s->method == SPX__SOLVE_BICGSTAB ? spx__g_bicgstab(s, db, dx) : spx__g_cg(s, db, dx);
    if (!st) st = spx__g_state(s); /* waits for the device */
    t0 = spx__now();
    rep->solve_ms += 1e3 * (t0 - t1);
    if (st) return st;
    rep->iterations = s->it0 + (int64_t)s->hst[SPX__ST_IT];
    rep->bnorm = spx__sqrt(s->hst[SPX__ST_BB]);
    rep->tol = spx__sqrt(s->hst[SPX__ST_TOL2]);
    rep->resid = spx__sqrt(s->hst[SPX__ST_RR]);
    {
      /* The true residual: q = A x, then ||b - q|| (q: the third vector, free now). */
      long long n = s->n;
      spx_devptr q = s->dv[2];
      void *a1[] = {&n, &db, &q, &s->part};
      double sums[3];
      if ((st = spx__g_spmv(s, dx, q)) || (st = spx__k(s, SPX__K_RESID, s->grid, a1)) || (st = spx__g_sums(s, sums)))
        return st;
      rep->true_resid = spx__sqrt(sums[0]);
    }
    st = spx__solve_end(s, (int)s->hst[SPX__ST_STATUS], s->hst[SPX__ST_BAD], rep->iterations);
    rep->check_ms += 1e3 * (spx__now() - t0);
  } while (spx__solve_restart(s, &st));
  if (s->hcap) {
    spx_status s2 = spx_device_download(s->ctx, s->o.history, s->hist,
                                        (size_t)SPX__MIN(rep->iterations + 1, s->hcap) * sizeof(double));
    if (s2) return s2;
  }
  if (s->scale != 1) {
    spx_status s2 = spx__g_unscale(s, ux);
    if (s2) return s2;
  }
  if (s->o.host_vectors) {
    spx_status s2 = spx_device_download(s->ctx, x, ux, (size_t)s->n * s->vs);
    if (s2) return s2;
  }
  return st;
}

/* ---- Entry points ---------------------------------------------------------------------------------- */
spx_status spx__solve_check_args(const spx__solver *s, const char *fn, const char *cg, const void *b, const void *x) {
  const spx_solve_options *o = &s->o;
  if (s->n > 0 && (!b || !x)) return spx__fail(SPX_INVALID_ARGUMENT, "%s: %s is NULL", fn, !b ? "b" : "x");
  if (!(o->rtol >= 0) || !(o->atol >= 0) || !spx__finite(o->rtol) || !spx__finite(o->atol))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: rtol = %g and atol = %g must be finite and >= 0", fn, o->rtol, o->atol);
  if (!(o->rtol > 0) && !(o->atol > 0))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: rtol and atol are both 0: give a positive tolerance", fn);
  if (o->maxit < 1) return spx__fail(SPX_INVALID_ARGUMENT, "%s: maxit = %lld; it must be at least 1", fn, (long long)o->maxit);
  if (o->history_len < 0 || (o->history_len > 0 && !o->history))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: history_len = %lld with history %s", fn, (long long)o->history_len,
                     o->history ? "given" : "NULL");
  if (o->poll < 0) return spx__fail(SPX_INVALID_ARGUMENT, "%s: poll = %d must be >= 0", fn, o->poll);
  if (s->method == SPX__SOLVE_PCG_JACOBI && o->precond)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: Jacobi is the preconditioner here; use %s for options.precond", fn, cg);
  return SPX_OK;
}

static spx_status spx__solve_check(const spx__solver *s, const char *fn, const void *b, const void *x) {
  if (!s->A) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL plan", fn);
  if (spx_plan_nrows(s->A) != spx_plan_ncols(s->A))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: the matrix is %lld x %lld; Krylov solvers need a square matrix", fn,
                     (long long)spx_plan_nrows(s->A), (long long)spx_plan_ncols(s->A));
  return spx__solve_check_args(s, fn, "spx_solve_cg", b, x);
}

/* The inverted diagonal for Jacobi; a zero or non-finite a_ii is SPX_INVALID_ARGUMENT. */
static spx_status spx__solve_diag(spx__solver *s, const char *fn) {
  const int64_t n = s->n;
  const int f = s->f;
  int64_t i, bad = n;
  double *d;
  spx_status st;
  if (!(d = s->diag = (double *)spx__alloc((size_t)n + 1, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  if ((st = spx_plan_diagonal(s->A, d))) return st;
  /* in parallel: on a large GPU solve this loop is a visible part of the host setup */
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(min : bad) if (n > 65536)
#endif
  for (i = 0; i < n; i++) {
    if (d[i] == 0 || !spx__finite(d[i])) bad = SPX__MIN(bad, i);
    else d[i] = spx__rd(f, 1.0 / d[i]); /* as the GPU stores it */
  }
  return bad < n ? spx__jacobi_bad(fn, bad, d[bad]) : SPX_OK; /* the first bad entry, untouched */
}

spx_status spx__solve_finish(spx__solver *s, spx_status st) {
  spx_solve_report *r = s->rep;
  int k;
  spx__solve_unscale(s);
  if (r->bnorm > 0) {
    r->rel_resid = r->resid / r->bnorm;
    r->true_rel_resid = r->true_resid / r->bnorm;
  } else {
    r->rel_resid = r->resid;
    r->true_rel_resid = r->true_resid;
  }
  r->restarts = s->restarts;
  r->per_iter_us = r->iterations > 0 ? 1e3 * r->solve_ms / (double)r->iterations : 0;
  r->history_count = s->o.history_len > 0 ? SPX__MIN(r->iterations + 1, s->o.history_len) : 0;
  if (st && st != SPX_BREAKDOWN && st != SPX_NOT_CONVERGED) { /* a failure, not an ending */
    r->status = st;
    snprintf(r->message, sizeof r->message, "%.250s", spx_last_error());
  }
  /* Free everything (the error message survives: frees record nothing). */
  for (k = 0; k < 8; k++) SPX_FREE(s->hv[k]);
  SPX_FREE(s->hb);
  SPX_FREE(s->hx);
  SPX_FREE(s->hpart);
  SPX_FREE(s->diag);
  if (s->cuda) spx__g_free(s);
  return st;
}

static spx_status spx__solve(int method, spx_plan *A, const void *b, void *x, const spx_solve_options *options,
                             spx_solve_report *report) {
  static const char *const fns[] = {"spx_solve_cg", "spx_solve_pcg_jacobi", "spx_solve_bicgstab"};
  static const int vpasses[3][2] = {{10, 12}, {12, 12}, {18, 18}}; /* [method][callback] */
  spx__solver s;
  spx_solve_report scratch;
  double t0 = spx__now(), build0;
  spx_status st;
  memset(&s, 0, sizeof s);
  s.scale = 1;
  s.method = method;
  s.A = A;
  s.rep = report ? report : &scratch;
  memset(s.rep, 0, sizeof *s.rep);
  s.rep->method = spx__solve_names[method];
  if (options) s.o = *options;
  else spx_solve_options_default(&s.o);
  s.n = A ? spx_plan_nrows(A) : 0;
  s.rep->n = s.n;
  if ((st = spx__solve_check(&s, fns[method], b, x))) {
    s.rep->status = st;
    snprintf(s.rep->message, sizeof s.rep->message, "%.250s", spx_last_error());
    return st;
  }
  s.ctx = spx_plan_context(A);
  s.cuda = spx_plan_backend(A) == SPX_BACKEND_CUDA;
  s.f = spx_plan_dtype(A) == SPX_FLOAT;
  s.vs = s.f ? sizeof(float) : sizeof(double);
  s.rep->spmvs_per_iter = method == SPX__SOLVE_BICGSTAB ? 2 : 1;
  s.rep->upgraded_at = -1;
  s.next_check = 4;
  s.rep->vector_bytes_per_iter = (int64_t)vpasses[method][s.o.precond != NULL] * s.n * (int64_t)s.vs;
  s.rep->analysis_ms = spx_plan_select_ms(A);
  build0 = spx_plan_build_ms(A);
  s.jacobi = method == SPX__SOLVE_PCG_JACOBI;
  /* the GPU inverts the plan's diagonal itself (spx__g_setup); a kernel still compiling in the
   * background is waited for: a stand-in that rounds otherwise would make x depend on timing */
  if (!(st = spx_plan_build(A)) && !(st = spx_plan_wait(A)) && (!s.jacobi || s.cuda || !(st = spx__solve_diag(&s, fns[method])))) {
    double tm = t0;
    spx__conv_mark(spx__plan_tracing(), "solve", "build, diag", &tm);
    s.rep->build_ms = spx_plan_build_ms(A);
    /* Without the plan's build when it ran in this call (a lazy plan): that is build_ms. */
    s.rep->setup_ms = 1e3 * (spx__now() - t0) - (build0 == 0 ? s.rep->build_ms : 0);
    if (s.rep->setup_ms < 0) s.rep->setup_ms = 0;
    if (s.n == 0) {
      s.rep->status = SPX_OK;
      snprintf(s.rep->message, sizeof s.rep->message, "%s: empty system", spx__solve_names[method]);
    } else {
      st = s.cuda ? spx__solve_gpu(&s, b, x) : spx__solve_host(&s, b, x);
    }
  }
  return spx__solve_finish(&s, st);
}

spx_status spx_solve_cg(spx_plan *A, const void *b, void *x, const spx_solve_options *options,
                        spx_solve_report *report) {
  return spx__solve(SPX__SOLVE_CG, A, b, x, options, report);
}
spx_status spx_solve_pcg_jacobi(spx_plan *A, const void *b, void *x, const spx_solve_options *options,
                                spx_solve_report *report) {
  return spx__solve(SPX__SOLVE_PCG_JACOBI, A, b, x, options, report);
}
spx_status spx_solve_bicgstab(spx_plan *A, const void *b, void *x, const spx_solve_options *options,
                              spx_solve_report *report) {
  return spx__solve(SPX__SOLVE_BICGSTAB, A, b, x, options, report);
}

spx_status spx_solve_report_print(const spx_solve_report *r, FILE *f, int json) {
  if (!r || !f) return spx__fail(SPX_INVALID_ARGUMENT, "spx_solve_report_print: NULL argument");
  if (json) {
    const char *c;
    fprintf(f, "{\"method\": \"%s\", \"status\": \"%s\", \"n\": %lld, \"iterations\": %lld, \"spmvs\": %lld, "
               "\"precond_calls\": %lld, \"bnorm\": %.17g, \"tol\": %.17g, \"resid\": %.17g, \"rel_resid\": %.17g, "
               "\"true_resid\": %.17g, \"true_rel_resid\": %.17g, \"analysis_ms\": %.6g, \"build_ms\": %.6g, "
               "\"setup_ms\": %.6g, \"jit_ms\": %.6g, \"solve_ms\": %.6g, \"per_iter_us\": %.6g, \"check_ms\": %.6g, "
               "\"vector_bytes_per_iter\": %lld, \"spmvs_per_iter\": %d, \"upgraded_at\": %lld, \"upgrade_ms\": %.6g, "
               "\"graph_launches\": %lld, \"message\": \"",
            r->method ? r->method : "", spx_status_string(r->status), (long long)r->n, (long long)r->iterations,
            (long long)r->spmvs, (long long)r->precond_calls, r->bnorm, r->tol, r->resid, r->rel_resid, r->true_resid,
            r->true_rel_resid, r->analysis_ms, r->build_ms, r->setup_ms, r->jit_ms, r->solve_ms, r->per_iter_us,
            r->check_ms, (long long)r->vector_bytes_per_iter, r->spmvs_per_iter, (long long)r->upgraded_at, r->upgrade_ms,
            (long long)r->graph_launches);
    for (c = r->message; *c; c++) {
      if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
      else if ((unsigned char)*c >= 0x20) fputc(*c, f);
    }
    fprintf(f, "\"}");
    return SPX_OK;
  }
  fprintf(f, "method            %s\n", r->method ? r->method : "");
  fprintf(f, "status            %s: %s\n", spx_status_string(r->status), r->message);
  fprintf(f, "iterations        %lld (%lld SpMVs%s)\n", (long long)r->iterations, (long long)r->spmvs,
          r->precond_calls ? ", preconditioner calls counted separately" : "");
  fprintf(f, "residual          ||r||/||b|| = %.3e by the recurrence, %.3e recomputed (||b - Ax|| = %.3e)\n",
          r->rel_resid, r->true_rel_resid, r->true_resid);
  fprintf(f, "time              setup %.3f ms (plan analysis %.3f ms before, build %.3f ms, solver kernels %.3f ms), "
             "iterations %.3f ms = %.2f us/iteration, check %.3f ms\n",
          r->setup_ms, r->analysis_ms, r->build_ms, r->jit_ms, r->solve_ms, r->per_iter_us, r->check_ms);
  if (r->graph_launches)
    fprintf(f, "graphs            %lld iterations ran as one CUDA graph launch each\n", (long long)r->graph_launches);
  if (r->upgraded_at >= 0)
    fprintf(f, "upgrade           the deferred plan converted after %lld iterations (%.3f ms, in the iterations' time)\n",
            (long long)r->upgraded_at, r->upgrade_ms);
  return SPX_OK;
}
