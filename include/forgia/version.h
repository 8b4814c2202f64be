#ifndef FORGIA_VERSION_H
#define FORGIA_VERSION_H

#include "forgia/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the library actually linked. */
FG_API const char *fg_version(void);

#ifdef __cplusplus
}
#endif
#endif
