/* Version of the headers (compile time) and of the library linked (run time).
 *
 * This header is the one place the version is written: CMakeLists.txt reads the three
 * numbers below for project(VERSION), so the package version, forgia.pc and the shared
 * library's SOVERSION (the major number) follow it. A program can check that the library
 * it runs with matches the headers it was built with:
 *   fg_version_number() / 10000 == FORGIA_VERSION_MAJOR
 *
 * Thread safety: both functions return constants and may be called from any thread. */
#ifndef FORGIA_VERSION_H
#define FORGIA_VERSION_H

#include "forgia/api.h"

#define FORGIA_VERSION_MAJOR 0
#define FORGIA_VERSION_MINOR 1
#define FORGIA_VERSION_PATCH 0

/* MAJOR * 10000 + MINOR * 100 + PATCH (minor and patch stay below 100). */
#define FORGIA_VERSION_NUMBER (FORGIA_VERSION_MAJOR * 10000 + FORGIA_VERSION_MINOR * 100 + FORGIA_VERSION_PATCH)
#define FORGIA_VERSION_STR_(x) #x
#define FORGIA_VERSION_STR(x) FORGIA_VERSION_STR_(x)
/* "MAJOR.MINOR.PATCH" */
#define FORGIA_VERSION_STRING                                                              \
  FORGIA_VERSION_STR(FORGIA_VERSION_MAJOR) "." FORGIA_VERSION_STR(FORGIA_VERSION_MINOR) "." \
  FORGIA_VERSION_STR(FORGIA_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the library actually linked. */
FG_API const char *fg_version(void);
/* FORGIA_VERSION_NUMBER of the library actually linked. */
FG_API int fg_version_number(void);

#ifdef __cplusplus
}
#endif
#endif
