/* SPDX-License-Identifier: BSD-3-Clause */
/* Changing an environment variable spx reads while a test runs. The library reads its environment
 * once (include/spx/internal/config.h), so every change here goes with spx__config_reload().
 * POSIX (setenv): include after _POSIX_C_SOURCE and spx_test.h. */
#ifndef SPX_TEST_ENV_H
#define SPX_TEST_ENV_H
#include <stdlib.h>
#include <spx/internal/config.h>

/* name = value (NULL: unset), then spx reads its environment again; setenv's or unsetenv's result. */
static inline int env_put(const char *name, const char *value) {
  int r = value ? setenv(name, value, 1) : unsetenv(name);
  spx__config_reload();
  return r;
}
#endif /* SPX_TEST_ENV_H */
