// The one C++ translation unit holding the generated collectives' definitions.
#define BINE_IMPLEMENTATION
#include "consumer_bine.h"
