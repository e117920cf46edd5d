/* SPDX-License-Identifier: BSD-3-Clause */
/* The solvers' host twin (spx/solve.h, solve_host.h): CG, Jacobi PCG and BiCGSTAB on host vectors,
 * in fixed chunks summed in chunk order, taking the GPU path's decisions in the same order
 * (solve_impl.h); the restarts, the recomputed residual and the adaptive-upgrade rate both share. */
#include "common.h"
#include "tuner.h" /* the plan's diagonal */
#include "../solve.h"
#include "solve_host.h"
#if defined(_OPENMP)
#include <omp.h>
#endif


#if defined(_OPENMP)
#define SPX__OMP_CHUNKS _Pragma("omp parallel for schedule(static) if (nc_ > 4)")
#else
#define SPX__OMP_CHUNKS
#endif
/* A loop over the elements in fixed chunks (parallel over chunks); s0..s2 are per-chunk sums that
 * spx__hsum then adds in chunk order. i, lo, hi, s0, s1, s2 are visible in the body. */
#define SPX__HLOOP_BEGIN(S)                                                                      \
  {                                                                                              \
    int64_t c_, nc_ = (S)->nchunks, n_ = (S)->n;                                                 \
    double *pt_ = (S)->hpart;                                                                    \
    SPX__OMP_CHUNKS                                                                              \
    for (c_ = 0; c_ < nc_; c_++) {                                                               \
      int64_t lo = c_ * SPX__HCHUNK, hi = SPX__MIN(n_, lo + SPX__HCHUNK), i;                     \
      double s0 = 0, s1 = 0, s2 = 0;                                                             \
      for (i = lo; i < hi; i++) {
#define SPX__HLOOP_END                                                                           \
      }                                                                                          \
      pt_[3 * c_] = s0; pt_[3 * c_ + 1] = s1; pt_[3 * c_ + 2] = s2;                              \
    }                                                                                            \
  }

/* The chunks' sums in chunk order, then (ops) over the processes; a failure stops the solve. */
static spx_status spx__hsum(spx__solver *s, double out[3]) {
  int64_t c;
  out[0] = out[1] = out[2] = 0;
  for (c = 0; c < s->nchunks; c++) {
    out[0] += s->hpart[3 * c];
    out[1] += s->hpart[3 * c + 1];
    out[2] += s->hpart[3 * c + 2];
  }
  return s->ops ? s->ops->sum(s, out) : SPX_OK;
}

/* Terms a.b and b.c (c may be NULL). */
static spx_status spx__h_dot2(spx__solver *s, const void *a, const void *b, const void *c, double out[3]) {
  const int f = s->f;
  SPX__HLOOP_BEGIN(s)
    double bi = spx__vld(b, f, i);
    s0 += spx__vld(a, f, i) * bi;
    if (c) s1 += bi * spx__vld(c, f, i);
  SPX__HLOOP_END
  return spx__hsum(s, out);
}

/* Natural logarithm of x > 0 without libm (users link -ldl -lz only): x = m 2^e with m in [1, 2),
 * ln m = 2 atanh((m - 1) / (m + 1)) by its series (|y| <= 1/3: 1e-15 in 16 terms). */
static double spx__ln(double x) {
  double y, y2, term, sum = 0;
  int e = 0, k;
  if (!(x > 0) || !spx__finite(x)) return 0;
  while (x >= 2) { x *= 0.5; e++; }
  while (x < 1) { x *= 2; e--; }
  y = (x - 1) / (x + 1);
  y2 = y * y;
  term = y;
  for (k = 1; k < 40; k += 2) { sum += term / k; term *= y2; }
  return 2 * sum + e * 0.69314718055994530942;
}

/* A deferred plan (spx_plan_options.defer) after `it` iterations with residual norm `res`: upgrade
 * it when solve_options.upgrade_at says so, or (-1) when the iterations left, from the residual's
 * geometric rate since this run's start, times the SpMVs they make, save more than the pending
 * conversion costs. Looked at when it reaches next_check (4, then doubling), so that a short solve
 * never converts and a long one converts early. A failed upgrade leaves the running plan (a
 * warning); the solve goes on. */
