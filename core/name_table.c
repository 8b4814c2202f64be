#define _GNU_SOURCE
#include "core/name_table.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* ---- SipHash-1-3 (Aumasson and Bernstein), keyed once per process ------------------- */

static uint64_t g_k0, g_k1;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static void key_init(void) {
  uint64_t k[2] = {0, 0};
  if (getrandom(k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
    /* No entropy yet (early boot): still a key an attacker cannot read from the file. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    k[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&k;
    k[1] = (uint64_t)ts.tv_sec * 0xbf58476d1ce4e5b9ull ^ (uint64_t)(uintptr_t)&g_k0;
  }
  g_k0 = k[0];
  g_k1 = k[1];
}

static inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

#define SIPROUND                                                                                \
  do {                                                                                          \
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);                                  \
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                                                      \
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                                                      \
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);                                  \
  } while (0)

static uint64_t siphash13(uint64_t k0, uint64_t k1, const uint8_t *p, size_t n) {
  uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  size_t whole = n & ~(size_t)7;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m;
    memcpy(&m, p + i, 8); /* host order: only equality within one process matters */
    v3 ^= m;
    SIPROUND;
    v0 ^= m;
  }
  uint64_t b = (uint64_t)n << 56;
  for (size_t i = 0; i < (n & 7); i++) b |= (uint64_t)p[whole + i] << (8 * i);
  v3 ^= b;
  SIPROUND;
  v0 ^= b;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t fg_name_hash(const void *s, size_t n) {
  pthread_once(&g_key_once, key_init);
  return siphash13(g_k0, g_k1, s, n);
}

/* ---- the table --------------------------------------------------------------------- */

#define FG_NAME_TABLE_MAX (1ull << 31) /* names; the slots' 32-bit index and tag need cap <= 2^32 */

/* The 32 hash bits a slot keeps: they pick the slot (low bits) and screen the compare. */
static inline uint64_t tag_of(const void *s, size_t n) { return fg_name_hash(s, n) >> 32; }
static inline uint64_t slot_tag(uint64_t slot) { return slot >> 32; }
static inline uint64_t slot_idx1(uint64_t slot) { return slot & 0xffffffffull; }

void fg_name_table_free(fg_name_table *t) {
  if (!t) return;
  free(t->slots);
  memset(t, 0, sizeof *t);
}

static fg_status table_alloc(fg_name_table *t, uint64_t n) {
  if (n > FG_NAME_TABLE_MAX)
    return fg_fail(FG_ERR_NOMEM, "name table for %llu names is too large (at most 2^31)", (unsigned long long)n);
  uint64_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap > SIZE_MAX / sizeof(uint64_t))
    return fg_fail(FG_ERR_NOMEM, "name table for %llu names is too large", (unsigned long long)n);
  uint64_t *sl = calloc((size_t)cap, sizeof *sl);
  if (!sl) return fg_fail(FG_ERR_NOMEM, "name table for %llu names: out of memory", (unsigned long long)n);
  *t = (fg_name_table){.slots = sl, .cap = cap};
  return FG_OK;
}

fg_status fg_name_table_reset(fg_name_table *t, uint64_t n) {
  fg_name_table fresh;
  fg_status s = table_alloc(&fresh, n);
  if (s) return s;
  fg_name_table_free(t);
  *t = fresh;
  return FG_OK;
}

static int name_eq(fg_name a, const char *s, size_t n) { return a.len == n && (n == 0 || memcmp(a.ptr, s, n) == 0); }

/* *probes (when not NULL) grows by the slots inspected. */
static int64_t find_tagged(const fg_name_table *t, uint64_t tag, const char *s, size_t n, fg_name_at_fn at,
                           const void *ctx, uint64_t *probes) {
  if (!t->cap) return -1;
  uint64_t mask = t->cap - 1, k = 0;
  int64_t found = -1;
  for (uint64_t i = tag & mask;; i = (i + 1) & mask) {
    const uint64_t sl = t->slots[i];
    k++;
    if (!sl) break;
    if (slot_tag(sl) == tag && name_eq(at(ctx, slot_idx1(sl) - 1), s, n)) {
      found = (int64_t)(slot_idx1(sl) - 1);
      break;
    }
  }
  if (probes) *probes += k;
  return found;
}

int64_t fg_name_table_find(const fg_name_table *t, const char *s, size_t n, fg_name_at_fn at, const void *ctx) {
  if (!t->cap) return -1;
  return find_tagged(t, tag_of(s, n), s, n, at, ctx, NULL);
}

static void place(fg_name_table *t, uint64_t slot) {
  uint64_t mask = t->cap - 1, i = slot_tag(slot) & mask;
  t->probes++;
  while (t->slots[i]) {
    i = (i + 1) & mask;
    t->probes++;
  }
  t->slots[i] = slot;
  t->used++;
}

fg_status fg_name_table_insert(fg_name_table *t, const char *s, size_t n, uint64_t idx, fg_name_at_fn at,
                               const void *ctx, int64_t *dup) {
  uint64_t tag = tag_of(s, n);
  *dup = find_tagged(t, tag, s, n, at, ctx, &t->probes);
  if (*dup >= 0) return FG_OK;
  if (idx >= FG_NAME_TABLE_MAX)
    return fg_fail(FG_ERR_NOMEM, "name table: index %llu is beyond the 2^31 names a table holds",
                   (unsigned long long)idx);
  if ((t->used + 1) * 2 > t->cap) {
    fg_name_table bigger;
    uint64_t want = t->used + 1 > 8 ? (t->used + 1) * 2 : 8;
    fg_status st = table_alloc(&bigger, want < FG_NAME_TABLE_MAX ? want : FG_NAME_TABLE_MAX);
    if (st) return st;
    bigger.probes = t->probes;
    for (uint64_t i = 0; i < t->cap; i++)
      if (t->slots[i]) place(&bigger, t->slots[i]);
    fg_name_table_free(t);
    *t = bigger;
  }
  place(t, (tag << 32) | (idx + 1));
  return FG_OK;
}
