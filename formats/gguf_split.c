/* Split GGUF files (NAME-00001-of-0000N.gguf): every part is a complete GGUF; part 1 holds
 * the model metadata. fg_gguf_open_auto maps all parts and merges them into one view. */
#include "formats/gguf_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define SPLIT_SUFFIX_LEN 20 /* "-00001-of-00003.gguf" */

static int digits5(const char *s, uint32_t *v) {
  uint32_t x = 0;
  for (int i = 0; i < 5; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    x = x * 10 + (uint32_t)(s[i] - '0');
  }
  *v = x;
  return 1;
}

bool fg_gguf_split_name(const char *path, uint32_t *part_no, uint32_t *part_count) {
  if (!path) return false;
  size_t n = strlen(path);
  if (n < SPLIT_SUFFIX_LEN) return false;
  const char *s = path + n - SPLIT_SUFFIX_LEN;
  uint32_t no, count;
  if (s[0] != '-' || !digits5(s + 1, &no) || memcmp(s + 6, "-of-", 4) != 0 || !digits5(s + 10, &count) ||
      strcmp(s + 15, ".gguf") != 0)
    return false;
  if (no < 1 || count < 1 || no > count) return false;
  if (part_no) *part_no = no;
  if (part_count) *part_count = count;
  return true;
}

/* An optional split key of an exact wire type; *present tells whether it exists. */
static fg_status split_key(const fg_gguf_file *f, const char *key, fg_gguf_type type, int64_t *v, int *present) {
  int64_t i = fg_gguf_key_index(f, key);
  *present = i >= 0;
  if (i < 0) return FG_OK;
  if (f->kvs[i].type != (uint32_t)type)
    return fg_fail(FG_ERR_TYPE, "%s: %s has wire type %s, expected %s", fg_gguf_path(f), key,
                   fg_gguf_type_name((fg_gguf_type)f->kvs[i].type), fg_gguf_type_name(type));
  *v = fg_gguf_scalar_int(f->kvs[i].type, f->kvs[i].val);
  return FG_OK;
}

static fg_status check_part(const fg_gguf_file *p, uint32_t idx, uint32_t count) {
  int64_t v;
  int present;
  fg_status s = split_key(p, "split.no", FG_GGUF_UINT16, &v, &present);
  if (s) return s;
  if (present && v != (int64_t)idx)
    return fg_fail(FG_ERR_RANGE, "%s: split.no is %" PRId64 ", expected %u", fg_gguf_path(p), v, idx);
  if ((s = split_key(p, "split.count", FG_GGUF_UINT16, &v, &present))) return s;
  if (present && v != (int64_t)count)
    return fg_fail(FG_ERR_RANGE, "%s: split.count is %" PRId64 ", expected %u (from the file name)", fg_gguf_path(p), v, count);
  return FG_OK;
}

/* Moves the parts' mappings and tensors into one file; metadata comes from part 1. */
static fg_status merge(fg_gguf_file **parts, uint32_t n, fg_gguf_file **out) {
  fg_gguf_file *m = calloc(1, sizeof *m);
  if (!m) return fg_fail(FG_ERR_NOMEM, "split merge: out of memory");
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; i++) total += parts[i]->n_tensors;
  m->parts = calloc(n, sizeof *m->parts);
  m->tensors = total ? calloc((size_t)total, sizeof *m->tensors) : NULL;
  fg_status s = FG_OK;
  if (!m->parts || (total && !m->tensors)) s = fg_fail(FG_ERR_NOMEM, "split merge: out of memory");
  if (!s) s = fg_name_table_reset(&m->tensor_index, total);
  for (uint32_t i = 0; !s && i < n; i++) {
    for (uint64_t j = 0; j < parts[i]->n_tensors; j++) {
      fg_gguf_tensor *t = &m->tensors[m->n_tensors];
      *t = parts[i]->tensors[j];
      t->part = i;
      int64_t dup;
      if ((s = fg_name_table_insert(&m->tensor_index, t->name, t->name_len, m->n_tensors, fg_gguf_tensor_name_at, m, &dup)))
        break;
      if (dup >= 0) {
        s = fg_fail(FG_ERR_DUPLICATE, "%s: tensor '%s' is also in part %zu", fg_gguf_path(parts[i]), t->name,
                    m->tensors[dup].part + 1);
        break;
      }
      m->n_tensors++;
    }
  }
  if (s) {
    fg_gguf_file_destroy(m);
    return s;
  }
  for (uint32_t i = 0; i < n; i++) {
    m->parts[i] = parts[i]->parts[0];
    parts[i]->n_parts = 0; /* the mapping reference moved */
  }
  m->n_parts = n;
  m->kvs = parts[0]->kvs;
  m->n_kv = parts[0]->n_kv;
  m->kv_index = parts[0]->kv_index;
  parts[0]->kvs = NULL;
  parts[0]->n_kv = 0;
  memset(&parts[0]->kv_index, 0, sizeof parts[0]->kv_index);
  *out = m;
  return FG_OK;
}

fg_status fg_gguf_open_auto(const char *path, fg_gguf_file **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_open_auto: NULL argument");
  *out = NULL;
  uint32_t no, count;
  if (!fg_gguf_split_name(path, &no, &count) || no != 1) return fg_gguf_open(path, FG_MAP_MMAP, out);

  size_t n = strlen(path);
  char *name = malloc(n + 1);
  fg_gguf_file **parts = calloc(count, sizeof *parts);
  fg_status s = FG_OK;
  if (!name || !parts) s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  for (uint32_t i = 0; !s && i < count; i++) {
    memcpy(name, path, n + 1);
    char num[6];
    snprintf(num, sizeof num, "%05u", (i + 1) % 100000);
    memcpy(name + n - SPLIT_SUFFIX_LEN + 1, num, 5);
    s = fg_gguf_open(name, FG_MAP_MMAP, &parts[i]);
    if (s) {
      fg_fail_prefix(s, "split part %u of %u: ", i + 1, count);
      break;
    }
    s = check_part(parts[i], i, count);
  }
  if (!s) {
    int64_t v;
    int present;
    uint64_t total = 0;
    for (uint32_t i = 0; i < count; i++) total += parts[i]->n_tensors;
    s = split_key(parts[0], "split.tensors.count", FG_GGUF_INT32, &v, &present);
    if (!s && present && (v < 0 || (uint64_t)v != total))
      s = fg_fail(FG_ERR_RANGE, "%s: split.tensors.count is %" PRId64 " but the %u parts hold %" PRIu64 " tensors", path,
                  v, count, total);
  }
  if (!s) s = merge(parts, count, out);
  for (uint32_t i = 0; parts && i < count; i++) fg_gguf_file_destroy(parts[i]);
  free(parts);
  free(name);
  return s;
}