void spx__solve_adapt(spx__solver *s, int64_t it, double res) {
  spx_plan_pending_info pi;
  int go = 0;
  if (s->o.upgrade_at == 0 || s->rep->upgraded_at >= 0 || !spx_plan_pending(s->A, &pi)) return;
  if (s->o.upgrade_at > 0) go = it >= s->o.upgrade_at;
  else if (it >= s->next_check && it > s->it0) {
    double left = (double)(s->o.maxit - it), rate;
    s->next_check = 2 * it;
    if (s->r0 > 0 && res > 0 && res < s->r0 && s->rep->tol > 0 && res > s->rep->tol) {
      /* ||r|| shrank by res / r0 in it - it0 iterations; tol / res more at that rate */
      rate = spx__ln(res / s->r0);
      if (rate < 0) left = SPX__MIN(left, (double)(it - s->it0) * spx__ln(s->rep->tol / res) / rate);
    }
    go = left * s->rep->spmvs_per_iter * (pi.current_us - pi.pending_us) * 1e-3 > pi.convert_ms;
  }
  if (!go) return;
  {
    double t0 = spx__now();
    if (spx_plan_upgrade(s->A)) {
      spx__warn("%s: %s; the solve goes on with the plan it started on\n", spx__solve_names[s->method], spx_last_error());
      spx_clear_error();
      s->o.upgrade_at = 0;
      return;
    }
    s->rep->upgraded_at = it;
    s->rep->upgrade_ms = 1e3 * (spx__now() - t0);
  }
}

static spx_status spx__h_precond(spx__solver *s, const void *r, void *z) {
  spx_status st;
  s->rep->precond_calls++;
  if (s->ops) return s->ops->precond(s, r, z);
  if ((st = s->o.precond(s->o.precond_data, r, z)))
    return spx__wrap(st, "%s: the preconditioner callback failed", spx__solve_names[s->method]);
  return SPX_OK;
}

static spx_status spx__h_spmv(spx__solver *s, const void *x, void *y) {
  s->rep->spmvs++;
  return s->ops ? s->ops->spmv(s, x, y) : spx_plan_spmv(s->A, 1.0, x, 0.0, y);
}

/* Both methods' start from ||r0||^2 = rr and ||b||^2 = bb: the tolerance squared (*tol2), the
 * report's norms, the history's entry it, s->r0; 1 where the solve ends there (*st its end: a
 * norm not finite, or x0 already converged). */
static int spx__h_started(spx__solver *s, double rr, double bb, int64_t it, double *tol2, spx_status *st) {
  spx_solve_report *rep = s->rep;
  *tol2 = SPX__MAX(s->o.rtol * s->o.rtol * bb, s->o.atol * s->o.atol);
  rep->bnorm = spx__sqrt(bb);
  rep->tol = spx__sqrt(*tol2);
  rep->resid = spx__sqrt(rr);
  if (it < s->o.history_len) s->o.history[it] = rep->resid;
  s->r0 = rep->resid;
  if (!spx__finite(rr) || !spx__finite(bb)) *st = spx__solve_end(s, SPX__KS_NONFINITE, rr, it);
  else if (rr <= *tol2) *st = spx__solve_end(s, SPX__KS_CONVERGED, 0, it);
  else return 0;
  return 1;
}

