/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/dist.h, its stencil room: spx/stencil.h's grid split into z-slabs over the
 * ranks, the halos exchanged every R steps, each rank's steps run by spx_stencil_run (THE STENCIL
 * and THE EXCHANGE BESIDE THE INTERIOR in dist.h). Above dist_impl.h, whose error agreement it
 * uses; below it only spx/stencil.h's public calls, the background job of common.h (the interior's
 * run beside the messages) and the stencil's problem check. */
#include <limits.h>
#include <time.h>
#include "common.h"
#include "stencil_sched.h" /* spx__stencil_check */
#include "../dist.h"
#include "dist_matrix.h"

#define SPX__DST_TAG 0x5e8                     /* the halo's messages, on spx's duplicate of comm */
#define SPX__DST_MSG ((int64_t)1 << 30)        /* bytes per message at most (MPI counts are int) */
#define SPX__DST_POLL_NS 100000                /* the calling thread's pause between MPI_Testall */

void spx_dist_stencil_options_default(spx_dist_stencil_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->timeout_s = 300;
}

spx_status spx_dist_stencil_planes(int64_t nz, int size, int rank, int64_t *z0, int64_t *z1) {
  int64_t q, m;
  if (!z0 || !z1) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_stencil_planes: NULL output");
  *z0 = *z1 = 0;
  if (nz < 0 || size < 1 || rank < 0 || rank >= size)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_stencil_planes: %lld planes, rank %d of %d", (long long)nz, rank,
                     size);
  q = nz / size;
  m = nz % size;
  *z0 = (int64_t)rank * q + SPX__MIN((int64_t)rank, m);
  *z1 = *z0 + q + (rank < m);
  return SPX_OK;
}

/* g with nz planes (a local grid: a slab, an edge grid). */
static spx_stencil spx__dst_grid(const spx_stencil *g, int64_t nz) {
  spx_stencil p = *g;
  p.nz = nz;
  return p;
}

spx_status spx_dist_stencil_grid_alloc(MPI_Comm comm, spx_context *ctx, const spx_stencil *g,
                                       const spx_stencil_options *opt, void **out) {
  int rank = 0, size = 1;
  int64_t z0, z1;
  spx_stencil p;
  spx_status st;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_stencil_grid_alloc: out is NULL");
  *out = NULL;
  if (comm == MPI_COMM_NULL) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_stencil_grid_alloc: MPI_COMM_NULL");
  if ((st = spx__stencil_check(g, "spx_dist_stencil_grid_alloc"))) return st;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if ((st = spx_dist_stencil_planes(g->nz, size, rank, &z0, &z1)) || z1 == z0) return st;
  p = spx__dst_grid(g, SPX__MAX(3, z1 - z0)); /* spx_stencil_grid_alloc takes a grid of 3 planes or more */
  return spx_stencil_grid_alloc(ctx, &p, opt, out);
}

/* ---- The run's state -------------------------------------------------------------------------- */
typedef struct spx__dst {
  MPI_Comm comm;              /* spx's duplicate of the caller's (MPI_COMM_NULL until made) */
  int rank, size, lo, hi;     /* lo, hi: the neighbours' ranks, -1 where none */
  spx_context *ctx;
  const spx_stencil *g;
  spx_dist_stencil_options o;
  char *u;                    /* this rank's planes (the caller's) */
  int64_t own, pb, steps, R;  /* planes owned, bytes per plane, steps, the exchange interval */
  int split;                  /* 1: interior + edge grids; 0: one grid of the planes and the halos */
  char *eb[2];                /* split: the lower and upper edge grids (3 R planes each, where
                               * there is a neighbour); one grid: eb[0], R + own + R planes */
  MPI_Request *req;
  int nreq, capreq;
  spx_dist_stencil_report rep;
  int have_local;             /* rep.local is set */
} spx__dst;

/* The buffers go; the duplicate communicator too (collective: every rank ends here). */
static void spx__dst_free(spx__dst *s) {
  int i;
  for (i = 0; i < 2; i++) spx_stencil_grid_free(s->ctx, s->eb[i]);
  SPX_FREE(s->req);
  if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
}

