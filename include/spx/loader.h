/* spx/loader.h: (being written) */
#ifndef SPX_LOADER_H
#define SPX_LOADER_H
#include "status.h"
#include "csr.h"
#endif
