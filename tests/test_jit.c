/* Tests of spx/jit.h (being written). */
#include "spx_test.h"

static void test_placeholder(void **state) { (void)state; skip(); }

int main(void) {
  const struct CMUnitTest tests[] = { cmocka_unit_test(test_placeholder) };
  return cmocka_run_group_tests_name("jit", tests, NULL, NULL);
}
