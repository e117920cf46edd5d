/* SPDX-License-Identifier: BSD-3-Clause */
/* The tuner's cost model (tuner.h): each format's byte predictor, its model (lane mapping,
 * launches, serial walk) as the format's registry line gives it (SPX_FORMATS), the longest serial
 * walk of its kernel, the predicted time per SpMV and per conversion, and the candidates with their
 * scores (spx_plan_model). It reads the row profile (plan_profile_impl.h) and the device
 * description (plan_device_impl.h), converts a format that has no predictor to learn its bytes
 * (formats), and asks the kernels (kernels.h, cuda.h) and the device converters (dmatrix.h) what
 * they would do; nothing of the plan object above it. */
#include "common.h"
#include "dmatrix.h"
#include "kernels.h"
#include "tuner.h"
#include "../cuda.h"
#include "../formats.h"
#include "../plan.h"

/* ---- Byte predictors ------------------------------------------------------------------------
 * One per format spx knows the layout of, spx__pb_<p> for the predictor p its registry line names:
 * the bytes spx_fmt_bytes would give after conversion with default parameters, from the row
 * structure alone (tests check they are equal); spx__po_<p> adds what else the model knows of
 * those formats (what their kernels read, their block factor, padding and build parameters). A
 * registered format's comes from the model it gave (spx_format_set_model, below); a format without
 * one is converted to learn its bytes. The
 * lane mapping (the line's lanes) picks the imbalance term: FLAT (nonzeros spread evenly: COO, SS),
 * PADDED (padding already in the bytes: ELL, SELL), ROW (a thread per row in row order), SORTED
 * (rows sorted: JDS), CSR (the vector kernel's lanes per row). */
enum {
  SPX__MAP_FLAT = SPX_LANES_FLAT, SPX__MAP_PADDED = SPX_LANES_PADDED, SPX__MAP_ROW = SPX_LANES_ROW,
  SPX__MAP_SORTED = SPX_LANES_SORTED, SPX__MAP_CSR = SPX_LANES_CSR
};

typedef spx__plan_pred_fn spx__pred_fn;

/* What the model knows of one predictor's formats, beside their stored bytes; a NULL field takes
 * the common rule. One per predictor (spx__po_<predictor>), named by the registry line, so that
 * nothing below asks which format it is looking at. */
typedef struct spx__plan_ops {
  spx__pred_fn bytes;                                /* stored bytes, -1 unknown, -2 declines */
  int64_t (*read)(const spx__pprof *p, int64_t vb);  /* what a ROW-lane kernel moves; NULL: the stored */
  int (*blocky)(const spx__pprof *p, int64_t vb);    /* whether the block factor applies; NULL: never */
  double (*padding)(const spx__pprof *p);            /* stored slots per nonzero; NULL: the lanes' rule */
  void (*choose)(const spx__pprof *p, int64_t vb, spx_format_params *params); /* the build's parameters */
  double (*walk)(const spx__pprof *p);               /* a ROW walk's steps; NULL: the longest row */
} spx__plan_ops;
#define SPX__PLAN_OPS(pb, read, blocky, padding, choose, walk) \
  static const spx__plan_ops spx__po_##pb = {spx__pb_##pb, read, blocky, padding, choose, walk};

/* A parameter's descriptor default by name (SPX_AUTO when the format decides, or has none). */
static int64_t spx__plan_pdef(const spx_format_vtable *vt, const char *name) {
  int i;
  for (i = 0; i < vt->layout->nparams; i++)
    if (!strcmp(vt->layout->params[i].name, name)) return vt->layout->params[i].def;
  return SPX_AUTO;
}

static int64_t spx__pb_coo(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return p->nnz * (8 + vb);
}
SPX__PLAN_OPS(coo, NULL, NULL, NULL, NULL, NULL)
int64_t spx__pb_csr(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return 4 * (p->n + 1) + p->nnz * (4 + vb);
}
SPX__PLAN_OPS(csr, NULL, NULL, NULL, NULL, NULL)
static int64_t spx__pb_ell(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t k = spx__plan_pdef(vt, "k");
  return p->n * (k == SPX_AUTO ? p->row_max : k) * (4 + vb);
}
SPX__PLAN_OPS(ell, NULL, NULL, NULL, NULL, NULL)
/* ROW-lane kernels (ELL-R, RBP-*): a thread walks its own row to its end in lock step with its
 * warp, so nothing past the warp's longest row is read (the padding the stored bytes hold up to
 * the matrix's longest), and each step moves the slots of all the warp's lanes, ended rows
 * included (their sectors come with their neighbours'): nnz + idle_row slots. */
static int64_t spx__pb_ell_r(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return p->n * p->row_max * (4 + vb) + 4 * p->n;
}
int64_t spx__pr_ell_r(const spx__pprof *p, int64_t vb) {
  return (int64_t)(((double)p->nnz + p->idle_row) * (double)(4 + vb)) + 4 * p->n;
}
SPX__PLAN_OPS(ell_r, spx__pr_ell_r, NULL, NULL, NULL, NULL)
static int64_t spx__pb_jds(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return 4 * p->n + 4 * (p->row_max + 1) + p->nnz * (4 + vb);
}
SPX__PLAN_OPS(jds, NULL, NULL, NULL, NULL, NULL)
/* HYB's ELL width: the parameter, or Bell and Garland's rule as the converter applies it. */
static int64_t spx__plan_hyb_k(const spx__pprof *p, const spx_format_vtable *vt) {
  int64_t k = spx__plan_pdef(vt, "k"), rows = p->n, i;
  if (k != SPX_AUTO) return k;
  for (i = 0; i < p->row_max; i++) {
    rows -= p->hist[i];
    if (3 * rows < p->n || rows < 4096) return i;
  }
  return p->row_max;
}
static int64_t spx__pb_hyb(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t k = spx__plan_hyb_k(p, vt), i, ncoo = 0;
  for (i = k + 1; i <= p->row_max; i++) ncoo += p->hist[i] * (i - k);
  return p->n * k * (4 + vb) + ncoo * (8 + vb);
}
SPX__PLAN_OPS(hyb, NULL, NULL, NULL, NULL, NULL)
/* The atomic adds into y of HYB's COO part: its kernel sums each warp's run of a row's entries
 * and adds the run with one atomicAdd, so one per row past K, and one more where a run crosses a
 * warp's edge (at most one per 32 entries). */
