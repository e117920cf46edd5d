/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/dist.h's solvers: distributed CG, Jacobi PCG and BiCGSTAB, which follow the host twin of
 * solve_impl.h step for step (the same chunked sums, the same decisions in the same order) with the
 * SpMV and the global sums replaced; the sums of every rank are added in rank order on every rank. */
#include <math.h>
#include <string.h>
#include "common.h"
#include "../dist.h"
#include "dist_matrix.h"

/* ---- The solvers ------------------------------------------------------------------------------------
 * solve_impl.h's host twin with two substitutions: the SpMV is the distributed one, and each sum
 * of chunk partials is followed by the global sum in rank order. A local failure (the SpMV, the
 * preconditioner) is kept until the next global sum, which carries it (a fourth term) to every
 * rank, so all ranks leave together; every decision is taken on globally summed numbers, which
 * are the same bits on every rank, so every rank runs the same iterations. */
#define SPX__DCHUNK 8192 /* solve_impl.h's SPX__HCHUNK: one rank then sums exactly as spx_solve_* */
#define SPX__DRESTARTS 3
#define SPX__DKRY_EPS 1e-14

enum { SPX__DS_CG, SPX__DS_PCG_JACOBI, SPX__DS_BICGSTAB };
static const char *const spx__ds_names[] = {"cg", "pcg_jacobi", "bicgstab"};
static const char *const spx__ds_fns[] = {"spx_dist_solve_cg", "spx_dist_solve_pcg_jacobi", "spx_dist_solve_bicgstab"};

/* Why a solve stopped (solve_impl.h's SPX__KS_*). */
enum { SPX__DK_RUNNING, SPX__DK_CONVERGED, SPX__DK_NOT_SPD, SPX__DK_PREC_NOT_SPD, SPX__DK_NONFINITE, SPX__DK_RHO,
       SPX__DK_R0V, SPX__DK_OMEGA, SPX__DK_GAP };

typedef struct spx__dsolver {
  spx_dist_matrix *A;
  int method, f, cb;
  int64_t n, nchunks;        /* this rank's rows */
  size_t vs;
  spx_solve_options o;
  spx_solve_report *rep;
  double *dinv, *part, *all; /* Jacobi 1/a_ii; 3 sums per chunk; 4 per rank (gathered) */
  void *hv[7];
  void *hb, *hx;             /* b and x scaled (see solve_impl.h, "Scaling") */
  double scale;
  int64_t it0;
  int restarts, why;
  spx_status err;            /* a local failure waiting for the next global sum */
  char errmsg[500];
} spx__dsolver;

static int spx__ds_finite(double x) { return x - x == 0.0; }
static double spx__ds_ld(const void *v, int f, int64_t i) {
  return f ? (double)((const float *)v)[i] : ((const double *)v)[i];
}
static void spx__ds_st(void *v, int f, int64_t i, double x) {
  if (f) ((float *)v)[i] = (float)x;
  else ((double *)v)[i] = x;
}
static double spx__ds_rd(int f, double x) { return f ? (double)(float)x : x; }

static void spx__ds_keep(spx__dsolver *s, spx_status st) {
  if (st && !s->err) {
    s->err = st;
    snprintf(s->errmsg, sizeof s->errmsg, "%.499s", spx_last_error());
  }
}

#if defined(_OPENMP)
#define SPX__DS_OMP _Pragma("omp parallel for schedule(static) if (nc_ > 4)")
#else
#define SPX__DS_OMP
#endif
/* A loop over this rank's entries in fixed chunks, as solve_impl.h's SPX__HLOOP. */
#define SPX__DLOOP_BEGIN(S)                                                                      \
  {                                                                                              \
    int64_t c_, nc_ = (S)->nchunks, n_ = (S)->n;                                                 \
    double *pt_ = (S)->part;                                                                     \
    SPX__DS_OMP                                                                                  \
    for (c_ = 0; c_ < nc_; c_++) {                                                               \
      int64_t lo = c_ * SPX__DCHUNK, hi = SPX__MIN(n_, lo + SPX__DCHUNK), i;                     \
      double s0 = 0, s1 = 0, s2 = 0;                                                             \
      for (i = lo; i < hi; i++) {
#define SPX__DLOOP_END                                                                           \
      }                                                                                          \
      pt_[3 * c_] = s0; pt_[3 * c_ + 1] = s1; pt_[3 * c_ + 2] = s2;                              \
    }                                                                                            \
  }

