/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/formats.h: the generic layer every format goes through (registry,
 * parameters, allocation, bytes, validation, dump, kernel arguments), the helpers the converters
 * share, then one file per format (internal/formats/<name>_impl.h). */
#include "common.h"
#include "host.h"
#include "../formats.h"

#include <stddef.h>

/* Loops over rows go parallel only from SPX__FMT_OMP_MIN iterations on: below that a parallel
 * region costs more than it saves (and far more when the cores are shared). */
#ifndef SPX__FMT_OMP_MIN /* (a test may lower it to run the parallel paths on small matrices) */
#define SPX__FMT_OMP_MIN 8192
#endif
#if defined(_OPENMP)
#define SPX__FMT_PRAGMA(x) _Pragma(#x)
#define SPX__FMT_OMP_FOR(n) SPX__FMT_PRAGMA(omp parallel for schedule(static, 256) if ((n) >= SPX__FMT_OMP_MIN))
#else
#define SPX__FMT_OMP_FOR(n)
#endif

/* ---- Helpers shared by the converters ------------------------------------------------------- */

/* The values of a CSR as an spx_val (spx_csr's union has no tag of its own). */
static spx_val spx__csr_val(const spx_csr *a) {
  spx_val v;
  v.p = a->val.p;
  return v;
}

/* SPX_RANGE unless v fits a 32-bit index (what every format's offsets are). */
spx_status spx__fits32(int64_t v, const char *what) {
  if (v > INT32_MAX)
    return spx__fail(SPX_RANGE, "%s = %lld does not fit the 32-bit indices spx formats use", what,
                     (long long)v);
  return SPX_OK;
}

/* A converter's failure as spx_fmt_from_csr reports it (the device converters too). */
spx_status spx__fmt_wrap(spx_status s, const spx_csr *a, const char *fmt) {
  return spx__wrap(s, "converting a %lld x %lld matrix to %s", (long long)a->nrows, (long long)a->ncols, fmt);
}

/* The padding column of an empty row: the diagonal where there is one (x[i] is what a square
 * matrix's row i reads anyway), else the last column. Needs ncols > 0. */
static int32_t spx__pad_col(int64_t i, int64_t ncols) { return (int32_t)(i < ncols ? i : ncols - 1); }

static int64_t spx__row_len(const spx_csr *a, int64_t i) { return a->row_ptr[i + 1] - a->row_ptr[i]; }

static int64_t spx__max_row(const spx_csr *a) {
  int64_t i, m = 0;
  for (i = 0; i < a->nrows; i++) m = SPX__MAX(m, spx__row_len(a, i));
  return m;
}

/* Row i of a into the k slots base + j*stride: its first min(len, k) entries, then padding (the
 * mark, and the row's last column or the empty-row column). Returns the entries written. */
static int64_t spx__pad_fill(const spx_csr *a, int64_t i, int64_t k, int32_t *col, spx_val val,
                             int64_t base, int64_t stride) {
  int64_t b = a->row_ptr[i], m = SPX__MIN(spx__row_len(a, i), k), j;
  int32_t pc = m > 0 ? a->col_idx[b + m - 1] : spx__pad_col(i, a->ncols);
  spx_val src = spx__csr_val(a);
  for (j = 0; j < m; j++) {
    col[base + j * stride] = a->col_idx[b + j];
    spx_val_store(val, base + j * stride, src, b + j, a->dtype);
  }
  for (; j < k; j++) {
    col[base + j * stride] = pc;
    spx_val_pad(val, base + j * stride, a->dtype);
  }
  return m;
}

/* Entries of a padded row: the slots before the first padding mark. */
static int64_t spx__pad_len(spx_val val, int64_t base, int64_t stride, int64_t k, spx_dtype t) {
  int64_t j;
  for (j = 0; j < k && !spx_val_is_pad(val, base + j * stride, t); j++) {}
  return j;
}

/* Checks one padded row of a format: entries with strictly increasing columns in [0, ncols),
 * then only padding, whose column is the last entry's (or empty_col for an empty row). Returns the
 * entries, or -1 after recording the violation. */
