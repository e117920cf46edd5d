/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/dist.h's matrix as its rooms share it: dist_impl.h (the partition, the halo, the SpMV)
 * gives dist_mm_impl.h (the parallel file read) creation from each rank's rows, and
 * dist_solve_impl.h (the solvers) the matrix, the error agreement and the SpMV; dist_part_impl.h,
 * below them all, gives dist_impl.h the graph partition and the permuted matrix. */
#ifndef SPX_INTERNAL_DIST_MATRIX_H
#define SPX_INTERNAL_DIST_MATRIX_H

#include "common.h"
#include "../dist.h"

struct spx_dist_matrix {
  MPI_Comm comm;              /* spx's duplicate of the caller's */
  int rank, size, own_ctx;
  double timeout_s;
  int64_t n, first, nlocal;
  int64_t *row_start;         /* size + 1 */
  int64_t *orig;              /* nlocal: each local row's row in the matrix as given (NULL: first + i) */
  spx_dist_partition part;
  spx_dtype dtype;
  size_t vs;
  MPI_Datatype mt;            /* MPI_DOUBLE or MPI_FLOAT */
  spx_context *ctx;
  int cuda;
  spx_plan *loc, *gho;        /* the local block (nlocal x nlocal), the ghost block (ngrow x nghost:
                               * only the rows with remote columns, grow[r] their local rows) */
  spx_csr *loc_csr;           /* the local block as a host CSR, kept when options.keep_local asked
                               * for it (spx_dist_local_csr; spx_dist_amg_create builds on it) */
  int keep_local;             /* options.keep_local at creation */
  int64_t ngrow;
  int32_t *grow;
  void *tbuf;                 /* the ghost block's product (ngrow values; host) */
  spx_devptr growd, tdev;     /* CUDA: grow and the product on the device */
  void *scatter_fn;           /* CUDA: spx_kry_scatter_add (y[grow[r]] += t[r]) */
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
  void *hstream;              /* CUDA: the halo's copies, beside the local block's SpMV (CUstream) */
  void *ev_x, *ev_g;          /* CUDA: x ready on the plans' stream; the ghost values up (CUevent) */
  int g_pending;              /* CUDA: ev_g recorded and not yet waited for on the host */
  int *direct;                /* CUDA: per neighbour sent to, 1 when its entries are one run of x
                               * (sent straight from the stage) */
  int ipc;                    /* CUDA: the halo goes device to device (CUDA IPC: one node, every
                               * send one run of x); else through the pinned host buffers */
  spx_devptr gipc;            /* CUDA IPC: the ghost values, exportable (cuMemAlloc); = gdev */
  spx_devptr *peer;           /* CUDA IPC: per neighbour sent to, where its ghost buffer takes our
                               * entries, mapped here */
  int64_t *recv_at;           /* CUDA IPC: per neighbour sent to, that offset (bytes) in its buffer */
  void *ev_gdone;             /* CUDA IPC: the last ghost SpMV has read gdev (CUevent) */
  int gdone_pending;
  MPI_Request *flag_req;      /* CUDA IPC: the ready and done messages, 2 (nrecv + nsend) */
  spx_dist_info stats;        /* the counters */
};

#define SPX__DIST_TAG 0x5e7 /* the halo's messages (spx's own communicator: no clash with the caller) */

/* The first failing rank `first` tells the others its status and sentence (every rank calls this
 * with the same first); the ranks that were fine fail with "rank R: sentence". */
spx_status spx__dist_spread(MPI_Comm comm, int rank, int first, spx_status mine, const char *text);
/* st agreed on by every rank of comm, waiting at most timeout_s (<= 0: no limit) for the others. */
spx_status spx__dist_agree_t(MPI_Comm comm, int rank, spx_status st, double timeout_s, const char *fn);
/* The same, on d's communicator and timeout. */
spx_status spx__dist_agree(const spx_dist_matrix *d, spx_status st);
/* Whether every rank of comm passed the same k values. */
int spx__dist_same(MPI_Comm comm, const double *v, int k);
/* y = alpha A x + beta y on this rank's rows, the halo exchanged (no agreement). */
spx_status spx__dist_spmv(spx_dist_matrix *d, double alpha, const void *x, double beta, void *y);

/* ---- dist_impl.h: creation, for dist_mm_impl.h ---- */
/* The handshake: a new matrix on spx's duplicate of comm (nothing else set). Collective. */
spx_status spx__dist_open(MPI_Comm comm, const spx_dist_options *o, const char *fn, spx_dist_matrix **out);
/* d (opened, d->row_start, n and dtype set) from this rank's rows (global columns): the blocks, the
 * halo, the plans. Collective; agreed; d is freed on failure. */
spx_status spx__dist_build(spx_dist_matrix *d, const spx_csr *rows, const spx_dist_options *o, spx_dist_matrix **out);
/* spx_dist_scatter on an opened d (freed on failure). Collective; agreed. */
spx_status spx__dist_scatter_on(spx_dist_matrix *d, int root, const spx_csr *a, const spx_dist_options *o,
                                spx_dist_matrix **out);
/* options.row_start checked against n and the rank count (a sentence naming fn otherwise). */
spx_status spx__dist_check_row_start(const int64_t *rs, int size, int64_t n, const char *fn);

/* ---- dist_part_impl.h: the graph partition (root-only, no MPI) ---- */
/* perm (n entries: new row -> row of a) and rs (P + 1) from METIS's k-way partition of the graph of
 * a + a^T, each part's rows in their order; SPX_UNSUPPORTED without SPX_WITH_METIS. */
spx_status spx__dist_metis(const spx_csr *a, int P, int64_t *perm, int64_t *rs);
/* P a P^T: row r of out is row perm[r] of a, its columns renumbered the same way (sorted). */
spx_status spx__dist_permute(const spx_csr *a, const int64_t *perm, spx_csr **out);

#endif /* SPX_INTERNAL_DIST_MATRIX_H */
