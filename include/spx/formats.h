/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/formats.h: sparse formats as data. One descriptor per format, one registry line per format.
 *
 * WHAT
 *   Every format (COO, CSR, ELL, ELL-R, JDS, SELL-C-sigma, HYB, RBP-CSR, RBP-ELL, RBP-ELL-R, SS,
 *   BSR) is described by one X-macro, its descriptor, in spx/formats/<name>.h:
 *
 *     #define SPX_DESC_ELL(X, PARAM, SCALAR, ARRAY)                                        \
 *       PARAM (X, k, SPX_AUTO, 0, INT32_MAX, "row width K; auto = the longest row")         \
 *       SCALAR(X, int64_t, nrows, "rows") ...  SCALAR(X, int32_t, k, "row width")          \
 *       ARRAY (X, int32_t, col, nrows * k, "column indices, column-major")                 \
 *       ARRAY (X, SPX_VAL, val, nrows * k, "values, column-major; padding is -0.0")
 *
 *   PARAM rows are the conversion parameters (int64; SPX_AUTO means the default shown), SCALAR
 *   rows the sizes a kernel needs (int32_t or int64_t; the first three are always nrows, ncols,
 *   nnz), ARRAY rows the arrays: element type int32_t, int64_t, uint16_t or SPX_VAL (the matrix's value type,
 *   double or float) and a length expression in the scalars. From that one table the macros below
 *   generate the struct (spx_fmt_ell), the parameter fields of spx_format_params (ell_k), and the
 *   tables and accessors (spx_format_layout) that generic code uses for allocation, freeing, exact
 *   byte counts, length checks, the debug dump, kernel-argument packing and (later) device copies.
 *   By hand, per format: the converter from CSR, the converter to CSR, the invariant check beyond
 *   lengths, and the host SpMV (spx/internal/formats/<name>_impl.h; related formats share a file:
 *   ELL and ELL-R in ell_impl.h, the three RBP formats in rbp_impl.h).
 *
 * USE
 *   spx_format_params p;  spx_format_params_default(&p);  p.sell_c = 8;     (or NULL: defaults)
 *   spx_fmt *m;  spx_fmt_from_csr(a, SPX_FORMAT_SELL, &p, &m);
 *   spx_fmt_spmv(m, 1.0, x, 0.0, y);   spx_fmt_bytes(m);   spx_fmt_to_csr(m, &b);   spx_fmt_destroy(m);
 *
 * PADDING
 *   Formats that store more slots than nonzeros fill them with -0.0 (the sign bit set): a zero for
 *   the arithmetic, and a mark that to_csr uses to tell fill from an explicit zero of the matrix.
 *   Such formats store an explicit -0.0 of the input as +0.0 (the same number), so CSR -> format
 *   -> CSR gives back the same pattern and values equal under ==. Padding slots carry a column
 *   index that is valid (the row's last column; for an empty row min(row, ncols-1)), so branch-free
 *   kernels read x only where the row does: a NaN or Inf there gives the same result as CSR, except
 *   in an empty row whose padding column holds one.
 *
 * OUT-OF-TREE FORMATS
 *   A program can add a format without editing spx: write a descriptor, expand SPX_FORMAT_STRUCT,
 *   SPX_FORMAT_IMPL and SPX_FORMAT_VTABLE with it, write four functions, and call
 *   spx_format_register() once at start-up. examples/dia/ does this for DIA. */
#ifndef SPX_FORMATS_H
#define SPX_FORMATS_H

#include <stdio.h>
#include <string.h>

#include "status.h"
#include "types.h"
#include "csr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parameter left to the format (its descriptor default, which may itself be "decide from the
 * matrix", as ELL's K). Every field of spx_format_params starts as SPX_AUTO. */
#define SPX_AUTO INT64_MIN

/* Element type of an array: 32- or 64-bit integers, 16-bit unsigned offsets (index compression),
 * or the matrix's values (double or float). ORDER: append only. */
typedef enum spx_elem { SPX_ELEM_I32, SPX_ELEM_I64, SPX_ELEM_VAL, SPX_ELEM_U16 } spx_elem;

/* A pointer to the values of a format, typed by the matrix's dtype. */
typedef union spx_val {
  void *p;
  double *d;
  float *f;
} spx_val;

typedef struct spx_format_param_info {
  const char *name;        /* "k"; spx_format_params names it "<format>_k" */
  int64_t def, lo, hi;     /* default (SPX_AUTO: the converter decides) and allowed range */
  const char *doc;
} spx_format_param_info;

typedef struct spx_format_scalar_info {
  const char *name;
  int bytes;               /* 4 (int32_t) or 8 (int64_t): the kernel argument's size */
  const char *doc;
} spx_format_scalar_info;

typedef struct spx_format_array_info {
  const char *name;
  spx_elem elem;
  const char *length;      /* the length expression, as written in the descriptor */
  const char *doc;
} spx_format_array_info;

/* What a descriptor generates: tables plus accessors over an opaque format struct (whose first
 * member is always `spx_dtype dtype`). Generic code iterates arrays with these and nothing else. */
typedef struct spx_format_layout {
  size_t impl_size;
  int nparams, nscalars, narrays;
  const spx_format_param_info *params;
  const spx_format_scalar_info *scalars;
  const spx_format_array_info *arrays;
  int64_t (*scalar)(const void *impl, int i);   /* value of scalar i */
  int64_t (*length)(const void *impl, int i);   /* elements of array i, from the scalars */
  void *(*array)(const void *impl, int i);      /* pointer of array i */
  void (*set_array)(void *impl, int i, void *p);
} spx_format_layout;

/* A format as the registry holds it: its layout and its four handwritten functions. */
typedef struct spx_format_vtable {
  const char *name;        /* "ell": lower case, [a-z0-9_] */
  const char *description;
  const char *cost;        /* time of the conversion from CSR, e.g. "O(nnz + n)" */
  const spx_format_layout *layout;
  /* Fills the scalars and arrays of impl (dtype already set) from a; params in descriptor order.
   * On failure the caller frees whatever arrays were set. */
  spx_status (*from_csr)(const spx_csr *a, const int64_t *params, void *impl);
  /* Fills out->row_ptr, col_idx and values; out was created with the format's sizes and dtype. */
  spx_status (*to_csr)(const void *impl, spx_csr *out);
  /* Invariants beyond the array lengths (which the caller checked). */
  spx_status (*check)(const void *impl);
  /* y = alpha*A*x + beta*y, direct on the format; beta == 0 does not read y. */
  spx_status (*spmv)(const void *impl, double alpha, const void *x, double beta, void *y);
} spx_format_vtable;

/* ---- The descriptor macro layer -------------------------------------------------------------
 * A descriptor is `#define DESC(X, PARAM, SCALAR, ARRAY)` whose rows are
 *   PARAM (X, name, default, lo, hi, "doc")          int64 conversion parameter
 *   SCALAR(X, type, name, "doc")                      int32_t or int64_t size
 *   ARRAY (X, type, name, length-expression, "doc")   type int32_t, int64_t, uint16_t or SPX_VAL
 * X is passed through untouched (the registry passes the format's name). A length expression may
 * use the scalars by name and must not contain a top-level comma. */
#define SPX__NONE(...)
/* Per element-type token: the field's type, its spx_elem, reading and writing it as void *. */
#define SPX__PTR_int32_t int32_t *
#define SPX__PTR_int64_t int64_t *
#define SPX__PTR_uint16_t uint16_t *
#define SPX__PTR_SPX_VAL spx_val
#define SPX__ELEM_int32_t SPX_ELEM_I32
#define SPX__ELEM_int64_t SPX_ELEM_I64
#define SPX__ELEM_uint16_t SPX_ELEM_U16
#define SPX__ELEM_SPX_VAL SPX_ELEM_VAL
#define SPX__GET_int32_t(f) ((void *)(f))
#define SPX__GET_int64_t(f) ((void *)(f))
#define SPX__GET_uint16_t(f) ((void *)(f))
#define SPX__GET_SPX_VAL(f) ((f).p)
#define SPX__SET_int32_t(f, q) ((f) = (int32_t *)(q))
#define SPX__SET_int64_t(f, q) ((f) = (int64_t *)(q))
#define SPX__SET_uint16_t(f, q) ((f) = (uint16_t *)(q))
#define SPX__SET_SPX_VAL(f, q) ((f).p = (q))

#define SPX__S_FIELD(X, type, name, doc) type name;
#define SPX__A_FIELD(X, type, name, len, doc) SPX__PTR_##type name;
#define SPX__P_MEMBER(X, name, def, lo, hi, doc) int64_t name;
#define SPX__P_INFO(X, name, def, lo, hi, doc) {#name, def, lo, hi, doc},
#define SPX__S_INFO(X, type, name, doc) {#name, (int)sizeof(type), doc},
#define SPX__A_INFO(X, type, name, len, doc) {#name, SPX__ELEM_##type, #len, doc},
#define SPX__S_LOCAL(X, type, name, doc) const int64_t name = (int64_t)spx__s->name; (void)name;
#define SPX__S_GET(X, type, name, doc) if (spx__i == spx__k++) return (int64_t)spx__s->name;
#define SPX__A_LEN(X, type, name, len, doc) if (spx__i == spx__k++) return (int64_t)(len);
#define SPX__A_GET(X, type, name, len, doc) if (spx__i == spx__k++) return SPX__GET_##type(spx__s->name);
#define SPX__A_SET(X, type, name, len, doc) \
  if (spx__i == spx__k++) { SPX__SET_##type(spx__s->name, spx__p); return; }
#define SPX__P_UNPACK(X, name, def, lo, hi, doc) spx__p->name = spx__v[spx__k++];
#define SPX__COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

/* The format's struct: `typedef struct TYPE { spx_dtype dtype; scalars; arrays; } TYPE;`.
 * Public (a header may expand it), C and C++. */
#define SPX_FORMAT_STRUCT(TYPE, DESC) \
  typedef struct TYPE { spx_dtype dtype; DESC(spx__x, SPX__NONE, SPX__S_FIELD, SPX__A_FIELD) } TYPE;

/* The generated part of the implementation, with names prefixed by P (e.g. spx__ell_): the typed
 * parameters P##params, the tables and accessors, P##layout, and P##alloc(TYPE *) which allocates
 * every array from the scalars (zeroed). Expand it in C, before the handwritten functions. */
#define SPX_FORMAT_IMPL(P, TYPE, DESC)                                                              \
  typedef struct P##params {                                                                        \
    int64_t spx__none;                                                                              \
    DESC(spx__x, SPX__P_MEMBER, SPX__NONE, SPX__NONE)                                               \
  } P##params;                                                                                      \
  static const spx_format_param_info P##param_info[] = {                                           \
      DESC(spx__x, SPX__P_INFO, SPX__NONE, SPX__NONE){NULL, 0, 0, 0, NULL}};                        \
  static const spx_format_scalar_info P##scalar_info[] = {                                         \
      DESC(spx__x, SPX__NONE, SPX__S_INFO, SPX__NONE){NULL, 0, NULL}};                              \
  static const spx_format_array_info P##array_info[] = {                                           \
      DESC(spx__x, SPX__NONE, SPX__NONE, SPX__A_INFO){NULL, SPX_ELEM_I32, NULL, NULL}};             \
  static int64_t P##scalar(const void *spx__v, int spx__i) {                                        \
    const TYPE *spx__s = (const TYPE *)spx__v;                                                      \
    int spx__k = 0;                                                                                 \
    DESC(spx__x, SPX__NONE, SPX__S_GET, SPX__NONE)                                                  \
    return -1;                                                                                      \
  }                                                                                                 \
  static int64_t P##length(const void *spx__v, int spx__i) {                                        \
    const TYPE *spx__s = (const TYPE *)spx__v;                                                      \
    int spx__k = 0;                                                                                 \
    DESC(spx__x, SPX__NONE, SPX__S_LOCAL, SPX__NONE)                                                \
    DESC(spx__x, SPX__NONE, SPX__NONE, SPX__A_LEN)                                                  \
    return -1;                                                                                      \
  }                                                                                                 \
  static void *P##array(const void *spx__v, int spx__i) {                                           \
    const TYPE *spx__s = (const TYPE *)spx__v;                                                      \
    int spx__k = 0;                                                                                 \
    DESC(spx__x, SPX__NONE, SPX__NONE, SPX__A_GET)                                                  \
    return NULL;                                                                                    \
  }                                                                                                 \
  static void P##set_array(void *spx__v, int spx__i, void *spx__p) {                                \
    TYPE *spx__s = (TYPE *)spx__v;                                                                  \
    int spx__k = 0;                                                                                 \
    DESC(spx__x, SPX__NONE, SPX__NONE, SPX__A_SET)                                                  \
  }                                                                                                 \
  static void P##params_unpack(const int64_t *spx__v, P##params *spx__p) {                          \
    int spx__k = 0;                                                                                 \
    spx__p->spx__none = 0;                                                                          \
    DESC(spx__x, SPX__P_UNPACK, SPX__NONE, SPX__NONE)                                               \
    (void)spx__k; (void)spx__v;                                                                     \
  }                                                                                                 \
  static const spx_format_layout P##layout = {                                                      \
      sizeof(TYPE), SPX__COUNT(P##param_info), SPX__COUNT(P##scalar_info), SPX__COUNT(P##array_info), \
      P##param_info, P##scalar_info, P##array_info, P##scalar, P##length, P##array, P##set_array};    \
  static spx_status P##alloc(TYPE *s) { return spx_format_alloc(&P##layout, s); }

/* The vtable `static const spx_format_vtable P##vtable`, after the four handwritten functions:
 *   spx_status P##from_csr(const spx_csr *a, const P##params *p, TYPE *s);
 *   spx_status P##to_csr(const TYPE *s, spx_csr *out);
 *   spx_status P##check(const TYPE *s);
 *   spx_status P##spmv(const TYPE *s, double alpha, const void *x, double beta, void *y);  */
#define SPX_FORMAT_VTABLE(P, TYPE, NAME, DESCRIPTION, COST)                                         \
  static spx_status P##from_csr_v(const spx_csr *spx__a, const int64_t *spx__v, void *spx__s) {     \
    P##params spx__p;                                                                               \
    P##params_unpack(spx__v, &spx__p);                                                              \
    return P##from_csr(spx__a, &spx__p, (TYPE *)spx__s);                                            \
  }                                                                                                 \
  static spx_status P##to_csr_v(const void *spx__s, spx_csr *spx__o) {                              \
    return P##to_csr((const TYPE *)spx__s, spx__o);                                                 \
  }                                                                                                 \
  static spx_status P##check_v(const void *spx__s) { return P##check((const TYPE *)spx__s); }       \
  static spx_status P##spmv_v(const void *spx__s, double spx__al, const void *spx__x,               \
                              double spx__be, void *spx__y) {                                       \
    return P##spmv((const TYPE *)spx__s, spx__al, spx__x, spx__be, spx__y);                         \
  }                                                                                                 \
  static const spx_format_vtable P##vtable = {NAME,     DESCRIPTION, COST,       &P##layout,        \
                                              P##from_csr_v, P##to_csr_v, P##check_v, P##spmv_v};

