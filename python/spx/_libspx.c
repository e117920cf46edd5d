/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared object the Python package loads with ctypes: spx's implementation, compiled once when
 * the package is built, plus a few flat entry points (spx_py_*) for the calls whose arguments are
 * structs. Python passes scalars and pointers only; these functions fill spx's structs here, with
 * the compiler that knows their layout, so the binding never mirrors a library struct and a field
 * added to spx_plan_options or spx_solve_report cannot shift what Python reads. The structs below
 * (spx_py_*) belong to the binding and change only with python/spx/_lib.py, which mirrors them. */
#define SPX_IMPLEMENTATION
#include <spx/spx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bumped whenever a signature or struct below changes; _lib.py refuses a different one (a stale
 * shared object from an older build). */
#define SPX_PY_ABI 1

int spx_py_abi(void) { return SPX_PY_ABI; }
const char *spx_py_version(void) { return SPX_VERSION_STRING; }
void spx_py_free(void *p) { free(p); }

/* A context of backend b on device `device` (created by the caller of this library, for plans and
 * stencil runs). */
spx_status spx_py_context_create(int backend, int device, spx_context **out) {
  spx_context_options co;
  co.backend = (spx_backend)backend;
  co.device = device;
  return spx_context_create(&co, out);
}

/* Everything spx_py_plan_create takes besides the matrix. */
typedef struct spx_py_plan_args {
  const char *strategy;    /* a name spx_plan_strategy_parse knows; NULL: auto */
  int64_t expected_calls;
  int dtype;               /* -1: the matrix's */
  int eager;
  int defer;
  int no_diagonal;
  int no_calibrate;
  int trial_reps;          /* 0: the default */
  int64_t memory_limit;
  const char *force;       /* NULL or a candidate's name */
} spx_py_plan_args;

/* A plan for the CSR given by its arrays (row_ptr: nrows + 1 int64, col_idx: nnz int32, val: nnz
 * of val_dtype), read in place: no copy is made, and spx_plan_create keeps nothing of them (unless
 * args->defer). The arrays are validated first (sorted unique in-range columns, monotone row
 * pointers), so a malformed matrix is a status, not a read out of bounds in a kernel. */
spx_status spx_py_plan_create(spx_context *ctx, int64_t nrows, int64_t ncols, int64_t nnz,
                              int val_dtype, int64_t *row_ptr, int32_t *col_idx, void *val,
                              const spx_py_plan_args *args, spx_plan **out) {
  spx_csr a;
  spx_plan_options o;
  spx_status s;
  if (!out || !args) return spx_format_fail(SPX_INVALID_ARGUMENT, "spx_py_plan_create: NULL argument");
  *out = NULL;
  memset(&a, 0, sizeof a);
  a.nrows = nrows;
  a.ncols = ncols;
  a.nnz = nnz;
  a.dtype = (spx_dtype)val_dtype;
  a.row_ptr = row_ptr;
  a.col_idx = col_idx;
  a.val.p = val;
  if ((s = spx_csr_validate(&a))) return s;
  spx_plan_options_default(&o);
  if (args->strategy && (s = spx_plan_strategy_parse(args->strategy, &o.strategy))) return s;
  o.expected_calls = args->expected_calls;
  o.dtype = args->dtype;
  o.eager = args->eager;
  o.defer = args->defer;
  o.no_diagonal = args->no_diagonal;
  o.no_calibrate = args->no_calibrate;
  if (args->trial_reps > 0) o.trial_reps = args->trial_reps;
  o.memory_limit = args->memory_limit;
  o.force = args->force;
  return spx_plan_create(ctx, &a, &o, out);
}

/* spx_plan_print into a malloc'd string (free with spx_py_free). */
spx_status spx_py_plan_print(const spx_plan *p, int json, char **out) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f;
  spx_status s;
  if (!out) return spx_format_fail(SPX_INVALID_ARGUMENT, "spx_py_plan_print: NULL out");
  *out = NULL;
  if (!(f = open_memstream(&buf, &len)))
    return spx_format_fail(SPX_OUT_OF_MEMORY, "spx_py_plan_print: open_memstream failed");
  s = spx_plan_print(p, f, json);
  if (fclose(f) != 0 && s == SPX_OK) s = SPX_OUT_OF_MEMORY;
  if (s) {
    free(buf);
    return s;
  }
  *out = buf;
  return SPX_OK;
}

