/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/stencil.h: the host reference against an analytic solution, the capacity formula,
 * the planner's slab counts and errors, every out-of-core method's schedule on the host backend
 * (bitwise the in-core result), the NVRTC compile of the kernels, the one-step kernel's x cells
 * per thread (plan, environment, JIT key), and the GPU runs (skipped without a GPU). */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "spx_test.h"
#include "spx_test_env.h" /* env_put */

static const double pi = 3.14159265358979323846;

/* Fresh random values (never all zero) in a grid of p's type. */
static void *rand_grid(const spx_stencil *p) {
  int64_t n = p->nx * p->ny * p->nz, i;
  void *g = malloc((size_t)n * SPX_DTYPE_SIZE(p->dtype));
  assert_non_null(g);
  for (i = 0; i < n; i++) {
    double v = spx_test_rand();
    if (p->dtype == SPX_FLOAT) ((float *)g)[i] = (float)v;
    else ((double *)g)[i] = v;
  }
  return g;
}

static size_t grid_bytes(const spx_stencil *p) {
  return (size_t)(p->nx * p->ny * p->nz) * SPX_DTYPE_SIZE(p->dtype);
}

static spx_context *host_ctx(void) {
  spx_context *h = NULL;
  spx_context_options co = {SPX_BACKEND_HOST, 0};
  assert_int_equal(spx_context_create(&co, &h), SPX_OK);
  return h;
}

/* ---- Names and sizes ---------------------------------------------------------------------------- */
static void test_init_and_names(void **state) {
  spx_stencil p;
  spx_stencil_method m;
  int i;
  (void)state;
  assert_int_equal(spx_stencil_init(&p, 2, 10, 10, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "2 x 10 x 10"));
  assert_int_equal(spx_stencil_init(&p, 10, 0, 10, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_init(&p, 10, 10, -5, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_init(&p, 10, 10, 10, (spx_dtype)77, 0.4, 0.1, 0.1, 0.1), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_init(&p, 3, 3, 3, SPX_FLOAT, 0.4, 0.1, 0.2, 0.3), SPX_OK);
  assert_true(p.c[1] == 0.1 && p.c[2] == 0.1 && p.c[3] == 0.2 && p.c[4] == 0.2 && p.c[5] == 0.3 && p.c[6] == 0.3);
  for (i = 0; i < SPX_STENCIL_METHOD_COUNT; i++) {
    assert_int_equal(spx_stencil_method_parse(spx_stencil_method_name((spx_stencil_method)i), &m), SPX_OK);
    assert_int_equal((int)m, i);
  }
  assert_int_equal(SPX_STENCIL_OVERLAP, 0); /* the default */
  assert_string_equal(spx_stencil_method_name(SPX_STENCIL_METHOD_COUNT), "unknown");
  assert_int_equal(spx_stencil_method_parse("mmtx", &m), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "mmtb"));
}

/* ---- Host reference vs the analytic solution --------------------------------------------------- */
/* u = sin(pi kx x/(nx-1)) sin(pi ky y/(ny-1)) sin(pi kz z/(nz-1)) with a zero boundary is an
 * eigenfunction of the 7-point operator: one step multiplies it by
 * lambda = c0 + 2 cx cos(pi kx/(nx-1)) + 2 cy cos(pi ky/(ny-1)) + 2 cz cos(pi kz/(nz-1)). */
static void analytic_case(spx_dtype dt, int64_t nx, int64_t ny, int64_t nz, int kx, int ky, int kz, int64_t T,
                          double tol) {
  spx_stencil p;
  const double c0 = 0.34, cx = 0.12, cy = 0.09, cz = 0.12;
  double lambda, f, maxerr = 0, maxval = 0;
  int64_t x, y, z, i;
  void *g;
  assert_int_equal(spx_stencil_init(&p, nx, ny, nz, dt, c0, cx, cy, cz), SPX_OK);
  g = malloc(grid_bytes(&p));
  assert_non_null(g);
  for (z = 0; z < nz; z++)
    for (y = 0; y < ny; y++)
      for (x = 0; x < nx; x++) {
        int bnd = x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1;
        double v = bnd ? 0.0
                       : sin(pi * kx * (double)x / (double)(nx - 1)) * sin(pi * ky * (double)y / (double)(ny - 1)) *
                             sin(pi * kz * (double)z / (double)(nz - 1));
        i = (z * ny + y) * nx + x;
        if (dt == SPX_FLOAT) ((float *)g)[i] = (float)v;
        else ((double *)g)[i] = v;
      }
  assert_int_equal(spx_stencil_reference(&p, g, T), SPX_OK);
  lambda = c0 + 2 * cx * cos(pi * kx / (double)(nx - 1)) + 2 * cy * cos(pi * ky / (double)(ny - 1)) +
           2 * cz * cos(pi * kz / (double)(nz - 1));
  f = pow(lambda, (double)T);
  for (z = 0; z < nz; z++)
    for (y = 0; y < ny; y++)
      for (x = 0; x < nx; x++) {
        int bnd = x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1;
        double want = bnd ? 0.0
                          : f * sin(pi * kx * (double)x / (double)(nx - 1)) * sin(pi * ky * (double)y / (double)(ny - 1)) *
                                sin(pi * kz * (double)z / (double)(nz - 1));
        double got;
        i = (z * ny + y) * nx + x;
        got = dt == SPX_FLOAT ? (double)((float *)g)[i] : ((double *)g)[i];
        if (got != got) fail_msg("NaN at (%lld, %lld, %lld)", (long long)x, (long long)y, (long long)z);
        if (fabs(got - want) > maxerr) maxerr = fabs(got - want);
        if (fabs(want) > maxval) maxval = fabs(want);
      }
  assert_true(maxval > 1e-3); /* the mode has not decayed to nothing: the check has teeth */
  if (maxerr > tol * maxval)
    fail_msg("%s %lldx%lldx%lld mode (%d,%d,%d) after %lld steps: error %.3g of %.3g (lambda %.6f)",
             spx_dtype_name(dt), (long long)nx, (long long)ny, (long long)nz, kx, ky, kz, (long long)T, maxerr,
             maxval, lambda);
  free(g);
}

static void test_reference_analytic(void **state) {
  (void)state;
  analytic_case(SPX_DOUBLE, 17, 13, 11, 1, 1, 1, 25, 1e-12);
  analytic_case(SPX_DOUBLE, 12, 9, 20, 2, 1, 3, 40, 1e-12);
  analytic_case(SPX_FLOAT, 17, 13, 11, 1, 2, 1, 10, 2e-5);
}

/* The reference is one step at a time: T steps equal T calls of one step (bitwise), and the boundary
 * never changes. */
static void test_reference_steps(void **state) {
  spx_stencil p;
  void *a, *b;
  int64_t t, x, y, z;
  (void)state;
  assert_int_equal(spx_stencil_init(&p, 9, 7, 8, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  a = rand_grid(&p);
  b = malloc(grid_bytes(&p));
  memcpy(b, a, grid_bytes(&p));
  assert_int_equal(spx_stencil_reference(&p, a, 5), SPX_OK);
  for (t = 0; t < 5; t++) assert_int_equal(spx_stencil_reference(&p, b, 1), SPX_OK);
  assert_memory_equal(a, b, grid_bytes(&p));
  memcpy(b, a, grid_bytes(&p));
  assert_int_equal(spx_stencil_reference(&p, a, 3), SPX_OK);
  for (z = 0; z < p.nz; z++)
    for (y = 0; y < p.ny; y++)
      for (x = 0; x < p.nx; x++) {
        int64_t i = (z * p.ny + y) * p.nx + x;
        int bnd = x == 0 || y == 0 || z == 0 || x == p.nx - 1 || y == p.ny - 1 || z == p.nz - 1;
        if (bnd) assert_true(((double *)a)[i] == ((double *)b)[i]);
        else assert_true(((double *)a)[i] != ((double *)b)[i]);
      }
  assert_int_equal(spx_stencil_reference(&p, NULL, 3), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_reference(&p, a, -1), SPX_INVALID_ARGUMENT);
  free(a);
  free(b);
}

/* ---- Capacity ----------------------------------------------------------------------------------- */
static void test_capacity(void **state) {
  spx_stencil p, q;
  int64_t b;
  (void)state;
  /* 10 x 10 x 50 doubles: 800 bytes a plane, 48 interior planes. */
  assert_int_equal(spx_stencil_init(&p, 10, 10, 50, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_NORMAL, 1, 1, 10, &b), SPX_OK);
  assert_int_equal(b, 2 * (10 + 2) * 800);                    /* 19200 */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MM, 1, 3, 10, &b), SPX_OK);
  assert_int_equal(b, 25600);                                 /* 2 (10 + 2*3) planes */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MMT, 2, 4, 10, &b), SPX_OK);
  assert_int_equal(b, 28800);                                 /* 2 (10 + 8) */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MMTB, 2, 4, 10, &b), SPX_OK);
  assert_int_equal(b, 27200);                                 /* 2 (10 + 4 + 2 + 1) = 34 */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MMTB, 4, 8, 10, &b), SPX_OK);
  assert_int_equal(b, 36800);                                 /* 2 (10 + 8 + 4 + 1) = 46 */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MMTB, 1, 8, 10, &b), SPX_OK);
  assert_int_equal(b, 32000);                                 /* 2 (10 + 8 + 1 + 1) */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_OVERLAP, 2, 4, 10, &b), SPX_OK);
  assert_int_equal(b, 44800);                                 /* 2 (2*10 + 4 + 2 + 2) = 56 */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_OVERLAP, 2, 4, 47, &b), SPX_OK);
  assert_int_equal(b, 163200);                                /* 2 (2*47 + 4 + 2 + 2) = 204 > 2 nz */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_OVERLAP, 2, 4, 48, &b), SPX_OK);
  assert_int_equal(b, 80000);                                 /* one slab: the domain, 2 * 50 */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_INCORE, 2, 1, 48, &b), SPX_OK);
  assert_int_equal(b, 80000);                                 /* 2 * 50 */
  /* Windows never exceed the domain: a whole-domain slab of normal is two grids. */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_NORMAL, 1, 1, 48, &b), SPX_OK);
  assert_int_equal(b, 80000);
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MM, 1, 5, 48, &b), SPX_OK);
  assert_int_equal(b, 80000);
  /* Float: half the bytes. */
  q = p;
  q.dtype = SPX_FLOAT;
  assert_int_equal(spx_stencil_capacity(&q, SPX_STENCIL_MMTB, 2, 4, 10, &b), SPX_OK);
  assert_int_equal(b, 13600);
  /* Bad arguments. */
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MMTB, 3, 4, 10, &b), SPX_INVALID_ARGUMENT);
  assert_int_equal(b, 0);
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MMTB, 2, 0, 10, &b), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MMTB, 2, 4, 49, &b), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MMTB, 2, 4, 0, &b), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_METHOD_COUNT, 2, 4, 10, &b), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_MMTB, 2, 4, 10, NULL), SPX_INVALID_ARGUMENT);
}

