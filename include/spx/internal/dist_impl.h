/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/dist.h, its matrix room: the row partition, the local/ghost split, the halo
 * plan and its exchange, the collective error agreement, the SpMV, the getters and the vectors in
 * the original order (the graph partition is dist_part_impl.h, below it; the parallel file read
 * dist_mm_impl.h and the solvers dist_solve_impl.h, above it). Compiled after the core (spx.h) in
 * the implementation file that includes dist.h; uses only public headers, common.h and the CUDA
 * internals for pinned buffers. */
#include <limits.h>
#include <time.h>
#include "common.h"
#include "cuda_types.h" /* pinned host buffers, the context's backend */
#include "../dist.h"
#include "dist_matrix.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support, where Open MPI has it */
#endif


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
spx_status spx__dist_spread(MPI_Comm comm, int rank, int first, spx_status mine, const char *text) {
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
    double t = spx__now() - t0;
    if (t > timeout_s) {
      MPI_Comm_size(comm, &size);
      *first = INT_MAX;
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: not every rank of the communicator (%d ranks) joined within %.3g s: "
                       "a rank passed another communicator or a NULL matrix, or did not call (this communicator "
                       "is unusable from now on; options.timeout_s allows longer waits)", fn, size, timeout_s);
    }
    /* ranks that arrive together agree within microseconds: polls first, sleeps only on a late rank
     * (a sleep is tens of microseconds, more than a distributed SpMV's own halo) */
    if (t > 1e-3) nanosleep(&ts, NULL);
  }
  return SPX_OK;
}

/* st agreed on by every rank of comm (timed as above, or not). */
spx_status spx__dist_agree_t(MPI_Comm comm, int rank, spx_status st, double timeout_s, const char *fn) {
  int first;
  spx_status s2 = spx__dist_first(comm, rank, st, timeout_s, fn, &first);
  if (s2) return s2;
  if (first == INT_MAX) return SPX_OK;
  return spx__dist_spread(comm, rank, first, st, spx_last_error());
}

spx_status spx__dist_agree(const spx_dist_matrix *d, spx_status st) {
  return spx__dist_agree_t(d->comm, d->rank, st, 0, "");
}

