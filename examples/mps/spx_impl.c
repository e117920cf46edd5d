/* SPDX-License-Identifier: BSD-3-Clause */
/* The spx implementation, compiled once for the program (the other files include the headers). */
#define SPX_IMPLEMENTATION
#include <spx/spx.h>