static int64_t spx__pad_check(const char *fmt, int64_t row, const int32_t *col, spx_val val, int64_t base,
                              int64_t stride, int64_t k, int64_t ncols, int32_t empty_col, spx_dtype t) {
  int64_t m = spx__pad_len(val, base, stride, k, t), j;
  for (j = 0; j < m; j++) {
    int32_t c = col[base + j * stride];
    if (c < 0 || c >= ncols || (j > 0 && c <= col[base + (j - 1) * stride])) {
      spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld slot %lld: column %d out of range or order", fmt,
                (long long)row, (long long)j, (int)c);
      return -1;
    }
  }
  for (j = m; j < k; j++) {
    int32_t want = m > 0 ? col[base + (m - 1) * stride] : empty_col;
    if (!spx_val_is_pad(val, base + j * stride, t) || col[base + j * stride] != want) {
      spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld slot %lld: padding must be -0.0 with column %d, got column %d",
                fmt, (long long)row, (long long)j, (int)want, (int)col[base + j * stride]);
      return -1;
    }
  }
  return m;
}

/* Prefix sum of counts stored at ptr[1..n] (ptr[0] = 0), in place. */
static void spx__prefix64(int64_t *ptr, int64_t n) {
  int64_t i;
  ptr[0] = 0;
  for (i = 0; i < n; i++) ptr[i + 1] += ptr[i];
}
static void spx__prefix32(int32_t *ptr, int64_t n) {
  int64_t i;
  ptr[0] = 0;
  for (i = 0; i < n; i++) ptr[i + 1] += ptr[i];
}

/* y = beta*y, or 0 when beta == 0 (without reading y): the start of every scatter-style SpMV. */
static void spx__yscale(void *y, int64_t n, double beta, spx_dtype t) {
  int64_t i;
  if (t == SPX_DOUBLE) {
    double *yv = (double *)y;
    for (i = 0; i < n; i++) yv[i] = beta == 0 ? 0.0 : beta * yv[i];
  } else {
    float *yv = (float *)y;
    for (i = 0; i < n; i++) yv[i] = beta == 0 ? 0.0f : (float)(beta * (double)yv[i]);
  }
}

/* One SpMV body per value type: BODY(T) is instantiated for double and float. Sums are kept in
 * double, as in spx_csr_spmv. */
#define SPX__DISPATCH(t, BODY) \
  do {                         \
    if ((t) == SPX_DOUBLE) {   \
      BODY(double)             \
    } else {                   \
      BODY(float)              \
    }                          \
  } while (0)
/* y[i] from a row's sum, reading y only when beta != 0. */
#define SPX__YSET(T, yv, i, sum) \
  (yv)[i] = (T)(beta == 0 ? alpha * (sum) : alpha * (sum) + beta * (double)(yv)[i])

/* The runs of a CSR row, as RBP sees them: maximal stretches of consecutive columns. Runs of two
 * or more are blocks; single entries are isolated. */
static void spx__rbp_row(const spx_csr *a, int64_t i, int64_t *nblocks, int64_t *nval, int64_t *nnon) {
  int64_t k = a->row_ptr[i], e = a->row_ptr[i + 1];
  *nblocks = *nval = *nnon = 0;
  while (k < e) {
    int64_t s = k;
    while (k + 1 < e && a->col_idx[k + 1] == a->col_idx[k] + 1) k++;
    k++;
    if (k - s >= 2) { (*nblocks)++; *nval += k - s; }
    else (*nnon)++;
  }
}

/* Interval checks shared by the RBP formats: within a row, runs [first, last] (isolated entries
 * are runs with first == last) must be in range, increasing, and not touch (else they would be one
 * run). Call with *prev = -2 at the row start. */
static spx_status spx__rbp_interval(const char *fmt, int64_t row, int64_t first, int64_t last,
                                    int64_t ncols, int64_t *prev) {
  if (first < 0 || last >= ncols || last < first)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld: run [%lld, %lld] outside [0, %lld)", fmt,
                     (long long)row, (long long)first, (long long)last, (long long)ncols);
  if (first <= *prev + 1)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: row %lld: run starting at column %lld overlaps or "
                     "touches the one before (runs must be maximal)", fmt, (long long)row, (long long)first);
  *prev = last;
  return SPX_OK;
}

/* ---- The formats ---------------------------------------------------------------------------- */
/* Generated parts first (struct accessors, tables, P##alloc), then the handwritten functions,
 * then the vtables, all from the one registry. */
