/* SPDX-License-Identifier: BSD-3-Clause */
/* The particle kernels on the GPU (particles.cu, embedded by the build as particles_cu.h): device
 * arrays, the JIT (spx_jit_template_add, spx_jit_kernel), launches (spx_context_launch on the
 * solver's context and stream), phase timers (spx_timer: device events), and the twin check that
 * compares every array with the host kernels' to the bit. Only the public spx headers are used. */
#include "mps.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_abi.h"
#include "particles_cu.h" /* mps_particles_cu: particles.cu as string literals */

/* The kernels of particles.cu, in launch order. ORDER: the enum below indexes fn[]. */
#define MPS_GPU_KERNELS(_)                                                                         \
  _(zero) _(key) _(scan_tile) _(scan_sums) _(scan_add) _(place) _(cellsort) _(permute) _(explicit)  \
  _(take) _(collision) _(density) _(rows) _(count) _(rowptr) _(fill) _(pressure) _(pmin)            \
  _(gradient) _(update)

#define MPS_K_ENUM(name) K_##name,
#define MPS_K_NAME(name) "mps_g_" #name,
enum { MPS_GPU_KERNELS(MPS_K_ENUM) K_COUNT };
static const char *const kernel_names[K_COUNT] = {MPS_GPU_KERNELS(MPS_K_NAME)};

enum { BLOCK = 256 };
/* device phases (events), and the CSR's download (wall: the copies are synchronous) */
enum { PH_SORT, PH_MOVE, PH_BUILD, PH_CORRECT, PH_DOWNLOAD, PH_COUNT };

struct mps_gpu {
  spx_context *ctx;
  void *fn[K_COUNT];
  mps_dev d;
  int d3; /* 3-D: the z arrays, and the kernels compiled with SPX_MPS_DIM=3 */
  int64_t n, ncell, cap_nnz, nrows, nnz, row_max;
  int *part, *pmax; /* the scans' tile sums and tile maxima (tiles + 1 each) */
  spx_timer *timer;
  double ms[PH_COUNT]; /* milliseconds by phase, summed over steps */
};

/* sizeof(mps_dev) is the same for the C compiler and NVRTC (8-byte members, then 4-byte ones). */
enum { MPS_DEV_POINTERS = 41 };
typedef char mps_dev_layout_check[sizeof(mps_dev) == (MPS_DEV_POINTERS + 22) * 8 + 4 * 4 &&
                                          offsetof(mps_dev, l0) == MPS_DEV_POINTERS * sizeof(void *)
                                      ? 1
                                      : -1];

static int fail(const char *what) {
  fprintf(stderr, "mps: %s: %s\n", what, spx_last_error());
  return 1;
}

/* particles.cu as one string (the embedded lines joined); NULL out of memory. */
static char *source(void) {
  size_t len = 1, k;
  char *s, *at;
  for (k = 0; mps_particles_cu[k]; k++) len += strlen(mps_particles_cu[k]);
  if (!(s = malloc(len))) return NULL;
  for (at = s, k = 0; mps_particles_cu[k]; k++) at += strlen(strcpy(at, mps_particles_cu[k]));
  *at = 0;
  return s;
}

static spx_status add_template(void) {
  char *src = source();
  spx_status st;
  if (!src) return SPX_OUT_OF_MEMORY;
  st = spx_jit_template_add("mps_particles", src);
  free(src);
  return st;
}

/* The JIT define of each dimension (particles.cu: SPX_MPS_DIM), indexed by d3. */
static const char *const dim_define[2] = {"SPX_MPS_DIM=2", "SPX_MPS_DIM=3"};