/* ---- Planner ------------------------------------------------------------------------------------ */
/* The options that force `nslabs` slabs of method m at depth d and tts R on p: the budget is the
 * capacity of the slab size ceil(Z / nslabs), and the slab is that size (overlap would otherwise
 * weigh thinner slabs against its pipeline fill). */
static spx_stencil_options forced(const spx_stencil *p, spx_stencil_method m, int d, int64_t R, int64_t nslabs) {
  spx_stencil_options o;
  int64_t Z = p->nz - 2, Ds = (Z + nslabs - 1) / nslabs, b;
  memset(&o, 0, sizeof o);
  o.method = m;
  o.depth = m == SPX_STENCIL_NORMAL || m == SPX_STENCIL_MM ? 0 : d;
  o.tts = R;
  assert_int_equal(spx_stencil_capacity(p, m, m == SPX_STENCIL_NORMAL || m == SPX_STENCIL_MM ? 1 : d, R, Ds, &b),
                   SPX_OK);
  o.budget = b;
  o.slab = Ds;
  return o;
}

/* overlap weighs thinner slabs against its pipeline fill (the first slab's upload and the last
 * one's download, which nothing hides): on the H100's numbers for float 2800^3 (87.8 GB, 74.5 GiB of
 * budget) it takes more slabs than the budget's fewest, each plan within the budget, and its model
 * beats the one with the budget's largest slab; mmtb (no overlap, no fill) keeps the largest. */
