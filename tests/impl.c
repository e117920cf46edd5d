/* SPDX-License-Identifier: BSD-3-Clause */
/* The one translation unit that compiles the spx implementation, for the tests and the examples. */
#define SPX_IMPLEMENTATION
#include <spx/spx.h>
