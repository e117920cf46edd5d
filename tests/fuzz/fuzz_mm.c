/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the Matrix Market reader: any bytes (plain text or gzip) must give either
 * a valid CSR or a clean error, in both dtypes, without leaks or undefined behaviour. The input is
 * read in place when it ends in '\n', so ASan also checks that the parser never reads past it. */
#include <spx/spx.h>
#include <spx/internal/common.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int t;
  /* Declared sizes beyond 2^20 are valid but only cost O(rows) page clearing: not what we fuzz. */
  spx__mm_dim_limit = 1 << 20;
  for (t = 0; t < 2; t++) {
    spx_csr *a = NULL;
    spx_mm_info info;
    spx_status s = spx_mm_read_buffer((const char *)data, size, "fuzz.mtx", t ? SPX_FLOAT : SPX_DOUBLE, &a, &info);
    if (s == SPX_OK) {
      /* A result must be a valid CSR with the announced shape. */
      if (spx_csr_validate(a) != SPX_OK || a->nrows != info.nrows || a->ncols != info.ncols) __builtin_trap();
      spx_csr_destroy(a);
    } else if (a != NULL || spx_last_error()[0] == 0) {
      __builtin_trap(); /* failures leave *out NULL and say why */
    }
  }
  return 0;
}
