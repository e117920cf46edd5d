/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/mm.h: reading and writing.
 *
 * Reading, in order: the file into memory (mm_input_impl.h: read, never mapped; inflated when it
 * starts with the gzip magic; bounded as it arrives by what its header allows), then the text
 * (mm_parse_impl.h): the header and size line, pass 1 (count lines and entries per chunk; chunks
 * end at line boundaries), pass 2 (parse each chunk into its own slice of preallocated triplet
 * arrays), the mirrored half of symmetric files, then spx_csr_from_coo. Chunks run in parallel
 * under OpenMP; each keeps its first error and the earliest one in the file is reported, so
 * messages (and results) do not depend on the thread count.
 *
 * Writing: batches of entries formatted in parallel and written in order, gzip when the name ends
 * in .gz, into a temporary file that replaces the old one only once complete. */
#include <errno.h>
#include <math.h> /* isnan: a macro, no libm */
#include <zlib.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif
#include "common.h"
#include "mm_text.h"
#include "../csr.h"
#include "../io.h"
#include "../mm.h"
#include "../version.h"

/* ---------------------------------------------------------------- reading */

static spx_status spx__mm_check_args(spx_dtype dtype, spx_csr **out, spx_mm_info *info, const char *fn) {
  if (out) *out = NULL;
  if (info) memset(info, 0, sizeof *info);
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (dtype != SPX_DOUBLE && dtype != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: unknown dtype %d", fn, (int)dtype);
  return SPX_OK;
}

spx_status spx_mm_read(const char *path, spx_dtype dtype, spx_csr **out, spx_mm_info *info) {
  spx_mm_info tmp;
  spx__mm_src src;
  spx_status s;
  double t0 = spx__now();
  if (!info) info = &tmp;
  if ((s = spx__mm_check_args(dtype, out, info, "spx_mm_read"))) return s;
  if (!path) return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_read: path is NULL");
  memset(&src, 0, sizeof src);
  if ((s = spx__mm_load(path, &src))) return s;
  s = spx__mm_read_text(&src, path, dtype, out, info);
  info->seconds = spx__now() - t0;
  return s;
}

spx_status spx_mm_read_buffer(const char *data, size_t len, const char *name, spx_dtype dtype,
                              spx_csr **out, spx_mm_info *info) {
  spx_mm_info tmp;
  spx__mm_src src;
  spx_status s;
  double t0 = spx__now();
  if (!info) info = &tmp;
  if (!name) name = "<buffer>";
  if ((s = spx__mm_check_args(dtype, out, info, "spx_mm_read_buffer"))) return s;
  if (!data && len) return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_read_buffer: data is NULL");
  if ((s = spx__mm_text(data ? data : "", len, name, &src))) return s;
  s = spx__mm_read_text(&src, name, dtype, out, info);
  info->seconds = spx__now() - t0;
  return s;
}

/* ---------------------------------------------------------------- writing */

/* Checks a == a^T (skew: a == -a^T, so a zero diagonal), pattern and values; NaN equals NaN. */
static spx_status spx__mm_check_sym(const spx_csr *a, int skew) {
  spx_csr *t;
  spx_status s;
  int64_t i;
  if (a->nrows != a->ncols)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_write: a %s matrix must be square, not %lld x %lld",
                     skew ? "skew-symmetric" : "symmetric", (long long)a->nrows, (long long)a->ncols);
  if ((s = spx_csr_transpose(a, &t))) return s;
  for (i = 0; i < a->nrows; i++) {
    int64_t p = a->row_ptr[i], q = t->row_ptr[i], pe = a->row_ptr[i + 1], qe = t->row_ptr[i + 1];
    for (; p < pe || q < qe; p++, q++) {
      int64_t cp = p < pe ? a->col_idx[p] : INT64_MAX, cq = q < qe ? t->col_idx[q] : INT64_MAX;
      double x, y;
      if (cp != cq) {
        int64_t c = SPX__MIN(cp, cq);
        int here = cp < cq; /* stored in row i of a, missing in row i of a^T */
        spx_csr_destroy(t);
        return spx__fail(SPX_INVALID_ARGUMENT,
                         "spx_mm_write: matrix is not %s: A[%lld][%lld] is stored but A[%lld][%lld] is not (0-based)",
                         skew ? "skew-symmetric" : "symmetric", (long long)(here ? i : c),
                         (long long)(here ? c : i), (long long)(here ? c : i), (long long)(here ? i : c));
      }
      x = a->dtype == SPX_DOUBLE ? a->val.d[p] : a->val.f[p];
      y = t->dtype == SPX_DOUBLE ? t->val.d[q] : t->val.f[q];
      if (skew) y = -y;
      if (x != y && !(isnan(x) && isnan(y))) {
        spx_csr_destroy(t);
        return spx__fail(SPX_INVALID_ARGUMENT,
                         "spx_mm_write: matrix is not %s: A[%lld][%lld] = %.17g but A[%lld][%lld] = %.17g (0-based)",
                         skew ? "skew-symmetric" : "symmetric", (long long)i, (long long)cp, x,
                         (long long)cp, (long long)i, skew ? -y : y);
      }
    }
  }
  spx_csr_destroy(t);
  return SPX_OK;
}

