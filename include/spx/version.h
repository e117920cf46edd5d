/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/version.h: the library's version, in one place: spx.h and the implementation files that
 * print or key on it include this, and build/install.sh and python/setup.py read it from here. */
#ifndef SPX_VERSION_H
#define SPX_VERSION_H

#define SPX_VERSION_MAJOR 0
#define SPX_VERSION_MINOR 1
#define SPX_VERSION_PATCH 0
#define SPX_VERSION_STRING "0.1.0"

#endif /* SPX_VERSION_H */
