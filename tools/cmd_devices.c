/* forgia devices: the CPU topology (hwloc) and every CUDA device. */
#include <stdio.h>
#include <string.h>

#include "forgia/forgia.h"
#include "util_args.h"
#include "util_report.h"

const char fg_cmd_devices_summary[] = "list CPU packages, NUMA nodes, cores, caches and CUDA devices";

static void usage(FILE *f) { fprintf(f, "usage: forgia devices\n\n%s\n", fg_cmd_devices_summary); }

int fg_cmd_devices(int argc, char **argv) {
  const fg_cli_spec spec = {"devices", "forgia devices", usage, NULL, 0, NULL, NULL, 0, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  if (fg_topology_print(stdout) != FG_OK) {
    fg_cli_report("devices", NULL);
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
  for (int i = 0; i < n; i++) {
    char spec_name[24]; /* "cuda:" and any int */
    snprintf(spec_name, sizeof spec_name, "cuda:%d", i);
    fg_device *d = NULL;
    fg_device_info info;
    if (fg_device_open(spec_name, &d) != FG_OK || fg_device_query(d, &info) != FG_OK) {
      /* one line per failure: stop at the first rather than print several */
      fg_cli_report("devices", spec_name);
      fg_device_close(d);
      return 1;
    }
    printf("%s: %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f GiB free), PCI %s, NUMA node %d (%d cores)\n",
           spec_name, info.name, info.cc_major, info.cc_minor, info.multiprocessors,
           (double)info.total_mem / (1 << 30), (double)info.free_mem / (1 << 30), info.pci_bus_id, info.numa_node,
           info.numa_cores);
    fg_device_close(d);
  }
  return 0;
}
