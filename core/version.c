#include "forgia/version.h"

const char *fg_version(void) { return FORGIA_VERSION_STRING; }

int fg_version_number(void) { return FORGIA_VERSION_NUMBER; }