double spx__plan_hyb_atomics(const spx__pprof *p, const spx_format_vtable *vt) {
  int64_t k = spx__plan_hyb_k(p, vt), i, rows = 0, ncoo = 0;
  for (i = k + 1; i <= p->row_max; i++) {
    rows += p->hist[i];
    ncoo += p->hist[i] * (i - k);
  }
  return (double)rows + (double)ncoo / 32.0;
}
static int64_t spx__pb_ss(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t seg = spx__plan_pdef(vt, "seg"), nseg;
  if (seg != 256) return -1; /* the profile counted runs for 256 */
  nseg = (p->nnz + seg - 1) / seg;
  return nseg * seg * (8 + vb) + 4 * p->ss_runs + 4 * (nseg + 1);
}
SPX__PLAN_OPS(ss, NULL, NULL, NULL, NULL, NULL)
/* RBP's block factor applies where its runs average 4 columns or more. */
static int spx__plan_rbp_blocky(const spx__pprof *p, int64_t vb) {
  (void)vb; return p->nblocks > 0 && p->nval >= 4 * p->nblocks;
}
/* A thread that walks its own stretch of memory alone (RBP-ELL(-R)'s isolated nonzeros, a row's
 * CSR; RBP-CSR at one lane per row) reads a whole 32-byte sector per value and per index where its
 * walk outlasts what L1 keeps of the warp's 32 stretches: `count` entries of `bytes` stored in
 * `sectors` arrays move 32 * sectors each, by the share min(1, run / SPX__PLAN_WALK_RUN)^2 of walks
 * of `run` entries. The sector is the hardware's; the run was fitted on the replicated fit half
 * (bench/corpus/split.tsv; docs/performance.md, "Walks of their own"). */
#define SPX__PLAN_WALK_RUN 28.0
static double spx__plan_walk_bytes(int64_t count, int64_t bytes, int sectors, double run) {
  double h = run > 0 ? run / SPX__PLAN_WALK_RUN : 0;
  if (h > 1) h = 1;
  return (double)count * (double)(32 * sectors - bytes) * h * h;
}
static int64_t spx__pb_rbp_csr(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return vb * p->nval + 8 * p->nblocks + 12 * (p->n + 1) + (vb + 4) * p->nnon;
}
/* RBP-CSR's lanes per row (the kernel's rule, spx__ks_rbp_csr) read neighbouring blocks of a row
 * together; at one lane per row the lane walks its row alone. */
static int64_t spx__pr_rbp_csr(const spx__pprof *p, int64_t vb) {
  const double n = p->n > 0 ? (double)p->n : 1.0;
  double extra = 0;
  if (spx__tpr_of((double)(p->nblocks + p->nnon) / n, 0) == 1)
    extra = spx__plan_walk_bytes(p->nval, vb, 1, (double)p->nnz / n) +
            spx__plan_walk_bytes(p->nnon, vb + 4, 2, (double)p->nnz / n);
  return spx__pb_rbp_csr(p, NULL, vb) + (int64_t)extra;
}
SPX__PLAN_OPS(rbp_csr, spx__pr_rbp_csr, spx__plan_rbp_blocky, NULL, NULL, NULL)
/* RBP-ELL(-R)'s rows walk their blocks' values and pairs (RBP-ELL one padding pair more, where its
 * walk stops; RBP-ELL-R its row length), grown by the share ELL-R's idle lanes add; row pointers
 * and the isolated nonzeros' CSR as stored, each row's a thread's own walk. */
static int64_t spx__plan_rbp_read(const spx__pprof *p, int64_t vb, double per_row) {
  double grow = p->nnz > 0 ? ((double)p->nnz + p->idle_row) / (double)p->nnz : 1.0;
  double blocks = (double)(vb * p->nval + 8 * p->nblocks) + per_row * (double)p->n;
  return (int64_t)(grow * blocks) + 4 * (p->n + 1) + (vb + 4) * p->nnon +
         (int64_t)spx__plan_walk_bytes(p->nnon, vb + 4, 2, p->n > 0 ? (double)p->nnon / (double)p->n : 0);
}
static int64_t spx__pb_rbp_ell(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return vb * p->n * p->max_bval + 8 * p->n * p->max_blocks + 4 * (p->n + 1) + (vb + 4) * p->nnon;
}
static int64_t spx__pr_rbp_ell(const spx__pprof *p, int64_t vb) { return spx__plan_rbp_read(p, vb, 8.0); }
/* RBP-ELL(-R)'s thread walks a row's block pairs and isolated nonzeros a step each, and a block's
 * values SPX__PLAN_RBP_VALUES to a step (the compiler unrolls a block's loop by 4 where its length
 * is not the unrolled common one): the most of each a row holds (maybe from different rows: an
 * upper bound), at most the longest row. Without the column counts (the floor probe's profile),
 * the longest row. */
#define SPX__PLAN_RBP_VALUES 4.0
static double spx__plan_rbp_walk(const spx__pprof *p) {
  const double w = (double)(p->max_blocks + p->max_iso) + (double)p->max_bval / SPX__PLAN_RBP_VALUES;
  return p->cols_done && w < (double)p->row_max ? w : (double)p->row_max;
}
SPX__PLAN_OPS(rbp_ell, spx__pr_rbp_ell, spx__plan_rbp_blocky, NULL, NULL, spx__plan_rbp_walk)
static int64_t spx__pb_rbp_ell_r(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  return spx__pb_rbp_ell(p, vt, vb) + 4 * p->n;
}
static int64_t spx__pr_rbp_ell_r(const spx__pprof *p, int64_t vb) { return spx__plan_rbp_read(p, vb, 4.0); }
SPX__PLAN_OPS(rbp_ell_r, spx__pr_rbp_ell_r, spx__plan_rbp_blocky, NULL, NULL, spx__plan_rbp_walk)

/* SELL-C-sigma and SELL16 with C = 32 and sigma 1 or 256 (the descriptors' defaults); another C
 * or sigma has no predictor (converted to learn its bytes). */