/* The global sums: this rank's chunks in order, then every rank's in rank order, with the pending
 * local failure as a fourth term. Returns the agreed status (the first failing rank's). */
static spx_status spx__ds_sum(spx__dsolver *s, double out[3]) {
  spx_dist_matrix *d = s->A;
  double mine[4] = {0, 0, 0, (double)s->err}, t0 = spx__now();
  int64_t c;
  int r;
  for (c = 0; c < s->nchunks; c++) {
    mine[0] += s->part[3 * c];
    mine[1] += s->part[3 * c + 1];
    mine[2] += s->part[3 * c + 2];
  }
  MPI_Allgather(mine, 4, MPI_DOUBLE, s->all, 4, MPI_DOUBLE, d->comm);
  out[0] = out[1] = out[2] = 0;
  for (r = 0; r < d->size; r++) {
    if (s->all[4 * r + 3] != 0) {
      spx_status st = spx__dist_spread(d->comm, d->rank, r, s->err, s->errmsg);
      if (s->err) spx__fail(s->err, "%s", s->errmsg); /* its own sentence, not a later one */
      return st;
    }
    out[0] += s->all[4 * r];
    out[1] += s->all[4 * r + 1];
    out[2] += s->all[4 * r + 2];
  }
  d->stats.reduce_ms += 1e3 * (spx__now() - t0);
  return SPX_OK;
}

/* Terms a.b and b.c (c may be NULL), summed globally. */
static spx_status spx__ds_dot2(spx__dsolver *s, const void *a, const void *b, const void *c, double out[3]) {
  const int f = s->f;
  SPX__DLOOP_BEGIN(s)
    double bi = spx__ds_ld(b, f, i);
    s0 += spx__ds_ld(a, f, i) * bi;
    if (c) s1 += bi * spx__ds_ld(c, f, i);
  SPX__DLOOP_END
  return spx__ds_sum(s, out);
}

static void spx__ds_spmv(spx__dsolver *s, const void *x, void *y) {
  s->rep->spmvs++;
  spx__ds_keep(s, spx__dist_spmv(s->A, 1.0, x, 0.0, y));
}

static void spx__ds_precond(spx__dsolver *s, const void *r, void *z) {
  spx_status st;
  s->rep->precond_calls++;
  if (!s->err && (st = s->o.precond(s->o.precond_data, r, z)))
    spx__ds_keep(s, spx__wrap(st, "%s: the preconditioner callback failed", spx__ds_names[s->method]));
}

