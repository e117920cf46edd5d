/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/csr.h. */
#include "common.h"
#include "host.h"
#include "../csr.h"
#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#include <unistd.h>
#define SPX__CSR_POSIX 1
#else
#define SPX__CSR_POSIX 0
#endif

const char *spx_dtype_name(spx_dtype t) {
  return t == SPX_DOUBLE ? "double" : t == SPX_FLOAT ? "float" : "unknown";
}

static spx_status spx__check_dtype(spx_dtype t) {
  if (t != SPX_DOUBLE && t != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "unknown dtype %d (use SPX_DOUBLE or SPX_FLOAT)", (int)t);
  return SPX_OK;
}

/* ---- Memory headroom. A build whose O(rows) arrays cannot fit is refused before it allocates:
 * calloc of pages nobody touched yet succeeds, so the failure would otherwise come later, as the
 * kernel killing the process part-way through the build. */

static const char *spx__mem_str(double b, char buf[24]) {
  if (b >= 1073741824.0) snprintf(buf, 24, "%.1f GiB", b / 1073741824.0);
  else if (b >= 1048576.0) snprintf(buf, 24, "%.1f MiB", b / 1048576.0);
  else if (b >= 1024.0) snprintf(buf, 24, "%.1f KiB", b / 1024.0);
  else snprintf(buf, 24, "%.0f bytes", b);
  return buf;
}

/* The smaller of two byte counts where a negative one is unknown. */
static double spx__mem_min(double a, double b) { return a < 0 ? b : b < 0 ? a : SPX__MIN(a, b); }

#if defined(__linux__)
/* MemAvailable plus SwapFree of /proc/meminfo in bytes; -1 when it cannot be read. */
static double spx__meminfo_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[128];
  double av = -1, sw = 0, kb;
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "MemAvailable: %lf", &kb) == 1) av = kb * 1024;
    else if (sscanf(line, "SwapFree: %lf", &kb) == 1) sw = kb * 1024;
  }
  fclose(f);
  return av < 0 ? -1 : av + sw;
}

/* A number in a file (a cgroup's memory.max, "max" meaning none; a /proc/self/statm field);
 * -1 when absent. field counts the numbers on the line from 0. */
static double spx__file_number(const char *path, int field) {
  FILE *f = fopen(path, "r");
  double v = -1;
  int i, ok = 1;
  if (!f) return -1;
  for (i = 0; ok && i <= field; i++) ok = fscanf(f, "%lf", &v) == 1;
  fclose(f);
  return ok ? v : -1;
}
#endif

/* Bytes this process can still fill: the least of what the system has available (Linux:
 * MemAvailable plus free swap; elsewhere physical memory), the room under the cgroup (v2) limit
 * it runs in, and the room under RLIMIT_AS and RLIMIT_DATA. Negative when nothing is known. */
static double spx__mem_available(void) {
  double av = -1, page = 4096, vm = 0, data = 0;
#if SPX__CSR_POSIX
  struct rlimit rl;
  long ps = sysconf(_SC_PAGESIZE);
  if (ps > 0) page = (double)ps;
#endif
#if defined(__linux__)
  {
    double lim = spx__file_number("/sys/fs/cgroup/memory.max", 0);
    double cur = spx__file_number("/sys/fs/cgroup/memory.current", 0);
    av = spx__meminfo_available();
    if (lim >= 0 && cur >= 0) av = spx__mem_min(av, SPX__MAX(lim - cur, 0.0));
    vm = SPX__MAX(spx__file_number("/proc/self/statm", 0), 0.0) * page;   /* what RLIMIT_AS counts */
    data = SPX__MAX(spx__file_number("/proc/self/statm", 5), 0.0) * page; /* and RLIMIT_DATA */
  }
#elif SPX__CSR_POSIX && defined(_SC_PHYS_PAGES)
  {
    long n = sysconf(_SC_PHYS_PAGES);
    if (n > 0) av = (double)n * page;
  }
#endif
#if SPX__CSR_POSIX
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    av = spx__mem_min(av, SPX__MAX((double)rl.rlim_cur - vm, 0.0));
  if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    av = spx__mem_min(av, SPX__MAX((double)rl.rlim_cur - data, 0.0));
#endif
  (void)page; (void)vm; (void)data;
  return av;
}

