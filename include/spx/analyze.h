/* spx/analyze.h: (being written) */
#ifndef SPX_ANALYZE_H
#define SPX_ANALYZE_H
#include "status.h"
#include "csr.h"
#endif
