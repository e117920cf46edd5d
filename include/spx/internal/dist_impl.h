/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/dist.h: the row partition, the local/ghost split, the halo plan and its
 * exchange, the collective error agreement, and the distributed CG / Jacobi PCG / BiCGSTAB, which
 * follow the host twin of solve_impl.h step for step (the same chunked sums, the same decisions in
 * the same order) with the SpMV and the global sums replaced. Compiled after the core (spx.h) in
 * the implementation file that includes dist.h; uses only public headers, common.h and the CUDA
 * internals for pinned buffers. */
#include <limits.h>
#include <time.h>
#include "common.h"
#include "cuda_types.h" /* pinned host buffers, the context's backend */
#include "../dist.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support, where Open MPI has it */
#endif

struct spx_dist_matrix {
  MPI_Comm comm;              /* spx's duplicate of the caller's */
  int rank, size, own_ctx;
  double timeout_s;
  int64_t n, first, nlocal;
  int64_t *row_start;         /* size + 1 */
  spx_dtype dtype;
  size_t vs;
  MPI_Datatype mt;            /* MPI_DOUBLE or MPI_FLOAT */
  spx_context *ctx;
  int cuda;
  spx_plan *loc, *gho;        /* the local block (nlocal x nlocal), the ghost block (nlocal x nghost) */
  int64_t nnz_loc, nnz_gho, nghost;
  int32_t *ghost_col;         /* nghost global columns, ascending (so grouped by owner) */
  /* The halo: neighbours, and where their entries go (ghost vector) or come from (send list). */
  int nrecv, nsend;
  int *recv_rank, *send_rank;
  int64_t *recv_off;          /* nrecv + 1 offsets into the ghost vector */
  int64_t *send_off;          /* nsend + 1 offsets into send_idx */
  int64_t *send_idx;          /* local indices of x, grouped by neighbour, ascending within one */
  MPI_Request *req;           /* nrecv + nsend */
  void *sbuf, *gbuf;          /* send values, ghost values (pinned on CUDA) */
  void *stage;                /* CUDA: the span of x each neighbour needs, downloaded (pinned) */
  int64_t *stage_off;         /* CUDA: nsend + 1 offsets into stage */
  spx_devptr gdev;            /* CUDA: the ghost values on the device */
  spx_dist_info stats;        /* the counters */
};

#define SPX__DIST_TAG 0x5e7 /* the halo's messages (spx's own communicator: no clash with the caller) */

void spx_dist_options_default(spx_dist_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  spx_plan_options_default(&o->plan);
  o->timeout_s = 300;
}

/* ---- Agreeing on errors ------------------------------------------------------------------------
 * Every rank must leave a collective call with a status, and the same one: a rank that fails alone
 * and returns would leave the others waiting in the next collective. So failures are agreed on at
 * fixed points that every rank reaches: the lowest failing rank is found (MPI_Allreduce, MIN), and
 * its status and sentence are broadcast; the ranks that were fine fail with "rank R: sentence",
 * a rank that failed itself keeps its own sentence. */
typedef struct spx__dist_msg {
  int st;
  char text[500];
} spx__dist_msg;

/* The first failing rank `first` tells the others (every rank calls this with the same first). */
static spx_status spx__dist_spread(MPI_Comm comm, int rank, int first, spx_status mine, const char *text) {
  spx__dist_msg m;
  memset(&m, 0, sizeof m);
  if (rank == first) {
    m.st = (int)mine;
    snprintf(m.text, sizeof m.text, "%.499s", text);
  }
  MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, comm);
  if (mine) return mine;
  return spx__fail((spx_status)m.st, "rank %d: %s", first, m.text);
}

/* The lowest failing rank, by a reduction that waits at most timeout_s (<= 0: no limit): a rank
 * that never joins (another communicator, a NULL matrix, no call at all) fails the others. */
static spx_status spx__dist_first(MPI_Comm comm, int rank, spx_status st, double timeout_s, const char *fn,
                                  int *first) {
  int mine = st ? rank : INT_MAX, done = 0, size = 0;
  double t0 = spx__now();
  MPI_Request rq;
  *first = INT_MAX;
  if (timeout_s <= 0) {
    MPI_Allreduce(&mine, first, 1, MPI_INT, MPI_MIN, comm);
    return SPX_OK;
  }
  MPI_Iallreduce(&mine, first, 1, MPI_INT, MPI_MIN, comm, &rq);
  while (MPI_Test(&rq, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
    struct timespec ts = {0, 50000};
    if (spx__now() - t0 > timeout_s) {
      MPI_Comm_size(comm, &size);
      *first = INT_MAX;
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: not every rank of the communicator (%d ranks) joined within %.3g s: "
                       "a rank passed another communicator or a NULL matrix, or did not call (this communicator "
                       "is unusable from now on; options.timeout_s allows longer waits)", fn, size, timeout_s);
    }
    nanosleep(&ts, NULL);
  }
  return SPX_OK;
}