#define SPX__FORMAT_GEN(E, n, D, cost, what, model, device) SPX_FORMAT_IMPL(spx__##n##_, spx_fmt_##n, D)
SPX_FORMATS(SPX__FORMAT_GEN)
#undef SPX__FORMAT_GEN

#include "formats/coo_impl.h"
#include "formats/csr_impl.h"
#include "formats/ell_impl.h"
#include "formats/jds_impl.h"
#include "formats/sell_impl.h"
#include "formats/hyb_impl.h"
#include "formats/rbp_impl.h"
#include "formats/ss_impl.h"
#include "formats/bsr_impl.h"
#include "formats/sdia_impl.h"

#define SPX__FORMAT_VT(E, n, D, cost, what, model, device) SPX_FORMAT_VTABLE(spx__##n##_, spx_fmt_##n, #n, what, cost)
SPX_FORMATS(SPX__FORMAT_VT)
#undef SPX__FORMAT_VT

/* Where each in-tree parameter lives in spx_format_params (a trailing 0 keeps arrays non-empty). */
#define SPX__P_OFF(X, name, def, lo, hi, doc) offsetof(spx_format_params, X##_##name),
#define SPX__FORMAT_OFF(E, n, D, cost, what, model, device) \
  static const size_t spx__##n##_param_off[] = {D(n, SPX__P_OFF, SPX__NONE, SPX__NONE) 0};
SPX_FORMATS(SPX__FORMAT_OFF)
#undef SPX__FORMAT_OFF
#undef SPX__P_OFF

/* ---- Registry ------------------------------------------------------------------------------- */
typedef struct spx__format_entry {
  const spx_format_vtable *vt;
  const size_t *param_off; /* in-tree: offsets in spx_format_params; NULL: ext[ext_base + j] */
  int ext_base;
} spx__format_entry;

static spx__format_entry spx__registry[SPX_FORMAT_MAX] = {
#define SPX__FORMAT_ENTRY(E, n, D, cost, what, model, device) {&spx__##n##_vtable, spx__##n##_param_off, 0},
    SPX_FORMATS(SPX__FORMAT_ENTRY)
#undef SPX__FORMAT_ENTRY
};
static int spx__nformats = SPX_FORMAT_COUNT;
static int spx__ext_used;

int spx_format_count(void) { return spx__nformats; }

const spx_format_vtable *spx_format_info(spx_format f) {
  return (int)f >= 0 && (int)f < spx__nformats ? spx__registry[f].vt : NULL;
}

const char *spx_format_name(spx_format f) {
  const spx_format_vtable *vt = spx_format_info(f);
  return vt ? vt->name : "unknown";
}

/* Names compare ignoring case and '-' vs '_' ("RBP-CSR" finds rbp_csr). */
static int spx__name_eq(const char *a, const char *b, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
    if (x == '-') x = '_';
    if (x != y) return 0;
    if (!x) return 1;
  }
  return 1;
}

static void spx__format_names(char *buf, size_t len) {
  int f;
  size_t n = 0;
  buf[0] = 0;
  for (f = 0; f < spx__nformats && n + 1 < len; f++)
    n += (size_t)snprintf(buf + n, len - n, "%s%s", f ? ", " : "", spx__registry[f].vt->name);
}

spx_status spx_format_from_name(const char *name, spx_format *out) {
  int f;
  char known[512];
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_format_from_name: NULL argument");
  for (f = 0; f < spx__nformats; f++)
    if (strlen(name) == strlen(spx__registry[f].vt->name) &&
        spx__name_eq(name, spx__registry[f].vt->name, strlen(name) + 1)) {
      *out = (spx_format)f;
      return SPX_OK;
    }
  spx__format_names(known, sizeof known);
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown format '%s' (known: %s)", name, known);
}

