/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/jit.h: the in-memory table of entries, NVRTC compiles (an image comes from
 * the disk cache when it holds one, jit_disk_impl.h), modules and kernel handles loaded through
 * the driver, spx_jit_kernel, the stats and clearing. Keys and templates are jit_key_impl.h's;
 * jit_cache.h states the locking. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"
#include "cuda_types.h"
#include "jit_cache.h"
#include "../jit.h"

/* ---- The in-memory table (callers hold the lock) ------------------------------------------------ */
static spx__jit_entry *spx__jit_find(spx__jit_key k) {
  size_t i, mask = spx__jit.cap - 1;
  if (!spx__jit.cap) return NULL;
  for (i = (size_t)k.lo & mask; spx__jit.slots[i]; i = (i + 1) & mask)
    if (spx__jit.slots[i]->key.hi == k.hi && spx__jit.slots[i]->key.lo == k.lo) return spx__jit.slots[i];
  return NULL;
}

/* The entry for k, created empty when absent (write lock); NULL when memory runs out. */
static spx__jit_entry *spx__jit_get(spx__jit_key k) {
  spx__jit_entry *e = spx__jit_find(k), **ns;
  size_t i, j, ncap;
  if (e) return e;
  if (2 * (spx__jit.count + 1) > spx__jit.cap) { /* keep the load under one half */
    ncap = spx__jit.cap ? 2 * spx__jit.cap : 64;
    if (!(ns = (spx__jit_entry **)spx__calloc(ncap, sizeof *ns))) return NULL;
    for (i = 0; i < spx__jit.cap; i++)
      if (spx__jit.slots[i]) {
        for (j = (size_t)spx__jit.slots[i]->key.lo & (ncap - 1); ns[j]; j = (j + 1) & (ncap - 1)) {}
        ns[j] = spx__jit.slots[i];
      }
    SPX_FREE(spx__jit.slots);
    spx__jit.slots = ns;
    spx__jit.cap = ncap;
  }
  if (!(e = (spx__jit_entry *)spx__calloc(1, sizeof *e))) return NULL;
  e->key = k;
  for (j = (size_t)k.lo & (spx__jit.cap - 1); spx__jit.slots[j]; j = (j + 1) & (spx__jit.cap - 1)) {}
  spx__jit.slots[j] = e;
  spx__jit.count++;
  return e;
}

static spx__CUfunction spx__jit_fn_find(const spx__jit_entry *e, int device, const char *name) {
  int i;
  for (i = 0; i < e->nfns; i++)
    if (e->fns[i].device == device && !strcmp(e->fns[i].name, name)) return e->fns[i].fn;
  return NULL;
}

/* Remember an NVRTC failure of key k so that asking again returns it at once. */
static void spx__jit_remember_failure(spx__jit_key k, spx_status s) {
  spx__jit_entry *e;
  if (s != SPX_NVRTC) return;
  pthread_rwlock_wrlock(&spx__jit_lock);
  if ((e = spx__jit_get(k)) != NULL && !e->fail_msg) {
    char *m = spx__strdup(spx_last_error());
    if (m) { e->fail_msg = m; e->fail_status = s; }
  }
  pthread_rwlock_unlock(&spx__jit_lock);
}