/* The end of a run: solve_impl.h's messages, with the rank count. */
static spx_status spx__ds_end(spx__dsolver *s, int why, double bad, int64_t it) {
  spx_solve_report *r = s->rep;
  const char *m = spx__ds_names[s->method];
  char msg[256];
  spx_status st = SPX_BREAKDOWN;
  s->why = why;
  r->rel_resid = r->bnorm > 0 ? r->resid / r->bnorm : r->resid;
  switch (why) {
  case SPX__DK_CONVERGED:
    st = SPX_OK;
    snprintf(msg, sizeof msg, "%s: converged in %lld iterations, ||r|| = %.3g <= %.3g", m, (long long)it, r->resid, r->tol);
    break;
  case SPX__DK_NOT_SPD:
    snprintf(msg, sizeof msg, "%s: p.Ap = %.3g <= 0 in iteration %lld: the matrix is not symmetric positive definite",
             m, bad, (long long)it + 1);
    break;
  case SPX__DK_PREC_NOT_SPD:
    snprintf(msg, sizeof msg, "%s: r.z = %.3g <= 0 after iteration %lld: the preconditioner (or the matrix) is not "
             "symmetric positive definite", m, bad, (long long)it);
    break;
  case SPX__DK_NONFINITE:
    snprintf(msg, sizeof msg, "%s: the residual norm became %g after iteration %lld (NaN or Inf in the matrix, b, x "
             "or the preconditioner)", m, bad, (long long)it);
    break;
  case SPX__DK_RHO:
    snprintf(msg, sizeof msg, "%s: rho = r0^.r = %.3g ~ 0 after iteration %lld (breakdown; restart from x with a new r0^)",
             m, bad, (long long)it);
    break;
  case SPX__DK_R0V:
    snprintf(msg, sizeof msg, "%s: r0^.v = %.3g ~ 0 in iteration %lld (breakdown)", m, bad, (long long)it + 1);
    break;
  case SPX__DK_OMEGA:
    snprintf(msg, sizeof msg, "%s: omega = t.s/t.t ~ 0 (t.s = %.3g) in iteration %lld (breakdown; x took the half step)",
             m, bad, (long long)it + 1);
    break;
  case SPX__DK_GAP:
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
  snprintf(r->message, sizeof r->message, "%.236s (%d ranks)", msg, s->A->size);
  if (st) spx__fail(st, "%s", r->message);
  return st;
}

static void spx__ds_hist(spx__dsolver *s, int64_t it, double v) {
  if (it < s->o.history_len) s->o.history[it] = v;
}

/* CG; Jacobi with s->dinv, the callback with s->cb. hv: r, p, q, z. */
static spx_status spx__ds_cg(spx__dsolver *s, const void *b, void *x) {
  const int f = s->f, cb = s->cb;
  const double *dinv = s->dinv;
  void *r = s->hv[0], *p = s->hv[1], *q = s->hv[2], *z = s->hv[3];
  spx_solve_report *rep = s->rep;
  double t[3], tol2, rz, alpha, beta;
  int64_t it = s->it0;
  spx_status st;
  spx__ds_spmv(s, x, q);
  SPX__DLOOP_BEGIN(s)
    double bi = spx__ds_ld(b, f, i), rd = spx__ds_rd(f, bi - spx__ds_ld(q, f, i)), zd = dinv ? dinv[i] * rd : rd;
    spx__ds_st(r, f, i, rd);
    if (!cb) spx__ds_st(p, f, i, zd);
    s0 += rd * rd;
    s1 += bi * bi;
    s2 += rd * zd;
  SPX__DLOOP_END
  if ((st = spx__ds_sum(s, t))) return st;
  tol2 = SPX__MAX(s->o.rtol * s->o.rtol * t[1], s->o.atol * s->o.atol);
  rep->bnorm = spx__sqrt(t[1]);
  rep->tol = spx__sqrt(tol2);
  rep->resid = spx__sqrt(t[0]);
  spx__ds_hist(s, it, rep->resid);
  if (!spx__ds_finite(t[0]) || !spx__ds_finite(t[1])) return spx__ds_end(s, SPX__DK_NONFINITE, t[0], it);
  if (t[0] <= tol2) return spx__ds_end(s, SPX__DK_CONVERGED, 0, it);
  rz = t[2];
  if (cb) {
    spx__ds_precond(s, r, z);
    if ((st = spx__ds_dot2(s, r, z, NULL, t))) return st;
    rz = t[0];
    memcpy(p, z, (size_t)s->n * s->vs);
  }
  if (!(rz > 0) || !spx__ds_finite(rz)) return spx__ds_end(s, SPX__DK_PREC_NOT_SPD, rz, it);
  while (it < s->o.maxit) {
    double rr, rzn;
    int finish = 0;
    spx__ds_spmv(s, p, q);
    if ((st = spx__ds_dot2(s, p, q, NULL, t))) return st;
    if (!(t[0] > 0) || !spx__ds_finite(t[0])) return spx__ds_end(s, SPX__DK_NOT_SPD, t[0], it);
    alpha = rz / t[0];
    SPX__DLOOP_BEGIN(s)
      double rd = spx__ds_rd(f, spx__ds_ld(r, f, i) - alpha * spx__ds_ld(q, f, i));
      spx__ds_st(r, f, i, rd);
      s0 += rd * rd;
      s1 += dinv ? rd * dinv[i] * rd : rd * rd;
    SPX__DLOOP_END
    if ((st = spx__ds_sum(s, t))) return st;
    rr = t[0];
    it++;
    rep->resid = spx__sqrt(rr);
    spx__ds_hist(s, it, rep->resid);
    rzn = t[1];
    if (rr <= tol2) finish = SPX__DK_CONVERGED;
    else if (!spx__ds_finite(rr)) return spx__ds_end(s, SPX__DK_NONFINITE, rr, it);
    else if (cb) {
      spx__ds_precond(s, r, z);
      if ((st = spx__ds_dot2(s, r, z, NULL, t))) return st;
      rzn = t[0];
    }
    if (!finish && (!(rzn > 0) || !spx__ds_finite(rzn))) finish = SPX__DK_PREC_NOT_SPD;
    if (finish) { /* the stopping iteration's x update */
      SPX__DLOOP_BEGIN(s)
        spx__ds_st(x, f, i, spx__ds_ld(x, f, i) + alpha * spx__ds_ld(p, f, i));
      SPX__DLOOP_END
      return spx__ds_end(s, finish, rzn, it);
    }
    beta = rzn / rz;
    rz = rzn;
    SPX__DLOOP_BEGIN(s)
      double pi = spx__ds_ld(p, f, i);
      double zi = cb ? spx__ds_ld(z, f, i) : dinv ? dinv[i] * spx__ds_ld(r, f, i) : spx__ds_ld(r, f, i);
      spx__ds_st(x, f, i, spx__ds_ld(x, f, i) + alpha * pi);
      spx__ds_st(p, f, i, zi + beta * pi);
    SPX__DLOOP_END
  }
  return spx__ds_end(s, SPX__DK_RUNNING, 0, it);
}

/* x += alpha phat (BiCGSTAB's half step). */
static void spx__ds_half(spx__dsolver *s, void *x, const void *ph, double alpha) {
  const int f = s->f;
  SPX__DLOOP_BEGIN(s)
    spx__ds_st(x, f, i, spx__ds_ld(x, f, i) + alpha * spx__ds_ld(ph, f, i));
  SPX__DLOOP_END
}

/* BiCGSTAB, right-preconditioned by the callback. hv: r (also s), r0, p, v, t, phat, shat. */
static spx_status spx__ds_bicgstab(spx__dsolver *s, const void *b, void *x) {
  const int f = s->f, cb = s->cb;
  void *r = s->hv[0], *r0 = s->hv[1], *p = s->hv[2], *v = s->hv[3], *t = s->hv[4];
  void *ph = cb ? s->hv[5] : p, *sh = cb ? s->hv[6] : r;
  spx_solve_report *rep = s->rep;
  double d[3], tol2, r0n2, rho, alpha, omega = 1, beta, ss;
  int64_t it = s->it0;
  spx_status st;
  spx__ds_spmv(s, x, v);
  SPX__DLOOP_BEGIN(s)
    double bi = spx__ds_ld(b, f, i), rd = spx__ds_rd(f, bi - spx__ds_ld(v, f, i));
    spx__ds_st(r, f, i, rd);
    spx__ds_st(r0, f, i, rd);
    spx__ds_st(p, f, i, rd);
    s0 += rd * rd;
    s1 += bi * bi;
  SPX__DLOOP_END
  if ((st = spx__ds_sum(s, d))) return st;
  tol2 = SPX__MAX(s->o.rtol * s->o.rtol * d[1], s->o.atol * s->o.atol);
  rep->bnorm = spx__sqrt(d[1]);
  rep->tol = spx__sqrt(tol2);
  rep->resid = spx__sqrt(d[0]);
  r0n2 = rho = d[0];
  spx__ds_hist(s, it, rep->resid);
  if (!spx__ds_finite(d[0]) || !spx__ds_finite(d[1])) return spx__ds_end(s, SPX__DK_NONFINITE, d[0], it);
  if (d[0] <= tol2) return spx__ds_end(s, SPX__DK_CONVERGED, 0, it);
  while (it < s->o.maxit) {
    double rr, rhon;
    if (cb) spx__ds_precond(s, p, ph);
    spx__ds_spmv(s, ph, v);
    if ((st = spx__ds_dot2(s, r0, v, v, d))) return st;
    if (!spx__ds_finite(d[0]) || !spx__ds_finite(d[1]) || SPX__ABS(d[0]) <= SPX__DKRY_EPS * spx__sqrt(r0n2 * d[1]))
      return spx__ds_end(s, SPX__DK_R0V, d[0], it);
    alpha = rho / d[0];
    SPX__DLOOP_BEGIN(s)
      double sd = spx__ds_rd(f, spx__ds_ld(r, f, i) - alpha * spx__ds_ld(v, f, i));
      spx__ds_st(r, f, i, sd);
      s0 += sd * sd;
    SPX__DLOOP_END
    if ((st = spx__ds_sum(s, d))) return st;
    ss = d[0];
    if (ss <= tol2 || !spx__ds_finite(ss)) {
      if (!spx__ds_finite(ss)) return spx__ds_end(s, SPX__DK_NONFINITE, ss, it);
      it++;
      rep->resid = spx__sqrt(ss);
      spx__ds_hist(s, it, rep->resid);
      spx__ds_half(s, x, ph, alpha);
      return spx__ds_end(s, SPX__DK_CONVERGED, 0, it);
    }
    if (cb) spx__ds_precond(s, r, sh);
    spx__ds_spmv(s, sh, t);
    if ((st = spx__ds_dot2(s, r, t, t, d))) return st;
    if (!(d[1] > 0) || !spx__ds_finite(d[0]) || !spx__ds_finite(d[1]) ||
        SPX__ABS(d[0]) <= SPX__DKRY_EPS * spx__sqrt(d[1] * ss)) {
      spx__ds_half(s, x, ph, alpha);
      rep->resid = spx__sqrt(ss);
      return spx__ds_end(s, SPX__DK_OMEGA, d[0], it);
    }
    omega = d[0] / d[1];
    SPX__DLOOP_BEGIN(s)
      double sd = spx__ds_ld(r, f, i), rd;
      spx__ds_st(x, f, i, spx__ds_ld(x, f, i) + alpha * spx__ds_ld(ph, f, i) + omega * spx__ds_ld(sh, f, i));
      rd = spx__ds_rd(f, sd - omega * spx__ds_ld(t, f, i));
      spx__ds_st(r, f, i, rd);
      s0 += spx__ds_ld(r0, f, i) * rd;
      s1 += rd * rd;
    SPX__DLOOP_END
    if ((st = spx__ds_sum(s, d))) return st;
    rhon = d[0];
    rr = d[1];
    it++;
    rep->resid = spx__sqrt(rr);
    spx__ds_hist(s, it, rep->resid);
    if (rr <= tol2) return spx__ds_end(s, SPX__DK_CONVERGED, 0, it);
    if (!spx__ds_finite(rr)) return spx__ds_end(s, SPX__DK_NONFINITE, rr, it);
    if (!spx__ds_finite(rhon) || SPX__ABS(rhon) <= SPX__DKRY_EPS * spx__sqrt(r0n2 * rr))
      return spx__ds_end(s, SPX__DK_RHO, rhon, it);
    beta = (rhon / rho) * (alpha / omega);
    rho = rhon;
    SPX__DLOOP_BEGIN(s)
      spx__ds_st(p, f, i, spx__ds_ld(r, f, i) + beta * (spx__ds_ld(p, f, i) - omega * spx__ds_ld(v, f, i)));
    SPX__DLOOP_END
  }
  return spx__ds_end(s, SPX__DK_RUNNING, 0, it);
}

/* ||b - A x|| from scratch (hv[2] as scratch). */
static spx_status spx__ds_true_resid(spx__dsolver *s, const void *b, const void *x, double *out) {
  const int f = s->f;
  void *q = s->hv[2];
  double t[3];
  spx_status st;
  spx__ds_spmv(s, x, q);
  SPX__DLOOP_BEGIN(s)
    double dd = spx__ds_ld(b, f, i) - spx__ds_ld(q, f, i);
    s0 += dd * dd;
  SPX__DLOOP_END
  if ((st = spx__ds_sum(s, t))) return st;
  *out = spx__sqrt(t[0]);
  return SPX_OK;
}

/* solve_impl.h's spx__solve_restart: 1 to run again from x. */
static int spx__ds_restart(spx__dsolver *s, spx_status *st) {
  spx_solve_report *r = s->rep;
  int rho = *st == SPX_BREAKDOWN && s->why == SPX__DK_RHO;
  if (!rho && (*st != SPX_OK || r->true_resid <= r->tol)) return 0;
  if (s->restarts < SPX__DRESTARTS && r->iterations < s->o.maxit) {
    s->restarts++;
    s->it0 = r->iterations;
    spx_clear_error();
    return 1;
  }
  if (!rho) *st = spx__ds_end(s, SPX__DK_GAP, r->true_resid, r->iterations);
  return 0;
}

/* b's largest entry over every rank (exact: a max needs no order; a NaN anywhere wins). */
static double spx__ds_maxabs(spx__dsolver *s, const void *b) {
  double m = 0, *all = s->all;
  int64_t i;
  int r;
  for (i = 0; i < s->n; i++) {
    double a = spx__ds_ld(b, s->f, i);
    a = a < 0 ? -a : a;
    if (a > m || a != a) m = a;
  }
  MPI_Allgather(&m, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, s->A->comm);
  for (r = 0, m = 0; r < s->A->size; r++)
    if (all[r] > m || all[r] != all[r]) m = all[r];
  return m;
}

/* 1, or the power of two that brings b's largest entry m near 1 when it is below 2^-100 or above
 * 2^100 (solve_impl.h's rule: the recurrences square the residual). */
static double spx__ds_scale_of(double m) {
  double sc = 1;
  if (!(m > 0) || m - m != 0.0 || (m >= 0x1p-100 && m <= 0x1p100)) return 1;
  while (m * sc >= 2 && sc > 0x1p-1020) sc *= 0.5;
  while (m * sc < 0.5 && sc < 0x1p1020) sc *= 2;
  return sc;
}

static spx_status spx__ds_run(spx__dsolver *s, const void *b, void *x) {
  spx_solve_report *rep = s->rep;
  void *xu = x;
  double t0 = spx__now(), t1;
  spx_status st;
  int64_t i;
  if ((s->scale = spx__ds_scale_of(spx__ds_maxabs(s, b))) != 1) {
    if (!(s->hb = spx__alloc((size_t)s->n + 1, s->vs)) || !(s->hx = spx__alloc((size_t)s->n + 1, s->vs))) {
      spx__ds_keep(s, SPX_OUT_OF_MEMORY); /* the first global sum stops every rank */
    } else {
      for (i = 0; i < s->n; i++) {
        spx__ds_st(s->hb, s->f, i, s->scale * spx__ds_ld(b, s->f, i));
        spx__ds_st(s->hx, s->f, i, s->scale * spx__ds_ld(x, s->f, i));
      }
      b = s->hb;
      x = s->hx;
    }
    s->o.atol *= s->scale;
  }
  rep->setup_ms += 1e3 * (spx__now() - t0);
  do {
    t1 = spx__now();
    st = s->method == SPX__DS_BICGSTAB ? spx__ds_bicgstab(s, b, x) : spx__ds_cg(s, b, x);
    t0 = spx__now();
    rep->solve_ms += 1e3 * (t0 - t1);
    if (st == SPX_OK || st == SPX_NOT_CONVERGED || st == SPX_BREAKDOWN) { /* an ending, not a failure */
      char keep[1024];
      spx_status s2;
      snprintf(keep, sizeof keep, "%s", spx_last_error());
      if ((s2 = spx__ds_true_resid(s, b, x, &rep->true_resid))) return s2;
      if (st) spx__fail(st, "%s", keep);
    }
    rep->check_ms += 1e3 * (spx__now() - t0);
  } while (spx__ds_restart(s, &st));
  if (s->scale != 1)
    for (i = 0; i < s->n; i++) spx__ds_st(xu, s->f, i, spx__ds_ld(x, s->f, i) / s->scale);
  return st;
}

/* This rank's checks of the arguments (A is not NULL). */
static spx_status spx__ds_check(const spx__dsolver *s, const char *fn, const void *b, const void *x) {
  const spx_solve_options *o = &s->o;
  if (s->A->cuda)
    return spx__fail(SPX_UNSUPPORTED, "%s: the distributed solvers run on the host backend for now; the matrix is on "
                     "CUDA (make it with options.plan.backend = SPX_BACKEND_HOST, or call spx_dist_spmv)", fn);
  if (s->n > 0 && (!b || !x)) return spx__fail(SPX_INVALID_ARGUMENT, "%s: %s is NULL", fn, !b ? "b" : "x");
  if (!(o->rtol >= 0) || !(o->atol >= 0) || !spx__ds_finite(o->rtol) || !spx__ds_finite(o->atol))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: rtol = %g and atol = %g must be finite and >= 0", fn, o->rtol, o->atol);
  if (!(o->rtol > 0) && !(o->atol > 0))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: rtol and atol are both 0: give a positive tolerance", fn);
  if (o->maxit < 1) return spx__fail(SPX_INVALID_ARGUMENT, "%s: maxit = %lld; it must be at least 1", fn, (long long)o->maxit);
  if (o->history_len < 0 || (o->history_len > 0 && !o->history))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: history_len = %lld with history %s", fn, (long long)o->history_len,
                     o->history ? "given" : "NULL");
  if (s->method == SPX__DS_PCG_JACOBI && o->precond)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: Jacobi is the preconditioner here; use spx_dist_solve_cg for "
                     "options.precond", fn);
  return SPX_OK;
}

