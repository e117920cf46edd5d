/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/common.h: what every implementation file uses (allocation, errors, timing).
 * Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_COMMON_H
#define SPX_INTERNAL_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../status.h"

/* Host allocator hooks, stb style: define before including spx.h with SPX_IMPLEMENTATION. */
#ifndef SPX_MALLOC
#define SPX_MALLOC(sz) malloc(sz)
#define SPX_REALLOC(p, sz) realloc(p, sz)
#define SPX_CALLOC(n, sz) calloc(n, sz)
#define SPX_FREE(p) free(p)
#endif

#ifdef __cplusplus
#define SPX__THREAD_LOCAL thread_local
#else
#define SPX__THREAD_LOCAL _Thread_local
#endif

#if defined(__GNUC__)
#define SPX__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SPX__PRINTF(f, a)
#endif

/* Record a failure for this thread and return its status: `return spx__fail(SPX_PARSE, ...)`. */
spx_status spx__fail(spx_status s, const char *fmt, ...) SPX__PRINTF(2, 3);
/* Same, prefixed with "file:line: " (line <= 0 leaves the line out). */
spx_status spx__fail_at(spx_status s, const char *file, int64_t line, const char *fmt, ...)
    SPX__PRINTF(4, 5);
/* Prefix the current thread's message with more context ("reading X: " + old message). */
spx_status spx__wrap(spx_status s, const char *fmt, ...) SPX__PRINTF(2, 3);

/* Allocation of n elements of size sz with overflow check; records OUT_OF_MEMORY on failure. */
void *spx__alloc(size_t n, size_t sz);
void *spx__calloc(size_t n, size_t sz);
/* Asks for transparent huge pages on a large fresh buffer before it is first touched: page faults,
 * not arithmetic, bound how fast large matrices are built (Linux; elsewhere a no-op). */
void spx__advise_huge(void *p, size_t bytes);
/* Matrix Market reader: the largest dimension accepted (default 2^31-1; the fuzz harness lowers it). */
extern int64_t spx__mm_dim_limit;
/* A copy of s (NULL on allocation failure). */
char *spx__strdup(const char *s);

/* Monotonic wall clock in seconds. */
double spx__now(void);
/* SPX_PLAN_TRACE set (not 0): a plan's stages and its build steps print their wall times on
 * stderr; spx__conv_mark prints one step (*t: the previous mark, moved on). */
int spx__plan_tracing(void);
void spx__conv_mark(int tr, const char *conv, const char *step, double *t);
/* sqrt without libm: users link with -ldl -lz only. */
double spx__sqrt(double x);
/* Warnings and one-time notices go to stderr unless SPX_QUIET is set in the environment. */
void spx__warn(const char *fmt, ...) SPX__PRINTF(1, 2);
/* Environment variable `name` read now as a count (config.h's COUNT kind): 1 with *out when it is
 * a whole number >= 0, 0 when it is unset or empty, -1 otherwise (*out untouched). The library
 * reads its own variables once, through spx__cfg() (config.h); this is the same parse, for tests. */
int spx__env_count(const char *name, long long *out);

/* A function run once on a detached background thread (job_impl.h): start it (data, heap, is the
 * job's from then on; NULL only when memory ran out), poll, wait (its status, its message raised on
 * the waiting thread), release (a running job finishes on its own, then frees itself). fn may
 * publish its result early and go on with work nobody waits for; its return value then counts
 * for nothing. */
typedef struct spx__job spx__job;
spx__job *spx__job_start(spx_status (*fn)(spx__job *j, void *data), void *data);
void spx__job_publish(spx__job *j, spx_status s);
int spx__job_done(spx__job *j);
spx_status spx__job_wait(spx__job *j);
void spx__job_release(spx__job *j);
/* Threads for spx's own parallel host loops: OpenMP's count less the jobs running now, at least 1.
 * A loop split over every core waits for the thread whose core a compile shares: a scheduler time
 * slice (milliseconds) on work of microseconds. */
int spx__host_threads(void);
/* spx__host_threads, at most one thread per `grain` items of `work`: a loop of microseconds split
 * over every core waits for the slowest of them, and each more thread is one more chance to meet a
 * core that is busy (a spinning thread of another parallel region, a driver's wait). */
int spx__host_threads_for(int64_t work, int64_t grain);
/* The online CPUs, read once per process: sysconf reads /sys each call (microseconds), and the
 * upload pool asks on every staging. */
long spx__cpus(void);
/* Items per thread of spx's light host loops (a few ns each): tens of microseconds of work. */
#define SPX__HOST_GRAIN ((int64_t)1 << 15)
int spx__jobs_busy(void); /* jobs running now */

/* A tier switch: the owner runs a stand-in (or nothing) while a job makes what it wants; settle
 * binds that once the job is done (wait: waits for it), through bind(owner, 1), or, when the job
 * or that bind failed, warns and keeps the stand-in (binding the fallback, bind(owner, 0), where
 * none ran). The tiered JIT's kernels switch through it. */
enum { SPX__TIER_FINAL = 0, SPX__TIER_STANDIN = 1, SPX__TIER_NONE = 2 };
typedef struct spx__tier {
  int state;     /* SPX__TIER_*: FINAL once settled */
  int fell_back; /* 1 when settling kept the stand-in or bound the fallback */
  spx__job *job;
} spx__tier;
typedef spx_status (*spx__tier_bind_fn)(void *owner, int final);
/* 1 when work can start now (something runs, or the job is done). */
int spx__tier_runnable(const spx__tier *t);
spx_status spx__tier_settle(spx__tier *t, int wait, spx__tier_bind_fn bind, void *owner, const char *what);

#define SPX__MIN(a, b) ((a) < (b) ? (a) : (b))
#define SPX__MAX(a, b) ((a) > (b) ? (a) : (b))
#define SPX__ABS(a) ((a) < 0 ? -(a) : (a))

#endif /* SPX_INTERNAL_COMMON_H */