int mps_gpu_compile_check(const char *archs) {
  char arch[32];
  const char *a = archs;
  spx_status st;
  if ((st = add_template())) return fail("adding particles.cu to the JIT");
  while (*a) {
    size_t len = strcspn(a, ",");
    int d3;
    snprintf(arch, sizeof arch, "%.*s", (int)(len < sizeof arch ? len : sizeof arch - 1), a);
    for (d3 = 0; d3 < 2; d3++) {
      int origin = 0;
      st = spx_jit_compile_only("mps_particles", 1, &dim_define[d3], arch, &origin);
      if (st == SPX_NOT_AVAILABLE) {
        printf("mps: NVRTC is not available here (%s): compile check skipped\n", spx_last_error());
        return 77;
      }
      if (st) return fail(arch);
      printf("particles.cu: %d kernels compiled by NVRTC for %s, %d-D (%s)\n", K_COUNT, arch, 2 + d3,
             origin == SPX_JIT_COMPILED ? "compiled now" : "from the cache");
    }
    a += len + (a[len] == ',');
  }
  return 0;
}

/* ---- device memory ----------------------------------------------------------------------------- */
static int dalloc(mps_gpu *g, void *ptr, size_t bytes) {
  spx_devptr p = 0;
  void *v;
  if (spx_device_alloc(g->ctx, bytes ? bytes : 8, &p)) return fail("device memory");
  v = (void *)(uintptr_t)p;
  memcpy(ptr, &v, sizeof v); /* ptr: the address of one of mps_dev's pointer members */
  return 0;
}

static spx_devptr dp(const void *p) { return (spx_devptr)(uintptr_t)p; }

static void dfree(mps_gpu *g, void *p) {
  if (p) spx_device_free(g->ctx, dp(p));
}

static int up(mps_gpu *g, void *dst, const void *src, size_t bytes) {
  return spx_device_upload(g->ctx, dp(dst), src, bytes) ? fail("upload") : 0;
}

static int down(mps_gpu *g, void *dst, const void *src, size_t bytes) {
  return bytes && spx_device_download(g->ctx, dst, dp(src), bytes) ? fail("download") : 0;
}

/* Tiles of a scan over n entries (at least one: the scan of nothing writes its total, 0). */
static int64_t tiles(int64_t n) { return n > 0 ? (n + MPS_TILE - 1) / MPS_TILE : 1; }

/* Every particle array, both sets, the grid's and the scans' (the CSR's grow in mps_gpu_ppe). */
static int alloc_all(mps_gpu *g) {
  mps_dev *d = &g->d;
  size_t n = (size_t)g->n, n1 = n + 1, c1 = (size_t)g->ncell + 1, D = sizeof(double), I = sizeof(int);
  size_t t1 = (size_t)tiles(g->n > g->ncell ? g->n : g->ncell) + 1;
  return dalloc(g, &d->id, n * I) || dalloc(g, &d->row, n * I) || dalloc(g, &d->type, n) || dalloc(g, &d->bc, n) ||
         dalloc(g, &d->x, n * D) || dalloc(g, &d->y, n * D) || dalloc(g, &d->u, n * D) || dalloc(g, &d->v, n * D) ||
         dalloc(g, &d->p, n * D) || dalloc(g, &d->nd, n * D) || dalloc(g, &d->pmin, n * D) ||
         dalloc(g, &d->ax, n * D) || dalloc(g, &d->ay, n * D) || dalloc(g, &d->id2, n * I) ||
         dalloc(g, &d->type2, n) || dalloc(g, &d->x2, n * D) || dalloc(g, &d->y2, n * D) ||
         dalloc(g, &d->u2, n * D) || dalloc(g, &d->v2, n * D) || dalloc(g, &d->p2, n * D) ||
         dalloc(g, &d->start, c1 * I) || dalloc(g, &d->count, c1 * I) || dalloc(g, &d->fill, c1 * I) ||
         dalloc(g, &d->key, n * I) || dalloc(g, &d->cell, n * I) || dalloc(g, &d->perm, n * I) ||
         dalloc(g, &d->flag, n1 * I) || dalloc(g, &d->rowscan, n1 * I) || dalloc(g, &d->len, n1 * I) ||
         dalloc(g, &d->offs, n1 * I) || dalloc(g, &d->row_ptr, n1 * I) || dalloc(g, &d->b, n1 * D) ||
         dalloc(g, &d->sol, n1 * D) || dalloc(g, &d->row_ptr64, n1 * sizeof(long long)) ||
         dalloc(g, &g->part, t1 * I) || dalloc(g, &g->pmax, t1 * I) ||
         (g->d3 && (dalloc(g, &d->z, n * D) || dalloc(g, &d->w, n * D) || dalloc(g, &d->az, n * D) ||
                    dalloc(g, &d->z2, n * D) || dalloc(g, &d->w2, n * D)));
}