/* st agreed on by every rank of comm (timed as above, or not). */
static spx_status spx__dist_agree_t(MPI_Comm comm, int rank, spx_status st, double timeout_s, const char *fn) {
  int first;
  spx_status s2 = spx__dist_first(comm, rank, st, timeout_s, fn, &first);
  if (s2) return s2;
  if (first == INT_MAX) return SPX_OK;
  return spx__dist_spread(comm, rank, first, st, spx_last_error());
}

static spx_status spx__dist_agree(const spx_dist_matrix *d, spx_status st) {
  return spx__dist_agree_t(d->comm, d->rank, st, 0, "");
}

/* 1 when every rank holds the same k (<= 8) doubles: max(v) == -max(-v) term by term. */
static int spx__dist_same(MPI_Comm comm, const double *v, int k) {
  double in[16], out[16];
  int i;
  for (i = 0; i < k; i++) {
    in[i] = v[i];
    in[k + i] = -v[i];
  }
  MPI_Allreduce(in, out, 2 * k, MPI_DOUBLE, MPI_MAX, comm);
  for (i = 0; i < k; i++)
    if (out[i] != -out[k + i]) return 0;
  return 1;
}

/* ---- The matrix --------------------------------------------------------------------------------- */
static void spx__dist_pin_free(spx_dist_matrix *d, void *p) {
  if (!p) return;
  if (d->cuda && !spx__ctx_push(d->ctx)) {
    spx__host_free(spx__cuda(), p);
    spx__ctx_pop(d->ctx);
  } else if (!d->cuda) {
    SPX_FREE(p);
  }
}

/* Host memory for the halo: pinned on CUDA (the copies then run at the link's speed). */
static void *spx__dist_pin(spx_dist_matrix *d, size_t bytes) {
  void *p = NULL;
  if (!d->cuda) return spx__alloc(bytes + 1, 1);
  if (spx__ctx_push(d->ctx)) return NULL;
  if (spx__host_alloc(spx__cuda(), &p, bytes + 1, "spx_dist: pinned halo buffer")) p = NULL;
  spx__ctx_pop(d->ctx);
  return p;
}

/* Everything but the communicator (local, never fails). */
static void spx__dist_free_local(spx_dist_matrix *d) {
  spx_plan_destroy(d->loc);
  spx_plan_destroy(d->gho);
  spx__dist_pin_free(d, d->sbuf);
  spx__dist_pin_free(d, d->gbuf);
  spx__dist_pin_free(d, d->stage);
  if (d->gdev) spx_device_free(d->ctx, d->gdev);
  if (d->own_ctx) spx_context_destroy(d->ctx);
  SPX_FREE(d->row_start);
  SPX_FREE(d->ghost_col);
  SPX_FREE(d->recv_rank);
  SPX_FREE(d->send_rank);
  SPX_FREE(d->recv_off);
  SPX_FREE(d->send_off);
  SPX_FREE(d->send_idx);
  SPX_FREE(d->stage_off);
  SPX_FREE(d->req);
}

void spx_dist_destroy(spx_dist_matrix *d) {
  if (!d) return;
  spx__dist_free_local(d);
  if (d->comm != MPI_COMM_NULL) MPI_Comm_free(&d->comm);
  SPX_FREE(d);
}

/* The handshake: spx's own communicator, duplicated from the caller's within timeout_s. */
static spx_status spx__dist_open(MPI_Comm comm, const spx_dist_options *o, const char *fn, spx_dist_matrix **out) {
  spx_dist_matrix *d;
  MPI_Request rq;
  int done = 0;
  double t0 = spx__now();
  *out = NULL;
  if (comm == MPI_COMM_NULL) return spx__fail(SPX_INVALID_ARGUMENT, "%s: the communicator is MPI_COMM_NULL", fn);
  if (!(d = (spx_dist_matrix *)spx__calloc(1, sizeof *d))) return SPX_OUT_OF_MEMORY;
  d->comm = MPI_COMM_NULL;
  d->timeout_s = o->timeout_s;
  if (MPI_Comm_idup(comm, &d->comm, &rq) != MPI_SUCCESS) {
    SPX_FREE(d);
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: MPI_Comm_idup failed on the communicator given", fn);
  }
  while (MPI_Test(&rq, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
    struct timespec ts = {0, 50000};
    if (o->timeout_s > 0 && spx__now() - t0 > o->timeout_s) {
      int size = 0;
      MPI_Comm_size(comm, &size);
      SPX_FREE(d); /* the pending idup keeps its handle: the communicator is erroneous now */
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: not every rank of the communicator (%d ranks) called within %.3g s: "
                       "a rank passed another communicator, or did not call (this communicator is unusable from now "
                       "on; options.timeout_s allows longer waits)", fn, size, o->timeout_s);
    }
    nanosleep(&ts, NULL);
  }
  MPI_Comm_rank(d->comm, &d->rank);
  MPI_Comm_size(d->comm, &d->size);
  *out = d;
  return SPX_OK;
}

