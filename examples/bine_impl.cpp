// The one C++ translation unit that holds the generated collectives' definitions.
#define BINE_IMPLEMENTATION
#include "bine_lib.h"