static void test_choose_overlap_slabs(void **state) {
  spx_stencil p;
  spx_stencil_options o;
  spx_stencil_plan pl, big, seq;
  spx_device_info dev;
  (void)state;
  assert_int_equal(spx_stencil_init(&p, 2800, 2800, 2800, SPX_FLOAT, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  memset(&dev, 0, sizeof dev);
  dev.ordinal = 0;
  snprintf(dev.name, sizeof dev.name, "fake H100");
  dev.total_mem = dev.free_mem = (int64_t)80 << 30;
  dev.peak_bandwidth_gbs = 3350;
  memset(&o, 0, sizeof o);
  o.method = SPX_STENCIL_OVERLAP;
  o.budget = (int64_t)(74.5 * (double)((int64_t)1 << 30));
  o.pcie_gbs = 55; o.pcie_duplex_gbs = 91.5; o.copy_gbs = 2790;
  assert_int_equal(spx_stencil_choose(&p, 32, &o, &dev, &pl), SPX_OK);
  o.method = SPX_STENCIL_MMTB;
  assert_int_equal(spx_stencil_choose(&p, 32, &o, &dev, &seq), SPX_OK);
  o.method = SPX_STENCIL_OVERLAP;
  o.tts = pl.tts;
  o.slab = seq.slab > 0 ? seq.slab : 1;
  { /* the largest slab overlap's own buffers allow at this tts: the budget's fewest slabs */
    int64_t lo = 1, hi = p.nz - 2, b;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      assert_int_equal(spx_stencil_capacity(&p, SPX_STENCIL_OVERLAP, pl.depth, pl.tts, mid, &b), SPX_OK);
      if (b > o.budget) hi = mid - 1; else lo = mid;
    }
    o.slab = lo;
  }
  assert_int_equal(spx_stencil_choose(&p, 32, &o, &dev, &big), SPX_OK);
  assert_true(pl.device_bytes <= o.budget && big.device_bytes <= o.budget);
  if (pl.nslabs <= big.nslabs || !(pl.model_gstencils > big.model_gstencils))
    fail_msg("overlap: %lld slabs of %lld (model %.1f) against the budget's %lld of %lld (model %.1f)", (long long)pl.nslabs,
             (long long)pl.slab, pl.model_gstencils, (long long)big.nslabs, (long long)big.slab, big.model_gstencils);
  print_message("overlap float 2800^3: %lld slabs of %lld planes, tts %lld, model %.1f GStencil/s; the budget's largest "
                "slab: %lld of %lld, model %.1f\n", (long long)pl.nslabs, (long long)pl.slab, (long long)pl.tts,
                pl.model_gstencils, (long long)big.nslabs, (long long)big.slab, big.model_gstencils);
  assert_true(seq.nslabs <= big.nslabs + 1); /* mmtb: the largest its buffers allow */
}

static void test_choose(void **state) {
  spx_stencil p;
  spx_stencil_options o;
  spx_stencil_plan pl, pl2;
  (void)state;
  assert_int_equal(spx_stencil_init(&p, 7, 6, 44, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK); /* Z = 42 */
  /* Budgets for 2, 3 and 7 slabs give exactly that many, of 21, 14 and 6 planes; a byte less gives
   * smaller slabs. */
  {
    static const int64_t J[3] = {2, 3, 7}, Ds[3] = {21, 14, 6};
    int k;
    for (k = 0; k < 3; k++) {
      o = forced(&p, SPX_STENCIL_MMTB, 2, 4, J[k]);
      assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_OK);
      assert_int_equal(pl.nslabs, J[k]);
      assert_int_equal(pl.slab, Ds[k]);
      assert_int_equal(pl.tts, 4);
      assert_int_equal(pl.depth, 2);
      assert_int_equal(pl.rounds, 3);
      assert_int_equal(pl.device_bytes, o.budget);
      assert_int_equal(pl.host_grids, 1);
      o.budget--;
      o.slab = 0; /* the budget alone decides */
      if (spx_stencil_choose(&p, 10, &o, NULL, &pl2)) fail_msg("%lld slabs, budget - 1: %s", (long long)J[k], spx_last_error());
      assert_true(pl2.slab < Ds[k]);
      assert_true(pl2.device_bytes <= o.budget);
    }
  }
  /* normal and mm are one step per launch; normal one step per round trip. */
  memset(&o, 0, sizeof o);
  o.method = SPX_STENCIL_NORMAL;
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_OK);
  assert_int_equal(pl.tts, 1);
  assert_int_equal(pl.depth, 1);
  assert_int_equal(pl.host_grids, 2);
  assert_int_equal(pl.nslabs, 1); /* the host backend has no budget: one slab */
  o.tts = 2;
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  o.tts = 0;
  o.depth = 2;
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "one step per launch"));
  o.method = SPX_STENCIL_MM;
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  /* Depths other than 1, 2, 4. */
  o.method = SPX_STENCIL_MMT;
  for (o.depth = 3; o.depth <= 8; o.depth += 5) {
    assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "depth"));
  }
  o.depth = -1;
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  o.depth = 0;
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_OK);
  assert_int_equal(pl.depth, 2);
  assert_int_equal(pl.shared, 1);
  /* Steps, sizes, NULLs. */
  assert_int_equal(spx_stencil_choose(&p, 0, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_choose(NULL, 10, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, NULL), SPX_INVALID_ARGUMENT);
  {
    spx_stencil bad = p;
    bad.nz = 2;
    assert_int_equal(spx_stencil_choose(&bad, 10, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  }
  /* A budget below one slab: SPX_DEVICE_OUT_OF_MEMORY saying what the smallest needs. */
  memset(&o, 0, sizeof o);
  o.method = SPX_STENCIL_OVERLAP;
  o.budget = 4000; /* under 12 planes of 336 bytes */
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_DEVICE_OUT_OF_MEMORY);
  assert_non_null(strstr(spx_last_error(), "cannot hold one slab"));
  o.method = SPX_STENCIL_INCORE;
  o.budget = 2 * 44 * 336 - 1;
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_DEVICE_OUT_OF_MEMORY);
  assert_non_null(strstr(spx_last_error(), "incore"));
  o.budget++;
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_OK);
  assert_int_equal(pl.device_bytes, 2 * 44 * 336);
  /* mmtb with a tts the first slab cannot hold (it needs tts + depth - 1 planes). */
  o = forced(&p, SPX_STENCIL_MMTB, 2, 6, 7); /* slabs of 6 < 6 + 2 - 1 */
  assert_int_equal(spx_stencil_choose(&p, 10, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "tts"));
  /* The cost model picks a tts: more than one step per round trip when PCIe is slow, and the
   * bound is min(in-core rate, tts x PCIe / bytes per cell). */
  memset(&o, 0, sizeof o);
  o.method = SPX_STENCIL_OVERLAP;
  o.budget = 40 * 336;
  o.pcie_gbs = 25; o.pcie_duplex_gbs = 40; o.copy_gbs = 2000; o.incore_gstencils = 100;
  assert_int_equal(spx_stencil_choose(&p, 64, &o, NULL, &pl), SPX_OK);
  assert_true(pl.tts > 1);
  assert_true(pl.device_bytes <= o.budget);
  assert_true(fabs(pl.bound_gstencils - fmin(100.0, (double)pl.tts * 20.0 / 8.0)) < 1e-9);
  assert_true(pl.model_gstencils > 0 && pl.model_gstencils <= pl.bound_gstencils * 1.0001);
  assert_non_null(strstr(pl.why, "overlap"));
  /* The model's tts splits the steps into rounds as equal as the depth allows (and, at an even
   * depth, an odd launch count, one multiple of the depth more, where the last round then stays
   * within d steps): a short last round moves a whole slab each way for a few steps (640^3 under
   * 1 GiB, 128 steps: 88 + 40 before). */
  {
    spx_stencil big;
    int64_t T, multi = 0;
    int d;
    assert_int_equal(spx_stencil_init(&big, 640, 640, 640, SPX_FLOAT, 0.4, 0.1, 0.1, 0.1), SPX_OK);
    for (d = 1; d <= 4; d *= 2)
      for (T = 90; T <= 300; T += 7) {
        int64_t last;
        memset(&o, 0, sizeof o);
        o.method = SPX_STENCIL_OVERLAP;
        o.depth = d;
        o.budget = (int64_t)1 << 30;
        o.pcie_gbs = 55; o.pcie_duplex_gbs = 92; o.copy_gbs = 2900; o.incore_gstencils = 459;
        assert_int_equal(spx_stencil_choose(&big, T, &o, NULL, &pl), SPX_OK);
        last = T - (pl.rounds - 1) * pl.tts;
        multi += pl.rounds > 1;
        if (last < 1 || last > pl.tts || last <= pl.tts - 2 * pl.rounds * d ||
            (d % 2 == 0 && pl.rounds > 1 && (pl.tts / d) % 2 == 0 && T - (pl.rounds - 1) * (pl.tts + d) >= pl.tts - d))
          fail_msg("depth %d, %lld steps: %lld rounds of tts %lld, the last %lld", d, (long long)T,
                   (long long)pl.rounds, (long long)pl.tts, (long long)last);
      }
    assert_true(multi >= 40); /* most of the 93 runs take several rounds */
  }
}