/* ---- Checks ------------------------------------------------------------------------------------ */
/* This rank's arguments alone. */
static spx_status spx__dst_args(spx_context *ctx, const spx_stencil *g, const void *u, int64_t steps,
                                const spx_dist_stencil_options *o, int rank, int size) {
  const char *fn = "spx_dist_stencil_run";
  int64_t z0 = 0, z1 = 0;
  spx_status st;
  if ((st = spx__stencil_check(g, fn))) return st;
  if (!ctx) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL context", fn);
  if (steps < 0) return spx__fail(SPX_INVALID_ARGUMENT, "%s: %lld steps (0 or more)", fn, (long long)steps);
  if (o->interval < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: interval %lld (the steps between exchanges: 1 or more; 0 for the "
                     "plan's choice)", fn, (long long)o->interval);
  spx_dist_stencil_planes(g->nz, size, rank, &z0, &z1);
  if (z1 > z0 && !u)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: this rank's grid is NULL and it owns planes %lld..%lld", fn,
                     (long long)z0, (long long)(z1 - 1));
  return SPX_OK;
}

/* What every rank must pass alike, as doubles (exact: sizes and steps below 2^53). */
enum { SPX__DSTP_NX, SPX__DSTP_NY, SPX__DSTP_NZ, SPX__DSTP_DTYPE, SPX__DSTP_STEPS, SPX__DSTP_R, SPX__DSTP_C,
       SPX__DSTP_N = SPX__DSTP_C + 7 };

/* The first rank whose problem differs from rank 0's, named; every rank sees the same gather, so
 * every rank reaches the same verdict and sentence without spreading it. */
static spx_status spx__dst_same(const spx__dst *s, int64_t steps) {
  const char *fn = "spx_dist_stencil_run";
  const spx_stencil *g = s->g;
  double mine[SPX__DSTP_N], *all;
  int r, k;
  spx_status st = SPX_OK;
  mine[SPX__DSTP_NX] = (double)g->nx; mine[SPX__DSTP_NY] = (double)g->ny; mine[SPX__DSTP_NZ] = (double)g->nz;
  mine[SPX__DSTP_DTYPE] = (double)g->dtype; mine[SPX__DSTP_STEPS] = (double)steps;
  mine[SPX__DSTP_R] = (double)s->o.interval;
  for (k = 0; k < 7; k++) mine[SPX__DSTP_C + k] = g->c[k];
  all = (double *)spx__alloc((size_t)s->size * SPX__DSTP_N, sizeof(double));
  if ((st = spx__dist_agree_t(s->comm, s->rank, all ? SPX_OK : SPX_OUT_OF_MEMORY, 0, fn))) {
    SPX_FREE(all);
    return st;
  }
  MPI_Allgather(mine, SPX__DSTP_N, MPI_DOUBLE, all, SPX__DSTP_N, MPI_DOUBLE, s->comm);
  for (r = 1; r < s->size && !st; r++) {
    const double *a = all + (size_t)r * SPX__DSTP_N, *z = all;
    if (a[SPX__DSTP_NX] != z[SPX__DSTP_NX] || a[SPX__DSTP_NY] != z[SPX__DSTP_NY] || a[SPX__DSTP_NZ] != z[SPX__DSTP_NZ])
      st = spx__fail(SPX_DIMENSION_MISMATCH, "%s: rank %d passed a %.0f x %.0f x %.0f grid where rank 0 passed "
                     "%.0f x %.0f x %.0f: every rank passes the same global problem", fn, r, a[SPX__DSTP_NX],
                     a[SPX__DSTP_NY], a[SPX__DSTP_NZ], z[SPX__DSTP_NX], z[SPX__DSTP_NY], z[SPX__DSTP_NZ]);
    else if (a[SPX__DSTP_DTYPE] != z[SPX__DSTP_DTYPE])
      st = spx__fail(SPX_INVALID_ARGUMENT, "%s: rank %d's grid is %s where rank 0's is %s", fn, r,
                     spx_dtype_name((spx_dtype)a[SPX__DSTP_DTYPE]), spx_dtype_name((spx_dtype)z[SPX__DSTP_DTYPE]));
    else if (a[SPX__DSTP_STEPS] != z[SPX__DSTP_STEPS] || a[SPX__DSTP_R] != z[SPX__DSTP_R])
      st = spx__fail(SPX_INVALID_ARGUMENT, "%s: rank %d passed %.0f steps, interval %.0f where rank 0 passed %.0f, "
                     "%.0f: every rank passes the same", fn, r, a[SPX__DSTP_STEPS], a[SPX__DSTP_R], z[SPX__DSTP_STEPS],
                     z[SPX__DSTP_R]);
    else
      for (k = 0; k < 7 && !st; k++)
        if (memcmp(&a[SPX__DSTP_C + k], &z[SPX__DSTP_C + k], sizeof(double)))
          st = spx__fail(SPX_INVALID_ARGUMENT, "%s: rank %d's coefficient c[%d] is %.17g where rank 0's is %.17g", fn,
                         r, k, a[SPX__DSTP_C + k], z[SPX__DSTP_C + k]);
  }
  SPX_FREE(all);
  return st;
}

