/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/loader.h below the contexts: opening CUDA with dlopen, error checks, device
 * queries, NVRTC, and making a context current (push/pop). The contexts themselves are
 * context_impl.h, above device memory. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include "common.h"
#include "config.h"
#include "../loader.h"
#include "cuda_types.h"

/* dlsym's void * is stored into the tables with memcpy: POSIX guarantees that function and
 * object pointers share a representation, ISO C does not allow the cast. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers must fit a void *");

/* ---- Symbol tables as data -------------------------------------------------------------------- */
typedef struct spx__sym {
  const char *name; /* exported name */
  size_t offset;    /* of the member in the library's table */
  int required;
} spx__sym;

#define SPX__SYM_ROW(api, req, member, exported) {#exported, offsetof(api, member), req},
#define SPX__SYM_ROW_CUDA(req, ret, member, exported, params) SPX__SYM_ROW(spx__cuda_api, req, member, exported)
#define SPX__SYM_ROW_NVRTC(req, ret, member, exported, params) SPX__SYM_ROW(spx__nvrtc_api, req, member, exported)
#define SPX__SYM_ROW_CUSPARSE(req, ret, member, exported, params) \
  SPX__SYM_ROW(spx__cusparse_api, req, member, exported)
static const spx__sym spx__cuda_syms[] = {SPX__CUDA_SYMBOLS(SPX__SYM_ROW_CUDA)};
static const spx__sym spx__nvrtc_syms[] = {SPX__NVRTC_SYMBOLS(SPX__SYM_ROW_NVRTC)};
static const spx__sym spx__cusparse_syms[] = {SPX__CUSPARSE_SYMBOLS(SPX__SYM_ROW_CUSPARSE)};
#undef SPX__SYM_ROW_CUDA
#undef SPX__SYM_ROW_NVRTC
#undef SPX__SYM_ROW_CUSPARSE
#undef SPX__SYM_ROW

/* Every member is one function pointer, so the table has no room for anything unlisted. */
_Static_assert(sizeof(spx__cuda_api) == SPX__CUDA_SYMBOL_COUNT * sizeof(void *), "cuda table");
_Static_assert(sizeof(spx__nvrtc_api) == SPX__NVRTC_SYMBOL_COUNT * sizeof(void *), "nvrtc table");
_Static_assert(sizeof(spx__cusparse_api) == SPX__CUSPARSE_SYMBOL_COUNT * sizeof(void *), "cusparse table");

/* ---- Library state ---------------------------------------------------------------------------- */
static const char *const spx__cuda_names[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *const spx__nvrtc_names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                               "libnvrtc.so.11.2", NULL};
static const char *const spx__cusparse_names[] = {"libcusparse.so", "libcusparse.so.12",
                                                  "libcusparse.so.13", "libcusparse.so.11", NULL};

typedef struct spx__lib {
  const char *env;               /* full-path override */
  const char *const *names;      /* file names, tried in order */
  int toolkit_dirs;              /* also try the names in the CUDA toolkit's directories */
  const spx__sym *syms;
  int nsyms;
  void *api;                     /* the table the symbols go into */
  size_t api_size;
  int (*init)(struct spx__lib *); /* after the symbols resolved: 0 (reason set) if unusable */
  atomic_int done;               /* 1 once the load was tried; st and api are final then */
  spx_lib_status st;
} spx__lib;

static spx__cuda_api spx__cuda_tab;
static spx__nvrtc_api spx__nvrtc_tab;
static spx__cusparse_api spx__cusparse_tab;

/* What the loads learned beyond the tables. */
static struct {
  int driver_version, device_count;
  spx__CUresult init_result; /* of cuInit; 0 when it was not reached */
  int nvrtc_major, nvrtc_minor;
  int cusparse_version;
} spx__ld;

static int spx__cuda_init(spx__lib *l);
static int spx__nvrtc_init(spx__lib *l);
static int spx__cusparse_init(spx__lib *l);

