/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/jit.h: GPU kernels compiled at run time from templates, cached in memory and on disk.
 *
 * A template is a CUDA C++ source, templates/<name>.cu, embedded in these headers (gen/embed
 * writes internal/templates_gen.h), so a program never reads templates/ at run time; a program
 * may add its own at run time (spx_jit_template_add).
 * spx_jit_kernel() specializes one with SPX_-prefixed -D options ("SPX_VALUE_T=float"),
 * compiles it with NVRTC to a CUBIN for the context's GPU (PTX when the GPU is newer than NVRTC
 * knows), loads it with the driver and returns the kernel. Each request goes
 *   memory -> disk -> NVRTC
 *   memory  process-wide table: a hit costs a hash and a lookup (about a microsecond)
 *   disk    one file per key in the cache directory: a hit costs a read and a module load (ms)
 *   NVRTC   a compile (~100 ms per template); the result is written to disk for next time
 *
 * THE KEY
 *   A 128-bit hash of everything that changes the binary: the template's name and content hash,
 *   the define list (sorted, so order does not matter), the target architecture, NVRTC's
 *   version, the NVRTC options, spx's version. spx_jit_key_describe and spx_jit_key_compute show
 *   what goes in. The hash is for identity, not security: the cache directory must be private.
 *
 * DISK CACHE
 *   where    $SPX_CACHE_DIR, else $XDG_CACHE_HOME/spx, else $HOME/.cache/spx; entries live in
 *            its subdirectory SPX_JIT_CACHE_SUBDIR ("v1", the entry format's version), one file
 *            per key, named by the key in hex (32 digits).
 *   entry    a 128-byte header (magic, format version, key, payload kind and size, template and
 *            arch names, checksums of header and payload) followed by the CUBIN or PTX.
 *   writes   go to a temporary file in the same directory that is then renamed over the entry:
 *            readers never see half a file, and processes that compile the same kernel at once
 *            all succeed (the last rename wins; the contents are identical).
 *   reads    verify the checksums; a corrupt or truncated entry draws a warning and is compiled
 *            again and replaced.
 *   size     capped at $SPX_CACHE_MAX_MB MiB (default 512; fractions allowed). After each
 *            write the least recently used entries go first (modification time, refreshed on
 *            every hit) until the rest fit.
 *   SPX_CACHE=off (or 0, no, false) disables the disk cache; nothing is written.
 *   trust    the GPU runs what the cache holds, and the checksums catch accidents, not forgeries:
 *            the cache directory and its SPX_JIT_CACHE_SUBDIR must each be a directory (not a
 *            symbolic link) of the effective user, not writable by group or others (spx makes
 *            them 0700, entries 0600). Otherwise one notice, and the process runs as with
 *            SPX_CACHE=off (disk_enabled 0; the verdict is kept per path). An entry of another user
 *            or writable by others is not used; a link, FIFO or device in an entry's place is never
 *            followed or waited on. Clearing and eviction remove only this user's regular files.
 *
 * ERRORS  A define without the SPX_ prefix is SPX_INVALID_ARGUMENT: NVRTC's built-in headers use
 *   short template-parameter names and -DT=float breaks them. A compile error is SPX_NVRTC with
 *   NVRTC's log in spx_last_error(); the failure is remembered for the process (asking again
 *   costs nothing), so a caller can fall back to a generic kernel and say why.
 *
 * THREADS  Every function is thread-safe. A kernel handle stays valid until spx_jit_clear or
 *   spx_jit_clear_memory, which must not run while other threads use handles. spx keeps a
 *   reference on each device's primary context in which it loaded kernels, so handles outlive
 *   the spx_context they were made in. */
#ifndef SPX_JIT_H
#define SPX_JIT_H

#include <stddef.h>
#include <stdint.h>
#include "loader.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SPX_JIT_CACHE_SUBDIR "v1"

/* Where a kernel or image came from. */
typedef enum spx_jit_origin {
  SPX_JIT_COMPILED = 0, /* NVRTC ran */
  SPX_JIT_MEMORY = 1,   /* this process had it */
  SPX_JIT_DISK = 2      /* read from the disk cache */
} spx_jit_origin;

/* Counters since the process started (every thread), plus what the cache directory holds now. */
typedef struct spx_jit_stats {
  int64_t mem_hits, disk_hits, misses; /* requests by origin; misses == lookups that compiled */
  int64_t compiles, compile_failures;  /* NVRTC runs, and those that failed */
  int64_t disk_writes, disk_corrupt;   /* entries written; entries found corrupt and replaced */
  int64_t evictions;                   /* entries removed to stay under the size cap */
  double compile_ms_total;             /* NVRTC wall time */
  double load_ms_total;                /* cuModuleLoadDataEx wall time */
  double disk_read_ms_total;           /* reading and checking entries */
  int disk_enabled;                    /* 0: SPX_CACHE=off, no directory could be found, or it
                                        * was refused as untrusted (see DISK CACHE above) */
  double disk_cap_mb;                  /* the size cap in MiB */
  int64_t disk_bytes, disk_entries;    /* in the cache directory as of this process's last scan
                                        * (after each write, spx_jit_clear, spx_jit_disk_usage);
                                        * -1 before the first */
} spx_jit_stats;