/* ---- The layout --------------------------------------------------------------------------------- */
/* The interval this rank would take: the option, else the tts of the plan for its slab. */
static spx_status spx__dst_propose(const spx__dst *s, int64_t *R) {
  spx_device_info dev;
  spx_stencil p;
  spx_stencil_plan pl;
  spx_status st;
  *R = INT64_MAX;
  if (s->o.interval > 0) { *R = s->o.interval; return SPX_OK; }
  if (s->own < 3) return SPX_OK; /* all boundary, or thinner than any plan: no say */
  memset(&dev, 0, sizeof dev);
  dev.ordinal = -1;
  if (spx_context_backend(s->ctx) == SPX_BACKEND_CUDA && (st = spx_context_device_info(s->ctx, &dev))) return st;
  p = spx__dst_grid(s->g, s->own);
  if ((st = spx_stencil_choose(&p, s->steps, &s->o.local, &dev, &pl)))
    return spx__wrap(st, "rank %d's slab of %lld planes", s->rank, (long long)s->own);
  *R = pl.tts;
  return SPX_OK;
}

/* R: the smallest proposal, at most the steps and the fewest planes a rank owns (nz >= 3, so with
 * two ranks or more every rank has a neighbour or owns nothing); one rank runs every step at once.
 * Collective. */
static void spx__dst_interval(spx__dst *s, int64_t mine) {
  const int64_t nz = s->g->nz, fewest = nz >= s->size ? nz / s->size : 1;
  int64_t R = mine;
  MPI_Allreduce(&mine, &R, 1, MPI_INT64_T, MPI_MIN, s->comm);
  if (s->size == 1) R = s->steps;
  s->R = SPX__MAX(1, SPX__MIN(R, SPX__MIN(s->steps, s->size > 1 ? fewest : s->steps)));
}

/* An edge (or one) grid of n planes: the run's pinned memory on a CUDA context. */
static spx_status spx__dst_buffer(spx__dst *s, int64_t n, char **out) {
  spx_stencil p = spx__dst_grid(s->g, SPX__MAX(3, n));
  void *b = NULL;
  spx_status st = spx_stencil_grid_alloc(s->ctx, &p, &s->o.local, &b);
  *out = (char *)b;
  return st;
}

/* The buffers and the requests (4 messages, each cut to SPX__DST_MSG bytes). */
static spx_status spx__dst_alloc(spx__dst *s) {
  const int64_t R = s->R;
  spx_status st = SPX_OK;
  s->split = (s->lo < 0 && s->hi < 0) || s->own >= 2 * R; /* alone: its one grid is its planes */
  if (s->own == 0) return SPX_OK;
  if (s->split) {
    if (s->lo >= 0) st = spx__dst_buffer(s, 3 * R, &s->eb[0]);
    if (!st && s->hi >= 0) st = spx__dst_buffer(s, 3 * R, &s->eb[1]);
  } else {
    st = spx__dst_buffer(s, (s->lo >= 0) * R + s->own + (s->hi >= 0) * R, &s->eb[0]);
  }
  s->capreq = 4 * (int)((R * s->pb + SPX__DST_MSG - 1) / SPX__DST_MSG);
  if (!st && !(s->req = (MPI_Request *)spx__alloc((size_t)s->capreq, sizeof(MPI_Request)))) st = SPX_OUT_OF_MEMORY;
  return st;
}

