/* The mapping object, shared by core/mapping.c (open, hints, identity) and
 * core/mapping_guard.c (reads that survive the file changing underneath). Internal. */
#ifndef FORGIA_CORE_MAPPING_INTERNAL_H
#define FORGIA_CORE_MAPPING_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "forgia/mapping.h"

enum { FG_MAP_KIND_MMAP = 0, FG_MAP_KIND_OWNED = 1, FG_MAP_KIND_BORROWED = 2 };

struct fg_mapping {
  atomic_int refs;
  const uint8_t *data;
  size_t size;
  int kind;                  /* FG_MAP_KIND_* */
  char *path;
  /* What the file was when it was opened (from_file): a fault or a check compares the
   * path's file now with this. */
  bool from_file;
  dev_t st_dev;
  ino_t st_ino;
  struct timespec mtime;
};

#endif
