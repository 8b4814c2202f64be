#include "forgia/topology.h"

#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* One topology per process: loading it walks /sys and costs milliseconds, and it never
 * changes while we run. Read-only after the once-initialisation. */
static hwloc_topology_t fg_topo;
static int fg_topo_ok;
static pthread_once_t fg_topo_once = PTHREAD_ONCE_INIT;

static void fg_topo_load(void) {
  if (hwloc_topology_init(&fg_topo) != 0) return;
  hwloc_topology_set_io_types_filter(fg_topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(fg_topo) != 0) {
    hwloc_topology_destroy(fg_topo);
    return;
  }
  fg_topo_ok = 1;
}

static fg_status fg_topo_get(hwloc_topology_t *out) {
  pthread_once(&fg_topo_once, fg_topo_load);
  if (!fg_topo_ok) return fg_fail(FG_ERR_UNSUPPORTED, "hwloc: could not load the machine topology");
  *out = fg_topo;
  return FG_OK;
}

static uint64_t fg_cache_size(hwloc_topology_t t, hwloc_obj_type_t type) {
  hwloc_obj_t o = hwloc_get_obj_by_type(t, type, 0);
  return (o && o->attr) ? o->attr->cache.size : 0;
}

fg_status fg_topology_query(fg_topology_info *out) {
  hwloc_topology_t t = NULL;
  fg_status s = fg_topo_get(&t);
  if (s) return s;
  memset(out, 0, sizeof *out);
  out->packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  out->numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  out->cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  out->pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  out->l1d_bytes = fg_cache_size(t, HWLOC_OBJ_L1CACHE);
  out->l2_bytes = fg_cache_size(t, HWLOC_OBJ_L2CACHE);
  out->l3_bytes = fg_cache_size(t, HWLOC_OBJ_L3CACHE);
  hwloc_obj_t root = hwloc_get_root_obj(t);
  /* The kernel's own total: some VMs report less in the per-node meminfo hwloc sums. */
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  out->total_memory = (pages > 0 && psize > 0) ? (uint64_t)pages * (uint64_t)psize : root->total_memory;
  hwloc_obj_t pkg = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
  const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
  if (!model) model = hwloc_obj_get_info_by_name(root, "CPUModel");
  snprintf(out->cpu_model, sizeof out->cpu_model, "%s", model ? model : "unknown CPU");
  return FG_OK;
}

fg_status fg_topology_print(FILE *f) {
  hwloc_topology_t t = NULL;
  fg_status s = fg_topo_get(&t);
  if (s) return s;
  fg_topology_info ti;
  fg_topology_query(&ti);
  fprintf(f, "cpu: %s\n", ti.cpu_model);
  fprintf(f, "  packages %d, NUMA nodes %d, cores %d, hardware threads %d, memory %.1f GiB\n", ti.packages,
          ti.numa_nodes, ti.cores, ti.pus, (double)ti.total_memory / (1024.0 * 1024 * 1024));
  fprintf(f, "  caches: L1d %llu KiB, L2 %llu KiB, L3 %llu KiB\n", (unsigned long long)(ti.l1d_bytes >> 10),
          (unsigned long long)(ti.l2_bytes >> 10), (unsigned long long)(ti.l3_bytes >> 10));
  for (int i = 0; i < ti.numa_nodes; i++) {
    hwloc_obj_t n = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
    int cores = hwloc_get_nbobjs_inside_cpuset_by_type(t, n->cpuset, HWLOC_OBJ_CORE);
    char set[256];
    hwloc_bitmap_list_snprintf(set, sizeof set, n->cpuset);
    fprintf(f, "  NUMA node %d: %d cores (cpus %s), %.1f GiB\n", i, cores, set,
            (double)n->attr->numanode.local_memory / (1024.0 * 1024 * 1024));
  }
  return FG_OK;
}

int fg_topology_node_of_pci(const char *bus_id) {
  hwloc_topology_t t = NULL;
  if (!bus_id || !*bus_id || fg_topo_get(&t)) return -1;
  unsigned dom, bus, dev, fn;
  if (sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return -1;
  hwloc_obj_t pci = hwloc_get_pcidev_by_busid(t, dom, bus, dev, fn);
  hwloc_obj_t anc = pci ? hwloc_get_non_io_ancestor_obj(t, pci) : NULL;
  if (!anc) return -1;
  hwloc_obj_t node = NULL;
  while ((node = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, node)) != NULL)
    if (hwloc_bitmap_isincluded(node->cpuset, anc->cpuset) || hwloc_bitmap_isincluded(anc->cpuset, node->cpuset))
      return (int)node->logical_index;
  return -1;
}

int fg_topology_node_cores(int node) {
  hwloc_topology_t t = NULL;
  if (fg_topo_get(&t)) return 0;
  if (node < 0) return hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  hwloc_obj_t n = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)node);
  return n ? hwloc_get_nbobjs_inside_cpuset_by_type(t, n->cpuset, HWLOC_OBJ_CORE) : 0;
}

static hwloc_obj_t fg_node_obj(hwloc_topology_t t, int node) {
  if (node < 0 || hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE) <= 1) return NULL;
  return hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)node);
}

fg_status fg_topology_bind_thread(int node) {
  hwloc_topology_t t = NULL;
  fg_status s = fg_topo_get(&t);
  if (s) return s;
  hwloc_obj_t n = fg_node_obj(t, node);
  if (!n) return FG_OK;
  if (hwloc_set_cpubind(t, n->cpuset, HWLOC_CPUBIND_THREAD) != 0)
    return fg_fail(FG_ERR_UNSUPPORTED, "hwloc: cannot bind thread to NUMA node %d", node);
  return FG_OK;
}

fg_status fg_topology_bind_memory(void *ptr, size_t bytes, int node) {
  hwloc_topology_t t = NULL;
  fg_status s = fg_topo_get(&t);
  if (s) return s;
  hwloc_obj_t n = fg_node_obj(t, node);
  if (!n || !bytes) return FG_OK;
  if (hwloc_set_area_membind(t, ptr, bytes, n->nodeset, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET) != 0)
    return fg_fail(FG_ERR_UNSUPPORTED, "hwloc: cannot bind %zu bytes to NUMA node %d", bytes, node);
  return FG_OK;
}
