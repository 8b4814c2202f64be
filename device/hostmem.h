/* Page-aligned host allocations that remember their size, so they can be bound to a NUMA
 * node before first touch and registered with a GPU runtime. Internal. */
#ifndef FORGIA_DEVICE_HOSTMEM_H
#define FORGIA_DEVICE_HOSTMEM_H

#include <stddef.h>

#include "forgia/status.h"

fg_status fg_hostmem_alloc(size_t bytes, int numa_node, void **out);
void fg_hostmem_free(void *ptr);
size_t fg_hostmem_size(const void *ptr);

#endif