/* ---- In-tree descriptors and the registry --------------------------------------------------- */
#include "formats/coo.h"
#include "formats/csr.h"
#include "formats/ell.h"
#include "formats/ell_r.h"
#include "formats/jds.h"
#include "formats/sell.h"
#include "formats/hyb.h"
#include "formats/rbp_csr.h"
#include "formats/rbp_ell.h"
#include "formats/rbp_ell_r.h"
#include "formats/ss.h"
#include "formats/bsr.h"
#include "formats/sell16.h"
#include "formats/sdia.h"

/* The formats spx has. ORDER: the enum order, the order tests and `spx formats` list them;
 * append only (stored plans name formats by their string, but the enum is part of the ABI).
 * _(ENUM, name, descriptor, cost of from_csr, "what it is",
 *   (model: predictor, lanes, launches, cols, walk, factor, note), device)
 * The model is what the planner (internal/plan_model_impl.h) knows of the format, device its
 * converter on the GPU (internal/cuda_impl.h). They live on the format's registry line so that a
 * format is added in one place (here, plus its predictor in the planner and its device converter,
 * if any); they are plain tokens that only the planner and the device backend expand, so this
 * layer needs none of their types and stays below them (spx.h's order):
 *   predictor  the planner's spx__po_<predictor>: the format's bytes from the row profile (equal to
 *              spx_fmt_bytes with default parameters; tests check it), what its kernel reads where
 *              that is less, when its block factor applies, its padding and the build's parameters
 *              it picks; or none: converted to learn
 *   lanes      how lanes meet rows, which picks the idle-lane term: FLAT (nonzeros spread evenly),
 *              PADDED (padding already in the bytes), ROW (a thread per row in row order), SORTED
 *              (rows sorted by length), CSR (the vector kernel's lanes per row)
 *   launches   kernel launches per SpMV
 *   cols       1: the predictor reads the column counts (estimates when the profile is sampled), so
 *              the format is not modelled where reading them does not pay
 *   walk       the longest serial walk of one thread: NONE (nonzeros spread evenly), ROW (factor x the
 *              longest row), HYB (its ELL part's width), CSR (the vector kernel's lanes per row)
 *   factor     a walk step's cost in the planner's step time (chain_ns), fitted on the fit halves of
 *              the shared and replicated matrices (bench/corpus/split.tsv) as the steps beyond the
 *              floor probe's; 0 where there is no walk
 *   note       why the converter declines when the predictor says -2, or NULL
 *   device     the device converter spx__dmatrix_<device>_device, which converts a CSR (host or
 *              staged on the device) on the GPU; none: converted on the host, then uploaded
 * A format registered at run time (spx_format_register) has no line: it gives the planner the same
 * model with spx_format_set_model (spx/plan.h; without one the planner converts it to learn its
 * bytes and takes a thread per row, the safe guess), and a device copy of it is converted on the
 * host. */