static int spx__dist_i32cmp(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The index of global column c in the sorted ghost list (present by construction). */
static int64_t spx__dist_ghost_index(const spx_dist_matrix *d, int32_t c) {
  int64_t lo = 0, hi = d->nghost - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (d->ghost_col[mid] < c) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The rows' columns split: the local block (owned columns - first) and the ghost block (remote
 * columns, numbered by their place in the sorted ghost list). Both keep each row's column order. */
static spx_status spx__dist_split(spx_dist_matrix *d, const spx_csr *a, spx_csr **loc, spx_csr **gho) {
  const int64_t lo = d->first, hi = d->first + d->nlocal;
  int64_t i, k, nl = 0, ng = 0, u = 0;
  int32_t *cols = NULL;
  spx_status st;
  *loc = *gho = NULL;
  for (k = 0; k < a->nnz; k++) {
    if (a->col_idx[k] >= lo && a->col_idx[k] < hi) nl++;
    else ng++;
  }
  if (!(cols = (int32_t *)spx__alloc((size_t)ng + 1, sizeof(int32_t)))) return SPX_OUT_OF_MEMORY;
  for (k = 0, ng = 0; k < a->nnz; k++)
    if (a->col_idx[k] < lo || a->col_idx[k] >= hi) cols[ng++] = a->col_idx[k];
  qsort(cols, (size_t)ng, sizeof *cols, spx__dist_i32cmp);
  for (k = 0; k < ng; k++)
    if (u == 0 || cols[k] != cols[u - 1]) cols[u++] = cols[k];
  d->ghost_col = cols;
  d->nghost = u;
  d->nnz_loc = nl;
  d->nnz_gho = ng;
  if ((st = spx_csr_create(d->nlocal, d->nlocal, nl, a->dtype, loc)) ||
      (st = spx_csr_create(d->nlocal, u, ng, a->dtype, gho)))
    return st;
  for (i = 0, nl = ng = 0; i < d->nlocal; i++) {
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      int32_t c = a->col_idx[k];
      spx_csr *t = c >= lo && c < hi ? *loc : *gho;
      int64_t at = t == *loc ? nl++ : ng++;
      t->col_idx[at] = (int32_t)(t == *loc ? c - lo : spx__dist_ghost_index(d, c));
      memcpy((char *)t->val.p + (size_t)at * d->vs, (const char *)a->val.p + (size_t)k * d->vs, d->vs);
    }
    (*loc)->row_ptr[i + 1] = nl;
    (*gho)->row_ptr[i + 1] = ng;
  }
  return SPX_OK;
}

/* Who sends which entries of x to whom: each rank counts the ghosts it wants from every owner
 * (contiguous runs of the sorted ghost list), MPI_Alltoall turns wants into send counts, and
 * MPI_Alltoallv ships the wanted global columns to their owners. Collective; agreed. */