/* The host particles as they are now (every array, scratch included, so that the twin check
 * compares like with like from the first step). */
int mps_gpu_upload(mps_gpu *g, const mps_particles *s) {
  mps_dev *d = &g->d;
  size_t n = (size_t)g->n, D = sizeof(double), I = sizeof(int);
  return up(g, d->id, s->id, n * I) || up(g, d->row, s->row, n * I) || up(g, d->type, s->type, n) ||
         up(g, d->bc, s->bc, n) || up(g, d->x, s->x, n * D) || up(g, d->y, s->y, n * D) || up(g, d->u, s->u, n * D) ||
         up(g, d->v, s->v, n * D) || up(g, d->p, s->p, n * D) || up(g, d->nd, s->nd, n * D) ||
         up(g, d->pmin, s->pmin, n * D) || up(g, d->ax, s->ax, n * D) || up(g, d->ay, s->ay, n * D) ||
         (g->d3 && (up(g, d->z, s->z, n * D) || up(g, d->w, s->w, n * D) || up(g, d->az, s->az, n * D)));
}

void mps_gpu_free(mps_gpu *g) {
  void *ptrs[MPS_DEV_POINTERS];
  int k;
  if (!g) return;
  memcpy(ptrs, &g->d, sizeof ptrs); /* mps_dev's pointer members, which come first */
  for (k = 0; k < MPS_DEV_POINTERS; k++) dfree(g, ptrs[k]);
  dfree(g, g->part);
  dfree(g, g->pmax);
  spx_timer_destroy(g->timer);
  free(g);
}

int mps_gpu_init(mps_gpu **out, spx_context *ctx, const mps_particles *s, const mps_grid *grid, const mps_params *p) {
  mps_gpu *g;
  spx_status st;
  int k;
  *out = NULL;
  if (spx_context_backend(ctx) != SPX_BACKEND_CUDA) {
    fprintf(stderr, "mps: --particles gpu needs a GPU; this run has the host backend\n");
    return 77;
  }
  if ((p->dim == 3) != (s->z != NULL)) {
    fprintf(stderr, "mps: the GPU particle kernels: dim %d with%s z arrays\n", p->dim, s->z ? "" : "out");
    return 1;
  }
  if (!(g = calloc(1, sizeof *g))) return 1;
  g->ctx = ctx;
  g->d3 = p->dim == 3;
  g->n = s->n;
  g->ncell = (int64_t)grid->nx * grid->ny * grid->nz + 1;
  if ((st = add_template())) return mps_gpu_free(g), fail("adding particles.cu to the JIT");
  for (k = 0; k < K_COUNT; k++)
    if (spx_jit_kernel(ctx, "mps_particles", kernel_names[k], 1, &dim_define[g->d3], &g->fn[k]))
      return mps_gpu_free(g), fail(kernel_names[k]);
  if (spx_timer_create(ctx, &g->timer)) return mps_gpu_free(g), fail("timer");
  g->d.l0 = p->l0; g->d.dt = p->dt; g->d.rho = p->rho; g->d.nu = p->nu; g->d.g = p->g;
  g->d.re_n = p->re_n; g->d.re_grad = p->re_grad; g->d.re_lap = p->re_lap; g->d.beta = p->beta;
  g->d.collision = p->collision; g->d.restitution = p->restitution; g->d.compressibility = p->compressibility;
  g->d.relax = p->relax; g->d.n0_n = p->n0_n; g->d.n0_grad = p->n0_grad; g->d.n0_lap = p->n0_lap;
  g->d.lambda = p->lambda; g->d.x0 = grid->x0; g->d.y0 = grid->y0; g->d.z0 = grid->z0; g->d.h = grid->h;
  g->d.n = (long long)s->n; g->d.nx = grid->nx; g->d.ny = grid->ny; g->d.nz = grid->nz; g->d.mixed = p->mixed;
  if (alloc_all(g) || mps_gpu_upload(g, s)) return mps_gpu_free(g), 1;
  *out = g;
  return 0;
}