static int64_t spx__pb_sell(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t c = spx__plan_pdef(vt, "c"), sigma = spx__plan_pdef(vt, "sigma");
  if (c != 32 || (sigma != 1 && sigma != 256)) return -1;
  return (sigma > 1 ? 4 * p->n : 0) + 4 * ((p->n + c - 1) / c + 1) + p->sell_slots[sigma > 1] * (4 + vb);
}
SPX__PLAN_OPS(sell, NULL, NULL, NULL, NULL, NULL)
/* -2: the converter would decline (a slice spans more than 16 bits of columns). */
static int64_t spx__pb_sell16(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t c = spx__plan_pdef(vt, "c"), sigma = spx__plan_pdef(vt, "sigma"), slot = 2 + vb, ns = (p->n + c - 1) / c;
  if (c != 32 || (sigma != 1 && sigma != 256 && sigma != SPX_AUTO)) return -1;
  if (sigma == SPX_AUTO) /* the converter's rule: sort only when it saves more than the perm array */
    sigma = p->n > 1 && p->sell_slots[1] * slot + 4 * p->n < p->sell_slots[0] * slot ? 256 : 1;
  /* A wide slice seen (even in a sample: its windows are real slices) means the converter declines. */
  if (sigma == 1 && p->sell16_wide[0]) return -2;
  /* Sorted windows: the window's span only bounds its slices'. A whole profile lets the converter
   * decide; a sampled one declines too (converting a large matrix to find out costs seconds). */
  if (sigma > 1 && p->sell16_wide[1]) return p->sampled ? -2 : -1;
  return (sigma > 1 ? 4 * p->n : 0) + 4 * (ns + 1) + 4 * ns + p->sell_slots[sigma > 1] * slot;
}
SPX__PLAN_OPS(sell16, NULL, NULL, NULL, NULL, NULL)
/* BSR's square block of least bytes (ties to the smaller), as the converter picks; its bytes. */
static int64_t spx__plan_bsr_best(const spx__pprof *p, int64_t vb, int64_t *bytes_out) {
  int64_t b, best = -1, bb = 1;
  for (b = 1; b <= 8; b++) {
    int64_t bytes = 4 * ((p->n + b - 1) / b + 1) + 4 * p->bsr_blocks[b] + vb * p->bsr_blocks[b] * b * b;
    if (best < 0 || bytes < best) { best = bytes; bb = b; }
  }
  if (bytes_out) *bytes_out = best;
  return bb;
}
static int64_t spx__pb_bsr(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t bytes;
  if (spx__plan_pdef(vt, "r") != SPX_AUTO || spx__plan_pdef(vt, "c") != SPX_AUTO) return -1;
  spx__plan_bsr_best(p, vb, &bytes);
  return bytes;
}
/* BSR's block factor applies where its best square block is larger than 1; the build converts
 * with that block (once, instead of counting blocks for 8 sizes first). */
static int spx__plan_bsr_blocky(const spx__pprof *p, int64_t vb) { return spx__plan_bsr_best(p, vb, NULL) > 1; }
static void spx__plan_bsr_choose(const spx__pprof *p, int64_t vb, spx_format_params *params) {
  params->bsr_r = params->bsr_c = spx__plan_bsr_best(p, vb, NULL);
}
SPX__PLAN_OPS(bsr, NULL, spx__plan_bsr_blocky, NULL, spx__plan_bsr_choose, NULL)

/* SDIA with C = 32: -2 when the converter would decline (over its fill limit; capped counts are
 * lower bounds, so over stays over), -1 (convert to learn) when a sample lands near the limit or a
 * slice was not counted out. */
static int64_t spx__pb_sdia(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t c = spx__plan_pdef(vt, "c"), mf = spx__plan_pdef(vt, "max_fill"), ns = (p->n + 31) / 32;
  if (c != 32 || mf < 1) return -1;
  if (p->sdia_slots > mf * p->nnz) return -2;
  if (p->sdia_capped || (p->sampled && 10 * p->sdia_slots > 9 * mf * p->nnz)) return -1;
  return 4 * (ns + 1) + p->sdia_diags * (4 + 32 * vb);
}
/* SDIA's slots carry no index: its padding is slots per nonzero, not bytes per CSR slot. */
static double spx__plan_sdia_padding(const spx__pprof *p) { return p->nnz ? (double)p->sdia_slots / (double)p->nnz : 1.0; }
SPX__PLAN_OPS(sdia, NULL, NULL, spx__plan_sdia_padding, NULL, NULL)
#undef SPX__PLAN_OPS
/* A registry line's predictor none, and every registered format's: no stored bytes known. */
static const spx__plan_ops spx__po_none = {NULL, NULL, NULL, NULL, NULL, NULL};

/* The longest serial walk one thread of a format's kernel makes, in steps of the device's chain_ns
 * (the line's walk): NONE (nonzeros spread evenly over threads: COO, SS, cuSPARSE), ROW (a thread
 * walks a whole row, or its slice's widest: factor x the longest row), HYB (its ELL part's width
 * K), CSR (the vector kernel's lanes per row; none where the kernel balances by nonzeros). The
 * factors (a step's cost in chain_ns: JDS reads its diagonal's start first, SELL16 decodes
 * offsets, RBP-ELL reads two arrays a step, RBP-CSR walks runs, BSR blocks) were fitted on the fit
 * halves of the shared and replicated matrices (bench/corpus/split.tsv). */
enum {
  SPX__CHAIN_NONE = SPX_WALK_NONE, SPX__CHAIN_ROW = SPX_WALK_ROW, SPX__CHAIN_HYB = SPX_WALK_HYB,
  SPX__CHAIN_CSR = SPX_WALK_CSR, SPX__CHAIN_STEPS = SPX_WALK_STEPS /* registered formats: their predictor's */
};

/* What the planner knows of a format, from the model its registry line carries (formats.h says
 * what each field means). Keyed by spx_format so that the format's line is the only place that
 * names it; the predictor none means no predictor. A registered format's model (spx_format_set_model)
 * has the same fields, its predictor in ext. */
typedef struct spx__plan_model {
  const spx__plan_ops *ops; /* never NULL: spx__po_none for no predictor */
  int map, launches, cols;
  const char *declines;
  int chain;
  double chain_factor;
  spx_format_predict_fn ext;
} spx__plan_model;