static spx_status spx__dist_halo(spx_dist_matrix *d) {
  const int P = d->size;
  int *rc = (int *)spx__calloc((size_t)P, sizeof(int)), *sc = (int *)spx__calloc((size_t)P, sizeof(int));
  int *rd = (int *)spx__calloc((size_t)P + 1, sizeof(int)), *sd = (int *)spx__calloc((size_t)P + 1, sizeof(int));
  int32_t *want = NULL;
  int64_t k, total = 0;
  int q, j;
  spx_status st = rc && sc && rd && sd ? SPX_OK : SPX_OUT_OF_MEMORY;
  for (k = 0, q = 0; !st && k < d->nghost; k++) {
    while (d->ghost_col[k] >= d->row_start[q + 1]) q++;
    rc[q]++;
  }
  if ((st = spx__dist_agree(d, st))) goto done;
  MPI_Alltoall(rc, 1, MPI_INT, sc, 1, MPI_INT, d->comm);
  for (q = 0; q < P; q++) {
    rd[q + 1] = rd[q] + rc[q];
    sd[q + 1] = sd[q] + sc[q];
    d->nrecv += rc[q] > 0;
    d->nsend += sc[q] > 0;
  }
  total = sd[P];
  if (!(want = (int32_t *)spx__alloc((size_t)total + 1, sizeof(int32_t))) ||
      !(d->send_idx = (int64_t *)spx__alloc((size_t)total + 1, sizeof(int64_t))) ||
      !(d->recv_rank = (int *)spx__alloc((size_t)d->nrecv + 1, sizeof(int))) ||
      !(d->send_rank = (int *)spx__alloc((size_t)d->nsend + 1, sizeof(int))) ||
      !(d->recv_off = (int64_t *)spx__calloc((size_t)d->nrecv + 1, sizeof(int64_t))) ||
      !(d->send_off = (int64_t *)spx__calloc((size_t)d->nsend + 1, sizeof(int64_t))) ||
      !(d->req = (MPI_Request *)spx__alloc((size_t)(d->nrecv + d->nsend) + 1, sizeof(MPI_Request))))
    st = SPX_OUT_OF_MEMORY;
  if ((st = spx__dist_agree(d, st))) goto done;
  MPI_Alltoallv(d->ghost_col, rc, rd, MPI_INT32_T, want, sc, sd, MPI_INT32_T, d->comm);
  for (k = 0; k < total; k++) {
    d->send_idx[k] = (int64_t)want[k] - d->first;
    if (d->send_idx[k] < 0 || d->send_idx[k] >= d->nlocal) { /* a bug, not an input: each asks its owner */
      st = spx__fail(SPX_INTERNAL, "spx_dist: a neighbour asked for column %d, which rank %d does not own", want[k],
                     d->rank);
      break;
    }
  }
  for (q = 0, j = 0; q < P; q++)
    if (rc[q]) {
      d->recv_rank[j] = q;
      d->recv_off[++j] = rd[q + 1];
    }
  for (q = 0, j = 0; q < P; q++)
    if (sc[q]) {
      d->send_rank[j] = q;
      d->send_off[++j] = sd[q + 1];
    }
  d->stats.send_entries = total;
  st = spx__dist_agree(d, st);
done:
  SPX_FREE(rc);
  SPX_FREE(sc);
  SPX_FREE(rd);
  SPX_FREE(sd);
  SPX_FREE(want);
  return st;
}

/* The halo's buffers: host (pinned on CUDA), and on CUDA the staging of the spans of x each
 * neighbour reads, and the ghost vector on the device. */