/* 1 when building a CSR of nrows rows from nnz triplets (extra: bytes the caller holds on top, as
 * the reader's triplets) needs more memory than spx__mem_available reports, with the sentence
 * saying so in msg. What spx_csr_from_coo holds at its peak: row pointers and a cursor (16 bytes
 * a row), bucketed columns and values (12 an entry), and for float the CSR it copies into. Needs
 * under 64 MiB are not checked: reading /proc costs more than they do, and malloc reports theirs. */
int spx__coo_short(int64_t nrows, int64_t nnz, spx_dtype dtype, double extra, char *msg, size_t len) {
  double rows = 16.0 * ((double)nrows + 1), ent = 12.0 * (double)nnz + extra, av;
  char b1[24], b2[24], b3[24];
  if (dtype == SPX_FLOAT) { rows += 8.0 * ((double)nrows + 1); ent += 8.0 * (double)nnz; }
  if (rows + ent < 67108864.0 || (av = spx__mem_available()) < 0 || rows + ent <= av) return 0;
  snprintf(msg, len, "%lld rows need %s of row pointers and %lld entr%s %s more; only %s of memory are available",
           (long long)nrows, spx__mem_str(rows, b1), (long long)nnz, nnz == 1 ? "y" : "ies", spx__mem_str(ent, b2),
           spx__mem_str(av, b3));
  return 1;
}

spx_status spx_csr_create(int64_t nrows, int64_t ncols, int64_t nnz, spx_dtype dtype, spx_csr **out) {
  spx_csr *a;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_create: out is NULL");
  *out = NULL;
  if (spx__check_dtype(dtype)) return SPX_INVALID_ARGUMENT;
  if (nrows < 0 || ncols < 0 || nnz < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_create: negative size (%lld x %lld, nnz %lld)",
                     (long long)nrows, (long long)ncols, (long long)nnz);
  if (ncols > INT32_MAX || nrows > INT32_MAX)
    return spx__fail(SPX_RANGE, "matrix %lld x %lld exceeds the 32-bit index limit (2^31-1)",
                     (long long)nrows, (long long)ncols);
  a = (spx_csr *)spx__calloc(1, sizeof *a);
  if (!a) return SPX_OUT_OF_MEMORY;
  a->nrows = nrows; a->ncols = ncols; a->nnz = nnz; a->dtype = dtype;
  a->row_ptr = (int64_t *)spx__calloc((size_t)nrows + 1, sizeof(int64_t));
  a->col_idx = (int32_t *)spx__alloc((size_t)nnz, sizeof(int32_t));
  a->val.p = spx__alloc((size_t)nnz, SPX_DTYPE_SIZE(dtype));
  spx__advise_huge(a->col_idx, (size_t)nnz * sizeof(int32_t));
  spx__advise_huge(a->val.p, (size_t)nnz * SPX_DTYPE_SIZE(dtype));
  if (!a->row_ptr || !a->col_idx || !a->val.p) {
    spx_csr_destroy(a);
    return spx__fail(SPX_OUT_OF_MEMORY, "out of host memory for a %lld x %lld CSR with %lld nonzeros",
                     (long long)nrows, (long long)ncols, (long long)nnz);
  }
  *out = a;
  return SPX_OK;
}

void spx_csr_destroy(spx_csr *a) {
  if (!a) return;
  SPX_FREE(a->row_ptr);
  SPX_FREE(a->col_idx);
  SPX_FREE(a->val.p);
  SPX_FREE(a);
}

