/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/analyze.h. */
#include <math.h> /* isnan, isinf: macros only, no libm */
#include "common.h"
#include "../analyze.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

/* Partial results of one chunk of rows. Everything is an integer except dev2, a sum of squared
 * integers (exact below 2^53), so neither chunking nor merge order changes the result. */
typedef struct spx__acc {
  int64_t row_min, row_max, empty, lower, upper, missing_diag, dom, strict;
  int64_t runs, run_max, in_runs2, nan_count, inf_count;
  int64_t n_lower, n_upper; /* entries below / above the diagonal */
  int64_t bad_row;          /* first row with a malformed column list; -1 when none */
  double dev2;              /* sum over rows of (len - m0)^2, m0 = nnz / nrows rounded down */
  int ss, ns;               /* this chunk's symmetry walk found no mismatch (pattern, values) */
} spx__acc;

static void spx__acc_init(spx__acc *s, int square) {
  memset(s, 0, sizeof *s);
  s->row_min = INT64_MAX;
  s->bad_row = -1;
  s->ss = s->ns = square;
}

static void spx__acc_merge(spx__acc *s, const spx__acc *t) {
  s->row_min = SPX__MIN(s->row_min, t->row_min);
  s->row_max = SPX__MAX(s->row_max, t->row_max);
  s->lower = SPX__MAX(s->lower, t->lower);
  s->upper = SPX__MAX(s->upper, t->upper);
  s->run_max = SPX__MAX(s->run_max, t->run_max);
  s->empty += t->empty; s->missing_diag += t->missing_diag;
  s->dom += t->dom; s->strict += t->strict;
  s->runs += t->runs; s->in_runs2 += t->in_runs2;
  s->nan_count += t->nan_count; s->inf_count += t->inf_count;
  s->n_lower += t->n_lower; s->n_upper += t->n_upper;
  s->dev2 += t->dev2;
  s->ss &= t->ss; s->ns &= t->ns;
  if (t->bad_row >= 0 && (s->bad_row < 0 || t->bad_row < s->bad_row)) s->bad_row = t->bad_row;
}

static double spx__aval(const spx_csr *a, int64_t k) {
  return a->dtype == SPX_DOUBLE ? a->val.d[k] : (double)a->val.f[k];
}

/* Everything about row i that needs only row i. Checks the columns on the way (range, strictly
 * increasing) and stops at the first bad one: the symmetry walk relies on sorted rows. */
static void spx__analyze_row(const spx_csr *a, int64_t i, int64_t m0, spx__acc *s) {
  int64_t b = a->row_ptr[i], e = a->row_ptr[i + 1], len = e - b, k, prev = -2, run = 0, nlo = 0;
  double diag = 0, off = 0, d = (double)(len - m0);
  int has_diag = 0;
  s->row_min = SPX__MIN(s->row_min, len);
  s->row_max = SPX__MAX(s->row_max, len);
  s->empty += len == 0;
  s->dev2 += d * d;
  for (k = b; k < e; k++) {
    int64_t c = a->col_idx[k];
    double v = spx__aval(a, k), av = SPX__ABS(v);
    if (c < 0 || c >= a->ncols || c <= prev) {
      if (s->bad_row < 0 || i < s->bad_row) s->bad_row = i;
      return;
    }
    if (isnan(v)) s->nan_count++;
    else if (isinf(v)) s->inf_count++;
    nlo += c < i;
    if (c == i) { diag = av; has_diag = 1; }
    else off += av;
    if (c == prev + 1) run++;
    else {
      if (run >= 2) s->in_runs2 += run;
      s->run_max = SPX__MAX(s->run_max, run);
      run = 1;
      s->runs++;
    }
    prev = c;
  }
  if (run >= 2) s->in_runs2 += run;
  s->run_max = SPX__MAX(s->run_max, run);
  s->n_lower += nlo;
  s->n_upper += len - nlo - has_diag;
  if (len) {
    if (a->col_idx[b] < i) s->lower = SPX__MAX(s->lower, i - a->col_idx[b]);
    if (a->col_idx[e - 1] > i) s->upper = SPX__MAX(s->upper, a->col_idx[e - 1] - i);
  }
  if (i < SPX__MIN(a->nrows, a->ncols) && !has_diag) s->missing_diag++;
  if (diag >= off) s->dom++; /* NaN compares false: a NaN row is not dominant */
  if (diag > off) s->strict++;
}

