/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/jit.h: keys, the in-memory table, the disk cache, NVRTC and the driver.
 *
 * Locking: one process-wide rwlock guards the table of entries (key -> image, modules, kernel
 * handles, remembered failure) and the small memos (device archs, joined sources, retained
 * contexts). A hit takes the read lock once. NVRTC and disk I/O run with no lock held; module
 * loads run under the write lock (once per kernel and device). Between processes nothing is
 * locked: entries are written whole to a temporary file and renamed into place. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"
#include "config.h"
#include "cuda_types.h"
#include "../jit.h"
#include "../version.h"
#include "templates_gen.h"

#define SPX__JIT_FORMAT 1u          /* entry format; SPX_JIT_CACHE_SUBDIR says it too */
#define SPX__JIT_HEADER 128         /* bytes before the payload */
#define SPX__JIT_MAX_DEFINES 256
#define SPX__JIT_MAX_DEFINE_LEN 512
#define SPX__JIT_MAX_PAYLOAD ((uint64_t)1 << 30)
#define SPX__JIT_DEFAULT_CAP_MB 512.0
#define SPX__JIT_TMP_PREFIX ".tmp-"
#define SPX__JIT_STALE_TMP_S 3600   /* a temporary file this old was left by a writer that died */
#define SPX__JIT_MAX_ARCHS 32

/* NVRTC options of every compile besides -D and --gpu-architecture. ORDER: part of the key. */
static const char *const spx__jit_options[] = {"--std=c++17"};
#define SPX__JIT_NOPTIONS ((int)(sizeof spx__jit_options / sizeof spx__jit_options[0]))

/* ---- Hashing ---------------------------------------------------------------------------------- */
static uint64_t spx__jit_mix64(uint64_t x) { /* splitmix64's finalizer: a bijection, full avalanche */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* 64-bit hash of n bytes, word at a time. For identity, not security: distinct inputs do not
 * collide by accident, and two seeds give the two halves of a 128-bit key. */
static uint64_t spx__jit_hash64(const void *data, size_t n, uint64_t seed) {
  const unsigned char *p = (const unsigned char *)data;
  uint64_t h = spx__jit_mix64(seed ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull)), w;
  for (; n >= 8; n -= 8, p += 8) {
    memcpy(&w, p, 8);
    h ^= spx__jit_mix64(w ^ 0xa0761d6478bd642full);
    h = (h << 27 | h >> 37) * 0x9e3779b97f4a7c15ull + 0x52dce729u;
  }
  if (n) {
    w = 0;
    memcpy(&w, p, n);
    h ^= spx__jit_mix64(w ^ 0xe7037ed1a0b428dbull);
    h = (h << 27 | h >> 37) * 0x9e3779b97f4a7c15ull + 0x52dce729u;
  }
  return spx__jit_mix64(h);
}

/* ---- State ------------------------------------------------------------------------------------ */
typedef struct spx__jit_key {
  uint64_t hi, lo;
} spx__jit_key;

typedef struct spx__jit_fn {
  int device;
  char *name;
  spx__CUfunction fn;
} spx__jit_fn;

typedef struct spx__jit_mod {
  int device;
  spx__CUmodule mod;
} spx__jit_mod;

typedef struct spx__jit_entry {
  spx__jit_key key;
  void *image;             /* CUBIN or NUL-terminated PTX; NULL until compiled or read */
  size_t size;
  int cubin;
  spx_status fail_status;  /* a remembered compile failure (fail_msg != NULL) */
  char *fail_msg;
  spx__jit_mod *mods;      /* one per device it is loaded on */
  int nmods;
  spx__jit_fn *fns;        /* handles handed out, per device and kernel name */
  int nfns;
} spx__jit_entry;

/* A device whose primary context spx retains while modules live in it. */
typedef struct spx__jit_dev {
  int device;
  spx__CUdevice cu_device;
  spx__CUcontext cu_ctx;
} spx__jit_dev;

static pthread_rwlock_t spx__jit_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct {
  spx__jit_entry **slots; /* open addressing, linear probing; cap is a power of two */
  size_t cap, count;
  struct { int cc; char arch[32]; } archs[SPX__JIT_MAX_ARCHS]; /* compute capability -> arch */
  int narchs;
  spx__jit_dev *devs;
  int ndevs;
  char *joined[SPX__TEMPLATE_COUNT]; /* sources of templates stored in several chunks */
} spx__jit;

static struct {
  atomic_llong mem_hits, disk_hits, misses, compiles, compile_failures, disk_writes, disk_corrupt,
      evictions, compile_ns, load_ns, read_ns;
  atomic_llong scanned;              /* 1 once a scan filled the two below */
  atomic_llong disk_bytes, disk_entries;
} spx__jit_st;

static void spx__jit_scanned(int64_t bytes, int64_t entries) {
  atomic_store(&spx__jit_st.disk_bytes, bytes);
  atomic_store(&spx__jit_st.disk_entries, entries);
  atomic_store(&spx__jit_st.scanned, 1);
}

static void spx__jit_add_ns(atomic_llong *c, double t0) {
  atomic_fetch_add(c, (long long)((spx__now() - t0) * 1e9));
}