static spx__lib spx__libs[SPX_LIB_COUNT] = {
    {"SPX_LIBCUDA", spx__cuda_names, 0, spx__cuda_syms, SPX__CUDA_SYMBOL_COUNT, &spx__cuda_tab,
     sizeof spx__cuda_tab, spx__cuda_init, 0, {0, "", ""}},
    {"SPX_LIBNVRTC", spx__nvrtc_names, 1, spx__nvrtc_syms, SPX__NVRTC_SYMBOL_COUNT, &spx__nvrtc_tab,
     sizeof spx__nvrtc_tab, spx__nvrtc_init, 0, {0, "", ""}},
    {"SPX_LIBCUSPARSE", spx__cusparse_names, 1, spx__cusparse_syms, SPX__CUSPARSE_SYMBOL_COUNT,
     &spx__cusparse_tab, sizeof spx__cusparse_tab, spx__cusparse_init, 0, {0, "", ""}},
};

static pthread_mutex_t spx__ld_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int spx__notices;

/* ---- Error names ------------------------------------------------------------------------------ */
static const char *spx__cu_known_name(spx__CUresult r) {
  switch (r) {
  case SPX__CUDA_SUCCESS: return "CUDA_SUCCESS";
#define SPX__CU_ERROR_CASE(name, value) case value: return "CUDA_ERROR_" #name;
    SPX__CU_ERRORS(SPX__CU_ERROR_CASE)
#undef SPX__CU_ERROR_CASE
  default: return NULL;
  }
}

/* The driver's own name and text when it gives them (a stub or an old driver may not). */
static void spx__cu_describe(spx__CUresult r, const char **name, const char **text) {
  static SPX__THREAD_LOCAL char num[32];
  const spx__cuda_api *cu = &spx__cuda_tab;
  *name = NULL;
  *text = NULL;
  if (cu->cuGetErrorName && cu->cuGetErrorName(r, name) != SPX__CUDA_SUCCESS) *name = NULL;
  if (cu->cuGetErrorString && cu->cuGetErrorString(r, text) != SPX__CUDA_SUCCESS) *text = NULL;
  if (!*name) *name = spx__cu_known_name(r);
  if (!*name) {
    snprintf(num, sizeof num, "CUDA error %d", (int)r);
    *name = num;
  }
  if (!*text) *text = "no description from the driver";
}

const char *spx__cu_error_name(spx__CUresult r) {
  const char *name, *text;
  spx__cu_describe(r, &name, &text);
  return name;
}

spx_status spx__cu_check(spx__CUresult r, const char *what) {
  const char *name, *text;
  if (r == SPX__CUDA_SUCCESS) return SPX_OK;
  spx__cu_describe(r, &name, &text);
  return spx__fail(r == SPX__CUDA_ERROR_OUT_OF_MEMORY ? SPX_DEVICE_OUT_OF_MEMORY : SPX_CUDA,
                   "%s failed: %s (%s)", what ? what : "a CUDA call", name, text);
}

spx_status spx__nvrtc_check(spx__nvrtcResult r, const char *what) {
  const char *text = spx__nvrtc_tab.nvrtcGetErrorString ? spx__nvrtc_tab.nvrtcGetErrorString(r) : NULL;
  if (r == SPX__NVRTC_SUCCESS) return SPX_OK;
  return spx__fail(SPX_NVRTC, "%s failed: %s (NVRTC error %d)", what ? what : "an NVRTC call",
                   text ? text : "no description", (int)r);
}

