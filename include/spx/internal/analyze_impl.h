/* Implementation of spx/analyze.h. */
#include "common.h"
#include "../analyze.h"