#define SPX_FORMATS(_)                                                                                                                      \
  _(COO,       coo,       SPX_DESC_COO,       "O(nnz + n)",             "coordinate triplets, row-major",                                   \
    (coo,       FLAT,   2, 0, NONE, 0.0,  NULL), none)                                                                                      \
  _(CSR,       csr,       SPX_DESC_CSR,       "O(nnz + n)",             "compressed sparse row, 32-bit row pointers",                       \
    (csr,       CSR,    1, 0, CSR,  1.0,  NULL), none)                                                                                      \
  _(ELL,       ell,       SPX_DESC_ELL,       "O(n K)",                 "ELLPACK: n x K, column-major, padded",                             \
    (ell,       PADDED, 1, 0, ROW,  0.88, NULL), ell)                                                                                       \
  _(ELL_R,     ell_r,     SPX_DESC_ELL_R,     "O(n K)",                 "ELL plus row lengths (ELL-R)",                                     \
    (ell_r,     ROW,    1, 0, ROW,  1.0,  NULL), ell)                                                                                       \
  _(JDS,       jds,       SPX_DESC_JDS,       "O(nnz + n)",             "jagged diagonals, rows sorted by length",                          \
    (jds,       SORTED, 1, 0, ROW,  2.23, NULL), jds)                                                                                       \
  _(SELL,      sell,      SPX_DESC_SELL,      "O(slots + n log sigma)", "SELL-C-sigma: C-row slices, sigma-row sort windows",               \
    (sell,      PADDED, 1, 1, ROW,  0.89, NULL), sell)                                                                                      \
  _(HYB,       hyb,       SPX_DESC_HYB,       "O(n K + nnz)",           "ELL of width K plus a COO remainder",                              \
    (hyb,       PADDED, 2, 0, HYB,  0.47, NULL), none)                                                                                      \
  _(RBP_CSR,   rbp_csr,   SPX_DESC_RBP_CSR,   "O(nnz + n)",             "row block packing (column runs) on CSR",                           \
    (rbp_csr,   ROW,    1, 1, ROW,  0.57, NULL), none)                                                                                      \
  _(RBP_ELL,   rbp_ell,   SPX_DESC_RBP_ELL,   "O(n (Kv + Kc) + nnz)",   "row block packing on ELL",                                         \
    (rbp_ell,   ROW,    1, 1, ROW,  4.62, NULL), none)                                                                                      \
  _(RBP_ELL_R, rbp_ell_r, SPX_DESC_RBP_ELL_R, "O(n (Kv + Kc) + nnz)",   "row block packing on ELL-R",                                       \
    (rbp_ell_r, ROW,    1, 1, ROW,  4.65, NULL), none)                                                                                      \
  _(SS,        ss,        SPX_DESC_SS,        "O(nnz + n)",             "segmented scan with a per-element index",                          \
    (ss,        FLAT,   2, 0, NONE, 0.0,  NULL), none)                                                                                      \
  _(BSR,       bsr,       SPX_DESC_BSR,       "O(nnz + nblocks r)",     "r x c blocks (auto: square, least bytes)",                         \
    (bsr,       FLAT,   1, 1, ROW,  0.45, NULL), bsr)                                                                                       \
  _(SELL16,    sell16,    SPX_DESC_SELL16,    "O(slots + n log sigma)", "SELL-C-sigma with 16-bit column offsets per slice",                \
    (sell16,    PADDED, 1, 1, ROW,  1.42, "a slice spans more than 65536 columns"), sell)                                                   \
  _(SDIA,      sdia,      SPX_DESC_SDIA,      "O(nnz + slots)",         "sliced diagonals: per C-row slice its offsets, no column indices", \
    (sdia,      PADDED, 1, 1, ROW,  1.86, "the slices' diagonals exceed sdia_max_fill slots per nonzero"), sdia)