spx_status spx_csr_copy(const spx_csr *a, spx_dtype dtype, spx_csr **out) {
  spx_csr *b;
  spx_status s;
  int64_t k;
  if (!a || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_copy: NULL argument");
  *out = NULL;
  /* The arrays are copied by their sizes, never indexed through their contents: the O(1) checks
   * are all a copy needs, and a plan copies matrices whose rows the device validates. */
  if ((s = spx__csr_validate_head(a))) return spx__wrap(s, "spx_csr_copy");
  if ((s = spx_csr_create(a->nrows, a->ncols, a->nnz, dtype, &b))) return s;
  memcpy(b->row_ptr, a->row_ptr, (size_t)(a->nrows + 1) * sizeof(int64_t));
  memcpy(b->col_idx, a->col_idx, (size_t)a->nnz * sizeof(int32_t));
  if (a->dtype == dtype) memcpy(b->val.p, a->val.p, (size_t)a->nnz * SPX_DTYPE_SIZE(dtype));
  else if (dtype == SPX_FLOAT) for (k = 0; k < a->nnz; k++) b->val.f[k] = (float)a->val.d[k];
  else for (k = 0; k < a->nnz; k++) b->val.d[k] = a->val.f[k];
  *out = b;
  return SPX_OK;
}

/* Heap-sort helper: sift entry r down within the first n entries (ordered by column). */
static void spx__sift(int32_t *c, double *v, int64_t r, int64_t n) {
  for (;;) {
    int64_t ch = 2 * r + 1;
    if (ch >= n) return;
    if (ch + 1 < n && c[ch + 1] > c[ch]) ch++;
    if (c[r] >= c[ch]) return;
    { int32_t t = c[r]; c[r] = c[ch]; c[ch] = t; }
    { double t = v[r]; v[r] = v[ch]; v[ch] = t; }
    r = ch;
  }
}

/* Sorts one row's (col, val) pairs by column: insertion sort for the short rows typical of sparse
 * matrices, heap sort (in place, O(n log n) worst case) for long ones. */
static void spx__sort_row(int32_t *c, double *v, int64_t n) {
  int64_t i, j;
  if (n <= 32) {
    for (i = 1; i < n; i++) {
      int32_t ci = c[i]; double vi = v[i];
      for (j = i - 1; j >= 0 && c[j] > ci; j--) { c[j + 1] = c[j]; v[j + 1] = v[j]; }
      c[j + 1] = ci; v[j + 1] = vi;
    }
    return;
  }
  for (i = n / 2 - 1; i >= 0; i--) spx__sift(c, v, i, n);
  for (j = n - 1; j > 0; j--) {
    { int32_t t = c[0]; c[0] = c[j]; c[j] = t; }
    { double t = v[0]; v[0] = v[j]; v[j] = t; }
    spx__sift(c, v, 0, j);
  }
}

/* Parallel, deterministic bucketing of triplets by row. Thread t owns a contiguous row range and
 * scans every triplet, keeping those of its rows: reading the row array once per thread is cheap
 * next to a scatter, needs no atomics, keeps input order within a row (input sorted by column, as
 * SuiteSparse writes it, stays sorted), and makes each thread first-touch its own output pages.
 * Ranges are balanced by rows for counting, then by nonzeros for the scatter. */
static int spx__nthreads(int64_t work) {
#if defined(_OPENMP)
  int t = omp_get_max_threads();
  if (work < (1 << 16)) return 1;
  return t < 1 ? 1 : t > 64 ? 64 : t;
#else
  (void)work;
  return 1;
#endif
}

static void spx__coo_bucket(int64_t nrows, int64_t nnz, const int32_t *row, const int32_t *col,
                            const double *val, int64_t *ptr, int64_t *next, int32_t *c, double *v) {
  int nt = spx__nthreads(nnz), t;
  int64_t bounds[65], i;
  for (t = 0; t <= nt; t++) bounds[t] = nrows * t / nt;
#if defined(_OPENMP)
#pragma omp parallel for num_threads(nt) schedule(static, 1) if (nt > 1)
#endif
  for (t = 0; t < nt; t++) {
    int64_t k, r0 = bounds[t], r1 = bounds[t + 1];
    for (k = 0; k < nnz; k++)
      if (row[k] >= r0 && row[k] < r1) ptr[row[k] + 1]++;
  }
  for (i = 0; i < nrows; i++) ptr[i + 1] += ptr[i];
  memcpy(next, ptr, (size_t)(nrows + 1) * sizeof *next);
  /* Re-split so each thread scatters about nnz/nt entries. */
  for (t = 1, i = 0; t < nt; t++) {
    while (i < nrows && ptr[i] < nnz * t / nt) i++;
    bounds[t] = i;
  }
#if defined(_OPENMP)
#pragma omp parallel for num_threads(nt) schedule(static, 1) if (nt > 1)
#endif
  for (t = 0; t < nt; t++) {
    int64_t k, r0 = bounds[t], r1 = bounds[t + 1];
    for (k = 0; k < nnz; k++)
      if (row[k] >= r0 && row[k] < r1) {
        int64_t d = next[row[k]]++;
        c[d] = col[k];
        v[d] = val ? val[k] : 1.0;
      }
  }
}

spx_status spx_csr_from_coo(int64_t nrows, int64_t ncols, int64_t nnz, const int32_t *row,
                            const int32_t *col, const double *val, spx_dtype dtype, spx_csr **out) {
  int64_t *ptr = NULL, *uniq = NULL, i, k;
  int32_t *c = NULL;  /* bucketed columns; uniq doubles as the bucketing cursor first */
  double *v = NULL;
  spx_csr *a = NULL;
  spx_status s;
  int bad = 0;
  if (!out || (nnz > 0 && (!row || !col)))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_from_coo: NULL argument");
  *out = NULL;
  if (nrows < 0 || ncols < 0 || nnz < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_from_coo: negative size");
  if (spx__check_dtype(dtype)) return SPX_INVALID_ARGUMENT;
  if (nrows > INT32_MAX || ncols > INT32_MAX)
    return spx__fail(SPX_RANGE, "matrix %lld x %lld exceeds the 32-bit index limit (2^31-1)",
                     (long long)nrows, (long long)ncols);
  {
    char msg[256];
    if (spx__coo_short(nrows, nnz, dtype, 0, msg, sizeof msg))
      return spx__fail(SPX_OUT_OF_MEMORY, "spx_csr_from_coo: %s", msg);
  }
#if defined(_OPENMP)
#pragma omp parallel for reduction(| : bad) \
    num_threads(spx__host_threads_for(nnz, SPX__HOST_GRAIN)) if (nnz > (1 << 16))
#endif
  for (k = 0; k < nnz; k++)
    bad |= row[k] < 0 || row[k] >= nrows || col[k] < 0 || col[k] >= ncols;
  if (bad)
    for (k = 0; k < nnz; k++)
      if (row[k] < 0 || row[k] >= nrows || col[k] < 0 || col[k] >= ncols)
        return spx__fail(SPX_RANGE, "entry %lld: (%d, %d) is outside the %lld x %lld matrix (0-based)",
                         (long long)k, (int)row[k], (int)col[k], (long long)nrows, (long long)ncols);
  ptr = (int64_t *)spx__calloc((size_t)nrows + 1, sizeof *ptr);
  uniq = (int64_t *)spx__alloc((size_t)nrows + 1, sizeof *uniq);
  c = (int32_t *)spx__alloc((size_t)nnz, sizeof *c);
  v = (double *)spx__alloc((size_t)nnz, sizeof *v);
  if (!ptr || !uniq || !c || !v) { s = SPX_OUT_OF_MEMORY; goto done; }
  spx__advise_huge(c, (size_t)nnz * sizeof *c);
  spx__advise_huge(v, (size_t)nnz * sizeof *v);
  spx__coo_bucket(nrows, nnz, row, col, val, ptr, uniq, c, v);
  /* Sort each row, then count the distinct columns per row (duplicates are summed below). */
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1024) if (nnz > (1 << 16))
#endif
  for (i = 0; i < nrows; i++) {
    int64_t b = ptr[i], e = ptr[i + 1], j, u = e > b;
    for (j = b + 1; j < e && c[j - 1] <= c[j]; j++) {}
    if (j < e) spx__sort_row(c + b, v + b, e - b);
    for (j = b + 1; j < e; j++) u += c[j] != c[j - 1];
    uniq[i + 1] = u;
  }
  uniq[0] = 0;
  for (i = 0; i < nrows; i++) uniq[i + 1] += uniq[i];
  if (uniq[nrows] == nnz && dtype == SPX_DOUBLE) {
    /* No duplicates (the usual case): the bucketed arrays are the CSR. Handing them over saves
     * a copy and a fresh allocation of 12 bytes per nonzero, which dominates large reads. */
    if (!(a = (spx_csr *)spx__calloc(1, sizeof *a))) { s = SPX_OUT_OF_MEMORY; goto done; }
    a->nrows = nrows; a->ncols = ncols; a->nnz = nnz; a->dtype = dtype;
    a->row_ptr = ptr; a->col_idx = c; a->val.d = v;
    ptr = NULL; c = NULL; v = NULL;
    *out = a;
    s = SPX_OK;
    goto done;
  }
  if ((s = spx_csr_create(nrows, ncols, uniq[nrows], dtype, &a))) goto done;
  memcpy(a->row_ptr, uniq, (size_t)(nrows + 1) * sizeof *uniq);
  /* Sum duplicates in column order (fixed by the stable bucketing: deterministic results). */
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1024) if (nnz > (1 << 16))
#endif
  for (i = 0; i < nrows; i++) {
    int64_t j = ptr[i], w = uniq[i];
    while (j < ptr[i + 1]) {
      double sum = v[j];
      int32_t cj = c[j];
      for (j++; j < ptr[i + 1] && c[j] == cj; j++) sum += v[j];
      a->col_idx[w] = cj;
      if (dtype == SPX_DOUBLE) a->val.d[w] = sum;
      else a->val.f[w] = (float)sum;
      w++;
    }
  }
  *out = a;
  s = SPX_OK;
done:
  SPX_FREE(ptr); SPX_FREE(uniq); SPX_FREE(c); SPX_FREE(v);
  return s;
}

