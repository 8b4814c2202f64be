/* forgia devices: the CPU topology (hwloc) and every CUDA device. */
#include <stdio.h>
#include <string.h>

#include "forgia/forgia.h"

const char fg_cmd_devices_summary[] = "list CPU packages, NUMA nodes, cores, caches and CUDA devices";

int fg_cmd_devices(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: forgia devices\n\n%s\n", fg_cmd_devices_summary);
      return 0;
    }
    fprintf(stderr, "forgia devices: unknown argument '%s'\nusage: forgia devices\n", argv[i]);
    return 2;
  }
  if (fg_topology_print(stdout) != FG_OK) {
    fprintf(stderr, "forgia devices: %s\n", fg_last_error());
    return 1;
  }
  if (!fg_build_has_cuda()) {
    printf("cuda: this build has no CUDA backend (configured with FORGIA_CUDA=OFF or without nvcc)\n");
    return 0;
  }
  int n = fg_cuda_device_count();
  if (n == 0) {
    printf("cuda: no CUDA device is present\n");
    return 0;
  }
  int rc = 0;
  for (int i = 0; i < n; i++) {
    char spec[16];
    snprintf(spec, sizeof spec, "cuda:%d", i);
    fg_device *d;
    fg_device_info info;
    if (fg_device_open(spec, &d) != FG_OK || fg_device_query(d, &info) != FG_OK) {
      fprintf(stderr, "forgia devices: %s\n", fg_last_error());
      rc = 1;
      continue;
    }
    printf("%s: %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f GiB free), PCI %s, NUMA node %d (%d cores)\n",
           spec, info.name, info.cc_major, info.cc_minor, info.multiprocessors,
           (double)info.total_mem / (1 << 30), (double)info.free_mem / (1 << 30), info.pci_bus_id, info.numa_node,
           info.numa_cores);
    fg_device_close(d);
  }
  return rc;
}