typedef enum spx_format {
#define SPX__FORMAT_ENUM(E, n, D, cost, what, model, device) SPX_FORMAT_##E,
  SPX_FORMATS(SPX__FORMAT_ENUM)
#undef SPX__FORMAT_ENUM
  SPX_FORMAT_COUNT /* in-tree formats; registered ones take the ids after it */
} spx_format;

/* The in-tree structs: spx_fmt_coo, spx_fmt_csr, spx_fmt_ell, ... */
#define SPX__FORMAT_STRUCT(E, n, D, cost, what, model, device) SPX_FORMAT_STRUCT(spx_fmt_##n, D)
SPX_FORMATS(SPX__FORMAT_STRUCT)
#undef SPX__FORMAT_STRUCT

#define SPX_FORMAT_MAX 48        /* in-tree + registered */
#define SPX_FORMAT_MAX_PARAMS 8  /* per format */
#define SPX_FORMAT_EXT_PARAMS 32 /* parameter slots shared by registered formats */

/* Conversion parameters: one field per descriptor PARAM, named <format>_<param> (ell_k, sell_c,
 * sell_sigma, hyb_k, ss_seg, bsr_r, bsr_c), and slots for registered formats (set those by name).
 * Start from spx_format_params_default(): a zeroed struct means K = 0, C = 0 and so on. */