/* Symmetry of a square matrix without forming the transpose, one step of the walk.
 *
 * The walk visits rows i in ascending order; cur[j] points at the first entry of row j not yet
 * matched. An upper entry (i,j), j > i, must find its mirror (j,i) exactly at cur[j]: the mirrors
 * of column j's upper entries from rows i' < i are row j's lower entries with columns < i, already
 * consumed in ascending order, so (j,i) is the next one. Reaching row j, all its lower entries
 * must have been consumed: cur[j] (which only ever moved over columns < j) sits on the first
 * column >= j. So every lower entry is matched to a distinct upper entry with the same indices
 * mirrored; if moreover #upper == #lower (counted by the row pass), every upper entry is matched
 * too and the pattern is symmetric. Values are compared at each match.
 *
 * Chunked for threads: the chunk owning rows [r0, r1) owns their cursors and only matches upper
 * entries whose column lies in [r0, r1). It walks rows from lo = the smallest column of any lower
 * entry of its rows, since an earlier row can hold no mirror of them (an upper entry there is left
 * unmatched and the count catches it). For i < r0 the row is entered by binary search at column
 * r0. One chunk [0, n) is the plain sequential walk. Safe on a malformed CSR (row_ptr checked by
 * the caller, columns range-checked here); the row pass reports the malformation. */
static void spx__sym_row(const spx_csr *a, int64_t i, int64_t r0, int64_t r1, int64_t *cur, spx__acc *s) {
  int64_t e = a->row_ptr[i + 1], k;
  int dbl = a->dtype == SPX_DOUBLE;
  if (i >= r0) k = cur[i]; /* a lower entry still here has no mirror: the loop sees j < i */
  else {
    int64_t hi = e;
    k = a->row_ptr[i];
    while (k < hi) { /* first column >= r0 */
      int64_t mid = k + (hi - k) / 2;
      if (a->col_idx[mid] < r0) k = mid + 1;
      else hi = mid;
    }
  }
  for (; k < e; k++) {
    int64_t j = a->col_idx[k], p;
    if (j >= r1) break;
    if (j <= i) { /* the diagonal; below it, an unmatched lower entry */
      if (j < i) { s->ss = s->ns = 0; return; }
      continue;
    }
    p = cur[j];
    if (p >= a->row_ptr[j + 1] || a->col_idx[p] != i) { s->ss = s->ns = 0; return; }
    if (dbl ? a->val.d[p] != a->val.d[k] : a->val.f[p] != a->val.f[k]) s->ns = 0;
    cur[j] = p + 1;
  }
}

/* Rows [r0, r1): the row statistics and this chunk's symmetry walk, in one pass over its rows
 * (plus the rows from lo that may hold mirrors of them). */
static void spx__analyze_chunk(const spx_csr *a, int64_t r0, int64_t r1, int64_t m0, int64_t *cur, spx__acc *s) {
  int64_t i, lo = r0;
  if (cur) {
    for (i = r0; i < r1; i++) {
      if (a->row_ptr[i] < a->row_ptr[i + 1]) lo = SPX__MIN(lo, (int64_t)a->col_idx[a->row_ptr[i]]);
      cur[i] = a->row_ptr[i];
    }
    for (i = lo < 0 ? 0 : lo; i < r0 && s->ss; i++) spx__sym_row(a, i, r0, r1, cur, s);
  }
  for (i = r0; i < r1; i++) {
    spx__analyze_row(a, i, m0, s);
    if (cur && s->ss) spx__sym_row(a, i, r0, r1, cur, s);
  }
}