static spx_status spx__check_vtable(const spx_format_vtable *vt) {
  const spx_format_layout *L;
  int i;
  const char *need[3] = {"nrows", "ncols", "nnz"};
  if (!vt || !vt->name || !vt->name[0] || !vt->layout || !vt->from_csr || !vt->to_csr || !vt->check ||
      !vt->spmv)
    return spx__fail(SPX_INVALID_ARGUMENT, "format vtable: a name, a layout and four functions are required");
  L = vt->layout;
  for (i = 0; vt->name[i]; i++)
    if (!((vt->name[i] >= 'a' && vt->name[i] <= 'z') || (vt->name[i] >= '0' && vt->name[i] <= '9') ||
          vt->name[i] == '_'))
      return spx__fail(SPX_INVALID_ARGUMENT, "format name '%s': use [a-z0-9_] only", vt->name);
  if (L->nscalars < 3 || L->narrays < 1 || L->nparams > SPX_FORMAT_MAX_PARAMS ||
      L->nscalars + L->narrays > SPX_KERNEL_ARGS_MAX || L->impl_size < sizeof(spx_dtype))
    return spx__fail(SPX_INVALID_ARGUMENT, "format %s: %d params (max %d), %d scalars (>= 3), %d arrays "
                     "(>= 1, at most %d with the scalars)", vt->name, L->nparams, SPX_FORMAT_MAX_PARAMS,
                     L->nscalars, L->narrays, SPX_KERNEL_ARGS_MAX);
  for (i = 0; i < 3; i++)
    if (strcmp(L->scalars[i].name, need[i]))
      return spx__fail(SPX_INVALID_ARGUMENT, "format %s: scalar %d must be %s, not %s", vt->name, i,
                       need[i], L->scalars[i].name);
  return SPX_OK;
}

spx_status spx_format_register(const spx_format_vtable *vt, spx_format *out) {
  spx_format dup;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_format_register: out is NULL");
  if ((s = spx__check_vtable(vt))) return s;
  if (spx_format_from_name(vt->name, &dup) == SPX_OK)
    return spx__fail(SPX_INVALID_ARGUMENT, "format '%s' is already registered (id %d)", vt->name, (int)dup);
  spx_clear_error();
  if (spx__nformats >= SPX_FORMAT_MAX)
    return spx__fail(SPX_RANGE, "format registry full (%d formats)", SPX_FORMAT_MAX);
  if (spx__ext_used + vt->layout->nparams > SPX_FORMAT_EXT_PARAMS)
    return spx__fail(SPX_RANGE, "no parameter slots left for format %s (%d in all)", vt->name,
                     SPX_FORMAT_EXT_PARAMS);
  spx__registry[spx__nformats].vt = vt;
  spx__registry[spx__nformats].param_off = NULL;
  spx__registry[spx__nformats].ext_base = spx__ext_used;
  spx__ext_used += vt->layout->nparams;
  *out = (spx_format)spx__nformats++;
  return SPX_OK;
}

/* ---- Parameters ----------------------------------------------------------------------------- */
size_t spx__param_off(int f, int j) {
  const spx__format_entry *e = &spx__registry[f];
  return e->param_off ? e->param_off[j]
                      : offsetof(spx_format_params, ext) + (size_t)(e->ext_base + j) * sizeof(int64_t);
}

void spx_format_params_default(spx_format_params *p) {
  size_t i;
  int64_t a = SPX_AUTO;
  if (!p) return;
  for (i = 0; i < sizeof *p / sizeof(int64_t); i++) memcpy((char *)p + i * sizeof(int64_t), &a, sizeof a);
}

static spx_status spx__param_range(const char *fmt, const spx_format_param_info *pi, int64_t v) {
  if (v != SPX_AUTO && (v < pi->lo || v > pi->hi))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s_%s = %lld is out of range [%lld, %lld] (%s)", fmt, pi->name,
                     (long long)v, (long long)pi->lo, (long long)pi->hi, pi->doc);
  return SPX_OK;
}

spx_status spx_format_params_set(spx_format_params *p, const char *name, int64_t value) {
  int f, j;
  char known[1024];
  size_t n = 0;
  if (!p || !name) return spx__fail(SPX_INVALID_ARGUMENT, "spx_format_params_set: NULL argument");
  for (f = 0; f < spx__nformats; f++) {
    const spx_format_vtable *vt = spx__registry[f].vt;
    size_t fl = strlen(vt->name);
    if (strncmp(name, vt->name, fl) || name[fl] != '_') continue;
    for (j = 0; j < vt->layout->nparams; j++)
      if (!strcmp(name + fl + 1, vt->layout->params[j].name)) {
        spx_status s = spx__param_range(vt->name, &vt->layout->params[j], value);
        if (s) return s;
        memcpy((char *)p + spx__param_off(f, j), &value, sizeof value);
        return SPX_OK;
      }
  }
  known[0] = 0;
  for (f = 0; f < spx__nformats; f++)
    for (j = 0; j < spx__registry[f].vt->layout->nparams && n + 1 < sizeof known; j++)
      n += (size_t)snprintf(known + n, sizeof known - n, "%s%s_%s", n ? ", " : "", spx__registry[f].vt->name,
                            spx__registry[f].vt->layout->params[j].name);
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown format parameter '%s' (known: %s)", name, known);
}

