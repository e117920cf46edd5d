/* SPDX-License-Identifier: BSD-3-Clause */
/* The smallest spx program, and the proof of the header-only build: it is compiled with exactly
 *     cc examples/hello.c -Iinclude -ldl -lz -o hello
 * (by GN through //examples:hello_plain, and by tests/run.sh). */
#define SPX_IMPLEMENTATION
#include <spx/spx.h>

#include <stdio.h>

int main(void) {
  /* A 2x2 matrix [[4, 1], [1, 3]] times [1, 2] must give [6, 7]. */
  const int32_t row[] = {0, 0, 1, 1}, col[] = {0, 1, 0, 1};
  const double val[] = {4, 1, 1, 3}, x[] = {1, 2};
  double y[2];
  spx_csr *a;
  if (spx_csr_from_coo(2, 2, 4, row, col, val, SPX_DOUBLE, &a) != SPX_OK ||
      spx_csr_spmv(a, 1.0, x, 0.0, y) != SPX_OK) {
    fprintf(stderr, "hello: %s\n", spx_last_error());
    return 1;
  }
  spx_csr_destroy(a);
  printf("spx %s: y = [%g, %g]\n", SPX_VERSION_STRING, y[0], y[1]);
  return y[0] == 6 && y[1] == 7 ? 0 : 1;
}