#define SPX__PLAN_MODEL(pb, map, launches, cols, chain, cf, note) \
  {&spx__po_##pb, SPX__MAP_##map, launches, cols, note, SPX__CHAIN_##chain, cf, NULL}
static const spx__plan_model spx__plan_models[SPX_FORMAT_COUNT] = {
#define SPX__PLAN_MODEL_ROW(E, n, D, cost, what, model, device) [SPX_FORMAT_##E] = SPX__PLAN_MODEL model,
    SPX_FORMATS(SPX__PLAN_MODEL_ROW)
#undef SPX__PLAN_MODEL_ROW
};
#undef SPX__PLAN_MODEL

/* A registered format without a model: no predictor, one launch, and a thread per row for the
 * walk, the safe guess; its lanes count as flat. */
static const spx__plan_model spx__plan_model_none = {&spx__po_none, SPX__MAP_FLAT, 1, 0, NULL, SPX__CHAIN_ROW, 1.0, NULL};

/* Registered formats' models (spx_format_set_model), by id - SPX_FORMAT_COUNT; set 0: none given.
 * The note is copied, so the caller's string need not outlive the call. */
#define SPX__PLAN_EXT_MODELS (SPX_FORMAT_MAX - SPX_FORMAT_COUNT)
static struct {
  int set;
  spx__plan_model m;
  char note[80];
} spx__plan_ext_models[SPX__PLAN_EXT_MODELS];

static const spx__plan_model *spx__plan_model_of(spx_format f) {
  int e = (int)f - SPX_FORMAT_COUNT;
  if ((int)f >= 0 && (int)f < SPX_FORMAT_COUNT) return &spx__plan_models[f];
  return e >= 0 && e < SPX__PLAN_EXT_MODELS && spx__plan_ext_models[e].set ? &spx__plan_ext_models[e].m
                                                                             : &spx__plan_model_none;
}

int spx__plan_reads_columns(spx_format f) { return spx__plan_model_of(f)->cols; }

spx_status spx_format_set_model(spx_format f, const spx_format_model *m) {
  int e = (int)f - SPX_FORMAT_COUNT;
  if (!spx_format_info(f)) return spx__fail(SPX_INVALID_ARGUMENT, "spx_format_set_model: unknown format %d", (int)f);
  if (e < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_format_set_model: '%s' is in-tree: its model is its SPX_FORMATS line",
                     spx_format_name(f));
  if (!m) {
    memset(&spx__plan_ext_models[e], 0, sizeof spx__plan_ext_models[e]);
    return SPX_OK;
  }
  if ((int)m->lanes < (int)SPX_LANES_FLAT || (int)m->lanes > (int)SPX_LANES_CSR || (int)m->walk < (int)SPX_WALK_NONE ||
      (int)m->walk > (int)SPX_WALK_STEPS || m->launches < 1 || m->cols < 0 || m->cols > 1 || !(m->factor >= 0) ||
      (m->walk == SPX_WALK_STEPS && !m->predict))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_format_set_model: '%s': lanes %d, walk %d, launches %d, cols %d or "
                     "factor %g out of range (or SPX_WALK_STEPS without a predictor)", spx_format_name(f),
                     (int)m->lanes, (int)m->walk, m->launches, m->cols, m->factor);
  spx__plan_ext_models[e].m.ops = &spx__po_none;
  spx__plan_ext_models[e].m.ext = m->predict;
  spx__plan_ext_models[e].m.map = (int)m->lanes;
  spx__plan_ext_models[e].m.launches = m->launches;
  spx__plan_ext_models[e].m.cols = m->cols;
  spx__plan_ext_models[e].m.chain = (int)m->walk;
  spx__plan_ext_models[e].m.chain_factor = m->factor;
  snprintf(spx__plan_ext_models[e].note, sizeof spx__plan_ext_models[e].note, "%s", m->note ? m->note : "");
  spx__plan_ext_models[e].m.declines = m->note ? spx__plan_ext_models[e].note : NULL;
  spx__plan_ext_models[e].set = 1;
  return SPX_OK;
}

/* Blocks of 256 threads an SM holds at once (2048 threads): a long row holds its block's slot. */
#define SPX__PLAN_BLOCK_SLOTS 8

/* What every format's serial walk shares, counted once per selection: the rounds in which the
 * blocks holding a long row (over half the longest) take the device's block slots, and the steps
 * of CSR's kernel (0 where it balances by nonzeros; spx_csr_kernel_options' choice). */
typedef struct spx__plan_walk {
  int64_t rounds;
  double csr_steps;
  int csr_balanced;
  spx__pprof probe;        /* the floor probe's row profile, its hist in probe_hist (the walk is never copied) */
  int64_t probe_hist[8];
  double probe_csr;        /* CSR's steps on the probe */
} spx__plan_walk;

/* The steps of CSR's kernel on p (0 where it balances by nonzeros; spx_csr_kernel_options' choice,
 * and on a small matrix the kernel's own rule for its lanes per row). */
static double spx__plan_csr_steps(const spx__pprof *p, int *balanced) {
  spx_dmatrix_options o;
  double steps = 0;
  *balanced = 0;
  if (p->nnz < SPX__CSR_SMALL_NNZ) {
    int64_t l, sq = 0;
    for (l = 1; l <= p->row_max; l++) sq += p->hist[l] * l * l; /* below SPX__CSR_SMALL_NNZ^2: no overflow */
    return spx__csr_small_steps(p->n, p->nnz, p->row_max, sq);
  }
  if (spx_csr_kernel_options(p->n, p->nnz, p->hist, p->row_max, &o) == SPX_OK) {
    *balanced = o.stream || o.load_balance;
    if (!*balanced) {
      int tpr = o.threads_per_row > 0 ? o.threads_per_row : 1;
      steps = (double)((p->row_max + tpr - 1) / tpr);
    }
  }
  spx_clear_error();
  return steps;
}

/* The floor probe's row profile (a side^3 7-point Poisson: corners 4 nonzeros, edges 5, faces 6,
 * the inside 7), into hist[0 .. 7]. */
static void spx__plan_probe_profile(spx__pprof *q, int64_t hist[8]) {
  const int64_t s = SPX__PLAN_FLOOR_PROBE_SIDE, e = s - 2;
  memset(q, 0, sizeof *q);
  memset(hist, 0, 8 * sizeof *hist);
  hist[4] = 8; hist[5] = 12 * e; hist[6] = 6 * e * e; hist[7] = e * e * e;
  q->n = q->ncols = s * s * s;
  q->nnz = 4 * hist[4] + 5 * hist[5] + 6 * hist[6] + 7 * hist[7];
  q->row_max = 7;
  q->hist = hist;
}

static void spx__plan_walk_make(const spx_plan_device *d, const spx__pprof *p, spx__plan_walk *w) {
  int64_t l, nlong = 0, blocks, slots;
  int balanced;
  memset(w, 0, sizeof *w);
  w->rounds = 1;
  if (d->warp <= 1 || !p->hist || p->n == 0) return;
  w->csr_steps = spx__plan_csr_steps(p, &w->csr_balanced);
  spx__plan_probe_profile(&w->probe, w->probe_hist);
  w->probe_csr = spx__plan_csr_steps(&w->probe, &balanced);
  for (l = p->row_max / 2 + 1; l <= p->row_max; l++) nlong += p->hist[l];
  blocks = SPX__MIN(nlong, (p->n + 255) / 256);
  slots = (int64_t)d->sms * SPX__PLAN_BLOCK_SLOTS;
  if (slots > 0) w->rounds = SPX__MAX(1, (blocks + slots - 1) / slots); /* SM count unknown: one round */
}

/* Microseconds of the longest serial walk of format q's kernel on p (0 on the host, and for
 * formats that spread nonzeros evenly): rounds x its steps x chain_ns. given: a registered
 * format's steps (its predictor's, for SPX__CHAIN_STEPS). *probe_us: the same walk on the floor
 * probe (0 for SPX__CHAIN_STEPS: the predictor is not asked about the probe). */
