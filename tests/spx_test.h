/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for the spx cmocka tests: where the matrices are, the manifest, random data. */
#ifndef SPX_TEST_H
#define SPX_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <cmocka.h>

#include <spx/spx.h>

/* In-tree format f's walk factor, as its SPX_FORMATS line gives it (the tuner's model tests). */
#define SPX_TEST_WALK_FACTOR(pb, map, launches, cols, walk, factor, note) factor
static inline double spx_test_walk_factor(spx_format f) {
  static const double w[SPX_FORMAT_COUNT] = {
#define SPX_TEST_WALK_ROW(E, n, D, cost, what, model, device) [SPX_FORMAT_##E] = SPX_TEST_WALK_FACTOR model,
      SPX_FORMATS(SPX_TEST_WALK_ROW)
#undef SPX_TEST_WALK_ROW
  };
  return (int)f >= 0 && (int)f < SPX_FORMAT_COUNT ? w[f] : 0;
}
#undef SPX_TEST_WALK_FACTOR

/* NVRTC loads (no GPU needed): the compile-only tests run where it does and skip elsewhere. */
static inline int spx_test_have_nvrtc(void) {
  int maj, mnr;
  if (spx_nvrtc_version(&maj, &mnr) == SPX_OK) return 1;
  spx_clear_error();
  return 0;
}

/* Shared SuiteSparse matrices: $SPX_SHARED_MATRICES, else ../shared/matrices (tests run from the
 * repository root). */
static inline const char *spx_test_matrix_dir(void) {
  const char *d = getenv("SPX_SHARED_MATRICES");
  return d && *d ? d : "../shared/matrices";
}

typedef struct spx_test_entry {
  char name[128], field[32], symmetry[32];
  int64_t rows, cols, nnz_stored;
} spx_test_entry;

/* Reads MANIFEST.tsv; returns the number of entries (0 if missing) and a malloc'd array. */
static inline int spx_test_manifest(spx_test_entry **out) {
  char path[1024], line[4096];
  FILE *f;
  int n = 0, cap = 0;
  spx_test_entry *e = NULL;
  snprintf(path, sizeof path, "%s/MANIFEST.tsv", spx_test_matrix_dir());
  *out = NULL;
  if (!(f = fopen(path, "r"))) return 0;
  while (fgets(line, sizeof line, f)) {
    spx_test_entry t;
    long long r, c, z;
    if (sscanf(line, "%127[^\t]\t%lld\t%lld\t%lld\t%31[^\t]\t%31[^\t]", t.name, &r, &c, &z, t.field,
               t.symmetry) != 6)
      continue; /* header line */
    t.rows = r; t.cols = c; t.nnz_stored = z;
    if (n == cap) {
      cap = cap ? 2 * cap : 128;
      e = (spx_test_entry *)realloc(e, (size_t)cap * sizeof *e);
      if (!e) break;
    }
    e[n++] = t;
  }
  fclose(f);
  { /* SPX_TEST_QUICK (under compute-sanitizer, 10-100x slower): every 8th matrix, a spread of
     * sizes and kinds in manifest order, so every loop over the shared set still runs */
    const char *q = getenv("SPX_TEST_QUICK");
    if (e && q && *q && *q != '0') {
      int i, k = 0;
      for (i = 0; i < n; i += 8) e[k++] = e[i];
      n = k;
    }
  }
  *out = e;
  return e ? n : 0;
}

static inline void spx_test_matrix_path(const char *name, char *buf, size_t len) {
  snprintf(buf, len, "%s/%s.mtx.gz", spx_test_matrix_dir(), name);
}

/* Shared matrix `name` in double; a matrix that does not read fails the test, naming it. */
static inline spx_csr *spx_test_shared(const char *name) {
  char path[1024];
  spx_csr *a = NULL;
  spx_test_matrix_path(name, path, sizeof path);
  if (spx_mm_read(path, SPX_DOUBLE, &a, NULL) != SPX_OK) fail_msg("%s: %s", name, spx_last_error());
  return a;
}