/* ---- Compiling -------------------------------------------------------------------------------- */
static spx_status spx__jit_compile(int ti, const spx_jit_key_inputs *in, void **image, size_t *size,
                                   int *cubin) {
  const char *sorted[SPX__JIT_MAX_DEFINES], *src, **opts;
  char archopt[64], name[80], *dbuf, *p;
  size_t dbytes = 1;
  int i, nopts = in->noptions + 1 + in->ndefines;
  double t0;
  spx_status s;
  if ((s = spx__jit_arch_check(in->arch, cubin)) || (s = spx__jit_defines(in->ndefines, in->defines, sorted)))
    return s;
  if (!(src = spx__jit_source(ti))) return SPX_OUT_OF_MEMORY;
  for (i = 0; i < in->ndefines; i++) dbytes += strlen(sorted[i]) + 3;
  opts = (const char **)spx__alloc((size_t)nopts, sizeof *opts);
  dbuf = (char *)spx__alloc(dbytes, 1);
  if (!opts || !dbuf) {
    SPX_FREE(opts);
    SPX_FREE(dbuf);
    return SPX_OUT_OF_MEMORY;
  }
  for (i = 0; i < in->noptions; i++) opts[i] = in->options[i];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", in->arch);
  opts[in->noptions] = archopt;
  for (i = 0, p = dbuf; i < in->ndefines; i++) {
    opts[in->noptions + 1 + i] = p;
    p += sprintf(p, "-D%s", sorted[i]) + 1;
  }
  snprintf(name, sizeof name, "%s.cu", in->template_name);
  t0 = spx__now();
  s = spx__nvrtc_compile(src, name, nopts, opts, *cubin, image, size, NULL);
  spx__jit_add_ns(&spx__jit_st.compile_ns, t0);
  atomic_fetch_add(&spx__jit_st.compiles, 1);
  if (s) atomic_fetch_add(&spx__jit_st.compile_failures, 1);
  SPX_FREE(opts);
  SPX_FREE(dbuf);
  return s;
}

/* The image for key k: from the disk cache when it holds a valid entry (skip_disk: it held one
 * that did not load), else from NVRTC, then written to disk. No lock held. */
static spx_status spx__jit_obtain(int ti, const spx_jit_key_inputs *in, spx__jit_key k, int skip_disk,
                                  int compile, void **image, size_t *size, int *cubin, spx_jit_origin *origin) {
  static atomic_int write_warned, unsafe_warned;
  char dir[1100], path[1200], hex[33], why[160];
  int disk = spx__jit_disk_dir(dir, sizeof dir, 0), r;
  double t0;
  spx_status s;
  spx__jit_hex(k, hex);
  if (disk) snprintf(path, sizeof path, "%s/%s", dir, hex);
  if (disk && !skip_disk) {
    t0 = spx__now();
    r = spx__jit_disk_read(path, k, image, size, cubin, why, sizeof why);
    spx__jit_add_ns(&spx__jit_st.read_ns, t0);
    if (r == SPX__JIT_READ_OK) {
      atomic_fetch_add(&spx__jit_st.disk_hits, 1);
      *origin = SPX_JIT_DISK;
      return SPX_OK;
    }
    if (r == SPX__JIT_READ_BAD) {
      atomic_fetch_add(&spx__jit_st.disk_corrupt, 1);
      spx__warn("JIT cache entry %s (template %s) is %s; compiling it again", path, in->template_name, why);
    } else if (r == SPX__JIT_READ_UNSAFE || r == SPX__JIT_READ_FOREIGN) {
      /* Treated as absent: someone else may have written it. Another user's file stays. */
      if (!atomic_exchange(&unsafe_warned, 1))
        spx__warn("JIT cache entry %s (template %s) is %s; not using it%s (warned once)", path, in->template_name,
                  why, r == SPX__JIT_READ_FOREIGN ? " nor replacing it" : "");
      if (r == SPX__JIT_READ_FOREIGN) disk = 0;
    }
  }
  *image = NULL;
  if (!compile) return SPX_OK;
  atomic_fetch_add(&spx__jit_st.misses, 1);
  if ((s = spx__jit_compile(ti, in, image, size, cubin))) return s;
  *origin = SPX_JIT_COMPILED;
  if (disk) {
    if ((r = spx__jit_disk_write(dir, k, in, *image, *size, *cubin)) < 0) {
      if (!atomic_exchange(&write_warned, 1)) spx__warn("%s (warned once; kernels still work)", spx_last_error());
      spx_clear_error();
    } else if (r > 0) {
      spx__jit_evict(dir);
    }
  }
  return SPX_OK;
}

/* Puts a freshly obtained image into the entry of k unless another thread was first. Write lock. */
static spx__jit_entry *spx__jit_store(spx__jit_key k, void *image, size_t size, int cubin) {
  spx__jit_entry *e = spx__jit_get(k);
  if (e && !e->image) {
    e->image = image;
    e->size = size;
    e->cubin = cubin;
  } else {
    SPX_FREE(image);
  }
  return e;
}