/* The kernel `kernel_name` (an extern "C" __global__ function) of template `template_name`,
 * specialized by `defines` ("SPX_NAME=value" or "SPX_NAME"; any order), built for ctx's GPU and
 * loaded in its primary context. *function receives a CUfunction for cuLaunchKernel or
 * spx_context_launch (spx/device.h: on the context's stream). A host
 * context is SPX_NOT_AVAILABLE; an unknown template or kernel SPX_INVALID_ARGUMENT. */
spx_status spx_jit_kernel(spx_context *ctx, const char *template_name, const char *kernel_name,
                          int ndefines, const char *const *defines, void **function);

/* spx_jit_kernel without NVRTC: the kernel when the memory or disk cache holds it, else SPX_OK with
 * *function NULL (a compile would be needed). A remembered compile failure is still an error. This
 * is how a caller starts on a kernel it already has while the one it wants compiles elsewhere. */
spx_status spx_jit_kernel_cached(spx_context *ctx, const char *template_name, const char *kernel_name,
                                 int ndefines, const char *const *defines, void **function);

/* Compiles (or finds in the caches) without loading anything, so it needs no GPU: fills the
 * disk cache for architecture `arch` ("sm_90", "sm_90a", or "compute_90" for PTX); arch NULL
 * means device 0's, as spx_jit_kernel would choose it. *from_cache (may be NULL) receives an
 * spx_jit_origin. This is what `spx jit --compile/--warm --arch sm_90` runs on a build machine. */
spx_status spx_jit_compile_only(const char *template_name, int ndefines, const char *const *defines,
                                const char *arch, int *from_cache);

/* The counters; no I/O (but for the trust check of a cache directory not yet judged in this
 * process: an lstat or two), so it is cheap enough to wrap every spx_jit_kernel call. */
void spx_jit_stats_get(spx_jit_stats *out);
/* Removes one kernel (the key spx_jit_compile_only would use; arch NULL: device 0's) from the
 * memory and disk caches, so that the next request compiles it: how a benchmark measures a first
 * run on a shape. Its handles become invalid: no kernel of it may run or be queued meanwhile.
 * SPX_OK when neither cache held it. */
spx_status spx_jit_forget(const char *template_name, int ndefines, const char *const *defines, const char *arch);
/* Scans the cache directory now: bytes and entries in it (0 and 0 when the cache is off). */
spx_status spx_jit_disk_usage(int64_t *bytes, int64_t *entries);
/* Unloads every kernel and forgets the in-memory cache (remembered failures too). */
spx_status spx_jit_clear_memory(void);
/* spx_jit_clear_memory, then removes every entry of the disk cache (the SPX_JIT_CACHE_SUBDIR
 * directory and its files; nothing else in the cache directory). SPX_IO if one stays. */
spx_status spx_jit_clear(void);
/* The cache directory the next disk access will use (entries are in its SPX_JIT_CACHE_SUBDIR
 * subdirectory); NULL when the disk cache is off. A directory refused as untrusted is still named
 * (disk_enabled of spx_jit_stats says whether it is used). Thread-local storage, valid until the
 * next call on this thread. */
const char *spx_jit_cache_dir(void);

/* The embedded templates, sorted by name. */
int spx_jit_template_count(void);
/* Name of template i (NULL outside 0..count-1). */
const char *spx_jit_template_name(int i);
/* The source of a template, embedded or added (static storage), its size and FNV-1a-64 hash (each
 * may be NULL). */
spx_status spx_jit_template_source(const char *name, const char **source, size_t *size,
                                   uint64_t *hash);

/* Adds a template at run time: `source` (copied) is CUDA C++ as templates/README.md describes it
 * (standalone, SPX_* specialization constants, extern "C" entry points), compiled and cached like an
 * embedded one (its content hash is part of the key) and named `name` wherever a template is: the
 * spx_jit_* calls and a kernel spec's template_name, which is how a registered format brings its
 * kernel (spx_format_set_kernel). name: 1-31 characters of [a-z0-9_], not an embedded template's;
 * adding the same name and source again is SPX_OK and changes nothing, another source under a name
 * taken is SPX_INVALID_ARGUMENT. At most SPX_JIT_TEMPLATES_ADDED_MAX; they stay for the process
 * (spx_jit_template_count and _name list the embedded ones only). Thread-safe. */
#define SPX_JIT_TEMPLATES_ADDED_MAX 32
spx_status spx_jit_template_add(const char *name, const char *source);

/* Everything a cache key is made of. */
typedef struct spx_jit_key_inputs {
  const char *template_name;
  uint64_t template_hash;      /* FNV-1a 64 of the template source */
  int ndefines;
  const char *const *defines;  /* as given; the key sorts them */
  char arch[32];               /* "sm_90" (CUBIN) or "compute_90" (PTX) */
  int nvrtc_major, nvrtc_minor;
  int noptions;
  const char *const *options;  /* NVRTC options besides -D and --gpu-architecture */
  const char *spx_version;
} spx_jit_key_inputs;

/* The inputs spx_jit_compile_only(template_name, ndefines, defines, arch) would key on (arch NULL:
 * device 0's). The pointers refer to the arguments and to static storage. */
spx_status spx_jit_key_describe(const char *template_name, int ndefines, const char *const *defines,
                                const char *arch, spx_jit_key_inputs *out);
/* The key as 32 lower-case hex digits (the entry's file name). Checks the defines: SPX_ prefix,
 * identifier characters, no macro given twice. */
spx_status spx_jit_key_compute(const spx_jit_key_inputs *in, char hex[33]);

#ifdef __cplusplus
}
#endif
#endif /* SPX_JIT_H */