/* The local runs a round of r steps makes, as grids of planes (up to 3; 0 when it makes none). */
static int spx__dst_runs(const spx__dst *s, int64_t r, int64_t planes[3]) {
  int n = 0;
  if (s->own == 0) return 0;
  if (!s->split) {
    const int64_t m = (s->lo >= 0) * r + s->own + (s->hi >= 0) * r;
    if (m >= 3) planes[n++] = m;
    return n;
  }
  if (s->own >= 3 && (s->lo >= 0) * r < s->own - (s->hi >= 0) * r) planes[n++] = s->own;
  if (s->lo >= 0) planes[n++] = 3 * r;
  if (s->hi >= 0) planes[n++] = 3 * r;
  return n;
}

/* CUDA: the kernels of every local run compiled now (into the JIT cache, which the runs read), so
 * that no compile falls inside the rounds; the plans made as the runs will make them (a run whose
 * plan comes out otherwise, free memory having moved its budget, compiles in its round: jit_ms).
 * For device 0's architecture, as spx_stencil_warm takes it: a node's GPUs are alike. */
static spx_status spx__dst_warm(spx__dst *s) {
  const int64_t last = s->steps % s->R, rs[2] = {s->R, last};
  spx_device_info dev;
  spx_status st;
  int i, k, n;
  if (spx_context_backend(s->ctx) != SPX_BACKEND_CUDA || s->own == 0) return SPX_OK;
  if ((st = spx_context_device_info(s->ctx, &dev))) return st;
  for (i = 0; i < 2; i++) {
    int64_t planes[3];
    if (!rs[i]) continue;
    n = spx__dst_runs(s, rs[i], planes);
    for (k = 0; k < n; k++) {
      spx_stencil p = spx__dst_grid(s->g, planes[k]);
      spx_stencil_plan pl;
      if ((st = spx_stencil_choose(&p, rs[i], &s->o.local, &dev, &pl)) || (st = spx_stencil_warm(&p, &pl, NULL)))
        return spx__wrap(st, "rank %d's %lld-plane grid", s->rank, (long long)planes[k]);
    }
  }
  return SPX_OK;
}

/* ---- One round ---------------------------------------------------------------------------------- */
/* Posts n bytes of buf to rank `to` (or into buf from rank `from`) as messages of SPX__DST_MSG bytes
 * at most; both sides cut alike, and messages of one pair and tag match in the order posted. */
static void spx__dst_send(spx__dst *s, const char *buf, int64_t n, int to) {
  int64_t k;
  for (k = 0; k < n; k += SPX__DST_MSG)
    MPI_Isend(buf + k, (int)SPX__MIN(SPX__DST_MSG, n - k), MPI_BYTE, to, SPX__DST_TAG, s->comm, &s->req[s->nreq++]);
  s->rep.halo_bytes_sent += n;
}
static void spx__dst_recv(spx__dst *s, char *buf, int64_t n, int from) {
  int64_t k;
  for (k = 0; k < n; k += SPX__DST_MSG)
    MPI_Irecv(buf + k, (int)SPX__MIN(SPX__DST_MSG, n - k), MPI_BYTE, from, SPX__DST_TAG, s->comm, &s->req[s->nreq++]);
}

/* Waits for the round's messages; the time is the exposed exchange. */
static void spx__dst_wait(spx__dst *s) {
  double t0 = spx__now();
  MPI_Waitall(s->nreq, s->req, MPI_STATUSES_IGNORE);
  s->nreq = 0;
  s->rep.wait_ms += 1e3 * (spx__now() - t0);
}