spx_status spx_format_params_parse(spx_format_params *p, const char *text) {
  const char *t = text;
  if (!p || !text) return spx__fail(SPX_INVALID_ARGUMENT, "spx_format_params_parse: NULL argument");
  for (;;) {
    char name[64], val[32];
    size_t n = 0, m = 0;
    int64_t v;
    spx_status s;
    while (*t == ',' || *t == ' ' || *t == '\t' || *t == '\n') t++;
    if (!*t) return SPX_OK;
    while (*t && *t != '=' && *t != ',' && *t != ' ' && n + 1 < sizeof name) name[n++] = *t++;
    name[n] = 0;
    if (*t != '=')
      return spx__fail(SPX_INVALID_ARGUMENT, "format parameters: expected name=value at '%s'", name);
    t++;
    while (*t && *t != ',' && *t != ' ' && *t != '\t' && *t != '\n' && m + 1 < sizeof val) val[m++] = *t++;
    val[m] = 0;
    if (!strcmp(val, "auto")) v = SPX_AUTO;
    else {
      char *end;
      long long x = strtoll(val, &end, 10);
      if (!m || *end) return spx__fail(SPX_INVALID_ARGUMENT, "format parameter %s: '%s' is not an integer or auto", name, val);
      v = x;
    }
    if ((s = spx_format_params_set(p, name, v))) return s;
  }
}

/* ---- Allocation, conversion, the generic operations ----------------------------------------- */
static size_t spx__elem_size(spx_elem e, spx_dtype t) {
  return e == SPX_ELEM_I32 ? sizeof(int32_t) : e == SPX_ELEM_I64 ? sizeof(int64_t) : e == SPX_ELEM_U16 ? sizeof(uint16_t)
                                                                                            : SPX_DTYPE_SIZE(t);
}
static spx_dtype spx__impl_dtype(const void *impl) { return *(const spx_dtype *)impl; }

void spx_format_free(const spx_format_layout *L, void *impl) {
  int i;
  if (!L || !impl) return;
  for (i = 0; i < L->narrays; i++) {
    SPX_FREE(L->array(impl, i));
    L->set_array(impl, i, NULL);
  }
}

spx_status spx_format_alloc(const spx_format_layout *L, void *impl) {
  spx_dtype t;
  int i;
  if (!L || !impl) return spx__fail(SPX_INVALID_ARGUMENT, "spx_format_alloc: NULL argument");
  t = spx__impl_dtype(impl);
  for (i = 0; i < L->narrays; i++) {
    int64_t n = L->length(impl, i);
    void *p = NULL;
    if (n < 0) {
      spx_format_free(L, impl);
      return spx__fail(SPX_INTERNAL, "array %s: length %s = %lld is negative", L->arrays[i].name,
                       L->arrays[i].length, (long long)n);
    }
    if (n > 0 && !(p = spx__calloc((size_t)n, spx__elem_size(L->arrays[i].elem, t)))) {
      spx_format_free(L, impl);
      return spx__fail(SPX_OUT_OF_MEMORY, "out of host memory for array %s (%lld elements)",
                       L->arrays[i].name, (long long)n);
    }
    /* before the first touch: large arrays fault in 2 MiB pages (4 KiB faults and their zeroing
     * were most of a conversion's time on hosts with THP in madvise mode) */
    if (n > 0) spx__advise_huge(p, (size_t)n * spx__elem_size(L->arrays[i].elem, t));
    L->set_array(impl, i, p);
  }
  return SPX_OK;
}

spx_status spx_format_fail(spx_status s, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return spx__fail(s, "%s", msg);
}

static void spx__impl_destroy(const spx_format_vtable *vt, void *impl) {
  if (!impl) return;
  spx_format_free(vt->layout, impl);
  SPX_FREE(impl);
}

void spx_fmt_destroy(spx_fmt *m) {
  if (!m) return;
  if (m->vt) spx__impl_destroy(m->vt, m->impl);
  SPX_FREE(m);
}

