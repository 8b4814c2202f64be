/* Small text helpers, header-only so that the library, the CLI and the benchmarks share them
 * (a shared libforgia exports only the public API). */
#ifndef FORGIA_CORE_TEXT_H
#define FORGIA_CORE_TEXT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Writes code point cp (< 0x110000) as UTF-8 at o; returns its length, 1..4. */
static inline size_t fg_utf8_put(uint32_t cp, char *o) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* "dir/name", malloc'd; NULL when out of memory. */
static inline char *fg_path_join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *p = (char *)malloc(a + b + 2);
  if (!p) return NULL;
  memcpy(p, dir, a);
  p[a] = '/';
  memcpy(p + a + 1, name, b + 1);
  return p;
}

#endif
