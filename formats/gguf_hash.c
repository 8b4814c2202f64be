/* Name -> index hash table for GGUF keys and tensor names (open addressing, linear
 * probing, load factor <= 1/2). Names are not stored: a callback returns the name of an
 * index, so the table costs 16 bytes per slot whatever the name lengths. */
#include "formats/gguf_internal.h"

#include <stdlib.h>

uint64_t fg_gguf_hash_bytes(const void *s, size_t n) {
  /* FNV-1a, 64-bit */
  const uint8_t *p = s;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

void fg_gguf_hash_free(fg_gguf_hash *h) {
  if (!h) return;
  free(h->hashes);
  free(h->idx1);
  memset(h, 0, sizeof *h);
}

static fg_status hash_alloc(fg_gguf_hash *h, uint64_t n) {
  uint64_t cap = 16;
  while (cap < n * 2) {
    if (cap > (UINT64_MAX >> 2) || cap > SIZE_MAX / (2 * sizeof(uint64_t)))
      return fg_fail(FG_ERR_NOMEM, "hash table for %llu names is too large", (unsigned long long)n);
    cap <<= 1;
  }
  uint64_t *hs = calloc((size_t)cap, sizeof *hs);
  uint64_t *ix = calloc((size_t)cap, sizeof *ix);
  if (!hs || !ix) {
    free(hs);
    free(ix);
    return fg_fail(FG_ERR_NOMEM, "hash table for %llu names: out of memory", (unsigned long long)n);
  }
  h->hashes = hs;
  h->idx1 = ix;
  h->cap = cap;
  h->used = 0;
  return FG_OK;
}

fg_status fg_gguf_hash_reset(fg_gguf_hash *h, uint64_t n) {
  fg_gguf_hash fresh = {0};
  fg_status s = hash_alloc(&fresh, n);
  if (s) return s;
  fg_gguf_hash_free(h);
  *h = fresh;
  return FG_OK;
}

static int name_eq(fg_gguf_str a, const char *s, size_t n) {
  return a.len == n && (n == 0 || memcmp(a.ptr, s, n) == 0);
}

int64_t fg_gguf_hash_find(const fg_gguf_hash *h, const char *s, size_t n, fg_gguf_name_at at, const void *ctx) {
  if (!h->cap) return -1;
  uint64_t hv = fg_gguf_hash_bytes(s, n), mask = h->cap - 1;
  for (uint64_t i = hv & mask;; i = (i + 1) & mask) {
    if (!h->idx1[i]) return -1;
    if (h->hashes[i] == hv && name_eq(at(ctx, h->idx1[i] - 1), s, n)) return (int64_t)(h->idx1[i] - 1);
  }
}

static void place(fg_gguf_hash *h, uint64_t hv, uint64_t idx1) {
  uint64_t mask = h->cap - 1, i = hv & mask;
  while (h->idx1[i]) i = (i + 1) & mask;
  h->hashes[i] = hv;
  h->idx1[i] = idx1;
  h->used++;
}

fg_status fg_gguf_hash_insert(fg_gguf_hash *h, const char *s, size_t n, uint64_t idx,
                              fg_gguf_name_at at, const void *ctx, int64_t *dup) {
  *dup = fg_gguf_hash_find(h, s, n, at, ctx);
  if (*dup >= 0) return FG_OK;
  if ((h->used + 1) * 2 > h->cap) {
    fg_gguf_hash bigger = {0};
    fg_status st = hash_alloc(&bigger, h->used + 1 > 8 ? (h->used + 1) * 2 : 8);
    if (st) return st;
    for (uint64_t i = 0; i < h->cap; i++)
      if (h->idx1[i]) place(&bigger, h->hashes[i], h->idx1[i]);
    fg_gguf_hash_free(h);
    *h = bigger;
  }
  place(h, fg_gguf_hash_bytes(s, n), idx + 1);
  return FG_OK;
}
