/* SPDX-License-Identifier: BSD-3-Clause */
/* The C translation unit that holds the spx implementation for the CUDA C++ example. */
#define SPX_IMPLEMENTATION
#include <spx/spx.h>