/* ---- Every method on the host backend equals the in-core run, bit for bit ------------------------ */
static void run_ok(spx_context *h, const spx_stencil *p, void *g, int64_t T, const spx_stencil_options *o,
                   spx_stencil_report *r) {
  if (spx_stencil_run(h, p, g, T, o, r) != SPX_OK) fail_msg("%s: %s", spx_stencil_method_name(o->method), spx_last_error());
}

static void test_methods_host(void **state) {
  static const spx_dtype types[2] = {SPX_DOUBLE, SPX_FLOAT};
  static const int64_t J[3] = {2, 3, 7};
  spx_context *h = host_ctx();
  int ti;
  (void)state;
  for (ti = 0; ti < 2; ti++) {
    spx_stencil p;
    spx_stencil_options o;
    spx_stencil_report rep;
    const int64_t T = 9;
    void *g0, *want, *g;
    size_t bytes;
    int m, d, k;
    assert_int_equal(spx_stencil_init(&p, 7, 6, 44, types[ti], 0.37, 0.11, 0.09, 0.13), SPX_OK);
    bytes = grid_bytes(&p);
    g0 = rand_grid(&p);
    want = malloc(bytes);
    g = malloc(bytes);
    memcpy(want, g0, bytes);
    assert_int_equal(spx_stencil_reference(&p, want, T), SPX_OK);
    /* In core at every depth is the reference, bit for bit. */
    for (d = 1; d <= 4; d *= 2) {
      memset(&o, 0, sizeof o);
      o.method = SPX_STENCIL_INCORE;
      o.depth = d;
      memcpy(g, g0, bytes);
      run_ok(h, &p, g, T, &o, &rep);
      assert_memory_equal(g, want, bytes);
      assert_int_equal(rep.launches, T / d + T % d);
    }
    for (m = 0; m < SPX_STENCIL_METHOD_COUNT; m++) {
      const int one = m == SPX_STENCIL_NORMAL || m == SPX_STENCIL_MM;
      if (m == SPX_STENCIL_INCORE) continue;
      for (d = 1; d <= (one ? 1 : 4); d *= 2)
        for (k = 0; k < 3; k++) {
          /* tts: 4 (rounds of 4, 4, 1); 5 in 3 slabs (5, 4: launches 1, 2, 2 at depth 2, one-step
           * launches and deeper ones in one round); at depth 4 8 (8, 1), 6 in 3 slabs (6, 3:
           * 1, 1, 4) and 3 where slabs of 6 cannot hold 4 + 4 - 1. */
          int64_t R = m == SPX_STENCIL_NORMAL ? 1 : d == 4 ? (J[k] == 7 ? 3 : J[k] == 3 ? 6 : 8) : J[k] == 3 ? 5 : 4, a;
          int64_t rounds = (T + R - 1) / R;
          o = forced(&p, (spx_stencil_method)m, d, R, J[k]);
          memcpy(g, g0, bytes);
          run_ok(h, &p, g, T, &o, &rep);
          if (rep.plan.nslabs != J[k] || rep.plan.tts != R)
            fail_msg("%s depth %d: %lld slabs, tts %lld; forced %lld, %lld", spx_stencil_method_name(o.method), d,
                     (long long)rep.plan.nslabs, (long long)rep.plan.tts, (long long)J[k], (long long)R);
          if (memcmp(g, want, bytes))
            fail_msg("%s %s depth %d tts %lld, %lld slabs: differs from in-core", spx_dtype_name(p.dtype),
                     spx_stencil_method_name(o.method), d, (long long)R, (long long)J[k]);
          /* What crossed "PCIe": mmtb and overlap move the domain up and its interior down once per
           * round; the others also move 2 tts planes of halo per inner slab edge (clipped). */
          a = rounds * (p.nz - 2) * p.nx * p.ny * (int64_t)SPX_DTYPE_SIZE(p.dtype);
          assert_int_equal(rep.d2h_bytes, a);
          if (m == SPX_STENCIL_MMTB || m == SPX_STENCIL_OVERLAP) {
            /* Device copies, in planes: per round the two z-boundary planes into the second window.
             * Nothing else: the ring windows keep the planes a slab hands the next (a reuse buffer
             * copied 2 dk planes out and back per launch and inner slab edge), and overlap moves
             * the slabs straight into and out of them (staging buffers copied each plane once more). */
            const int64_t planes = rounds * 2;
            assert_int_equal(rep.h2d_bytes, rounds * p.nz * p.nx * p.ny * (int64_t)SPX_DTYPE_SIZE(p.dtype));
            assert_int_equal(rep.d2d_bytes, planes * p.nx * p.ny * (int64_t)SPX_DTYPE_SIZE(p.dtype));
          } else {
            assert_true(rep.h2d_bytes > rounds * p.nz * p.nx * p.ny * (int64_t)SPX_DTYPE_SIZE(p.dtype));
          }
          assert_int_equal(rep.plan.host_grids, m == SPX_STENCIL_MMTB || m == SPX_STENCIL_OVERLAP ? 1 : 2);
          assert_true(rep.launches >= rounds * J[k]);
        }
    }
    /* Slabs of one plane, one step per round trip: mmtb's first slab is skewed out of some steps. */
    for (m = 0; m < SPX_STENCIL_METHOD_COUNT; m++) {
      if (m == SPX_STENCIL_INCORE) continue;
      memset(&o, 0, sizeof o);
      o.method = (spx_stencil_method)m;
      o.slab = 1;
      o.tts = 1;
      memcpy(g, g0, bytes);
      run_ok(h, &p, g, T, &o, &rep);
      assert_int_equal(rep.plan.nslabs, p.nz - 2);
      if (memcmp(g, want, bytes)) fail_msg("%s, slabs of one plane: differs", spx_stencil_method_name(o.method));
    }
        /* The cost model's own choice (no tts, default budget of a few slabs) is right too. */
    for (m = 0; m < SPX_STENCIL_METHOD_COUNT; m++) {
      memset(&o, 0, sizeof o);
      o.method = (spx_stencil_method)m;
      o.budget = 30 * p.nx * p.ny * (int64_t)SPX_DTYPE_SIZE(p.dtype);
      if (m == SPX_STENCIL_INCORE) o.budget *= 3;
      memcpy(g, g0, bytes);
      run_ok(h, &p, g, T, &o, &rep);
      if (m != SPX_STENCIL_INCORE) assert_true(rep.plan.nslabs > 1);
      assert_true(rep.plan.device_bytes <= o.budget);
      if (memcmp(g, want, bytes)) fail_msg("%s (model's choice): differs", spx_stencil_method_name(o.method));
    }
    free(g0);
    free(want);
    free(g);
  }
  spx_context_destroy(h);
}