typedef struct spx_format_params {
#define SPX__P_FIELD(X, name, def, lo, hi, doc) int64_t X##_##name;
#define SPX__FORMAT_PARAMS(E, n, D, cost, what, model, device) D(n, SPX__P_FIELD, SPX__NONE, SPX__NONE)
  SPX_FORMATS(SPX__FORMAT_PARAMS)
#undef SPX__FORMAT_PARAMS
#undef SPX__P_FIELD
  int64_t ext[SPX_FORMAT_EXT_PARAMS];
} spx_format_params;

/* Every parameter SPX_AUTO. */
void spx_format_params_default(spx_format_params *p);
/* Sets "<format>_<param>" (e.g. "sell_c"; also registered formats' ones); range-checked. */
spx_status spx_format_params_set(spx_format_params *p, const char *name, int64_t value);
/* Parses "sell_c=8,sell_sigma=64" (',' or whitespace between; "auto" allowed) into p. */
spx_status spx_format_params_parse(spx_format_params *p, const char *text);

/* Number of formats (in-tree + registered); ids are 0 .. count-1. */
int spx_format_count(void);
/* The registry entry of a format; NULL for an unknown id. */
const spx_format_vtable *spx_format_info(spx_format f);
/* "ell"; "unknown" for an unknown id. */
const char *spx_format_name(spx_format f);
/* By name ("sell", case and '-' vs '_' ignored); SPX_INVALID_ARGUMENT listing the names if none. */
spx_status spx_format_from_name(const char *name, spx_format *out);
/* Adds a format at run time and gives its id. Checks the vtable (names, the nrows/ncols/nnz
 * scalars, counts); not thread-safe: register at start-up. The vtable must outlive its use. */
