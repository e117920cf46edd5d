/* Implementation of spx/gen.h. */
#include "common.h"
#include "../gen.h"
