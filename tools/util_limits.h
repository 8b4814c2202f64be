/* CLI helper: the hardware limits a load is compared with, measured in the same run. */
#ifndef FORGIA_TOOLS_UTIL_LIMITS_H
#define FORGIA_TOOLS_UTIL_LIMITS_H

#include <stddef.h>

#include "forgia/device.h"

/* read() of the files, start to end, into one reused 16 MiB buffer: the rate at which one
 * thread gets the bytes out of the page cache (GB/s). Negative when a file cannot be read. */
double fg_cli_read_gbs(const char *const *paths, size_t n);
/* Best of 5 multi-threaded memcpy runs of 256 MiB (GB/s copied). */
double fg_cli_memcpy_gbs(void);
/* Best of 5 pinned host-to-device copies of 256 MiB (GB/s); 0 when dev is not a GPU. */
double fg_cli_h2d_gbs(fg_device *dev);

#endif