/* ---- launches ------------------------------------------------------------------------------------ */
/* kernel k over `threads` threads (one per particle or cell), BLOCK a block */
static int launch(mps_gpu *g, int k, int64_t threads, void **args) {
  unsigned grid[3] = {1, 1, 1}, block[3] = {BLOCK, 1, 1};
  grid[0] = (unsigned)(threads > 0 ? (threads + BLOCK - 1) / BLOCK : 1);
  return spx_context_launch(g->ctx, g->fn[k], grid, block, 0, args) ? fail(kernel_names[k]) : 0;
}

static int run_d(mps_gpu *g, int k, int64_t threads) {
  void *args[1] = {&g->d};
  return launch(g, k, threads, args);
}

/* Exclusive scan of in[0..n) (non-negative) into out[0..n], out[n] the total, over as many blocks
 * as the tiles (particles.cu, SCANS); with maxes the largest entry lands in g->pmax[tiles]. */
static int scan(mps_gpu *g, int *in, int *out, int64_t n, int maxes) {
  const unsigned tile_block[3] = {MPS_TILE_THREADS, 1, 1}, one[3] = {1, 1, 1}, sums_block[3] = {MPS_SCAN_THREADS, 1, 1};
  unsigned grid[3] = {1, 1, 1};
  long long nn = n, nb = tiles(n);
  int *mx = maxes ? g->pmax : NULL;
  void *a_tile[4] = {&in, &nn, &g->part, &mx}, *a_sums[3] = {&g->part, &nb, &mx}, *a_add[4] = {&in, &out, &nn, &g->part};
  grid[0] = (unsigned)nb;
  if (spx_context_launch(g->ctx, g->fn[K_scan_tile], grid, tile_block, 0, a_tile)) return fail("mps_g_scan_tile");
  if (spx_context_launch(g->ctx, g->fn[K_scan_sums], one, sums_block, 0, a_sums)) return fail("mps_g_scan_sums");
  return spx_context_launch(g->ctx, g->fn[K_scan_add], grid, tile_block, 0, a_add) ? fail("mps_g_scan_add") : 0;
}

static int zero(mps_gpu *g, int *a, int64_t n) {
  long long nn = n;
  void *args[2] = {&a, &nn};
  return launch(g, K_zero, n, args);
}

static int timer_start(mps_gpu *g) { return spx_timer_start(g->timer) ? fail("timer") : 0; }
static int timer_stop(mps_gpu *g, int phase) {
  double ms = 0;
  if (spx_timer_stop(g->timer, &ms)) return fail("timer");
  g->ms[phase] += ms;
  return 0;
}

#define SWAP(T, a, b) do { T t_ = (a); (a) = (b); (b) = t_; } while (0)

/* grid.c mps_grid_sort: keys and counts (and ghost flags), the starts (scan), the ghosts' ranks
 * (scan), slots, the stable order inside each cell, the permutation into the second set of arrays,
 * then the sets swap. */
int mps_gpu_sort(mps_gpu *g) {
  mps_dev *d = &g->d;
  if (timer_start(g) || zero(g, d->count, g->ncell) || zero(g, d->fill, g->ncell) || run_d(g, K_key, g->n) ||
      scan(g, d->count, d->start, g->ncell, 0) || scan(g, d->flag, d->rowscan, g->n, 0) || run_d(g, K_place, g->n) ||
      run_d(g, K_cellsort, g->ncell) || run_d(g, K_permute, g->n))
    return 1;
  SWAP(int *, d->id, d->id2);
  SWAP(signed char *, d->type, d->type2);
  SWAP(double *, d->x, d->x2);
  SWAP(double *, d->y, d->y2);
  SWAP(double *, d->u, d->u2);
  SWAP(double *, d->v, d->v2);
  SWAP(double *, d->p, d->p2);
  SWAP(double *, d->z, d->z2); /* NULL with NULL in 2-D */
  SWAP(double *, d->w, d->w2);
  return timer_stop(g, PH_SORT);
}

