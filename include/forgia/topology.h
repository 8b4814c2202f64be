/* Machine topology from hwloc: packages, NUMA nodes, cores, caches, and binding of
 * threads and memory to the NUMA node nearest a GPU. The topology is loaded once per
 * process (read-only afterwards).
 *
 * Thread safety: every function may be called from any thread; the first call loads the
 * topology exactly once (pthread_once), later calls only read it. */
#ifndef FORGIA_TOPOLOGY_H
#define FORGIA_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "forgia/api.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_topology_info {
  int packages, numa_nodes, cores, pus;
  uint64_t l1d_bytes, l2_bytes, l3_bytes; /* per instance, first found; 0 when unknown */
  uint64_t total_memory;
  char cpu_model[128];
} fg_topology_info;

FG_API fg_status fg_topology_query(fg_topology_info *out);
/* Writes a human-readable description (packages, NUMA nodes with their cores and memory,
 * caches) to f. */
FG_API fg_status fg_topology_print(FILE *f);
/* NUMA node (logical index) closest to the PCI device "dddd:bb:dd.f", -1 when unknown. */
FG_API int fg_topology_node_of_pci(const char *bus_id);
/* Physical cores on NUMA node `node` (all cores when node < 0). */
FG_API int fg_topology_node_cores(int node);
/* Binds the calling thread to the cores of `node`. A no-op returning FG_OK on a machine
 * with one NUMA node or when node < 0. */
FG_API fg_status fg_topology_bind_thread(int node);
/* Binds [ptr, ptr+bytes) to `node` before first touch; best effort, same no-op rule. */
FG_API fg_status fg_topology_bind_memory(void *ptr, size_t bytes, int node);

#ifdef __cplusplus
}
#endif
#endif
