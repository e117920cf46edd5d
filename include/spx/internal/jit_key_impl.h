/* SPDX-License-Identifier: BSD-3-Clause */
/* What names a compiled kernel (jit_cache.h): the hash, the templates (embedded by
 * templates_gen.h), the defines checked and sorted, the key over everything that changes the binary,
 * and the architecture a device compiles for. It also holds the JIT's shared state (the table and
 * memos under one lock, the counters) that the rooms above it use. */
#include <pthread.h>
#include <stdatomic.h>
#include "common.h"
#include "cuda_types.h"
#include "jit_cache.h"
#include "../jit.h"
#include "../version.h"
#include "templates_gen.h"

#define SPX__JIT_MAX_DEFINE_LEN 512

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
uint64_t spx__jit_hash64(const void *data, size_t n, uint64_t seed) {
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
pthread_rwlock_t spx__jit_lock = PTHREAD_RWLOCK_INITIALIZER;
spx__jit_state spx__jit;
spx__jit_counters spx__jit_st;

void spx__jit_scanned(int64_t bytes, int64_t entries) {
  atomic_store(&spx__jit_st.disk_bytes, bytes);
  atomic_store(&spx__jit_st.disk_entries, entries);
  atomic_store(&spx__jit_st.scanned, 1);
}

void spx__jit_add_ns(atomic_llong *c, double t0) {
  atomic_fetch_add(c, (long long)((spx__now() - t0) * 1e9));
}

/* ---- Templates ----------------------------------------------------------------------------------
 * Indexes 0 .. SPX__TEMPLATE_COUNT-1 are the embedded templates, the ones after them the templates
 * a program added (spx_jit_template_add), in the order added. An added slot is filled before the
 * count that publishes it is raised (release, read with acquire), and never changes after: readers
 * take no lock. */
typedef struct spx__jit_added {
  char name[32];
  char *source;
  size_t size;
  uint64_t hash;
} spx__jit_added;
static spx__jit_added spx__jit_added_t[SPX_JIT_TEMPLATES_ADDED_MAX];
static atomic_int spx__jit_nadded;
static pthread_mutex_t spx__jit_add_lock = PTHREAD_MUTEX_INITIALIZER;

static int spx__jit_ntemplates(void) {
  return SPX__TEMPLATE_COUNT + atomic_load_explicit(&spx__jit_nadded, memory_order_acquire);
}
static const char *spx__jit_tname(int i) {
  return i < SPX__TEMPLATE_COUNT ? spx__templates[i].name : spx__jit_added_t[i - SPX__TEMPLATE_COUNT].name;
}
static size_t spx__jit_tsize(int i) {
  return i < SPX__TEMPLATE_COUNT ? spx__templates[i].size : spx__jit_added_t[i - SPX__TEMPLATE_COUNT].size;
}
static uint64_t spx__jit_thash(int i) {
  return i < SPX__TEMPLATE_COUNT ? spx__templates[i].hash : spx__jit_added_t[i - SPX__TEMPLATE_COUNT].hash;
}

/* FNV-1a 64, the hash gen/embed gives the embedded templates. */
static uint64_t spx__jit_fnv1a64(const char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i;
  for (i = 0; i < n; i++) { h ^= (unsigned char)p[i]; h *= 0x100000001b3ull; }
  return h;
}

int spx__jit_template_index(const char *name) {
  int i, n = spx__jit_ntemplates();
  for (i = 0; i < n; i++)
    if (!strcmp(spx__jit_tname(i), name)) return i;
  return -1;
}

spx_status spx__jit_template(const char *name, int *index) {
  char list[256] = "";
  size_t used = 0;
  int i, n;
  if (!name) return spx__fail(SPX_INVALID_ARGUMENT, "JIT: template name is NULL");
  if ((*index = spx__jit_template_index(name)) >= 0) return SPX_OK;
  for (i = 0, n = spx__jit_ntemplates(); i < n && used + 1 < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", spx__jit_tname(i));
  return spx__fail(SPX_INVALID_ARGUMENT, "JIT: no template '%s' (there are: %s)", name, list);
}

/* The whole source of template i; embedded sources longer than one chunk are joined once. */
const char *spx__jit_source(int i) {
  const spx__template *t;
  char *s;
  int k;
  size_t used = 0, n;
  if (i >= SPX__TEMPLATE_COUNT) return spx__jit_added_t[i - SPX__TEMPLATE_COUNT].source;
  t = &spx__templates[i];
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
  if (size) *size = spx__jit_tsize(i);
  if (hash) *hash = spx__jit_thash(i);
  return SPX_OK;
}

spx_status spx_jit_template_add(const char *name, const char *source) {
  size_t len, k;
  int i, n;
  spx__jit_added *t;
  spx_status s = SPX_OK;
  if (!name || !source) return spx__fail(SPX_INVALID_ARGUMENT, "spx_jit_template_add: NULL name or source");
  len = strlen(name);
  for (k = 0; k < len; k++)
    if (!((name[k] >= 'a' && name[k] <= 'z') || (name[k] >= '0' && name[k] <= '9') || name[k] == '_')) break;
  if (len == 0 || len >= sizeof t->name || k < len)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_jit_template_add: the name '%.40s' is not 1-%d characters of "
                     "[a-z0-9_]", name, (int)sizeof t->name - 1);
  pthread_mutex_lock(&spx__jit_add_lock);
  if ((i = spx__jit_template_index(name)) >= 0) { /* the same source again is no change */
    if (i < SPX__TEMPLATE_COUNT || strcmp(spx__jit_added_t[i - SPX__TEMPLATE_COUNT].source, source))
      s = spx__fail(SPX_INVALID_ARGUMENT, "spx_jit_template_add: a template named '%s' exists %s", name,
                    i < SPX__TEMPLATE_COUNT ? "(embedded)" : "with another source");
  } else if ((n = atomic_load(&spx__jit_nadded)) >= SPX_JIT_TEMPLATES_ADDED_MAX) {
    s = spx__fail(SPX_INVALID_ARGUMENT, "spx_jit_template_add: %d templates were added already, the most there "
                  "is room for", SPX_JIT_TEMPLATES_ADDED_MAX);
  } else {
    t = &spx__jit_added_t[n];
    t->size = strlen(source);
    if (!(t->source = (char *)malloc(t->size + 1))) {
      s = spx__fail(SPX_OUT_OF_MEMORY, "spx_jit_template_add: out of memory for the source of '%s'", name);
    } else {
      memcpy(t->source, source, t->size + 1);
      memcpy(t->name, name, len + 1);
      t->hash = spx__jit_fnv1a64(source, t->size);
      atomic_store_explicit(&spx__jit_nadded, n + 1, memory_order_release);
    }
  }
  pthread_mutex_unlock(&spx__jit_add_lock);
  return s;
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
spx_status spx__jit_defines(int nd, const char *const *defs, const char **out) {
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

spx_status spx__jit_key_make(const spx_jit_key_inputs *in, spx__jit_key *key) {
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

void spx__jit_hex(spx__jit_key k, char hex[33]) {
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
spx_status spx__jit_arch_check(const char *arch, int *cubin) {
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
spx_status spx__jit_inputs(int ti, int nd, const char *const *defs, const char *arch,
                                  spx_jit_key_inputs *in) {
  spx_status s;
  memset(in, 0, sizeof *in);
  in->template_name = spx__jit_tname(ti);
  in->template_hash = spx__jit_thash(ti);
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