/* Planes from src to dst, plane by plane in parallel where OpenMP is on: on a large grid an edge is
 * gigabytes, copied every round. Only the calling thread runs here (no local run is in flight). */
static void spx__dst_copy(spx__dst *s, char *dst, const char *src, int64_t planes) {
  const size_t pb = (size_t)s->pb;
  double t0 = spx__now();
  int64_t z;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (planes * s->pb > ((int64_t)1 << 22))
#endif
  for (z = 0; z < planes; z++) memcpy(dst + (size_t)z * pb, src + (size_t)z * pb, pb);
  s->rep.copy_ms += 1e3 * (spx__now() - t0);
}

/* One local run: spx_stencil_run of r steps on grid (n planes). */
typedef struct spx__dst_job {
  spx_context *ctx;
  spx_stencil p;
  void *grid;
  int64_t steps;
  spx_stencil_options o;
  spx_stencil_report *rep;
} spx__dst_job;

static spx_status spx__dst_job_run(spx__job *j, void *data) {
  const spx__dst_job *d = (const spx__dst_job *)data;
  (void)j;
  return spx_stencil_run(d->ctx, &d->p, d->grid, d->steps, &d->o, d->rep);
}

/* The local run's times into the rank's report (ms: its wall time, jit excluded). */
static spx_status spx__dst_account(spx__dst *s, spx_status st, const spx_stencil_report *lr, double wall_s, double *ms,
                                   int64_t n, int64_t r) {
  if (st) return spx__wrap(st, "rank %d's %lld steps on a %lld-plane grid", s->rank, (long long)r, (long long)n);
  *ms += 1e3 * wall_s - lr->jit_ms;
  s->rep.jit_ms += lr->jit_ms;
  if (!s->have_local) {
    s->rep.local = *lr;
    s->have_local = 1;
  }
  return SPX_OK;
}

/* r steps on grid (n planes) here and now. */
static spx_status spx__dst_run(spx__dst *s, void *grid, int64_t n, int64_t r, double *ms) {
  spx_stencil p = spx__dst_grid(s->g, n);
  spx_stencil_report lr;
  double t0 = spx__now();
  spx_status st = spx_stencil_run(s->ctx, &p, grid, r, &s->o.local, &lr);
  return spx__dst_account(s, st, &lr, spx__now() - t0, ms, n, r);
}

/* r steps on grid (n planes) on a thread of its own, while this thread drives the posted messages
 * (MPI_Testall: an MPI library moves a large message only inside its calls); where no thread can
 * be made, the run happens here (spx__job_start) and the messages move in the wait after it. */
static spx_status spx__dst_run_beside(spx__dst *s, void *grid, int64_t n, int64_t r, double *ms) {
  spx__dst_job *d = (spx__dst_job *)spx__calloc(1, sizeof *d);
  spx_stencil_report lr;
  spx__job *j;
  double t0 = spx__now();
  int flag = s->nreq == 0;
  spx_status st;
  if (!d) return SPX_OUT_OF_MEMORY;
  memset(&lr, 0, sizeof lr);
  d->ctx = s->ctx; d->p = spx__dst_grid(s->g, n); d->grid = grid; d->steps = r; d->o = s->o.local; d->rep = &lr;
  if (!(j = spx__job_start(spx__dst_job_run, d))) return SPX_OUT_OF_MEMORY;
  while (!flag && !spx__job_done(j)) {
    struct timespec ts = {0, SPX__DST_POLL_NS};
    MPI_Testall(s->nreq, s->req, &flag, MPI_STATUSES_IGNORE);
    if (!flag) nanosleep(&ts, NULL);
  }
  st = spx__job_wait(j); /* the messages are through: the run alone is left */
  spx__job_release(j);
  return spx__dst_account(s, st, &lr, spx__now() - t0, ms, n, r);
}

/* Split: the 2r planes at each end with a neighbour into its edge grid (3r planes: the halo below
 * the lower one's, above the upper one's), the messages posted, the interior run beside them (its
 * planes r or more from a neighbour come out exact), then each edge grid's run, whose middle r
 * planes are this rank's ends. Every message completes whatever fails. */
