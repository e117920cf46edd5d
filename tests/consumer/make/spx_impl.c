/* SPDX-License-Identifier: BSD-3-Clause */
/* The one translation unit of the program that compiles the spx implementation. */
#define SPX_IMPLEMENTATION
#include <spx/spx.h>