static int take(mps_gpu *g, int whole) {
  void *args[2] = {&g->d, &whole};
  return launch(g, K_take, g->n, args);
}

/* kernels.c mps_explicit then mps_collision */
int mps_gpu_move(mps_gpu *g) {
  return timer_start(g) || run_d(g, K_explicit, g->n) || take(g, 1) || run_d(g, K_collision, g->n) || take(g, 0) ||
         timer_stop(g, PH_MOVE);
}

/* kernels.c mps_density and ppe.c mps_ppe_build: the CSR lives on the device (32-bit row
 * pointers, and 64-bit ones for the host's spx_csr); nrows, nnz and the longest row come back to
 * the host (12 bytes: the CSR's size, and what the lagged choice needs). */
int mps_gpu_ppe(mps_gpu *g) {
  mps_dev *d = &g->d;
  int tot[3];
  if (timer_start(g) || run_d(g, K_density, g->n) || scan(g, d->flag, d->rowscan, g->n, 0) ||
      run_d(g, K_rows, g->n) || run_d(g, K_count, g->n) || scan(g, d->len, d->offs, g->n, 1) ||
      run_d(g, K_rowptr, g->n) || down(g, &tot[0], d->rowscan + g->n, sizeof(int)) ||
      down(g, &tot[1], d->offs + g->n, sizeof(int)) || down(g, &tot[2], g->pmax + tiles(g->n), sizeof(int)))
    return 1;
  if (tot[0] < 0 || tot[1] < 0) { /* a scan's total past 2^31 - 1 (mps_g_scan_sums) */
    fprintf(stderr, "mps: the PPE has more than 2^31 - 1 nonzeros: past the 32-bit row pointers\n");
    return 1;
  }
  g->nrows = tot[0];
  g->nnz = tot[1];
  g->row_max = tot[2];
  if (g->nnz > g->cap_nnz) {
    int64_t cap = g->nnz + g->nnz / 4 + 64;
    dfree(g, d->col);
    dfree(g, d->val);
    d->col = NULL;
    d->val = NULL;
    if (dalloc(g, &d->col, (size_t)cap * sizeof(int)) || dalloc(g, &d->val, (size_t)cap * sizeof(double))) return 1;
    g->cap_nnz = cap;
  }
  return run_d(g, K_fill, g->n) || timer_stop(g, PH_BUILD);
}

/* The CSR built last into e (row_ptr from the 64-bit copy: no widening pass), for spx_plan_create
 * and the checks; timed apart from the build (wall: each download is synchronous). */
int mps_gpu_ppe_download(mps_gpu *g, mps_ppe *e) {
  mps_dev *d = &g->d;
  double t0 = mps_now();
  if (mps_ppe_reserve(e, g->nrows, g->nnz)) return fprintf(stderr, "mps: out of memory\n"), 1;
  if (down(g, e->row_ptr, d->row_ptr64, (size_t)(g->nrows + 1) * sizeof(long long)) ||
      down(g, e->col, d->col, (size_t)g->nnz * sizeof(int)) || down(g, e->val, d->val, (size_t)g->nnz * sizeof(double)))
    return 1;
  mps_ppe_view(e, g->nrows, g->nnz);
  e->row_max = g->row_max;
  g->ms[PH_DOWNLOAD] += 1e3 * (mps_now() - t0);
  return 0;
}

int64_t mps_gpu_rows(const mps_gpu *g) { return g->nrows; }

/* The CSR built last, as the device arrays spx_plan_create_device takes (32-bit row pointers). */
void mps_gpu_dcsr(const mps_gpu *g, spx_dcsr *a, int64_t *row_max) {
  memset(a, 0, sizeof *a);
  a->nrows = a->ncols = g->nrows;
  a->nnz = g->nnz;
  a->dtype = SPX_DOUBLE;
  a->row_ptr = dp(g->d.row_ptr);
  a->col_idx = dp(g->d.col);
  a->val = dp(g->d.val);
  *row_max = g->row_max;
}

