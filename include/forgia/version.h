#ifndef FORGIA_VERSION_H
#define FORGIA_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the library actually linked. */
const char *fg_version(void);

#ifdef __cplusplus
}
#endif
#endif