static char *spx__mm_utoa(char *o, uint64_t x) {
  char t[24];
  int n = 0;
  do t[n++] = (char)('0' + x % 10); while (x /= 10);
  while (n) *o++ = t[--n];
  return o;
}

/* The shorter of two precisions that reads back to the same value. */
static char *spx__mm_fmt(char *o, double v, int fl) {
  int n;
  if (isnan(v)) { memcpy(o, "nan", 3); return o + 3; }
  n = snprintf(o, 32, fl ? "%.6g" : "%.15g", v);
  if (fl ? strtof(o, NULL) != (float)v : strtod(o, NULL) != v) n = snprintf(o, 32, fl ? "%.9g" : "%.17g", v);
  return o + n;
}

#define SPX__MM_LINE_MAX 64 /* two 10-digit indices, a 24-character value, blanks and '\n' */

/* Formats entries [kb, ke) of a (the lower triangle only when lower; strictly when strict). */
static size_t spx__mm_format(const spx_csr *a, int64_t kb, int64_t ke, int lower, int strict, char *buf) {
  int64_t lo = 0, hi = a->nrows, k;
  char *o = buf;
  while (hi - lo > 1) { /* the row holding kb: last i with row_ptr[i] <= kb */
    int64_t mid = lo + (hi - lo) / 2;
    if (a->row_ptr[mid] <= kb) lo = mid; else hi = mid;
  }
  for (k = kb; k < ke; k++) {
    int64_t j = a->col_idx[k];
    while (a->row_ptr[lo + 1] <= k) lo++;
    if (lower && (j > lo || (strict && j == lo))) continue;
    o = spx__mm_utoa(o, (uint64_t)lo + 1);
    *o++ = ' ';
    o = spx__mm_utoa(o, (uint64_t)j + 1);
    *o++ = ' ';
    o = spx__mm_fmt(o, a->dtype == SPX_DOUBLE ? a->val.d[k] : a->val.f[k], a->dtype == SPX_FLOAT);
    *o++ = '\n';
  }
  return (size_t)(o - buf);
}

typedef struct spx__mm_out {
  FILE *f;
  gzFile g;
} spx__mm_out;

static int spx__mm_put(spx__mm_out *w, const char *b, size_t n) {
  if (w->f) return fwrite(b, 1, n, w->f) == n;
  while (n) {
    unsigned m = (unsigned)SPX__MIN(n, (size_t)1 << 30);
    if (gzwrite(w->g, b, m) != (int)m) return 0;
    b += m; n -= m;
  }
  return 1;
}

