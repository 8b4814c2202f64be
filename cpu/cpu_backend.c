/* CPU backend: device memory is host memory; streams run synchronously. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "cpu/cpu_ops.h"
#include "forgia/topology.h"
#include "device/backend.h"

static fg_status cpu_query(fg_device *dev, fg_device_info *out) {
  (void)dev;
  fg_topology_info t;
  fg_status s = fg_topology_query(&t);
  if (s) return s;
  snprintf(out->name, sizeof out->name, "%s", t.cpu_model);
  out->total_mem = t.total_memory;
  long avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  out->free_mem = (avail > 0 && page > 0) ? (uint64_t)avail * (uint64_t)page : 0;
  out->multiprocessors = t.pus;
  out->numa_node = t.numa_nodes > 0 ? 0 : -1;
  out->numa_cores = t.cores;
  return FG_OK;
}

static fg_status cpu_alloc(fg_device *dev, size_t bytes, void **out) {
  (void)dev;
  void *p = NULL;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0)
    return fg_fail(FG_ERR_DEVICE_NOMEM, "cpu: cannot allocate %zu bytes", bytes);
  *out = p;
  return FG_OK;
}

static void cpu_free(fg_device *dev, void *ptr) {
  (void)dev;
  free(ptr);
}

static fg_status cpu_memset(fg_device *dev, void *ptr, int value, size_t bytes) {
  (void)dev;
  memset(ptr, value, bytes);
  return FG_OK;
}

static fg_status cpu_copy(fg_device *dev, void *dst, const void *src, size_t bytes, fg_copy_kind kind, void *stream) {
  (void)dev, (void)kind, (void)stream;
  fg_cpu_memcpy(dst, src, bytes);
  return FG_OK;
}

static fg_status cpu_nop(fg_device *dev) {
  (void)dev;
  return FG_OK;
}

static fg_status cpu_stream_create(fg_device *dev, void **out) {
  (void)dev;
  *out = NULL;
  return FG_OK;
}
static void cpu_stream_destroy(fg_device *dev, void *s) { (void)dev, (void)s; }
static fg_status cpu_stream_sync(fg_device *dev, void *s) {
  (void)dev, (void)s;
  return FG_OK;
}

/* An event is the wall time at which it was recorded: everything before it has run. */
static fg_status cpu_event_create(fg_device *dev, void **out) {
  (void)dev;
  double *t = calloc(1, sizeof *t);
  if (!t) return fg_fail(FG_ERR_NOMEM, "event: out of memory");
  *out = t;
  return FG_OK;
}
static void cpu_event_destroy(fg_device *dev, void *e) {
  (void)dev;
  free(e);
}
static fg_status cpu_event_record(fg_device *dev, void *e, void *s) {
  (void)dev, (void)s;
  *(double *)e = fg_clock_seconds() * 1e3;
  return FG_OK;
}
static fg_status cpu_event_sync(fg_device *dev, void *e) {
  (void)dev, (void)e;
  return FG_OK;
}
static fg_status cpu_event_query(fg_device *dev, void *e, bool *done) {
  (void)dev, (void)e;
  *done = true;
  return FG_OK;
}
static fg_status cpu_stream_wait(fg_device *dev, void *s, void *e) {
  (void)dev, (void)s, (void)e;
  return FG_OK;
}
static fg_status cpu_event_elapsed(fg_device *dev, void *a, void *b, float *ms) {
  (void)dev;
  *ms = (float)(*(double *)b - *(double *)a);
  return FG_OK;
}

static fg_status cpu_convert(fg_device *dev, void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n,
                             void *stream) {
  (void)dev, (void)stream;
  return fg_cpu_convert(dst, dt, src, st, n);
}

FG_FAMILY_SLOTS(fg_cpu)

const fg_backend fg_cpu_backend = {
  .name = "cpu",
  .query = cpu_query,
  .alloc = cpu_alloc,
  .free = cpu_free,
  .memset = cpu_memset,
  .copy = cpu_copy,
  .sync = cpu_nop,
  .stream_create = cpu_stream_create,
  .stream_destroy = cpu_stream_destroy,
  .stream_sync = cpu_stream_sync,
  .event_create = cpu_event_create,
  .event_destroy = cpu_event_destroy,
  .event_record = cpu_event_record,
  .event_sync = cpu_event_sync,
  .event_query = cpu_event_query,
  .stream_wait = cpu_stream_wait,
  .event_elapsed = cpu_event_elapsed,
  .convert = cpu_convert,
  .families = fg_cpu_families,
};
