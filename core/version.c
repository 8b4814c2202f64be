#include "forgia/version.h"

const char *fg_version(void) { return FORGIA_VERSION_STRING; }