/* 1 when every rank holds the same k (<= 8) doubles: max(v) == -max(-v) term by term. */
int spx__dist_same(MPI_Comm comm, const double *v, int k) {
  double in[16] = {0}, out[16];
  int i;
  if (k < 1 || k > 8) return k < 1;
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

/* CUDA: the halo's stream and events (the copies run on it, beside the local block's SpMV). */
static spx_status spx__dist_streams(spx_dist_matrix *d) {
  const spx__cuda_api *cu = spx__cuda();
  spx_status st;
  if (!cu) return spx__fail(SPX_NOT_AVAILABLE, "spx_dist: no CUDA driver");
  if ((st = spx__ctx_push(d->ctx))) return st;
  st = spx__stream_new(cu, (spx__CUstream *)&d->hstream);
  if (!st) st = spx__event_new(cu, (spx__CUevent *)&d->ev_x, 0);
  if (!st) st = spx__event_new(cu, (spx__CUevent *)&d->ev_g, 0);
  spx__ctx_pop(d->ctx);
  return st;
}

static void spx__dist_streams_free(spx_dist_matrix *d) {
  const spx__cuda_api *cu = spx__cuda();
  if (!d->cuda || !cu || (!d->hstream && !d->ev_x && !d->ev_g) || spx__ctx_push(d->ctx)) return;
  if (d->hstream) spx__stream_drain(cu, (spx__CUstream)d->hstream);
  if (d->ev_x) spx__event_free(cu, (spx__CUevent)d->ev_x);
  if (d->ev_g) spx__event_free(cu, (spx__CUevent)d->ev_g);
  if (d->ev_gdone) spx__event_free(cu, (spx__CUevent)d->ev_gdone);
  if (d->hstream) spx__stream_free(cu, (spx__CUstream)d->hstream);
  spx__ctx_pop(d->ctx);
  d->hstream = d->ev_x = d->ev_g = d->ev_gdone = NULL;
}

/* CUDA IPC: the neighbours' buffers unmapped, ours freed (after the device is done with them). */
static void spx__dist_ipc_free(spx_dist_matrix *d) {
  const spx__cuda_api *cu = spx__cuda();
  int j;
  if (!d->cuda || !cu || (!d->peer && !d->gipc) || spx__ctx_push(d->ctx)) return;
  (void)cu->cuCtxSynchronize();
  for (j = 0; d->peer && j < d->nsend; j++)
    if (d->peer[j]) (void)cu->cuIpcCloseMemHandle(d->peer[j] - (spx__CUdeviceptr)d->recv_at[j]);
  if (d->gipc) (void)cu->cuMemFree(d->gipc);
  spx__ctx_pop(d->ctx);
  if (d->gdev == d->gipc) d->gdev = 0;
  d->gipc = 0;
  SPX_FREE(d->peer);
  SPX_FREE(d->recv_at);
  SPX_FREE(d->flag_req);
}

/* Everything but the communicator (local, never fails). */
static void spx__dist_free_local(spx_dist_matrix *d) {
  spx_plan_destroy(d->loc);
  spx_plan_destroy(d->gho);
  spx_csr_destroy(d->loc_csr);
  spx__dist_pin_free(d, d->sbuf);
  spx__dist_pin_free(d, d->gbuf);
  spx__dist_pin_free(d, d->stage);
  spx__dist_ipc_free(d);
  spx__dist_streams_free(d);
  if (d->growd) spx_device_free(d->ctx, d->growd);
  if (d->tdev) spx_device_free(d->ctx, d->tdev);
  SPX_FREE(d->tbuf);
  SPX_FREE(d->grow);
  SPX_FREE(d->direct);
  if (d->gdev) spx_device_free(d->ctx, d->gdev);
  if (d->own_ctx) spx_context_destroy(d->ctx);
  SPX_FREE(d->row_start);
  SPX_FREE(d->orig);
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
spx_status spx__dist_open(MPI_Comm comm, const spx_dist_options *o, const char *fn, spx_dist_matrix **out) {
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

/* The ghost block keeps only its nonempty rows (a slab's ghost rows are its first and last planes:
 * a plan over every row would walk millions of empty ones); grow[r] is compact row r's local row. */
static spx_status spx__dist_compact(spx_dist_matrix *d, spx_csr **gho) {
  const spx_csr *g = *gho;
  spx_csr *c = NULL;
  int64_t i, r = 0, n = 0;
  spx_status st;
  for (i = 0; i < g->nrows; i++) n += g->row_ptr[i + 1] > g->row_ptr[i];
  if (!(d->grow = (int32_t *)spx__alloc((size_t)n + 1, sizeof(int32_t)))) return SPX_OUT_OF_MEMORY;
  if ((st = spx_csr_create(n, g->ncols, g->nnz, g->dtype, &c))) return st;
  for (i = 0; i < g->nrows; i++) {
    if (g->row_ptr[i + 1] == g->row_ptr[i]) continue;
    d->grow[r] = (int32_t)i;
    c->row_ptr[++r] = g->row_ptr[i + 1];
  }
  memcpy(c->col_idx, g->col_idx, (size_t)g->nnz * sizeof(int32_t));
  memcpy(c->val.p, g->val.p, (size_t)g->nnz * d->vs);
  d->ngrow = n;
  spx_csr_destroy(*gho);
  *gho = c;
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
  if (!(d->tbuf = spx__alloc((size_t)d->ngrow + 1, d->vs))) return SPX_OUT_OF_MEMORY;
  if (!d->cuda) return SPX_OK;
  if (!(d->stage_off = (int64_t *)spx__calloc((size_t)d->nsend + 1, sizeof(int64_t))) ||
      !(d->direct = (int *)spx__calloc((size_t)d->nsend + 1, sizeof(int))))
    return SPX_OUT_OF_MEMORY;
  for (j = 0; j < d->nsend; j++) {
    int64_t a = d->send_off[j], b = d->send_off[j + 1], run = b > a ? d->send_idx[b - 1] - d->send_idx[a] + 1 : 0;
    span += run;
    d->stage_off[j + 1] = span;
    d->direct[j] = run == b - a;
  }
  if (d->ngrow > 0) {
    const char *defs[2] = {d->dtype == SPX_FLOAT ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double", "SPX_BLOCK=256"};
    if ((st = spx_device_alloc(d->ctx, (size_t)d->ngrow * sizeof(int32_t), &d->growd)) ||
        (st = spx_device_upload(d->ctx, d->growd, d->grow, (size_t)d->ngrow * sizeof(int32_t))) ||
        (st = spx_device_alloc(d->ctx, (size_t)d->ngrow * d->vs, &d->tdev)) ||
        (st = spx_jit_kernel(d->ctx, "krylov", "spx_kry_scatter_add", 2, defs, &d->scatter_fn)))
      return st;
  }
  if (!(d->stage = spx__dist_pin(d, (size_t)span * d->vs)))
    return spx__fail(SPX_OUT_OF_MEMORY, "spx_dist: pinned halo buffers: %s", spx_last_error());
  if (d->nghost > 0 && (st = spx_device_alloc(d->ctx, (size_t)d->nghost * d->vs, &d->gdev))) return st;
  return spx__dist_streams(d);
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
                     (long long)d->ngrow, (long long)d->nghost, (long long)d->nnz_gho);
  if (d->loc && (st = spx_plan_build(d->loc))) return st;
  if (d->gho && (st = spx_plan_build(d->gho))) return st;
  return SPX_OK;
}

/* From this rank's rows (global columns; d's partition set): the blocks, the halo, the plans, the
 * buffers. Collective; agreed; d is freed on failure (*out = NULL). */
/* ---- The halo device to device (CUDA IPC) -------------------------------------------------------
 * Where every rank runs CUDA on one node and every entry a rank sends is one run of its x, each
 * rank exports its ghost buffer and each neighbour that fills part of it maps it (cuIpc*): a send
 * is then one device-to-device copy (NVLink or PCIe peer to peer), with no trip through host
 * memory. Two empty messages per neighbour order it: "ready" (the receiver's last ghost SpMV has
 * read the buffer) before the copy, "done" (the copy has landed) before the receiver's ghost SpMV.
 * Anything short of that on any rank keeps the pinned host path; it is not an error. */
#define SPX__DIST_TAG_IPC (SPX__DIST_TAG + 1)
#define SPX__DIST_TAG_READY (SPX__DIST_TAG + 2)
#define SPX__DIST_TAG_DONE (SPX__DIST_TAG + 3)

static spx_status spx__dist_scatter_add(spx_dist_matrix *d, void *y);

typedef struct spx__dist_ipc_msg {
  spx__CUipcMemHandle h;
  int64_t at; /* bytes into the buffer where the sender's entries go */
} spx__dist_ipc_msg;

/* Whether this rank can take part (collective: every rank of d->comm calls it). */
static int spx__dist_ipc_local(spx_dist_matrix *d) {
  const spx__cuda_api *cu = spx__cuda();
  MPI_Comm node;
  int nsize = 0, j;
  if (MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return 0;
  MPI_Comm_size(node, &nsize);
  MPI_Comm_free(&node);
  if (nsize != d->size || !d->cuda || !cu || !cu->cuIpcGetMemHandle || !cu->cuIpcOpenMemHandle ||
      !cu->cuIpcCloseMemHandle)
    return 0;
  for (j = 0; j < d->nsend; j++)
    if (!d->direct[j]) return 0;
  return 1;
}

/* This rank's exportable buffer and handles (out: one per neighbour it receives from). */
static int spx__dist_ipc_export(spx_dist_matrix *d, spx__dist_ipc_msg *out) {
  const spx__cuda_api *cu = spx__cuda();
  int ok = 1, j;
  if (spx__ctx_push(d->ctx)) return 0;
  if (spx__event_new(cu, (spx__CUevent *)&d->ev_gdone, 0)) ok = 0;
  if (ok && d->nghost > 0) {
    spx__CUdeviceptr g = 0;
    ok = cu->cuMemAlloc(&g, (size_t)d->nghost * d->vs) == SPX__CUDA_SUCCESS;
    d->gipc = ok ? (spx_devptr)g : 0;
  }
  for (j = 0; ok && j < d->nrecv; j++) {
    ok = cu->cuIpcGetMemHandle(&out[j].h, d->gipc) == SPX__CUDA_SUCCESS;
    out[j].at = d->recv_off[j] * (int64_t)d->vs;
  }
  spx__ctx_pop(d->ctx);
  return ok;
}

/* The neighbours' buffers this rank fills, mapped (in: one per neighbour it sends to). */
static int spx__dist_ipc_map(spx_dist_matrix *d, const spx__dist_ipc_msg *in) {
  const spx__cuda_api *cu = spx__cuda();
  int ok = 1, j;
  if (spx__ctx_push(d->ctx)) return 0;
  for (j = 0; ok && j < d->nsend; j++) {
    spx__CUdeviceptr base = 0;
    ok = cu->cuIpcOpenMemHandle(&base, in[j].h, 1 /* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS */) == SPX__CUDA_SUCCESS;
    if (ok) {
      d->peer[j] = base + (spx__CUdeviceptr)in[j].at;
      d->recv_at[j] = in[j].at;
    }
  }
  spx__ctx_pop(d->ctx);
  return ok;
}

/* Sets up CUDA IPC where every rank can; else leaves the host path. Collective. */
static spx_status spx__dist_ipc(spx_dist_matrix *d) {
  spx__dist_ipc_msg *in = NULL, *out = NULL;
  MPI_Request *rq = NULL;
  int ok = spx__dist_ipc_local(d), all = 0, j;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, d->comm);
  if (!all) return SPX_OK;
  ok = (in = (spx__dist_ipc_msg *)spx__calloc((size_t)d->nsend + 1, sizeof *in)) != NULL &&
       (out = (spx__dist_ipc_msg *)spx__calloc((size_t)d->nrecv + 1, sizeof *out)) != NULL &&
       (rq = (MPI_Request *)spx__alloc((size_t)(d->nrecv + d->nsend) + 1, sizeof *rq)) != NULL &&
       (d->peer = (spx_devptr *)spx__calloc((size_t)d->nsend + 1, sizeof *d->peer)) != NULL &&
       (d->recv_at = (int64_t *)spx__calloc((size_t)d->nsend + 1, sizeof *d->recv_at)) != NULL &&
       (d->flag_req = (MPI_Request *)spx__alloc(2 * (size_t)(d->nrecv + d->nsend) + 1, sizeof *d->flag_req)) != NULL &&
       spx__dist_ipc_export(d, out);
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, d->comm);
  if (all) {
    for (j = 0; j < d->nsend; j++)
      MPI_Irecv(&in[j], (int)sizeof *in, MPI_BYTE, d->send_rank[j], SPX__DIST_TAG_IPC, d->comm, &rq[j]);
    for (j = 0; j < d->nrecv; j++)
      MPI_Isend(&out[j], (int)sizeof *out, MPI_BYTE, d->recv_rank[j], SPX__DIST_TAG_IPC, d->comm, &rq[d->nsend + j]);
    MPI_Waitall(d->nrecv + d->nsend, rq, MPI_STATUSES_IGNORE);
    ok = spx__dist_ipc_map(d, in);
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, d->comm);
  }
  SPX_FREE(in);
  SPX_FREE(out);
  SPX_FREE(rq);
  if (!all) {
    spx__dist_ipc_free(d);
    spx_clear_error();
    return SPX_OK;
  }
  if (d->gdev) spx_device_free(d->ctx, d->gdev);
  d->gdev = d->gipc;
  d->ipc = 1;
  return SPX_OK;
}

/* The SpMV with the halo device to device (spx__dist_spmv's order; the messages always flow, so a
 * local failure never leaves a neighbour waiting). */
static spx_status spx__dist_spmv_ipc(spx_dist_matrix *d, double alpha, const void *x, double beta, void *y) {
  const spx__cuda_api *cu = spx__cuda();
  MPI_Request *rdy = d->flag_req, *done = d->flag_req + d->nsend, *sent = d->flag_req + d->nsend + d->nrecv;
  spx__CUstream hs = (spx__CUstream)d->hstream;
  double t0 = spx__now(), t1, tl = 0;
  spx_status st = SPX_OK, s2 = SPX_OK;
  int j;
  for (j = 0; j < d->nsend; j++)
    MPI_Irecv(NULL, 0, MPI_BYTE, d->send_rank[j], SPX__DIST_TAG_READY, d->comm, &rdy[j]);
  for (j = 0; j < d->nrecv; j++)
    MPI_Irecv(NULL, 0, MPI_BYTE, d->recv_rank[j], SPX__DIST_TAG_DONE, d->comm, &done[j]);
  if ((st = spx__ctx_push(d->ctx))) return st; /* a context that cannot be made current: nothing works */
  if (d->gdone_pending) st = spx__event_sync(cu, (spx__CUevent)d->ev_gdone);
  d->gdone_pending = 0;
  for (j = 0; j < d->nrecv; j++)
    MPI_Isend(NULL, 0, MPI_BYTE, d->recv_rank[j], SPX__DIST_TAG_READY, d->comm, &sent[j]);
  if (!st && d->nsend > 0) st = spx__event_record(cu, (spx__CUevent)d->ev_x, d->ctx->stream);
  if (!st && d->nsend > 0) st = spx__stream_wait(cu, hs, (spx__CUevent)d->ev_x);
  if (!st && d->loc) { /* queued: runs while the copies fly */
    double tq = spx__now();
    st = spx_plan_spmv(d->loc, alpha, x, beta, y);
    tl = spx__now() - tq;
  }
  for (j = 0; j < d->nsend; j++) {
    int64_t lo = d->send_idx[d->send_off[j]];
    size_t bytes = (size_t)(d->send_off[j + 1] - d->send_off[j]) * d->vs;
    MPI_Wait(&rdy[j], MPI_STATUS_IGNORE);
    if (!st && bytes)
      st = spx__copy_d2d_async(cu, d->peer[j], (spx_devptr)(uintptr_t)x + (spx_devptr)lo * d->vs, bytes, hs);
  }
  t1 = spx__now();
  if (!st && d->nsend > 0) st = spx__stream_sync(cu, hs, "cuStreamSynchronize (the halo)");
  d->stats.halo_down_ms += 1e3 * (spx__now() - t1);
  spx__ctx_pop(d->ctx);
  for (j = 0; j < d->nsend; j++)
    MPI_Isend(NULL, 0, MPI_BYTE, d->send_rank[j], SPX__DIST_TAG_DONE, d->comm, &sent[d->nrecv + j]);
  t1 = spx__now();
  MPI_Waitall(d->nrecv, done, MPI_STATUSES_IGNORE);
  MPI_Waitall(d->nrecv + d->nsend, sent, MPI_STATUSES_IGNORE);
  d->stats.halo_wait_ms += 1e3 * (spx__now() - t1);
  d->stats.halo_ms += 1e3 * (spx__now() - t0 - tl);
  if (!st && d->gho) {
    if (!(s2 = spx_plan_spmv(d->gho, alpha, (const void *)(uintptr_t)d->gdev, 0.0, (void *)(uintptr_t)d->tdev)))
      s2 = spx__dist_scatter_add(d, y);
  }
  if (!st && !s2 && d->nghost > 0 && !spx__ctx_push(d->ctx)) {
    if (!(s2 = spx__event_record(cu, (spx__CUevent)d->ev_gdone, d->ctx->stream)))
      d->gdone_pending = 1;
    spx__ctx_pop(d->ctx);
  }
  d->stats.spmvs++;
  d->stats.halo_bytes_sent += d->send_off[d->nsend] * (int64_t)d->vs;
  d->stats.spmv_ms += 1e3 * (spx__now() - t0);
  return st ? st : s2;
}

spx_status spx__dist_build(spx_dist_matrix *d, const spx_csr *rows, const spx_dist_options *o,
                                  spx_dist_matrix **out) {
  spx_csr *loc = NULL, *gho = NULL;
  spx_status st;
  d->vs = SPX_DTYPE_SIZE(d->dtype);
  d->mt = d->dtype == SPX_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
  d->first = d->row_start[d->rank];
  d->nlocal = d->row_start[d->rank + 1] - d->first;
  st = spx__dist_split(d, rows, &loc, &gho);
  if (!st) st = spx__dist_compact(d, &gho);
  if (!(st = spx__dist_agree(d, st)) && !(st = spx__dist_halo(d))) {
    st = spx__dist_plans(d, o, loc, gho);
    if (!st) st = spx__dist_buffers(d);
    if (!(st = spx__dist_agree(d, st)) && d->cuda) st = spx__dist_agree(d, spx__dist_ipc(d));
  }
  d->keep_local = o->keep_local != 0;
  if (!st && d->keep_local) { /* the split's block itself, not a copy (spx_dist_amg_create's input) */
    d->loc_csr = loc;
    loc = NULL;
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

/* options.row_start against n and the rank count. */
spx_status spx__dist_check_row_start(const int64_t *rs, int size, int64_t n, const char *fn) {
  int r;
  if (rs[0] != 0 || rs[size] != n)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: options.row_start runs from %lld to %lld; it must run from 0 to n = %lld",
                     fn, (long long)rs[0], (long long)rs[size], (long long)n);
  for (r = 0; r < size; r++)
    if (rs[r + 1] < rs[r])
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: options.row_start[%d] = %lld < row_start[%d] = %lld: it must not "
                       "decrease", fn, r + 1, (long long)rs[r + 1], r, (long long)rs[r]);
  return SPX_OK;
}

/* The root's checks of the global matrix and of the options it reads (row_start, partition). */
static spx_status spx__dist_root_check(const spx_csr *a, const spx_dist_options *o, int size) {
  const char *fn = "spx_dist_scatter";
  spx_status st;
  if (!a) return spx__fail(SPX_INVALID_ARGUMENT, "%s: the root passed a NULL matrix", fn);
  if ((st = spx_csr_validate(a))) return spx__wrap(st, "%s: the global matrix", fn);
  if (a->nrows != a->ncols)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: the matrix is %lld x %lld; a distributed matrix is square", fn,
                     (long long)a->nrows, (long long)a->ncols);
  if (o->partition != SPX_DIST_PART_CONTIGUOUS && o->partition != SPX_DIST_PART_METIS)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: options.partition = %d is no spx_dist_partition", fn, (int)o->partition);
  if (o->partition == SPX_DIST_PART_METIS && o->row_start)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: options.row_start and options.partition = metis both choose the rows; "
                     "give one of them", fn);
  return o->row_start ? spx__dist_check_row_start(o->row_start, size, a->nrows, fn) : SPX_OK;
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

