/* spx/gen.h: (being written) */
#ifndef SPX_GEN_H
#define SPX_GEN_H
#include "status.h"
#include "csr.h"
#endif
