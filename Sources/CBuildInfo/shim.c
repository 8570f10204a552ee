// Everything is in the header; SwiftPM needs one source file for a C target.
#include "build_info.h"