spx_status spx_analyze(const spx_csr *a, spx_analysis *out) {
  double t0 = spx__now(), mean;
  int64_t n, i, m0, *cur = NULL, *bnd = NULL;
  int square, nch = 1, t;
  spx__acc acc, *part = NULL;
  if (out) memset(out, 0, sizeof *out);
  if (!a || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_analyze: NULL argument");
  n = a->nrows;
  if (n < 0 || a->ncols < 0 || a->ncols > INT32_MAX || a->nnz < 0 || !a->row_ptr ||
      (a->nnz > 0 && (!a->col_idx || !a->val.p)) || (a->dtype != SPX_DOUBLE && a->dtype != SPX_FLOAT))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_analyze: malformed CSR header (%lld x %lld, nnz %lld)",
                     (long long)n, (long long)a->ncols, (long long)a->nnz);
  if (a->row_ptr[0] != 0 || a->row_ptr[n] != a->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_analyze: row_ptr[0] = %lld, row_ptr[%lld] = %lld (want 0 and nnz = %lld)",
                     (long long)a->row_ptr[0], (long long)n, (long long)a->row_ptr[n], (long long)a->nnz);
  /* Pointers before entries, so no row below reads past nnz. */
  for (i = 0; i < n; i++)
    if (a->row_ptr[i + 1] < a->row_ptr[i])
      return spx__fail(SPX_INVALID_ARGUMENT, "spx_analyze: row_ptr decreases at row %lld", (long long)i);
  square = n == a->ncols;
#if defined(_OPENMP)
  if (n >= 8192 && a->nnz >= 65536) nch = omp_get_max_threads();
#endif
  cur = square ? (int64_t *)spx__alloc((size_t)n + 1, sizeof *cur) : NULL;
  bnd = (int64_t *)spx__alloc((size_t)nch + 1, sizeof *bnd);
  part = (spx__acc *)spx__alloc((size_t)nch, sizeof *part);
  if ((square && !cur) || !bnd || !part) {
    SPX_FREE(cur); SPX_FREE(bnd); SPX_FREE(part);
    return SPX_OUT_OF_MEMORY;
  }
  /* Chunks of about equal nonzeros: bnd[t] is the first row starting at or past t*nnz/nch. */
  bnd[0] = 0;
  for (t = 1, i = 0; t <= nch; t++) {
    int64_t want = (int64_t)((double)a->nnz * t / nch);
    while (i < n && a->row_ptr[i] < want) i++;
    bnd[t] = t == nch ? n : i;
  }
  m0 = n ? a->nnz / n : 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) num_threads(nch) if (nch > 1)
#endif
  for (t = 0; t < nch; t++) {
    spx__acc_init(&part[t], square);
    spx__analyze_chunk(a, bnd[t], bnd[t + 1], m0, cur, &part[t]);
  }
  spx__acc_init(&acc, square);
  for (t = 0; t < nch; t++) spx__acc_merge(&acc, &part[t]);
  SPX_FREE(cur); SPX_FREE(bnd); SPX_FREE(part);
  if (acc.bad_row >= 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_analyze: row %lld has a column out of [0, %lld) or out of order",
                     (long long)acc.bad_row, (long long)a->ncols);
  mean = n ? (double)a->nnz / (double)n : 0;
  out->nrows = n; out->ncols = a->ncols; out->nnz = a->nnz;
  out->row_min = n ? acc.row_min : 0;
  out->row_max = acc.row_max;
  out->empty_rows = acc.empty;
  out->row_mean = mean;
  if (n) {
    /* Shifted-data variance: dev2 is about m0 and |mean - m0| < 1, so nothing cancels badly. */
    double sh = mean - (double)m0, var = acc.dev2 / (double)n - sh * sh;
    out->row_stddev = spx__sqrt(var > 0 ? var : 0);
  }
  out->B = a->nnz ? (double)acc.row_max / mean : 0;
  out->R = n && a->ncols ? (double)a->nnz / ((double)n * (double)a->ncols) : 0;
  out->lower_bandwidth = acc.lower;
  out->upper_bandwidth = acc.upper;
  out->bandwidth = SPX__MAX(acc.lower, acc.upper);
  out->structurally_symmetric = acc.ss && acc.n_lower == acc.n_upper;
  out->numerically_symmetric = out->structurally_symmetric && acc.ns;
  out->missing_diagonal = acc.missing_diag;
  out->diag_dominant_rows = acc.dom;
  out->diagonally_dominant = square && n > 0 && acc.dom == n && acc.strict > 0;
  out->runs = acc.runs;
  out->runs_per_row = n ? (double)acc.runs / (double)n : 0;
  out->run_mean = acc.runs ? (double)a->nnz / (double)acc.runs : 0;
  out->run_max = acc.run_max;
  out->run_share2 = a->nnz ? (double)acc.in_runs2 / (double)a->nnz : 0;
  out->nan_count = acc.nan_count;
  out->inf_count = acc.inf_count;
  out->seconds = spx__now() - t0;
  return SPX_OK;
}