spx_status spx__cusparse_check(spx__cusparseStatus_t r, const char *what) {
  const spx__cusparse_api *sp = &spx__cusparse_tab;
  const char *name = sp->cusparseGetErrorName ? sp->cusparseGetErrorName(r) : NULL;
  const char *text = sp->cusparseGetErrorString ? sp->cusparseGetErrorString(r) : NULL;
  if (r == SPX__CUSPARSE_STATUS_SUCCESS) return SPX_OK;
  return spx__fail(r == SPX__CUSPARSE_STATUS_ALLOC_FAILED ? SPX_DEVICE_OUT_OF_MEMORY : SPX_CUSPARSE,
                   "%s failed: %s (%s, cuSPARSE status %d)", what ? what : "a cuSPARSE call",
                   name ? name : "cuSPARSE error", text ? text : "no description", (int)r);
}

/* ---- Loading ---------------------------------------------------------------------------------- */
static int spx__cuda_init(spx__lib *l) {
  const spx__cuda_api *cu = &spx__cuda_tab;
  spx__CUresult r;
  const char *name, *text;
  if (cu->cuDriverGetVersion(&spx__ld.driver_version) != SPX__CUDA_SUCCESS) spx__ld.driver_version = 0;
  r = cu->cuInit(0);
  if (r == SPX__CUDA_SUCCESS) r = cu->cuDeviceGetCount(&spx__ld.device_count);
  if (r == SPX__CUDA_SUCCESS) return 1;
  spx__ld.init_result = r;
  spx__ld.device_count = 0;
  spx__cu_describe(r, &name, &text);
  snprintf(l->st.reason, sizeof l->st.reason, "cuInit: %s (%s)", name, text);
  return 0;
}

static int spx__nvrtc_init(spx__lib *l) {
  spx__nvrtcResult r = spx__nvrtc_tab.nvrtcVersion(&spx__ld.nvrtc_major, &spx__ld.nvrtc_minor);
  if (r == SPX__NVRTC_SUCCESS) return 1;
  snprintf(l->st.reason, sizeof l->st.reason, "nvrtcVersion failed with NVRTC error %d", (int)r);
  return 0;
}

static int spx__cusparse_init(spx__lib *l) {
  int v[3] = {0, 0, 0}, i;
  for (i = 0; i < 3; i++) {
    spx__cusparseStatus_t r = spx__cusparse_tab.cusparseGetProperty(SPX__LIBRARY_MAJOR_VERSION + i, &v[i]);
    if (r != SPX__CUSPARSE_STATUS_SUCCESS) {
      snprintf(l->st.reason, sizeof l->st.reason, "cusparseGetProperty failed with status %d", (int)r);
      return 0;
    }
  }
  spx__ld.cusparse_version = v[0] * 1000 + v[1] * 100 + v[2];
  return 1;
}

/* Tries one file. Returns 1 when the search should stop (usable, or found but the system cannot
 * use it: another copy of the same library would not do better), 0 to try the next candidate.
 * On failure `why` says what went wrong; `found` says the file existed and opened. */
static int spx__lib_try(spx__lib *l, const char *path, char *why, size_t len, int *found) {
  void *h;
  const char *err;
  int i;
  *found = 0;
  dlerror();
  h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    err = dlerror();
    snprintf(why, len, "%s", err ? err : "dlopen failed");
    /* A file that exists but fails to load (wrong architecture, missing dependency) is the more
     * useful reason to report than the names that did not exist. */
    *found = err && !strstr(err, "No such file");
    return 0;
  }
  *found = 1;
  memset(l->api, 0, l->api_size);
  for (i = 0; i < l->nsyms; i++) {
    void *p = dlsym(h, l->syms[i].name);
    if (!p && l->syms[i].required) {
      snprintf(why, len, "%s has no %s (another library, or older than spx supports)", path, l->syms[i].name);
      memset(l->api, 0, l->api_size);
      dlclose(h);
      return 0;
    }
    memcpy((char *)l->api + l->syms[i].offset, &p, sizeof p);
  }
  snprintf(l->st.path, sizeof l->st.path, "%s", path);
  /* From here the library stays mapped: CUDA libraries start threads and keep state. */
  if (!l->init(l)) {
    snprintf(why, len, "%s", l->st.reason);
    memset(l->api, 0, l->api_size);
    return 1;
  }
  l->st.loaded = 1;
  return 1;
}

