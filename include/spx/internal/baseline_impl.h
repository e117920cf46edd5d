/* Implementation of spx/baseline.h. */
#include "common.h"
#include "../baseline.h"