spx_status spx_csr_transpose(const spx_csr *a, spx_csr **out) {
  spx_csr *t;
  spx_status s;
  int64_t i, k, *next;
  if (!a || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_transpose: NULL argument");
  *out = NULL;
  /* The counts below index by column and the walk by row pointer: an invalid CSR is refused, not
   * read out of bounds (and only a valid one transposes to a valid one). */
  if ((s = spx_csr_validate(a))) return spx__wrap(s, "spx_csr_transpose");
  if ((s = spx_csr_create(a->ncols, a->nrows, a->nnz, a->dtype, &t))) return s;
  next = (int64_t *)spx__alloc((size_t)a->ncols + 1, sizeof *next);
  if (!next) { spx_csr_destroy(t); return SPX_OUT_OF_MEMORY; }
  for (k = 0; k < a->nnz; k++) t->row_ptr[a->col_idx[k] + 1]++;
  for (i = 0; i < a->ncols; i++) t->row_ptr[i + 1] += t->row_ptr[i];
  memcpy(next, t->row_ptr, (size_t)(a->ncols + 1) * sizeof *next);
  /* Walking rows in order makes every transposed row come out sorted. */
  for (i = 0; i < a->nrows; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      int64_t d = next[a->col_idx[k]]++;
      t->col_idx[d] = (int32_t)i;
      if (a->dtype == SPX_DOUBLE) t->val.d[d] = a->val.d[k];
      else t->val.f[d] = a->val.f[k];
    }
  SPX_FREE(next);
  *out = t;
  return SPX_OK;
}

/* The O(1) part of spx_csr_validate: sizes, arrays, row_ptr's ends (a plan that profiles the
 * matrix on the device checks the rest there, and calls spx_csr_validate for the message). */
spx_status spx__csr_validate_head(const spx_csr *a) {
  if (!a) return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_validate: NULL matrix");
  if (a->nrows < 0 || a->ncols < 0 || a->ncols > INT32_MAX || a->nnz < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "CSR: bad sizes %lld x %lld, nnz %lld", (long long)a->nrows,
                     (long long)a->ncols, (long long)a->nnz);
  if (!a->row_ptr || (a->nnz > 0 && (!a->col_idx || !a->val.p)))
    return spx__fail(SPX_INVALID_ARGUMENT, "CSR: missing arrays");
  if (a->dtype != SPX_DOUBLE && a->dtype != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "CSR: unknown dtype %d (SPX_DOUBLE or SPX_FLOAT)", (int)a->dtype);
  if (a->row_ptr[0] != 0 || a->row_ptr[a->nrows] != a->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "CSR: row_ptr[0] = %lld and row_ptr[n] = %lld (want 0 and nnz = %lld)",
                     (long long)a->row_ptr[0], (long long)a->row_ptr[a->nrows], (long long)a->nnz);
  return SPX_OK;
}

/* Rows [r0, r1) well formed: offsets in order within [0, nnz], columns strictly increasing inside
 * [0, ncols). spx_csr_validate's per-row test; the planner's column sample checks the few rows it
 * reads with it before the device has validated the rest. */
int spx__csr_rows_ok(const spx_csr *a, int64_t r0, int64_t r1) {
  int64_t i, k;
  for (i = r0; i < r1; i++) {
    int64_t b = a->row_ptr[i], e = a->row_ptr[i + 1], prev = -1;
    if (b < 0 || e < b || e > a->nnz) return 0;
    for (k = b; k < e; k++) {
      if (a->col_idx[k] <= prev || a->col_idx[k] >= a->ncols) return 0;
      prev = a->col_idx[k];
    }
  }
  return 1;
}

/* Whether rows [r0, r1) (pointers checked) have every column in [0, ncols) and, when sorted, no
 * column at or below its predecessor inside a row. Flat over the chunk's nonzeros, without a branch
 * per row, so that short rows cost what long ones do: a descent (c[k] <= c[k-1]) is legal only where
 * k starts a row, so the descents counted over the chunk must equal those counted at its row starts. */
static int spx__csr_chunk_ok(const spx_csr *a, int64_t r0, int64_t r1, int sorted) {
  const int32_t *c = a->col_idx;
  const int64_t k0 = a->row_ptr[r0], k1 = a->row_ptr[r1];
  /* int32 columns: past 2^31 every column is in range, and a negative one wraps to 2^31 or more */
  const uint32_t nc = a->ncols > (int64_t)INT32_MAX ? (uint32_t)INT32_MAX + 1u : (uint32_t)a->ncols;
  uint32_t out = 0;
  int64_t k, i, desc = 0, at_starts = 0;
  /* one pass, vectorized where OpenMP is on (omp simd: no threads, only the loop's lanes) */
  if (sorted && k1 > k0) {
#if defined(_OPENMP)
#pragma omp simd reduction(| : out) reduction(+ : desc)
#endif
    for (k = k0 + 1; k < k1; k++) {
      out |= (uint32_t)((uint32_t)c[k] >= nc); /* a negative column wraps past nc */
      desc += c[k] <= c[k - 1];
    }
    out |= (uint32_t)((uint32_t)c[k0] >= nc);
  } else {
#if defined(_OPENMP)
#pragma omp simd reduction(| : out)
#endif
    for (k = k0; k < k1; k++) out |= (uint32_t)((uint32_t)c[k] >= nc);
  }
  if (out || !sorted) return !out;
  if (!desc) return 1;
  for (i = r0 + 1; i < r1; i++) { /* each start position once: the first row that begins there */
    const int64_t b = a->row_ptr[i];
    if (b > a->row_ptr[i - 1] && b < k1) at_starts += c[b] <= c[b - 1];
  }
  return desc == at_starts;
}

/* Rows per chunk of the parallel check: enough to amortize a chunk's start, few enough to balance. */
#define SPX__CSR_CHUNK_ROWS 2048

/* spx_csr_validate's checks up to level (SPX__CSR_*); the message names the first violation.
 * Pointers first, so the entry checks never read past nnz. Both passes run in parallel and keep the
 * first bad row or chunk (a min reduction), from which the serial loop names the violation: the
 * same message as a serial walk, at the cost of one pass (validation sits on every plan's setup). */
/* Whether a row pointer goes back in rows [lo, hi), in vector lanes. */
static int spx__csr_ptrs_back(const int64_t *rp, int64_t lo, int64_t hi) {
  int64_t i;
  int back = 0;
#if defined(_OPENMP)
#pragma omp simd reduction(| : back)
#endif
  for (i = lo; i < hi; i++) back |= rp[i + 1] < rp[i];
  return back;
}

spx_status spx__csr_verify(const spx_csr *a, int level) {
  int64_t i, k, bad = a ? a->nrows : 0, nchunk;
  spx_status s;
  if ((s = spx__csr_validate_head(a))) return s;
  { /* whether any pointer goes back (on threads from a million rows, where the lanes alone take
     * longer than waking them); the first that does only then. The head checked row_ptr[0] = 0
     * and row_ptr[n] = nnz, so rising pointers stay within [0, nnz]. */
    const int64_t *rp = a->row_ptr, piece = (int64_t)1 << 16;
    int back = 0;
    if (a->nrows <= ((int64_t)1 << 20)) {
      back = spx__csr_ptrs_back(rp, 0, a->nrows);
    } else {
      const int64_t np = (a->nrows + piece - 1) / piece;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(| : back) num_threads(spx__host_threads_for(a->nrows, SPX__HOST_GRAIN))
#endif
      for (i = 0; i < np; i++) back |= spx__csr_ptrs_back(rp, i * piece, SPX__MIN(a->nrows, (i + 1) * piece));
    }
    for (i = 0; back && i < a->nrows; i++)
      if (rp[i + 1] < rp[i] || rp[i + 1] > a->nnz) {
        bad = i;
        break;
      }
  }
  if (bad < a->nrows)
    return spx__fail(SPX_INVALID_ARGUMENT, "CSR: row_ptr[%lld] = %lld is out of order or past nnz",
                     (long long)bad + 1, (long long)a->row_ptr[bad + 1]);
  if (level == SPX__CSR_PTRS) return SPX_OK;
  nchunk = (a->nrows + SPX__CSR_CHUNK_ROWS - 1) / SPX__CSR_CHUNK_ROWS;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1) reduction(min : bad) \
    num_threads(spx__host_threads_for(a->nnz, SPX__HOST_GRAIN)) if (a->nnz > 32768)
#endif
  for (i = 0; i < nchunk; i++) {
    const int64_t r0 = i * SPX__CSR_CHUNK_ROWS, r1 = SPX__MIN(a->nrows, r0 + SPX__CSR_CHUNK_ROWS);
    if (!spx__csr_chunk_ok(a, r0, r1, level == SPX__CSR_SORTED)) bad = SPX__MIN(bad, r0);
  }
  for (i = bad; i < a->nrows; i++) {
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      if (a->col_idx[k] < 0 || a->col_idx[k] >= a->ncols)
        return spx__fail(SPX_INVALID_ARGUMENT, "CSR: row %lld has column %d outside [0, %lld)",
                         (long long)i, (int)a->col_idx[k], (long long)a->ncols);
      if (level == SPX__CSR_SORTED && k > a->row_ptr[i] && a->col_idx[k] <= a->col_idx[k - 1])
        return spx__fail(SPX_INVALID_ARGUMENT, "CSR: row %lld columns not strictly increasing at entry %lld",
                         (long long)i, (long long)k);
    }
  }
  return SPX_OK;
}