spx_status spx__fmt_from_csr_check(const spx_csr *a, spx_format f) {
  const spx_format_vtable *vt = spx_format_info(f);
  spx_status s;
  if (!a) return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_from_csr: matrix is NULL");
  if (!vt) return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_from_csr: unknown format id %d", (int)f);
  if (a->dtype != SPX_DOUBLE && a->dtype != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_from_csr: unknown dtype %d", (int)a->dtype);
  if (a->nrows > INT32_MAX || a->ncols > INT32_MAX || a->nnz > INT32_MAX)
    return spx__fail(SPX_RANGE, "%s: a %lld x %lld matrix with %lld nonzeros passes the 32-bit indices "
                     "spx formats use", vt->name, (long long)a->nrows, (long long)a->ncols, (long long)a->nnz);
  /* The converters read a's arrays through its row pointers and columns: a CSR that would make
   * them read out of bounds is refused here (rows unsorted or with duplicates are theirs to take or
   * refuse). BSR's merge checks each row's columns itself, in the words of its device converter,
   * which sees no host check: the two must fail alike, so only the pointers are checked for it. */
  if ((s = spx__csr_verify(a, f == SPX_FORMAT_BSR ? SPX__CSR_PTRS : SPX__CSR_BOUNDS)))
    return spx__wrap(s, "spx_fmt_from_csr");
  return SPX_OK;
}

spx_status spx_fmt_from_csr(const spx_csr *a, spx_format f, const spx_format_params *params, spx_fmt **out) {
  const spx_format_vtable *vt = spx_format_info(f);
  const spx_format_layout *L;
  spx_fmt *m;
  spx_status s;
  int j;
  double t0;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_from_csr: out is NULL");
  *out = NULL;
  if ((s = spx__fmt_from_csr_check(a, f))) return s;
  L = vt->layout;
  if (!(m = (spx_fmt *)spx__calloc(1, sizeof *m))) return SPX_OUT_OF_MEMORY;
  for (j = 0; j < SPX_FORMAT_MAX_PARAMS; j++) m->params[j] = SPX_AUTO;
  for (j = 0; j < L->nparams; j++) {
    int64_t v = SPX_AUTO;
    if (params) memcpy(&v, (const char *)params + spx__param_off((int)f, j), sizeof v);
    if (v == SPX_AUTO) v = L->params[j].def;
    if ((s = spx__param_range(vt->name, &L->params[j], v))) { SPX_FREE(m); return s; }
    m->params[j] = v;
  }
  if (!(m->impl = spx__calloc(1, L->impl_size))) { SPX_FREE(m); return SPX_OUT_OF_MEMORY; }
  *(spx_dtype *)m->impl = a->dtype;
  m->vt = vt;
  m->format = f;
  m->dtype = a->dtype;
  t0 = spx__now();
  s = vt->from_csr(a, m->params, m->impl);
  m->seconds = spx__now() - t0;
  if (s) {
    spx__fmt_wrap(s, a, vt->name);
    spx_fmt_destroy(m);
    return s;
  }
  m->nrows = L->scalar(m->impl, 0);
  m->ncols = L->scalar(m->impl, 1);
  m->nnz = L->scalar(m->impl, 2);
  if (m->nrows != a->nrows || m->ncols != a->ncols || m->nnz != a->nnz) {
    spx_fmt_destroy(m);
    return spx__fail(SPX_INTERNAL, "%s: converter set sizes that differ from the matrix", vt->name);
  }
  *out = m;
  return SPX_OK;
}

spx_status spx_fmt_to_csr(const spx_fmt *m, spx_csr **out) {
  spx_csr *c;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_to_csr: out is NULL");
  *out = NULL;
  if (!m || !m->vt || !m->impl) return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_to_csr: NULL matrix");
  if ((s = spx_csr_create(m->nrows, m->ncols, m->nnz, m->dtype, &c))) return s;
  if ((s = m->vt->to_csr(m->impl, c))) {
    spx_csr_destroy(c);
    return spx__wrap(s, "%s to CSR", m->vt->name);
  }
  *out = c;
  return SPX_OK;
}

spx_status spx_fmt_spmv(const spx_fmt *m, double alpha, const void *x, double beta, void *y) {
  if (!m || !m->vt || !m->impl || (m->ncols > 0 && !x) || (m->nrows > 0 && !y))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_spmv: NULL argument");
  return m->vt->spmv(m->impl, alpha, x, beta, y);
}

spx_status spx_fmt_validate(const spx_fmt *m) {
  const spx_format_layout *L;
  int i;
  if (!m || !m->vt || !m->impl) return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_validate: NULL matrix");
  L = m->vt->layout;
  if (spx__impl_dtype(m->impl) != m->dtype || (m->dtype != SPX_DOUBLE && m->dtype != SPX_FLOAT))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: dtype %d does not match the handle's", m->vt->name,
                     (int)spx__impl_dtype(m->impl));
  for (i = 0; i < L->nscalars; i++)
    if (L->scalar(m->impl, i) < 0)
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: scalar %s = %lld is negative", m->vt->name,
                       L->scalars[i].name, (long long)L->scalar(m->impl, i));
  if (L->scalar(m->impl, 0) != m->nrows || L->scalar(m->impl, 1) != m->ncols || L->scalar(m->impl, 2) != m->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: sizes differ from the handle's", m->vt->name);
  for (i = 0; i < L->narrays; i++) {
    int64_t n = L->length(m->impl, i);
    if (n < 0 || (n > 0 && !L->array(m->impl, i)))
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: array %s (length %s = %lld) is missing", m->vt->name,
                       L->arrays[i].name, L->arrays[i].length, (long long)n);
  }
  return m->vt->check(m->impl);
}

