/* SPDX-License-Identifier: BSD-3-Clause */
/* What spx writes to stderr (fd 2) between cap_begin and cap_end, for tests that check warnings
 * and notices. cap_begin(1) also unsets SPX_QUIET meanwhile (the notices are what is checked; spx
 * reads its environment again on each change, spx__config_reload).
 * POSIX (dup, dup2, fileno): include after _POSIX_C_SOURCE and spx_test.h. */
#ifndef SPX_TEST_CAPTURE_H
#define SPX_TEST_CAPTURE_H
#include <unistd.h>
#include <spx/internal/config.h>

typedef struct capture { FILE *tmp; int saved_fd; int unquiet; char *quiet; } capture;

static inline capture cap_begin(int unquiet) {
  capture c;
  c.unquiet = unquiet;
  c.quiet = unquiet && getenv("SPX_QUIET") ? strdup(getenv("SPX_QUIET")) : NULL;
  if (unquiet) {
    unsetenv("SPX_QUIET");
    spx__config_reload();
  }
  fflush(stderr);
  c.tmp = tmpfile();
  assert_non_null(c.tmp);
  c.saved_fd = dup(2);
  assert_true(c.saved_fd >= 0);
  assert_true(dup2(fileno(c.tmp), 2) >= 0);
  return c;
}

/* The captured text (malloc'd); with echo, also written to the real stderr (the test's log). */
static inline char *cap_end(capture *c, int echo) {
  long n;
  char *buf;
  fflush(stderr);
  dup2(c->saved_fd, 2);
  close(c->saved_fd);
  if (c->quiet) {
    setenv("SPX_QUIET", c->quiet, 1);
    spx__config_reload();
  }
  free(c->quiet);
  fseek(c->tmp, 0, SEEK_END);
  n = ftell(c->tmp);
  rewind(c->tmp);
  buf = (char *)calloc((size_t)n + 1, 1);
  assert_non_null(buf);
  if (n > 0) assert_int_equal(fread(buf, 1, (size_t)n, c->tmp), (size_t)n);
  fclose(c->tmp);
  if (echo) fputs(buf, stderr);
  return buf;
}

static inline int count_substr(const char *hay, const char *needle) {
  int n = 0;
  const char *p = hay;
  while ((p = strstr(p, needle)) != NULL) { n++; p += strlen(needle); }
  return n;
}
#endif /* SPX_TEST_CAPTURE_H */
