/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/config.h: every environment variable the library reads, as one table, read once.
 *
 * spx__cfg() reads the whole table on its first call (once per process, thread-safe) into one
 * struct, and every knob is taken from there: no getenv runs anywhere else, none in a hot path,
 * and a decision made twice (a warm-up and a run, every candidate of the tuner) sees one value.
 * A program that changes its environment after spx first looked does not change spx's behaviour;
 * tests that do call spx__config_reload(). spx.h documents the variables for users.
 * Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_CONFIG_H
#define SPX_INTERNAL_CONFIG_H

/* The variables, one per row. ORDER: free.
 *   kind: STR   the value as set (NULL when unset; "" when set empty), parsed where it is used
 *         COUNT a whole number >= 0 (spx__env_num: the value, and whether it parsed)
 *  _(variable,                field,               kind,  what it does; its default) */
#define SPX__ENV(_)                                                                                  \
  _(SPX_QUIET,               quiet,               STR,   "set to anything: no notices or warnings on stderr") \
  _(SPX_BACKEND,             backend,             STR,   "auto | host | cuda: what an AUTO context picks (auto)") \
  _(SPX_LIBCUDA,             libcuda,             STR,   "the CUDA driver library's full path (libcuda.so.1, libcuda.so)") \
  _(SPX_LIBNVRTC,            libnvrtc,            STR,   "NVRTC's full path (the usual sonames, then the toolkit's)") \
  _(SPX_LIBCUSPARSE,         libcusparse,         STR,   "cuSPARSE's full path (the usual sonames, then the toolkit's)") \
  _(CUDA_HOME,               cuda_home,           STR,   "a CUDA toolkit: NVRTC and cuSPARSE also from its lib64") \
  _(SPX_CACHE,               cache,               STR,   "off | 0 | no | false | OFF: no JIT disk cache (on)") \
  _(SPX_CACHE_DIR,           cache_dir,           STR,   "the JIT disk cache's directory (else from XDG_CACHE_HOME or HOME)") \
  _(XDG_CACHE_HOME,          xdg_cache_home,      STR,   "an absolute path: the JIT disk cache is its spx/") \
  _(HOME,                    home,                STR,   "else the JIT disk cache is ~/.cache/spx") \
  _(SPX_CACHE_MAX_MB,        cache_max_mb,        STR,   "the JIT disk cache's cap in MiB, a positive number (512)") \
  _(SPX_DEVICE_CACHE_MB,     device_cache_mb,     COUNT, "device blocks kept for reuse, MiB (1/16 of memory, at most 2 GiB; 0 none)") \
  _(SPX_UPLOAD_THREADS,      upload_threads,      COUNT, "workers of the pinned upload pool (3/4 of the CPUs, at most 12; 0 none)") \
  _(SPX_DEVICE_CONVERT,      device_convert,      STR,   "0: SELL, SELL16, SDIA, BSR, ELL, ELL-R and JDS converted on the host (on the device)") \
  _(SPX_PLAN_DEVICE_PROFILE, plan_device_profile, COUNT, "0: a plan's matrix profiled on the host; N: on the device from N nonzeros (on the device from 2^17 nonzeros)") \
  _(SPX_PLAN_UPLOAD_BESIDE,  plan_upload_beside,  COUNT, "0: a plan the host profiles uploads its matrix after the host's passes; N: from N nonzeros beside them, on a thread (from 2^14 nonzeros)") \
  _(SPX_PLAN_TRACE,          plan_trace,          STR,   "set, not 0: selection stages and build steps timed on stderr") \
  _(SPX_STENCIL_XV,          stencil_xv,          STR,   "1 | 2: x cells per thread of the one-step stencil kernel") \
  _(SPX_STENCIL_TB_PF,       stencil_tb_pf,       STR,   "0..8: prefetch distance of the temporal-blocking stencil kernel") \
  _(SPX_STENCIL_CHUNK,       stencil_chunk,       COUNT, "temporal blocking: the shortest z-chunk of a launch, planes") \
  _(SPX_STENCIL_CHUNK_MAX,   stencil_chunk_max,   COUNT, "temporal blocking: the longest z-chunk of a launch, planes") \
  _(SPX_STENCIL_SLOTS,       stencil_slots,       COUNT, "temporal blocking: blocks of its kernel the GPU runs at once") \
  _(SPX_STENCIL_TRACE,       stencil_trace,       STR,   "a file: the out-of-core stencil's per-step timeline")

/* A COUNT variable: set is 1 with n when the value is a whole number >= 0, 0 when it is unset or
 * empty, -1 otherwise (n 0); str is the value, for messages. Each user says what -1 means. */
typedef struct spx__env_num {
  const char *str;
  int set;
  long long n;
} spx__env_num;

#define SPX__ENV_TYPE_STR const char *
#define SPX__ENV_TYPE_COUNT spx__env_num
#define SPX__ENV_FIELD(var, field, kind, doc) SPX__ENV_TYPE_##kind field;
typedef struct spx__config {
  SPX__ENV(SPX__ENV_FIELD)
} spx__config;
#undef SPX__ENV_FIELD

/* The environment as it was at the first call (or the last spx__config_reload). */
const spx__config *spx__cfg(void);
/* Tests only: read the environment again, after a setenv. Not safe while other threads use spx. */
void spx__config_reload(void);
/* A count's verdict on value v (as spx__env_num.set): 1 with *out, 0 unset or empty, -1 otherwise. */
int spx__env_parse_count(const char *v, long long *out);

#endif /* SPX_INTERNAL_CONFIG_H */
