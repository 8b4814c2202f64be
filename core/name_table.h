/* Name -> index table shared by every parser and writer (GGUF keys and tensor names,
 * safetensors tensor names and metadata keys, Hugging Face index maps). Internal.
 *
 * Open addressing with linear probing at load factor <= 1/2. Names are not stored: a
 * callback returns the name of an index, and a slot is 8 bytes (32 bits of the name's hash
 * and the index), so a table costs 16 to 32 bytes per name whatever the names; that keeps
 * a parser's memory a small multiple of its header. At most 2^31 names.
 *
 * The hash is SipHash-1-3 under a key drawn from the OS once per process, so names built
 * to collide (a hostile header of 100k crafted tensor names) cannot make parsing
 * quadratic: with an unkeyed hash such inputs are easy to precompute. Lookups return the
 * same indices whatever the key; nothing iterates the table, so no output depends on it. */
#ifndef FORGIA_CORE_NAME_TABLE_H
#define FORGIA_CORE_NAME_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_name {
  const char *ptr;
  size_t len;
} fg_name;

/* The name stored under index i. */
typedef fg_name (*fg_name_at_fn)(const void *ctx, uint64_t i);

typedef struct fg_name_table {
  uint64_t *slots;  /* (32 hash bits << 32) | (index + 1); 0 marks an empty slot */
  uint64_t cap;     /* power of two, or 0 before the first reset */
  uint64_t used;
  uint64_t probes;  /* slots inspected by inserts (regrowth included) since the last reset:
                       a work counter for tests; lookups leave it alone, so that concurrent
                       readers of a built table write nothing */
} fg_name_table;

/* The keyed 64-bit hash of n bytes (stable within a process). */
uint64_t fg_name_hash(const void *s, size_t n);

/* Empties the table and sizes it for n names without growing. On failure the table is
 * unchanged. A zero-initialised table is valid and empty. FG_ERR_NOMEM beyond 2^31 names. */
fg_status fg_name_table_reset(fg_name_table *t, uint64_t n);
void fg_name_table_free(fg_name_table *t); /* leaves an empty, reusable table */
/* Index stored under the name, or -1. */
int64_t fg_name_table_find(const fg_name_table *t, const char *s, size_t n, fg_name_at_fn at, const void *ctx);
/* Stores idx under the name, growing as needed. When the name is present already nothing
 * is stored and *dup receives the existing index; otherwise *dup is -1. */
fg_status fg_name_table_insert(fg_name_table *t, const char *s, size_t n, uint64_t idx, fg_name_at_fn at,
                               const void *ctx, int64_t *dup);

#ifdef __cplusplus
}
#endif
#endif
