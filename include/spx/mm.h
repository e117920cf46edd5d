/* spx/mm.h: (being written) */
#ifndef SPX_MM_H
#define SPX_MM_H
#include "status.h"
#include "csr.h"
#endif
