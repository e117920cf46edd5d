/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/status.h and spx/internal/common.h. */
#include <math.h> /* NAN, isnan: macros only, no libm */
#include "common.h"
#include "config.h"

static SPX__THREAD_LOCAL char spx__msg[1024];
static SPX__THREAD_LOCAL spx_status spx__last = SPX_OK;

const char *spx_status_string(spx_status s) {
  static const char *const names[] = {
#define SPX__STATUS_NAME(e, name, what) name,
      SPX_STATUS_LIST(SPX__STATUS_NAME)
#undef SPX__STATUS_NAME
  };
  return (unsigned)s < SPX_STATUS_COUNT ? names[s] : "unknown";
}

const char *spx_status_description(spx_status s) {
  static const char *const what[] = {
#define SPX__STATUS_WHAT(e, name, w) w,
      SPX_STATUS_LIST(SPX__STATUS_WHAT)
#undef SPX__STATUS_WHAT
  };
  return (unsigned)s < SPX_STATUS_COUNT ? what[s] : "unknown status";
}

const char *spx_last_error(void) { return spx__msg; }
spx_status spx_last_status(void) { return spx__last; }
void spx_clear_error(void) { spx__msg[0] = 0; spx__last = SPX_OK; }

spx_status spx__fail(spx_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(spx__msg, sizeof spx__msg, fmt, ap);
  va_end(ap);
  spx__last = s;
  return s;
}

spx_status spx__fail_at(spx_status s, const char *file, int64_t line, const char *fmt, ...) {
  char body[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  if (line > 0)
    snprintf(spx__msg, sizeof spx__msg, "%s:%lld: %s", file ? file : "<input>", (long long)line, body);
  else
    snprintf(spx__msg, sizeof spx__msg, "%s: %s", file ? file : "<input>", body);
  spx__last = s;
  return s;
}

spx_status spx__wrap(spx_status s, const char *fmt, ...) {
  char old[sizeof spx__msg];
  size_t n;
  va_list ap;
  memcpy(old, spx__msg, sizeof old);
  va_start(ap, fmt);
  vsnprintf(spx__msg, sizeof spx__msg, fmt, ap);
  va_end(ap);
  n = strlen(spx__msg);
  /* Append ": old" by hand: truncating the old message at the buffer end is intended. */
  if (n + 2 < sizeof spx__msg) {
    memcpy(spx__msg + n, ": ", 2);
    n += 2;
    strncpy(spx__msg + n, old, sizeof spx__msg - n - 1);
    spx__msg[sizeof spx__msg - 1] = 0;
  }
  spx__last = s;
  return s;
}

void *spx__alloc(size_t n, size_t sz) {
  void *p;
  if (sz && n > (size_t)-1 / sz) {
    spx__fail(SPX_OUT_OF_MEMORY, "allocation of %zu x %zu bytes overflows", n, sz);
    return NULL;
  }
  size_t total = n * sz;
  p = SPX_MALLOC(total > 0 ? total : 1);
  if (!p) spx__fail(SPX_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", n * sz);
  return p;
}

void *spx__calloc(size_t n, size_t sz) {
  void *p = SPX_CALLOC(n ? n : 1, sz ? sz : 1);
  if (!p) spx__fail(SPX_OUT_OF_MEMORY, "out of host memory allocating %zu x %zu bytes", n, sz);
  return p;
}

#if defined(__linux__)
#include <sys/mman.h>
int madvise(void *addr, size_t length, int advice); /* hidden by strict POSIX feature macros */
#define SPX__MADV_HUGEPAGE 14                        /* Linux ABI value */
#endif
void spx__advise_huge(void *p, size_t bytes) {
#if defined(__linux__)
  const uintptr_t huge = (uintptr_t)2 << 20;
  uintptr_t b = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (p && bytes >= 2 * huge && e > b) (void)madvise((void *)b, (size_t)(e - b), SPX__MADV_HUGEPAGE);
#else
  (void)p; (void)bytes;
#endif
}

char *spx__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = (char *)spx__alloc(n, 1);
  if (p) memcpy(p, s, n);
  return p;
}

double spx__now(void) {
  struct timespec ts;
#if defined(CLOCK_MONOTONIC)
  clock_gettime(CLOCK_MONOTONIC, &ts);
#else
  timespec_get(&ts, TIME_UTC); /* strict C11 without POSIX: wall clock, still fine for timing */
#endif
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* SPX_PLAN_TRACE set to anything but "" or 0: the selection's stages and the device converters'
 * steps print their wall times on stderr. */
int spx__plan_tracing(void) {
  const char *e = spx__cfg()->plan_trace;
  return e && *e && *e != '0';
}

/* One converter step's wall time under the trace (*t: the previous mark, moved on). */
void spx__conv_mark(int tr, const char *conv, const char *step, double *t) {
  const double now = spx__now();
  if (tr) fprintf(stderr, "spx conv: %-6s %-12s %8.3f ms\n", conv, step, 1e3 * (now - *t));
  *t = now;
}

double spx__sqrt(double x) {
  double r;
  int i;
  if (x != x || x == 0 || x > 1.7e308) return x;
  if (x < 0) return NAN;
  /* Start from a power-of-two estimate, then Newton: quadratic convergence to full precision. */
  r = 1;
  while (r * r < x) r *= 2;
  while (r * r > 4 * x) r /= 2;
  for (i = 0; i < 60; i++) {
    double n = 0.5 * (r + x / r);
    if (n == r) break;
    r = n;
  }
  return r;
}

void spx__warn(const char *fmt, ...) {
  va_list ap;
  if (spx__cfg()->quiet) return;
  fputs("spx: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}