/* CG; with s->diag Jacobi, with o.precond the callback. hv: r, p, q, z. */
static spx_status spx__h_cg(spx__solver *s, const void *b, void *x) {
  const int f = s->f, cb = s->o.precond != NULL;
  const double *dinv = s->diag;
  void *r = s->hv[0], *p = s->hv[1], *q = s->hv[2], *z = s->hv[3];
  spx_solve_report *rep = s->rep;
  double t[3], tol2, rz, alpha, beta;
  int64_t it = s->it0;
  spx_status st;
  if ((st = spx__h_spmv(s, x, q))) return st;
  SPX__HLOOP_BEGIN(s)
    double bi = spx__vld(b, f, i), rd = spx__rd(f, bi - spx__vld(q, f, i)), zd = dinv ? dinv[i] * rd : rd;
    spx__vst(r, f, i, rd);
    if (!cb) spx__vst(p, f, i, zd);
    s0 += rd * rd;
    s1 += bi * bi;
    s2 += rd * zd;
  SPX__HLOOP_END
  if ((st = spx__hsum(s, t))) return st;
  if (spx__h_started(s, t[0], t[1], it, &tol2, &st)) return st;
  rz = t[2];
  if (cb) {
    if ((st = spx__h_precond(s, r, z))) return st;
    if ((st = spx__h_dot2(s, r, z, NULL, t))) return st;
    rz = t[0];
    memcpy(p, z, (size_t)s->n * s->vs);
  }
  if (!(rz > 0) || !spx__finite(rz)) return spx__solve_end(s, SPX__KS_PREC_NOT_SPD, rz, it);
  while (it < s->o.maxit) {
    double rr, rzn;
    int finish;
    if ((st = spx__h_spmv(s, p, q))) return st;
    if ((st = spx__h_dot2(s, p, q, NULL, t))) return st;
    if (!(t[0] > 0) || !spx__finite(t[0])) return spx__solve_end(s, SPX__KS_NOT_SPD, t[0], it);
    alpha = rz / t[0];
    SPX__HLOOP_BEGIN(s)
      double rd = spx__rd(f, spx__vld(r, f, i) - alpha * spx__vld(q, f, i));
      spx__vst(r, f, i, rd);
      s0 += rd * rd;
      s1 += dinv ? rd * dinv[i] * rd : rd * rd;
    SPX__HLOOP_END
    if ((st = spx__hsum(s, t))) return st;
    rr = t[0];
    it++;
    rep->resid = spx__sqrt(rr);
    if (it < s->o.history_len) s->o.history[it] = rep->resid;
    rzn = t[1];
    finish = 0;
    if (rr <= tol2) finish = SPX__KS_CONVERGED;
    else if (!spx__finite(rr)) return spx__solve_end(s, SPX__KS_NONFINITE, rr, it);
    else if (cb) {
      if ((st = spx__h_precond(s, r, z))) return st;
      if ((st = spx__h_dot2(s, r, z, NULL, t))) return st;
      rzn = t[0];
    }
    if (!finish && (!(rzn > 0) || !spx__finite(rzn))) finish = SPX__KS_PREC_NOT_SPD;
    if (finish) { /* the stopping iteration's x update */
      SPX__HLOOP_BEGIN(s)
        spx__vst(x, f, i, spx__vld(x, f, i) + alpha * spx__vld(p, f, i));
      SPX__HLOOP_END
      return spx__solve_end(s, finish, rzn, it);
    }
    spx__solve_adapt(s, it, rep->resid);
    beta = rzn / rz;
    rz = rzn;
    SPX__HLOOP_BEGIN(s)
      double pi = spx__vld(p, f, i);
      double zi = cb ? spx__vld(z, f, i) : dinv ? dinv[i] * spx__vld(r, f, i) : spx__vld(r, f, i);
      spx__vst(x, f, i, spx__vld(x, f, i) + alpha * pi);
      spx__vst(p, f, i, zi + beta * pi);
    SPX__HLOOP_END
  }
  return spx__solve_end(s, SPX__KS_RUNNING, 0, it);
}