spx_status spx_mm_write(const char *path, const spx_csr *a, spx_mm_symmetry symmetry) {
  enum { BATCH = 1 << 15 };
  spx__mm_out w = {NULL, NULL};
  spx_file *file = NULL;
  spx_status s = SPX_OK;
  char head[256], *buf = NULL;
  size_t pl = path ? strlen(path) : 0, *len = NULL;
  int64_t nw = 0, k, k0, nth = 1;
  int lower = symmetry != SPX_MM_GENERAL, strict = symmetry == SPX_MM_SKEW_SYMMETRIC, ok = 1;
  if (!path || !a) return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_write: NULL argument");
  if ((unsigned)symmetry >= SPX__MM_NSYM)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_write: unknown symmetry %d", (int)symmetry);
  if ((s = spx_csr_validate(a))) return spx__wrap(s, "spx_mm_write");
  if (lower && (s = spx__mm_check_sym(a, strict))) return s;
  if (!lower) nw = a->nnz;
  else {
    int64_t i;
    for (i = 0; i < a->nrows; i++)
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) nw += a->col_idx[k] < i || (!strict && a->col_idx[k] == i);
  }
#if defined(_OPENMP)
  nth = omp_get_max_threads();
#endif
  buf = (char *)spx__alloc((size_t)nth * BATCH, SPX__MM_LINE_MAX);
  len = (size_t *)spx__alloc((size_t)nth, sizeof *len);
  if (!buf || !len) { s = SPX_OUT_OF_MEMORY; goto done; }
  /* into a temporary beside path, renamed over it only once complete: a failed write (a full
   * disk) leaves an existing file as it was, even when it is the matrix being read */
  if ((s = spx_file_create(path, 0, &file))) goto done;
  if (pl > 3 && !strcmp(path + pl - 3, ".gz")) {
    int fd = dup(spx_file_fd(file));
    if (fd < 0 || !(w.g = gzdopen(fd, "wb"))) {
      if (fd >= 0) close(fd);
      s = spx__fail(SPX_OUT_OF_MEMORY, "%s: cannot start the gzip stream", path);
      goto done;
    }
  } else {
    w.f = spx_file_stream(file);
  }
  snprintf(head, sizeof head, "%%%%MatrixMarket matrix coordinate real %s\n%% written by spx %s (%s values)\n%lld %lld %lld\n",
           spx__mm_syms[symmetry], SPX_VERSION_STRING, spx_dtype_name(a->dtype), (long long)a->nrows,
           (long long)a->ncols, (long long)nw);
  ok = spx__mm_put(&w, head, strlen(head));
  /* Rounds of nth batches formatted in parallel, written in order. */
  for (k0 = 0; ok && k0 < a->nnz; k0 += nth * BATCH) {
    int64_t t;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) if (a->nnz > BATCH)
#endif
    for (t = 0; t < nth; t++) {
      int64_t kb = SPX__MIN(k0 + t * BATCH, a->nnz), ke = SPX__MIN(kb + BATCH, a->nnz);
      len[t] = spx__mm_format(a, kb, ke, lower, strict, buf + (size_t)t * BATCH * SPX__MM_LINE_MAX);
    }
    for (t = 0; ok && t < nth; t++) ok = spx__mm_put(&w, buf + (size_t)t * BATCH * SPX__MM_LINE_MAX, len[t]);
  }
  if (!ok) s = spx__fail(SPX_IO, "cannot write %s: %s (the file is unchanged)", path, strerror(errno ? errno : EIO));
  if (w.g && gzclose(w.g) != Z_OK && !s) s = spx__fail(SPX_IO, "cannot write %s: the gzip stream failed on close (the file is unchanged)", path);
  if (!s) s = spx_file_commit(file);
  else spx_file_abort(file);
  file = NULL;
done:
  spx_file_abort(file);
  SPX_FREE(buf);
  SPX_FREE(len);
  return s;
}
