/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/dist.h: a sparse matrix distributed by rows over the ranks of an MPI communicator, its SpMV
 * with the halo exchange, and CG, Jacobi PCG and BiCGSTAB on it; and spx/stencil.h's stencil on a
 * grid split into z-slabs over the ranks (THE STENCIL below). spx never calls MPI_Init or
 * MPI_Finalize: the program does, and hands spx a communicator.
 *
 * USE  This header includes <mpi.h> and <spx/spx.h>; spx.h alone never needs MPI. The one C file
 *   that compiles spx (SPX_IMPLEMENTATION) includes dist.h in place of spx.h, and is compiled with
 *   the MPI compiler wrapper (or the flags of `mpicc --showme:compile` / pkg-config ompi-c):
 *
 *     #define SPX_IMPLEMENTATION             (spx_impl.c: the core and the distributed part)
 *     #include <spx/dist.h>
 *
 *   Or the core in spx_impl.c as for any program (SPX_IMPLEMENTATION, <spx/spx.h>, no MPI) and the
 *   distributed part alone in a second file compiled with the MPI wrapper (POSIX, as spx.h asks):
 *
 *     #define _POSIX_C_SOURCE 200809L
 *     #define SPX_DIST_IMPLEMENTATION        (spx_dist_impl.c: the distributed part only)
 *     #include <spx/dist.h>
 *
 *   Files that only call spx_dist_* include <spx/dist.h>; the others keep <spx/spx.h>.
 *
 *     spx_dist_matrix *A;
 *     spx_dist_scatter(MPI_COMM_WORLD, 0, rank == 0 ? a : NULL, NULL, &A);   a: the global CSR
 *     spx_dist_info in;  spx_dist_get_info(A, &in);        this rank's rows [in.first_row, +in.nlocal)
 *     spx_dist_solve_cg(A, b_local, x_local, &opts, &report);
 *     spx_dist_destroy(A);
 *
 * THE PARTITION  Rank r owns the contiguous global rows [row_start[r], row_start[r+1]) and the same
 *   entries of x, b and y (vectors are distributed like the rows; the matrix is square). From a
 *   global CSR, spx_dist_scatter chooses row_start so that every rank's rows carry about the same
 *   weight, a row weighing its nonzeros + 1 (empty rows are not free), unless options.row_start
 *   gives it; spx_dist_create takes each rank's own rows as they are (a rank may own none).
 *   options.partition = SPX_DIST_PART_METIS (spx built with METIS: SPX_WITH_METIS) partitions the
 *   graph of A + A^T instead, on the root (METIS_PartGraphKway, vertex weights nonzeros + 1,
 *   minimizing the total communication volume, which is what the halo sends): the matrix is then
 *   permuted symmetrically (P A P^T) so that each rank's rows are contiguous in the PERMUTED
 *   numbering, and everything above (row_start, first_row, ghost columns, the vectors' parts)
 *   speaks of permuted indices. spx_dist_orig_row gives a local row's index in the matrix as it was
 *   given; spx_dist_scatter_vector and spx_dist_gather_vector move a vector in that original order
 *   between one rank and the ranks' parts, whichever the partition.
 * READING A FILE  spx_dist_read_mm reads a coordinate Matrix Market file in parallel: each rank
 *   reads its own byte range of a plain file (resynced at a line start), parses it, and the
 *   entries go to their rows' owners (MPI_Alltoallv); rows are split as spx_dist_scatter splits
 *   them. A gzip file cannot be read from the middle: rank 0 reads it and scatters (likewise an
 *   array file, and options.partition = SPX_DIST_PART_METIS, which needs the whole graph on one rank).
 *   Each rank splits its rows into the LOCAL block (columns it owns, renumbered from 0) and the
 *   GHOST block (columns other ranks own, renumbered 0..nghost-1 in ascending global order; only
 *   the rows that have such columns, since a slab's are its first and last planes), and each block
 *   is its own spx_plan: the tuner picks a format for both, on the CUDA backend and on the host
 *   alike.
 *
 * THE SpMV  y = alpha A x + beta y on each rank's part: post the receives of the ghost entries of
 *   x, gather and send what the neighbours need, run the local block's SpMV (on a GPU its kernel
 *   runs while the messages fly), wait, then the ghost block's SpMV, added into its rows. Who sends
 *   which entries to whom is settled once, at creation (MPI_Alltoall of the counts, MPI_Alltoallv
 *   of the wanted columns); each SpMV is then MPI_Irecv / MPI_Isend to the neighbours only.
 *   CUDA backend: x and y are device pointers; the halo goes through pinned host buffers on a
 *   stream of its own: the span of x each neighbour needs comes down while the local block's
 *   kernel runs (a span that is one run of x is sent as it is), the ghost entries go up in one
 *   copy, and the ghost block's kernel waits for them on the device, not the host. Where every
 *   rank runs on one node and each send is one run of x (contiguous rows of a mesh: slabs), the
 *   halo goes GPU to GPU instead: each rank maps the part of its neighbours' ghost buffers it fills
 *   (CUDA IPC) and copies into them directly (NVLink or PCIe peer to peer), ordered by two empty
 *   messages per neighbour; spx_dist_info.halo_ipc says which path runs. CUDA-aware MPI is not
 *   used; spx_dist_cuda_aware says whether the MPI library offers it.
 *
 * SOLVERS  spx_dist_solve_cg, spx_dist_solve_pcg_jacobi and spx_dist_solve_bicgstab take the same
 *   spx_solve_options and fill the same spx_solve_report as spx/solve.h (b and x: this rank's
 *   parts, device pointers on CUDA unless options.host_vectors; the report's norms, n and
 *   iteration counts are global and the same on every rank; its times are this rank's). On the
 *   host they run the host twin's algorithm of solve.h step for step, on CUDA its GPU path (the
 *   krylov kernels), each with the global sums made between the kernels, so one rank gives
 *   spx_solve_* 's x bit for bit on the same plan. options.precond is called on this rank's parts
 *   (a rank-local preconditioner: block Jacobi, or the AMG blocks below); options.upgrade_at does
 *   not apply.
 *   On CUDA every global sum is a synchronization: the kernel sums this rank's block partials
 *   into pinned host memory, the ranks exchange them, and the next kernel reads the global sums
 *   from there.
 * AMG BLOCKS  spx_dist_amg_create sets up spx/amg.h's smoothed-aggregation hierarchy of each
 *   rank's local block (its rows restricted to the columns it owns: A_rr, SPD when A is), and
 *   spx_dist_amg_precond applies one cycle of it (the options' cycle, from z = 0) to the rank's part
 *   of the residual: block Jacobi with AMG blocks, M^-1 = diag(M_0^-1, ..., M_P-1^-1). The
 *   couplings between ranks stay out of M (the Krylov method's SpMV has them): no messages in the
 *   setup or the cycles, no global sum in a cycle.
 *
 *     spx_dist_options o;  spx_dist_options_default(&o);  o.keep_local = 1;
 *     spx_dist_scatter(MPI_COMM_WORLD, 0, a, &o, &A);
 *     spx_amg_options ao;  spx_amg_options_default(&ao);
 *     spx_dist_amg *M;  spx_dist_amg_create(A, &ao, &M);             collective
 *     so.precond = spx_dist_amg_precond;  so.precond_data = M;
 *     spx_dist_solve_cg(A, b_local, x_local, &so, &report);
 *     spx_dist_amg_destroy(M);  spx_dist_destroy(A);
 *
 *   The block: the matrix keeps its local block as a host CSR only where options.keep_local asks
 *   (the split's own block, no copy: 8 (nlocal + 1) + (4 + value size) nnz_local bytes a rank,
 *   until spx_dist_destroy), because a plan cannot give its matrix back on every backend (a GPU
 *   plan holds device arrays only). The hierarchy holds what spx_amg_create holds for that block:
 *   level 0 copied in double, a plan of every level's A, P and R (level 0's a second plan of the
 *   block, the hierarchy's own, on the matrix's context), the coarser levels (amg.h's operator
 *   complexity), smoother data and work vectors. A float matrix is refused: AMG runs in double and
 *   its cycle takes double vectors.
 *   Symmetry: M is symmetric positive definite when every block's cycle is, which amg.h gives for a
 *   V- or W-cycle with as many sweeps before the coarse correction as after on every level (every
 *   smoother is symmetric: jacobi, l1jacobi and chebyshev are polynomials in D^-1 A, gs sweeps its
 *   colors forward then backward). The F-cycle, or a level whose sweeps differ, is not: precondition
 *   BiCGSTAB with it; CG takes it as spx_solve_cg does, without its theory
 *   (spx_dist_amg_info.symmetric says which; nothing refuses it).
 *   Convergence: each block is a subdomain problem with the neighbours' unknowns held at zero, so
 *   the iterations grow with the rank count; one rank is the whole matrix's AMG and gives
 *   spx_solve_cg's (or _bicgstab's) x with spx_amg_precond bit for bit on plans of the same format.
 *   On CUDA the hierarchy lives on the matrix's context (its setup on the GPU from
 *   options.gpu_setup_rows rows) and the cycle runs on its stream on device vectors, as
 *   spx_solve_* with spx_amg_precond does there.
 *   Determinism: a cycle's passes run in a fixed order (amg.h): the same x bit for bit run to run
 *   on the host; on CUDA when every level's plan runs a deterministic kernel (force a format in
 *   options.plan: amg.h's DETERMINISM).
 *   Errors: a rank whose setup fails (a zero diagonal in its block, bad options, memory) makes every
 *   rank fail with its status, "rank R: ..." on the others, and every rank frees what it set up.
 *   A rank that owns no rows sets up nothing (its options are not looked at) and its cycle does
 *   nothing.
 * DETERMINISM  Every dot product is summed in fixed chunks on each rank, then the ranks' partial
 *   sums are gathered (MPI_Allgather) and added in rank order on every rank, never with
 *   MPI_Allreduce (whose order MPI leaves open): the same rank count and the same plans give the
 *   same x bit for bit, run to run, and every rank takes the same decisions. (A plan strategy that
 *   times candidates, auto or trial, may choose another format in another run; a format choice is
 *   not a rounding choice for most formats, but force one, or use strategy model, for a guarantee.)
 *   Different rank counts round differently (the blocks split each row's sum, the chunks move):
 *   iteration counts and x then agree with one process within rounding (tests/test_dist.c states
 *   how far).
 *
 * ERRORS  Every function here not marked Local is collective over the matrix's communicator and
 *   returns the same status on every rank: a bad argument on one rank (a NULL, another global size,
 *   another dtype) is agreed on (MPI_Allreduce of the statuses) before any rank goes on, and the
 *   ranks that were fine get the failing rank's sentence, "rank R: ...". Creation starts with a
 *   handshake on the caller's communicator (MPI_Comm_idup, waited for at most options.timeout_s): a
 *   rank that passed another communicator, or never called, makes the others fail with a sentence
 *   saying so instead of hanging (that communicator is unusable afterwards: an idup stays pending
 *   on it). Nothing leaks on an error path.
 *
 * THE STENCIL  spx_dist_stencil_run runs spx/stencil.h's 7-point stencil on a grid split into
 *   z-slabs: rank r owns the planes [z0, z1) that spx_dist_stencil_planes gives (contiguous, in
 *   rank order, as even as possible; when nz < ranks the last ranks own none) and holds them in
 *   host memory of its own, x fastest (spx_dist_stencil_grid_alloc: pinned on a CUDA context).
 *
 *     int64_t z0, z1;  spx_dist_stencil_planes(g.nz, size, rank, &z0, &z1);
 *     void *u;  spx_dist_stencil_grid_alloc(comm, ctx, &g, NULL, &u);    this rank's planes
 *     ... fill u: (z1 - z0) planes of g.nx * g.ny values ...
 *     spx_dist_stencil_run(comm, ctx, &g, u, 100, &opt, &rep);          100 steps, in place
 *     spx_stencil_grid_free(ctx, u);
 *
 *   Every R steps (the exchange interval) each rank sends its R lowest and R highest planes to its
 *   z-neighbours and receives theirs, then runs R steps of spx_stencil_run with the caller's
 *   options (any method: in core, or out of core for a slab larger than the GPU) on its planes with
 *   those R-plane halos. The halos' outer planes are held fixed by the stencil's Dirichlet rule;
 *   the error that makes moves one plane per step, so after R steps the rank's own planes are
 *   exact, and the result is the one-process spx_stencil_run's bit for bit (each cell's sum runs in
 *   one fixed order without FMA contraction, on the host and the GPU). One exchange per R steps:
 *   temporal blocking divides the messages by R, for halo planes computed on both sides (below).
 *   R is options.interval, else the tts of the plan spx_stencil_choose makes for the rank's slab
 *   (one exchange per round trip of the slab through the device); then the smallest over the
 *   ranks, at most the steps and the fewest planes a rank owns (a rank sends only its own planes);
 *   a last round of the steps left. On one rank: one run of every step.
 * THE EXCHANGE BESIDE THE INTERIOR  A rank that owns at least 2 R planes copies the 2 R planes at
 *   each end that has a neighbour into an edge grid of 3 R planes (R of halo beyond them), posts
 *   the messages (MPI_Irecv into the edge grids' halos, MPI_Isend from their copies) and runs R
 *   steps on its own planes in place, on a thread of its own, while the calling thread drives the
 *   messages (MPI_Testall: an MPI library moves a large message only inside its calls); the planes
 *   R or more from a neighbour come out exact. Then it waits for what is left of the exchange,
 *   runs R steps on each edge grid and copies their middle R planes over its ends. Per exchange
 *   that copies 4 R planes in and 2 R out and computes 4 R planes more than one grid with the
 *   halos would; no second grid is held, only the two edge grids. options.no_overlap waits for
 *   the halos before the interior runs (the exchange then timed alone). A rank that owns fewer
 *   than 2 R planes runs one grid of its planes between the halos, copied in and out, after the
 *   exchange. The report splits this rank's time into the local runs (interior, edges), the
 *   copies, posting, the wait left after the interior ran (the exchange's exposed part; with
 *   no_overlap all of it: 1 - exposed / that is the overlap) and each round's status agreement.
 * ERRORS OF THE STENCIL  spx_dist_stencil_run is collective over comm and returns the same status
 *   on every rank: a bad argument on one rank (a NULL, steps < 0, interval < 0, another global
 *   grid, dtype, coefficient, steps or interval than rank 0's) is agreed on first, as ERRORS above
 *   says (within options.timeout_s, on the caller's communicator; the messages then go on a
 *   duplicate of it); a local run that fails on one rank ends the round on every rank, its
 *   messages completed, and every rank returns its status and sentence.
 *
 * THREADS  MPI_THREAD_FUNNELED is enough: spx calls MPI from the calling thread only (the
 *   stencil's interior runs on a thread of spx's own, which never calls MPI). */
#ifndef SPX_DIST_H
#define SPX_DIST_H

#include <mpi.h>
#include "spx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How spx_dist_scatter and spx_dist_read_mm split the rows (THE PARTITION above). ORDER matters
 * (enum value = position).
 *  _(ENUM_SUFFIX,   "name")       what it is */
#define SPX_DIST_PARTITION_LIST(_)                                                                      \
  _(CONTIGUOUS,      "contiguous") /* the rows in their order, balanced by nonzeros + rows */         \
  _(METIS,           "metis")      /* METIS k-way on A + A^T, the matrix permuted (SPX_WITH_METIS) */
#define SPX__DIST_PART_ENUM(e, name) SPX_DIST_PART_##e,
typedef enum spx_dist_partition { SPX_DIST_PARTITION_LIST(SPX__DIST_PART_ENUM) } spx_dist_partition;
#undef SPX__DIST_PART_ENUM
/* "contiguous", "metis"; "unknown" outside the table. */
const char *spx_dist_partition_name(spx_dist_partition p);
/* The partition named name; SPX_INVALID_ARGUMENT (a sentence listing the names) otherwise. */
spx_status spx_dist_partition_parse(const char *name, spx_dist_partition *out);
/* 1 when this build of spx has partition p (METIS: compiled with SPX_WITH_METIS), else 0. Local. */
int spx_dist_partition_available(spx_dist_partition p);

typedef struct spx_dist_options {
  spx_plan_options plan;      /* both blocks' plans (backend, strategy, dtype, ...); the local
                               * block keeps its diagonal (Jacobi), the ghost block none */
  spx_context *ctx;           /* this rank's device (the caller picks the GPU, e.g. by node-local
                               * rank); NULL: a context of plan.backend on device 0, owned */
  const int64_t *row_start;   /* spx_dist_scatter, read on the root (spx_dist_read_mm: on rank 0):
                               * size + 1 row offsets (row_start[0] = 0, nondecreasing,
                               * row_start[size] = n); NULL: balanced by nonzeros + rows */
  spx_dist_partition partition; /* read where row_start is (above) [CONTIGUOUS]; METIS with
                               * row_start is an error, and in spx_dist_create */
  double timeout_s;           /* creation's handshake waits at most this long for every rank to
                               * call [300]; <= 0: no limit */
  int keep_local;             /* 1: keep the local block as a host CSR beside its plan
                               * (spx_dist_local_csr), what spx_dist_amg_create builds on; costs
                               * 8 (nlocal + 1) + (4 + value size) nnz_local bytes of host memory
                               * per rank [0: freed once the plan is built] */
} spx_dist_options;

void spx_dist_options_default(spx_dist_options *o);

typedef struct spx_dist_matrix spx_dist_matrix;

/* From a global square CSR a on rank root (ignored elsewhere: pass NULL), scattered by rows.
 * Collective; *out = NULL on every rank on failure. */
spx_status spx_dist_scatter(MPI_Comm comm, int root, const spx_csr *a, const spx_dist_options *options,
                            spx_dist_matrix **out);
/* From each rank's own rows: rows is nlocal x n with global column indices (ncols == n), the ranks'
 * rows contiguous in rank order (rank 0 the first ones; a rank with none passes a 0 x n CSR).
 * Every rank passes the same n and dtype; the nlocal sum to n. Collective. */
spx_status spx_dist_create(MPI_Comm comm, int64_t n, const spx_csr *rows, const spx_dist_options *options,
                           spx_dist_matrix **out);
/* A coordinate Matrix Market file (plain or gzip; real, integer or pattern; symmetric files
 * expanded, duplicates summed, as spx_mm_read does) read into dtype by every rank of comm
 * (READING A FILE above): the same matrix, rows and partition as spx_mm_read on rank 0 then
 * spx_dist_scatter, unless the file lists duplicate entries (the balance counts listed entries).
 * Every rank passes the same path, reachable from each. Collective: a missing file, a bad header
 * or a bad line is a status on every rank (the line's number as spx_mm_read gives it). */
spx_status spx_dist_read_mm(MPI_Comm comm, const char *path, spx_dtype dtype, const spx_dist_options *options,
                            spx_dist_matrix **out);
/* Collective (it frees spx's duplicate of the communicator); NULL is a no-op on every rank. */
void spx_dist_destroy(spx_dist_matrix *A);

/* y = alpha A x + beta y on this rank's parts (nlocal entries each): host arrays on the host
 * backend, device pointers on CUDA. beta == 0 does not read y. Collective. */
spx_status spx_dist_spmv(spx_dist_matrix *A, double alpha, const void *x, double beta, void *y);

/* What one rank holds. The counters add up over the matrix's SpMVs (the solvers' included). */
typedef struct spx_dist_info {
  int rank, size;
  int64_t n;                  /* global rows (= columns) */
  int64_t first_row, nlocal;  /* this rank's rows */
  int64_t nnz_local, nnz_ghost; /* nonzeros of the two blocks */
  int64_t nghost;             /* distinct remote columns this rank reads */
  int recv_neighbors, send_neighbors; /* ranks it receives from / sends to */
  int64_t send_entries;       /* x entries it sends per SpMV */
  int64_t halo_bytes;         /* bytes it sends per SpMV (send_entries x the value size) */
  spx_dtype dtype;
  spx_backend backend;
  spx_dist_partition partition; /* how the rows were split (METIS: the matrix is permuted) */
  int halo_ipc;               /* CUDA: 1 when the halo goes device to device (CUDA IPC: every rank
                               * on one node, every send one run of x), 0 through pinned host memory */
  /* counters */
  int64_t spmvs;
  int64_t halo_bytes_sent;    /* over all SpMVs */
  double spmv_ms;             /* wall time in the SpMVs */
  double halo_wait_ms;        /* of which waiting for the messages (MPI_Waitall) */
  double halo_down_ms;        /* of which waiting for x's spans to come down (CUDA) */
  double halo_ms;             /* of which the halo on the host's path: the spans of x down (CUDA),
                               * the send buffer, the messages, the ghost values queued up; not
                               * the local block's SpMV call. Exposed halo = spmv_ms minus the
                               * two blocks' SpMVs alone; overlap = 1 - exposed / halo_ms */
  double reduce_ms;           /* the solvers' global sums (MPI_Allgather and the rank-order sum) */
} spx_dist_info;

spx_status spx_dist_get_info(const spx_dist_matrix *A, spx_dist_info *out);
/* Rank r's first row (r = size: n). */
int64_t spx_dist_row_start(const spx_dist_matrix *A, int r);
/* The two blocks' plans (NULL when the block is empty: no rows, or no remote columns). The ghost
 * block's plan has only the rows with remote columns (its product is added into those rows). */
spx_plan *spx_dist_local_plan(const spx_dist_matrix *A);
spx_plan *spx_dist_ghost_plan(const spx_dist_matrix *A);
/* The local block as a host CSR (nlocal x nlocal, columns renumbered from 0, the matrix's dtype),
 * where the matrix was created with options.keep_local; else NULL. Owned by the matrix. */
const spx_csr *spx_dist_local_csr(const spx_dist_matrix *A);
/* The global column of ghost entry k (k < nghost). */
int64_t spx_dist_ghost_col(const spx_dist_matrix *A, int64_t k);
/* Local row i's row (= column, = vector entry) in the matrix as it was given: first_row + i
 * unless the rows were permuted (METIS); -1 outside 0..nlocal-1. */
int64_t spx_dist_orig_row(const spx_dist_matrix *A, int64_t i);
/* The vector global (n entries of A's dtype, in the original order, on rank root; ignored
 * elsewhere) to every rank's part local (nlocal entries), and back: global on root from the
 * parts. Host arrays, on either backend. Setup-time helpers: each call also gathers the ranks'
 * original row indices on the root. Collective. */
spx_status spx_dist_scatter_vector(const spx_dist_matrix *A, int root, const void *global, void *local);
spx_status spx_dist_gather_vector(const spx_dist_matrix *A, int root, const void *local, void *global);
/* spx's duplicate of the caller's communicator (valid until spx_dist_destroy). */
MPI_Comm spx_dist_comm(const spx_dist_matrix *A);
/* 1 when the MPI library says it can take device pointers (MPIX_Query_cuda_support), 0 when it
 * says not or cannot say. Local. */
int spx_dist_cuda_aware(void);

/* The solvers (above). Collective; the same status on every rank. */
spx_status spx_dist_solve_cg(spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                             spx_solve_report *report);
spx_status spx_dist_solve_pcg_jacobi(spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                                     spx_solve_report *report);
spx_status spx_dist_solve_bicgstab(spx_dist_matrix *A, const void *b, void *x, const spx_solve_options *options,
                                   spx_solve_report *report);

/* ---- The rank-local AMG preconditioner (AMG BLOCKS above) ---- */
typedef struct spx_dist_amg spx_dist_amg;

/* Sets up spx/amg.h's hierarchy (options: NULL for the defaults) of this rank's local block, on the
 * matrix's context, on every rank that owns rows. A must have been created with
 * options.keep_local = 1 and be double. Collective over A's communicator; the same status on every
 * rank (a rank whose setup fails makes every rank fail, "rank R: ..." on the others); *out = NULL
 * on every rank on failure, nothing kept. A must outlive *out. */
spx_status spx_dist_amg_create(const spx_dist_matrix *A, const spx_amg_options *options, spx_dist_amg **out);
/* Local (no messages); NULL is a no-op. */
void spx_dist_amg_destroy(spx_dist_amg *M);
/* An spx_precond_fn (data: the spx_dist_amg): z = one cycle of this rank's hierarchy on r, from
 * z = 0; r and z are this rank's parts (double; device pointers on CUDA). A rank without rows does
 * nothing. Local: pass it as options.precond of spx_dist_solve_cg / spx_dist_solve_bicgstab. */
spx_status spx_dist_amg_precond(void *data, const void *r, void *z);

/* What one rank's hierarchy is (spx_dist_amg_get_info). */
typedef struct spx_dist_amg_info {
  int rank, size;
  int64_t nlocal, nnz_local;  /* the local block it was set up on */
  int levels;                 /* 0 on a rank that owns no rows (its preconditioner does nothing) */
  int64_t coarse_rows;        /* the coarsest level's rows (0: none) */
  double operator_complexity, grid_complexity; /* spx_amg_report's (0 without rows) */
  double setup_ms;            /* this rank's spx_amg_create */
  double max_setup_ms;        /* the slowest rank's (the same on every rank) */
  int64_t cycles;             /* cycles applied on this rank so far */
  int symmetric;              /* 1 when every rank's cycle is a symmetric operator (a V- or
                               * W-cycle with as many sweeps before as after on every level):
                               * the block preconditioner is then symmetric, what CG assumes.
                               * The same on every rank */
} spx_dist_amg_info;

spx_status spx_dist_amg_get_info(const spx_dist_amg *M, spx_dist_amg_info *out);
/* This rank's hierarchy's report (levels, their sizes, smoothers and plans, setup phases); NULL on
 * a rank that owns no rows. */
const spx_amg_report *spx_dist_amg_report(const spx_dist_amg *M);

/* ---- The stencil over the ranks (THE STENCIL above) ---- */
/* Rank `rank`'s planes [*z0, *z1) of nz planes over `size` ranks: the first nz % size ranks own
 * nz / size + 1, the others nz / size (none when nz < size). Local. */
spx_status spx_dist_stencil_planes(int64_t nz, int size, int rank, int64_t *z0, int64_t *z1);

/* This rank's planes of the global problem g (spx_stencil_grid_alloc's memory: pinned on a CUDA
 * context; at least 3 planes, whatever the rank owns; *out NULL on a rank that owns none). Free with
 * spx_stencil_grid_free(ctx, u). opt (may be NULL): its host_limit. Local (rank and size of comm). */
spx_status spx_dist_stencil_grid_alloc(MPI_Comm comm, spx_context *ctx, const spx_stencil *g,
                                       const spx_stencil_options *opt, void **out);

typedef struct spx_dist_stencil_options {
  spx_stencil_options local;  /* every local run's options (method, budget, depth, tts, ...): each
                               * run is spx_stencil_run on this rank's context with them */
  int64_t interval;           /* R, steps between halo exchanges; 0: the plan's tts (above).
                               * Clamped to the steps and to the fewest planes a rank owns */
  int no_overlap;             /* 1: wait for the halos before the interior runs (the exchange alone
                               * is then measured: wait_ms) */
  double timeout_s;           /* the call waits at most this long for every rank to join [300];
                               * <= 0: no limit */
} spx_dist_stencil_options;

void spx_dist_stencil_options_default(spx_dist_stencil_options *o);

/* One rank's run. Times in ms are this rank's wall clock; those of the rounds leave out the local
 * runs' kernel loads (jit_ms), as spx_stencil_report's total_ms does: on a CUDA context every
 * kernel the rounds use is compiled before they start (setup_ms), so they only read it from the
 * JIT cache. */
typedef struct spx_dist_stencil_report {
  int rank, size;
  int lo_rank, hi_rank;       /* the z-neighbours, -1 where none */
  int64_t z0, z1;             /* this rank's planes */
  int64_t interval;           /* R (the same on every rank) */
  int64_t exchanges;          /* rounds, each one exchange and R steps (the last: the rest) */
  int split;                  /* 1: the exchange beside the interior; 0: one grid with the halos */
  int64_t halo_bytes;         /* bytes this rank sends per exchange of R planes */
  int64_t halo_bytes_sent;    /* over the run */
  double total_ms;            /* the rounds, from the first copy to the last agreement */
  double interior_ms;         /* spx_stencil_run on the rank's planes (split), or on its one grid */
  double edge_ms;             /* spx_stencil_run on the edge grids (split) */
  double copy_ms;             /* planes into and out of the edge (or one) grids */
  double post_ms;             /* posting the messages */
  double wait_ms;             /* waiting for them after the interior ran: the exposed exchange */
  double agree_ms;            /* each round's status agreement (waits for the slowest rank) */
  double setup_ms;            /* the checks, the buffers and the kernels' compiles, before the rounds */
  double jit_ms;              /* the local runs' kernel loads (not in the times above) */
  double gstencils;           /* this rank's planes x nx x ny x steps / total_ms */
  double max_total_ms;        /* the slowest rank's total_ms (the same on every rank) */
  double total_gstencils;     /* nx x ny x nz x steps / max_total_ms (the same on every rank) */
  spx_stencil_report local;   /* the first local run's (the interior's, where it runs): its plan */
} spx_dist_stencil_report;

/* `steps` steps of g on u_local, this rank's planes (above; NULL where it owns none), in place.
 * ctx: this rank's context (its GPU or the host). rep (may be NULL) gets this rank's report.
 * Collective over comm; the same status on every rank. */
spx_status spx_dist_stencil_run(MPI_Comm comm, spx_context *ctx, const spx_stencil *g, void *u_local,
                                int64_t steps, const spx_dist_stencil_options *opt,
                                spx_dist_stencil_report *rep);

#ifdef __cplusplus
}
#endif
#endif /* SPX_DIST_H */

/* The implementation: in the file that defines SPX_IMPLEMENTATION (spx.h, included above, has
 * compiled the core there already), or the distributed part alone in a file that defines
 * SPX_DIST_IMPLEMENTATION, for a program whose core is compiled in another file (USE). */
#if (defined(SPX_IMPLEMENTATION) || defined(SPX_DIST_IMPLEMENTATION)) && !defined(SPX__DIST_IMPLEMENTATION_DONE)
#define SPX__DIST_IMPLEMENTATION_DONE
#include "internal/dist_part_impl.h"
#include "internal/dist_impl.h"
#include "internal/dist_mm_impl.h"
#include "internal/dist_solve_impl.h"
#include "internal/dist_amg_impl.h"
#include "internal/dist_stencil_impl.h"
#endif