static double spx__plan_chain_us(const spx_plan_device *d, const spx__pprof *p, const spx__plan_walk *w,
                                 const spx__plan_model *q, const spx_format_vtable *vt, int64_t given,
                                 double *probe_us) {
  double steps = 0, probe = 0, ns = d->chain_ns > 0 ? d->chain_ns : SPX__PLAN_CHAIN_NS;
  *probe_us = 0;
  if (d->warp <= 1 || !p->hist || p->n == 0) return 0;
  switch (q->chain) {
  case SPX__CHAIN_ROW:
    steps = q->ops->walk ? q->ops->walk(p) : (double)p->row_max;
    probe = q->ops->walk ? q->ops->walk(&w->probe) : (double)w->probe.row_max;
    break;
  case SPX__CHAIN_HYB: steps = (double)spx__plan_hyb_k(p, vt); probe = (double)spx__plan_hyb_k(&w->probe, vt); break;
  case SPX__CHAIN_CSR: steps = w->csr_steps; probe = w->probe_csr; break;
  case SPX__CHAIN_STEPS: steps = (double)given; break;
  default: return 0;
  }
  *probe_us = 1e-3 * probe * q->chain_factor * ns;
  return 1e-3 * (double)w->rounds * steps * q->chain_factor * ns;
}

/* ---- The model ---------------------------------------------------------------------------------- */
/* Predicted microseconds per SpMV for a format storing `bytes`, with `idle` idle lane-slots. */
double spx__plan_time_us(const spx_plan_device *d, const spx__pprof *p, int64_t vb, int64_t bytes,
                         double idle, int launches) {
  double bpus = d->bandwidth_gbs * 1e3; /* bytes per microsecond */
  double moved = (double)bytes + (double)(vb * (p->ncols + p->n));
  if (p->ncols * vb > d->cache_bytes) moved += d->x_miss * (double)(p->nnz * vb);
  return d->launch_us * launches + moved / bpus + d->imbalance_weight * idle * (double)(4 + vb) / bpus;
}

/* The column profile's host price on one thread (runs, 8 block sizes, SELL's slots, SDIA's offsets,
 * x sectors): nanoseconds per row and per nonzero read, as a plan meets it (caches and clocks as a
 * caller leaves them) on a server core; a sample reads its windows' block rows and x sectors in
 * part, at that share of the whole pass's rate. Fitted on the fit halves (docs/performance.md);
 * priced whole because the profile only pays where it is a small share of the work. */
#define SPX__PLAN_COLS_ROW_NS 60.0
#define SPX__PLAN_COLS_NNZ_NS 17.0
#define SPX__PLAN_COLS_SAMPLED 0.4
/* The milliseconds the column profile of a may cost: `share` of the work `calls` SpMVs do on the
 * CSR baseline as the model prices it from a's sizes. */
double spx__plan_columns_budget_ms(const spx_csr *a, const spx_plan_device *d, int64_t calls, double share) {
  int64_t vb = (int64_t)SPX_DTYPE_SIZE(a->dtype);
  spx__pprof q;
  memset(&q, 0, sizeof q);
  q.n = a->nrows; q.ncols = a->ncols; q.nnz = a->nnz;
  return share * 1e-3 * (double)calls * spx__plan_time_us(d, &q, vb, spx__pb_csr(&q, NULL, vb), 0, 1);
}

double spx__plan_columns_ms(const spx_csr *a, int threads) {
  double rows = (double)a->nrows, nnz = (double)a->nnz, share = 1;
  if (spx__plan_sampled(a)) {
    rows = (double)spx__plan_sample_windows(a) * 256.0;
    nnz = rows * (double)a->nnz / (double)a->nrows;
    share = SPX__PLAN_COLS_SAMPLED;
  }
  return 1e-6 * share * (SPX__PLAN_COLS_ROW_NS * rows + SPX__PLAN_COLS_NNZ_NS * nnz) / (threads > 1 ? threads : 1);
}

/* Whether the column profile pays: its price on one thread within spx__plan_columns_budget_ms. */
static int spx__plan_columns_pay(const spx_csr *a, const spx_plan_device *d, int64_t calls, double share) {
  return spx__plan_columns_ms(a, 1) <= spx__plan_columns_budget_ms(a, d, calls, share);
}

/* Random-gather microseconds of p at d's bandwidth (see spx_plan_device.format_gather): 0 on the
 * host, and on matrices whose windows stay within a small part of the cache. */
double spx__plan_gather_us(const spx_plan_device *d, const spx__pprof *p, int64_t vb) {
  double span, reach;
  if (d->warp <= 1 || p->x_windows == 0 || d->cache_bytes <= 0 || !(d->bandwidth_gbs > 0)) return 0;
  span = (double)p->x_span / (double)p->x_windows * (double)vb;
  reach = span >= (double)d->cache_bytes ? 1.0 : span / (double)d->cache_bytes;
  return (double)p->nnz * 32.0 * spx__pprof_xsec(p) * reach / (d->bandwidth_gbs * 1e3);
}

/* Formats spx_dmatrix_convert converts on the device (their calibrated rate covers the upload):
 * those whose registry line names a device converter (SELL, SELL16, SDIA, BSR, ELL, ELL-R, JDS). */
int spx__plan_on_device(int cuda, int f) { return cuda && spx__device_converts(f); }

/* Conversion (host, or device) + upload + one compile, milliseconds; f < 0: no format-specific rate. */
static double spx__plan_conv_ms(const spx_plan_device *d, const spx__pprof *p, int64_t bytes, int cuda, int f) {
  int known = f >= 0 && f < SPX_FORMAT_MAX && d->format_convert_ns[f] > 0;
  double ms = known ? 1e-6 * d->format_convert_ns[f] * (double)bytes
                    : 1e-6 * (d->convert_ns_per_nnz * (double)p->nnz + d->convert_ns_per_byte * (double)bytes);
  if (d->h2d_gbs > 0 && !(known && spx__plan_on_device(cuda, f))) ms += (double)bytes / (d->h2d_gbs * 1e6);
  if (cuda) ms += d->jit_ms;
  return ms;
}

/* A plan that wraps the CSR as it is (cuSPARSE's, or spx's kernel on the staged arrays): narrowing
 * the row pointers, the upload, and `fixed_ms` (a handle and work buffer, or a kernel compile). */
static double spx__plan_wrap_ms(const spx_plan_device *d, const spx__pprof *p, int64_t bytes, double fixed_ms) {
  return 1e-6 * d->convert_ns_per_nnz * (double)p->n + (d->h2d_gbs > 0 ? (double)bytes / (d->h2d_gbs * 1e6) : 0) + fixed_ms;
}

void spx__plan_score(spx_plan_candidate *c, int64_t calls) {
  c->score_us = c->predicted_us + 1e3 * c->convert_ms / (double)(calls > 0 ? calls : 1);
}

/* A candidate's name as the reasons, the notes and `spx select` print it. */
const char *spx__plan_cname(const spx_plan_candidate *c) {
  return c->engine == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr" : spx_format_name(c->format);
}