/* Every printed field, in print order. I: int64_t, N: int (printed yes/no in the table),
 * D: double, P: double fraction also shown in % in the table.
 *  _(kind, field,                  "table label") */
#define SPX__ANALYSIS_FIELDS(_)                          \
  _(I, nrows,                  "rows")                   \
  _(I, ncols,                  "cols")                   \
  _(I, nnz,                    "nonzeros")               \
  _(I, row_min,                "row min")                \
  _(I, row_max,                "row max")                \
  _(D, row_mean,               "row mean")               \
  _(D, row_stddev,             "row stddev")             \
  _(I, empty_rows,             "empty rows")             \
  _(D, B,                      "B (max/mean)")           \
  _(P, R,                      "R (density)")            \
  _(I, bandwidth,              "bandwidth")              \
  _(I, lower_bandwidth,        "lower bandw.")           \
  _(I, upper_bandwidth,        "upper bandw.")           \
  _(N, structurally_symmetric, "sym. pattern")           \
  _(N, numerically_symmetric,  "sym. values")            \
  _(I, missing_diagonal,       "missing diag")           \
  _(I, diag_dominant_rows,     "diag dom. rows")         \
  _(N, diagonally_dominant,    "diag dominant")          \
  _(I, runs,                   "runs")                   \
  _(D, runs_per_row,           "runs per row")           \
  _(D, run_mean,               "run mean")               \
  _(I, run_max,                "run max")                \
  _(D, run_share2,             "run share >=2")          \
  _(I, nan_count,              "NaN values")             \
  _(I, inf_count,              "Inf values")             \
  _(D, seconds,                "seconds")

static void spx__json_double(FILE *f, double v) {
  if (isnan(v) || isinf(v)) fputs("null", f);
  else fprintf(f, "%.17g", v);
}

static void spx__json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

#define SPX__TAB_I(fld, lab) fprintf(f, "%-16s%lld\n", lab, (long long)an->fld);
#define SPX__TAB_N(fld, lab) fprintf(f, "%-16s%s\n", lab, an->fld ? "yes" : "no");
#define SPX__TAB_D(fld, lab) fprintf(f, "%-16s%.6g\n", lab, an->fld);
#define SPX__TAB_P(fld, lab) fprintf(f, "%-16s%.6g (%.6g %%)\n", lab, an->fld, 100 * an->fld);
#define SPX__TAB(kind, fld, lab) SPX__TAB_##kind(fld, lab)
#define SPX__JSON_I(fld) fprintf(f, ", \"%s\": %lld", #fld, (long long)an->fld);
#define SPX__JSON_N(fld) fprintf(f, ", \"%s\": %d", #fld, an->fld ? 1 : 0);
#define SPX__JSON_D(fld) { fprintf(f, ", \"%s\": ", #fld); spx__json_double(f, an->fld); }
#define SPX__JSON_P SPX__JSON_D
#define SPX__JSON(kind, fld, lab) SPX__JSON_##kind(fld)

spx_status spx_analysis_print(const spx_analysis *an, const char *name, FILE *f, int json) {
  if (!an || !f) return spx__fail(SPX_INVALID_ARGUMENT, "spx_analysis_print: NULL argument");
  if (json) {
    fputs("{\"name\": ", f);
    if (name) spx__json_string(f, name);
    else fputs("null", f);
    SPX__ANALYSIS_FIELDS(SPX__JSON)
    fputs("}\n", f);
  } else {
    if (name) fprintf(f, "%-16s%s\n", "matrix", name);
    SPX__ANALYSIS_FIELDS(SPX__TAB)
  }
  if (ferror(f)) return spx__fail(SPX_IO, "spx_analysis_print: write failed");
  return SPX_OK;
}

#undef SPX__TAB_I
#undef SPX__TAB_N
#undef SPX__TAB_D
#undef SPX__TAB_P
#undef SPX__TAB
#undef SPX__JSON_I
#undef SPX__JSON_N
#undef SPX__JSON_D
#undef SPX__JSON_P
#undef SPX__JSON