/* The library's full-path override (l->env in the environment), NULL when unset. */
static const char *spx__lib_env(const spx__lib *l) {
  const spx__config *c = spx__cfg();
  const char *const path[SPX_LIB_COUNT] = {c->libcuda, c->libnvrtc, c->libcusparse}; /* ORDER LIB */
  return path[l - spx__libs];
}

static void spx__lib_open(spx__lib *l) {
  static const char *const fixed_dirs[] = {
      "/usr/local/cuda/lib64",
#if defined(__aarch64__)
      "/usr/local/cuda/targets/sbsa-linux/lib",
#else
      "/usr/local/cuda/targets/x86_64-linux/lib",
#endif
  };
  const char *dirs[4];
  char path[512], why[512], first[512] = "", best[512] = "";
  const char *env = spx__lib_env(l), *home = spx__cfg()->cuda_home;
  char home_lib[400];
  int nd = 0, d, k, found, tried = 0;

  memset(&l->st, 0, sizeof l->st);
  if (env && *env) {
    spx__lib_try(l, env, why, sizeof why, &found);
    if (!l->st.path[0]) /* it did not open: say where the name came from */
      snprintf(l->st.reason, sizeof l->st.reason, "%.440s (the file named by %s)", why, l->env);
    else if (!l->st.loaded)
      snprintf(l->st.reason, sizeof l->st.reason, "%s", why);
    return;
  }
  dirs[nd++] = ""; /* the dynamic loader's own search: LD_LIBRARY_PATH, ld.so.cache */
  if (l->toolkit_dirs) {
    if (home && *home && strlen(home) < sizeof home_lib - 8) {
      snprintf(home_lib, sizeof home_lib, "%s/lib64", home);
      dirs[nd++] = home_lib;
    }
    dirs[nd++] = fixed_dirs[0];
    dirs[nd++] = fixed_dirs[1];
  }
  for (d = 0; d < nd; d++) {
    for (k = 0; l->names[k]; k++) {
      snprintf(path, sizeof path, "%s%s%s", dirs[d], *dirs[d] ? "/" : "", l->names[k]);
      tried++;
      if (spx__lib_try(l, path, why, sizeof why, &found)) {
        if (!l->st.loaded) snprintf(l->st.reason, sizeof l->st.reason, "%s", why);
        return;
      }
      if (!first[0]) snprintf(first, sizeof first, "%s", why);
      if (found && !best[0]) snprintf(best, sizeof best, "%s", why);
    }
  }
  /* a reason longer than the field is cut: the return value says so, and a cut reason is fine */
  if (l->toolkit_dirs)
    (void)!(snprintf(l->st.reason, sizeof l->st.reason, "%s (%d names tried; set %s to the library's path)",
                     best[0] ? best : first, tried, l->env) >= (int)sizeof l->st.reason);
  else
    (void)!(snprintf(l->st.reason, sizeof l->st.reason, "%s", best[0] ? best : first) >= (int)sizeof l->st.reason);
}

/* Loads library `which` once per process (double-checked: the fast path is one atomic load). */
static const spx__lib *spx__lib_get(spx_lib which) {
  spx__lib *l = &spx__libs[which];
  if (!atomic_load_explicit(&l->done, memory_order_acquire)) {
    pthread_mutex_lock(&spx__ld_mutex);
    if (!atomic_load_explicit(&l->done, memory_order_relaxed)) {
      spx__lib_open(l);
      atomic_store_explicit(&l->done, 1, memory_order_release);
    }
    pthread_mutex_unlock(&spx__ld_mutex);
  }
  return l;
}