/* The root's partition: d->row_start, and for METIS the permutation (*perm, new row -> row of a)
 * and the permuted matrix (*pa), which is what the ranks then get. */
static spx_status spx__dist_root_part(spx_dist_matrix *d, const spx_csr *a, const spx_dist_options *o,
                                      int64_t **perm, spx_csr **pa) {
  spx_status st;
  if (o->partition != SPX_DIST_PART_METIS) {
    if (o->row_start) memcpy(d->row_start, o->row_start, ((size_t)d->size + 1) * sizeof(int64_t));
    else spx__dist_balance(a, d->size, d->row_start);
    return SPX_OK;
  }
  if (!(*perm = (int64_t *)spx__alloc((size_t)a->nrows + 1, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
  if ((st = spx__dist_metis(a, d->size, *perm, d->row_start))) return spx__wrap(st, "spx_dist_scatter");
  return spx__dist_permute(a, *perm, pa);
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

/* The root's table of what each rank gets: nonzeros (one MPI message each: they must fit an int),
 * and rows as MPI_Scatterv's counts and offsets (n < 2^31: they fit). */
static spx_status spx__dist_root_table(const spx_dist_matrix *d, const spx_csr *g, int64_t *nnz, int *cnt, int *dsp) {
  int r;
  for (r = 0; r < d->size; r++) {
    nnz[r] = g->row_ptr[d->row_start[r + 1]] - g->row_ptr[d->row_start[r]];
    cnt[r] = (int)(d->row_start[r + 1] - d->row_start[r]);
    dsp[r] = (int)d->row_start[r];
    if (nnz[r] > INT_MAX)
      return spx__fail(SPX_UNSUPPORTED, "spx_dist_scatter: rank %d's rows hold %lld nonzeros, more than one MPI "
                       "message carries (2^31 - 1): use more ranks, or spx_dist_create", r, (long long)nnz[r]);
  }
  return SPX_OK;
}

spx_status spx__dist_scatter_on(spx_dist_matrix *d, int root, const spx_csr *a, const spx_dist_options *o,
                                spx_dist_matrix **out) {
  const char *fn = "spx_dist_scatter";
  spx_csr *mine = NULL, *pa = NULL;
  int64_t head[3] = {0, 0, 0}, *nnz = NULL, *perm = NULL, mnz = 0;
  int *cnt = NULL, *dsp = NULL;
  double roots[1];
  spx_status st = SPX_OK;
  roots[0] = root;
  if (!spx__dist_same(d->comm, roots, 1) || root < 0 || root >= d->size)
    st = spx__fail(SPX_INVALID_ARGUMENT, "%s: root = %d; every rank must pass the same root in 0..%d", fn, root,
                   d->size - 1);
  if (!(d->row_start = (int64_t *)spx__calloc((size_t)d->size + 1, sizeof(int64_t))) && !st) st = SPX_OUT_OF_MEMORY;
  if (!st && d->rank == root && !(st = spx__dist_root_check(a, o, d->size)) &&
      !(st = spx__dist_root_part(d, a, o, &perm, &pa))) {
    const spx_csr *g = pa ? pa : a;
    head[0] = g->nrows;
    head[1] = g->dtype;
    head[2] = perm != NULL;
    nnz = (int64_t *)spx__alloc((size_t)d->size, sizeof(int64_t));
    cnt = (int *)spx__alloc((size_t)d->size, sizeof(int));
    dsp = (int *)spx__alloc((size_t)d->size, sizeof(int));
    st = nnz && cnt && dsp ? spx__dist_root_table(d, g, nnz, cnt, dsp) : SPX_OUT_OF_MEMORY;
  }
  if ((st = spx__dist_agree_t(d->comm, d->rank, st, 0, fn))) goto fail;
  MPI_Bcast(head, 3, MPI_INT64_T, root, d->comm);
  MPI_Bcast(d->row_start, d->size + 1, MPI_INT64_T, root, d->comm);
  MPI_Scatter(nnz, 1, MPI_INT64_T, &mnz, 1, MPI_INT64_T, root, d->comm);
  d->n = head[0];
  d->dtype = (spx_dtype)head[1];
  d->part = head[2] ? SPX_DIST_PART_METIS : SPX_DIST_PART_CONTIGUOUS;
  d->vs = SPX_DTYPE_SIZE(d->dtype);
  d->mt = d->dtype == SPX_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
  d->nlocal = d->row_start[d->rank + 1] - d->row_start[d->rank];
  st = spx_csr_create(d->nlocal, d->n, mnz, d->dtype, &mine);
  if (!st && head[2] && !(d->orig = (int64_t *)spx__alloc((size_t)d->nlocal + 1, sizeof(int64_t)))) st = SPX_OUT_OF_MEMORY;
  if ((st = spx__dist_agree(d, st))) goto fail;
  if (head[2]) /* each rank's rows' original indices */
    MPI_Scatterv(perm, cnt, dsp, MPI_INT64_T, d->orig, (int)d->nlocal, MPI_INT64_T, root, d->comm);
  spx__dist_send_rows(d, root, pa ? pa : a, mine);
  if (d->rank != root) {
    int64_t i, k0 = mine->row_ptr[0];
    for (i = 0; i <= d->nlocal; i++) mine->row_ptr[i] -= k0;
  }
  SPX_FREE(nnz);
  SPX_FREE(cnt);
  SPX_FREE(dsp);
  SPX_FREE(perm);
  spx_csr_destroy(pa); /* before the plans: the root holds the global matrix twice until here */
  st = spx__dist_build(d, mine, o, out);
  spx_csr_destroy(mine);
  return st;
fail:
  SPX_FREE(nnz);
  SPX_FREE(cnt);
  SPX_FREE(dsp);
  SPX_FREE(perm);
  spx_csr_destroy(pa);
  spx_csr_destroy(mine);
  spx_dist_destroy(d);
  return st;
}

spx_status spx_dist_scatter(MPI_Comm comm, int root, const spx_csr *a, const spx_dist_options *options,
                            spx_dist_matrix **out) {
  spx_dist_options od;
  spx_dist_matrix *d = NULL;
  spx_status st;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_scatter: NULL out"); /* no handle: cannot take part */
  *out = NULL;
  if (options) od = *options;
  else spx_dist_options_default(&od);
  if ((st = spx__dist_open(comm, &od, "spx_dist_scatter", &d))) return st;
  return spx__dist_scatter_on(d, root, a, &od, out);
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
  if (!st && od.partition != SPX_DIST_PART_CONTIGUOUS)
    st = spx__fail(SPX_INVALID_ARGUMENT, "%s: options.partition is %s; spx_dist_create takes each rank's rows as "
                   "they are (spx_dist_scatter and spx_dist_read_mm partition)", fn,
                   spx_dist_partition_name(od.partition));
  if (!(d->row_start = (int64_t *)spx__calloc((size_t)d->size + 1, sizeof(int64_t))) && !st) st = SPX_OUT_OF_MEMORY;
  if (!(st = spx__dist_agree_t(d->comm, d->rank, st, 0, fn)) && !(st = spx__dist_rows_agree(d, n, rows)))
    return spx__dist_build(d, rows, &od, out);
  spx_dist_destroy(d);
  return st;
}

/* ---- The SpMV ------------------------------------------------------------------------------------ */
/* Host: the send buffer gathered from x. */
static void spx__dist_gather(spx_dist_matrix *d, const void *x) {
  const size_t vs = d->vs;
  int64_t k;
  for (k = 0; k < d->send_off[d->nsend]; k++)
    memcpy((char *)d->sbuf + (size_t)k * vs, (const char *)x + (size_t)d->send_idx[k] * vs, vs);
}

/* CUDA: each neighbour's span of x starts down to the pinned stage on the halo's stream, once x is
 * ready on the plans' stream (ev_x), so the local block's SpMV queued next runs beside the copies. */
static spx_status spx__dist_down(spx_dist_matrix *d, const void *x) {
  const spx__cuda_api *cu = spx__cuda();
  const size_t vs = d->vs;
  spx__CUstream hs = (spx__CUstream)d->hstream;
  spx_status st;
  int j;
  if ((st = spx__ctx_push(d->ctx))) return st;
  st = spx__event_record(cu, (spx__CUevent)d->ev_x, d->ctx->stream);
  if (!st) st = spx__stream_wait(cu, hs, (spx__CUevent)d->ev_x);
  for (j = 0; j < d->nsend && !st; j++) {
    int64_t lo = d->send_idx[d->send_off[j]];
    size_t bytes = (size_t)(d->stage_off[j + 1] - d->stage_off[j]) * vs;
    spx_devptr src = (spx_devptr)(uintptr_t)x + (spx_devptr)lo * vs;
    if (bytes) st = spx__copy_d2h_async(cu, (char *)d->stage + (size_t)d->stage_off[j] * vs, src, bytes, hs);
  }
  spx__ctx_pop(d->ctx);
  return st;
}

/* CUDA: waits for the spans, then gathers the send buffer from those that are not one run. */
static spx_status spx__dist_pack(spx_dist_matrix *d) {
  const spx__cuda_api *cu = spx__cuda();
  const size_t vs = d->vs;
  double t0 = spx__now();
  int64_t k;
  int j;
  spx_status st;
  if ((st = spx__ctx_push(d->ctx))) return st;
  st = spx__stream_sync(cu, (spx__CUstream)d->hstream, "cuStreamSynchronize (the halo)");
  spx__ctx_pop(d->ctx);
  d->stats.halo_down_ms += 1e3 * (spx__now() - t0);
  if (st) return st;
  for (j = 0; j < d->nsend; j++) {
    int64_t a = d->send_off[j], b = d->send_off[j + 1], lo = d->send_idx[a];
    const char *stage = (const char *)d->stage + (size_t)d->stage_off[j] * vs;
    if (d->direct[j]) continue;
    for (k = a; k < b; k++) memcpy((char *)d->sbuf + (size_t)k * vs, stage + (size_t)(d->send_idx[k] - lo) * vs, vs);
  }
  return SPX_OK;
}

/* What goes to send neighbour j: its run of the stage (CUDA, one run), else its part of sbuf. */
static const void *spx__dist_sendbuf(const spx_dist_matrix *d, int j) {
  if (d->cuda && d->direct[j]) return (const char *)d->stage + (size_t)d->stage_off[j] * d->vs;
  return (const char *)d->sbuf + (size_t)d->send_off[j] * d->vs;
}

/* y[grow[r]] += t[r]: the ghost block's product into its rows. */
static spx_status spx__dist_scatter_add(spx_dist_matrix *d, void *y) {
  const size_t vs = d->vs;
  int64_t r;
  if (!d->cuda) {
    for (r = 0; r < d->ngrow; r++) {
      char *yr = (char *)y + (size_t)d->grow[r] * vs;
      if (d->dtype == SPX_FLOAT) *(float *)yr += ((const float *)d->tbuf)[r];
      else *(double *)yr += ((const double *)d->tbuf)[r];
    }
    return SPX_OK;
  } else {
    const spx__cuda_api *cu = spx__cuda();
    long long m = d->ngrow;
    spx_devptr yd = (spx_devptr)(uintptr_t)y;
    void *args[] = {&m, &d->growd, &d->tdev, &yd};
    unsigned grid = (unsigned)SPX__MIN((m + 255) / 256, 4096);
    spx_status st;
    if ((st = spx__ctx_push(d->ctx))) return st;
    st = spx__cu_check(cu->cuLaunchKernel((spx__CUfunction)d->scatter_fn, grid, 1, 1, 256, 1, 1, 0, d->ctx->stream, args,
                                          NULL), "spx_kry_scatter_add");
    spx__ctx_pop(d->ctx);
    return st;
  }
}

/* CUDA: the ghost values go up on the halo's stream; the plans' stream waits for them (ev_g), not
 * the host. */
static spx_status spx__dist_up(spx_dist_matrix *d) {
  const spx__cuda_api *cu = spx__cuda();
  spx__CUstream hs = (spx__CUstream)d->hstream;
  spx_status st;
  if ((st = spx__ctx_push(d->ctx))) return st;
  st = spx__copy_h2d_async(cu, d->gdev, d->gbuf, (size_t)d->nghost * d->vs, hs);
  if (!st) st = spx__event_record(cu, (spx__CUevent)d->ev_g, hs);
  if (!st) d->g_pending = 1;
  if (!st) st = spx__stream_wait(cu, d->ctx->stream, (spx__CUevent)d->ev_g);
  spx__ctx_pop(d->ctx);
  return st;
}

/* CUDA: the last SpMV's ghost upload has read gbuf before this one's receives write it. */
static spx_status spx__dist_gbuf_free(spx_dist_matrix *d) {
  const spx__cuda_api *cu = spx__cuda();
  spx_status st;
  if (!d->g_pending) return SPX_OK;
  if ((st = spx__ctx_push(d->ctx))) return st;
  st = spx__event_sync(cu, (spx__CUevent)d->ev_g);
  spx__ctx_pop(d->ctx);
  d->g_pending = 0;
  return st;
}

/* y = alpha A x + beta y without the entry agreement: every rank completes its messages whatever
 * fails locally (a failed pack still sends, so no neighbour waits forever); the status is this
 * rank's. The halo runs beside the local block's SpMV: on a GPU the spans of x come down on the
 * halo's stream while the local kernel runs, the messages fly while it runs, and the ghost values
 * go up on the halo's stream before the ghost block's SpMV, which waits for them on the device. */
spx_status spx__dist_spmv(spx_dist_matrix *d, double alpha, const void *x, double beta, void *y) {
  const size_t vs = d->vs;
  const void *g = d->cuda ? (const void *)(uintptr_t)d->gdev : d->gbuf;
  double t0 = spx__now(), t1, tl = 0;
  spx_status st = SPX_OK, s2 = SPX_OK;
  int j;
  if (d->ipc) return spx__dist_spmv_ipc(d, alpha, x, beta, y);
  if (d->cuda) st = spx__dist_gbuf_free(d);
  for (j = 0; j < d->nrecv; j++)
    MPI_Irecv((char *)d->gbuf + (size_t)d->recv_off[j] * vs, (int)(d->recv_off[j + 1] - d->recv_off[j]), d->mt,
              d->recv_rank[j], SPX__DIST_TAG, d->comm, &d->req[j]);
  if (!d->cuda) spx__dist_gather(d, x);
  else if (!st && d->nsend > 0) st = spx__dist_down(d, x);
  if (!st && d->loc) { /* on a GPU: queued, runs during the halo */
    double tq = spx__now();
    st = spx_plan_spmv(d->loc, alpha, x, beta, y);
    tl = spx__now() - tq;
  }
  if (!st && d->cuda && d->nsend > 0) st = spx__dist_pack(d);
  for (j = 0; j < d->nsend; j++)
    MPI_Isend(spx__dist_sendbuf(d, j), (int)(d->send_off[j + 1] - d->send_off[j]), d->mt, d->send_rank[j],
              SPX__DIST_TAG, d->comm, &d->req[d->nrecv + j]);
  t1 = spx__now();
  MPI_Waitall(d->nrecv + d->nsend, d->req, MPI_STATUSES_IGNORE);
  d->stats.halo_wait_ms += 1e3 * (spx__now() - t1);
  if (!st && d->cuda && d->nghost > 0) st = spx__dist_up(d);
  d->stats.halo_ms += 1e3 * (spx__now() - t0 - tl);
  if (!st && d->gho) {
    void *t = d->cuda ? (void *)(uintptr_t)d->tdev : d->tbuf;
    if (!(s2 = spx_plan_spmv(d->gho, alpha, g, 0.0, t))) s2 = spx__dist_scatter_add(d, y);
  }
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
  out->partition = A->part;
  out->halo_ipc = A->ipc;
  return SPX_OK;
}

int64_t spx_dist_row_start(const spx_dist_matrix *A, int r) {
  return A && r >= 0 && r <= A->size ? A->row_start[r] : -1;
}
spx_plan *spx_dist_local_plan(const spx_dist_matrix *A) { return A ? A->loc : NULL; }
spx_plan *spx_dist_ghost_plan(const spx_dist_matrix *A) { return A ? A->gho : NULL; }
const spx_csr *spx_dist_local_csr(const spx_dist_matrix *A) { return A ? A->loc_csr : NULL; }
int64_t spx_dist_ghost_col(const spx_dist_matrix *A, int64_t k) {
  return A && k >= 0 && k < A->nghost ? A->ghost_col[k] : -1;
}
MPI_Comm spx_dist_comm(const spx_dist_matrix *A) { return A ? A->comm : MPI_COMM_NULL; }
int64_t spx_dist_orig_row(const spx_dist_matrix *A, int64_t i) {
  if (!A || i < 0 || i >= A->nlocal) return -1;
  return A->orig ? A->orig[i] : A->first + i;
}

/* ---- Vectors in the original order ----------------------------------------------------------------
 * The root scatters (gathers) the parts with MPI_Scatterv (MPI_Gatherv), the ranks' parts in rank
 * order; where the rows were permuted, the root first gathers the ranks' original row indices and
 * permutes the vector through them (entry k of the parts, in rank order, is entry all[k] of the
 * vector). */
static spx_status spx__dist_vector_args(const spx_dist_matrix *A, int root, const void *global, const void *local,
                                        const char *fn) {
  double roots[1];
  spx_status st = SPX_OK;
  if (root < 0 || root >= A->size)
    st = spx__fail(SPX_INVALID_ARGUMENT, "%s: root = %d; it must be in 0..%d", fn, root, A->size - 1);
  else if (A->nlocal > 0 && !local) st = spx__fail(SPX_INVALID_ARGUMENT, "%s: this rank's part is NULL", fn);
  else if (A->rank == root && A->n > 0 && !global) st = spx__fail(SPX_INVALID_ARGUMENT, "%s: the root's vector is NULL", fn);
  if ((st = spx__dist_agree_t(A->comm, A->rank, st, A->timeout_s, fn))) return st;
  roots[0] = root;
  if (!spx__dist_same(A->comm, roots, 1)) /* every rank sees the same answer: no sentence to spread */
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: the ranks passed different roots; every rank must pass the same", fn);
  return SPX_OK;
}

/* in to out: the root's vector to the parts (gather 0: in is global, out local), or the parts to
 * the root's vector (gather 1: in is local, out global). */
static spx_status spx__dist_vector(const spx_dist_matrix *A, int root, const void *in, void *out, int gather,
                                   const char *fn) {
  const void *global = gather ? out : in, *local = gather ? in : out;
  int *cnt = NULL, *dsp = NULL, q, at_root, perm;
  int64_t *all = NULL, k;
  char *tmp = NULL;
  size_t vs;
  spx_status st;
  if (!A) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL matrix", fn); /* no communicator to tell */
  if ((st = spx__dist_vector_args(A, root, global, local, fn))) return st;
  vs = A->vs;
  at_root = A->rank == root;
  perm = A->orig != NULL; /* the same on every rank */
  if (at_root) {
    cnt = (int *)spx__alloc((size_t)A->size, sizeof(int));
    dsp = (int *)spx__alloc((size_t)A->size, sizeof(int));
    if (perm) {
      all = (int64_t *)spx__alloc((size_t)A->n + 1, sizeof(int64_t));
      tmp = (char *)spx__alloc((size_t)A->n + 1, vs);
    }
    if (!cnt || !dsp || (perm && (!all || !tmp))) st = SPX_OUT_OF_MEMORY;
    for (q = 0; !st && q < A->size; q++) {
      dsp[q] = (int)A->row_start[q];
      cnt[q] = (int)(A->row_start[q + 1] - A->row_start[q]);
    }
  }
  if ((st = spx__dist_agree(A, st))) goto done;
  if (perm) MPI_Gatherv(A->orig, (int)A->nlocal, MPI_INT64_T, all, cnt, dsp, MPI_INT64_T, root, A->comm);
  if (!gather) {
    for (k = 0; at_root && perm && k < A->n; k++)
      memcpy(tmp + (size_t)k * vs, (const char *)in + (size_t)all[k] * vs, vs);
    MPI_Scatterv(perm ? tmp : in, cnt, dsp, A->mt, out, (int)A->nlocal, A->mt, root, A->comm);
  } else {
    MPI_Gatherv(in, (int)A->nlocal, A->mt, perm ? tmp : out, cnt, dsp, A->mt, root, A->comm);
    for (k = 0; at_root && perm && k < A->n; k++)
      memcpy((char *)out + (size_t)all[k] * vs, tmp + (size_t)k * vs, vs);
  }
done:
  SPX_FREE(cnt);
  SPX_FREE(dsp);
  SPX_FREE(all);
  SPX_FREE(tmp);
  return st;
}

spx_status spx_dist_scatter_vector(const spx_dist_matrix *A, int root, const void *global, void *local) {
  return spx__dist_vector(A, root, global, local, 0, "spx_dist_scatter_vector");
}
spx_status spx_dist_gather_vector(const spx_dist_matrix *A, int root, const void *local, void *global) {
  return spx__dist_vector(A, root, local, global, 1, "spx_dist_gather_vector");
}

int spx_dist_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return 0;
#endif
}