/* The same options on every rank (else the ranks would take different decisions and hang). */
static spx_status spx__ds_same(spx__dsolver *s, const char *fn) {
  double v[4] = {s->o.rtol, s->o.atol, (double)s->o.maxit, s->o.precond != NULL};
  if (spx__dist_same(s->A->comm, v, 4)) return SPX_OK;
  return spx__fail(SPX_INVALID_ARGUMENT, "%s: rtol, atol, maxit or the presence of a preconditioner differ between "
                   "ranks; every rank must pass the same options", fn);
}

/* Jacobi: 1 / a_ii of this rank's rows, from the local block's plan (the same rounding as
 * solve_impl.h: the vector type's). A zero or non-finite a_ii is SPX_INVALID_ARGUMENT. */
static spx_status spx__ds_diag(spx__dsolver *s, const char *fn) {
  int64_t i;
  spx_status st;
  if (!(s->dinv = (double *)spx__alloc((size_t)s->n + 1, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  if (s->n > 0 && (st = spx_plan_diagonal(s->A->loc, s->dinv))) return st;
  for (i = 0; i < s->n; i++) {
    double a = s->dinv[i];
    if (a == 0 || !spx__ds_finite(a))
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: a[%lld][%lld] = %g: Jacobi needs a nonzero finite diagonal", fn,
                       (long long)(s->A->first + i), (long long)(s->A->first + i), a);
    s->dinv[i] = spx__ds_rd(s->f, 1.0 / a);
  }
  return SPX_OK;
}

/* Workspace and, for Jacobi, the diagonal. */
static spx_status spx__ds_setup(spx__dsolver *s, const char *fn) {
  int k, nv = s->method == SPX__DS_BICGSTAB ? 7 : 4;
  s->nchunks = (s->n + SPX__DCHUNK - 1) / SPX__DCHUNK;
  if (!(s->part = (double *)spx__calloc((size_t)(3 * s->nchunks + 3), sizeof(double))) ||
      !(s->all = (double *)spx__calloc(4 * (size_t)s->A->size, sizeof(double))))
    return SPX_OUT_OF_MEMORY;
  for (k = 0; k < nv; k++)
    if (!(s->hv[k] = spx__alloc((size_t)s->n + 1, s->vs))) return SPX_OUT_OF_MEMORY;
  return s->method == SPX__DS_PCG_JACOBI ? spx__ds_diag(s, fn) : SPX_OK;
}

static void spx__ds_finish(spx__dsolver *s) {
  spx_solve_report *r = s->rep;
  int k;
  if (r->bnorm > 0) {
    r->rel_resid = r->resid / r->bnorm;
    r->true_rel_resid = r->true_resid / r->bnorm;
  } else {
    r->rel_resid = r->resid;
    r->true_rel_resid = r->true_resid;
  }
  if (s->scale != 1 && s->scale != 0) { /* the report in the caller's units */
    const double u = 1.0 / s->scale;
    int64_t i, nh = s->o.history_len > 0 ? SPX__MIN(r->iterations + 1, s->o.history_len) : 0;
    r->bnorm *= u; r->tol *= u; r->resid *= u; r->true_resid *= u;
    for (i = 0; i < nh; i++) s->o.history[i] *= u;
  }
  r->restarts = s->restarts;
  r->per_iter_us = r->iterations > 0 ? 1e3 * r->solve_ms / (double)r->iterations : 0;
  r->history_count = s->o.history_len > 0 ? SPX__MIN(r->iterations + 1, s->o.history_len) : 0;
  for (k = 0; k < 7; k++) SPX_FREE(s->hv[k]);
  SPX_FREE(s->hb);
  SPX_FREE(s->hx);
  SPX_FREE(s->part);
  SPX_FREE(s->all);
  SPX_FREE(s->dinv);
}

static spx_status spx__dsolve(int method, spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                              spx_solve_report *report) {
  static const int vpasses[3][2] = {{10, 12}, {12, 12}, {18, 18}}; /* solve.h's model: [method][callback] */
  const char *fn = spx__ds_fns[method];
  spx__dsolver s;
  spx_solve_report scratch;
  double t0 = spx__now();
  spx_status st;
  memset(&s, 0, sizeof s);
  s.scale = 1;
  s.method = method;
  s.A = A;
  s.rep = report ? report : &scratch;
  memset(s.rep, 0, sizeof *s.rep);
  s.rep->method = spx__ds_names[method];
  s.rep->upgraded_at = -1;
  if (options) s.o = *options;
  else spx_solve_options_default(&s.o);
  if (!A) { /* no communicator to tell the others with: they wait for this rank until the timeout */
    st = spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL matrix", fn);
    s.rep->status = st;
    snprintf(s.rep->message, sizeof s.rep->message, "%.250s", spx_last_error());
    return st;
  }
  s.n = A->nlocal;
  s.rep->n = A->n;
  s.f = A->dtype == SPX_FLOAT;
  s.vs = A->vs;
  s.cb = s.o.precond != NULL;
  s.rep->spmvs_per_iter = method == SPX__DS_BICGSTAB ? 2 : 1;
  s.rep->vector_bytes_per_iter = (int64_t)vpasses[method][s.cb] * s.n * (int64_t)s.vs;
  s.rep->analysis_ms = (A->loc ? spx_plan_select_ms(A->loc) : 0) + (A->gho ? spx_plan_select_ms(A->gho) : 0);
  s.rep->build_ms = (A->loc ? spx_plan_build_ms(A->loc) : 0) + (A->gho ? spx_plan_build_ms(A->gho) : 0);
  st = spx__ds_check(&s, fn, b, x);
  if (!(st = spx__dist_agree_t(A->comm, A->rank, st, A->timeout_s, fn)) && !(st = spx__ds_same(&s, fn))) {
    st = spx__dist_agree(A, spx__ds_setup(&s, fn));
    s.rep->setup_ms = 1e3 * (spx__now() - t0);
    if (!st && A->n == 0) {
      s.rep->status = SPX_OK;
      snprintf(s.rep->message, sizeof s.rep->message, "%s: empty system", spx__ds_names[method]);
    } else if (!st) {
      st = spx__ds_run(&s, b, x);
    }
  }
  spx__ds_finish(&s);
  if (st && st != SPX_BREAKDOWN && st != SPX_NOT_CONVERGED) { /* a failure, not an ending */
    s.rep->status = st;
    snprintf(s.rep->message, sizeof s.rep->message, "%.250s", spx_last_error());
  }
  return st;
}

spx_status spx_dist_solve_cg(spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                             spx_solve_report *report) {
  return spx__dsolve(SPX__DS_CG, A, b, x, options, report);
}
spx_status spx_dist_solve_pcg_jacobi(spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                                     spx_solve_report *report) {
  return spx__dsolve(SPX__DS_PCG_JACOBI, A, b, x, options, report);
}
spx_status spx_dist_solve_bicgstab(spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                                   spx_solve_report *report) {
  return spx__dsolve(SPX__DS_BICGSTAB, A, b, x, options, report);
}