int64_t spx_fmt_bytes(const spx_fmt *m) {
  int64_t b = 0;
  int i;
  if (!m || !m->vt) return 0;
  for (i = 0; i < m->vt->layout->narrays; i++)
    b += m->vt->layout->length(m->impl, i) * (int64_t)spx__elem_size(m->vt->layout->arrays[i].elem, m->dtype);
  return b;
}

int64_t spx_fmt_slots(const spx_fmt *m) {
  int64_t n = 0;
  int i;
  if (!m || !m->vt) return 0;
  for (i = 0; i < m->vt->layout->narrays; i++)
    if (m->vt->layout->arrays[i].elem == SPX_ELEM_VAL) n += m->vt->layout->length(m->impl, i);
  return n;
}

double spx_fmt_padding(const spx_fmt *m) {
  return m && m->nnz > 0 ? (double)spx_fmt_slots(m) / (double)m->nnz : 1.0;
}

int64_t spx_fmt_scalar(const spx_fmt *m, const char *name) {
  int i;
  if (!m || !m->vt || !name) return -1;
  for (i = 0; i < m->vt->layout->nscalars; i++)
    if (!strcmp(m->vt->layout->scalars[i].name, name)) return m->vt->layout->scalar(m->impl, i);
  return -1;
}

int spx_fmt_arrays(const spx_fmt *m, spx_format_array *out, int max) {
  const spx_format_layout *L;
  int i;
  if (!m || !m->vt) return 0;
  L = m->vt->layout;
  for (i = 0; i < L->narrays && i < max && out; i++) {
    out[i].name = L->arrays[i].name;
    out[i].elem = L->arrays[i].elem;
    out[i].elem_size = spx__elem_size(L->arrays[i].elem, m->dtype);
    out[i].count = L->length(m->impl, i);
    out[i].host = L->array(m->impl, i);
  }
  return L->narrays;
}