static spx_status spx__dst_round_split(spx__dst *s, int64_t r) {
  const int64_t own = s->own, pb = s->pb, rb = r * pb;
  char *L = s->eb[0], *U = s->eb[1];
  const int interior = own >= 3 && (s->lo >= 0) * r < own - (s->hi >= 0) * r;
  double t0;
  spx_status st = SPX_OK;
  if (s->lo >= 0) spx__dst_copy(s, L + rb, s->u, 2 * r);
  if (s->hi >= 0) spx__dst_copy(s, U, s->u + (own - 2 * r) * pb, 2 * r);
  t0 = spx__now();
  if (s->lo >= 0) {
    spx__dst_recv(s, L, rb, s->lo);
    spx__dst_send(s, L + rb, rb, s->lo);
  }
  if (s->hi >= 0) {
    spx__dst_recv(s, U + 2 * rb, rb, s->hi);
    spx__dst_send(s, U + rb, rb, s->hi);
  }
  s->rep.post_ms += 1e3 * (spx__now() - t0);
  if (interior && !s->o.no_overlap) st = spx__dst_run_beside(s, s->u, own, r, &s->rep.interior_ms);
  spx__dst_wait(s);
  if (!st && interior && s->o.no_overlap) st = spx__dst_run(s, s->u, own, r, &s->rep.interior_ms);
  if (!st && s->lo >= 0 && !(st = spx__dst_run(s, L, 3 * r, r, &s->rep.edge_ms))) spx__dst_copy(s, s->u, L + rb, r);
  if (!st && s->hi >= 0 && !(st = spx__dst_run(s, U, 3 * r, r, &s->rep.edge_ms)))
    spx__dst_copy(s, s->u + (own - r) * pb, U + rb, r);
  return st;
}

/* One grid: this rank's planes between r-plane halos, exchanged first, then one run (none when the
 * grid is under 3 planes: then they are all boundary planes), and the planes copied back. */
static spx_status spx__dst_round_one(spx__dst *s, int64_t r) {
  const int64_t own = s->own, pb = s->pb, rb = r * pb, hl = (s->lo >= 0) * r, n = hl + own + (s->hi >= 0) * r;
  char *M = s->eb[0], *mine = M + hl * pb;
  double t0;
  spx_status st = SPX_OK;
  spx__dst_copy(s, mine, s->u, own);
  t0 = spx__now();
  if (s->lo >= 0) {
    spx__dst_recv(s, M, rb, s->lo);
    spx__dst_send(s, mine, rb, s->lo);
  }
  if (s->hi >= 0) {
    spx__dst_recv(s, mine + own * pb, rb, s->hi);
    spx__dst_send(s, mine + (own - r) * pb, rb, s->hi);
  }
  s->rep.post_ms += 1e3 * (spx__now() - t0);
  spx__dst_wait(s);
  if (n >= 3 && !(st = spx__dst_run(s, M, n, r, &s->rep.interior_ms))) spx__dst_copy(s, s->u, mine, own);
  return st;
}

/* Every round, each ended by the status agreement (a rank whose run failed has completed its
 * messages; the others learn it here, before they post the next round's). */
static spx_status spx__dst_rounds(spx__dst *s) {
  int64_t done, r;
  spx_status st = SPX_OK;
  for (done = 0; done < s->steps && !st; done += r) {
    double t0;
    r = SPX__MIN(s->R, s->steps - done);
    if (s->own > 0) st = s->split ? spx__dst_round_split(s, r) : spx__dst_round_one(s, r);
    t0 = spx__now();
    st = spx__dist_agree_t(s->comm, s->rank, st, 0, "spx_dist_stencil_run");
    s->rep.agree_ms += 1e3 * (spx__now() - t0);
    s->rep.exchanges++;
  }
  return st;
}

/* ---- The run ------------------------------------------------------------------------------------ */
/* Everything after the entry agreement: the same problem everywhere, the interval, the buffers and
 * kernels, the rounds, the report. Collective; agreed. */