static spx_status spx__dist_buffers(spx_dist_matrix *d) {
  int64_t total = d->send_off[d->nsend], span = 0;
  int j;
  spx_status st;
  if (!(d->sbuf = spx__dist_pin(d, (size_t)total * d->vs)) || !(d->gbuf = spx__dist_pin(d, (size_t)d->nghost * d->vs)))
    return d->cuda ? spx__fail(SPX_OUT_OF_MEMORY, "spx_dist: pinned halo buffers: %s", spx_last_error()) : SPX_OUT_OF_MEMORY;
  if (!d->cuda) return SPX_OK;
  if (!(d->stage_off = (int64_t *)spx__calloc((size_t)d->nsend + 1, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
  for (j = 0; j < d->nsend; j++) {
    int64_t a = d->send_off[j], b = d->send_off[j + 1];
    span += b > a ? d->send_idx[b - 1] - d->send_idx[a] + 1 : 0;
    d->stage_off[j + 1] = span;
  }
  if (!(d->stage = spx__dist_pin(d, (size_t)span * d->vs)))
    return spx__fail(SPX_OUT_OF_MEMORY, "spx_dist: pinned halo buffers: %s", spx_last_error());
  if (d->nghost > 0 && (st = spx_device_alloc(d->ctx, (size_t)d->nghost * d->vs, &d->gdev))) return st;
  return SPX_OK;
}

/* The context and the two plans (the local block keeps its diagonal: Jacobi reads it). */
static spx_status spx__dist_plans(spx_dist_matrix *d, const spx_dist_options *o, const spx_csr *loc,
                                  const spx_csr *gho) {
  spx_plan_options po = o->plan;
  spx_status st;
  if (o->ctx) d->ctx = o->ctx;
  else {
    spx_context_options co;
    memset(&co, 0, sizeof co);
    co.backend = o->plan.backend;
    if ((st = spx_context_create(&co, &d->ctx))) return st;
    d->own_ctx = 1;
  }
  d->cuda = spx_context_backend(d->ctx) == SPX_BACKEND_CUDA;
  po.backend = spx_context_backend(d->ctx);
  po.dtype = (int)d->dtype;
  po.defer = 0; /* the solvers here do not upgrade */
  po.no_diagonal = 0;
  if (d->nlocal > 0 && (st = spx_plan_create(d->ctx, loc, &po, &d->loc)))
    return spx__wrap(st, "spx_dist: the local block's plan (%lld rows, %lld nonzeros)", (long long)d->nlocal,
                     (long long)d->nnz_loc);
  po.no_diagonal = 1;
  if (d->nnz_gho > 0 && (st = spx_plan_create(d->ctx, gho, &po, &d->gho)))
    return spx__wrap(st, "spx_dist: the ghost block's plan (%lld rows, %lld columns, %lld nonzeros)",
                     (long long)d->nlocal, (long long)d->nghost, (long long)d->nnz_gho);
  if (d->loc && (st = spx_plan_build(d->loc))) return st;
  if (d->gho && (st = spx_plan_build(d->gho))) return st;
  return SPX_OK;
}

/* From this rank's rows (global columns; d's partition set): the blocks, the halo, the plans, the
 * buffers. Collective; agreed; d is freed on failure (*out = NULL). */
static spx_status spx__dist_build(spx_dist_matrix *d, const spx_csr *rows, const spx_dist_options *o,
                                  spx_dist_matrix **out) {
  spx_csr *loc = NULL, *gho = NULL;
  spx_status st;
  d->vs = SPX_DTYPE_SIZE(d->dtype);
  d->mt = d->dtype == SPX_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
  d->first = d->row_start[d->rank];
  d->nlocal = d->row_start[d->rank + 1] - d->first;
  st = spx__dist_split(d, rows, &loc, &gho);
  if (!(st = spx__dist_agree(d, st)) && !(st = spx__dist_halo(d))) {
    st = spx__dist_plans(d, o, loc, gho);
    if (!st) st = spx__dist_buffers(d);
    st = spx__dist_agree(d, st);
  }
  spx_csr_destroy(loc);
  spx_csr_destroy(gho);
  if (st) {
    spx_dist_destroy(d);
    return st;
  }
  *out = d;
  return SPX_OK;
}

/* The root's checks of the global matrix and of options.row_start. */
static spx_status spx__dist_root_check(const spx_csr *a, const int64_t *rs, int size) {
  const char *fn = "spx_dist_scatter";
  int r;
  spx_status st;
  if (!a) return spx__fail(SPX_INVALID_ARGUMENT, "%s: the root passed a NULL matrix", fn);
  if ((st = spx_csr_validate(a))) return spx__wrap(st, "%s: the global matrix", fn);
  if (a->nrows != a->ncols)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: the matrix is %lld x %lld; a distributed matrix is square", fn,
                     (long long)a->nrows, (long long)a->ncols);
  if (!rs) return SPX_OK;
  if (rs[0] != 0 || rs[size] != a->nrows)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: options.row_start runs from %lld to %lld; it must run from 0 to n = %lld",
                     fn, (long long)rs[0], (long long)rs[size], (long long)a->nrows);
  for (r = 0; r < size; r++)
    if (rs[r + 1] < rs[r])
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: options.row_start[%d] = %lld < row_start[%d] = %lld: it must not "
                       "decrease", fn, r + 1, (long long)rs[r + 1], r, (long long)rs[r]);
  return SPX_OK;
}

/* Rank r's first row: the first row whose preceding weight (nonzeros + rows) reaches r/P of the
 * total, so every rank carries about the same work and empty rows are not free. */
static void spx__dist_balance(const spx_csr *a, int P, int64_t *rs) {
  const double total = (double)(a->nnz + a->nrows);
  int r;
  rs[0] = 0;
  rs[P] = a->nrows;
  for (r = 1; r < P; r++) {
    int64_t lo = rs[r - 1], hi = a->nrows;
    const double target = total * r / P;
    while (lo < hi) { /* the first i with row_ptr[i] + i >= target */
      int64_t mid = lo + (hi - lo) / 2;
      if ((double)(a->row_ptr[mid] + mid) < target) lo = mid + 1;
      else hi = mid;
    }
    rs[r] = lo;
  }
}

/* The root sends each rank its rows (row pointers rebased, columns, values) point to point: MPI
 * counts are int, while the global matrix's offsets may pass 2^31. */