/* ---- Templates -------------------------------------------------------------------------------- */
static int spx__jit_template_index(const char *name) {
  int i;
  for (i = 0; i < SPX__TEMPLATE_COUNT; i++)
    if (!strcmp(spx__templates[i].name, name)) return i;
  return -1;
}

static spx_status spx__jit_template(const char *name, int *index) {
  char list[256] = "";
  size_t used = 0;
  int i;
  if (!name) return spx__fail(SPX_INVALID_ARGUMENT, "JIT: template name is NULL");
  if ((*index = spx__jit_template_index(name)) >= 0) return SPX_OK;
  for (i = 0; i < SPX__TEMPLATE_COUNT && used + 1 < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", spx__templates[i].name);
  return spx__fail(SPX_INVALID_ARGUMENT, "JIT: no template '%s' (there are: %s)", name, list);
}

/* The whole source of template i; sources longer than one chunk are joined once. */
static const char *spx__jit_source(int i) {
  const spx__template *t = &spx__templates[i];
  char *s;
  int k;
  size_t used = 0, n;
  if (t->nchunks == 1) return t->chunks[0];
  pthread_rwlock_wrlock(&spx__jit_lock);
  if (!(s = spx__jit.joined[i]) && (s = (char *)spx__alloc(t->size + 1, 1)) != NULL) {
    for (k = 0; k < t->nchunks; k++) {
      n = strlen(t->chunks[k]);
      memcpy(s + used, t->chunks[k], n);
      used += n;
    }
    s[used] = 0;
    spx__jit.joined[i] = s;
  }
  pthread_rwlock_unlock(&spx__jit_lock);
  return s;
}

int spx_jit_template_count(void) { return SPX__TEMPLATE_COUNT; }

const char *spx_jit_template_name(int i) {
  return i >= 0 && i < SPX__TEMPLATE_COUNT ? spx__templates[i].name : NULL;
}

spx_status spx_jit_template_source(const char *name, const char **source, size_t *size, uint64_t *hash) {
  int i;
  const char *s;
  spx_status st;
  if (source) *source = NULL;
  if ((st = spx__jit_template(name, &i))) return st;
  if (!(s = spx__jit_source(i))) return SPX_OUT_OF_MEMORY;
  if (source) *source = s;
  if (size) *size = spx__templates[i].size;
  if (hash) *hash = spx__templates[i].hash;
  return SPX_OK;
}

/* ---- Defines and keys ------------------------------------------------------------------------- */
/* Orders "NAME=value" by name, then value, so that one macro's definitions sit side by side. */
static int spx__jit_def_cmp(const char *a, const char *b) {
  size_t la = strcspn(a, "="), lb = strcspn(b, "=");
  int c = strncmp(a, b, la < lb ? la : lb);
  if (c) return c;
  if (la != lb) return la < lb ? -1 : 1;
  return strcmp(a + la, b + lb);
}

static spx_status spx__jit_def_check(const char *d, int i) {
  size_t n, k, len;
  if (!d) return spx__fail(SPX_INVALID_ARGUMENT, "JIT: define %d is NULL", i);
  n = strcspn(d, "=");
  len = strlen(d);
  if (strncmp(d, "SPX_", 4) != 0 || n < 4)
    return spx__fail(SPX_INVALID_ARGUMENT,
                     "JIT: define '%.100s' lacks the SPX_ prefix: specialization constants must be "
                     "SPX_* macros (-DT=float breaks NVRTC's built-in headers)", d);
  if (n == 4) return spx__fail(SPX_INVALID_ARGUMENT, "JIT: define '%.100s' has no name after SPX_", d);
  if (len > SPX__JIT_MAX_DEFINE_LEN)
    return spx__fail(SPX_INVALID_ARGUMENT, "JIT: define '%.60s...' is longer than %d characters", d,
                     SPX__JIT_MAX_DEFINE_LEN);
  for (k = 4; k < n; k++) {
    char c = d[k];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return spx__fail(SPX_INVALID_ARGUMENT, "JIT: define '%.100s': a macro name has letters, digits "
                       "and '_' only", d);
  }
  for (k = n; k < len; k++)
    if ((unsigned char)d[k] < 0x20 || d[k] == 0x7f)
      return spx__fail(SPX_INVALID_ARGUMENT, "JIT: define '%.100s' has a control character", d);
  return SPX_OK;
}

/* Checks the defines and sorts pointers to them into `out` (SPX__JIT_MAX_DEFINES long). */
static spx_status spx__jit_defines(int nd, const char *const *defs, const char **out) {
  int i, j;
  spx_status s;
  if (nd < 0 || nd > SPX__JIT_MAX_DEFINES || (nd > 0 && !defs))
    return spx__fail(SPX_INVALID_ARGUMENT, "JIT: %d defines%s (0..%d, non-NULL array)", nd,
                     nd > 0 && !defs ? " with a NULL array" : "", SPX__JIT_MAX_DEFINES);
  for (i = 0; i < nd; i++) {
    const char *d = defs[i];
    if ((s = spx__jit_def_check(d, i))) return s;
    for (j = i; j > 0 && spx__jit_def_cmp(out[j - 1], d) > 0; j--) out[j] = out[j - 1];
    out[j] = d;
  }
  for (i = 1; i < nd; i++)
    if (strcspn(out[i], "=") == strcspn(out[i - 1], "=") &&
        !strncmp(out[i], out[i - 1], strcspn(out[i], "=")))
      return spx__fail(SPX_INVALID_ARGUMENT, "JIT: macro %.*s is defined twice ('%.80s' and '%.80s')",
                       (int)strcspn(out[i], "="), out[i], out[i - 1], out[i]);
  return SPX_OK;
}

/* Appends "len:bytes;" so that no two field lists serialize alike. */
static void spx__jit_kput(char *buf, size_t *used, const char *s) {
  size_t n = strlen(s);
  *used += (size_t)sprintf(buf + *used, "%zu:", n);
  memcpy(buf + *used, s, n);
  *used += n;
  buf[(*used)++] = ';';
}

static spx_status spx__jit_key_make(const spx_jit_key_inputs *in, spx__jit_key *key) {
  const char *sorted[SPX__JIT_MAX_DEFINES];
  char local[2048], num[64], *buf = local;
  size_t need = 256, used = 0;
  int i;
  spx_status s;
  if (!in || !key || !in->template_name || !in->spx_version || in->noptions < 0 ||
      (in->noptions > 0 && !in->options) || !memchr(in->arch, 0, sizeof in->arch) || !in->arch[0])
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_jit_key_compute: NULL, empty or negative input");
  if ((s = spx__jit_defines(in->ndefines, in->defines, sorted))) return s;
  for (i = 0; i < in->noptions; i++) {
    if (!in->options[i]) return spx__fail(SPX_INVALID_ARGUMENT, "spx_jit_key_compute: option %d is NULL", i);
    need += strlen(in->options[i]) + 24;
  }
  for (i = 0; i < in->ndefines; i++) need += strlen(sorted[i]) + 24;
  need += strlen(in->template_name) + strlen(in->spx_version) + strlen(in->arch) + 6 * 24;
  if (need > sizeof local && !(buf = (char *)spx__alloc(need, 1))) return SPX_OUT_OF_MEMORY;
  spx__jit_kput(buf, &used, "spx-jit-key/1");
  spx__jit_kput(buf, &used, in->template_name);
  snprintf(num, sizeof num, "%016llx", (unsigned long long)in->template_hash);
  spx__jit_kput(buf, &used, num);
  spx__jit_kput(buf, &used, in->arch);
  snprintf(num, sizeof num, "nvrtc %d.%d", in->nvrtc_major, in->nvrtc_minor);
  spx__jit_kput(buf, &used, num);
  spx__jit_kput(buf, &used, in->spx_version);
  snprintf(num, sizeof num, "%d options", in->noptions);
  spx__jit_kput(buf, &used, num);
  for (i = 0; i < in->noptions; i++) spx__jit_kput(buf, &used, in->options[i]);
  snprintf(num, sizeof num, "%d defines", in->ndefines);
  spx__jit_kput(buf, &used, num);
  for (i = 0; i < in->ndefines; i++) spx__jit_kput(buf, &used, sorted[i]);
  key->hi = spx__jit_hash64(buf, used, 0x243f6a8885a308d3ull); /* digits of pi: any two seeds */
  key->lo = spx__jit_hash64(buf, used, 0x13198a2e03707344ull);
  if (buf != local) SPX_FREE(buf);
  return SPX_OK;
}

static void spx__jit_hex(spx__jit_key k, char hex[33]) {
  snprintf(hex, 33, "%016llx%016llx", (unsigned long long)k.hi, (unsigned long long)k.lo);
}

spx_status spx_jit_key_compute(const spx_jit_key_inputs *in, char hex[33]) {
  spx__jit_key k;
  spx_status s;
  if (!hex) return spx__fail(SPX_INVALID_ARGUMENT, "spx_jit_key_compute: hex is NULL");
  hex[0] = 0;
  if ((s = spx__jit_key_make(in, &k))) return s;
  spx__jit_hex(k, hex);
  return SPX_OK;
}

/* ---- Architectures ---------------------------------------------------------------------------- */
/* "sm_90", "sm_90a", "compute_90": *cubin = 1 for sm_ (NVRTC checks that it knows the number). */
static spx_status spx__jit_arch_check(const char *arch, int *cubin) {
  const char *p;
  size_t digits;
  if (!arch) return spx__fail(SPX_INVALID_ARGUMENT, "JIT: arch is NULL");
  if (!strncmp(arch, "sm_", 3)) { *cubin = 1; p = arch + 3; }
  else if (!strncmp(arch, "compute_", 8)) { *cubin = 0; p = arch + 8; }
  else p = NULL;
  digits = p ? strspn(p, "0123456789") : 0;
  if (!p || digits < 2 || digits > 3 || (p[digits] && (p[digits] < 'a' || p[digits] > 'z' || p[digits + 1])))
    return spx__fail(SPX_INVALID_ARGUMENT, "JIT: architecture '%.40s' is not sm_XY[a] or compute_XY[a] "
                     "(e.g. sm_90)", arch);
  return SPX_OK;
}

/* The arch spx compiles for on a device of compute capability major.minor, memoized. */
spx_status spx__jit_device_arch(int major, int minor, char arch[32]) {
  char opt[64];
  const char *eq;
  int cc = major * 10 + minor, i, cubin;
  spx_status s;
  pthread_rwlock_rdlock(&spx__jit_lock);
  for (i = 0; i < spx__jit.narchs; i++)
    if (spx__jit.archs[i].cc == cc) {
      memcpy(arch, spx__jit.archs[i].arch, 32);
      pthread_rwlock_unlock(&spx__jit_lock);
      return SPX_OK;
    }
  pthread_rwlock_unlock(&spx__jit_lock);
  if ((s = spx__nvrtc_arch(major, minor, opt, sizeof opt, &cubin))) return s;
  eq = strchr(opt, '=');
  snprintf(arch, 32, "%.31s", eq ? eq + 1 : opt);
  pthread_rwlock_wrlock(&spx__jit_lock);
  if (spx__jit.narchs < SPX__JIT_MAX_ARCHS) {
    spx__jit.archs[spx__jit.narchs].cc = cc;
    memcpy(spx__jit.archs[spx__jit.narchs++].arch, arch, 32);
  }
  pthread_rwlock_unlock(&spx__jit_lock);
  return SPX_OK;
}

/* Device 0's arch, for compile-only requests that name none. */
static spx_status spx__jit_device0_arch(char arch[32]) {
  const spx__cuda_api *cu = spx__cuda();
  spx__CUdevice dev;
  int major = 0, minor = 0;
  if (!cu || spx_device_count() == 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "JIT: no GPU here to take the architecture from; name one "
                     "(e.g. sm_90)");
  SPX__CU_TRY(cu->cuDeviceGet(&dev, 0));
  SPX__CU_TRY(cu->cuDeviceGetAttribute(&major, SPX__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  SPX__CU_TRY(cu->cuDeviceGetAttribute(&minor, SPX__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  return spx__jit_device_arch(major, minor, arch);
}

/* The key inputs for template index ti (arch already chosen). */
static spx_status spx__jit_inputs(int ti, int nd, const char *const *defs, const char *arch,
                                  spx_jit_key_inputs *in) {
  spx_status s;
  memset(in, 0, sizeof *in);
  in->template_name = spx__templates[ti].name;
  in->template_hash = spx__templates[ti].hash;
  in->ndefines = nd;
  in->defines = defs;
  snprintf(in->arch, sizeof in->arch, "%s", arch);
  in->noptions = SPX__JIT_NOPTIONS;
  in->options = spx__jit_options;
  in->spx_version = SPX_VERSION_STRING;
  if ((s = spx_nvrtc_version(&in->nvrtc_major, &in->nvrtc_minor)))
    return spx__wrap(s, "JIT: cannot compile template %s", in->template_name);
  return SPX_OK;
}

spx_status spx_jit_key_describe(const char *template_name, int ndefines, const char *const *defines,
                                const char *arch, spx_jit_key_inputs *out) {
  char a[32];
  int ti, cubin;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_jit_key_describe: out is NULL");
  memset(out, 0, sizeof *out);
  if ((s = spx__jit_template(template_name, &ti))) return s;
  if (arch) {
    if ((s = spx__jit_arch_check(arch, &cubin))) return s;
    snprintf(a, sizeof a, "%s", arch);
  } else if ((s = spx__jit_device0_arch(a))) {
    return s;
  }
  return spx__jit_inputs(ti, ndefines, defines, a, out);
}

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

/* ---- The disk cache --------------------------------------------------------------------------- */
/* The cache directory (not the versioned subdirectory); 0 when the disk cache is off. */
static int spx__jit_root(char *root, size_t len) {
  const spx__config *cfg = spx__cfg();
  const char *off = cfg->cache, *d = cfg->cache_dir, *x = cfg->xdg_cache_home, *h = cfg->home;
  int n;
  root[0] = 0;
  if (off && (!strcmp(off, "off") || !strcmp(off, "0") || !strcmp(off, "no") || !strcmp(off, "false") ||
              !strcmp(off, "OFF")))
    return 0;
  if (d && *d) n = snprintf(root, len, "%s", d);
  else if (x && x[0] == '/') n = snprintf(root, len, "%s/spx", x); /* XDG: relative paths are invalid */
  else if (h && *h) n = snprintf(root, len, "%s/.cache/spx", h);
  else return 0;
  if (n < 0 || (size_t)n + 48 >= len) { /* room for /v1/<key> and a temporary suffix */
    root[0] = 0;
    return 0;
  }
  return 1;
}

/* The entry directory (root/SPX_JIT_CACHE_SUBDIR) whatever its verdict; 0 when the disk cache is off. */
static int spx__jit_subdir(char *dir, size_t len) {
  char root[1024];
  if (!spx__jit_root(root, sizeof root)) return 0;
  return snprintf(dir, len, "%s/%s", root, SPX_JIT_CACHE_SUBDIR) < (int)len;
}

const char *spx_jit_cache_dir(void) {
  static SPX__THREAD_LOCAL char root[1024];
  return spx__jit_root(root, sizeof root) ? root : NULL;
}

/* ---- Trust ------------------------------------------------------------------------------------
 * The disk cache holds code the GPU runs, and its checksums (public seeds) catch accidents, not
 * forgeries. So the cache directory and its entry directory must each be a directory (not a
 * symbolic link) owned by the effective user and writable by nobody else; otherwise the process
 * runs on the memory cache alone, as with SPX_CACHE=off, after one notice. A directory not yet
 * there is fine: spx__jit_mkdirs creates it 0700 and it is checked again before the first write.
 * Each entry is checked too, on its open descriptor (spx__jit_disk_read). */
enum { SPX__JIT_DIR_UNKNOWN = 0, SPX__JIT_DIR_OK, SPX__JIT_DIR_ABSENT, SPX__JIT_DIR_REFUSED };
#define SPX__JIT_NVERDICTS 8

/* Verdicts per entry-directory path for the process (SPX_CACHE_DIR may change between calls; a
 * refused directory keeps its verdict, so its notice is printed once). */
static pthread_mutex_t spx__jit_trust_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char dir[1100];
  int verdict; /* SPX__JIT_DIR_* */
} spx__jit_verdicts[SPX__JIT_NVERDICTS];
static int spx__jit_verdict_next;

/* Mode bits that let someone else than the owner change a file or a directory's names. */
#define SPX__JIT_OTHERS_WRITE ((mode_t)(S_IWGRP | S_IWOTH))

static const char *spx__jit_writers(mode_t m) {
  return (m & S_IWOTH) ? "others" : "its group";
}

/* One directory: SPX__JIT_DIR_OK, _ABSENT, or _REFUSED with `why`. */
static int spx__jit_dir_check(const char *dir, char *why, size_t wlen) {
  struct stat st;
  if (lstat(dir, &st) != 0) {
    if (errno == ENOENT) return SPX__JIT_DIR_ABSENT;
    snprintf(why, wlen, "cannot be examined (%s)", strerror(errno));
  } else if (S_ISLNK(st.st_mode)) {
    snprintf(why, wlen, "is a symbolic link");
  } else if (!S_ISDIR(st.st_mode)) {
    snprintf(why, wlen, "is not a directory");
  } else if (st.st_uid != geteuid()) {
    snprintf(why, wlen, "is owned by uid %u, not by this process's user (uid %u)", (unsigned)st.st_uid,
             (unsigned)geteuid());
  } else if (st.st_mode & SPX__JIT_OTHERS_WRITE) {
    snprintf(why, wlen, "is writable by %s (mode %04o)", spx__jit_writers(st.st_mode),
             (unsigned)(st.st_mode & 07777));
  } else {
    return SPX__JIT_DIR_OK;
  }
  return SPX__JIT_DIR_REFUSED;
}

/* Whether the disk cache in entry directory dir may be used (its parent, the cache directory, is
 * checked with it). A kept verdict is reused, except that one saying "absent" is checked again
 * unless `kept_absent_ok` (spx_jit_stats_get: no I/O once a path has a verdict). */
static int spx__jit_trusted(const char *dir, int kept_absent_ok) {
  char root[1100], why[160];
  const char *bad = dir, *slash = strrchr(dir, '/');
  int i, v, slot = -1;
  pthread_mutex_lock(&spx__jit_trust_lock);
  for (i = 0; i < SPX__JIT_NVERDICTS && slot < 0; i++)
    if (spx__jit_verdicts[i].verdict != SPX__JIT_DIR_UNKNOWN && !strcmp(spx__jit_verdicts[i].dir, dir)) slot = i;
  if (slot >= 0 && (spx__jit_verdicts[slot].verdict != SPX__JIT_DIR_ABSENT || kept_absent_ok)) {
    v = spx__jit_verdicts[slot].verdict;
    pthread_mutex_unlock(&spx__jit_trust_lock);
    return v != SPX__JIT_DIR_REFUSED;
  }
  snprintf(root, sizeof root, "%.*s", slash && slash > dir ? (int)(slash - dir) : (int)strlen(dir), dir);
  for (i = (int)strlen(root); i > 1 && root[i - 1] == '/'; i--) root[i - 1] = 0; /* "d/" would follow a link */
  if ((v = spx__jit_dir_check(root, why, sizeof why)) == SPX__JIT_DIR_REFUSED) bad = root;
  else if (v == SPX__JIT_DIR_OK) v = spx__jit_dir_check(dir, why, sizeof why);
  if (slot < 0 && strlen(dir) < sizeof spx__jit_verdicts[0].dir) {
    slot = spx__jit_verdict_next;
    spx__jit_verdict_next = (spx__jit_verdict_next + 1) % SPX__JIT_NVERDICTS;
    memcpy(spx__jit_verdicts[slot].dir, dir, strlen(dir) + 1);
  }
  if (slot >= 0) spx__jit_verdicts[slot].verdict = v;
  if (v == SPX__JIT_DIR_REFUSED)
    spx__warn("JIT cache directory %s %s; running without the disk cache (GPU code is loaded from it: it must "
              "be this user's directory, writable by nobody else)", bad, why);
  pthread_mutex_unlock(&spx__jit_trust_lock);
  return v != SPX__JIT_DIR_REFUSED;
}

/* The entry directory when the disk cache is on and its directories pass spx__jit_trusted. */
static int spx__jit_disk_dir(char *dir, size_t len, int kept_absent_ok) {
  return spx__jit_subdir(dir, len) && spx__jit_trusted(dir, kept_absent_ok);
}

/* Opens directory `dir` for listing without following a symbolic link in its place. */
static DIR *spx__jit_opendir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e;
  DIR *d;
  if (fd < 0) return NULL;
  if (!(d = fdopendir(fd))) {
    e = errno;
    close(fd);
    errno = e;
  }
  return d;
}

/* Whether `name` in the open directory d is a regular file of this user: what spx may remove
 * (spx_jit_clear, spx_jit_forget, eviction); *st receives its status. Symbolic links are not followed. */
static int spx__jit_is_mine(DIR *d, const char *name, struct stat *st) {
  return fstatat(dirfd(d), name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

static double spx__jit_cap_mb(void) {
  static atomic_int warned;
  const char *e = spx__cfg()->cache_max_mb;
  char *end;
  double v;
  if (!e || !*e) return SPX__JIT_DEFAULT_CAP_MB;
  v = strtod(e, &end);
  if (*end || !(v > 0) || v > 1e12) {
    if (!atomic_exchange(&warned, 1))
      spx__warn("SPX_CACHE_MAX_MB=%s is not a positive number of MiB; using %.0f", e, SPX__JIT_DEFAULT_CAP_MB);
    return SPX__JIT_DEFAULT_CAP_MB;
  }
  return v;
}

static void spx__jit_put32(unsigned char *p, uint32_t v) {
  int i;
  for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void spx__jit_put64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t spx__jit_get32(const unsigned char *p) {
  uint32_t v = 0;
  int i;
  for (i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint64_t spx__jit_get64(const unsigned char *p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Entry header, little-endian. ORDER: fixed by SPX__JIT_FORMAT; a change needs a new format
 * number and SPX_JIT_CACHE_SUBDIR.
 *  _(field,          offset, bytes) */
#define SPX__JIT_HDR(_)          \
  _(MAGIC,            0,   8)    \
  _(FORMAT,           8,   4)    \
  _(KIND,             12,  4)    /* 1 CUBIN, 2 PTX */ \
  _(KEY_HI,           16,  8)    \
  _(KEY_LO,           24,  8)    \
  _(PAYLOAD_SIZE,     32,  8)    \
  _(PAYLOAD_HASH,     40,  8)    \
  _(TEMPLATE,         48,  40)   /* NUL-padded, for people listing the directory */ \
  _(ARCH,             88,  24)   \
  _(NVRTC_MAJOR,      112, 4)    \
  _(NVRTC_MINOR,      116, 4)    \
  _(HEADER_HASH,      120, 8)    /* of bytes 0..119 */
#define SPX__JIT_HDR_ENUM(f, off, n) SPX__JH_##f = off,
enum { SPX__JIT_HDR(SPX__JIT_HDR_ENUM) SPX__JH_END = SPX__JIT_HEADER };
#undef SPX__JIT_HDR_ENUM
static const char spx__jit_magic[8] = {'S', 'P', 'X', 'J', 'I', 'T', 'C', '\n'};
#define SPX__JIT_SEED_PAYLOAD 0x452821e638d01377ull
#define SPX__JIT_SEED_HEADER 0xbe5466cf34e90c6cull

static int spx__jit_read_all(int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}

static int spx__jit_write_all(int fd, const void *buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    ssize_t r = write(fd, (const char *)buf + put, n - put);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    put += (size_t)r;
  }
  return 1;
}

/* What spx__jit_disk_read found. */
enum {
  SPX__JIT_READ_FOREIGN = -3, /* another user's file: not used, and left alone */
  SPX__JIT_READ_UNSAFE = -2,  /* this user's, but writable by others: not used, replaced */
  SPX__JIT_READ_BAD = -1,     /* corrupt, truncated, another key or format, not a regular file */
  SPX__JIT_READ_ABSENT = 0,
  SPX__JIT_READ_OK = 1
};

/* Reads entry `path` for key k: SPX__JIT_READ_OK with *image allocated, or what was wrong (`why`
 * says it). A FIFO, device or symbolic link in an entry's place is refused without blocking or
 * following it; a file another user could have written is refused as if absent. */
static int spx__jit_disk_read(const char *path, spx__jit_key k, void **image, size_t *size, int *cubin,
                              char *why, size_t wlen) {
  unsigned char h[SPX__JIT_HEADER];
  struct stat st;
  uint64_t n;
  uint32_t kind = 0;
  void *img = NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC), ok = SPX__JIT_READ_BAD, fl;
  *image = NULL;
  if (fd < 0) {
    if (errno == ENOENT) return SPX__JIT_READ_ABSENT;
    if (errno == ELOOP || errno == EMLINK) snprintf(why, wlen, "a symbolic link"); /* O_NOFOLLOW */
    else snprintf(why, wlen, "unreadable (%s)", strerror(errno));
    return SPX__JIT_READ_BAD;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, wlen, "not a regular file");
  } else if (st.st_uid != geteuid()) {
    snprintf(why, wlen, "owned by uid %u, not by this process's user (uid %u)", (unsigned)st.st_uid,
             (unsigned)geteuid());
    ok = SPX__JIT_READ_FOREIGN;
  } else if (st.st_mode & SPX__JIT_OTHERS_WRITE) {
    snprintf(why, wlen, "writable by %s (mode %04o)", spx__jit_writers(st.st_mode), (unsigned)(st.st_mode & 07777));
    ok = SPX__JIT_READ_UNSAFE;
  } else if ((fl = fcntl(fd, F_GETFL)) < 0 || ((fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)) {
    snprintf(why, wlen, "unreadable (%s)", strerror(errno));
  } else if ((uint64_t)st.st_size < SPX__JIT_HEADER || !spx__jit_read_all(fd, h, sizeof h)) {
    snprintf(why, wlen, "truncated (%lld bytes, less than its header)", (long long)st.st_size);
  } else if (memcmp(h + SPX__JH_MAGIC, spx__jit_magic, 8)) {
    snprintf(why, wlen, "not an spx JIT cache entry");
  } else if (spx__jit_get64(h + SPX__JH_HEADER_HASH) != spx__jit_hash64(h, SPX__JH_HEADER_HASH, SPX__JIT_SEED_HEADER)) {
    snprintf(why, wlen, "corrupt (header checksum mismatch)");
  } else if (spx__jit_get32(h + SPX__JH_FORMAT) != SPX__JIT_FORMAT ||
             ((kind = spx__jit_get32(h + SPX__JH_KIND)) != 1 && kind != 2)) {
    snprintf(why, wlen, "of another format (%u)", (unsigned)spx__jit_get32(h + SPX__JH_FORMAT));
  } else if (spx__jit_get64(h + SPX__JH_KEY_HI) != k.hi || spx__jit_get64(h + SPX__JH_KEY_LO) != k.lo) {
    snprintf(why, wlen, "holding another key");
  } else if ((n = spx__jit_get64(h + SPX__JH_PAYLOAD_SIZE)) > SPX__JIT_MAX_PAYLOAD ||
             n != (uint64_t)st.st_size - SPX__JIT_HEADER) {
    snprintf(why, wlen, "truncated (%lld payload bytes where the header says %llu)",
             (long long)st.st_size - SPX__JIT_HEADER, (unsigned long long)n);
  } else if (!(img = spx__alloc((size_t)n, 1))) {
    snprintf(why, wlen, "too large to read (%llu bytes)", (unsigned long long)n);
  } else if (!spx__jit_read_all(fd, img, (size_t)n)) {
    snprintf(why, wlen, "truncated while reading");
  } else if (spx__jit_hash64(img, (size_t)n, SPX__JIT_SEED_PAYLOAD) != spx__jit_get64(h + SPX__JH_PAYLOAD_HASH)) {
    snprintf(why, wlen, "corrupt (payload checksum mismatch)");
  } else if (kind == 2 && (n == 0 || ((const char *)img)[n - 1] != 0)) {
    snprintf(why, wlen, "corrupt (PTX without its terminating NUL)");
  } else {
    ok = SPX__JIT_READ_OK;
    *image = img;
    *size = (size_t)n;
    *cubin = kind == 1;
    img = NULL;
    (void)futimens(fd, NULL); /* recently used: eviction goes by modification time */
  }
  SPX_FREE(img);
  close(fd);
  return ok;
}

/* mkdir -p with mode 0700: compiled code loaded from here must not be writable by others (a
 * directory that exists already keeps its mode: spx__jit_trusted judges it). */
static int spx__jit_mkdirs(const char *dir) {
  char p[1100];
  size_t i, n = strlen(dir);
  if (n >= sizeof p) return -1;
  memcpy(p, dir, n + 1);
  for (i = 1; i <= n; i++)
    if (p[i] == '/' || p[i] == 0) {
      char c = p[i];
      p[i] = 0;
      if (mkdir(p, 0700) != 0 && errno != EEXIST) return -1;
      p[i] = c;
    }
  return 0;
}

/* Writes the entry atomically, mode 0600: a temporary file in the same directory, renamed over the
 * name. 1: written; 0: not, the directories (created now) were refused by spx__jit_trusted, which
 * said why; -1: not, an I/O error (spx_last_error says which). */
static int spx__jit_disk_write(const char *dir, spx__jit_key k, const spx_jit_key_inputs *in,
                               const void *image, size_t size, int cubin) {
  unsigned char h[SPX__JIT_HEADER];
  char hex[33], tmp[1200], path[1200];
  struct stat st;
  int fd, ok;
  spx__jit_hex(k, hex);
  snprintf(path, sizeof path, "%s/%s", dir, hex);
  snprintf(tmp, sizeof tmp, "%s/" SPX__JIT_TMP_PREFIX "%s-XXXXXX", dir, hex);
  if (spx__jit_mkdirs(dir) != 0) {
    spx__fail(SPX_IO, "cannot create the JIT cache directory %s: %s", dir, strerror(errno));
    return -1;
  }
  if (!spx__jit_trusted(dir, 0)) return 0; /* it was absent when the lookup began: judge what is there now */
  if ((fd = mkstemp(tmp)) < 0) {
    spx__fail(SPX_IO, "cannot create a file in the JIT cache directory %s: %s", dir, strerror(errno));
    return -1;
  }
  /* mkstemp makes it 0600 already; say so, and check, whatever the C library did. */
  if (fchmod(fd, 0600) != 0 || fstat(fd, &st) != 0) {
    ok = errno;
  } else if ((st.st_mode & 07777) != 0600 || st.st_uid != geteuid()) {
    ok = EPERM;
  } else {
    ok = 0;
  }
  if (ok) {
    spx__fail(SPX_IO, "cannot make the JIT cache file %s private (mode 0600, owned by uid %u): %s", tmp,
              (unsigned)geteuid(), strerror(ok));
    close(fd);
    unlink(tmp);
    return -1;
  }
  memset(h, 0, sizeof h);
  memcpy(h + SPX__JH_MAGIC, spx__jit_magic, 8);
  spx__jit_put32(h + SPX__JH_FORMAT, SPX__JIT_FORMAT);
  spx__jit_put32(h + SPX__JH_KIND, cubin ? 1 : 2);
  spx__jit_put64(h + SPX__JH_KEY_HI, k.hi);
  spx__jit_put64(h + SPX__JH_KEY_LO, k.lo);
  spx__jit_put64(h + SPX__JH_PAYLOAD_SIZE, (uint64_t)size);
  spx__jit_put64(h + SPX__JH_PAYLOAD_HASH, spx__jit_hash64(image, size, SPX__JIT_SEED_PAYLOAD));
  memcpy(h + SPX__JH_TEMPLATE, in->template_name,
         SPX__MIN(strlen(in->template_name), (size_t)(SPX__JH_ARCH - SPX__JH_TEMPLATE - 1)));
  memcpy(h + SPX__JH_ARCH, in->arch, SPX__MIN(strlen(in->arch), (size_t)(SPX__JH_NVRTC_MAJOR - SPX__JH_ARCH - 1)));
  spx__jit_put32(h + SPX__JH_NVRTC_MAJOR, (uint32_t)in->nvrtc_major);
  spx__jit_put32(h + SPX__JH_NVRTC_MINOR, (uint32_t)in->nvrtc_minor);
  spx__jit_put64(h + SPX__JH_HEADER_HASH, spx__jit_hash64(h, SPX__JH_HEADER_HASH, SPX__JIT_SEED_HEADER));
  ok = spx__jit_write_all(fd, h, sizeof h) && spx__jit_write_all(fd, image, size);
  /* No fsync: after a crash an entry may be empty or short, which the checksum catches. */
  if (close(fd) != 0) ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    spx__fail(SPX_IO, "cannot write the JIT cache entry %s: %s", path, strerror(e));
    return -1;
  }
  atomic_fetch_add(&spx__jit_st.disk_writes, 1);
  return 1;
}

typedef struct spx__jit_file {
  char name[40];
  int64_t size;
  struct timespec mtime;
} spx__jit_file;

static int spx__jit_is_key_name(const char *s) {
  size_t i;
  for (i = 0; i < 32; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return s[32] == 0;
}

/* The entries of dir (*files allocated, may be NULL when none) and their total size: key-named
 * regular files of this user (symbolic links are not followed). This user's temporary files older
 * than SPX__JIT_STALE_TMP_S are removed when `sweep` is set. */
static int spx__jit_scan(const char *dir, spx__jit_file **files, int64_t *nfiles, int64_t *total, int sweep) {
  DIR *d = spx__jit_opendir(dir);
  struct dirent *de;
  spx__jit_file *f = NULL, *nf;
  int64_t n = 0, cap = 0;
  struct stat st;
  time_t now = time(NULL);
  *files = NULL;
  *nfiles = *total = 0;
  if (!d) return errno == ENOENT ? 0 : -1;
  while ((de = readdir(d)) != NULL) {
    if (!strncmp(de->d_name, SPX__JIT_TMP_PREFIX, strlen(SPX__JIT_TMP_PREFIX))) {
      if (sweep && spx__jit_is_mine(d, de->d_name, &st) && now - st.st_mtime > SPX__JIT_STALE_TMP_S)
        (void)unlinkat(dirfd(d), de->d_name, 0);
      continue;
    }
    if (!spx__jit_is_key_name(de->d_name) || !spx__jit_is_mine(d, de->d_name, &st)) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      if (!(nf = (spx__jit_file *)SPX_REALLOC(f, (size_t)cap * sizeof *f))) break;
      f = nf;
    }
    memcpy(f[n].name, de->d_name, 33); /* a key name: 32 digits and the NUL */
    f[n].size = (int64_t)st.st_size;
    f[n].mtime = st.st_mtim;
    *total += f[n].size;
    n++;
  }
  closedir(d);
  *files = f;
  *nfiles = n;
  return 0;
}

static int spx__jit_older(const void *a, const void *b) {
  const spx__jit_file *x = (const spx__jit_file *)a, *y = (const spx__jit_file *)b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Removes least recently used entries until the directory fits the cap. Another process may
 * evict at the same time; a file it removed first is simply gone. */
static void spx__jit_evict(const char *dir) {
  spx__jit_file *f;
  int64_t n, i, total;
  double cap = spx__jit_cap_mb() * 1048576.0;
  char path[1200];
  int64_t left;
  if (spx__jit_scan(dir, &f, &n, &total, 1) != 0) return;
  left = n;
  if ((double)total > cap) {
    qsort(f, (size_t)n, sizeof *f, spx__jit_older);
    for (i = 0; i < n && (double)total > cap; i++) {
      snprintf(path, sizeof path, "%s/%s", dir, f[i].name);
      if (unlink(path) == 0) atomic_fetch_add(&spx__jit_st.evictions, 1);
      total -= f[i].size; /* gone either way: by us or by another process */
      left--;
    }
  }
  spx__jit_scanned(total, left);
  SPX_FREE(f);
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