/* ---- Errors: sizes, budgets, host memory ---------------------------------------------------------- */
static void test_run_errors(void **state) {
  spx_context *h = host_ctx();
  spx_stencil p;
  spx_stencil_options o;
  spx_stencil_report rep;
  void *g, *copy;
  size_t bytes;
  (void)state;
  assert_int_equal(spx_stencil_init(&p, 8, 8, 20, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  bytes = grid_bytes(&p);
  g = rand_grid(&p);
  copy = malloc(bytes);
  memcpy(copy, g, bytes);
  memset(&o, 0, sizeof o);
  /* Budget too small for one slab. */
  o.method = SPX_STENCIL_MMTB;
  o.budget = 1000;
  assert_int_equal(spx_stencil_run(h, &p, g, 5, &o, &rep), SPX_DEVICE_OUT_OF_MEMORY);
  assert_non_null(strstr(spx_last_error(), "cannot hold one slab"));
  assert_memory_equal(g, copy, bytes);
  /* A host limit under what the run allocates: SPX_OUT_OF_MEMORY naming the sizes, nothing run. */
  o.budget = 0;
  o.method = SPX_STENCIL_MM;
  o.host_limit = (int64_t)bytes / 2;
  assert_int_equal(spx_stencil_run(h, &p, g, 5, &o, &rep), SPX_OUT_OF_MEMORY);
  assert_non_null(strstr(spx_last_error(), "GiB of host memory"));
  assert_memory_equal(g, copy, bytes);
  /* ... which is enough for nothing but a grid: grid_alloc fails before allocating. */
  {
    void *g2 = (void *)&o;
    assert_int_equal(spx_stencil_grid_alloc(h, &p, &o, &g2), SPX_OUT_OF_MEMORY);
    assert_null(g2);
    assert_non_null(strstr(spx_last_error(), "is the limit"));
    o.host_limit = (int64_t)bytes;
    assert_int_equal(spx_stencil_grid_alloc(h, &p, &o, &g2), SPX_OK);
    assert_non_null(g2);
    spx_stencil_grid_free(h, g2);
    spx_stencil_grid_free(h, NULL);
  }
  /* Depth, steps, NULLs. */
  memset(&o, 0, sizeof o);
  o.depth = 3;
  assert_int_equal(spx_stencil_run(h, &p, g, 5, &o, &rep), SPX_INVALID_ARGUMENT);
  o.depth = 0;
  assert_int_equal(spx_stencil_run(h, &p, g, -1, &o, &rep), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_run(h, &p, NULL, 5, &o, &rep), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_run(NULL, &p, g, 5, &o, &rep), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_stencil_run(h, &p, g, 0, &o, &rep), SPX_OK); /* nothing to do */
  assert_memory_equal(g, copy, bytes);
  {
    spx_stencil bad = p;
    bad.ny = 1;
    assert_int_equal(spx_stencil_run(h, &bad, g, 5, &o, &rep), SPX_INVALID_ARGUMENT);
    void *g3 = NULL;
    assert_int_equal(spx_stencil_grid_alloc(h, &bad, NULL, &g3), SPX_INVALID_ARGUMENT);
    assert_null(g3);
  }
  /* PCIe bandwidth needs a GPU. */
  {
    double a, b, c;
    assert_int_equal(spx_stencil_pcie_bandwidth(h, 1 << 20, 2, &a, &b, &c), SPX_NOT_AVAILABLE);
  }
  /* Default options (overlap, no budget) on the host: one slab, the reference's result. */
  memcpy(copy, g, bytes);
  assert_int_equal(spx_stencil_run(h, &p, g, 6, NULL, NULL), SPX_OK);
  assert_int_equal(spx_stencil_reference(&p, copy, 6), SPX_OK);
  assert_memory_equal(g, copy, bytes);
  free(g);
  free(copy);
  spx_context_destroy(h);
}

/* ---- NVRTC: the kernels compile for sm_80 and sm_90 at depths 1, 2, 4 in float and double -------- */
static void test_kernels_compile(void **state) {
  static const char *const archs[2] = {"sm_80", "sm_90"};
  int a, t, d;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  for (a = 0; a < 2; a++)
    for (t = 0; t < 2; t++)
      for (d = 1; d <= 4; d *= 2) {
        spx_stencil p;
        spx_stencil_options o;
        spx_stencil_plan pl;
        memset(&o, 0, sizeof o);
        o.method = SPX_STENCIL_MMT;
        o.depth = d;
        o.shared = 1; /* the shared-memory kernel at depth 1 too */
        assert_int_equal(spx_stencil_init(&p, 130, 66, 40, t ? SPX_FLOAT : SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK);
        assert_int_equal(spx_stencil_choose(&p, 8, &o, NULL, &pl), SPX_OK);
        assert_int_equal(pl.shared, 1);
        if (spx_stencil_warm(&p, &pl, archs[a]) != SPX_OK)
          fail_msg("%s %s depth %d: %s", archs[a], spx_dtype_name(p.dtype), d, spx_last_error());
      }
}

/* ---- x cells per thread of the one-step kernel (SPX_STENCIL_XV) ---------------------------------- */
/* Sets (v non-NULL) or unsets SPX_STENCIL_XV. */
static void xv_env(const char *v) {
  if (v) assert_int_equal(env_put("SPX_STENCIL_XV", v), 0);
  else assert_int_equal(env_put("SPX_STENCIL_XV", NULL), 0);
}

/* The plan's xv: 2 in float where nx is even, at every depth, 1 in double (measured: no gain there);
 * 1 for an odd nx whatever is asked; the option, then SPX_STENCIL_XV, force it; other values are
 * rejected with a sentence. */
static void test_xv_plan(void **state) {
  spx_stencil p;
  spx_stencil_options o;
  spx_stencil_plan pl;
  char *saved = getenv("SPX_STENCIL_XV") ? strdup(getenv("SPX_STENCIL_XV")) : NULL;
  int t, d;
  (void)state;
  xv_env(NULL);
  for (t = 0; t < 2; t++)
    for (d = 1; d <= 4; d *= 2) {
      memset(&o, 0, sizeof o);
      o.method = SPX_STENCIL_INCORE;
      o.depth = d;
      assert_int_equal(spx_stencil_init(&p, 66, 37, 20, t ? SPX_FLOAT : SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK);
      assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
      assert_int_equal(pl.xv, t ? 2 : 1);
      assert_non_null(strstr(pl.why, t ? "2 cell(s) per thread" : "1 cell(s) per thread"));
      o.xv = 2; /* forced in double too */
      assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
      assert_int_equal(pl.xv, 2);
      o.xv = 1;
      assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
      assert_int_equal(pl.xv, 1);
      p.nx = 33; /* odd: the pair loads would be misaligned */
      o.xv = 2;
      assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
      assert_int_equal(pl.xv, 1);
      o.xv = 0;
      assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
      assert_int_equal(pl.xv, 1);
    }
  assert_int_equal(spx_stencil_init(&p, 130, 64, 9, SPX_FLOAT, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  memset(&o, 0, sizeof o);
  o.method = SPX_STENCIL_MM; /* out of core too */
  assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
  assert_int_equal(pl.xv, 2);
  /* The environment forces it when the option does not. */
  xv_env("1");
  assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
  assert_int_equal(pl.xv, 1);
  o.xv = 2;
  assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
  assert_int_equal(pl.xv, 2);
  o.xv = 0;
  xv_env("2");
  assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
  assert_int_equal(pl.xv, 2);
  xv_env(""); /* empty: as if unset */
  assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_OK);
  assert_int_equal(pl.xv, 2);
  xv_env("4");
  assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "SPX_STENCIL_XV=4"));
  xv_env("12");
  assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  xv_env(NULL);
  o.xv = 3;
  assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "xv 3"));
  o.xv = -1;
  assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &pl), SPX_INVALID_ARGUMENT);
  if (saved) xv_env(saved);
  free(saved);
}