void spx__plan_fit(spx_plan_candidate *c, int64_t vec, int64_t limit) {
  c->fits = !(limit > 0 && c->bytes + vec > limit);
  if (!c->fits)
    snprintf(c->note, sizeof c->note, "%.1f MB + vectors over the %.1f MB limit", 1e-6 * (double)c->bytes,
             1e-6 * (double)limit);
}

/* cuSPARSE CSR as a candidate: the CSR's bytes at the device's streaming model times its factor,
 * plus its gather, and at least its call floor; no host conversion besides narrowing the row
 * pointers, a handle and a buffer. */
void spx__plan_cusparse_cand(const spx_plan_device *d, const spx__pprof *p, int64_t vb, double gather,
                             int64_t limit, int64_t vec, int64_t calls, spx_plan_candidate *c) {
  memset(c, 0, sizeof *c);
  c->format = SPX_FORMAT_CSR;
  c->engine = SPX_PLAN_ENGINE_CUSPARSE;
  c->measured_us = -1;
  c->bytes = spx__pb_csr(p, NULL, vb);
  c->padding = 1;
  spx__plan_fit(c, vec, limit);
  c->predicted_us = c->stream_us = d->cusparse_factor * spx__plan_time_us(d, p, vb, c->bytes, 0, 1) + d->gather_cusparse * gather;
  if (c->predicted_us < d->cusparse_call_us) c->predicted_us = d->cusparse_call_us; /* the call floor */
  c->convert_ms = spx__plan_wrap_ms(d, p, c->bytes, 0.5);
  spx__plan_score(c, calls);
}

/* Rows sorted by length (JDS) put unrelated rows side by side in a warp: their x reads stop sharing
 * sectors. Bytes-equivalent of that: each nonzero of a row that lost its neighbour reads its own
 * 32-byte sector from L2, at SPX__PLAN_SCATTER_WEIGHT of a DRAM byte (L2 moves about twice DRAM's
 * bandwidth on data-center GPUs). Without this term the model took JDS on matrices whose rows lose
 * their neighbours when sorted, where it ran several times its prediction; where rows keep them
 * (stencils) the term is 0 and JDS runs at its prediction (docs/performance.md). */
#define SPX__PLAN_SCATTER_WEIGHT 0.5
static int64_t spx__plan_scatter(const spx__pprof *p, int map) {
  double lost;
  if (map != SPX__MAP_SORTED || p->n < 2) return 0;
  lost = 1.0 - (double)p->sorted_kept / (double)(p->n - 1);
  return (int64_t)(SPX__PLAN_SCATTER_WEIGHT * lost * 32.0 * (double)p->nnz);
}

/* The formats' candidates of a on profile p (its column counts where cols_done) into out[0..max),
 * with rows non-NULL where the CSR is staged; *n: how many. A format whose prediction needs the
 * column counts, without them, is not modelled and says why (skipped). With params non-NULL, the
 * profile's choices go there for the build: BSR's block size (the build then converts once instead
 * of counting blocks for 8 sizes first). exact (NULL: none), by format: bytes a conversion gave an
 * earlier pass (-1: none), so that a format without a predictor is converted once. */