/* A CUDA context on device 0, or NULL where there is none (the GPU tests skip then). */
static inline spx_context *spx_test_gpu_context(void) {
  spx_context_options co = {SPX_BACKEND_CUDA, 0};
  spx_context *g = NULL;
  if (spx_device_count() < 1 || spx_context_create(&co, &g) != SPX_OK) {
    spx_clear_error();
    return NULL;
  }
  return g;
}

/* A kernel spec for a registered copy of ELL (spx_format_register's tests): one launch of ELL's
 * kernel, a marked summary. */
static inline spx_status spx_test_ell_copy_spec(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                                                spx_kernel_plan *p) {
  (void)o; (void)dev;
  memset(p, 0, sizeof *p);
  p->nlaunch = 1;
  snprintf(p->launch[0].template_name, sizeof p->launch[0].template_name, "ell");
  snprintf(p->launch[0].kernel, sizeof p->launch[0].kernel, "spx_ell_spmv");
  p->launch[0].grid[0] = (unsigned)((m->nrows + 255) / 256); p->launch[0].grid[1] = p->launch[0].grid[2] = 1;
  p->launch[0].block[0] = 256; p->launch[0].block[1] = p->launch[0].block[2] = 1;
  snprintf(p->summary, sizeof p->summary, "the test's own spec");
  return SPX_OK;
}

/* Fresh random data every run (xorshift64*, seeded from the clock, seed printed on failure paths
 * via spx_test_seed()). Values in [-1, 1), never all zero. */
static uint64_t spx_test_rng_state;
static inline uint64_t spx_test_seed(void) {
  if (!spx_test_rng_state) {
    const char *s = getenv("SPX_TEST_SEED");
    spx_test_rng_state = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) * 2654435761u + (uint64_t)clock();
    if (!spx_test_rng_state) spx_test_rng_state = 88172645463325252ull;
  }
  return spx_test_rng_state;
}
static inline double spx_test_rand(void) {
  uint64_t x = spx_test_seed();
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  spx_test_rng_state = x;
  return (double)((x * 2685821657736338717ull) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}
static inline void spx_test_fill(double *v, int64_t n) {
  int64_t i;
  for (i = 0; i < n; i++) v[i] = spx_test_rand();
}

/* ||a - b||_2 / ||b||_2 (or the absolute norm when b is zero); NaN anywhere gives +inf so a NaN
 * never passes a tolerance check. */
/* ||a - b|| / ||b|| (||a - b|| when b is 0), with both sums scaled by the largest |b| so that
 * values past 1e154 or below 1e-154 do not overflow or vanish. Any NaN or Inf in a or b, unless
 * equal at the same place (the same Inf, or both NaN), returns 1e300: a check `err > tol` fails. */
static inline double spx_test_relerr(const double *a, const double *b, int64_t n) {
  double num = 0, den = 0, m = 0;
  int64_t i;
  for (i = 0; i < n; i++) {
    double ab = b[i] < 0 ? -b[i] : b[i], aa = a[i] < 0 ? -a[i] : a[i];
    int fa = a[i] - a[i] == 0, fb = b[i] - b[i] == 0;
    if (!fa || !fb) {
      if (fa || fb || !((a[i] != a[i] && b[i] != b[i]) || a[i] == b[i])) return 1e300;
      continue; /* the same non-finite value on both sides */
    }
    if (ab > m) m = ab;
    if (aa > m) m = aa;
  }
  if (m == 0) return 0;
  for (i = 0; i < n; i++) {
    double d, bs;
    if (a[i] - a[i] != 0) continue;
    d = a[i] / m - b[i] / m;
    bs = b[i] / m;
    num += d * d;
    den += bs * bs;
  }
  return den > 0 ? __builtin_sqrt(num / den) : __builtin_sqrt(num) * m;
}

#endif /* SPX_TEST_H */