/* NVRTC: the two-cell kernel compiles for sm_80 and sm_90 in both types, as the main kernel
 * (depth 1) and as the remainder kernel beside spx_stencil_tb (depth 2), and its cache key differs
 * from the one-cell kernel's: after the one-cell plan is in memory, the two-cell plan's first
 * kernel is not a memory hit. A plan that claims 2 for an odd nx compiles the one-cell kernel. */
static void test_xv_compile(void **state) {
  static const char *const archs[2] = {"sm_80", "sm_90"};
  int a, t, d;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  for (a = 0; a < 2; a++)
    for (t = 0; t < 2; t++)
      for (d = 1; d <= 2; d++) {
        spx_stencil p;
        spx_stencil_options o;
        spx_stencil_plan one, two;
        spx_jit_stats s0, s1;
        memset(&o, 0, sizeof o);
        o.method = SPX_STENCIL_INCORE;
        o.depth = d;
        /* coefficients of this test only, a size per depth: no kernel of this plan is in memory yet */
        assert_int_equal(spx_stencil_init(&p, 66, 37, 18 + d, t ? SPX_FLOAT : SPX_DOUBLE, 0.31, 0.17, 0.05, 0.11), SPX_OK);
        o.xv = 1;
        assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &one), SPX_OK);
        o.xv = 2;
        assert_int_equal(spx_stencil_choose(&p, 7, &o, NULL, &two), SPX_OK);
        assert_int_equal(one.xv, 1);
        assert_int_equal(two.xv, 2);
        if (spx_stencil_warm(&p, &one, archs[a]) != SPX_OK || spx_stencil_warm(&p, &one, archs[a]) != SPX_OK)
          fail_msg("%s %s depth %d, 1 cell per thread: %s", archs[a], spx_dtype_name(p.dtype), d, spx_last_error());
        spx_jit_stats_get(&s0);
        if (spx_stencil_warm(&p, &two, archs[a]) != SPX_OK)
          fail_msg("%s %s depth %d, 2 cells per thread: %s", archs[a], spx_dtype_name(p.dtype), d, spx_last_error());
        spx_jit_stats_get(&s1);
        /* Two lookups, one a memory hit: at depth 1 the main and remainder kernels are the same
         * two-cell kernel, at depth 2 the main one is spx_stencil_tb, which has no xv. With the
         * one-cell key, both would hit. */
        if (s1.mem_hits - s0.mem_hits != 1)
          fail_msg("%s %s depth %d: %lld memory hits of 2 lookups: the two-cell kernel has the one-cell kernel's key",
                   archs[a], spx_dtype_name(p.dtype), d, (long long)(s1.mem_hits - s0.mem_hits));
        p.nx = 33;
        two.xv = 2; /* made for an even nx; spx_stencil_warm must not pass SPX_STENCIL_XV=2 */
        if (spx_stencil_warm(&p, &two, archs[a]) != SPX_OK)
          fail_msg("%s %s depth %d, odd nx: %s", archs[a], spx_dtype_name(p.dtype), d, spx_last_error());
      }
  { /* ... which the template refuses */
    static const char *const odd[2] = {"SPX_NX=33", "SPX_STENCIL_XV=2"};
    assert_int_equal(spx_jit_compile_only("stencil", 2, odd, "sm_90", NULL), SPX_NVRTC);
    assert_non_null(strstr(spx_last_error(), "even SPX_NX"));
  }
}

