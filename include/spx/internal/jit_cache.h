/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/jit_cache.h: what the JIT's rooms (jit_key_impl.h, jit_disk_impl.h, jit_impl.h,
 * bottom up in spx.h) give the rooms above them: the key, the table of entries and its counters,
 * then each room's functions. Each section names the file that defines it; a room calls only the
 * sections before its own.
 *
 * Locking: one process-wide rwlock guards the table of entries (key -> image, modules, kernel
 * handles, remembered failure) and the small memos (device archs, joined sources, retained
 * contexts). A hit takes the read lock once. NVRTC and disk I/O run with no lock held; module
 * loads run under the write lock (once per kernel and device). Between processes nothing is
 * locked: entries are written whole to a temporary file and renamed into place.
 * Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_JIT_CACHE_H
#define SPX_INTERNAL_JIT_CACHE_H

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include "common.h"
#include "cuda_types.h"
#include "../jit.h"
#include "templates_gen.h"

/* Defines per kernel; the name prefix of an entry's temporary file; archs memoized. */
#define SPX__JIT_MAX_DEFINES 256
#define SPX__JIT_TMP_PREFIX ".tmp-"
#define SPX__JIT_MAX_ARCHS 32

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

/* The table (open addressing) and the memos, under spx__jit_lock. */
typedef struct spx__jit_state {
  spx__jit_entry **slots; /* open addressing, linear probing; cap is a power of two */
  size_t cap, count;
  struct { int cc; char arch[32]; } archs[SPX__JIT_MAX_ARCHS]; /* compute capability -> arch */
  int narchs;
  spx__jit_dev *devs;
  int ndevs;
  char *joined[SPX__TEMPLATE_COUNT]; /* sources of templates stored in several chunks */
} spx__jit_state;
extern pthread_rwlock_t spx__jit_lock;
extern spx__jit_state spx__jit;

/* What spx_jit_stats_get reports, counted without a lock. */
typedef struct spx__jit_counters {
  atomic_llong mem_hits, disk_hits, misses, compiles, compile_failures, disk_writes, disk_corrupt,
      evictions, compile_ns, load_ns, read_ns;
  atomic_llong scanned;              /* 1 once a scan filled the two below */
  atomic_llong disk_bytes, disk_entries;
} spx__jit_counters;
extern spx__jit_counters spx__jit_st;

/* ---- jit_key_impl.h: templates, defines, keys, architectures ---------------------------------- */
/* 64-bit hash of n bytes (for identity, not security); two seeds give a 128-bit key. */
uint64_t spx__jit_hash64(const void *data, size_t n, uint64_t seed);
/* Records a scan of the disk cache (its bytes and entries) for the stats. */
void spx__jit_scanned(int64_t bytes, int64_t entries);
/* Adds the nanoseconds since t0 (spx__now) to counter c. */
void spx__jit_add_ns(atomic_llong *c, double t0);
/* The index of template `name`, or -1; _template: the same, or SPX_INVALID_ARGUMENT listing them. */
int spx__jit_template_index(const char *name);
spx_status spx__jit_template(const char *name, int *index);
/* The whole source of template i (NULL when out of memory). */
const char *spx__jit_source(int i);
/* Checks the defines and sorts pointers to them into `out` (SPX__JIT_MAX_DEFINES long). */
spx_status spx__jit_defines(int nd, const char *const *defs, const char **out);
spx_status spx__jit_key_make(const spx_jit_key_inputs *in, spx__jit_key *key);
/* The key as 32 hex digits: the entry's file name. */
void spx__jit_hex(spx__jit_key k, char hex[33]);
/* "sm_90", "sm_90a", "compute_90": *cubin = 1 for sm_. */
spx_status spx__jit_arch_check(const char *arch, int *cubin);
/* The key inputs for template index ti (arch already chosen). */
spx_status spx__jit_inputs(int ti, int nd, const char *const *defs, const char *arch, spx_jit_key_inputs *in);

/* ---- jit_disk_impl.h: the disk cache ---------------------------------------------------------- */
/* The entry directory when the disk cache is on and its directories are trusted (kept_absent_ok: no
 * I/O for a path already judged absent). */
int spx__jit_disk_dir(char *dir, size_t len, int kept_absent_ok);
/* Opens directory `dir` for listing without following a symbolic link in its place. */
DIR *spx__jit_opendir(const char *dir);
/* Whether `name` in d is a regular file of this user (what spx may remove); *st its status. */
int spx__jit_is_mine(DIR *d, const char *name, struct stat *st);
/* SPX_CACHE_MAX_MB, or the default cap. */
double spx__jit_cap_mb(void);
/* What spx__jit_disk_read found. */
enum {
  SPX__JIT_READ_FOREIGN = -3, /* another user's file: not used, and left alone */
  SPX__JIT_READ_UNSAFE = -2,  /* this user's, but writable by others: not used, replaced */
  SPX__JIT_READ_BAD = -1,     /* corrupt, truncated, another key or format, not a regular file */
  SPX__JIT_READ_ABSENT = 0,
  SPX__JIT_READ_OK = 1
};
int spx__jit_disk_read(const char *path, spx__jit_key k, void **image, size_t *size, int *cubin, char *why,
                       size_t wlen);
/* Writes an entry atomically: 1 written; 0 not, the directories were refused; -1 an I/O error. */
int spx__jit_disk_write(const char *dir, spx__jit_key k, const spx_jit_key_inputs *in, const void *image,
                        size_t size, int cubin);
typedef struct spx__jit_file {
  char name[40];
  int64_t size;
  struct timespec mtime;
} spx__jit_file;
/* A key's name: 32 lower-case hex digits. */
int spx__jit_is_key_name(const char *s);
/* The entries of dir (*files allocated) and their total size; sweep: stale temporary files go. */
int spx__jit_scan(const char *dir, spx__jit_file **files, int64_t *nfiles, int64_t *total, int sweep);
/* Removes least recently used entries until dir fits the cap. */
void spx__jit_evict(const char *dir);

#endif /* SPX_INTERNAL_JIT_CACHE_H */
