/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/cuda.h: device copies of formats, the device converters, and their kernel
 * launches. Which kernels a format runs is kernels_impl.h's (below); the planner's staged CSR,
 * which the converters take as input, is stage_impl.h's (above). */
#include "common.h"
#include "config.h"
#include "cuda_types.h"
#include "dmatrix.h"
#include "host.h"
#include "kernels.h"
#include "../cuda.h"
#include "../jit.h"

struct spx_dmatrix {
  spx_context *ctx;
  spx_format format;
  spx_dtype dtype;
  int64_t nrows, ncols, bytes;
  int narrays;
  spx_devptr arrays[SPX_KERNEL_ARGS_MAX];
  spx_kernel_args args;       /* scalars, then the device array pointers */
  spx_kernel_plan plan;
  void *fn[3];                /* CUfunction per launch */
  double jit_ms;
  int compiled, generic;
  /* tiered (spx_dmatrix_options.tiered): the specialized kernels compile on tier.job while fn holds
   * the generic ones (SPX__TIER_STANDIN) or nothing (SPX__TIER_NONE: the next SpMV waits) */
  spx__tier tier;
  char describe[256];
};

static void spx__dmatrix_free_arrays(spx_dmatrix *d) {
  int i;
  for (i = 0; i < d->narrays; i++) spx_device_free(d->ctx, d->arrays[i]);
  d->narrays = 0;
}

void spx_dmatrix_destroy(spx_dmatrix *d) {
  if (!d) return;
  spx__job_release(d->tier.job); /* a compile still running finishes into the JIT cache */
  spx__dmatrix_free_arrays(d);
  SPX_FREE(d);
}

/* The defines of launch l as the JIT takes them: SPX_VALUE_T first, the shape unless generic. */
static int spx__kdefines(spx_dtype dtype, const spx_kernel_launch *l, int generic, const char **out) {
  int n = 0, i;
  out[n++] = dtype == SPX_FLOAT ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double";
  if (generic) out[n++] = "SPX_GENERIC=1";
  for (i = generic ? l->nshape : 0; i < l->ndefines; i++) out[n++] = l->defines[i];
  return n;
}

static spx_status spx__dmatrix_jit(spx_dmatrix *d, int generic) {
  int i;
  for (i = 0; i < d->plan.nlaunch; i++) {
    const char *defs[SPX_KERNEL_DEFINES_MAX + 2];
    const spx_kernel_launch *l = &d->plan.launch[i];
    int n = spx__kdefines(d->dtype, l, generic, defs);
    spx_jit_stats before, after;
    spx_status s;
    double t0 = spx__now();
    spx_jit_stats_get(&before);
    s = spx_jit_kernel(d->ctx, l->template_name, l->kernel, n, defs, &d->fn[i]);
    spx_jit_stats_get(&after);
    d->jit_ms += 1e3 * (spx__now() - t0);
    d->compiled |= after.compiles > before.compiles;
    if (s) return s;
  }
  return SPX_OK;
}

/* ---- Tiered JIT --------------------------------------------------------------------------------
 * A specialized kernel the caches lack costs an NVRTC compile (tens to hundreds of ms). A tiered
 * dmatrix does not wait for it: it binds what the caches hold (the format's generic kernels, which
 * read the shape at run time), compiles the specialized kernels into the JIT cache on a background
 * thread, and the first SpMV after the compile ended binds them (a memory-cache hit and a module
 * load) and runs them from then on. Launches keep their order on the stream, so the switch is
 * invisible but for rounding: the generic kernel may sum a row in another order. */
typedef struct spx__kernel_job {
  char arch[32];
  int nlaunch;
  int also_generic;   /* then the generic kernels, when missing: the next new shape starts on them */
  spx_dtype dtype;
  spx_kernel_launch launch[3];
} spx__kernel_job;

static spx_status spx__kernel_job_run(spx__job *j, void *v) {
  const spx__kernel_job *t = (const spx__kernel_job *)v;
  int i;
  for (i = 0; i < t->nlaunch; i++) {
    const char *defs[SPX_KERNEL_DEFINES_MAX + 2];
    int n = spx__kdefines(t->dtype, &t->launch[i], 0, defs);
    spx_status s = spx_jit_compile_only(t->launch[i].template_name, n, defs, t->arch, NULL);
    if (s) return s;
  }
  spx__job_publish(j, SPX_OK); /* the owner may switch now; the rest is for matrices to come */
  for (i = 0; i < t->nlaunch && t->also_generic; i++) { /* errors stay here */
    const char *defs[SPX_KERNEL_DEFINES_MAX + 2];
    int n = spx__kdefines(t->dtype, &t->launch[i], 1, defs);
    if (spx_jit_compile_only(t->launch[i].template_name, n, defs, t->arch, NULL)) spx_clear_error();
  }
  return SPX_OK;
}

/* Binds the kernels of d's plan the caches hold without a compile (generic: the shape-free ones);
 * *all = 1 when every launch got one (d->fn set), else d->fn is left untouched. */
static spx_status spx__dmatrix_bind_cached(spx_dmatrix *d, int generic, int *all) {
  void *fn[3] = {NULL, NULL, NULL};
  int i;
  *all = 0;
  for (i = 0; i < d->plan.nlaunch; i++) {
    const char *defs[SPX_KERNEL_DEFINES_MAX + 2];
    const spx_kernel_launch *l = &d->plan.launch[i];
    int n = spx__kdefines(d->dtype, l, generic, defs);
    double t0 = spx__now();
    spx_status s = spx_jit_kernel_cached(d->ctx, l->template_name, l->kernel, n, defs, &fn[i]);
    d->jit_ms += 1e3 * (spx__now() - t0);
    if (s) return s;
    if (!fn[i]) return SPX_OK;
  }
  for (i = 0; i < d->plan.nlaunch; i++) d->fn[i] = fn[i];
  *all = 1;
  return SPX_OK;
}

static void spx__dmatrix_describe(spx_dmatrix *d) {
  snprintf(d->describe, sizeof d->describe, "%s%s", d->plan.summary,
           d->tier.state == SPX__TIER_STANDIN ? " (generic while the specialized kernel compiles)"
           : d->tier.state == SPX__TIER_NONE  ? " (compiling)"
           : d->generic                 ? " (generic)"
                                        : "");
}

/* The tiered start: the specialized kernels if cached; else the generic ones if cached (and
 * allowed: tiered 1), or none, with the specialized compile started on a background thread.
 * *done = 0 when the caller is to bind kernels the plain way. */
static spx_status spx__dmatrix_tier_start(spx_dmatrix *d, int tiered, int *done) {
  spx__kernel_job *t;
  spx_status s;
  int all;
  *done = 0;
  if ((s = spx__dmatrix_bind_cached(d, 0, &all)) == SPX_NVRTC) { /* failed before: the plain fallback */
    spx_clear_error();
    return SPX_OK;
  }
  if (s) return s;
  if (all) { *done = 1; return SPX_OK; }
  all = 0;
  if (tiered == 1 && (s = spx__dmatrix_bind_cached(d, 1, &all))) return s;
  if (!(t = (spx__kernel_job *)spx__calloc(1, sizeof *t))) return SPX_OUT_OF_MEMORY;
  t->also_generic = tiered == 1;
  if ((s = spx__jit_device_arch(d->ctx->info.cc_major, d->ctx->info.cc_minor, t->arch))) { SPX_FREE(t); return s; }
  t->nlaunch = d->plan.nlaunch;
  t->dtype = d->dtype;
  memcpy(t->launch, d->plan.launch, sizeof t->launch);
  if (!(d->tier.job = spx__job_start(spx__kernel_job_run, t))) return SPX_OUT_OF_MEMORY;
  d->tier.state = all ? SPX__TIER_STANDIN : SPX__TIER_NONE;
  d->generic = all;
  d->compiled = 1;
  *done = 1;
  return SPX_OK;
}

/* The tier switch's bind: the specialized kernels (from the memory cache the job filled), or the
 * generic ones where the compile failed and none ran. */
static spx_status spx__dmatrix_tier_bind(void *v, int final) {
  spx_dmatrix *d = (spx_dmatrix *)v;
  spx_status s;
  int all;
  if (!final) {
    d->generic = 1;
    return spx__dmatrix_jit(d, 1);
  }
  if (!(s = spx__dmatrix_bind_cached(d, 0, &all)) && !all) s = spx__dmatrix_jit(d, 0); /* evicted meanwhile */
  if (!s) d->generic = 0;
  return s;
}

/* Moves a tiered dmatrix to its specialized kernels once their compile ended (wait: until it has). */
static spx_status spx__dmatrix_settle(spx_dmatrix *d, int wait) {
  spx_status s;
  if (d->tier.state == SPX__TIER_FINAL) return SPX_OK;
  s = spx__tier_settle(&d->tier, wait, spx__dmatrix_tier_bind, d, spx_format_name(d->format));
  if (d->tier.state == SPX__TIER_FINAL) spx__dmatrix_describe(d);
  return s;
}