const spx__cuda_api *spx__cuda(void) {
  return spx__lib_get(SPX_LIB_CUDA)->st.loaded ? &spx__cuda_tab : NULL;
}
const spx__nvrtc_api *spx__nvrtc(void) {
  return spx__lib_get(SPX_LIB_NVRTC)->st.loaded ? &spx__nvrtc_tab : NULL;
}
const spx__cusparse_api *spx__cusparse(void) {
  return spx__lib_get(SPX_LIB_CUSPARSE)->st.loaded ? &spx__cusparse_tab : NULL;
}

void spx__loader_reset(void) {
  int i;
  spx__config_reload(); /* the environment as it is now */
  pthread_mutex_lock(&spx__ld_mutex);
  for (i = 0; i < SPX_LIB_COUNT; i++) {
    memset(&spx__libs[i].st, 0, sizeof spx__libs[i].st);
    memset(spx__libs[i].api, 0, spx__libs[i].api_size);
    atomic_store(&spx__libs[i].done, 0);
  }
  memset(&spx__ld, 0, sizeof spx__ld);
  atomic_store(&spx__notices, 0);
  pthread_mutex_unlock(&spx__ld_mutex);
}

int spx__loader_notice_count(void) { return atomic_load(&spx__notices); }

spx_status spx_cuda_load(void) {
  const spx__lib *l = spx__lib_get(SPX_LIB_CUDA);
  spx__lib_get(SPX_LIB_NVRTC);
  spx__lib_get(SPX_LIB_CUSPARSE);
  if (l->st.loaded) return SPX_OK;
  return spx__fail(SPX_NOT_AVAILABLE, "the CUDA driver is not available: %s", l->st.reason);
}

void spx_lib_status_get(spx_lib which, spx_lib_status *out) {
  if (!out) return;
  if ((unsigned)which >= SPX_LIB_COUNT) {
    memset(out, 0, sizeof *out);
    snprintf(out->reason, sizeof out->reason, "unknown library %d", (int)which);
    return;
  }
  *out = spx__lib_get(which)->st;
}

const char *spx_lib_name(spx_lib which) {
  static const char *const names[] = {
#define SPX__LIB_NAME(e, name, env, what) name,
      SPX_LIB_LIST(SPX__LIB_NAME)
#undef SPX__LIB_NAME
  };
  return (unsigned)which < SPX_LIB_COUNT ? names[which] : "unknown";
}

/* ---- Devices ---------------------------------------------------------------------------------- */
int spx_device_count(void) { return spx__cuda() ? spx__ld.device_count : 0; }

/* Why there is no CUDA backend now ("" when there is one). */
void spx__no_gpu_reason(char *buf, size_t len) {
  const spx__lib *l = spx__lib_get(SPX_LIB_CUDA);
  buf[0] = 0;
  if (!l->st.path[0])
    snprintf(buf, len, "no CUDA driver (%s)", l->st.reason);
  else if (!l->st.loaded && spx__ld.init_result == SPX__CUDA_ERROR_NO_DEVICE)
    snprintf(buf, len, "no CUDA device (%s)", l->st.reason);
  else if (!l->st.loaded)
    snprintf(buf, len, "the CUDA driver %.200s cannot be used (%s)", l->st.path, l->st.reason);
  else if (spx__ld.device_count <= 0)
    snprintf(buf, len, "no CUDA device (the driver reports none)");
}

/* Device attributes copied into spx_device_info. A device that lacks one reads 0.
 *  _(field,              CU_DEVICE_ATTRIBUTE_ suffix) */
#define SPX__DEVICE_ATTRS(_)                                   \
  _(sm_count,           MULTIPROCESSOR_COUNT)                  \
  _(cc_major,           COMPUTE_CAPABILITY_MAJOR)              \
  _(cc_minor,           COMPUTE_CAPABILITY_MINOR)              \
  _(l2_bytes,           L2_CACHE_SIZE)                         \
  _(max_threads_per_sm, MAX_THREADS_PER_MULTIPROCESSOR)        \
  _(mem_clock_khz,      MEMORY_CLOCK_RATE)                     \
  _(mem_bus_width,      GLOBAL_MEMORY_BUS_WIDTH)