/* ---- GPU ------------------------------------------------------------------------------------------ */
static spx_context *gpu_ctx(void) {
  spx_context *g = NULL;
  spx_context_options co = {SPX_BACKEND_CUDA, 0};
  if (spx_device_count() < 1 || spx_context_create(&co, &g) != SPX_OK) {
    spx_clear_error();
    return NULL;
  }
  return g;
}

/* Largest relative difference (NaN: +inf). */
static double maxrel(const spx_stencil *p, const void *a, const void *b) {
  int64_t n = p->nx * p->ny * p->nz, i;
  double m = 0;
  for (i = 0; i < n; i++) {
    double x = p->dtype == SPX_FLOAT ? ((const float *)a)[i] : ((const double *)a)[i];
    double y = p->dtype == SPX_FLOAT ? ((const float *)b)[i] : ((const double *)b)[i];
    double r = fabs(x - y) / fmax(fabs(y), 1e-300);
    if (x != x || y != y) return 1e300;
    if (r > m) m = r;
  }
  return m;
}

/* The GPU in-core run equals the host reference (bitwise: same operation order, no FMA), at
 * every depth, in both types, on a grid whose x and y are not multiples of the block. */
static void test_gpu_incore(void **state) {
  spx_context *g = gpu_ctx();
  int t, d;
  (void)state;
  if (!g) skip();
  for (t = 0; t < 2; t++)
    for (d = 1; d <= 4; d *= 2) {
      spx_stencil p;
      spx_stencil_options o;
      spx_stencil_report rep;
      void *u, *want;
      size_t bytes;
      assert_int_equal(spx_stencil_init(&p, 77, 45, 61, t ? SPX_FLOAT : SPX_DOUBLE, 0.37, 0.11, 0.09, 0.13), SPX_OK);
      bytes = grid_bytes(&p);
      assert_int_equal(spx_stencil_grid_alloc(g, &p, NULL, &u), SPX_OK);
      want = rand_grid(&p);
      memcpy(u, want, bytes);
      assert_int_equal(spx_stencil_reference(&p, want, 11), SPX_OK);
      memset(&o, 0, sizeof o);
      o.method = SPX_STENCIL_INCORE;
      o.depth = d;
      if (spx_stencil_run(g, &p, u, 11, &o, &rep)) fail_msg("incore depth %d: %s", d, spx_last_error());
      if (memcmp(u, want, bytes))
        fail_msg("%s depth %d: GPU in-core differs from the host reference (max rel %.3g)", spx_dtype_name(p.dtype), d,
                 maxrel(&p, u, want));
      assert_true(rep.kernel_ms > 0 && rep.gstencils > 0);
      spx_stencil_grid_free(g, u);
      free(want);
    }
  spx_context_destroy(g);
}

/* Every run that uses the one-step kernel, with 1 and with 2 x cells per thread, against the host
 * reference, bit for bit: in core at depth 1 and at depth 2 with a remainder step (T odd), and
 * every out-of-core method at depth 1 and, where it blocks in time, at depth 2 with rounds of 3
 * steps (one two-step launch and one one-step launch), in 2 slabs where the domain allows. On ctx's backend: the host
 * backend checks the cases and the plans (xv 2 where nx is even), the GPU the kernels. */
static void xv_runs(spx_context *ctx, spx_dtype dt, int64_t nx, int64_t ny, int64_t nz) {
  /* method, depth, tts */
  static const int cases[][3] = {
      {SPX_STENCIL_INCORE, 1, 0}, {SPX_STENCIL_INCORE, 2, 0}, {SPX_STENCIL_NORMAL, 1, 1}, {SPX_STENCIL_MM, 1, 2},
      {SPX_STENCIL_MMT, 1, 2},    {SPX_STENCIL_MMT, 2, 3},    {SPX_STENCIL_MMTB, 1, 2},  {SPX_STENCIL_MMTB, 2, 3},
      {SPX_STENCIL_OVERLAP, 1, 2}, {SPX_STENCIL_OVERLAP, 2, 3}};
  const int64_t T = 7;
  spx_stencil p;
  void *u, *g0, *want, *got1;
  size_t bytes;
  int c, xv;
  assert_int_equal(spx_stencil_init(&p, nx, ny, nz, dt, 0.37, 0.11, 0.09, 0.13), SPX_OK);
  bytes = grid_bytes(&p);
  assert_int_equal(spx_stencil_grid_alloc(ctx, &p, NULL, &u), SPX_OK);
  g0 = rand_grid(&p);
  want = malloc(bytes);
  got1 = malloc(bytes);
  assert_non_null(want);
  assert_non_null(got1);
  memcpy(want, g0, bytes);
  assert_int_equal(spx_stencil_reference(&p, want, T), SPX_OK);
  for (c = 0; c < (int)(sizeof cases / sizeof *cases); c++)
    for (xv = 1; xv <= 2; xv++) {
      const spx_stencil_method m = (spx_stencil_method)cases[c][0];
      const int d = cases[c][1];
      spx_stencil_options o;
      spx_stencil_report rep;
      if (m == SPX_STENCIL_INCORE) {
        memset(&o, 0, sizeof o);
        o.method = m;
        o.depth = d;
      } else {
        o = forced(&p, m, d, cases[c][2], 2);
      }
      o.xv = xv;
      memcpy(u, g0, bytes);
      if (spx_stencil_run(ctx, &p, u, T, &o, &rep))
        fail_msg("%s %lldx%lldx%lld %s depth %d xv %d: %s", spx_dtype_name(dt), (long long)nx, (long long)ny,
                 (long long)nz, spx_stencil_method_name(m), d, xv, spx_last_error());
      assert_int_equal(rep.plan.xv, xv == 2 && nx % 2 == 0 ? 2 : 1);
      /* two slabs, unless the halos of mm and mmt span the whole of a short domain (nz 9) */
      if (m != SPX_STENCIL_INCORE && rep.plan.nslabs != 2 && rep.plan.window_planes < nz)
        fail_msg("%s %lldx%lldx%lld %s depth %d: %lld slabs", spx_dtype_name(dt), (long long)nx, (long long)ny,
                 (long long)nz, spx_stencil_method_name(m), d, (long long)rep.plan.nslabs);
      if (memcmp(u, want, bytes))
        fail_msg("%s %lldx%lldx%lld %s depth %d, %d cell(s) per thread: differs from the host reference (max rel %.3g)",
                 spx_dtype_name(dt), (long long)nx, (long long)ny, (long long)nz, spx_stencil_method_name(m), d,
                 rep.plan.xv, maxrel(&p, u, want));
      if (xv == 1) memcpy(got1, u, bytes);
      else assert_memory_equal(u, got1, bytes); /* implied by the above; said for the record */
    }
  spx_stencil_grid_free(ctx, u);
  free(g0);
  free(want);
  free(got1);
}

