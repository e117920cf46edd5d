/* spx/baseline.h: (being written) */
#ifndef SPX_BASELINE_H
#define SPX_BASELINE_H
#include "status.h"
#endif
