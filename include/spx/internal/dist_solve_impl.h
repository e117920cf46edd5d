/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/dist.h's solvers: distributed CG, Jacobi PCG and BiCGSTAB. They are solve_impl.h's host twin
 * (spx__solve_host: the same chunked sums, the same decisions in the same order) run with three
 * ops: the distributed SpMV, the preconditioner on this rank's part, and each sum of chunk
 * partials followed by the sum over the ranks in rank order on every rank. A local failure (the
 * SpMV, the preconditioner, memory) is kept until the next global sum, which carries it (a fourth
 * term) to every rank, so all ranks leave together; every decision is taken on globally summed
 * numbers, which are the same bits on every rank, so every rank runs the same iterations. */
#include <string.h>
#include "common.h"
#include "../dist.h"
#include "dist_matrix.h"
#include "solve_host.h"

static const char *const spx__ds_fns[] = {"spx_dist_solve_cg", "spx_dist_solve_pcg_jacobi", "spx_dist_solve_bicgstab"};

/* The distributed state beside the host twin's (spx__solver.op). */
typedef struct spx__dsolver {
  spx_dist_matrix *A;
  double *all;               /* 4 per rank (gathered) */
  spx_status err;            /* a local failure waiting for the next global sum */
  char errmsg[500];
} spx__dsolver;

static void spx__ds_keep(spx__solver *s, spx_status st) {
  spx__dsolver *d = (spx__dsolver *)s->op;
  if (st && !d->err) {
    d->err = st;
    snprintf(d->errmsg, sizeof d->errmsg, "%.499s", spx_last_error());
  }
}

/* out (this rank's sums) over every rank in rank order, with the pending local failure as a fourth
 * term. Returns the agreed status (the first failing rank's). */
static spx_status spx__ds_sum(spx__solver *s, double out[3]) {
  spx__dsolver *ds = (spx__dsolver *)s->op;
  spx_dist_matrix *d = ds->A;
  double mine[4] = {out[0], out[1], out[2], (double)ds->err}, t0 = spx__now();
  int r;
  MPI_Allgather(mine, 4, MPI_DOUBLE, ds->all, 4, MPI_DOUBLE, d->comm);
  out[0] = out[1] = out[2] = 0;
  for (r = 0; r < d->size; r++) {
    if (ds->all[4 * r + 3] != 0) {
      spx_status st = spx__dist_spread(d->comm, d->rank, r, ds->err, ds->errmsg);
      if (ds->err) spx__fail(ds->err, "%s", ds->errmsg); /* its own sentence, not a later one */
      return st;
    }
    out[0] += ds->all[4 * r];
    out[1] += ds->all[4 * r + 1];
    out[2] += ds->all[4 * r + 2];
  }
  d->stats.reduce_ms += 1e3 * (spx__now() - t0);
  return SPX_OK;
}

/* b's largest entry over the ranks (NaN wins: no scale then, the solver reports it). */
static double spx__ds_max(spx__solver *s, double m) {
  spx__dsolver *ds = (spx__dsolver *)s->op;
  int r;
  MPI_Allgather(&m, 1, MPI_DOUBLE, ds->all, 1, MPI_DOUBLE, ds->A->comm);
  for (r = 0, m = 0; r < ds->A->size; r++)
    if (ds->all[r] > m || ds->all[r] != ds->all[r]) m = ds->all[r];
  return m;
}

/* The product and the preconditioner keep a failure for the next sum, so that no rank leaves alone
 * (one rank has no one to tell: its failure returns at once; its GPU path makes no global sums). */
static spx_status spx__ds_spmv(spx__solver *s, const void *x, void *y) {
  spx_status st = spx__dist_spmv(((spx__dsolver *)s->op)->A, 1.0, x, 0.0, y);
  if (s->ranks == 1) return st;
  spx__ds_keep(s, st);
  return SPX_OK;
}

static spx_status spx__ds_precond(spx__solver *s, const void *r, void *z) {
  spx_status st;
  if (!((spx__dsolver *)s->op)->err && (st = s->o.precond(s->o.precond_data, r, z)))
    spx__ds_keep(s, spx__wrap(st, "%s: the preconditioner callback failed", s->rep->method));
  return SPX_OK;
}

static const spx__solve_ops spx__ds_ops = {spx__ds_spmv, spx__ds_precond, spx__ds_sum, spx__ds_max, spx__ds_keep};


/* The same options on every rank (else the ranks would take different decisions and hang). */
static spx_status spx__ds_same(const spx__solver *s, const spx_dist_matrix *A, const char *fn) {
  double v[4] = {s->o.rtol, s->o.atol, (double)s->o.maxit, s->o.precond != NULL};
  if (spx__dist_same(A->comm, v, 4)) return SPX_OK;
  return spx__fail(SPX_INVALID_ARGUMENT, "%s: rtol, atol, maxit or the presence of a preconditioner differ between "
                   "ranks; every rank must pass the same options", fn);
}

/* Jacobi: 1 / a_ii of this rank's rows, from the local block's plan (the same rounding as
 * solve_impl.h: the vector type's). A zero or non-finite a_ii is SPX_INVALID_ARGUMENT. */