spx_status spx_fmt_kernel_args(const spx_fmt *m, const void *const *array_ptrs, spx_kernel_args *out) {
  const spx_format_layout *L;
  int i, n = 0;
  if (!m || !m->vt || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_kernel_args: NULL argument");
  L = m->vt->layout;
  memset(out, 0, sizeof *out);
  for (i = 0; i < L->nscalars; i++, n++) {
    int64_t v = L->scalar(m->impl, i);
    if (L->scalars[i].bytes == 4) out->slot[n].i32 = (int32_t)v;
    else out->slot[n].i64 = v;
    out->size[n] = (size_t)L->scalars[i].bytes;
    out->ptrs[n] = &out->slot[n];
  }
  for (i = 0; i < L->narrays; i++, n++) {
    out->slot[n].p = array_ptrs ? array_ptrs[i] : L->array(m->impl, i);
    out->size[n] = sizeof(void *);
    out->ptrs[n] = &out->slot[n];
  }
  out->count = n;
  return SPX_OK;
}

static void spx__dump_elem(FILE *f, const void *p, spx_elem e, spx_dtype t, int64_t k) {
  if (e == SPX_ELEM_I32) fprintf(f, " %d", (int)((const int32_t *)p)[k]);
  else if (e == SPX_ELEM_I64) fprintf(f, " %lld", (long long)((const int64_t *)p)[k]);
  else if (e == SPX_ELEM_U16) fprintf(f, " %u", (unsigned)((const uint16_t *)p)[k]);
  else if (t == SPX_DOUBLE) fprintf(f, " %.17g", ((const double *)p)[k]);
  else fprintf(f, " %.9g", (double)((const float *)p)[k]);
}

spx_status spx_fmt_dump(const spx_fmt *m, FILE *f, int64_t max_entries) {
  const spx_format_layout *L;
  int i;
  if (!m || !m->vt || !f) return spx__fail(SPX_INVALID_ARGUMENT, "spx_fmt_dump: NULL argument");
  L = m->vt->layout;
  fprintf(f, "%s (%s), %s, %lld x %lld, nnz %lld, %lld bytes, padding %.3f, converted in %.6f s\n",
          m->vt->name, m->vt->description, spx_dtype_name(m->dtype), (long long)m->nrows, (long long)m->ncols,
          (long long)m->nnz, (long long)spx_fmt_bytes(m), spx_fmt_padding(m), m->seconds);
  for (i = 0; i < L->nparams; i++) {
    if (m->params[i] == SPX_AUTO) fprintf(f, "  param  %s_%s = auto\n", m->vt->name, L->params[i].name);
    else fprintf(f, "  param  %s_%s = %lld\n", m->vt->name, L->params[i].name, (long long)m->params[i]);
  }
  for (i = 0; i < L->nscalars; i++)
    fprintf(f, "  scalar %s = %lld  (%s)\n", L->scalars[i].name, (long long)L->scalar(m->impl, i),
            L->scalars[i].doc);
  for (i = 0; i < L->narrays; i++) {
    int64_t n = L->length(m->impl, i), k;
    const void *p = L->array(m->impl, i);
    spx_elem e = L->arrays[i].elem;
    fprintf(f, "  array  %s[%s = %lld] %s:", L->arrays[i].name, L->arrays[i].length, (long long)n,
            e == SPX_ELEM_I32   ? "int32"
            : e == SPX_ELEM_I64 ? "int64"
            : e == SPX_ELEM_U16 ? "uint16"
                                : spx_dtype_name(m->dtype));
    for (k = 0; p && k < n && (max_entries < 0 || k < max_entries); k++) spx__dump_elem(f, p, e, m->dtype, k);
    fprintf(f, "%s\n", max_entries >= 0 && n > max_entries ? " ..." : "");
  }
  return SPX_OK;
}

spx_status spx_rbp_paper_bytes(const spx_csr *a, spx_rbp_paper *o) {
  int64_t i, vb;
  spx_status s;
  if (!a || !o) return spx__fail(SPX_INVALID_ARGUMENT, "spx_rbp_paper_bytes: NULL argument");
  memset(o, 0, sizeof *o);
  if ((s = spx__csr_in_bounds(a))) return spx__wrap(s, "spx_rbp_paper_bytes"); /* runs read col + 1 */
  o->n = a->nrows;
  o->nz = a->nnz;
  o->vb = vb = (int64_t)SPX_DTYPE_SIZE(a->dtype);
  for (i = 0; i < a->nrows; i++) {
    int64_t nb, nv, nn;
    spx__rbp_row(a, i, &nb, &nv, &nn);
    o->nblocks += nb; o->nval += nv; o->nnon += nn;
    o->k = SPX__MAX(o->k, spx__row_len(a, i));
    o->kv = SPX__MAX(o->kv, nv);
    o->kc = SPX__MAX(o->kc, 2 * nb);
  }
  o->ncol = 2 * o->nblocks;
  o->csr = vb * o->nz + 4 * o->nz + 4 * (o->n + 1);                                         /* (1) */
  o->ell = vb * o->n * o->k + 4 * o->n * o->k;                                              /* (2) */
  o->rbp_csr = 12 * (o->n + 1) + 4 * o->ncol + vb * o->nval + 4 * o->nnon + vb * o->nnon;   /* (3) */
  o->rbp_ell = vb * o->n * o->kv + 4 * o->n * o->kc + vb * o->nnon + 4 * o->nnon + 4 * (o->n + 1); /* (4) */
  return SPX_OK;
}