spx_status spx_format_register(const spx_format_vtable *vt, spx_format *out);

/* For converters: allocates (zeroed) every array of impl with the lengths its scalars give;
 * arrays of length 0 stay NULL. On failure frees what it allocated. */
spx_status spx_format_alloc(const spx_format_layout *layout, void *impl);
/* Frees every array of impl and sets it to NULL (impl itself stays). */
void spx_format_free(const spx_format_layout *layout, void *impl);
/* For converters outside spx: records a printf-style message as this thread's last error (see
 * spx_last_error) and returns s. */
spx_status spx_format_fail(spx_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A matrix in some format: the generic handle every caller uses. */
typedef struct spx_fmt {
  spx_format format;
  spx_dtype dtype;
  int64_t nrows, ncols, nnz;
  double seconds;                /* wall time of the conversion from CSR */
  int64_t params[SPX_FORMAT_MAX_PARAMS]; /* as the converter got them (SPX_AUTO: it decided) */
  const spx_format_vtable *vt;
  void *impl;                    /* the format's struct, e.g. spx_fmt_ell */
} spx_fmt;

/* Converts a valid CSR (spx_csr_validate) to format f; params NULL means all defaults.
 * SPX_INVALID_ARGUMENT for bad parameters, SPX_RANGE when a 32-bit offset would overflow. The CSR
 * is checked first: row pointers out of order or past nnz and columns outside [0, ncols) give
 * SPX_INVALID_ARGUMENT naming the first bad row (rows merely unsorted are the format's to take or
 * refuse; BSR refuses them, and bad columns, in its own words). */
spx_status spx_fmt_from_csr(const spx_csr *a, spx_format f, const spx_format_params *params,
                            spx_fmt **out);
/* Back to CSR; CSR -> format -> CSR is exact (see PADDING). */
spx_status spx_fmt_to_csr(const spx_fmt *m, spx_csr **out);
/* y = alpha*A*x + beta*y (x, y of the matrix's dtype); beta == 0 does not read y. */
spx_status spx_fmt_spmv(const spx_fmt *m, double alpha, const void *x, double beta, void *y);
/* Array lengths against the scalars, then the format's own invariants. */
spx_status spx_fmt_validate(const spx_fmt *m);
/* Exact bytes of the format's arrays (what a device copy occupies). */
int64_t spx_fmt_bytes(const spx_fmt *m);
/* Value slots stored (padding included); spx_fmt_padding() = slots / nnz (1 when nnz == 0). */
int64_t spx_fmt_slots(const spx_fmt *m);
double spx_fmt_padding(const spx_fmt *m);
/* The value of a scalar by name ("k"); -1 when the format has none of that name. */
int64_t spx_fmt_scalar(const spx_fmt *m, const char *name);
/* Human-readable dump: parameters, scalars, and the first max_entries of every array. */
spx_status spx_fmt_dump(const spx_fmt *m, FILE *f, int64_t max_entries);
void spx_fmt_destroy(spx_fmt *m);

/* One array of a matrix, in descriptor order: what a device upload iterates. */
typedef struct spx_format_array {
  const char *name;
  spx_elem elem;
  size_t elem_size;
  int64_t count;
  void *host;
} spx_format_array;
/* Fills out[0 .. min(n, max)) and returns n, the number of arrays. */
int spx_fmt_arrays(const spx_fmt *m, spx_format_array *out, int max);

/* Kernel arguments in descriptor order: the scalars (int32 or int64 as declared), then one pointer
 * per array. ptrs[] is cuLaunchKernel's kernelParams and points into this struct: do not copy it. */
#define SPX_KERNEL_ARGS_MAX 40
typedef struct spx_kernel_args {
  int count;
  size_t size[SPX_KERNEL_ARGS_MAX];
  void *ptrs[SPX_KERNEL_ARGS_MAX];
  union {
    int32_t i32;
    int64_t i64;
    const void *p;
  } slot[SPX_KERNEL_ARGS_MAX];
} spx_kernel_args;
/* array_ptrs: one pointer per array (device copies), or NULL for the host arrays. */
spx_status spx_fmt_kernel_args(const spx_fmt *m, const void *const *array_ptrs, spx_kernel_args *out);

/* ---- The RBP paper's memory formulas (papers/000, formulas (1)-(4)) -------------------------
 * N rows, Nz nonzeros, K the longest row; runs of >= 2 consecutive columns are blocks (Nval their
 * values, Ncol = 2 x blocks first/last columns), the rest isolated (Nnon); Kv, Kc the widths of the
 * RBP-ELL value and column matrices. Bytes use 4-byte indices and vb-byte values (the paper's 8 for
 * double; 4 for float), so they equal spx_fmt_bytes of csr, ell, rbp_csr and rbp_ell. */
typedef struct spx_rbp_paper {
  int64_t n, nz, k, nnon, nval, ncol, nblocks, kv, kc, vb;
  int64_t csr, ell, rbp_csr, rbp_ell; /* (1) 8Nz+4Nz+4(N+1), (2) 12NK, (3), (4) with 8 -> vb */
} spx_rbp_paper;
/* SPX_INVALID_ARGUMENT for a CSR whose row pointers or columns are out of bounds (out zeroed). */
spx_status spx_rbp_paper_bytes(const spx_csr *a, spx_rbp_paper *out);

/* ---- Value helpers for converters (bit-exact moves, the padding mark) ----------------------- */
/* dst[j] = src[k], bits unchanged. */
static inline void spx_val_move(spx_val dst, int64_t j, spx_val src, int64_t k, spx_dtype t) {
  if (t == SPX_DOUBLE) memcpy(dst.d + j, src.d + k, sizeof(double));
  else memcpy(dst.f + j, src.f + k, sizeof(float));
}
/* As spx_val_move, but -0.0 becomes +0.0, so a padded format cannot mistake it for padding. */
static inline void spx_val_store(spx_val dst, int64_t j, spx_val src, int64_t k, spx_dtype t) {
  if (t == SPX_DOUBLE) {
    uint64_t u;
    memcpy(&u, src.d + k, sizeof u);
    if (u == 0x8000000000000000ull) u = 0;
    memcpy(dst.d + j, &u, sizeof u);
  } else {
    uint32_t u;
    memcpy(&u, src.f + k, sizeof u);
    if (u == 0x80000000u) u = 0;
    memcpy(dst.f + j, &u, sizeof u);
  }
}
/* dst[j] = -0.0, the padding mark. */
static inline void spx_val_pad(spx_val dst, int64_t j, spx_dtype t) {
  if (t == SPX_DOUBLE) dst.d[j] = -0.0;
  else dst.f[j] = -0.0f;
}
/* Whether src[k] is the padding mark (-0.0 exactly). */
static inline int spx_val_is_pad(spx_val src, int64_t k, spx_dtype t) {
  if (t == SPX_DOUBLE) {
    uint64_t u;
    memcpy(&u, src.d + k, sizeof u);
    return u == 0x8000000000000000ull;
  } else {
    uint32_t u;
    memcpy(&u, src.f + k, sizeof u);
    return u == 0x80000000u;
  }
}

#ifdef __cplusplus
}
#endif
#endif /* SPX_FORMATS_H */