/* BiCGSTAB, right-preconditioned by the callback. hv: r (also s), r0, p, v, t, phat, shat. */
static spx_status spx__h_bicgstab(spx__solver *s, const void *b, void *x) {
  const int f = s->f, cb = s->o.precond != NULL;
  void *r = s->hv[0], *r0 = s->hv[1], *p = s->hv[2], *v = s->hv[3], *t = s->hv[4];
  void *ph = cb ? s->hv[5] : p, *sh = cb ? s->hv[6] : r;
  spx_solve_report *rep = s->rep;
  double d[3], tol2, r0n2, rho, alpha, omega = 1, beta, ss;
  int64_t it = s->it0;
  spx_status st;
  if ((st = spx__h_spmv(s, x, v))) return st;
  SPX__HLOOP_BEGIN(s)
    double bi = spx__vld(b, f, i), rd = spx__rd(f, bi - spx__vld(v, f, i));
    spx__vst(r, f, i, rd);
    spx__vst(r0, f, i, rd);
    spx__vst(p, f, i, rd);
    s0 += rd * rd;
    s1 += bi * bi;
  SPX__HLOOP_END
  if ((st = spx__hsum(s, d))) return st;
  if (spx__h_started(s, d[0], d[1], it, &tol2, &st)) return st;
  r0n2 = rho = d[0];
  while (it < s->o.maxit) {
    double rr, rhon;
    if (cb && (st = spx__h_precond(s, p, ph))) return st;
    if ((st = spx__h_spmv(s, ph, v))) return st;
    if ((st = spx__h_dot2(s, r0, v, v, d))) return st;
    if (!spx__finite(d[0]) || !spx__finite(d[1]) || spx__fabs(d[0]) <= SPX__KRY_EPS * spx__sqrt(r0n2 * d[1]))
      return spx__solve_end(s, SPX__KS_R0V, d[0], it);
    alpha = rho / d[0];
    SPX__HLOOP_BEGIN(s)
      double sd = spx__rd(f, spx__vld(r, f, i) - alpha * spx__vld(v, f, i));
      spx__vst(r, f, i, sd);
      s0 += sd * sd;
    SPX__HLOOP_END
    if ((st = spx__hsum(s, d))) return st;
    ss = d[0];
    if (ss <= tol2 || !spx__finite(ss)) {
      if (!spx__finite(ss)) return spx__solve_end(s, SPX__KS_NONFINITE, ss, it);
      it++;
      rep->resid = spx__sqrt(ss);
      if (it < s->o.history_len) s->o.history[it] = rep->resid;
      SPX__HLOOP_BEGIN(s)
        spx__vst(x, f, i, spx__vld(x, f, i) + alpha * spx__vld(ph, f, i));
      SPX__HLOOP_END
      return spx__solve_end(s, SPX__KS_CONVERGED, 0, it);
    }
    if (cb && (st = spx__h_precond(s, r, sh))) return st;
    if ((st = spx__h_spmv(s, sh, t))) return st;
    if ((st = spx__h_dot2(s, r, t, t, d))) return st;
    if (!(d[1] > 0) || !spx__finite(d[0]) || !spx__finite(d[1]) || spx__fabs(d[0]) <= SPX__KRY_EPS * spx__sqrt(d[1] * ss)) {
      SPX__HLOOP_BEGIN(s)
        spx__vst(x, f, i, spx__vld(x, f, i) + alpha * spx__vld(ph, f, i));
      SPX__HLOOP_END
      rep->resid = spx__sqrt(ss);
      return spx__solve_end(s, SPX__KS_OMEGA, d[0], it);
    }
    omega = d[0] / d[1];
    SPX__HLOOP_BEGIN(s)
      double sd = spx__vld(r, f, i), rd;
      spx__vst(x, f, i, spx__vld(x, f, i) + alpha * spx__vld(ph, f, i) + omega * spx__vld(sh, f, i));
      rd = spx__rd(f, sd - omega * spx__vld(t, f, i));
      spx__vst(r, f, i, rd);
      s0 += spx__vld(r0, f, i) * rd;
      s1 += rd * rd;
    SPX__HLOOP_END
    if ((st = spx__hsum(s, d))) return st;
    rhon = d[0];
    rr = d[1];
    it++;
    rep->resid = spx__sqrt(rr);
    if (it < s->o.history_len) s->o.history[it] = rep->resid;
    if (rr <= tol2) return spx__solve_end(s, SPX__KS_CONVERGED, 0, it);
    if (!spx__finite(rr)) return spx__solve_end(s, SPX__KS_NONFINITE, rr, it);
    if (!spx__finite(rhon) || spx__fabs(rhon) <= SPX__KRY_EPS * spx__sqrt(r0n2 * rr))
      return spx__solve_end(s, SPX__KS_RHO, rhon, it);
    spx__solve_adapt(s, it, rep->resid);
    beta = (rhon / rho) * (alpha / omega);
    rho = rhon;
    SPX__HLOOP_BEGIN(s)
      spx__vst(p, f, i, spx__vld(r, f, i) + beta * (spx__vld(p, f, i) - omega * spx__vld(v, f, i)));
    SPX__HLOOP_END
  }
  return spx__solve_end(s, SPX__KS_RUNNING, 0, it);
}

/* ||b - A x|| from scratch (hv[2] as scratch: q of CG, p of BiCGSTAB, no longer needed). */
static spx_status spx__h_true_resid(spx__solver *s, const void *b, const void *x, double *out) {
  const int f = s->f;
  void *q = s->hv[2];
  double t[3];
  spx_status st;
  if ((st = spx__h_spmv(s, x, q))) return st;
  SPX__HLOOP_BEGIN(s)
    double dd = spx__vld(b, f, i) - spx__vld(q, f, i);
    s0 += dd * dd;
  SPX__HLOOP_END
  if ((st = spx__hsum(s, t))) return st;
  *out = spx__sqrt(t[0]);
  return SPX_OK;
}