spx_status spx_jit_compile_only(const char *template_name, int ndefines, const char *const *defines,
                                const char *arch, int *from_cache) {
  spx_jit_key_inputs in;
  spx__jit_key k;
  spx__jit_entry *e;
  spx_jit_origin origin = SPX_JIT_COMPILED;
  void *img = NULL;
  size_t size = 0;
  int cubin = 0, ti, hit = 0;
  spx_status s;
  if (from_cache) *from_cache = 0;
  if ((s = spx_jit_key_describe(template_name, ndefines, defines, arch, &in)) ||
      (s = spx__jit_key_make(&in, &k)))
    return s;
  ti = spx__jit_template_index(in.template_name);
  pthread_rwlock_rdlock(&spx__jit_lock);
  if ((e = spx__jit_find(k)) != NULL) {
    if (e->image) hit = 1;
    else if (e->fail_msg) s = spx__fail(e->fail_status, "%s", e->fail_msg);
  }
  pthread_rwlock_unlock(&spx__jit_lock);
  if (s) return s;
  if (hit) {
    atomic_fetch_add(&spx__jit_st.mem_hits, 1);
    if (from_cache) *from_cache = SPX_JIT_MEMORY;
    return SPX_OK;
  }
  if ((s = spx__jit_obtain(ti, &in, k, 0, 1, &img, &size, &cubin, &origin))) {
    spx__jit_remember_failure(k, s);
    return s;
  }
  pthread_rwlock_wrlock(&spx__jit_lock);
  spx__jit_store(k, img, size, cubin); /* NULL on OOM: the image was freed, the compile stands */
  pthread_rwlock_unlock(&spx__jit_lock);
  if (from_cache) *from_cache = (int)origin;
  return SPX_OK;
}

/* ---- Loading (write lock held) ------------------------------------------------------------------ */
/* Retain the primary context of ctx's device once, so that modules outlive every spx_context. */
static spx_status spx__jit_retain(const spx__cuda_api *cu, const spx_context *ctx) {
  spx__jit_dev *nd;
  spx__CUcontext c;
  int i;
  for (i = 0; i < spx__jit.ndevs; i++)
    if (spx__jit.devs[i].device == ctx->device) return SPX_OK;
  if (!(nd = (spx__jit_dev *)SPX_REALLOC(spx__jit.devs, (size_t)(spx__jit.ndevs + 1) * sizeof *nd)))
    return spx__fail(SPX_OUT_OF_MEMORY, "JIT: out of host memory");
  spx__jit.devs = nd;
  SPX__CU_TRY(cu->cuDevicePrimaryCtxRetain(&c, ctx->cu_device));
  nd[spx__jit.ndevs].device = ctx->device;
  nd[spx__jit.ndevs].cu_device = ctx->cu_device;
  nd[spx__jit.ndevs++].cu_ctx = c;
  return SPX_OK;
}