spx_status spx_csr_validate(const spx_csr *a) { return spx__csr_verify(a, SPX__CSR_SORTED); }

/* What reading a CSR through its row pointers and columns needs: spx_csr_validate less the column
 * order. Functions that only read the arrays that way check this much, so that no CSR makes them
 * read out of bounds: the converters take rows unsorted and with duplicates (SDIA keeps the last;
 * BSR refuses them in its own words, as its device converter does). */
spx_status spx__csr_in_bounds(const spx_csr *a) { return spx__csr_verify(a, SPX__CSR_BOUNDS); }

/* One SpMV body per value type; accumulation in the value type's precision for float is what a
 * GPU kernel does too, but the oracle accumulates in double so it is the more accurate side. Each
 * row's pointers and columns are checked as they are read (a validation pass first would cost as
 * much as the product, which host benchmarks time): a bad row is skipped and reported, never read
 * out of bounds. */
#define SPX__CSR_SPMV_BODY(T)                                                         \
  {                                                                                   \
    const T *xv = (const T *)x;                                                       \
    T *yv = (T *)y;                                                                   \
    const T *av = (const T *)a->val.p;                                                \
    const int64_t nnz = a->nnz;                                                       \
    const uint32_t nc = (uint32_t)a->ncols;                                           \
    int64_t i;                                                                        \
    SPX__OMP_FOR                                                                      \
    for (i = 0; i < a->nrows; i++) {                                                  \
      double sum = 0;                                                                 \
      int64_t k, b = a->row_ptr[i], e = a->row_ptr[i + 1];                            \
      if (b < 0 || e < b || e > nnz) { bad = SPX__MIN(bad, i); continue; }           \
      for (k = b; k < e; k++) {                                                       \
        uint32_t c = (uint32_t)a->col_idx[k]; /* a negative column wraps past nc */   \
        if (c >= nc) { bad = SPX__MIN(bad, i); break; }                              \
        sum += (double)av[k] * (double)xv[c];                                         \
      }                                                                               \
      yv[i] = (T)(beta == 0 ? alpha * sum : alpha * sum + beta * (double)yv[i]);      \
    }                                                                                 \
  }

#if defined(_OPENMP)
/* Threads only where there is enough work: a parallel region costs microseconds. */
#define SPX__OMP_FOR _Pragma("omp parallel for schedule(static, 256) reduction(min : bad) if (a->nnz > 32768)")
#else
#define SPX__OMP_FOR
#endif

spx_status spx_csr_spmv(const spx_csr *a, double alpha, const void *x, double beta, void *y) {
  spx_status s;
  int64_t bad;
  if (!a || (a->ncols > 0 && !x) || (a->nrows > 0 && !y))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_spmv: NULL argument");
  if ((s = spx__csr_validate_head(a))) return spx__wrap(s, "spx_csr_spmv");
  bad = a->nrows;
  if (a->dtype == SPX_DOUBLE) SPX__CSR_SPMV_BODY(double)
  else SPX__CSR_SPMV_BODY(float)
  if (bad < a->nrows) {
    if (!(s = spx__csr_in_bounds(a))) /* only if another thread changed the matrix meanwhile */
      s = spx__fail(SPX_INVALID_ARGUMENT, "CSR: row %lld changed while it was read", (long long)bad);
    return spx__wrap(s, "spx_csr_spmv");
  }
  return SPX_OK;
}
