/* SPDX-License-Identifier: BSD-3-Clause */
// Proves the public headers compile as C++17 and link against the C implementation.
#include <spx/spx.h>

#include <cstdio>
#include <cstring>

int main() {
  spx_csr *a = nullptr;
  if (spx_csr_create(2, 2, 0, SPX_DOUBLE, &a) != SPX_OK) return 1;
  spx_csr_destroy(a);
  if (std::strcmp(spx_status_string(SPX_PARSE), "parse") != 0) return 1;
  std::printf("spx C++17 header check ok\n");
  return 0;
}
