// The shim is header-only (static inline client requests); this file exists because a C target needs one.
#include "valgrind_shim.h"