static spx_status spx__plan_formats(const spx_csr *a, const spx__pprof *rows, const spx__pprof *p, const spx_plan_device *d,
                                    int64_t calls, int64_t limit, int cuda, spx_plan_candidate *out, int max, int *n,
                                    spx_format_params *params, const char *skipped, const int64_t *exact) {
  int64_t vb = (int64_t)SPX_DTYPE_SIZE(a->dtype), vec = vb * (a->nrows + a->ncols);
  int f, k = 0;
  spx_status s;
  const int tr = spx__plan_tracing();
  double tc = spx__now(), gather = spx__plan_gather_us(d, p, vb);
  spx__plan_walk walk;
  spx__plan_walk_make(d, p, &walk);
  for (f = 0; f < spx_format_count() && k < max; f++) {
    const spx_format_vtable *vt = spx_format_info((spx_format)f);
    const spx__plan_model *q;
    spx_plan_candidate *c = &out[k];
    spx_format_estimate est;
    double idle = 0;
    if (tr && f > 0 && spx__now() - tc > 5e-6)
      fprintf(stderr, "spx plan:   %-8.8s %8.3f ms\n", spx_format_name((spx_format)(f - 1)), 1e3 * (spx__now() - tc));
    tc = spx__now();
    if (!vt || !spx_format_has_kernel((spx_format)f)) continue;
    q = spx__plan_model_of((spx_format)f);
    memset(c, 0, sizeof *c);
    c->format = (spx_format)f;
    c->engine = SPX_PLAN_ENGINE_SPX;
    c->measured_us = -1;
    c->bytes = -1;
    if (q->cols && !p->cols_done) { /* its bytes need the column counts, which were not read */
      snprintf(c->note, sizeof c->note, "not modelled: %s", skipped);
      c->fits = 0;
      c->predicted_us = c->score_us = c->convert_ms = -1;
      k++;
      continue;
    }
    memset(&est, 0, sizeof est);
    if (q->ops->bytes) c->bytes = q->ops->bytes(p, vt, vb);
    else if (q->ext) { /* a registered format's predictor, on the public part of the profile */
      spx_format_profile pub;
      memset(&pub, 0, sizeof pub);
      pub.nrows = p->n; pub.ncols = p->ncols; pub.nnz = p->nnz; pub.row_max = p->row_max; pub.row_hist = p->hist;
      pub.warp = d->warp;
      s = q->ext(a, &pub, vb, &est);
      if (s && s != SPX_UNSUPPORTED) goto fail;
      if (s) { /* declines: the model's note, else the predictor's own words */
        snprintf(c->note, sizeof c->note, "declined: %.80s", q->declines ? q->declines : spx_last_error());
        spx_clear_error();
        s = SPX_OK;
        c->fits = 0;
        c->predicted_us = c->score_us = c->convert_ms = -1;
        k++;
        continue;
      }
      c->bytes = est.bytes < 0 ? -1 : est.bytes;
    }
    if (params && q->ops->choose && c->bytes >= 0) q->ops->choose(p, vb, params);
    if (c->bytes == -2) { /* the predictor knows the converter declines */
      snprintf(c->note, sizeof c->note, "declined: %s%s", q->declines ? q->declines : "the converter would decline",
               p->sampled ? " (from sampled windows)" : "");
      c->fits = 0;
      c->predicted_us = c->score_us = c->convert_ms = -1;
      k++;
      continue;
    }
    if (c->bytes >= 0 && p->sampled && q->cols && !q->ext) /* a registered predictor reads the matrix itself */
      snprintf(c->note, sizeof c->note, "bytes estimated from %d sampled windows of 256 rows", spx__plan_sample_windows(a));
    if (c->bytes < 0 && exact && exact[f] >= 0) { /* converted by the pass before */
      c->bytes = exact[f];
      c->bytes_exact = 1;
    }
    if (c->bytes < 0) { /* no predictor: convert once and ask */
      spx_fmt *m = NULL;
      s = spx_fmt_from_csr(a, (spx_format)f, NULL, &m);
      if (s == SPX_UNSUPPORTED || s == SPX_RANGE) {
        snprintf(c->note, sizeof c->note, "declined: %.80s", spx_last_error());
        spx_clear_error();
        c->fits = 0;
        c->predicted_us = c->score_us = c->convert_ms = -1;
        k++;
        continue;
      }
      if (s) goto fail;
      c->bytes = spx_fmt_bytes(m);
      c->bytes_exact = 1;
      spx_fmt_destroy(m);
    }
    switch (q->map) {
    case SPX__MAP_ROW: idle = p->idle_row; break;
    case SPX__MAP_SORTED: idle = p->idle_sorted; break;
    case SPX__MAP_CSR: idle = walk.csr_balanced ? 0 : p->idle_csr; break;
    default: idle = 0;
    }
    c->idle = p->nnz ? idle / (double)p->nnz : 0;
    c->padding = 1; /* stored slots / nnz, from the bytes: slots cost 4 + vb each */
    if (q->map == SPX__MAP_PADDED && p->nnz) c->padding = (double)c->bytes / (double)(p->nnz * (4 + vb));
    if (q->ops->padding) c->padding = q->ops->padding(p);
    if (q->ext && est.slots > 0 && p->nnz) c->padding = (double)est.slots / (double)p->nnz;
    spx__plan_fit(c, vec, limit);
    /* the streaming model (launches + bytes + idle lanes) times the format's calibrated factor,
     * plus its gather cost; at least the longest serial walk and the format's measured floor */
    {
      int64_t moved = q->map == SPX__MAP_ROW && q->ops->read && !c->bytes_exact ? q->ops->read(p, vb) : c->bytes;
      c->predicted_us = spx__plan_time_us(d, p, vb, moved + spx__plan_scatter(p, q->map), idle, q->launches);
    }
    if (f < SPX_FORMAT_MAX) {
      double ff = d->format_factor[f];
      if (d->format_factor_block[f] > 0 && q->ops->blocky && q->ops->blocky(p, vb)) ff = d->format_factor_block[f];
      if (ff > 0) c->predicted_us *= ff;
      c->predicted_us += (d->format_gather[f] > 0 ? d->format_gather[f] : d->gather_default) * gather;
    }
    /* a remainder added into y by atomics costs per atomic, not per byte (spx_plan_device.atomic_row_ns) */
    if (q->chain == SPX__CHAIN_HYB && p->hist && d->atomic_row_ns > 0)
      c->predicted_us += 1e-3 * d->atomic_row_ns * spx__plan_hyb_atomics(p, vt);
    c->stream_us = c->predicted_us;
    /* at least the floor and the walk after it: a thread's chain of dependent loads starts once its
     * launch is paid. A measured floor (the probe's) holds the probe's own walk: only the rest adds. */
    {
      double probe_us, floor_us = 0;
      c->chain_us = spx__plan_chain_us(d, p, &walk, q, vt, est.steps, &probe_us);
      if (f < SPX_FORMAT_MAX && d->format_floor_us[f] > 0)
        floor_us = d->format_floor_us[f] + SPX__MAX(0.0, c->chain_us - probe_us);
      else if (c->chain_us > 0)
        floor_us = d->launch_us * q->launches + c->chain_us;
      if (floor_us > c->predicted_us) c->predicted_us = floor_us;
    }
    c->convert_ms = spx__plan_conv_ms(d, p, c->bytes, cuda, f);
    if (rows && cuda && f == SPX_FORMAT_CSR && a->nnz <= INT32_MAX) /* wraps the staged arrays, as cuSPARSE does */
      c->convert_ms = spx__plan_wrap_ms(d, p, c->bytes, d->jit_ms);
    else if (rows && f < SPX_FORMAT_MAX && d->format_staged_convert_ns[f] > 0 && spx__plan_on_device(cuda, f))
      /* converted on the device from the staged arrays: the CSR's upload priced as for the wraps (all
       * candidates share it), then the calibrated staged conversion. The whole-conversion rate (its
       * own upload from pageable memory at the calibration's rate) overprices it many times over and
       * turned auto away from conversions that pay back (docs/performance.md). */
      c->convert_ms = spx__plan_wrap_ms(d, p, spx__pb_csr(p, NULL, vb), d->jit_ms) +
                      1e-6 * d->format_staged_convert_ns[f] * (double)c->bytes;
    spx__plan_score(c, calls);
    k++;
  }
  *n = k;
  return SPX_OK; /* a declining converter's status is its candidate's note */
fail:
  *n = k;
  return s;
}

/* The most the x gather can cost a format on a, us: every nonzero its own sector, every window
 * as wide as the matrix (spx__plan_gather_us with its counts at their bounds), at the largest
 * weight any format's gather has. */
static double spx__plan_gather_bound_us(const spx_plan_device *d, const spx_csr *a) {
  double w = SPX__MAX(d->gather_cusparse, d->gather_default);
  int f;
  spx__pprof q;
  memset(&q, 0, sizeof q);
  q.nnz = q.x_sectors = q.x_nnz = a->nnz;
  q.x_span = a->ncols;
  q.x_windows = 1;
  for (f = 0; f < SPX_FORMAT_MAX; f++) w = SPX__MAX(w, d->format_gather[f]);
  return w * spx__plan_gather_us(d, &q, (int64_t)SPX_DTYPE_SIZE(a->dtype));
}

/* The time reading a's values once takes at the smallest calibrated factor, one launch, no idle
 * lanes: no format runs faster (us; q: a's sizes). */
static double spx__plan_fastest_us(const spx_csr *a, const spx_plan_device *d) {
  int64_t vb = (int64_t)SPX_DTYPE_SIZE(a->dtype);
  double fmin = 1;
  int f;
  spx__pprof q;
  memset(&q, 0, sizeof q);
  q.n = a->nrows; q.ncols = a->ncols; q.nnz = a->nnz;
  for (f = 0; f < SPX_FORMAT_MAX; f++) {
    if (d->format_factor[f] > 0) fmin = SPX__MIN(fmin, d->format_factor[f]);
    if (d->format_factor_block[f] > 0) fmin = SPX__MIN(fmin, d->format_factor_block[f]);
  }
  return fmin * spx__plan_time_us(d, &q, vb, a->nnz * vb, 0, 1);
}

