/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/dist.h's AMG blocks: spx/amg.h's hierarchy of each rank's local block (the CSR the matrix
 * kept at creation, options.keep_local), agreed on by every rank at setup, and its cycle as a
 * rank-local preconditioner (block Jacobi with AMG blocks) for the distributed solvers. Above the
 * matrix room (dist_impl.h: the block, the status agreement) and amg.h; no messages after setup. */
#include "common.h"
#include "../amg.h"
#include "../dist.h"
#include "dist_matrix.h"

struct spx_dist_amg {
  spx_amg *amg;               /* this rank's hierarchy; NULL where the rank owns no rows */
  int rank, size;
  int64_t nlocal, nnz_local;
  int symmetric;              /* every rank's cycle is a symmetric operator (agreed) */
  double setup_ms, max_setup_ms;
};

/* Whether m's cycle is a symmetric operator (amg.h's CYCLES and SMOOTHERS): not the F-cycle, and
 * on every level as many sweeps before the coarse correction as after (the coarsest level's
 * solve, LU or sweeps of a symmetric smoother from zero, is symmetric either way). */
static int spx__damg_symmetric(const spx_amg_report *r) {
  int l;
  if (r->cycle == SPX_AMG_CYCLE_F) return 0;
  for (l = 0; l + 1 < r->levels; l++)
    if (r->level[l].pre_sweeps != r->level[l].post_sweeps) return 0;
  return 1;
}

/* This rank's checks and setup (its own status, not yet agreed). */
static spx_status spx__damg_setup(const spx_dist_matrix *A, const spx_amg_options *options, spx_dist_amg *M) {
  const char *fn = "spx_dist_amg_create";
  double t0 = spx__now();
  spx_status st;
  if (A->dtype != SPX_DOUBLE)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: the matrix is %s; AMG runs in double and its cycle takes double "
                     "vectors: create the distributed matrix in double", fn, spx_dtype_name(A->dtype));
  if (!A->keep_local)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: the matrix kept no local block to set up on: create it with "
                     "spx_dist_options.keep_local = 1", fn);
  if (A->nlocal == 0) return SPX_OK; /* nothing to precondition here */
  if ((st = spx_amg_create(A->ctx, A->loc_csr, options, &M->amg)))
    return spx__wrap(st, "%s: the local block (rows %lld..%lld, %lld nonzeros)", fn, (long long)A->first,
                     (long long)(A->first + A->nlocal - 1), (long long)A->nnz_loc);
  M->setup_ms = 1e3 * (spx__now() - t0);
  return SPX_OK;
}

spx_status spx_dist_amg_create(const spx_dist_matrix *A, const spx_amg_options *options, spx_dist_amg **out) {
  const char *fn = "spx_dist_amg_create";
  spx_dist_amg *M = NULL;
  double mine[2], all[2];
  spx_status st = SPX_OK;
  if (!A) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL matrix", fn); /* no communicator to tell the others */
  if (out) *out = NULL;
  if (!out) st = spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL out", fn);
  else if (!(M = (spx_dist_amg *)spx__calloc(1, sizeof *M))) st = SPX_OUT_OF_MEMORY;
  if ((st = spx__dist_agree_t(A->comm, A->rank, st, A->timeout_s, fn))) goto fail;
  M->rank = A->rank;
  M->size = A->size;
  M->nlocal = A->nlocal;
  M->nnz_local = A->nnz_loc;
  if ((st = spx__dist_agree(A, spx__damg_setup(A, options, M)))) goto fail;
  /* symmetric on every rank (a min), the slowest setup (a max): one reduction */
  mine[0] = M->amg ? -(double)spx__damg_symmetric(spx_amg_report_of(M->amg)) : -1.0;
  mine[1] = M->setup_ms;
  MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, A->comm);
  M->symmetric = all[0] == -1.0;
  M->max_setup_ms = all[1];
  *out = M;
  return SPX_OK;
fail:
  spx_dist_amg_destroy(M);
  return st;
}

void spx_dist_amg_destroy(spx_dist_amg *M) {
  if (!M) return;
  spx_amg_destroy(M->amg);
  SPX_FREE(M);
}

spx_status spx_dist_amg_precond(void *data, const void *r, void *z) {
  spx_dist_amg *M = (spx_dist_amg *)data;
  if (!M) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_amg_precond: NULL preconditioner (precond_data)");
  if (!M->amg) return SPX_OK; /* no rows on this rank */
  return spx_amg_precond(M->amg, r, z);
}

spx_status spx_dist_amg_get_info(const spx_dist_amg *M, spx_dist_amg_info *out) {
  const spx_amg_report *r;
  if (!M || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_amg_get_info: NULL argument");
  memset(out, 0, sizeof *out);
  out->rank = M->rank;
  out->size = M->size;
  out->nlocal = M->nlocal;
  out->nnz_local = M->nnz_local;
  out->setup_ms = M->setup_ms;
  out->max_setup_ms = M->max_setup_ms;
  out->symmetric = M->symmetric;
  if (!M->amg) return SPX_OK;
  r = spx_amg_report_of(M->amg);
  out->levels = r->levels;
  out->coarse_rows = r->levels > 0 ? r->level[r->levels - 1].rows : 0;
  out->operator_complexity = r->operator_complexity;
  out->grid_complexity = r->grid_complexity;
  out->cycles = r->cycles;
  return SPX_OK;
}

const spx_amg_report *spx_dist_amg_report(const spx_dist_amg *M) {
  return M && M->amg ? spx_amg_report_of(M->amg) : NULL;
}
