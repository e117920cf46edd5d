/* SPDX-License-Identifier: BSD-3-Clause */
/* A host CSR staged on the device for the planner (templates/analyze.cu): the tuner's side of the
 * device, above the device matrices. One upload serves the row profile and validation (kernels
 * instead of host passes), then the plan's build: cuSPARSE and the CSR kernel wrap the staged
 * arrays, the device converters (cuda_impl.h) take them as their input (spx__dcsr, dmatrix.h).
 * A CSR the caller already has on the device (spx_plan_create_device) is adopted instead: nothing
 * uploaded, its 32-bit row pointers widened for the converters, the same profile. */
#include "common.h"
#include "cuda_types.h"
#include "dmatrix.h"
#include "../csr.h"
#include "../device.h"
#include "../jit.h"

void spx__dcsr_free(spx__dcsr *d) {
  if (!d || !d->ctx) return;
  if (d->va_up) { /* workers may still write into va */
    (void)spx__dcsr_values_wait(d);
    spx_clear_error();
  }
  spx_device_free(d->ctx, d->rp);
  if (!d->caller) {
    spx_device_free(d->ctx, d->rp32);
    spx_device_free(d->ctx, d->ci); spx_device_free(d->ctx, d->va);
  }
  memset(d, 0, sizeof *d);
}

/* The values, allocated and their upload started: beside the pattern's where the plan stages them
 * (spx__plan_stage_values), else when a build takes the staged arrays. */
spx_status spx__dcsr_values_begin(spx__dcsr *d, const spx_csr *a) {
  size_t vb;
  spx_status s;
  if (d->has_values) return SPX_OK;
  if (!a) return spx__fail(SPX_INTERNAL, "staged CSR: its values are not up and no host matrix was given to upload them from");
  vb = SPX_DTYPE_SIZE(a->dtype);
  if (a->nnz != d->nnz || a->dtype != d->dtype) return spx__fail(SPX_INTERNAL, "staged CSR and matrix differ");
  if (!d->va && (s = spx_device_alloc(d->ctx, (size_t)a->nnz * vb + vb, &d->va))) return s;
  if ((s = spx__h2d_upload(d->ctx, d->va, a->val.p, (size_t)a->nnz * vb, 0, &d->va_up))) return s;
  d->has_values = 1;
  return SPX_OK;
}

/* The values uploaded, done on return. spx__dcsr_values_begin instead lets them go up while the
 * caller works on the pattern (a device converter: its counts, scans and sort need no values),
 * and spx__dcsr_values_wait comes before the first kernel that reads them. */
spx_status spx__dcsr_values(spx__dcsr *d, const spx_csr *a) {
  spx_status s = spx__dcsr_values_begin(d, a);
  return s ? s : spx__dcsr_values_wait(d);
}

/* The diagonal (min(rows, cols) doubles, 0 where a row has none) from the staged arrays and their
 * values (up: spx__dcsr_values_wait first) into the host array out: a kernel and an 8-byte-a-row
 * download, far cheaper than the host's pass over col_idx on a large matrix. */