/* What Python reads of a solve (a subset of spx_solve_report, in the binding's own layout). */
typedef struct spx_py_solve_report {
  int32_t status;
  int32_t restarts;
  int64_t n, iterations, spmvs, history_count, upgraded_at;
  double bnorm, tol, resid, rel_resid, true_resid, true_rel_resid;
  double analysis_ms, build_ms, setup_ms, jit_ms, solve_ms, per_iter_us, check_ms;
  char method[32];
  char message[256];
} spx_py_solve_report;

/* method: 0 cg, 1 pcg_jacobi, 2 bicgstab. history: NULL or room for history_len norms. */
spx_status spx_py_solve(spx_plan *p, int method, const void *b, void *x, double rtol, double atol,
                        int64_t maxit, int host_vectors, double *history, int64_t history_len,
                        spx_py_solve_report *out) {
  spx_solve_options o;
  spx_solve_report r;
  spx_status s;
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.atol = atol;
  o.maxit = maxit;
  o.host_vectors = host_vectors;
  o.history = history;
  o.history_len = history ? history_len : 0;
  memset(&r, 0, sizeof r);
  switch (method) {
  case 0: s = spx_solve_cg(p, b, x, &o, &r); break;
  case 1: s = spx_solve_pcg_jacobi(p, b, x, &o, &r); break;
  case 2: s = spx_solve_bicgstab(p, b, x, &o, &r); break;
  default: return spx_format_fail(SPX_INVALID_ARGUMENT, "spx_py_solve: method %d is not 0 (cg), 1 (pcg_jacobi) or 2 (bicgstab)", method);
  }
  if (out) {
    memset(out, 0, sizeof *out);
    out->status = (int32_t)s;
    out->restarts = r.restarts;
    out->n = r.n;
    out->iterations = r.iterations;
    out->spmvs = r.spmvs;
    out->history_count = r.history_count;
    out->upgraded_at = r.upgraded_at;
    out->bnorm = r.bnorm;
    out->tol = r.tol;
    out->resid = r.resid;
    out->rel_resid = r.rel_resid;
    out->true_resid = r.true_resid;
    out->true_rel_resid = r.true_rel_resid;
    out->analysis_ms = r.analysis_ms;
    out->build_ms = r.build_ms;
    out->setup_ms = r.setup_ms;
    out->jit_ms = r.jit_ms;
    out->solve_ms = r.solve_ms;
    out->per_iter_us = r.per_iter_us;
    out->check_ms = r.check_ms;
    snprintf(out->method, sizeof out->method, "%s", r.method ? r.method : "");
    snprintf(out->message, sizeof out->message, "%s", r.message);
  }
  return s;
}

/* What Python reads of a Matrix Market read. */
typedef struct spx_py_mm_info {
  int64_t nrows, ncols, entries, duplicates, nan_count, inf_count, explicit_zeros, lines;
  double seconds;
  char format[16], field[16], symmetry[16];
} spx_py_mm_info;

spx_status spx_py_mm_read(const char *path, int dtype, spx_csr **out, spx_py_mm_info *info) {
  spx_mm_info mi;
  spx_status s;
  memset(&mi, 0, sizeof mi);
  s = spx_mm_read(path, (spx_dtype)dtype, out, &mi);
  if (info) {
    memset(info, 0, sizeof *info);
    info->nrows = mi.nrows;
    info->ncols = mi.ncols;
    info->entries = mi.entries;
    info->duplicates = mi.duplicates;
    info->nan_count = mi.nan_count;
    info->inf_count = mi.inf_count;
    info->explicit_zeros = mi.explicit_zeros;
    info->lines = mi.lines;
    info->seconds = mi.seconds;
    snprintf(info->format, sizeof info->format, "%s", spx_mm_format_name(mi.format));
    snprintf(info->field, sizeof info->field, "%s", spx_mm_field_name(mi.field));
    snprintf(info->symmetry, sizeof info->symmetry, "%s", spx_mm_symmetry_name(mi.symmetry));
  }
  return s;
}

/* A CSR's sizes and arrays, for copying out. */
void spx_py_csr_get(const spx_csr *a, int64_t *sizes, int *dtype, void **arrays) {
  sizes[0] = a->nrows;
  sizes[1] = a->ncols;
  sizes[2] = a->nnz;
  *dtype = (int)a->dtype;
  arrays[0] = a->row_ptr;
  arrays[1] = a->col_idx;
  arrays[2] = a->val.p;
}