static void spx__dist_send_rows(const spx_dist_matrix *d, int root, const spx_csr *a, spx_csr *mine) {
  int r;
  if (d->rank != root) {
    MPI_Recv(mine->row_ptr, (int)(d->nlocal + 1), MPI_INT64_T, root, SPX__DIST_TAG, d->comm, MPI_STATUS_IGNORE);
    MPI_Recv(mine->col_idx, (int)mine->nnz, MPI_INT32_T, root, SPX__DIST_TAG, d->comm, MPI_STATUS_IGNORE);
    MPI_Recv(mine->val.p, (int)mine->nnz, d->mt, root, SPX__DIST_TAG, d->comm, MPI_STATUS_IGNORE);
    return;
  }
  for (r = 0; r < d->size; r++) {
    const int64_t f = d->row_start[r], m = d->row_start[r + 1] - f, k0 = a->row_ptr[f], nz = a->row_ptr[f + m] - k0;
    if (r == root) {
      int64_t i;
      for (i = 0; i <= m; i++) mine->row_ptr[i] = a->row_ptr[f + i] - k0;
      memcpy(mine->col_idx, a->col_idx + k0, (size_t)nz * sizeof(int32_t));
      memcpy(mine->val.p, (const char *)a->val.p + (size_t)k0 * d->vs, (size_t)nz * d->vs);
      continue;
    }
    /* row pointers as they are; the receiver rebases them */
    MPI_Send(a->row_ptr + f, (int)(m + 1), MPI_INT64_T, r, SPX__DIST_TAG, d->comm);
    MPI_Send(a->col_idx + k0, (int)nz, MPI_INT32_T, r, SPX__DIST_TAG, d->comm);
    MPI_Send((const char *)a->val.p + (size_t)k0 * d->vs, (int)nz, d->mt, r, SPX__DIST_TAG, d->comm);
  }
}

spx_status spx_dist_scatter(MPI_Comm comm, int root, const spx_csr *a, const spx_dist_options *options,
                            spx_dist_matrix **out) {
  const char *fn = "spx_dist_scatter";
  spx_dist_options od;
  spx_dist_matrix *d = NULL;
  spx_csr *mine = NULL;
  int64_t head[2] = {0, 0}, *nnz = NULL, mnz = 0;
  double roots[1];
  spx_status st = SPX_OK;
  int r;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL out", fn); /* no handle: cannot take part */
  *out = NULL;
  if (options) od = *options;
  else spx_dist_options_default(&od);
  if ((st = spx__dist_open(comm, &od, fn, &d))) return st;
  roots[0] = root;
  if (!spx__dist_same(d->comm, roots, 1) || root < 0 || root >= d->size)
    st = spx__fail(SPX_INVALID_ARGUMENT, "%s: root = %d; every rank must pass the same root in 0..%d", fn, root,
                   d->size - 1);
  if (!(d->row_start = (int64_t *)spx__calloc((size_t)d->size + 1, sizeof(int64_t))) && !st) st = SPX_OUT_OF_MEMORY;
  if (!st && d->rank == root && !(st = spx__dist_root_check(a, od.row_start, d->size))) {
    if (od.row_start) memcpy(d->row_start, od.row_start, ((size_t)d->size + 1) * sizeof(int64_t));
    else spx__dist_balance(a, d->size, d->row_start);
    head[0] = a->nrows;
    head[1] = a->dtype;
    if (!(nnz = (int64_t *)spx__alloc((size_t)d->size, sizeof(int64_t)))) st = SPX_OUT_OF_MEMORY;
    for (r = 0; !st && r < d->size; r++) {
      nnz[r] = a->row_ptr[d->row_start[r + 1]] - a->row_ptr[d->row_start[r]];
      if (nnz[r] > INT_MAX)
        st = spx__fail(SPX_UNSUPPORTED, "%s: rank %d's rows hold %lld nonzeros, more than one MPI message carries "
                       "(2^31 - 1): use more ranks, or spx_dist_create", fn, r, (long long)nnz[r]);
    }
  }
  if ((st = spx__dist_agree_t(d->comm, d->rank, st, 0, fn))) goto fail;
  MPI_Bcast(head, 2, MPI_INT64_T, root, d->comm);
  MPI_Bcast(d->row_start, d->size + 1, MPI_INT64_T, root, d->comm);
  MPI_Scatter(nnz, 1, MPI_INT64_T, &mnz, 1, MPI_INT64_T, root, d->comm);
  d->n = head[0];
  d->dtype = (spx_dtype)head[1];
  d->vs = SPX_DTYPE_SIZE(d->dtype);
  d->mt = d->dtype == SPX_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
  d->nlocal = d->row_start[d->rank + 1] - d->row_start[d->rank];
  st = spx_csr_create(d->nlocal, d->n, mnz, d->dtype, &mine);
  if ((st = spx__dist_agree(d, st))) goto fail;
  spx__dist_send_rows(d, root, a, mine);
  if (d->rank != root) {
    int64_t i, k0 = mine->row_ptr[0];
    for (i = 0; i <= d->nlocal; i++) mine->row_ptr[i] -= k0;
  }
  SPX_FREE(nnz);
  st = spx__dist_build(d, mine, &od, out);
  spx_csr_destroy(mine);
  return st;
fail:
  SPX_FREE(nnz);
  spx_csr_destroy(mine);
  spx_dist_destroy(d);
  return st;
}