spx_status spx__device_props(const spx__cuda_api *cu, int ordinal, spx__CUdevice *dev, spx_device_info *o) {
  size_t total = 0;
  int v;
  memset(o, 0, sizeof *o);
  o->ordinal = ordinal;
  SPX__CU_TRY(cu->cuDeviceGet(dev, ordinal));
  SPX__CU_TRY(cu->cuDeviceGetName(o->name, (int)sizeof o->name, *dev));
  o->name[sizeof o->name - 1] = 0;
#define SPX__DEVICE_ATTR_GET(field, attr)                                              \
  v = 0;                                                                               \
  if (cu->cuDeviceGetAttribute(&v, SPX__CU_DEVICE_ATTRIBUTE_##attr, *dev) != SPX__CUDA_SUCCESS) v = 0; \
  o->field = v;
  SPX__DEVICE_ATTRS(SPX__DEVICE_ATTR_GET)
#undef SPX__DEVICE_ATTR_GET
  SPX__CU_TRY(cu->cuDeviceTotalMem(&total, *dev));
  o->total_mem = (int64_t)total;
  o->peak_bandwidth_gbs = 2.0 * o->mem_clock_khz * 1e3 * (o->mem_bus_width / 8.0) / 1e9;
  o->driver_version = spx__ld.driver_version;
  return SPX_OK;
}

static atomic_llong spx__free_mem_reads; /* tests see which calls ask the driver */

/* Free device memory, read inside the (retained) primary context `ctx`. */
spx_status spx__free_mem(const spx__cuda_api *cu, spx__CUcontext ctx, int64_t *out) {
  size_t fr = 0, tot = 0;
  spx__CUcontext old;
  spx_status s;
  atomic_fetch_add(&spx__free_mem_reads, 1);
  SPX__CU_TRY(cu->cuCtxPushCurrent(ctx));
  s = spx__cu_check(cu->cuMemGetInfo(&fr, &tot), "cuMemGetInfo");
  cu->cuCtxPopCurrent(&old);
  *out = (int64_t)fr;
  return s;
}

long long spx__free_mem_count(void) { return atomic_load(&spx__free_mem_reads); }

/* The library versions every device_info carries (loading NVRTC and cuSPARSE if needed). */
void spx__lib_versions(spx_device_info *o) {
  spx__lib_get(SPX_LIB_CUDA);
  o->driver_version = spx__ld.driver_version;
  if (spx__nvrtc()) {
    o->nvrtc_major = spx__ld.nvrtc_major;
    o->nvrtc_minor = spx__ld.nvrtc_minor;
  }
  if (spx__cusparse()) o->cusparse_version = spx__ld.cusparse_version;
}

spx_status spx__check_ordinal(int ordinal, char *why, size_t len) {
  int n = spx_device_count();
  if (n == 0) {
    spx__no_gpu_reason(why, len);
    return spx__fail(SPX_NOT_AVAILABLE, "no CUDA device to use: %s", why);
  }
  if (ordinal < 0 || ordinal >= n)
    return spx__fail(SPX_INVALID_ARGUMENT, "CUDA device %d requested but this machine has %d (0..%d)",
                     ordinal, n, n - 1);
  return SPX_OK;
}

spx_status spx_device_info_get(int ordinal, spx_device_info *out) {
  const spx__cuda_api *cu;
  spx__CUdevice dev;
  spx__CUcontext ctx;
  char why[800];
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_info_get: out is NULL");
  memset(out, 0, sizeof *out);
  if ((s = spx__check_ordinal(ordinal, why, sizeof why))) return s;
  cu = spx__cuda();
  if ((s = spx__device_props(cu, ordinal, &dev, out))) return s;
  /* Free memory needs a context; the primary one costs nothing when already active. */
  SPX__CU_TRY(cu->cuDevicePrimaryCtxRetain(&ctx, dev));
  s = spx__free_mem(cu, ctx, &out->free_mem);
  cu->cuDevicePrimaryCtxRelease(dev);
  spx__lib_versions(out);
  return s;
}

spx_status spx_nvrtc_version(int *major, int *minor) {
  if (major) *major = 0;
  if (minor) *minor = 0;
  if (!spx__nvrtc())
    return spx__fail(SPX_NOT_AVAILABLE, "NVRTC is not available: %s", spx__libs[SPX_LIB_NVRTC].st.reason);
  if (major) *major = spx__ld.nvrtc_major;
  if (minor) *minor = spx__ld.nvrtc_minor;
  return SPX_OK;
}

spx_status spx_cusparse_version(int *version) {
  if (version) *version = 0;
  if (!spx__cusparse())
    return spx__fail(SPX_NOT_AVAILABLE, "cuSPARSE is not available: %s",
                     spx__libs[SPX_LIB_CUSPARSE].st.reason);
  if (version) *version = spx__ld.cusparse_version;
  return SPX_OK;
}

/* ---- NVRTC ------------------------------------------------------------------------------------ */
spx_status spx__nvrtc_compile(const char *src, const char *name, int nopts, const char *const *opts,
                              int cubin, void **image, size_t *size, char **log) {
  const spx__nvrtc_api *rt;
  spx__nvrtcProgram prog = NULL;
  spx__nvrtcResult r;
  size_t n = 0;
  char *lg = NULL, *img = NULL;
  spx_status s = SPX_OK;
  if (image) *image = NULL;
  if (size) *size = 0;
  if (log) *log = NULL;
  if (!src || !image || !size || nopts < 0 || (nopts > 0 && !opts))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx__nvrtc_compile: NULL or negative argument");
  if (!name) name = "spx_kernel.cu";
  if (!(rt = spx__nvrtc()))
    return spx__fail(SPX_NOT_AVAILABLE, "cannot compile %s: NVRTC is not available: %s", name,
                     spx__libs[SPX_LIB_NVRTC].st.reason);
  if ((r = rt->nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL)) != SPX__NVRTC_SUCCESS)
    return spx__nvrtc_check(r, "nvrtcCreateProgram");
  r = rt->nvrtcCompileProgram(prog, nopts, opts);
  if (rt->nvrtcGetProgramLogSize(prog, &n) == SPX__NVRTC_SUCCESS && n > 0 &&
      (lg = (char *)spx__alloc(n + 1, 1)) != NULL) {
    if (rt->nvrtcGetProgramLog(prog, lg) != SPX__NVRTC_SUCCESS) lg[0] = 0;
    lg[n] = 0;
    while (n > 0 && (lg[n - 1] == '\n' || lg[n - 1] == ' ' || lg[n - 1] == 0)) lg[--n] = 0;
  }
  if (r != SPX__NVRTC_SUCCESS) {
    char optstr[256] = "";
    size_t k, used = 0;
    for (k = 0; k < (size_t)nopts && used + 1 < sizeof optstr; k++)
      used += (size_t)snprintf(optstr + used, sizeof optstr - used, "%s%s", k ? " " : "", opts[k]);
    s = spx__fail(SPX_NVRTC, "NVRTC could not compile %s (options: %s): %s:\n%s", name, optstr,
                  rt->nvrtcGetErrorString(r), lg && lg[0] ? lg : "(no log)");
    goto done;
  }
  n = 0;
  r = cubin ? rt->nvrtcGetCUBINSize(prog, &n) : rt->nvrtcGetPTXSize(prog, &n);
  if (r != SPX__NVRTC_SUCCESS) {
    s = spx__nvrtc_check(r, cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize");
    goto done;
  }
  if (n == 0) {
    s = spx__fail(SPX_NVRTC, "NVRTC made no %s for %s (a CUBIN needs --gpu-architecture=sm_XY)",
                  cubin ? "CUBIN" : "PTX", name);
    goto done;
  }
  if (!(img = (char *)spx__alloc(n, 1))) {
    s = SPX_OUT_OF_MEMORY;
    goto done;
  }
  r = cubin ? rt->nvrtcGetCUBIN(prog, img) : rt->nvrtcGetPTX(prog, img);
  if (r != SPX__NVRTC_SUCCESS) {
    s = spx__nvrtc_check(r, cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX");
    SPX_FREE(img);
    img = NULL;
    goto done;
  }
  *image = img;
  *size = n;
done:
  rt->nvrtcDestroyProgram(&prog);
  if (log) {
    *log = lg ? lg : spx__strdup("");
    lg = NULL;
  }
  SPX_FREE(lg);
  return s;
}

spx_status spx__nvrtc_arch(int major, int minor, char *opt, size_t len, int *cubin) {
  const spx__nvrtc_api *rt = spx__nvrtc();
  int n = 0, i, want = major * 10 + minor, best = 0, *archs;
  spx__nvrtcResult r;
  if (!opt || !len || !cubin || major < 0 || minor < 0 || minor > 9)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx__nvrtc_arch: bad argument");
  opt[0] = 0;
  *cubin = 0;
  if (!rt)
    return spx__fail(SPX_NOT_AVAILABLE, "NVRTC is not available: %s", spx__libs[SPX_LIB_NVRTC].st.reason);
  if ((r = rt->nvrtcGetNumSupportedArchs(&n)) != SPX__NVRTC_SUCCESS)
    return spx__nvrtc_check(r, "nvrtcGetNumSupportedArchs");
  if (!(archs = (int *)spx__alloc((size_t)(n > 0 ? n : 1), sizeof *archs))) return SPX_OUT_OF_MEMORY;
  if ((r = rt->nvrtcGetSupportedArchs(archs)) != SPX__NVRTC_SUCCESS) {
    SPX_FREE(archs);
    return spx__nvrtc_check(r, "nvrtcGetSupportedArchs");
  }
  for (i = 0; i < n; i++) {
    if (archs[i] == want) best = want;
    if (archs[i] < want && archs[i] > best && best != want) best = archs[i];
  }
  SPX_FREE(archs);
  if (!best)
    return spx__fail(SPX_UNSUPPORTED, "NVRTC %d.%d cannot compile for sm_%d (compute capability %d.%d "
                     "is older than any it supports)", spx__ld.nvrtc_major, spx__ld.nvrtc_minor, want,
                     major, minor);
  *cubin = best == want;
  snprintf(opt, len, "--gpu-architecture=%s_%d", *cubin ? "sm" : "compute", best);
  return SPX_OK;
}

/* ---- Contexts' driver side: push/pop, the fallback notice ------------------------------------- */
/* The one-per-process notice that AUTO fell back to the host. */
void spx__fallback_notice(const char *why) {
  int expected = 0;
  if (atomic_compare_exchange_strong(&spx__notices, &expected, 1))
    spx__warn("%s; using the host backend", why);
}

spx_status spx__ctx_push(const spx_context *ctx) {
  const spx__cuda_api *cu = spx__cuda();
  if (!ctx || ctx->backend != SPX_BACKEND_CUDA || !cu)
    return spx__fail(SPX_INVALID_ARGUMENT, "not a CUDA context");
  return spx__cu_check(cu->cuCtxPushCurrent(ctx->cu_ctx), "cuCtxPushCurrent");
}

void spx__ctx_pop(const spx_context *ctx) {
  const spx__cuda_api *cu = spx__cuda();
  spx__CUcontext old;
  if (ctx && ctx->backend == SPX_BACKEND_CUDA && cu) cu->cuCtxPopCurrent(&old);
}