/* Writes the CSR given by its arrays (as for spx_py_plan_create) to a Matrix Market file. */
spx_status spx_py_mm_write(const char *path, int64_t nrows, int64_t ncols, int64_t nnz, int val_dtype,
                           int64_t *row_ptr, int32_t *col_idx, void *val, int symmetry) {
  spx_csr a;
  spx_status s;
  memset(&a, 0, sizeof a);
  a.nrows = nrows;
  a.ncols = ncols;
  a.nnz = nnz;
  a.dtype = (spx_dtype)val_dtype;
  a.row_ptr = row_ptr;
  a.col_idx = col_idx;
  a.val.p = val;
  if ((s = spx_csr_validate(&a))) return s;
  return spx_mm_write(path, &a, (spx_mm_symmetry)symmetry);
}

/* What Python reads of a stencil run. */
typedef struct spx_py_stencil_report {
  int64_t steps, tts, slab, nslabs, rounds, device_bytes, launches;
  int32_t depth, shared;
  double total_ms, kernel_ms, h2d_ms, d2h_ms, gstencils, jit_ms, model_gstencils;
  char method[16];
  char why[240];
} spx_py_stencil_report;

/* Runs `steps` steps of the 7-point stencil with coefficients c[7] on grid (nz x ny x nx values of
 * dtype, x fastest) in ctx. On a CUDA context a grid that is not pinned (pinned == 0) is staged
 * through a pinned one from spx_stencil_grid_alloc: its copies run at PCIe speed, a pageable
 * grid's through the driver's bounce buffers. method NULL: the default; depth, tts, slab, budget
 * 0: spx's choice. */
spx_status spx_py_stencil_run(spx_context *ctx, int64_t nx, int64_t ny, int64_t nz, int dtype,
                              const double *c, void *grid, int pinned, int64_t steps,
                              const char *method, int64_t budget, int depth, int64_t tts,
                              int64_t slab, spx_py_stencil_report *out) {
  spx_stencil p;
  spx_stencil_options o;
  spx_stencil_report r;
  spx_status s;
  void *stage = NULL;
  size_t bytes;
  int i;
  if ((s = spx_stencil_init(&p, nx, ny, nz, (spx_dtype)dtype, c[0], c[1], c[3], c[5]))) return s;
  for (i = 0; i < 7; i++)  /* rounded to dtype as spx_stencil_init rounds */
    p.c[i] = p.dtype == SPX_FLOAT ? (double)(float)c[i] : c[i];
  memset(&o, 0, sizeof o);
  if (method && (s = spx_stencil_method_parse(method, &o.method))) return s;
  o.budget = budget;
  o.depth = depth;
  o.tts = tts;
  o.slab = slab;
  memset(&r, 0, sizeof r);
  bytes = (size_t)(nx * ny * nz) * SPX_DTYPE_SIZE(p.dtype);
  if (!pinned && spx_context_backend(ctx) == SPX_BACKEND_CUDA) {
    if ((s = spx_stencil_grid_alloc(ctx, &p, &o, &stage))) return s;
    memcpy(stage, grid, bytes);
  }
  s = spx_stencil_run(ctx, &p, stage ? stage : grid, steps, &o, &r);
  if (stage) {
    if (s == SPX_OK) memcpy(grid, stage, bytes);
    spx_stencil_grid_free(ctx, stage);
  }
  if (out) {
    memset(out, 0, sizeof *out);
    out->steps = r.plan.steps;
    out->tts = r.plan.tts;
    out->slab = r.plan.slab;
    out->nslabs = r.plan.nslabs;
    out->rounds = r.plan.rounds;
    out->device_bytes = r.plan.device_bytes;
    out->launches = r.launches;
    out->depth = r.plan.depth;
    out->shared = r.plan.shared;
    out->total_ms = r.total_ms;
    out->kernel_ms = r.kernel_ms;
    out->h2d_ms = r.h2d_ms;
    out->d2h_ms = r.d2h_ms;
    out->gstencils = r.gstencils;
    out->jit_ms = r.jit_ms;
    out->model_gstencils = r.plan.model_gstencils;
    snprintf(out->method, sizeof out->method, "%s", spx_stencil_method_name(r.plan.method));
    snprintf(out->why, sizeof out->why, "%s", r.plan.why);
  }
  return s;
}

/* A pinned (CUDA) or plain (host) grid of `bytes`, for arrays the stencil runs on without staging. */
spx_status spx_py_stencil_grid_alloc(spx_context *ctx, int64_t nx, int64_t ny, int64_t nz, int dtype,
                                     void **out) {
  spx_stencil p;
  spx_status s;
  if (out) *out = NULL;
  if ((s = spx_stencil_init(&p, nx, ny, nz, (spx_dtype)dtype, 0, 0, 0, 0))) return s;
  return spx_stencil_grid_alloc(ctx, &p, NULL, out);
}
