#define _GNU_SOURCE
#include "device/hostmem.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "forgia/topology.h"

/* Layout: one page holding the mapping length, then the caller's bytes (page aligned). */
fg_status fg_hostmem_alloc(size_t bytes, int numa_node, void **out) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (bytes > SIZE_MAX - 2 * page) return fg_fail(FG_ERR_OVERFLOW, "host allocation of %zu bytes overflows", bytes);
  size_t len = page + ((bytes + page - 1) / page) * page;
  void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return fg_fail(FG_ERR_NOMEM, "cannot map %zu bytes of host memory: %s", bytes, strerror(errno));
  *(size_t *)base = len;
  uint8_t *user = (uint8_t *)base + page;
  if (numa_node >= 0) (void)fg_topology_bind_memory(user, len - page, numa_node); /* hint: best effort */
  *out = user;
  return FG_OK;
}

void fg_hostmem_free(void *ptr) {
  if (!ptr) return;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  uint8_t *base = (uint8_t *)ptr - page;
  munmap(base, *(size_t *)base);
}

size_t fg_hostmem_size(const void *ptr) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return *(const size_t *)((const uint8_t *)ptr - page) - page;
}
