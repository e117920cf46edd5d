/* Implementation of spx/mm.h. */
#include "common.h"
#include "../mm.h"