/* One rank's own checks of its rows. */
static spx_status spx__dist_rows_check(int64_t n, const spx_csr *rows) {
  const char *fn = "spx_dist_create";
  spx_status st;
  if (!rows) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL rows (a rank without rows passes a 0 x n CSR)", fn);
  if (n < 0 || n > INT32_MAX)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: n = %lld; it must be in 0..2^31-1", fn, (long long)n);
  if (rows->ncols != n)
    return spx__fail(SPX_DIMENSION_MISMATCH, "%s: the rows have %lld columns; they must have n = %lld (global column "
                     "indices)", fn, (long long)rows->ncols, (long long)n);
  if ((st = spx_csr_validate(rows))) return spx__wrap(st, "%s: this rank's rows", fn);
  return SPX_OK;
}

/* Every rank's n, dtype and row count, gathered: the same n and dtype everywhere, rows summing to
 * n. Every rank sees the same table, so every rank finds the same fault (no message to spread). */
static spx_status spx__dist_rows_agree(spx_dist_matrix *d, int64_t n, const spx_csr *rows) {
  const char *fn = "spx_dist_create";
  int64_t mine[3] = {n, rows->dtype, rows->nrows}, *all, sum = 0;
  spx_status st = SPX_OK;
  int r;
  all = (int64_t *)spx__alloc(3 * (size_t)d->size, sizeof(int64_t));
  if ((st = spx__dist_agree(d, all ? SPX_OK : SPX_OUT_OF_MEMORY))) {
    SPX_FREE(all);
    return st;
  }
  MPI_Allgather(mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, d->comm);
  d->row_start[0] = 0;
  for (r = 0; r < d->size && !st; r++) {
    if (all[3 * r] != all[0])
      st = spx__fail(SPX_DIMENSION_MISMATCH, "%s: rank %d passed n = %lld where rank 0 passed n = %lld: every rank must "
                     "pass the same global size", fn, r, (long long)all[3 * r], (long long)all[0]);
    else if (all[3 * r + 1] != all[1])
      st = spx__fail(SPX_INVALID_ARGUMENT, "%s: rank %d's rows are %s where rank 0's are %s: every rank must pass the "
                     "same dtype", fn, r, spx_dtype_name((spx_dtype)all[3 * r + 1]), spx_dtype_name((spx_dtype)all[1]));
    sum += all[3 * r + 2];
    d->row_start[r + 1] = sum;
  }
  if (!st && sum != n)
    st = spx__fail(SPX_DIMENSION_MISMATCH, "%s: the ranks' rows add up to %lld, not n = %lld", fn, (long long)sum,
                   (long long)n);
  d->n = n;
  d->dtype = rows->dtype;
  SPX_FREE(all);
  return st;
}

spx_status spx_dist_create(MPI_Comm comm, int64_t n, const spx_csr *rows, const spx_dist_options *options,
                           spx_dist_matrix **out) {
  const char *fn = "spx_dist_create";
  spx_dist_options od;
  spx_dist_matrix *d = NULL;
  spx_status st;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL out", fn);
  *out = NULL;
  if (options) od = *options;
  else spx_dist_options_default(&od);
  if ((st = spx__dist_open(comm, &od, fn, &d))) return st;
  st = spx__dist_rows_check(n, rows);
  if (!(d->row_start = (int64_t *)spx__calloc((size_t)d->size + 1, sizeof(int64_t))) && !st) st = SPX_OUT_OF_MEMORY;
  if (!(st = spx__dist_agree_t(d->comm, d->rank, st, 0, fn)) && !(st = spx__dist_rows_agree(d, n, rows)))
    return spx__dist_build(d, rows, &od, out);
  spx_dist_destroy(d);
  return st;
}

/* ---- The SpMV ------------------------------------------------------------------------------------ */
/* The send buffer from x: on the host a gather; on CUDA each neighbour's span of x comes down to the
 * pinned stage first. */
static spx_status spx__dist_pack(spx_dist_matrix *d, const void *x) {
  const size_t vs = d->vs;
  int64_t k;
  int j;
  spx_status st;
  if (!d->cuda) {
    for (k = 0; k < d->send_off[d->nsend]; k++)
      memcpy((char *)d->sbuf + (size_t)k * vs, (const char *)x + (size_t)d->send_idx[k] * vs, vs);
    return SPX_OK;
  }
  for (j = 0; j < d->nsend; j++) {
    int64_t a = d->send_off[j], b = d->send_off[j + 1], lo = d->send_idx[a];
    char *stage = (char *)d->stage + (size_t)d->stage_off[j] * vs;
    spx_devptr src = (spx_devptr)(uintptr_t)x + (spx_devptr)lo * vs;
    if ((st = spx_device_download(d->ctx, stage, src, (size_t)(d->stage_off[j + 1] - d->stage_off[j]) * vs))) return st;
    for (k = a; k < b; k++) memcpy((char *)d->sbuf + (size_t)k * vs, stage + (size_t)(d->send_idx[k] - lo) * vs, vs);
  }
  return SPX_OK;
}

