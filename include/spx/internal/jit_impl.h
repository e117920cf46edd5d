/* Implementation of spx/jit.h. */
#include "common.h"
#include "../jit.h"
