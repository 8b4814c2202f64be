/* CLI helper: the hardware limits a load is compared with, measured in the same run. */
#ifndef FORGIA_TOOLS_UTIL_LIMITS_H
#define FORGIA_TOOLS_UTIL_LIMITS_H

#include <stddef.h>

#include "forgia/device.h"

/* The files read into new memory of their size (huge pages advised) by every OpenMP thread,
 * each its share, once a first pass has put them in the page cache: the limit of a kept-dtype
 * copy into fresh memory, which is what a load with default options does (GB/s, allocation
 * included, best of three). Negative when a file cannot be read. A reused 16 MiB buffer would stay in the
 * last-level cache and overstate what any copy of a whole file can do. */
double fg_cli_read_gbs(const char *const *paths, size_t n);
/* Best of 5 multi-threaded memcpy runs of 256 MiB (GB/s copied). */
double fg_cli_memcpy_gbs(void);
/* Best of 5 pinned host-to-device copies of 256 MiB (GB/s); 0 when dev is not a GPU. */
double fg_cli_h2d_gbs(fg_device *dev);

#endif