/* y = alpha A x + beta y without the entry agreement: every rank completes its messages whatever
 * fails locally (a failed pack still sends, so no neighbour waits forever); the status is this
 * rank's. */
static spx_status spx__dist_spmv(spx_dist_matrix *d, double alpha, const void *x, double beta, void *y) {
  const size_t vs = d->vs;
  const void *g = d->cuda ? (const void *)(uintptr_t)d->gdev : d->gbuf;
  double t0 = spx__now(), t1;
  spx_status st, s2 = SPX_OK;
  int j;
  for (j = 0; j < d->nrecv; j++)
    MPI_Irecv((char *)d->gbuf + (size_t)d->recv_off[j] * vs, (int)(d->recv_off[j + 1] - d->recv_off[j]), d->mt,
              d->recv_rank[j], SPX__DIST_TAG, d->comm, &d->req[j]);
  st = spx__dist_pack(d, x);
  for (j = 0; j < d->nsend; j++)
    MPI_Isend((char *)d->sbuf + (size_t)d->send_off[j] * vs, (int)(d->send_off[j + 1] - d->send_off[j]), d->mt,
              d->send_rank[j], SPX__DIST_TAG, d->comm, &d->req[d->nrecv + j]);
  if (!st && d->loc) st = spx_plan_spmv(d->loc, alpha, x, beta, y); /* on a GPU: queued, runs during the wait */
  t1 = spx__now();
  MPI_Waitall(d->nrecv + d->nsend, d->req, MPI_STATUSES_IGNORE);
  d->stats.halo_wait_ms += 1e3 * (spx__now() - t1);
  if (!st && d->cuda && d->nghost > 0) st = spx_device_upload(d->ctx, d->gdev, d->gbuf, (size_t)d->nghost * vs);
  if (!st && d->gho) s2 = spx_plan_spmv(d->gho, alpha, g, 1.0, y);
  d->stats.spmvs++;
  d->stats.halo_bytes_sent += d->send_off[d->nsend] * (int64_t)vs;
  d->stats.spmv_ms += 1e3 * (spx__now() - t0);
  return st ? st : s2;
}

spx_status spx_dist_spmv(spx_dist_matrix *A, double alpha, const void *x, double beta, void *y) {
  spx_status st = SPX_OK;
  if (!A) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_spmv: NULL matrix"); /* no communicator to tell */
  if (A->nlocal > 0 && (!x || !y)) st = spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_spmv: %s is NULL", !x ? "x" : "y");
  if ((st = spx__dist_agree_t(A->comm, A->rank, st, A->timeout_s, "spx_dist_spmv"))) return st;
  return spx__dist_agree(A, spx__dist_spmv(A, alpha, x, beta, y));
}

/* ---- Getters --------------------------------------------------------------------------------------- */
spx_status spx_dist_get_info(const spx_dist_matrix *A, spx_dist_info *out) {
  if (!A || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_get_info: NULL argument");
  *out = A->stats;
  out->rank = A->rank;
  out->size = A->size;
  out->n = A->n;
  out->first_row = A->first;
  out->nlocal = A->nlocal;
  out->nnz_local = A->nnz_loc;
  out->nnz_ghost = A->nnz_gho;
  out->nghost = A->nghost;
  out->recv_neighbors = A->nrecv;
  out->send_neighbors = A->nsend;
  out->halo_bytes = A->stats.send_entries * (int64_t)A->vs;
  out->dtype = A->dtype;
  out->backend = A->cuda ? SPX_BACKEND_CUDA : SPX_BACKEND_HOST;
  return SPX_OK;
}

int64_t spx_dist_row_start(const spx_dist_matrix *A, int r) {
  return A && r >= 0 && r <= A->size ? A->row_start[r] : -1;
}
spx_plan *spx_dist_local_plan(const spx_dist_matrix *A) { return A ? A->loc : NULL; }
spx_plan *spx_dist_ghost_plan(const spx_dist_matrix *A) { return A ? A->gho : NULL; }
int64_t spx_dist_ghost_col(const spx_dist_matrix *A, int64_t k) {
  return A && k >= 0 && k < A->nghost ? A->ghost_col[k] : -1;
}
MPI_Comm spx_dist_comm(const spx_dist_matrix *A) { return A ? A->comm : MPI_COMM_NULL; }

int spx_dist_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return 0;
#endif
}

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