/* The right-hand side and the guess / solution on the device (nrows doubles each). */
void mps_gpu_vectors(mps_gpu *g, void **b, void **x) {
  *b = g->d.b;
  *x = g->d.sol;
}

/* kernels.c mps_correct on the solution in the device's sol (x == NULL), or on the host's x
 * (uploaded first: the twin check feeds both sides the same solution). */
int mps_gpu_correct(mps_gpu *g, const double *x) {
  if (x && g->nrows && up(g, g->d.sol, x, (size_t)g->nrows * sizeof(double))) return 1;
  return timer_start(g) || run_d(g, K_pressure, g->n) || run_d(g, K_pmin, g->n) || run_d(g, K_gradient, g->n) ||
         run_d(g, K_update, g->n) || timer_stop(g, PH_CORRECT);
}

/* What the host's output needs (id, type, x, y, u, v, p; 3-D: z, w), or with all every array the
 * kernels write, into s (of the same n; 3-D: with its z arrays). */
int mps_gpu_download(mps_gpu *g, mps_particles *s, int all) {
  mps_dev *d = &g->d;
  size_t n = (size_t)g->n, D = sizeof(double), I = sizeof(int);
  if (down(g, s->id, d->id, n * I) || down(g, s->type, d->type, n) || down(g, s->x, d->x, n * D) ||
      down(g, s->y, d->y, n * D) || down(g, s->u, d->u, n * D) || down(g, s->v, d->v, n * D) ||
      down(g, s->p, d->p, n * D) || (g->d3 && (down(g, s->z, d->z, n * D) || down(g, s->w, d->w, n * D))))
    return 1;
  if (!all) return 0;
  return down(g, s->row, d->row, n * I) || down(g, s->bc, d->bc, n) || down(g, s->nd, d->nd, n * D) ||
         down(g, s->pmin, d->pmin, n * D) || down(g, s->ax, d->ax, n * D) || down(g, s->ay, d->ay, n * D) ||
         (g->d3 && down(g, s->az, d->az, n * D));
}

typedef char mps_phases_check[(int)PH_COUNT == (int)MPS_GPU_PHASES ? 1 : -1]; /* mps.h's count and order */
void mps_gpu_times(const mps_gpu *g, double ms[MPS_GPU_PHASES]) {
  memcpy(ms, g->ms, MPS_GPU_PHASES * sizeof *ms); /* PH_SORT .. PH_DOWNLOAD, mps.h's order */
}

/* ---- the twin check ------------------------------------------------------------------------------ */
/* First index where two arrays differ in their bytes, or -1. */
static int64_t first_diff(const void *a, const void *b, int64_t n, size_t size) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  int64_t i;
  for (i = 0; i < n; i++)
    if (memcmp(p + (size_t)i * size, q + (size_t)i * size, size)) return i;
  return -1;
}

static int differs(const char *phase, int64_t step, const char *name, const void *host, const void *dev, int64_t n,
                   size_t size) {
  int64_t i = first_diff(host, dev, n, size);
  if (i < 0) return 0;
  if (size == sizeof(double))
    fprintf(stderr, "mps: twin check, step %lld after %s: %s[%lld] host %.17g, GPU %.17g\n", (long long)step, phase,
            name, (long long)i, ((const double *)host)[i], ((const double *)dev)[i]);
  else
    fprintf(stderr, "mps: twin check, step %lld after %s: %s[%lld] differs (host %lld, GPU %lld)\n", (long long)step,
            phase, name, (long long)i,
            size == 1 ? (long long)((const int8_t *)host)[i] : size == 4 ? (long long)((const int32_t *)host)[i]
                                                                          : (long long)((const int64_t *)host)[i],
            size == 1 ? (long long)((const int8_t *)dev)[i] : size == 4 ? (long long)((const int32_t *)dev)[i]
                                                                         : (long long)((const int64_t *)dev)[i]);
  return 1;
}