static spx_status spx__ds_diag(spx__solver *s, const spx_dist_matrix *A, const char *fn) {
  int64_t i;
  spx_status st;
  if (!(s->diag = (double *)spx__alloc((size_t)s->n + 1, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  if (s->n > 0 && (st = spx_plan_diagonal(A->loc, s->diag))) return st;
  for (i = 0; i < s->n; i++) {
    double a = s->diag[i];
    if (a == 0 || a - a != 0.0)
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: a[%lld][%lld] = %g: Jacobi needs a nonzero finite diagonal", fn,
                       (long long)(A->first + i), (long long)(A->first + i), a);
    s->diag[i] = s->f ? (double)(float)(1.0 / a) : 1.0 / a;
  }
  return SPX_OK;
}

/* The gathered sums; on the host the twin's workspace and, for Jacobi, the diagonal; on CUDA the
 * plans' background compiles waited for (a stand-in kernel that rounds otherwise would make x
 * depend on timing); the GPU path makes its workspace and the diagonal itself. */
static spx_status spx__ds_setup(spx__solver *s, spx__dsolver *ds, const char *fn) {
  spx_dist_matrix *A = ds->A;
  spx_status st;
  if (!(ds->all = (double *)spx__calloc(4 * (size_t)A->size, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  if (s->cuda) {
    if ((A->loc && (st = spx_plan_wait(A->loc))) || (A->gho && (st = spx_plan_wait(A->gho)))) return st;
    return SPX_OK;
  }
  if ((st = spx__solve_host_alloc(s))) return st;
  return s->method == SPX__SOLVE_PCG_JACOBI ? spx__ds_diag(s, A, fn) : SPX_OK;
}


static spx_status spx__dsolve(int method, spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                              spx_solve_report *report) {
  static const char *const names[] = {"cg", "pcg_jacobi", "bicgstab"};
  static const int vpasses[3][2] = {{10, 12}, {12, 12}, {18, 18}}; /* solve.h's model: [method][callback] */
  const char *fn = spx__ds_fns[method];
  spx__solver s;
  spx__dsolver ds;
  spx_solve_report scratch;
  double t0 = spx__now();
  spx_status st;
  memset(&s, 0, sizeof s);
  memset(&ds, 0, sizeof ds);
  s.scale = 1;
  s.method = method;
  s.rep = report ? report : &scratch;
  memset(s.rep, 0, sizeof *s.rep);
  s.rep->method = names[method];
  s.rep->upgraded_at = -1;
  if (options) s.o = *options;
  else spx_solve_options_default(&s.o);
  s.o.upgrade_at = 0; /* no deferred plan here */
  if (!A) { /* no communicator to tell the others with: they wait for this rank until the timeout */
    st = spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL matrix", fn);
    s.rep->status = st;
    snprintf(s.rep->message, sizeof s.rep->message, "%.250s", spx_last_error());
    return st;
  }
  ds.A = A;
  s.ops = &spx__ds_ops;
  s.op = &ds;
  s.ranks = A->size;
  s.n = A->nlocal;
  if (A->cuda) { /* the GPU path: its kernels on this rank's context, Jacobi from the local block's diagonal */
    s.cuda = 1;
    s.ctx = A->ctx;
    s.A = A->loc;
    s.jacobi = method == SPX__SOLVE_PCG_JACOBI;
  }
  s.rep->n = A->n;
  s.f = A->dtype == SPX_FLOAT;
  s.vs = A->vs;
  s.rep->spmvs_per_iter = method == SPX__SOLVE_BICGSTAB ? 2 : 1;
  s.rep->vector_bytes_per_iter = (int64_t)vpasses[method][s.o.precond != NULL] * s.n * (int64_t)s.vs;
  s.rep->analysis_ms = (A->loc ? spx_plan_select_ms(A->loc) : 0) + (A->gho ? spx_plan_select_ms(A->gho) : 0);
  s.rep->build_ms = (A->loc ? spx_plan_build_ms(A->loc) : 0) + (A->gho ? spx_plan_build_ms(A->gho) : 0);
  st = spx__solve_check_args(&s, fn, "spx_dist_solve_cg", b, x);
  if (!(st = spx__dist_agree_t(A->comm, A->rank, st, A->timeout_s, fn)) && !(st = spx__ds_same(&s, A, fn))) {
    st = spx__dist_agree(A, spx__ds_setup(&s, &ds, fn));
    s.rep->setup_ms = 1e3 * (spx__now() - t0);
    if (!st && A->n == 0) {
      s.rep->status = SPX_OK;
      snprintf(s.rep->message, sizeof s.rep->message, "%s: empty system", names[method]);
    } else if (!st) {
      st = s.cuda ? spx__solve_gpu(&s, b, x) : spx__solve_host(&s, b, x);
    }
  }
  SPX_FREE(ds.all);
  return spx__solve_finish(&s, st);
}

spx_status spx_dist_solve_cg(spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                             spx_solve_report *report) {
  return spx__dsolve(SPX__SOLVE_CG, A, b, x, options, report);
}
spx_status spx_dist_solve_pcg_jacobi(spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                                     spx_solve_report *report) {
  return spx__dsolve(SPX__SOLVE_PCG_JACOBI, A, b, x, options, report);
}
spx_status spx_dist_solve_bicgstab(spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                                   spx_solve_report *report) {
  return spx__dsolve(SPX__SOLVE_BICGSTAB, A, b, x, options, report);
}