/* What the column counts can save over `calls` SpMVs of a, ms, against the candidates c[0..k)
 * priced without them. A format that needs them runs no faster than spx__plan_fastest_us and
 * pays its conversion first: on a GPU at least a kernel's compile (jit_ms), as the model prices
 * every converted candidate. They also give every candidate its x gather, which can move a
 * prediction by at most spx__plan_gather_bound_us a call. Where no candidate is usable without
 * them they are worth whatever they cost. */
static double spx__plan_columns_value_ms(const spx_csr *a, const spx_plan_device *d, int64_t calls, int cuda,
                                         const spx_plan_candidate *c, int k) {
  double best = -1, g = spx__plan_gather_bound_us(d, a), save;
  int i;
  for (i = 0; i < k; i++)
    if (c[i].fits && c[i].predicted_us >= 0 && (best < 0 || c[i].score_us < best)) best = c[i].score_us;
  if (best < 0) return 1e300;
  save = 1e-3 * (double)calls * (best + g - spx__plan_fastest_us(a, d)) - (cuda ? d->jit_ms : 0);
  return SPX__MAX(save, 1e-3 * (double)calls * g);
}

/* Fills the candidates of a (dtype of a). cuSPARSE CSR last when with_cusparse.
 * with_cusparse 2: the cuSPARSE candidate alone (a plan forced to it reads no columns: the baseline
 * pays what a cuSPARSE user pays, not our model). params: see spx__plan_formats.
 * cols_share < 0: the profile reads the column counts; else only when they cost at most that share
 * of the expected work (spx__plan_columns_pay) and at most what they can save against the
 * candidates priced without them (spx__plan_columns_value_ms: those are priced first, and stand
 * where the counts cannot pay). Without them the formats whose prediction needs them are not
 * modelled, and say so. */
spx_status spx__plan_candidates(const spx_csr *a, const spx__pprof *rows, const spx_plan_device *d, int64_t calls,
                                int64_t limit, int with_cusparse, int cuda, spx_plan_candidate *out, int max, int *n,
                                spx_format_params *params, double cols_share) {
  spx__pprof p;
  int64_t vb = (int64_t)SPX_DTYPE_SIZE(a->dtype), vec = vb * (a->nrows + a->ncols);
  int k = 0, read, i;
  int64_t exact[SPX_FORMAT_MAX];
  spx_status s;
  const int tr = spx__plan_tracing();
  double tc = spx__now(), value = -1, price = 0;
  for (i = 0; i < SPX_FORMAT_MAX; i++) exact[i] = -1;
  if ((s = spx__pprof_make(a, d->warp, with_cusparse == 2 ? 0 : 2, rows, &p))) return s;
  read = with_cusparse != 2 && !p.cols_done && (cols_share < 0 || spx__plan_columns_pay(a, d, calls, cols_share));
  if (read && cols_share >= 0) { /* optional: priced without them first (these notes stand if they do) */
    if ((s = spx__plan_formats(a, rows, &p, d, calls, limit, cuda, out, max, &k, params,
                               "the column counts cannot save their price here", NULL)))
      goto fail;
    for (i = 0; i < k; i++)
      if (out[i].bytes_exact && (int)out[i].format < SPX_FORMAT_MAX) exact[out[i].format] = out[i].bytes;
    if (with_cusparse && k < max) spx__plan_cusparse_cand(d, &p, vb, 0, limit, vec, calls, &out[k++]);
    value = spx__plan_columns_value_ms(a, d, calls, cuda, out, k);
    price = spx__plan_columns_ms(a, 1);
    read = value >= price;
  }
  if (read && (s = spx__pprof_columns(a, 0, &p, NULL))) goto fail;
  if (tr)
    fprintf(stderr, "spx plan:   profile  %8.3f ms (x sectors per nonzero %.4f, window span %.0f columns, gather %.4g us; "
            "columns %s%s)\n", 1e3 * (spx__now() - tc), spx__pprof_xsec(&p),
            p.x_windows ? (double)p.x_span / (double)p.x_windows : 0.0, spx__plan_gather_us(d, &p, vb),
            !p.cols_done ? "skipped" : rows && rows->cols_done ? "from the device profile" : cols_share < 0 ? "always read" : "paid",
            value < 0 ? "" : read ? ": worth their price" : ": cannot pay back their price");
  if (with_cusparse == 2 || read || value < 0) { /* else the candidates priced without them stand */
    k = 0;
    if (with_cusparse != 2 && (s = spx__plan_formats(a, rows, &p, d, calls, limit, cuda, out, max, &k, params,
                                                     "the column profile costs more than the choice can save here",
                                                     exact)))
      goto fail;
    if (with_cusparse && k < max)
      spx__plan_cusparse_cand(d, &p, vb, spx__plan_gather_us(d, &p, vb), limit, vec, calls, &out[k++]);
  }
  spx__pprof_free(&p);
  *n = k;
  return SPX_OK;
fail:
  spx__pprof_free(&p);
  return s;
}

/* Whether no conversion can pay back on a: even a format as fast as reading the values once
 * (spx__plan_fastest_us: the smallest calibrated factor, one launch, no imbalance) would save at most
 * half the cheapest kernel's price (kernel_ms: a compile, jit_ms, unless the JIT cache holds spx's
 * CSR kernel for the staged arrays) over expected_calls against cuSPARSE's prediction cs_us, made
 * as the model makes it without the column profile (skipped there too: it would not pay). Then
 * the model's ranking is known before it is made: auto and model take cuSPARSE CSR as it is,
 * without the profile. */
int spx__plan_nothing_pays(const spx_csr *a, const spx_plan_device *d, int64_t calls, double share, double cs_us,
                           double kernel_ms) {
  if (!(kernel_ms > 0) || spx__plan_columns_pay(a, d, calls, share)) return 0;
  return (double)calls * (cs_us - spx__plan_fastest_us(a, d)) <= 0.5 * 1e3 * kernel_ms;
}

spx_status spx_plan_model(const spx_csr *a, const spx_plan_device *dev, int64_t expected_calls,
                          int64_t memory_limit, int with_cusparse, spx_plan_candidate *out, int max, int *n) {
  spx_status s;
  if (!a || !dev || !out || !n || max < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_model: NULL argument or negative max");
  *n = 0;
  if (!(dev->bandwidth_gbs > 0) || dev->warp < 1)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_model: the device needs bandwidth_gbs > 0 and warp >= 1");
  if (expected_calls < 0 || memory_limit < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_model: negative expected_calls or memory_limit");
  if ((s = spx_csr_validate(a))) return s;
  return spx__plan_candidates(a, NULL, dev, expected_calls, memory_limit, with_cusparse, dev->h2d_gbs > 0, out, max, n, NULL, -1);
}