/* Every particle array (tmp: scratch particles of the same n), the grid after a sort, the CSR, its
 * right-hand side and guess after a build (e: the host's), each against the host's to the bit. 0
 * equal, 1 a difference (printed). */
int mps_gpu_compare(mps_gpu *g, const mps_particles *s, const mps_grid *grid, const mps_ppe *e, mps_particles *tmp,
                    const char *phase, int64_t step) {
  int64_t n = s->n, c1 = g->ncell + 1;
  int bad = 0;
  if (mps_gpu_download(g, tmp, 1)) return 1;
#define CMP(arr, type) bad |= differs(phase, step, #arr, s->arr, tmp->arr, n, sizeof(type))
  CMP(id, int32_t); CMP(type, int8_t); CMP(bc, int8_t); CMP(row, int32_t);
  CMP(x, double); CMP(y, double); CMP(u, double); CMP(v, double); CMP(p, double);
  CMP(nd, double); CMP(pmin, double); CMP(ax, double); CMP(ay, double);
  if (g->d3) {
    CMP(z, double); CMP(w, double); CMP(az, double);
  }
#undef CMP
  if (grid) {
    int32_t *st = malloc((size_t)c1 * sizeof *st), *cell = malloc((size_t)(n ? n : 1) * sizeof *cell);
    if (!st || !cell || down(g, st, g->d.start, (size_t)c1 * sizeof *st) ||
        down(g, cell, g->d.cell, (size_t)n * sizeof *cell))
      bad = 1;
    else
      bad |= differs(phase, step, "grid start", grid->start, st, c1, 4) | differs(phase, step, "grid cell", grid->cell, cell, n, 4);
    free(st);
    free(cell);
  }
  if (e) {
    int64_t nr = e->a.nrows, nz = e->a.nnz, i;
    int32_t *rp = malloc((size_t)(nr + 1) * 4), *col = malloc((size_t)(nz ? nz : 1) * 4);
    int64_t *rp64 = malloc((size_t)(nr + 1) * 8), *rpd = malloc((size_t)(nr + 1) * 8);
    double *val = malloc((size_t)(nz ? nz : 1) * 8), *b = malloc((size_t)(nr ? nr : 1) * 8);
    if (nr != g->nrows || nz != g->nnz || e->row_max != g->row_max) {
      fprintf(stderr, "mps: twin check, step %lld: host PPE %lld rows %lld nonzeros (longest row %lld), GPU %lld "
              "rows %lld nonzeros (longest row %lld)\n", (long long)step, (long long)nr, (long long)nz,
              (long long)e->row_max, (long long)g->nrows, (long long)g->nnz, (long long)g->row_max);
      bad = 1;
    } else if (!rp || !col || !rp64 || !rpd || !val || !b || down(g, rp, g->d.row_ptr, (size_t)(nr + 1) * 4) ||
               down(g, rpd, g->d.row_ptr64, (size_t)(nr + 1) * 8) || down(g, col, g->d.col, (size_t)nz * 4) ||
               down(g, val, g->d.val, (size_t)nz * 8)) {
      bad = 1;
    } else {
      for (i = 0; i <= nr; i++) rp64[i] = rp[i];
      bad |= differs(phase, step, "PPE row_ptr", e->row_ptr, rp64, nr + 1, 8);
      bad |= differs(phase, step, "PPE row_ptr (64-bit)", e->row_ptr, rpd, nr + 1, 8);
      bad |= differs(phase, step, "PPE col", e->col, col, nz, 4) | differs(phase, step, "PPE val", e->val, val, nz, 8);
      if (down(g, b, g->d.b, (size_t)nr * 8)) bad = 1;
      else bad |= differs(phase, step, "PPE b", e->b, b, nr, 8);
      if (down(g, b, g->d.sol, (size_t)nr * 8)) bad = 1;
      else bad |= differs(phase, step, "PPE guess", e->x, b, nr, 8);
    }
    free(rp); free(col); free(rp64); free(rpd); free(val); free(b);
  }
  return bad;
}