int spx_dmatrix_compiling(const spx_dmatrix *d) { return d && d->tier.state != SPX__TIER_FINAL; }

/* 1 when an SpMV can start at once (no compile to wait for). */
int spx__dmatrix_runnable(spx_dmatrix *d) { return spx__tier_runnable(&d->tier); }

spx_status spx_dmatrix_forget_kernels(const spx_dmatrix *d, int which) {
  char arch[32];
  int i, g;
  spx_status s;
  if (!d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dmatrix_forget_kernels: NULL matrix");
  if ((s = spx__jit_device_arch(d->ctx->info.cc_major, d->ctx->info.cc_minor, arch))) return s;
  for (i = 0; i < d->plan.nlaunch; i++)
    for (g = 0; g < 2; g++) {
      const char *defs[SPX_KERNEL_DEFINES_MAX + 2];
      if (!(which & (g ? SPX_KERNELS_GENERIC : SPX_KERNELS_SPECIALIZED))) continue;
      int n = spx__kdefines(d->dtype, &d->plan.launch[i], g, defs);
      if ((s = spx_jit_forget(d->plan.launch[i].template_name, n, defs, arch))) return s;
    }
  return SPX_OK;
}

spx_status spx_dmatrix_wait(spx_dmatrix *d) {
  if (!d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dmatrix_wait: NULL matrix");
  return spx__dmatrix_settle(d, 1);
}

/* The launches a dmatrix of m binds under options o: the format's kernel spec, then the options'
 * defines (what the build runs and what spx__csr_kernels_where asks the JIT cache about). */
static spx_status spx__dmatrix_kernel_plan(const spx_context *ctx, const spx_fmt *m, spx_kernel_spec_fn spec,
                                           const spx_dmatrix_options *o, spx_kernel_plan *plan) {
  spx_status s;
  int i;
  if ((s = spec(m, o, &ctx->info, plan))) return s;
  for (i = 0; o->plain_loads > 0 && i < plan->nlaunch; i++) spx__kdef(&plan->launch[i], "SPX_PLAIN_LOADS=1");
  return SPX_OK;
}

/* Builds a dmatrix for m: uploads its arrays, or, with `given` non-NULL, uses those device arrays
 * (caller-owned: never freed here). */
static spx_status spx__dmatrix_build(spx_context *ctx, const spx_fmt *m, const spx_dmatrix_options *opt,
                                     const spx_devptr *given, spx_dmatrix **out) {
  spx_dmatrix_options o;
  spx_format_array arr[SPX_KERNEL_ARGS_MAX];
  spx_dmatrix *d;
  spx_kernel_spec_fn spec;
  spx_status s;
  int i, n;
  const int tr = spx__plan_tracing();
  double tm = spx__now();
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dmatrix_create: out is NULL");
  *out = NULL;
  if (!ctx || !m) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dmatrix_create: NULL argument");
  if (ctx->backend != SPX_BACKEND_CUDA)
    return spx__fail(SPX_NOT_AVAILABLE, "spx_dmatrix_create: the context uses the host backend (no GPU)");
  if (!(spec = spx__kernel_spec(m->format)))
    return spx__fail(SPX_UNSUPPORTED, "format '%s' has no GPU kernel", spx_format_name(m->format));
  if (opt) o = *opt;
  else memset(&o, 0, sizeof o);
  if (!(d = (spx_dmatrix *)spx__calloc(1, sizeof *d))) return SPX_OUT_OF_MEMORY;
  d->ctx = ctx; d->format = m->format; d->dtype = m->dtype; d->nrows = m->nrows; d->ncols = m->ncols;
  if ((s = spx__dmatrix_kernel_plan(ctx, m, spec, &o, &d->plan))) goto fail;
  spx__conv_mark(tr, "dmatrix", "kernel plan", &tm);
  n = spx_fmt_arrays(m, arr, SPX_KERNEL_ARGS_MAX);
  if (n > SPX_KERNEL_ARGS_MAX - 4) { s = spx__fail(SPX_INTERNAL, "format '%s' has too many arrays", spx_format_name(m->format)); goto fail; }
  /* Upload every array the descriptor lists; empty ones stay 0 (kernels never read them). */
  for (i = 0; i < n && !given; i++) {
    size_t bytes = (size_t)arr[i].count * arr[i].elem_size;
    d->narrays = i + 1;
    if (!bytes) continue;
    if ((s = spx_device_alloc(ctx, bytes, &d->arrays[i]))) {
      spx__wrap(s, "uploading %s (%s, %.1f MiB)", spx_format_name(m->format), arr[i].name, (double)bytes / 1048576.0);
      goto fail;
    }
    if ((s = spx_device_upload(ctx, d->arrays[i], arr[i].host, bytes))) goto fail;
  }
  for (i = 0; i < n; i++) d->bytes += (int64_t)((size_t)arr[i].count * arr[i].elem_size);
  spx__conv_mark(tr, "dmatrix", given ? "wrap" : "upload", &tm);
  {
    const void *ptrs[SPX_KERNEL_ARGS_MAX];
    for (i = 0; i < n; i++) ptrs[i] = (const void *)(uintptr_t)(given ? given[i] : d->arrays[i]);
    if ((s = spx_fmt_kernel_args(m, ptrs, &d->args))) goto fail;
  }
  d->generic = o.generic;
  if (o.tiered && !o.generic) {
    int done;
    if ((s = spx__dmatrix_tier_start(d, o.tiered, &done))) goto fail;
    spx__conv_mark(tr, "dmatrix", "tier start", &tm);
    if (done) {
      spx__dmatrix_describe(d);
      *out = d;
      return SPX_OK;
    }
  }
  if ((s = spx__dmatrix_jit(d, o.generic)) == SPX_NVRTC && !o.generic) {
    /* The specialized kernel did not compile (the log is in the message): the generic one reads
     * the shape at run time, slower but correct. */
    spx__warn("%s; falling back to the generic %s kernel", spx_last_error(), spx_format_name(m->format));
    d->generic = 1;
    s = spx__dmatrix_jit(d, 1);
  }
  if (s) goto fail;
  spx__conv_mark(tr, "dmatrix", "kernels", &tm);
  spx__dmatrix_describe(d);
  *out = d;
  return SPX_OK;
fail:
  spx_dmatrix_destroy(d);
  return s;
}

spx_status spx_dmatrix_create(spx_context *ctx, const spx_fmt *m, const spx_dmatrix_options *opt,
                              spx_dmatrix **out) {
  return spx__dmatrix_build(ctx, m, opt, NULL, out);
}


/* ---- CSR -> SELL / SELL16 on the device (templates/convert.cu) -----------------------------------
 * The host converter's result, array for array, at device bandwidth: the CSR goes up once (as it
 * would for cuSPARSE), widths and the SELL16 bases come from kernels, the host scans the widths
 * (one int per slice each way) and a last kernel writes the slots. */
#define SPX__CONV_SIGMA_MAX 4096 /* convert.cu's SPX_SIGMA_MAX: one window in shared memory */

typedef struct spx__conv {
  spx_context *ctx;
  void *fn[4]; /* sort, widths, base, fill */
} spx__conv;

/* grid blocks of 256 threads on the context's stream (none when grid < 1). */
spx_status spx__launch256(spx_context *ctx, void *fn, int64_t grid, void **params, const char *name) {
  const spx__cuda_api *cu = spx__cuda();
  spx_status s;
  if (grid < 1) return SPX_OK;
  if (grid > 2147483647) return spx__fail(SPX_RANGE, "%s: %lld blocks", name, (long long)grid);
  if ((s = spx__ctx_push(ctx))) return s;
  s = spx__cu_check(cu->cuLaunchKernel((spx__CUfunction)fn, (unsigned)grid, 1, 1, 256, 1, 1, 0, ctx->stream, params, NULL), name);
  spx__ctx_pop(ctx);
  return s;
}

static spx_status spx__conv_launch(spx__conv *v, int k, const char *name, int64_t items, int64_t per_block,
                                   void **params) {
  return spx__launch256(v->ctx, v->fn[k], (items + per_block - 1) / per_block, params, name);
}

/* Slice widths (through perm when given) downloaded into w[nsl]. */
static spx_status spx__conv_widths(spx__conv *v, long long n, int c, long long nsl, spx_devptr rp, spx_devptr perm,
                                   spx_devptr dw, int32_t *w) {
  void *pr[6] = {&n, &c, &nsl, &rp, &perm, &dw};
  spx_status s = spx__conv_launch(v, 1, "spx_sell_widths", nsl, 256, pr);
  return s ? s : spx_device_download(v->ctx, w, dw, (size_t)nsl * sizeof *w);
}

static spx_status spx__conv_sort(spx__conv *v, long long n, int sigma, spx_devptr rp, spx_devptr perm) {
  void *pr[4] = {&n, &sigma, &rp, &perm};
  return spx__conv_launch(v, 0, "spx_sell_sort", (n + sigma - 1) / sigma, 1, pr);
}

static int64_t spx__conv_slots(const int32_t *w, int64_t nsl, int64_t c) {
  int64_t i, t = 0;
  for (i = 0; i < nsl; i++) t += (int64_t)w[i] * c;
  return t;
}

/* ---- What the device converters share -----------------------------------------------------------
 * Each takes a's arrays on the device: `staged` (the plan's spx__dcsr_stage, values uploaded by
 * spx__dcsr_values: no second upload) or, with staged NULL, an upload of its own. Each returns
 * SPX_OK with *out NULL where it has no path for the parameters (the caller converts on the host,
 * which also reports bad parameters). */
typedef struct spx__conv_in {
  spx_devptr rp, ci, va; /* 64-bit row_ptr, col_idx, values */
  int owned;             /* uploaded here: freed by spx__conv_in_free */
  spx__dcsr *staged;     /* the staged arrays, whose values may still be going up */
} spx__conv_in;

/* The values are on the device once this returns SPX_OK (their pooled upload, if any, joined). */
spx_status spx__dcsr_values_wait(spx__dcsr *d) {
  spx__h2d_async *a = d->va_up;
  d->va_up = NULL;
  return spx__h2d_end(a);
}

/* Before the first kernel that reads in->va: the staged values' upload done. */
static spx_status spx__conv_in_values(spx__conv_in *in) {
  return in->staged ? spx__dcsr_values_wait(in->staged) : SPX_OK;
}

static void spx__conv_in_free(spx_context *ctx, spx__conv_in *in) {
  if (in->owned) { spx_device_free(ctx, in->rp); spx_device_free(ctx, in->ci); spx_device_free(ctx, in->va); }
  memset(in, 0, sizeof *in);
}

static spx_status spx__conv_in_get(spx_context *ctx, const spx_csr *a, spx__dcsr *staged, spx__conv_in *in) {
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  spx_status s;
  memset(in, 0, sizeof *in);
  if (staged) {
    if (!staged->has_values || staged->nrows != a->nrows || staged->nnz != a->nnz || staged->dtype != a->dtype)
      return spx__fail(SPX_INTERNAL, "device conversion: the staged CSR has no values or is another matrix's");
    in->rp = staged->rp; in->ci = staged->ci; in->va = staged->va; in->staged = staged;
    return SPX_OK;
  }
  in->owned = 1;
  if ((s = spx_device_alloc(ctx, (size_t)(a->nrows + 1) * 8, &in->rp)) ||
      (s = spx_device_alloc(ctx, (size_t)a->nnz * 4 + 4, &in->ci)) ||
      (s = spx_device_alloc(ctx, (size_t)a->nnz * vb + vb, &in->va)) ||
      (s = spx_device_upload(ctx, in->rp, a->row_ptr, (size_t)(a->nrows + 1) * 8)) ||
      (s = spx_device_upload(ctx, in->ci, a->col_idx, (size_t)a->nnz * 4)) ||
      (s = spx_device_upload(ctx, in->va, a->val.p, (size_t)a->nnz * vb))) {
    spx__conv_in_free(ctx, in);
    return s;
  }
  return SPX_OK;
}

/* Parameter j of format f as its host converter takes it (SPX_AUTO: the descriptor's default, which
 * may be SPX_AUTO itself); 0 when out of range (the host path reports it). */
static int spx__conv_param(spx_format f, const spx_format_params *prm, int j, int64_t *v) {
  const spx_format_param_info *pi = &spx_format_info(f)->layout->params[j];
  memcpy(v, (const char *)prm + spx__param_off((int)f, j), sizeof *v);
  if (*v == SPX_AUTO) *v = pi->def;
  return *v == SPX_AUTO || (*v >= pi->lo && *v <= pi->hi);
}

/* Lanes of a merging group for k rows: the power of two >= k, at most a warp (convert.cu). */
static int spx__conv_group(int64_t k) {
  int g = 1;
  while (g < k && g < 32) g *= 2;
  return g;
}

/* Blocks of 256 threads for `items` groups of g lanes (32 / g a warp, 8 warps a block). */
static int64_t spx__conv_blocks(int64_t items, int g) {
  int64_t per_warp = 32 / g, warps = (items + per_warp - 1) / per_warp;
  return (warps + 7) / 8;
}

/* The dmatrix of the shell m (scalars, and any host array its kernel spec reads) on the device
 * arrays given[0..n), which it adopts (freed with it); on failure they stay the caller's. */
static spx_status spx__dmatrix_adopt(spx_context *ctx, const spx_fmt *m, const spx_dmatrix_options *opt,
                                     const spx_devptr *given, int n, spx_dmatrix **out) {
  spx_status s = spx__dmatrix_build(ctx, m, opt, given, out);
  int i;
  if (s) return s;
  for (i = 0; i < n; i++) (*out)->arrays[i] = given[i];
  (*out)->narrays = n;
  return SPX_OK;
}

/* staged (may be NULL): a's arrays already on the device (spx__dcsr_stage), used instead of an upload. */
static spx_status spx__dmatrix_sell_device(spx_context *ctx, const spx_csr *a, spx_format f,
                                           const spx_format_params *prm, const spx_dmatrix_options *opt,
                                           spx__dcsr *staged, spx_dmatrix **out) {
  const int is16 = f == SPX_FORMAT_SELL16;
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  const char *defs[1] = {a->dtype == SPX_FLOAT ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double"};
  static const char *const names[4] = {"spx_sell_sort", "spx_sell_widths", "spx_sell16_base", "spx_sell_fill"};
  long long n = a->nrows, ncols = a->ncols, nsl, q;
  int64_t c64 = is16 ? prm->sell16_c : prm->sell_c, sg64 = is16 ? prm->sell16_sigma : prm->sell_sigma, slots;
  int c, sigma, k;
  spx__conv v;
  spx__conv_in in;
  spx_devptr rp, ci, va, dw = 0, perm = 0, sp = 0, cb = 0, col = 0, val = 0, bad = 0;
  int32_t *w = NULL, *w2 = NULL, *hsp = NULL;
  const int tr = spx__plan_tracing();
  const char *cn = is16 ? "sell16" : "sell";
  double tm = spx__now();
  spx_status s;
  *out = NULL;
  if (c64 == SPX_AUTO) c64 = 32;
  if (sg64 == SPX_AUTO && !is16) sg64 = 256;
  if (c64 < 1 || c64 > 4096 || (sg64 != SPX_AUTO && (sg64 < 1 || sg64 > SPX__CONV_SIGMA_MAX)) || a->nrows < 1)
    return SPX_OK; /* the host converter checks and handles these */
  c = (int)c64;
  sigma = sg64 == SPX_AUTO ? -1 : (int)sg64;
  nsl = (n + c - 1) / c;
  memset(&v, 0, sizeof v);
  memset(&in, 0, sizeof in);
  v.ctx = ctx;
  for (k = 0; k < 4; k++)
    if ((s = spx_jit_kernel(ctx, "convert", names[k], 1, defs, &v.fn[k]))) return s;
  s = SPX_OUT_OF_MEMORY;
  if (!(w = (int32_t *)spx__alloc((size_t)nsl + 1, sizeof *w)) || !(w2 = (int32_t *)spx__alloc((size_t)nsl + 1, sizeof *w2)) ||
      !(hsp = (int32_t *)spx__alloc((size_t)nsl + 1, sizeof *hsp)))
    goto done;
  spx__conv_mark(tr, cn, "kernels", &tm);
  if ((s = spx__conv_in_get(ctx, a, staged, &in))) goto done;
  rp = in.rp; ci = in.ci; va = in.va;
  if ((s = spx_device_alloc(ctx, (size_t)nsl * 4 + 4, &dw))) goto done;
  if (sigma != 1 && (s = spx_device_alloc(ctx, (size_t)n * 4, &perm))) goto done;
  if (sigma == -1) { /* SELL16's auto rule: sort in windows of 256 only when it saves more than perm costs */
    int64_t s1, s256, slot = 2 + (int64_t)vb;
    if ((s = spx__conv_widths(&v, n, c, nsl, rp, 0, dw, w2)) || (s = spx__conv_sort(&v, n, 256, rp, perm)) ||
        (s = spx__conv_widths(&v, n, c, nsl, rp, perm, dw, w)))
      goto done;
    s1 = spx__conv_slots(w2, nsl, c);
    s256 = spx__conv_slots(w, nsl, c);
    sigma = n > 1 && s256 * slot + 4 * n < s1 * slot ? 256 : 1;
    if (sigma == 1) {
      memcpy(w, w2, (size_t)nsl * sizeof *w);
      spx_device_free(ctx, perm);
      perm = 0;
    }
  } else if (sigma > 1) {
    if ((s = spx__conv_sort(&v, n, sigma, rp, perm)) || (s = spx__conv_widths(&v, n, c, nsl, rp, perm, dw, w))) goto done;
  } else if ((s = spx__conv_widths(&v, n, c, nsl, rp, 0, dw, w))) {
    goto done;
  }
  spx__conv_mark(tr, cn, "widths", &tm);
  slots = spx__conv_slots(w, nsl, c);
  if (slots > INT32_MAX) {
    s = spx__fail(SPX_RANGE, "%s: %lld slots exceed the 32-bit offsets", is16 ? "sell16" : "sell", (long long)slots);
    goto done;
  }
  hsp[0] = 0;
  for (q = 0; q < nsl; q++) hsp[q + 1] = hsp[q] + w[q] * c;
  if ((s = spx_device_alloc(ctx, (size_t)(nsl + 1) * 4, &sp)) || (s = spx_device_upload(ctx, sp, hsp, (size_t)(nsl + 1) * 4)))
    goto done;
  if (is16) {
    unsigned long long b = ~0ull;
    void *pr[10] = {&n, &ncols, &c, &nsl, &rp, &ci, &perm, &sp, &cb, &bad};
    if ((s = spx_device_alloc(ctx, (size_t)nsl * 4, &cb)) || (s = spx_device_alloc(ctx, 8, &bad)) ||
        (s = spx_device_upload(ctx, bad, &b, 8)) || (s = spx__conv_launch(&v, 2, names[2], nsl, 256, pr)) ||
        (s = spx_device_download(ctx, &b, bad, 8)))
      goto done;
    if (b != ~0ull) {
      s = spx__fail(SPX_UNSUPPORTED, "sell16: slice %llu spans more than the 65536 columns a 16-bit offset reaches "
                    "(use sell, or reorder the matrix to a smaller bandwidth)", b);
      goto done;
    }
  }
  spx__conv_mark(tr, cn, "scan, base", &tm);
  if ((s = spx_device_alloc(ctx, (size_t)slots * (is16 ? 2 : 4) + 4, &col)) ||
      (s = spx_device_alloc(ctx, (size_t)slots * vb + vb, &val)))
    goto done;
  spx__conv_mark(tr, cn, "alloc", &tm);
  {
    spx_devptr c32 = is16 ? 0 : col, c16 = is16 ? col : 0;
    void *pr[13] = {&n, &ncols, &c, &nsl, &rp, &ci, &va, &perm, &sp, &cb, &c32, &c16, &val};
    if ((s = spx__conv_in_values(&in))) goto done;
    spx__conv_mark(tr, cn, "values wait", &tm);
    if ((s = spx__conv_launch(&v, 3, names[3], nsl * c, 256, pr))) goto done;
  }
  { /* the dmatrix: a shell with the scalars (and the host widths the kernel spec reads) adopts the arrays */
    spx_fmt m;
    spx_fmt_sell e;
    spx_fmt_sell16 e16;
    spx_devptr given[5];
    int ng = 0;
    memset(&m, 0, sizeof m); memset(&e, 0, sizeof e); memset(&e16, 0, sizeof e16);
    m.format = f; m.dtype = a->dtype; m.nrows = n; m.ncols = ncols; m.nnz = a->nnz; m.vt = spx_format_info(f);
    if (is16) {
      e16.dtype = a->dtype; e16.nrows = n; e16.ncols = ncols; e16.nnz = a->nnz; e16.c = c; e16.sigma = sigma;
      e16.nslices = nsl; e16.nslots = slots; e16.slice_ptr = hsp;
      m.impl = &e16;
      given[ng++] = perm; given[ng++] = sp; given[ng++] = cb; given[ng++] = col; given[ng++] = val;
    } else {
      e.dtype = a->dtype; e.nrows = n; e.ncols = ncols; e.nnz = a->nnz; e.c = c; e.sigma = sigma;
      e.nslices = nsl; e.nslots = slots; e.slice_ptr = hsp;
      m.impl = &e;
      given[ng++] = perm; given[ng++] = sp; given[ng++] = col; given[ng++] = val;
    }
    if ((s = spx__dmatrix_adopt(ctx, &m, opt, given, ng, out))) goto done;
    perm = sp = cb = col = val = 0;
    spx__conv_mark(tr, cn, "fill, spmv", &tm);
  }
done:
  spx__conv_in_free(ctx, &in);
  spx_device_free(ctx, dw);
  spx_device_free(ctx, perm); spx_device_free(ctx, sp); spx_device_free(ctx, cb); spx_device_free(ctx, col);
  spx_device_free(ctx, val); spx_device_free(ctx, bad);
  SPX_FREE(w); SPX_FREE(w2); SPX_FREE(hsp);
  return s;
}

/* ---- CSR -> SDIA on the device (convert.cu: spx_sdia_count, spx_sdia_fill) ------------------------
 * The host converter's arrays: the counts come down (nslices ints: the fill limit, the scan and the
 * kernel spec's widest slice all read them on the host), slice_ptr goes up, a second pass writes. */
static spx_status spx__dmatrix_sdia_device(spx_context *ctx, const spx_csr *a, spx_format f,
                                           const spx_format_params *prm, const spx_dmatrix_options *opt,
                                           spx__dcsr *staged, spx_dmatrix **out) {
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  char rpl[32];
  const char *defs[2] = {a->dtype == SPX_FLOAT ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double", rpl};
  long long n = a->nrows, nsl, cap;
  int64_t c64, mf, limit, real = 0, total = 0, sl;
  int c, g, rows_per_lane;
  void *fcount = NULL, *ffill = NULL;
  spx__conv_in in;
  spx_devptr dcnt = 0, dsp = 0, doff = 0, dval = 0;
  int32_t *hsp = NULL;
  spx_status s;
  (void)f; /* SDIA's converter alone (the registry's converters share one signature) */
  *out = NULL;
  memset(&in, 0, sizeof in);
  if (!spx__conv_param(SPX_FORMAT_SDIA, prm, 0, &c64) || !spx__conv_param(SPX_FORMAT_SDIA, prm, 1, &mf) ||
      c64 == SPX_AUTO || mf == SPX_AUTO || n < 1 || n > INT32_MAX || a->ncols > INT32_MAX || a->nnz > INT32_MAX)
    return SPX_OK;
  c = (int)c64;
  g = spx__conv_group(c);
  rows_per_lane = (c + g - 1) / g;
  snprintf(rpl, sizeof rpl, "SPX_RPL=%d", rows_per_lane); /* only past 32 rows: C <= 32 shares SELL's module */
  nsl = (n + c - 1) / c;
  limit = mf * a->nnz;
  cap = limit + 1; /* the host counts up to min(slice entries, limit + 1): the first never binds */
  if ((s = spx_jit_kernel(ctx, "convert", "spx_sdia_count", rows_per_lane > 1 ? 2 : 1, defs, &fcount)) ||
      (s = spx_jit_kernel(ctx, "convert", "spx_sdia_fill", rows_per_lane > 1 ? 2 : 1, defs, &ffill)))
    return s;
  if (!(hsp = (int32_t *)spx__alloc((size_t)nsl + 1, sizeof *hsp))) return SPX_OUT_OF_MEMORY;
  if ((s = spx__conv_in_get(ctx, a, staged, &in)) || (s = spx_device_alloc(ctx, (size_t)nsl * 4, &dcnt))) goto done;
  {
    void *pr[8] = {&n, &c, &g, &nsl, &cap, &in.rp, &in.ci, &dcnt};
    if ((s = spx__launch256(ctx, fcount, spx__conv_blocks(nsl, g), pr, "spx_sdia_count")) ||
        (s = spx_device_download(ctx, hsp + 1, dcnt, (size_t)nsl * 4)))
      goto done;
  }
  /* as spx__sdia_from_csr: the limit on the real rows' slots first, then the 32-bit check */
  hsp[0] = 0;
  for (sl = 0; sl < nsl; sl++) {
    real += (int64_t)hsp[sl + 1] * (SPX__MIN(n, (sl + 1) * c) - sl * c);
    total += hsp[sl + 1];
  }
  if (real > limit) {
    s = spx__fmt_wrap(spx__sdia_overfill(real, total > limit, a->nnz, mf), a, "sdia");
    goto done;
  }
  if ((s = spx__fits32(total, "sdia diagonals"))) {
    spx__fmt_wrap(s, a, "sdia");
    goto done;
  }
  for (sl = 0; sl < nsl; sl++) hsp[sl + 1] += hsp[sl];
  if ((s = spx_device_alloc(ctx, (size_t)(nsl + 1) * 4, &dsp)) ||
      (s = spx_device_upload(ctx, dsp, hsp, (size_t)(nsl + 1) * 4)) ||
      (s = spx_device_alloc(ctx, (size_t)total * 4 + 4, &doff)) ||
      (s = spx_device_alloc(ctx, (size_t)total * (size_t)c * vb + vb, &dval)))
    goto done;
  {
    void *pr[10] = {&n, &c, &g, &nsl, &in.rp, &in.ci, &in.va, &dsp, &doff, &dval};
    if ((s = spx__conv_in_values(&in)) || (s = spx__launch256(ctx, ffill, spx__conv_blocks(nsl, g), pr, "spx_sdia_fill")))
      goto done;
  }
  {
    spx_fmt m;
    spx_fmt_sdia e;
    const spx_devptr given[3] = {dsp, doff, dval};
    memset(&m, 0, sizeof m);
    memset(&e, 0, sizeof e);
    e.dtype = a->dtype; e.nrows = n; e.ncols = a->ncols; e.nnz = a->nnz; e.c = c; e.nslices = nsl;
    e.ndiags = total; e.slice_ptr = hsp; /* the kernel spec's widest slice */
    m.format = SPX_FORMAT_SDIA; m.dtype = a->dtype; m.nrows = n; m.ncols = a->ncols; m.nnz = a->nnz;
    m.vt = spx_format_info(SPX_FORMAT_SDIA); m.impl = &e;
    if ((s = spx__dmatrix_adopt(ctx, &m, opt, given, 3, out))) goto done;
    dsp = doff = dval = 0;
  }
done:
  spx__conv_in_free(ctx, &in);
  spx_device_free(ctx, dcnt); spx_device_free(ctx, dsp); spx_device_free(ctx, doff); spx_device_free(ctx, dval);
  SPX_FREE(hsp);
  return s;
}

/* ---- CSR -> BSR on the device (convert.cu: spx_bsr_count, spx_scan_*, spx_bsr_fill) -----------------
 * The host converter's arrays for r <= 32 (a merging group is at most a warp): auto counts the 8
 * square sizes (totals only) and keeps the least bytes, ties to the smaller, as the host does; then
 * the chosen size's counts go into row_ptr, a device scan makes them pointers (only the total comes
 * down: nbrows can be millions), and a second pass writes block columns and values. */
static spx_status spx__dmatrix_bsr_device(spx_context *ctx, const spx_csr *a, spx_format f,
                                          const spx_format_params *prm, const spx_dmatrix_options *opt,
                                          spx__dcsr *staged, spx_dmatrix **out) {
  static const char *const names[5] = {"spx_bsr_count", "spx_bsr_fill", "spx_scan_sums", "spx_scan_tiles", "spx_scan_apply"};
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  const char *defs[1] = {a->dtype == SPX_FLOAT ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double"};
  const spx_devptr nul = 0;
  long long n = a->nrows, ncols = a->ncols, nbr, ntiles;
  int64_t r64, c64, b, best = -1;
  unsigned long long acc[16];
  int r, c, g, k;
  void *fn[5];
  spx__conv_in in;
  spx_devptr dacc = 0, drp = 0, dsums = 0, dtot = 0, dcol = 0, dval = 0;
  spx_status s;
  (void)f; /* BSR's converter alone (the registry's converters share one signature) */
  *out = NULL;
  memset(&in, 0, sizeof in);
  if (!spx__conv_param(SPX_FORMAT_BSR, prm, 0, &r64) || !spx__conv_param(SPX_FORMAT_BSR, prm, 1, &c64) || n < 1 ||
      n > INT32_MAX || ncols > INT32_MAX || a->nnz > INT32_MAX)
    return SPX_OK;
  if (r64 == SPX_AUTO && c64 != SPX_AUTO) r64 = c64;
  else if (c64 == SPX_AUTO && r64 != SPX_AUTO) c64 = r64;
  if (r64 > 32) return SPX_OK;
  for (k = 0; k < 5; k++)
    if ((s = spx_jit_kernel(ctx, "convert", names[k], 1, defs, &fn[k]))) return s;
  if ((s = spx__conv_in_get(ctx, a, staged, &in)) || (s = spx_device_alloc(ctx, sizeof acc, &dacc)) ||
      (s = spx_device_memset(ctx, dacc, 0, sizeof acc)))
    goto done;
  if (r64 == SPX_AUTO) { /* the square size of least bytes, 1..8 */
    for (b = 1; b <= 8; b++) {
      long long nb_ = (n + b - 1) / b;
      int bb = (int)b, gb = spx__conv_group(b);
      spx_devptr at = dacc + (spx_devptr)(16 * (b - 1));
      void *pr[10] = {&n, &ncols, &bb, &bb, &gb, &nb_, &in.rp, &in.ci, (void *)&nul, &at};
      if ((s = spx__launch256(ctx, fn[0], spx__conv_blocks(nb_, gb), pr, names[0]))) goto done;
    }
    if ((s = spx_device_download(ctx, acc, dacc, sizeof acc))) goto done;
    for (b = 1; b <= 8; b++) {
      int64_t bytes = spx__bsr_bytes(a, b, b, (int64_t)acc[2 * (b - 1)]);
      if (acc[2 * (b - 1) + 1]) { s = spx__fmt_wrap(spx__bsr_unsorted(), a, "bsr"); goto done; }
      if (best < 0 || bytes < best) { best = bytes; r64 = c64 = b; }
    }
    if ((s = spx_device_memset(ctx, dacc, 0, 16))) goto done;
  }
  r = (int)r64; c = (int)c64; g = spx__conv_group(r);
  nbr = (n + r - 1) / r;
  ntiles = (nbr + 2047) / 2048; /* convert.cu: 256 threads x SPX_SCAN_ITEMS counts a tile */
  if ((s = spx_device_alloc(ctx, (size_t)(nbr + 1) * 4, &drp)) || (s = spx_device_alloc(ctx, (size_t)ntiles * 8, &dsums)) ||
      (s = spx_device_alloc(ctx, 8, &dtot)))
    goto done;
  {
    void *pr[10] = {&n, &ncols, &r, &c, &g, &nbr, &in.rp, &in.ci, &drp, &dacc};
    if ((s = spx__launch256(ctx, fn[0], spx__conv_blocks(nbr, g), pr, names[0])) ||
        (s = spx_device_download(ctx, acc, dacc, 16)))
      goto done;
  }
  if (acc[1]) { s = spx__fmt_wrap(spx__bsr_unsorted(), a, "bsr"); goto done; }
  if ((s = spx__fits32((int64_t)acc[0], "bsr blocks"))) { spx__fmt_wrap(s, a, "bsr"); goto done; }
  {
    void *ps[3] = {&nbr, &drp, &dsums}, *pt[3] = {&ntiles, &dsums, &dtot}, *pa[3] = {&nbr, &drp, &dsums};
    if ((s = spx__launch256(ctx, fn[2], ntiles, ps, names[2])) || (s = spx__launch256(ctx, fn[3], 1, pt, names[3])) ||
        (s = spx__launch256(ctx, fn[4], ntiles, pa, names[4])))
      goto done;
  }
  if ((s = spx_device_alloc(ctx, (size_t)acc[0] * 4 + 4, &dcol)) ||
      (s = spx_device_alloc(ctx, (size_t)acc[0] * (size_t)r * (size_t)c * vb + vb, &dval)))
    goto done;
  {
    void *pr[12] = {&n, &ncols, &r, &c, &g, &nbr, &in.rp, &in.ci, &in.va, &drp, &dcol, &dval};
    if ((s = spx__conv_in_values(&in)) || (s = spx__launch256(ctx, fn[1], spx__conv_blocks(nbr, g), pr, names[1]))) goto done;
  }
  {
    spx_fmt m;
    spx_fmt_bsr e;
    const spx_devptr given[3] = {drp, dcol, dval};
    memset(&m, 0, sizeof m);
    memset(&e, 0, sizeof e);
    e.dtype = a->dtype; e.nrows = n; e.ncols = ncols; e.nnz = a->nnz; e.r = r; e.c = c;
    e.nbrows = nbr; e.nbcols = (ncols + c - 1) / c; e.nblocks = (int64_t)acc[0];
    m.format = SPX_FORMAT_BSR; m.dtype = a->dtype; m.nrows = n; m.ncols = ncols; m.nnz = a->nnz;
    m.vt = spx_format_info(SPX_FORMAT_BSR); m.impl = &e;
    if ((s = spx__dmatrix_adopt(ctx, &m, opt, given, 3, out))) goto done;
    drp = dcol = dval = 0;
  }
done:
  spx__conv_in_free(ctx, &in);
  spx_device_free(ctx, dacc); spx_device_free(ctx, drp); spx_device_free(ctx, dsums); spx_device_free(ctx, dtot);
  spx_device_free(ctx, dcol); spx_device_free(ctx, dval);
  return s;
}

/* ---- CSR -> ELL / ELL-R and JDS on the device (convert.cu: spx_rows_max, spx_ell_fill, spx_jds_*) ----
 * The host converter's arrays. Both start from the longest row (16 bytes down, which also say
 * whether the CSR is sound: if not, the host path reports it as it does). */
#define SPX__CONV_TILE 2048 /* convert.cu: SPX_JDS_TILE, and 256 threads x SPX_SCAN_ITEMS counts a scan tile */

/* acc[0] the longest row, acc[1] 1 for a bad CSR, from the kernel fn (spx_rows_max). The columns
 * are checked unless staged (staging checked them). The zeros go up on the stream: a memset would
 * synchronize the context, waiting for staged values still going up. */
static spx_status spx__conv_rows_max(spx_context *ctx, void *fn, const spx_csr *a, const spx__conv_in *in,
                                     spx_devptr dacc, unsigned long long acc[2]) {
  static const unsigned long long zero[2] = {0, 0};
  long long n = a->nrows, ncols = a->ncols, nnz = a->nnz;
  spx_devptr ci = in->staged ? 0 : in->ci;
  void *pr[6] = {&n, &ncols, &nnz, (void *)&in->rp, &ci, &dacc};
  spx_status s;
  acc[0] = acc[1] = 0;
  if ((s = spx_device_upload(ctx, dacc, zero, sizeof zero)) ||
      (s = spx__launch256(ctx, fn, SPX__MIN((SPX__MAX(n, nnz) + 255) / 256, 1024), pr, "spx_rows_max")))
    return s;
  return spx_device_download(ctx, acc, dacc, 2 * sizeof *acc);
}

/* x[0..n] = the pointers of the 32-bit counts at x[1..n] (convert.cu's scan; sums: a long long per
 * tile of SPX__CONV_TILE counts, total: one). */
static spx_status spx__conv_scan(spx_context *ctx, void *const fn[3], long long n, spx_devptr x, spx_devptr sums,
                                 spx_devptr total) {
  long long nt = (n + SPX__CONV_TILE - 1) / SPX__CONV_TILE;
  void *ps[3] = {&n, &x, &sums}, *pt[3] = {&nt, &sums, &total};
  spx_status s;
  if ((s = spx__launch256(ctx, fn[0], nt, ps, "spx_scan_sums")) || (s = spx__launch256(ctx, fn[1], nt > 0, pt, "spx_scan_tiles")))
    return s;
  return spx__launch256(ctx, fn[2], nt, ps, "spx_scan_apply");
}

/* ELL (ell_k: auto or at least the longest row, else the host's to refuse) and ELL-R. */
static spx_status spx__dmatrix_ell_device(spx_context *ctx, const spx_csr *a, spx_format f,
                                          const spx_format_params *prm, const spx_dmatrix_options *opt,
                                          spx__dcsr *staged, spx_dmatrix **out) {
  const int is_r = f == SPX_FORMAT_ELL_R;
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  const char *defs[1] = {a->dtype == SPX_FLOAT ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double"};
  long long n = a->nrows, ncols = a->ncols, slots;
  int64_t k64 = SPX_AUTO;
  unsigned long long acc[2];
  int k;
  void *fmax = NULL, *ffill = NULL;
  spx__conv_in in;
  spx_devptr dacc = 0, dcol = 0, dval = 0, drl = 0;
  spx_status s;
  *out = NULL;
  memset(&in, 0, sizeof in);
  /* no columns: padding has none to name (the host refuses k > 0 there, or makes empty arrays) */
  if ((!is_r && !spx__conv_param(SPX_FORMAT_ELL, prm, 0, &k64)) || n < 1 || ncols < 1 || n > INT32_MAX ||
      ncols > INT32_MAX || a->nnz > INT32_MAX)
    return SPX_OK;
  if ((s = spx_jit_kernel(ctx, "convert", "spx_rows_max", 1, defs, &fmax)) ||
      (s = spx_jit_kernel(ctx, "convert", "spx_ell_fill", 1, defs, &ffill)))
    return s;
  if ((s = spx__conv_in_get(ctx, a, staged, &in)) || (s = spx_device_alloc(ctx, sizeof acc, &dacc)) ||
      (s = spx__conv_rows_max(ctx, fmax, a, &in, dacc, acc)))
    goto done;
  if (acc[1] || (k64 != SPX_AUTO && k64 < (int64_t)acc[0])) goto done; /* the host's to report */
  k = k64 == SPX_AUTO ? (int)acc[0] : (int)k64;
  slots = n * k;
  if (slots > ((long long)1 << 58)) goto done; /* bytes past size_t: the host's allocation refuses it */
  if ((s = spx_device_alloc(ctx, (size_t)slots * 4 + 4, &dcol)) || (s = spx_device_alloc(ctx, (size_t)slots * vb + vb, &dval)) ||
      (is_r && (s = spx_device_alloc(ctx, (size_t)n * 4, &drl))))
    goto done;
  {
    void *pr[9] = {&n, &ncols, &k, &in.rp, &in.ci, &in.va, &dcol, &dval, &drl};
    if ((s = spx__conv_in_values(&in)) || (s = spx__launch256(ctx, ffill, (n + 255) / 256, pr, "spx_ell_fill"))) goto done;
  }
  { /* the dmatrix: a shell with the scalars adopts the arrays */
    spx_fmt m;
    spx_fmt_ell e;
    spx_fmt_ell_r er;
    const spx_devptr given[3] = {dcol, dval, drl};
    memset(&m, 0, sizeof m); memset(&e, 0, sizeof e); memset(&er, 0, sizeof er);
    m.format = f; m.dtype = a->dtype; m.nrows = n; m.ncols = ncols; m.nnz = a->nnz; m.vt = spx_format_info(f);
    e.dtype = er.dtype = a->dtype; e.nrows = er.nrows = n; e.ncols = er.ncols = ncols; e.nnz = er.nnz = a->nnz;
    e.k = er.k = k;
    m.impl = is_r ? (void *)&er : (void *)&e;
    if ((s = spx__dmatrix_adopt(ctx, &m, opt, given, is_r ? 3 : 2, out))) goto done;
    dcol = dval = drl = 0;
  }
done:
  spx__conv_in_free(ctx, &in);
  spx_device_free(ctx, dacc); spx_device_free(ctx, dcol); spx_device_free(ctx, dval); spx_device_free(ctx, drl);
  return s;
}

/* JDS: the stable counting sort (a pass per 8-bit digit of longest - length; perm and a second
 * array alternate, the last pass writing perm), the diagonals' lengths scanned into jd_ptr, the fill. */
static spx_status spx__dmatrix_jds_device(spx_context *ctx, const spx_csr *a, spx_format f,
                                          const spx_format_params *prm, const spx_dmatrix_options *opt,
                                          spx__dcsr *staged, spx_dmatrix **out) {
  static const char *const names[8] = {"spx_rows_max", "spx_jds_count", "spx_jds_scatter", "spx_jds_diags",
                                       "spx_jds_fill", "spx_scan_sums", "spx_scan_tiles", "spx_scan_apply"};
  static const int32_t zero32 = 0;
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  const char *defs[1] = {a->dtype == SPX_FLOAT ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double"};
  long long n = a->nrows, longest, ntiles, nh, njd;
  unsigned long long acc[2];
  int pass, npass, k;
  void *fn[8];
  spx__conv_in in;
  spx_devptr dacc = 0, dperm = 0, dtmp = 0, dhist = 0, dsums = 0, dtot = 0, djd = 0, dcol = 0, dval = 0;
  spx_status s;
  (void)f; (void)prm; /* JDS's converter alone, and JDS has no parameters */
  *out = NULL;
  memset(&in, 0, sizeof in);
  if (n < 1 || n > INT32_MAX || a->ncols > INT32_MAX || a->nnz > INT32_MAX) return SPX_OK;
  for (k = 0; k < 8; k++)
    if ((s = spx_jit_kernel(ctx, "convert", names[k], 1, defs, &fn[k]))) return s;
  if ((s = spx__conv_in_get(ctx, a, staged, &in)) || (s = spx_device_alloc(ctx, sizeof acc, &dacc)) ||
      (s = spx__conv_rows_max(ctx, fn[0], a, &in, dacc, acc)))
    goto done;
  if (acc[1]) goto done; /* the host's to report */
  longest = njd = (long long)acc[0];
  npass = 1 + (longest > 0xff) + (longest > 0xffff) + (longest > 0xffffff);
  ntiles = (n + SPX__CONV_TILE - 1) / SPX__CONV_TILE;
  nh = 256 * ntiles; /* counts, digit-major */
  if ((s = spx_device_alloc(ctx, (size_t)n * 4, &dperm)) || (npass > 1 && (s = spx_device_alloc(ctx, (size_t)n * 4, &dtmp))) ||
      (s = spx_device_alloc(ctx, (size_t)(nh + 1) * 4, &dhist)) ||
      (s = spx_device_alloc(ctx, (size_t)((SPX__MAX(nh, njd) + SPX__CONV_TILE - 1) / SPX__CONV_TILE) * 8, &dsums)) ||
      (s = spx_device_alloc(ctx, 8, &dtot)))
    goto done;
  for (pass = 0; pass < npass; pass++) {
    spx_devptr src = pass == 0 ? 0 : (npass - pass) % 2 ? dtmp : dperm, dst = (npass - 1 - pass) % 2 ? dtmp : dperm;
    int shift = 8 * pass;
    void *pr[8] = {&n, &longest, &shift, &ntiles, &in.rp, &src, &dhist, &dst};
    if ((s = spx__launch256(ctx, fn[1], ntiles, pr, names[1])) || (s = spx__conv_scan(ctx, fn + 5, nh, dhist, dsums, dtot)) ||
        (s = spx__launch256(ctx, fn[2], ntiles, pr, names[2])))
      goto done;
  }
  /* jd_ptr[0] = 0: the scan's, or with no diagonals (no entries) an upload's */
  if ((s = spx_device_alloc(ctx, (size_t)(njd + 1) * 4, &djd)) || (njd == 0 && (s = spx_device_upload(ctx, djd, &zero32, 4))))
    goto done;
  {
    void *pr[5] = {&n, &njd, &in.rp, &dperm, &djd};
    if ((s = spx__launch256(ctx, fn[3], (njd + 255) / 256, pr, names[3])) || (s = spx__conv_scan(ctx, fn + 5, njd, djd, dsums, dtot)))
      goto done;
  }
  if ((s = spx_device_alloc(ctx, (size_t)a->nnz * 4 + 4, &dcol)) || (s = spx_device_alloc(ctx, (size_t)a->nnz * vb + vb, &dval)))
    goto done;
  {
    void *pr[8] = {&n, &in.rp, &in.ci, &in.va, &dperm, &djd, &dcol, &dval};
    if ((s = spx__conv_in_values(&in)) || (s = spx__launch256(ctx, fn[4], (n + 255) / 256, pr, names[4]))) goto done;
  }
  {
    spx_fmt m;
    spx_fmt_jds e;
    const spx_devptr given[4] = {dperm, djd, dcol, dval};
    memset(&m, 0, sizeof m);
    memset(&e, 0, sizeof e);
    e.dtype = a->dtype; e.nrows = n; e.ncols = a->ncols; e.nnz = a->nnz; e.njd = (int32_t)njd;
    m.format = SPX_FORMAT_JDS; m.dtype = a->dtype; m.nrows = n; m.ncols = a->ncols; m.nnz = a->nnz;
    m.vt = spx_format_info(SPX_FORMAT_JDS); m.impl = &e;
    if ((s = spx__dmatrix_adopt(ctx, &m, opt, given, 4, out))) goto done;
    dperm = djd = dcol = dval = 0;
  }
done:
  spx__conv_in_free(ctx, &in);
  spx_device_free(ctx, dacc); spx_device_free(ctx, dperm); spx_device_free(ctx, dtmp); spx_device_free(ctx, dhist);
  spx_device_free(ctx, dsums); spx_device_free(ctx, dtot); spx_device_free(ctx, djd); spx_device_free(ctx, dcol);
  spx_device_free(ctx, dval);
  return s;
}

/* ---- The device converters, by format ---------------------------------------------------------
 * A format's registry line (SPX_FORMATS, formats.h) names its converter in its device column:
 * spx__dmatrix_<device>_device above, or none (converted on the host, then uploaded). Keyed by
 * spx_format so that the line is the only place that names it; a format registered at run time has
 * no line, so no device converter. */
typedef spx_status (*spx__dconv_fn)(spx_context *ctx, const spx_csr *a, spx_format f, const spx_format_params *prm,
                                    const spx_dmatrix_options *opt, spx__dcsr *staged, spx_dmatrix **out);
#define spx__dmatrix_none_device NULL /* a registry line's device converter none */
static const spx__dconv_fn spx__dconv[SPX_FORMAT_COUNT] = {
#define SPX__DCONV_ROW(E, n, D, cost, what, model, device) [SPX_FORMAT_##E] = spx__dmatrix_##device##_device,
    SPX_FORMATS(SPX__DCONV_ROW)
#undef SPX__DCONV_ROW
};
#undef spx__dmatrix_none_device

/* Formats with a device converter; SPX_DEVICE_CONVERT=0 in the environment turns them all off
 * (comparisons, debugging). The plan's cost model asks the same. */
int spx__device_converts(int f) {
  const char *e = spx__cfg()->device_convert;
  return f >= 0 && f < SPX_FORMAT_COUNT && spx__dconv[f] && !(e && *e == '0');
}

/* a converted to f on the device (from `staged` when non-NULL); *out NULL with SPX_OK: the host's job. */
spx_status spx__dmatrix_convert_device(spx_context *ctx, const spx_csr *a, spx_format f,
                                       const spx_format_params *prm, const spx_dmatrix_options *opt,
                                       spx__dcsr *staged, spx_dmatrix **out) {
  *out = NULL;
  if (!spx__device_converts((int)f)) return SPX_OK;
  return spx__dconv[f](ctx, a, f, prm, opt, staged, out);
}

static spx_status spx__dmatrix_csr_direct(spx_context *ctx, const spx_csr *a, const spx_dmatrix_options *opt,
                                          spx_dmatrix **out);

spx_status spx_dmatrix_convert(spx_context *ctx, const spx_csr *a, spx_format f, const spx_format_params *params,
                               const spx_dmatrix_options *opt, spx_dmatrix **out) {
  spx_format_params dp;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dmatrix_convert: out is NULL");
  *out = NULL;
  if (!ctx || !a) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dmatrix_convert: NULL argument");
  if (ctx->backend != SPX_BACKEND_CUDA)
    return spx__fail(SPX_NOT_AVAILABLE, "spx_dmatrix_convert: the context uses the host backend (no GPU)");
  if (!params) { spx_format_params_default(&dp); params = &dp; }
  if ((s = spx__dmatrix_convert_device(ctx, a, f, params, opt, NULL, out)) || *out) return s;
  if (f == SPX_FORMAT_CSR) return spx__dmatrix_csr_direct(ctx, a, opt, out);
  { /* no device converter for this format or these parameters: on the host, then upload */
    spx_fmt *m = NULL;
    double tm = spx__now();
    if ((s = spx_fmt_from_csr(a, f, params, &m))) return s;
    spx__conv_mark(spx__plan_tracing(), spx_format_name(f), "host convert", &tm);
    s = spx_dmatrix_create(ctx, m, opt, out);
    spx_fmt_destroy(m);
    return s;
  }
}

/* Device array i of d in descriptor order (0: none, or empty), for tests/test_cuda.c, which
 * compares a device conversion with the host's array for array. Declared here: a test hook only. */
spx_devptr spx__dmatrix_array(const spx_dmatrix *d, int i);
spx_devptr spx__dmatrix_array(const spx_dmatrix *d, int i) { return d && i >= 0 && i < d->narrays ? d->arrays[i] : 0; }

/* The header spx_dmatrix_wrap_csr builds, without arrays: its kernel spec reads none when the
 * options fix threads_per_row (spx_csr_kernel_options always does). */
static void spx__csr_header(int64_t nrows, int64_t ncols, int64_t nnz, spx_dtype dtype, spx_fmt_csr *impl, spx_fmt *m) {
  memset(impl, 0, sizeof *impl);
  memset(m, 0, sizeof *m);
  impl->dtype = dtype; impl->nrows = nrows; impl->ncols = ncols; impl->nnz = nnz;
  m->format = SPX_FORMAT_CSR; m->dtype = dtype; m->nrows = nrows; m->ncols = ncols; m->nnz = nnz;
  m->vt = spx_format_info(SPX_FORMAT_CSR);
  m->impl = impl;
}

/* row_ptr[0..n] as the 32-bit row pointers of spx's CSR (its values checked to fit by the caller),
 * in a new allocation; NULL when out of memory. */
static int32_t *spx__csr_ptr32(const int64_t *row_ptr, int64_t n) {
  int32_t *p = (int32_t *)spx__alloc((size_t)n + 1, sizeof *p);
  int64_t r;
  for (r = 0; p && r <= n; r++) p[r] = (int32_t)row_ptr[r];
  return p;
}

/* CSR on the host to spx's CSR on the device, with no host copy of the matrix: the 32-bit row
 * pointers are made here and the columns and values go up from a's own arrays (copying them first
 * costs about what the upload does, on the setup of every small plan). The checks are
 * spx_fmt_from_csr's, in its words. */
static spx_status spx__dmatrix_csr_direct(spx_context *ctx, const spx_csr *a, const spx_dmatrix_options *opt,
                                          spx_dmatrix **out) {
  spx_fmt_csr impl;
  spx_fmt m;
  spx_status s;
  int j;
  if ((s = spx__fmt_from_csr_check(a, SPX_FORMAT_CSR))) return s;
  spx__csr_header(a->nrows, a->ncols, a->nnz, a->dtype, &impl, &m);
  for (j = 0; j < SPX_FORMAT_MAX_PARAMS; j++) m.params[j] = SPX_AUTO;
  if (!(impl.ptr = spx__csr_ptr32(a->row_ptr, a->nrows))) return SPX_OUT_OF_MEMORY;
  impl.col = a->col_idx; /* read, never written: the upload's source */
  impl.val.p = a->val.p;
  s = spx__dmatrix_build(ctx, &m, opt, NULL, out);
  SPX_FREE(impl.ptr);
  return s;
}

spx_status spx_dmatrix_wrap_csr(spx_context *ctx, int64_t nrows, int64_t ncols, int64_t nnz,
                                spx_devptr row_ptr, spx_devptr col_idx, spx_devptr val, spx_dtype dtype,
                                const spx_dmatrix_options *opt, spx_dmatrix **out) {
  spx_fmt_csr impl;
  spx_fmt m;
  spx_dmatrix_options o;
  const spx_devptr given[3] = {row_ptr, col_idx, val};
  if (out) *out = NULL;
  if (nrows < 0 || ncols < 0 || nnz < 0 || nnz > INT32_MAX || !row_ptr || (nnz && (!col_idx || !val)))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_dmatrix_wrap_csr: bad sizes or NULL device arrays "
                     "(%lld x %lld, nnz %lld; 32-bit row pointers need nnz < 2^31)",
                     (long long)nrows, (long long)ncols, (long long)nnz);
  spx__csr_header(nrows, ncols, nnz, dtype, &impl, &m);
  /* The rows live on the device only: no host scan for skew, so the vector kernel with the
   * threads per row the mean length suggests. */
  if (opt) o = *opt;
  else memset(&o, 0, sizeof o);
  if (!o.threads_per_row) o.threads_per_row = spx__tpr(&m, 0);
  return spx__dmatrix_build(ctx, &m, &o, given, out);
}

int spx__csr_kernels_where(spx_context *ctx, int64_t nrows, int64_t ncols, int64_t nnz, spx_dtype dtype,
                           const int64_t *row_ptr, const spx_dmatrix_options *opt) {
  spx_fmt_csr impl;
  spx_fmt m;
  spx_dmatrix_options o;
  spx_kernel_plan plan;
  spx_kernel_spec_fn spec;
  int i, where = SPX__JIT_LOADED, bad;
  if (!ctx || !opt || !(spec = spx__kernel_spec(SPX_FORMAT_CSR)) || nnz > INT32_MAX) return SPX__JIT_NOWHERE;
  spx__csr_header(nrows, ncols, nnz, dtype, &impl, &m);
  o = *opt;
  /* with the rows, the spec reads their lengths as a build of them would; without, the mean row's */
  if (row_ptr && !(impl.ptr = spx__csr_ptr32(row_ptr, nrows))) return SPX__JIT_NOWHERE;
  if (!row_ptr && !o.threads_per_row) o.threads_per_row = spx__tpr(&m, 0);
  memset(&plan, 0, sizeof plan);
  bad = spx__dmatrix_kernel_plan(ctx, &m, spec, &o, &plan) != SPX_OK;
  SPX_FREE(impl.ptr);
  if (bad) {
    spx_clear_error();
    return SPX__JIT_NOWHERE;
  }
  for (i = 0; i < plan.nlaunch && where > SPX__JIT_NOWHERE; i++) {
    const char *defs[SPX_KERNEL_DEFINES_MAX + 2];
    int n = spx__kdefines(dtype, &plan.launch[i], 0, defs), w;
    w = spx__jit_where(ctx, plan.launch[i].template_name, plan.launch[i].kernel, n, defs);
    where = w < where ? w : where;
  }
  return where;
}

spx_status spx_dmatrix_spmv(spx_dmatrix *d, double alpha, spx_devptr x, double beta, spx_devptr y) {
  const spx__cuda_api *cu = spx__cuda();
  void *params[SPX_KERNEL_ARGS_MAX + 4];
  spx_status s = SPX_OK;
  int i;
  if (!d || (!x && d->ncols) || (!y && d->nrows))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_dmatrix_spmv: NULL argument");
  if (!cu) return spx__fail(SPX_NOT_AVAILABLE, "spx_dmatrix_spmv: no CUDA driver");
  if (d->tier.state && (s = spx__dmatrix_settle(d, d->tier.state == SPX__TIER_NONE))) return s;
  for (i = 0; i < d->args.count; i++) params[i] = d->args.ptrs[i];
  params[i++] = &alpha;
  params[i++] = &beta;
  params[i++] = &x;
  params[i++] = &y;
  if ((s = spx__ctx_push(d->ctx))) return s;
  for (i = 0; i < d->plan.nlaunch && !s; i++) {
    const spx_kernel_launch *l = &d->plan.launch[i];
    s = spx__cu_check(cu->cuLaunchKernel((spx__CUfunction)d->fn[i], l->grid[0], l->grid[1], l->grid[2],
                                         l->block[0], l->block[1], l->block[2], l->shmem,
                                         d->ctx->stream, params, NULL),
                      l->kernel);
  }
  spx__ctx_pop(d->ctx);
  return s;
}

int64_t spx_dmatrix_bytes(const spx_dmatrix *d) { return d ? d->bytes : 0; }
const char *spx_dmatrix_describe(const spx_dmatrix *d) { return d ? d->describe : ""; }
double spx_dmatrix_jit_ms(const spx_dmatrix *d, int *compiled) {
  if (compiled) *compiled = d ? d->compiled : 0;
  return d ? d->jit_ms : 0;
}
spx_format spx_dmatrix_format(const spx_dmatrix *d) { return d ? d->format : (spx_format)-1; }
spx_dtype spx_dmatrix_dtype(const spx_dmatrix *d) { return d ? d->dtype : SPX_DOUBLE; }

spx_status spx_copy_bandwidth(spx_context *ctx, size_t bytes, int reps, double *gbs) {
  const spx__cuda_api *cu = spx__cuda();
  const char *defs[] = {"SPX_VALUE_T=double", "SPX_BLOCK=256"};
  spx_devptr a = 0, b = 0;
  spx_timer *t = NULL;
  void *fn = NULL, *params[3];
  long long n = (long long)(bytes / sizeof(double));
  unsigned grid;
  double best = 1e30, ms;
  spx_status s;
  int r;
  if (!gbs || reps < 1 || n < 1) return spx__fail(SPX_INVALID_ARGUMENT, "spx_copy_bandwidth: bad argument");
  *gbs = 0;
  if ((s = spx_jit_kernel(ctx, "vector", "spx_copy_stream", 2, defs, &fn))) return s;
  if ((s = spx_device_alloc(ctx, (size_t)n * sizeof(double), &a)) ||
      (s = spx_device_alloc(ctx, (size_t)n * sizeof(double), &b)) ||
      (s = spx_device_memset(ctx, a, 0x3f, (size_t)n * sizeof(double))) || (s = spx_timer_create(ctx, &t)))
    goto done;
  grid = (unsigned)(ctx->info.sm_count > 0 ? ctx->info.sm_count * 8 : 1024); /* a few waves, grid-stride */
  params[0] = &n; params[1] = &a; params[2] = &b;
  for (r = -1; r < reps; r++) { /* r = -1: warm-up */
    if ((s = spx_timer_start(t))) goto done;
    if ((s = spx__ctx_push(ctx))) goto done;
    s = spx__cu_check(cu->cuLaunchKernel((spx__CUfunction)fn, grid, 1, 1, 256, 1, 1, 0, ctx->stream, params, NULL),
                      "spx_copy_stream");
    spx__ctx_pop(ctx);
    if (s || (s = spx_timer_stop(t, &ms))) goto done;
    if (r >= 0 && ms < best) best = ms;
  }
  *gbs = 2.0 * (double)n * sizeof(double) / (best * 1e-3) * 1e-9;
done:
  spx_timer_destroy(t);
  spx_device_free(ctx, a);
  spx_device_free(ctx, b);
  return s;
}

spx_status spx_dmatrix_warm(const spx_fmt *m, const spx_dmatrix_options *opt, const char *arch,
                            int *compiled, int *cached) {
  spx_dmatrix d; /* only dtype and plan are used */
  spx_status s;
  int i;
  if (compiled) *compiled = 0;
  if (cached) *cached = 0;
  memset(&d, 0, sizeof d);
  if ((s = spx_dmatrix_plan(m, opt, &d.plan))) return s;
  d.dtype = m->dtype;
  for (i = 0; i < d.plan.nlaunch; i++) {
    const char *defs[SPX_KERNEL_DEFINES_MAX + 2];
    int n = spx__kdefines(d.dtype, &d.plan.launch[i], opt ? opt->generic : 0, defs), origin = 0;
    if ((s = spx_jit_compile_only(d.plan.launch[i].template_name, n, defs, arch, &origin))) return s;
    if (origin == SPX_JIT_COMPILED) { if (compiled) (*compiled)++; }
    else if (cached) (*cached)++;
  }
  return SPX_OK;
}