spx_status spx__dcsr_diag(const spx__dcsr *d, double *out) {
  const char *defs[2] = {"SPX_BLOCK=256", d->dtype == SPX_FLOAT ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double"};
  long long n = SPX__MIN(d->nrows, d->ncols);
  int64_t grid = SPX__MIN((n + 255) / 256, 8 * (int64_t)SPX__MAX(1, d->ctx->info.sm_count));
  spx_devptr dd = 0;
  void *fn = NULL, *pr[5];
  spx_status s;
  if (!d->rp || !d->ci || !d->va || !d->has_values || d->va_up)
    return spx__fail(SPX_INTERNAL, "spx__dcsr_diag: nothing staged, or its values are not up yet");
  if (n < 1) return SPX_OK;
  if ((s = spx_jit_kernel(d->ctx, "analyze", "spx_analyze_diag", 2, defs, &fn)) ||
      (s = spx_device_alloc(d->ctx, (size_t)n * sizeof(double), &dd)))
    return s;
  pr[0] = &n; pr[1] = (void *)&d->rp; pr[2] = (void *)&d->ci; pr[3] = (void *)&d->va; pr[4] = &dd;
  s = spx__launch256(d->ctx, fn, grid, pr, "spx_analyze_diag");
  if (!s) s = spx_device_download(d->ctx, out, dd, (size_t)n * sizeof(double));
  spx_device_free(d->ctx, dd);
  return s;
}

/* The staged matrix back on the host, for a build that needs a host CSR (a format converted on the
 * host) where the plan kept none: the arrays as they are, valid (the device profile checked them).
 * The values must be up. */
spx_status spx__dcsr_download(const spx__dcsr *d, spx_csr **out) {
  spx_csr *a = NULL;
  spx_status s;
  *out = NULL;
  if (d->caller)
    return spx__fail(SPX_UNSUPPORTED, "the matrix is the caller's device arrays (spx_plan_create_device), which a plan "
                     "never downloads, and this build needs it on the host");
  if (!d->ctx || !d->rp || !d->ci || !d->has_values || d->va_up)
    return spx__fail(SPX_INTERNAL, "spx__dcsr_download: nothing staged, or its values are not up yet");
  if ((s = spx_csr_create(d->nrows, d->ncols, d->nnz, d->dtype, &a))) return s;
  if ((s = spx_device_download(d->ctx, a->row_ptr, d->rp, (size_t)(d->nrows + 1) * 8)) ||
      (s = spx_device_download(d->ctx, a->col_idx, d->ci, (size_t)d->nnz * 4)) ||
      (s = spx_device_download(d->ctx, a->val.p, d->va, (size_t)d->nnz * SPX_DTYPE_SIZE(d->dtype)))) {
    spx_csr_destroy(a);
    return s;
  }
  *out = a;
  return SPX_OK;
}

/* Row-length bins spx_analyze_rows counts in shared memory (8 KiB per block); longer rows take a
 * second kernel. */
#define SPX__ANALYZE_HIST 2048
#define SPX__STR2(x) #x
#define SPX__STR(x) SPX__STR2(x)

/* The profile's kernels (templates/analyze.cu): the rows kernel, the histogram's tail, and (widen
 * non-NULL) the caller's 32-bit row pointers made 64-bit. */
static spx_status spx__dcsr_kernels(spx_context *ctx, void **frow, void **fhist, void **fwiden) {
  const char *defs[2] = {"SPX_BLOCK=256", "SPX_HIST_SHARED=" SPX__STR(SPX__ANALYZE_HIST)};
  spx_status s;
  if ((s = spx_jit_kernel(ctx, "analyze", "spx_analyze_rows", 2, defs, frow)) ||
      (s = spx_jit_kernel(ctx, "analyze", "spx_analyze_hist", 2, defs, fhist)))
    return s;
  return fwiden ? spx_jit_kernel(ctx, "analyze", "spx_analyze_widen", 2, defs, fwiden) : SPX_OK;
}

/* The rows kernel over d's pattern (rp, ci up; its counters zeroed at out, past rp's end), writing
 * rp32 on the way where given (0: not), and the counters down into o (9 + SPX__ANALYZE_HIST words;
 * NULL: not read, the launch queued and not waited for). */
static spx_status spx__dcsr_rows(spx__dcsr *d, void *frow, int tpr, spx_devptr rp32, spx_devptr out, uint64_t *o) {
  long long n = d->nrows, ncols = d->ncols, nnz = d->nnz;
  void *pr[8] = {&n, &ncols, &nnz, &d->rp, &d->ci, &rp32, &tpr, &out};
  spx_status s;
  /* grid-stride: a few blocks per SM, each one atomic per counter */
  if ((s = spx__launch256(d->ctx, frow, SPX__MIN((n + 255) / 256, 1024), pr, "spx_analyze_rows"))) return s;
  return o ? spx_device_download(d->ctx, o, out, (9 + SPX__ANALYZE_HIST) * 8) : SPX_OK;
}

/* The row-length histogram (r[1] + 1 entries, the caller frees it) from the counters o, the rows
 * longer than the shared bins counted by a second kernel. */
static spx_status spx__dcsr_hist(spx__dcsr *d, void *fhist, const uint64_t *o, const uint64_t r[9], int64_t **hist) {
  long long n = d->nrows, nbins = (long long)r[1] + 1, lo = SPX__ANALYZE_HIST;
  spx_devptr dh = 0;
  spx_status s = SPX_OK;
  if (!(*hist = (int64_t *)spx__calloc((size_t)nbins, sizeof **hist))) return SPX_OUT_OF_MEMORY;
  memcpy(*hist, o + 9, (size_t)SPX__MIN(nbins, lo) * sizeof **hist);
  if (nbins > lo) { /* rows longer than the shared bins: their counts in a second pass */
    void *pr[5] = {&n, &d->rp, &lo, &nbins, &dh};
    int64_t g = SPX__MIN((n + 255) / 256, 1024);
    if ((s = spx_device_alloc(d->ctx, (size_t)(nbins - lo) * 8, &dh)) || (s = spx_device_memset(d->ctx, dh, 0, (size_t)(nbins - lo) * 8)) ||
        (s = spx__launch256(d->ctx, fhist, g, pr, "spx_analyze_hist")) ||
        (s = spx_device_download(d->ctx, *hist + lo, dh, (size_t)(nbins - lo) * 8))) {
      SPX_FREE(*hist);
      *hist = NULL;
    }
  }
  spx_device_free(d->ctx, dh);
  return s;
}

/* r[9] from the counters o: the two minima the kernel keeps complemented, back. */
static void spx__dcsr_counters(const uint64_t *o, uint64_t r[9]) {
  memcpy(r, o, 9 * sizeof *r);
  r[0] = ~r[0]; r[2] = ~r[2];
}

/* Staging's and adoption's end, after the rows kernel (s: how it went): r[9] from the counters o
 * and, where no row is bad, the histogram; o freed either way; on failure (s, or the histogram's)
 * nothing of d or *hist stays. */
static spx_status spx__dcsr_end(spx__dcsr *d, void *fhist, uint64_t *o, uint64_t r[9], int64_t **hist, spx_status s) {
  double t0 = spx__now();
  if (!s) {
    spx__dcsr_counters(o, r);
    if (r[0] == ~0ull) s = spx__dcsr_hist(d, fhist, o, r, hist); /* a bad row: its owner names it */
    d->stage_s[3] = spx__now() - t0;
  }
  SPX_FREE(o);
  if (s) {
    SPX_FREE(*hist);
    *hist = NULL;
    spx__dcsr_free(d);
  }
  return s;
}

/* Uploads a's pattern (sizes and row_ptr[0], row_ptr[n] already checked) and profiles its rows: r[9] as
 * analyze.cu's out[] (r[0] the first bad row, ~0 when none), *hist the row-length histogram
 * (r[1] + 1 entries, the caller frees it). tpr: the CSR kernel's lanes per row for r[8]. values:
 * the values' upload starts first and runs beside the pattern's and the profile (a caller that
 * will wrap the arrays whatever the profile says; spx__dcsr_values_wait before they are read). hist
 * NULL: a caller that validates and profiles on the host (beside this upload, on another thread):
 * the rows kernel only narrows the row pointers, nothing is downloaded or waited for, r is not
 * written. On failure nothing stays allocated. */
spx_status spx__dcsr_stage(spx_context *ctx, const spx_csr *a, int tpr, int values, spx__dcsr *d, uint64_t r[9],
                           int64_t **hist, double *upload_s) {
  enum { hs = SPX__ANALYZE_HIST }; /* the histogram's bins the rows kernel fills */
  void *frow = NULL, *fhist = NULL;
  long long n = a->nrows, nnz = a->nnz;
  spx_devptr out = 0;
  uint64_t *o = NULL;
  spx_status s;
  double t0, ta = spx__now();
  memset(d, 0, sizeof *d);
  if (hist) *hist = NULL;
  if (ctx->backend != SPX_BACKEND_CUDA) return spx__fail(SPX_NOT_AVAILABLE, "staging a CSR needs the CUDA backend");
  d->ctx = ctx; d->nrows = n; d->ncols = a->ncols; d->nnz = nnz; d->dtype = a->dtype;
  if ((s = spx__dcsr_kernels(ctx, &frow, &fhist, NULL))) goto fail;
  if (hist && !(o = (uint64_t *)spx__alloc(9 + hs, sizeof *o))) { s = SPX_OUT_OF_MEMORY; goto fail; }
  /* The counters live past row_ptr's end, in its allocation: a cuMemAlloc and a cuMemFree less */
  if ((s = spx_device_alloc(ctx, (size_t)(n + 1 + 9 + hs) * 8, &d->rp)) || (s = spx_device_alloc(ctx, (size_t)nnz * 4 + 4, &d->ci)) ||
      (nnz <= INT32_MAX && (s = spx_device_alloc(ctx, (size_t)(n + 1) * 4, &d->rp32))))
    goto fail;
  out = d->rp + (spx_devptr)((n + 1) * 8);
  t0 = spx__now();
  d->stage_s[0] = t0 - ta;
  if ((hist && (s = spx_device_memset(ctx, out, 0, (9 + hs) * 8))) || (values && (s = spx__dcsr_values_begin(d, a))))
    goto fail;
  /* the column sample's thread runs beside: the workers leave it its CPUs */
  if ((s = spx__h2d_upload(ctx, d->rp, a->row_ptr, (size_t)(n + 1) * 8, spx__h2d_workers_beside(), NULL)) ||
      (s = spx__h2d_upload(ctx, d->ci, a->col_idx, (size_t)nnz * 4, spx__h2d_workers_beside(), NULL)))
    goto fail;
  d->stage_s[1] = spx__now() - t0;
  /* device storage for the matrix and its upload: what any plan of it pays (cuSPARSE's too) */
  *upload_s = d->stage_s[0] + d->stage_s[1];
  t0 = spx__now();
  s = spx__dcsr_rows(d, frow, tpr, d->rp32, out, o);
  d->stage_s[2] = spx__now() - t0;
fail:
  if (hist) return spx__dcsr_end(d, fhist, o, r, hist, s);
  if (s) spx__dcsr_free(d); /* no profile to read back: the host's stands */
  return s;
}

/* The caller's arrays adopted: rp (with the counters past its end) is the only allocation; the
 * widening kernel zeroes nothing, so the counters are set first, and it marks a bad first or last
 * row pointer in out[0] as the rows kernel marks a bad row. */
spx_status spx__dcsr_adopt(spx_context *ctx, const spx_dcsr *a, int tpr, spx__dcsr *d, uint64_t r[9], int64_t **hist) {
  enum { hs = SPX__ANALYZE_HIST };
  void *frow = NULL, *fhist = NULL, *fwiden = NULL;
  long long n = a->nrows, nnz = a->nnz;
  spx_devptr out = 0;
  uint64_t *o = NULL;
  spx_status s;
  double t0 = spx__now();
  memset(d, 0, sizeof *d);
  *hist = NULL;
  if (ctx->backend != SPX_BACKEND_CUDA) return spx__fail(SPX_NOT_AVAILABLE, "a CSR on the device needs the CUDA backend");
  d->ctx = ctx; d->nrows = n; d->ncols = a->ncols; d->nnz = nnz; d->dtype = a->dtype;
  d->rp32 = a->row_ptr; d->ci = a->col_idx; d->va = a->val;
  d->has_values = 1;
  d->caller = 1;
  if ((s = spx__dcsr_kernels(ctx, &frow, &fhist, &fwiden))) goto fail;
  if (!(o = (uint64_t *)spx__alloc(9 + hs, sizeof *o))) { s = SPX_OUT_OF_MEMORY; goto fail; }
  if ((s = spx_device_alloc(ctx, (size_t)(n + 1 + 9 + hs) * 8, &d->rp))) goto fail;
  out = d->rp + (spx_devptr)((n + 1) * 8);
  if ((s = spx_device_memset(ctx, out, 0, (9 + hs) * 8))) goto fail;
  {
    void *pr[5] = {&n, &nnz, &d->rp32, &d->rp, &out};
    if ((s = spx__launch256(ctx, fwiden, SPX__MIN((n + 1 + 255) / 256, 1024), pr, "spx_analyze_widen"))) goto fail;
  }
  d->stage_s[0] = spx__now() - t0;
  t0 = spx__now();
  s = spx__dcsr_rows(d, frow, tpr, 0, out, o);
  d->stage_s[2] = spx__now() - t0;
fail:
  return spx__dcsr_end(d, fhist, o, r, hist, s);
}

/* The int32 at element i of the caller's array p, into *v. */
static spx_status spx__dcsr_int_at(const spx__dcsr *d, spx_devptr p, long long i, int32_t *v) {
  return spx_device_download(d->ctx, v, p + (spx_devptr)(4 * i), 4);
}

spx_status spx__dcsr_bad_row(const spx__dcsr *d, uint64_t row, const char *what) {
  long long n = d->nrows, i = (long long)row, nnz = d->nnz;
  int32_t b = 0, e = 0;
  spx_status s;
  if ((s = spx__dcsr_int_at(d, d->rp32, 0, &b)) || (s = spx__dcsr_int_at(d, d->rp32, n, &e))) return s;
  if (b != 0) return spx__fail(SPX_INVALID_ARGUMENT, "%s: row_ptr[0] is %d, not 0", what, (int)b);
  if ((long long)e != nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: row_ptr[%lld] (nrows) is %d, not nnz = %lld", what, n, (int)e, nnz);
  if (i < 0 || i >= n) return spx__fail(SPX_INVALID_ARGUMENT, "%s: the device profile found a malformed row", what);
  if ((s = spx__dcsr_int_at(d, d->rp32, i, &b)) || (s = spx__dcsr_int_at(d, d->rp32, i + 1, &e))) return s;
  if (b < 0 || e < b || (long long)e > nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld: row_ptr[%lld] = %d and row_ptr[%lld] = %d are out of order or "
                     "outside [0, nnz = %lld]", what, i, i, (int)b, i + 1, (int)e, nnz);
  return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld: its columns are not strictly increasing inside [0, ncols = %lld)",
                   what, i, (long long)d->ncols);
}