/* Sizes: x not a multiple of 2 x 32 with ny, nz small (66 x 37 x 20), two blocks and a bit in x
 * with few planes (130 x 64 x 9), and an odd nx, which falls back to one cell (33^3). */
static void xv_sizes(spx_context *ctx) {
  int t;
  for (t = 0; t < 2; t++) {
    xv_runs(ctx, t ? SPX_FLOAT : SPX_DOUBLE, 66, 37, 20);
    xv_runs(ctx, t ? SPX_FLOAT : SPX_DOUBLE, 130, 64, 9);
    xv_runs(ctx, t ? SPX_FLOAT : SPX_DOUBLE, 33, 33, 33);
  }
}

static void test_xv_methods_host(void **state) {
  spx_context *h = host_ctx();
  (void)state;
  xv_sizes(h);
  spx_context_destroy(h);
}

static void test_gpu_xv(void **state) {
  spx_context *g = gpu_ctx();
  (void)state;
  if (!g) skip();
  xv_sizes(g);
  spx_context_destroy(g);
}

/* Every method on the GPU equals the in-core GPU run bit for bit, for budgets forcing 2, 3 and 7
 * slabs and the model's own choice. */
static void test_gpu_methods(void **state) {
  static const int64_t J[3] = {2, 3, 7};
  spx_context *g = gpu_ctx();
  int t;
  (void)state;
  if (!g) skip();
  for (t = 0; t < 2; t++) {
    spx_stencil p;
    spx_stencil_options o;
    spx_stencil_report rep;
    const int64_t T = 13;
    void *u, *g0, *want;
    size_t bytes;
    int m, d, k;
    assert_int_equal(spx_stencil_init(&p, 70, 37, 86, t ? SPX_FLOAT : SPX_DOUBLE, 0.37, 0.11, 0.09, 0.13), SPX_OK);
    bytes = grid_bytes(&p);
    assert_int_equal(spx_stencil_grid_alloc(g, &p, NULL, &u), SPX_OK);
    g0 = rand_grid(&p);
    want = malloc(bytes);
    memcpy(u, g0, bytes);
    memset(&o, 0, sizeof o);
    o.method = SPX_STENCIL_INCORE;
    o.depth = 1;
    if (spx_stencil_run(g, &p, u, T, &o, &rep)) fail_msg("incore: %s", spx_last_error());
    memcpy(want, u, bytes);
    for (m = 0; m < SPX_STENCIL_METHOD_COUNT; m++) {
      const int one = m == SPX_STENCIL_NORMAL || m == SPX_STENCIL_MM;
      for (d = 1; d <= (one ? 1 : 4); d *= 2)
        for (k = 0; k < 4; k++) {
          int64_t R = m == SPX_STENCIL_NORMAL ? 1 : d == 4 ? 8 : 4;
          if (m == SPX_STENCIL_INCORE && k) break;
          if (k < 3 && m != SPX_STENCIL_INCORE) o = forced(&p, (spx_stencil_method)m, d, R, J[k]);
          else {
            memset(&o, 0, sizeof o);
            o.method = (spx_stencil_method)m;
            o.depth = one ? 0 : d;
          }
          memcpy(u, g0, bytes);
          if (spx_stencil_run(g, &p, u, T, &o, &rep))
            fail_msg("%s depth %d: %s", spx_stencil_method_name(o.method), d, spx_last_error());
          if (k < 3 && m != SPX_STENCIL_INCORE) assert_int_equal(rep.plan.nslabs, J[k]);
          if (memcmp(u, want, bytes))
            fail_msg("%s %s depth %d, %lld slabs, tts %lld: differs from in-core (max rel %.3g)", spx_dtype_name(p.dtype),
                     spx_stencil_method_name(o.method), d, (long long)rep.plan.nslabs, (long long)rep.plan.tts,
                     maxrel(&p, u, want));
        }
    }
    spx_stencil_grid_free(g, u);
    free(g0);
    free(want);
  }
  {
    double a, b, c;
    assert_int_equal(spx_stencil_pcie_bandwidth(g, 8 << 20, 2, &a, &b, &c), SPX_OK);
    assert_true(a > 0.1 && b > 0.1 && c > 0.1);
  }
  spx_context_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_and_names),
      cmocka_unit_test(test_reference_analytic),
      cmocka_unit_test(test_reference_steps),
      cmocka_unit_test(test_capacity),
      cmocka_unit_test(test_choose), cmocka_unit_test(test_choose_overlap_slabs),
      cmocka_unit_test(test_methods_host),
      cmocka_unit_test(test_run_errors),
      cmocka_unit_test(test_kernels_compile),
      cmocka_unit_test(test_xv_plan),
      cmocka_unit_test(test_xv_compile),
      cmocka_unit_test(test_xv_methods_host),
      cmocka_unit_test(test_gpu_incore),
      cmocka_unit_test(test_gpu_methods),
      cmocka_unit_test(test_gpu_xv),
  };
  return cmocka_run_group_tests_name("stencil", tests, NULL, NULL);
}
