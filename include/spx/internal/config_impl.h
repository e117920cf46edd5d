/* SPDX-License-Identifier: BSD-3-Clause */
/* The environment, read once (config.h): the only file of spx that calls getenv. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "config.h"

static spx__config spx__cfg_now;
static pthread_once_t spx__cfg_once = PTHREAD_ONCE_INIT;

int spx__env_parse_count(const char *v, long long *out) {
  char *end;
  long long n;
  if (!v || !*v) return 0;
  errno = 0;
  n = strtoll(v, &end, 10);
  if (*end || n < 0 || errno) return -1;
  *out = n;
  return 1;
}

int spx__env_count(const char *name, long long *out) { return spx__env_parse_count(getenv(name), out); }

/* A copy of the variable's value (NULL when unset): a later setenv must not change or free what
 * spx holds. A copy that cannot be made for want of memory reads as unset. */
static const char *spx__env_copy(const char *name) {
  const char *e = getenv(name);
  size_t n;
  char *p;
  if (!e) return NULL;
  n = strlen(e) + 1;
  if ((p = (char *)SPX_MALLOC(n)) != NULL) memcpy(p, e, n);
  return p;
}

#define SPX__ENV_READ_STR(var, field) c->field = spx__env_copy(#var);
#define SPX__ENV_READ_COUNT(var, field)                                      \
  c->field.str = spx__env_copy(#var);                                        \
  c->field.set = spx__env_parse_count(c->field.str, &c->field.n);
#define SPX__ENV_READ(var, field, kind, doc) SPX__ENV_READ_##kind(var, field)
static void spx__cfg_read(void) {
  spx__config *c = &spx__cfg_now;
  memset(c, 0, sizeof *c);
  SPX__ENV(SPX__ENV_READ)
}
#undef SPX__ENV_READ
#undef SPX__ENV_READ_STR
#undef SPX__ENV_READ_COUNT

const spx__config *spx__cfg(void) {
  pthread_once(&spx__cfg_once, spx__cfg_read);
  return &spx__cfg_now;
}

#define SPX__ENV_FREE_STR(field) SPX_FREE((void *)(uintptr_t)c->field);
#define SPX__ENV_FREE_COUNT(field) SPX_FREE((void *)(uintptr_t)c->field.str);
#define SPX__ENV_FREE(var, field, kind, doc) SPX__ENV_FREE_##kind(field)
void spx__config_reload(void) {
  spx__config *c = &spx__cfg_now;
  pthread_once(&spx__cfg_once, spx__cfg_read); /* a first read now would repeat the one below */
  SPX__ENV(SPX__ENV_FREE)
  spx__cfg_read();
}
#undef SPX__ENV_FREE
#undef SPX__ENV_FREE_STR
#undef SPX__ENV_FREE_COUNT