/* After a run that converged by the recurrence: 1 to run again from x (the recomputed residual
 * missed the tolerance and a restart is left), else the final status (SPX__KS_GAP when it missed). */
int spx__solve_restart(spx__solver *s, spx_status *st) {
  spx_solve_report *r = s->rep;
  int rho = *st == SPX_BREAKDOWN && s->why == SPX__KS_RHO; /* BiCGSTAB: start again with r0^ = r */
  if (!rho && (*st != SPX_OK || r->true_resid <= r->tol)) return 0;
  if (rho) return s->restarts < SPX__RESTARTS && r->iterations < s->o.maxit ? (s->restarts++, s->it0 = r->iterations, spx_clear_error(), 1) : 0;
  if (s->restarts < SPX__RESTARTS && r->iterations < s->o.maxit) {
    s->restarts++;
    s->it0 = r->iterations;
    spx_clear_error();
    return 1;
  }
  *st = spx__solve_end(s, SPX__KS_GAP, r->true_resid, r->iterations);
  return 0;
}

/* The host twin's workspace: the chunks' partial sums and the method's vectors. */
spx_status spx__solve_host_alloc(spx__solver *s) {
  int nv = s->method == SPX__SOLVE_BICGSTAB ? 7 : 4, k;
  s->nchunks = (s->n + SPX__HCHUNK - 1) / SPX__HCHUNK;
  if (!(s->hpart = (double *)spx__calloc((size_t)(3 * s->nchunks + 3), sizeof(double)))) return SPX_OUT_OF_MEMORY;
  for (k = 0; k < nv; k++)
    if (!(s->hv[k] = spx__alloc((size_t)s->n + 1, s->vs))) return SPX_OUT_OF_MEMORY;
  return SPX_OK;
}

spx_status spx__solve_host(spx__solver *s, const void *b, void *x) {
  spx_solve_report *rep = s->rep;
  spx_status st = SPX_OK, st2;
  double t0 = spx__now(), t1, m;
  void *xu = x; /* the caller's x, when the solve runs on a scaled copy */
  if (!s->hpart && (st = spx__solve_host_alloc(s))) return st;
  m = spx__vmaxabs(b, s->f, s->n);
  if ((s->scale = spx__scale_of(s->ops ? s->ops->max(s, m) : m)) != 1) {
    int64_t i;
    if (!(s->hb = spx__alloc((size_t)s->n + 1, s->vs)) || !(s->hx = spx__alloc((size_t)s->n + 1, s->vs))) {
      if (!s->ops) return SPX_OUT_OF_MEMORY;
      s->ops->keep(s, SPX_OUT_OF_MEMORY); /* the first sum stops every process */
    } else {
      for (i = 0; i < s->n; i++) {
        spx__vst(s->hb, s->f, i, s->scale * spx__vld(b, s->f, i));
        spx__vst(s->hx, s->f, i, s->scale * spx__vld(x, s->f, i));
      }
      b = s->hb;
      x = s->hx;
    }
    s->o.atol *= s->scale;
  }
  t1 = spx__now();
  rep->setup_ms += 1e3 * (t1 - t0);
  do {
    t1 = spx__now();
    if (s->method == SPX__SOLVE_BICGSTAB) st = spx__h_bicgstab(s, b, x);
    else st = spx__h_cg(s, b, x);
    t0 = spx__now();
    rep->solve_ms += 1e3 * (t0 - t1);
    /* The true residual, unless the matrix product or the preconditioner failed. */
    if (st == SPX_OK || st == SPX_NOT_CONVERGED || st == SPX_BREAKDOWN) {
      char keep[1024];
      snprintf(keep, sizeof keep, "%s", spx_last_error());
      if ((st2 = spx__h_true_resid(s, b, x, &rep->true_resid))) return st2;
      if (st) spx__fail(st, "%s", keep);
    }
    rep->check_ms += 1e3 * (spx__now() - t0);
  } while (spx__solve_restart(s, &st));
  if (s->scale != 1 && x != xu) {
    int64_t i;
    for (i = 0; i < s->n; i++) spx__vst(xu, s->f, i, spx__vld(x, s->f, i) / s->scale);
  }
  return st;
}
