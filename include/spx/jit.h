/* spx/jit.h: (being written) */
#ifndef SPX_JIT_H
#define SPX_JIT_H
#include "status.h"
#endif
