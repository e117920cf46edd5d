/* SPDX-License-Identifier: BSD-3-Clause */
/* One implementation file compiled alone (tests/BUILD.gn names it: SPX_TEST_IMPL=<name>_impl):
 * it includes every header that declares what it uses, so it does not build only because spx.h
 * includes the files in order. Compiled, never run. POSIX as spx.h asks for it. */
#define _POSIX_C_SOURCE 200809L
#define SPX__ALONE_STR2(x) #x
#define SPX__ALONE_STR(x) SPX__ALONE_STR2(x)
#include SPX__ALONE_STR(spx/internal/SPX_TEST_IMPL.h)