static spx_status spx__jit_module(spx__jit_entry *e, spx_context *ctx, const char *tname, spx__CUmodule *out) {
  const spx__cuda_api *cu = spx__cuda();
  spx__CUjit_option jo[2] = {SPX__CU_JIT_ERROR_LOG_BUFFER, SPX__CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *jv[2];
  char log[2048] = "";
  spx__CUmodule m = NULL;
  spx__jit_mod *nm;
  spx__CUresult r;
  double t0;
  spx_status s;
  int i;
  *out = NULL;
  for (i = 0; i < e->nmods; i++)
    if (e->mods[i].device == ctx->device) { *out = e->mods[i].mod; return SPX_OK; }
  if (!(nm = (spx__jit_mod *)SPX_REALLOC(e->mods, (size_t)(e->nmods + 1) * sizeof *nm)))
    return spx__fail(SPX_OUT_OF_MEMORY, "JIT: out of host memory");
  e->mods = nm;
  if ((s = spx__jit_retain(cu, ctx)) || (s = spx__ctx_push(ctx))) return s;
  jv[0] = log;
  jv[1] = (void *)(uintptr_t)sizeof log;
  t0 = spx__now();
  r = cu->cuModuleLoadDataEx(&m, e->image, 2, jo, jv);
  spx__jit_add_ns(&spx__jit_st.load_ns, t0);
  spx__ctx_pop(ctx);
  if (r != SPX__CUDA_SUCCESS) {
    char why[512];
    s = spx__cu_check(r, "cuModuleLoadDataEx");
    snprintf(why, sizeof why, "%.500s", spx_last_error());
    log[sizeof log - 1] = 0;
    return spx__fail(s, "JIT: loading the %s of template %s on %s: %s%s%.400s", e->cubin ? "CUBIN" : "PTX",
                     tname, ctx->info.name, why, log[0] ? "; driver log: " : "", log);
  }
  nm[e->nmods].device = ctx->device;
  nm[e->nmods++].mod = m;
  *out = m;
  return SPX_OK;
}

static spx_status spx__jit_function(spx__jit_entry *e, spx__CUmodule m, spx_context *ctx, const char *tname,
                                    const char *kname, spx__CUfunction *out) {
  const spx__cuda_api *cu = spx__cuda();
  spx__jit_fn *nf;
  spx__CUfunction f = NULL;
  spx__CUresult r;
  char *name;
  spx_status s;
  if (!(nf = (spx__jit_fn *)SPX_REALLOC(e->fns, (size_t)(e->nfns + 1) * sizeof *nf)))
    return spx__fail(SPX_OUT_OF_MEMORY, "JIT: out of host memory");
  e->fns = nf;
  if ((s = spx__ctx_push(ctx))) return s;
  r = cu->cuModuleGetFunction(&f, m, kname);
  spx__ctx_pop(ctx);
  if (r == SPX__CUDA_ERROR_NOT_FOUND)
    return spx__fail(SPX_INVALID_ARGUMENT, "JIT: template %s has no kernel '%s' (kernels are its "
                     "extern \"C\" __global__ functions)", tname, kname);
  if ((s = spx__cu_check(r, "cuModuleGetFunction"))) return s;
  if (!(name = spx__strdup(kname))) return SPX_OUT_OF_MEMORY;
  nf[e->nfns].device = ctx->device;
  nf[e->nfns].name = name;
  nf[e->nfns++].fn = f;
  *out = f;
  return SPX_OK;
}

static int spx__jit_has_module(const spx__jit_entry *e, int device) {
  int i;
  for (i = 0; i < e->nmods; i++)
    if (e->mods[i].device == device) return 1;
  return 0;
}

/* Under the write lock: the handle from the entry's image, loading its module if needed.
 * *found = 0 when the entry has no image yet. */
static spx_status spx__jit_bind(spx__jit_entry *e, spx_context *ctx, const char *tname, const char *kname,
                                spx__CUfunction *f, int *found) {
  spx__CUmodule m;
  spx_status s;
  *found = 0;
  if ((*f = spx__jit_fn_find(e, ctx->device, kname)) != NULL) { *found = 1; return SPX_OK; }
  if (!e->image) return SPX_OK;
  *found = 1;
  if ((s = spx__jit_module(e, ctx, tname, &m))) return s;
  return spx__jit_function(e, m, ctx, tname, kname, f);
}

/* spx_jit_kernel, and spx_jit_kernel_cached with compile 0: a miss of both caches is SPX_OK with
 * *function NULL. */
static spx_status spx__jit_kernel(spx_context *ctx, const char *template_name, const char *kernel_name,
                                  int ndefines, const char *const *defines, int compile, void **function) {
  spx_jit_key_inputs in;
  spx__jit_key k;
  spx__jit_entry *e;
  spx__CUfunction f = NULL;
  spx_jit_origin origin = SPX_JIT_MEMORY;
  char arch[32];
  void *img = NULL;
  size_t size = 0;
  int ti, cubin = 0, found = 0, attempt;
  spx_status s = SPX_OK;
  if (function) *function = NULL;
  if (!ctx || !kernel_name || !function)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_jit_kernel: NULL context, kernel name or output");
  if (ctx->backend != SPX_BACKEND_CUDA || !spx__cuda())
    return spx__fail(SPX_NOT_AVAILABLE, "spx_jit_kernel: the context uses the host backend (no GPU)");
  if ((s = spx__jit_template(template_name, &ti)) ||
      (s = spx__jit_device_arch(ctx->info.cc_major, ctx->info.cc_minor, arch)) ||
      (s = spx__jit_inputs(ti, ndefines, defines, arch, &in)) || (s = spx__jit_key_make(&in, &k)))
    return s;
  /* The hit path: one read lock. */
  pthread_rwlock_rdlock(&spx__jit_lock);
  if ((e = spx__jit_find(k)) != NULL) f = spx__jit_fn_find(e, ctx->device, kernel_name);
  pthread_rwlock_unlock(&spx__jit_lock);
  if (f) {
    atomic_fetch_add(&spx__jit_st.mem_hits, 1);
    *function = (void *)f;
    return SPX_OK;
  }
  for (attempt = 0; attempt < 2; attempt++) {
    /* In memory already (image or failure), perhaps put there by another thread? */
    pthread_rwlock_wrlock(&spx__jit_lock);
    if (!(e = spx__jit_get(k))) s = SPX_OUT_OF_MEMORY;
    else if (e->fail_msg) s = spx__fail(e->fail_status, "%s", e->fail_msg);
    else s = spx__jit_bind(e, ctx, in.template_name, kernel_name, &f, &found);
    pthread_rwlock_unlock(&spx__jit_lock);
    if (s || found) break;
    if ((s = spx__jit_obtain(ti, &in, k, attempt, compile, &img, &size, &cubin, &origin))) {
      spx__jit_remember_failure(k, s);
      return s;
    }
    if (!img) return SPX_OK; /* not cached, and compile 0 */
    pthread_rwlock_wrlock(&spx__jit_lock);
    if (!(e = spx__jit_store(k, img, size, cubin))) s = SPX_OUT_OF_MEMORY;
    else s = spx__jit_bind(e, ctx, in.template_name, kernel_name, &f, &found);
    if (s && origin == SPX_JIT_DISK && e && e->image && !spx__jit_has_module(e, ctx->device)) {
      /* A valid-looking entry the driver rejects (say, damaged before it was checksummed):
       * forget it and compile once more, which replaces the file. */
      char hex[33];
      spx__jit_hex(k, hex);
      spx__warn("JIT cache entry %s of template %s did not load (%s); compiling it again", hex,
                in.template_name, spx_last_error());
      atomic_fetch_add(&spx__jit_st.disk_corrupt, 1);
      SPX_FREE(e->image);
      e->image = NULL;
      pthread_rwlock_unlock(&spx__jit_lock);
      continue;
    }
    pthread_rwlock_unlock(&spx__jit_lock);
    break;
  }
  if (s) return s;
  if (origin != SPX_JIT_COMPILED && origin != SPX_JIT_DISK) atomic_fetch_add(&spx__jit_st.mem_hits, 1);
  *function = (void *)f;
  return SPX_OK;
}

spx_status spx_jit_kernel(spx_context *ctx, const char *template_name, const char *kernel_name,
                          int ndefines, const char *const *defines, void **function) {
  return spx__jit_kernel(ctx, template_name, kernel_name, ndefines, defines, 1, function);
}

spx_status spx_jit_kernel_cached(spx_context *ctx, const char *template_name, const char *kernel_name,
                                 int ndefines, const char *const *defines, void **function) {
  return spx__jit_kernel(ctx, template_name, kernel_name, ndefines, defines, 0, function);
}

/* Where the kernel spx_jit_kernel would hand out lives, without loading or compiling anything (the
 * planner prices a candidate's kernel by it): SPX__JIT_LOADED when this process holds its handle
 * for ctx's device, SPX__JIT_HELD when its image is in memory or a cache file of its key exists (a
 * read and a module load away), SPX__JIT_NOWHERE otherwise, and on any error (a compile then). */
int spx__jit_where(spx_context *ctx, const char *template_name, const char *kernel_name, int ndefines,
                   const char *const *defines) {
  spx_jit_key_inputs in;
  spx__jit_key k;
  spx__jit_entry *e;
  char arch[32], dir[1100], path[1200], hex[33];
  int ti, where = SPX__JIT_NOWHERE;
  if (!ctx || !kernel_name || ctx->backend != SPX_BACKEND_CUDA || spx__jit_template(template_name, &ti) ||
      spx__jit_device_arch(ctx->info.cc_major, ctx->info.cc_minor, arch) ||
      spx__jit_inputs(ti, ndefines, defines, arch, &in) || spx__jit_key_make(&in, &k)) {
    spx_clear_error();
    return SPX__JIT_NOWHERE;
  }
  pthread_rwlock_rdlock(&spx__jit_lock);
  if ((e = spx__jit_find(k)) != NULL && !e->fail_msg)
    where = spx__jit_fn_find(e, ctx->device, kernel_name) ? SPX__JIT_LOADED : e->image ? SPX__JIT_HELD : where;
  pthread_rwlock_unlock(&spx__jit_lock);
  if (where == SPX__JIT_NOWHERE && spx__jit_disk_dir(dir, sizeof dir, 0)) {
    spx__jit_hex(k, hex);
    snprintf(path, sizeof path, "%s/%s", dir, hex);
    if (access(path, R_OK) == 0) where = SPX__JIT_HELD;
  }
  return where;
}

/* ---- Stats and clearing ----------------------------------------------------------------------- */
void spx_jit_stats_get(spx_jit_stats *out) {
  char dir[1100];
  if (!out) return;
  memset(out, 0, sizeof *out);
  out->mem_hits = atomic_load(&spx__jit_st.mem_hits);
  out->disk_hits = atomic_load(&spx__jit_st.disk_hits);
  out->misses = atomic_load(&spx__jit_st.misses);
  out->compiles = atomic_load(&spx__jit_st.compiles);
  out->compile_failures = atomic_load(&spx__jit_st.compile_failures);
  out->disk_writes = atomic_load(&spx__jit_st.disk_writes);
  out->disk_corrupt = atomic_load(&spx__jit_st.disk_corrupt);
  out->evictions = atomic_load(&spx__jit_st.evictions);
  out->compile_ms_total = (double)atomic_load(&spx__jit_st.compile_ns) * 1e-6;
  out->load_ms_total = (double)atomic_load(&spx__jit_st.load_ns) * 1e-6;
  out->disk_read_ms_total = (double)atomic_load(&spx__jit_st.read_ns) * 1e-6;
  out->disk_cap_mb = spx__jit_cap_mb();
  out->disk_enabled = spx__jit_disk_dir(dir, sizeof dir, 1); /* I/O only for a path not judged yet */
  out->disk_bytes = out->disk_entries = -1;
  if (atomic_load(&spx__jit_st.scanned)) {
    out->disk_bytes = atomic_load(&spx__jit_st.disk_bytes);
    out->disk_entries = atomic_load(&spx__jit_st.disk_entries);
  }
}

spx_status spx_jit_disk_usage(int64_t *bytes, int64_t *entries) {
  char dir[1100];
  spx__jit_file *f = NULL;
  int64_t n = 0, total = 0;
  if (bytes) *bytes = 0;
  if (entries) *entries = 0;
  if (!spx__jit_disk_dir(dir, sizeof dir, 0)) return SPX_OK;
  if (spx__jit_scan(dir, &f, &n, &total, 0) != 0)
    return spx__fail(SPX_IO, "cannot list the JIT cache directory %s: %s", dir, strerror(errno));
  SPX_FREE(f);
  spx__jit_scanned(total, n);
  if (bytes) *bytes = total;
  if (entries) *entries = n;
  return SPX_OK;
}

/* Unloads e's modules and drops its image, handles and remembered failure (write lock): the entry
 * then stands for a kernel not yet obtained. */
static void spx__jit_entry_empty(spx__jit_entry *e) {
  const spx__cuda_api *cu = spx__cuda();
  spx__CUcontext old;
  int m, j, d;
  for (m = 0; m < e->nmods && cu; m++)
    for (d = 0; d < spx__jit.ndevs; d++)
      if (spx__jit.devs[d].device == e->mods[m].device &&
          cu->cuCtxPushCurrent(spx__jit.devs[d].cu_ctx) == SPX__CUDA_SUCCESS) {
        (void)cu->cuModuleUnload(e->mods[m].mod);
        (void)cu->cuCtxPopCurrent(&old);
      }
  for (j = 0; j < e->nfns; j++) SPX_FREE(e->fns[j].name);
  SPX_FREE(e->fns);
  SPX_FREE(e->mods);
  SPX_FREE(e->image);
  SPX_FREE(e->fail_msg);
  e->fns = NULL; e->mods = NULL; e->image = NULL; e->fail_msg = NULL;
  e->nfns = e->nmods = 0;
  e->size = 0;
}

spx_status spx_jit_forget(const char *template_name, int ndefines, const char *const *defines, const char *arch) {
  spx_jit_key_inputs in;
  spx__jit_key k;
  spx__jit_entry *e;
  char dir[1100], hex[33];
  struct stat st;
  spx_status s = SPX_OK;
  DIR *d;
  if ((s = spx_jit_key_describe(template_name, ndefines, defines, arch, &in)) || (s = spx__jit_key_make(&in, &k)))
    return s;
  pthread_rwlock_wrlock(&spx__jit_lock);
  if ((e = spx__jit_find(k)) != NULL) spx__jit_entry_empty(e);
  pthread_rwlock_unlock(&spx__jit_lock);
  if (!spx__jit_disk_dir(dir, sizeof dir, 0)) return SPX_OK;
  if (!(d = spx__jit_opendir(dir))) {
    if (errno == ENOENT) return SPX_OK;
    return spx__fail(SPX_IO, "cannot open the JIT cache directory %s: %s", dir, strerror(errno));
  }
  spx__jit_hex(k, hex);
  /* Only this user's regular file: anything else in its place is not spx's (and is not read). */
  if (spx__jit_is_mine(d, hex, &st) && unlinkat(dirfd(d), hex, 0) != 0 && errno != ENOENT)
    s = spx__fail(SPX_IO, "cannot remove the JIT cache entry %s/%s: %s", dir, hex, strerror(errno));
  closedir(d);
  return s;
}

spx_status spx_jit_clear_memory(void) {
  const spx__cuda_api *cu = spx__cuda();
  size_t i;
  int d;
  pthread_rwlock_wrlock(&spx__jit_lock);
  for (i = 0; i < spx__jit.cap; i++) {
    spx__jit_entry *e = spx__jit.slots[i];
    if (!e) continue;
    spx__jit_entry_empty(e);
    SPX_FREE(e);
  }
  SPX_FREE(spx__jit.slots);
  spx__jit.slots = NULL;
  spx__jit.cap = spx__jit.count = 0;
  spx__jit.narchs = 0;
  for (d = 0; d < spx__jit.ndevs && cu; d++) (void)cu->cuDevicePrimaryCtxRelease(spx__jit.devs[d].cu_device);
  SPX_FREE(spx__jit.devs);
  spx__jit.devs = NULL;
  spx__jit.ndevs = 0;
  pthread_rwlock_unlock(&spx__jit_lock);
  return SPX_OK;
}

spx_status spx_jit_clear(void) {
  char dir[1100];
  DIR *d;
  struct dirent *de;
  struct stat st;
  int failed = 0;
  spx_jit_clear_memory();
  if (!spx__jit_disk_dir(dir, sizeof dir, 0) || !(d = spx__jit_opendir(dir))) return SPX_OK;
  while ((de = readdir(d)) != NULL) {
    /* Entries and temporary files, as this user's regular files: never a link, never another's. */
    if ((!spx__jit_is_key_name(de->d_name) &&
         strncmp(de->d_name, SPX__JIT_TMP_PREFIX, strlen(SPX__JIT_TMP_PREFIX))) ||
        !spx__jit_is_mine(d, de->d_name, &st))
      continue;
    if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno != ENOENT && !failed++)
      spx__fail(SPX_IO, "cannot remove the JIT cache entry %s/%s: %s", dir, de->d_name, strerror(errno));
  }
  closedir(d);
  if (failed) return SPX_IO;
  spx__jit_scanned(0, 0);
  (void)rmdir(dir); /* fails harmlessly when it holds files that are not spx's */
  return SPX_OK;
}
