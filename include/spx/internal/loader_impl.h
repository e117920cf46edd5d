/* Implementation of spx/loader.h. */
#include "common.h"
#include "../loader.h"