static spx_status spx__dst_go(spx__dst *s) {
  const spx_stencil *g = s->g;
  int64_t z0, z1, mine = INT64_MAX;
  double t0 = spx__now();
  spx_status st;
  spx_dist_stencil_planes(g->nz, s->size, s->rank, &z0, &z1);
  s->own = z1 - z0;
  s->pb = g->nx * g->ny * (int64_t)SPX_DTYPE_SIZE(g->dtype);
  s->lo = s->own > 0 && s->rank > 0 ? s->rank - 1 : -1;
  s->hi = s->own > 0 && z1 < g->nz ? s->rank + 1 : -1;
  s->rep.rank = s->rank; s->rep.size = s->size; s->rep.z0 = z0; s->rep.z1 = z1;
  s->rep.lo_rank = s->lo; s->rep.hi_rank = s->hi;
  if ((st = spx__dst_same(s, s->steps)) || s->steps == 0) return st;
  st = spx__dst_propose(s, &mine);
  if ((st = spx__dist_agree_t(s->comm, s->rank, st, 0, "spx_dist_stencil_run"))) return st;
  spx__dst_interval(s, mine);
  st = spx__dst_alloc(s);
  if (!st) st = spx__dst_warm(s);
  if ((st = spx__dist_agree_t(s->comm, s->rank, st, 0, "spx_dist_stencil_run"))) return st;
  s->rep.interval = s->R;
  s->rep.split = s->split;
  s->rep.halo_bytes = ((s->lo >= 0) + (s->hi >= 0)) * s->R * s->pb;
  s->rep.setup_ms = 1e3 * (spx__now() - t0);
  t0 = spx__now();
  if ((st = spx__dst_rounds(s))) return st;
  s->rep.total_ms = 1e3 * (spx__now() - t0) - s->rep.jit_ms;
  return SPX_OK;
}

/* The rates, once every rank's time is known. Collective. */
static void spx__dst_rates(spx__dst *s) {
  const spx_stencil *g = s->g;
  const double plane = (double)g->nx * (double)g->ny, steps = (double)s->steps;
  spx_dist_stencil_report *r = &s->rep;
  MPI_Allreduce(&r->total_ms, &r->max_total_ms, 1, MPI_DOUBLE, MPI_MAX, s->comm);
  r->gstencils = r->total_ms > 0 ? plane * (double)(r->z1 - r->z0) * steps / (r->total_ms * 1e6) : 0;
  r->total_gstencils = r->max_total_ms > 0 ? plane * (double)g->nz * steps / (r->max_total_ms * 1e6) : 0;
}

spx_status spx_dist_stencil_run(MPI_Comm comm, spx_context *ctx, const spx_stencil *g, void *u_local,
                                int64_t steps, const spx_dist_stencil_options *opt,
                                spx_dist_stencil_report *rep) {
  const char *fn = "spx_dist_stencil_run";
  spx__dst s;
  spx_status st;
  if (rep) memset(rep, 0, sizeof *rep);
  if (comm == MPI_COMM_NULL) return spx__fail(SPX_INVALID_ARGUMENT, "%s: the communicator is MPI_COMM_NULL", fn);
  memset(&s, 0, sizeof s);
  s.comm = MPI_COMM_NULL;
  if (opt) s.o = *opt;
  else spx_dist_stencil_options_default(&s.o);
  MPI_Comm_rank(comm, &s.rank);
  MPI_Comm_size(comm, &s.size);
  s.ctx = ctx; s.g = g; s.u = (char *)u_local; s.steps = steps;
  st = spx__dst_args(ctx, g, u_local, steps, &s.o, s.rank, s.size);
  /* every rank here within timeout_s, or a status for those that are */
  if ((st = spx__dist_agree_t(comm, s.rank, st, s.o.timeout_s, fn))) return st;
  MPI_Comm_dup(comm, &s.comm); /* the messages apart from the caller's */
  st = spx__dst_go(&s);
  if (!st) spx__dst_rates(&s);
  if (rep) *rep = s.rep;
  spx__dst_free(&s);
  return st;
}
