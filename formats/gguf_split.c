/* Split GGUF files (NAME-00001-of-0000N.gguf): every part is a complete GGUF; part 1 holds
 * the model metadata. fg_gguf_open_auto maps all parts and merges them into one view, and
 * refuses any other part on its own: a lone part is a fraction of a model that would
 * otherwise load, export or convert as if it were the whole of it. */
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

/* What a file's split.* keys say; has_* tells which keys exist. */
typedef struct split_keys {
  int has_no, has_count, has_total;
  int64_t no, count, total;
} split_keys;

/* An optional split key of an exact wire type (the types gguf-split writes). */
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

static fg_status read_keys(const fg_gguf_file *f, split_keys *k) {
  memset(k, 0, sizeof *k);
  const char *p = fg_gguf_path(f);
  fg_status s = split_key(f, "split.no", FG_GGUF_UINT16, &k->no, &k->has_no);
  if (!s) s = split_key(f, "split.count", FG_GGUF_UINT16, &k->count, &k->has_count);
  if (!s) s = split_key(f, "split.tensors.count", FG_GGUF_INT32, &k->total, &k->has_total);
  if (s) return s;
  if (k->has_count && k->count < 1) return fg_fail(FG_ERR_RANGE, "%s: split.count is 0, expected at least 1", p);
  if (k->has_no && k->has_count && k->no >= k->count)
    return fg_fail(FG_ERR_RANGE, "%s: split.no is %" PRId64 " but split.count is %" PRId64 " (split.no counts from 0)",
                   p, k->no, k->count);
  if (k->has_total && k->total < 0)
    return fg_fail(FG_ERR_RANGE, "%s: split.tensors.count is %" PRId64 ", expected a count", p, k->total);
  return FG_OK;
}

/* ---- a file opened alone ------------------------------------------------------------- */

/* Refuses a file that is one part of a split other than an openable part 1, saying what
 * to open instead. named: the path follows the pattern, as part `no` of `count`. */
/* read_keys reads key values from the part's mapping: guarded, so a part truncated after
 * its parse gives a status, not SIGBUS (core/mapping.c). */
typedef struct keys_job {
  const fg_gguf_file *f;
  split_keys *k;
} keys_job;

static fg_status keys_job_run(void *user) {
  keys_job *j = user;
  return read_keys(j->f, j->k);
}

static fg_status read_keys_guarded(const fg_gguf_file *f, split_keys *k) {
  keys_job j = {f, k};
  return fg_mapping_access(fg_gguf_mapping(f, 0), keys_job_run, &j);
}

static fg_status lone_file(const char *path, const split_keys *k, bool named, uint32_t no, uint32_t count) {
  size_t plen = strlen(path);
  if (named) {
    /* no > 1 here: part 1 opens the set */
    if (k->has_count && k->count != (int64_t)count)
      return fg_fail(FG_ERR_RANGE, "%s: split.count is %" PRId64 ", but the file name says %u parts", path, k->count,
                     count);
    if (k->has_no && k->no != (int64_t)no - 1)
      return fg_fail(FG_ERR_RANGE, "%s: split.no is %" PRId64 " (part %" PRId64 "), but the file name says part %u",
                     path, k->no, k->no + 1, no);
    return fg_fail(FG_ERR_INVALID_ARG, "%s: part %u of a %u-part split; open %.*s-00001-of-%05u.gguf, which opens every part",
                   path, no, count, (int)(plen - SPLIT_SUFFIX_LEN), path, count);
  }
  if (k->has_count && k->count > 1) {
    if (!k->has_no)
      return fg_fail(FG_ERR_INVALID_ARG,
                     "%s: one part of a %" PRId64 "-part split (split.count), without split.no; open part 1 of the set, "
                     "named NAME-00001-of-%05" PRId64 ".gguf, which opens every part",
                     path, k->count, k->count);
    if (k->no == 0)
      return fg_fail(FG_ERR_INVALID_ARG,
                     "%s: part 1 of a %" PRId64 "-part split (split.no 0, split.count %" PRId64 "), but its name does not "
                     "end in -00001-of-%05" PRId64 ".gguf, so the other parts cannot be found; name the parts "
                     "NAME-0000k-of-%05" PRId64 ".gguf and open NAME-00001-of-%05" PRId64 ".gguf",
                     path, k->count, k->count, k->count, k->count, k->count);
    return fg_fail(FG_ERR_INVALID_ARG,
                   "%s: part %" PRId64 " of a %" PRId64 "-part split (split.no %" PRId64 "); open part 1 of the set, "
                   "named NAME-00001-of-%05" PRId64 ".gguf, which opens every part",
                   path, k->no + 1, k->count, k->no, k->count);
  }
  if (k->has_no && k->no > 0)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: part %" PRId64 " of a split (split.no %" PRId64 ", no split.count); open part 1 "
                   "of the set, named NAME-00001-of-0000N.gguf, which opens every part", path, k->no + 1, k->no);
  return FG_OK;
}

/* ---- a whole set --------------------------------------------------------------------- */

/* Part i (0-based) of `count` belongs to the set part 1 (keys k0) declares: every key part
 * 1 has, it has too, and they agree with the file names and the tensor total. */
static fg_status check_part(const fg_gguf_file *p, const split_keys *k, const split_keys *k0, uint32_t i,
                            uint32_t count, uint64_t total) {
  const char *path = fg_gguf_path(p);
  const char *missing = k0->has_no && !k->has_no ? "split.no"
                        : k0->has_count && !k->has_count ? "split.count"
                        : k0->has_total && !k->has_total ? "split.tensors.count"
                                                         : NULL;
  if (missing) return fg_fail(FG_ERR_RANGE, "%s: no %s, which part 1 has: not a part of the same split", path, missing);
  if (k->has_no && k->no != (int64_t)i)
    return fg_fail(FG_ERR_RANGE, "%s: split.no is %" PRId64 " (part %" PRId64 "), but its file name makes it part %u (split.no %u)",
                   path, k->no, k->no + 1, i + 1, i);
  if (k->has_count && k->count != (int64_t)count)
    return fg_fail(FG_ERR_RANGE, "%s: split.count is %" PRId64 ", expected %u (from the file name)", path, k->count,
                   count);
  if (k->has_total && (uint64_t)k->total != total)
    return fg_fail(FG_ERR_RANGE, "%s: split.tensors.count is %" PRId64 " but the %u parts hold %" PRIu64 " tensors",
                   path, k->total, count, total);
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

/* path is NAME-00001-of-COUNT.gguf: opens and checks every part, then merges them. */
static fg_status open_set(const char *path, uint32_t count, fg_gguf_file **out) {
  size_t n = strlen(path);
  char *name = malloc(n + 1);
  fg_gguf_file **parts = calloc(count, sizeof *parts);
  split_keys *keys = calloc(count, sizeof *keys);
  fg_status s = FG_OK;
  if (!name || !parts || !keys) s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  uint64_t total = 0;
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
    s = read_keys_guarded(parts[i], &keys[i]);
    total += parts[i]->n_tensors;
  }
  for (uint32_t i = 0; !s && i < count; i++) s = check_part(parts[i], &keys[i], &keys[0], i, count, total);
  if (!s) s = merge(parts, count, out);
  for (uint32_t i = 0; parts && i < count; i++) fg_gguf_file_destroy(parts[i]);
  free(parts);
  free(keys);
  free(name);
  return s;
}

fg_status fg_gguf_open_auto(const char *path, fg_gguf_file **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_open_auto: NULL argument");
  *out = NULL;
  uint32_t no = 0, count = 0;
  bool named = fg_gguf_split_name(path, &no, &count);
  if (named && no == 1) return open_set(path, count, out);
  fg_gguf_file *f = NULL;
  fg_status s = fg_gguf_open(path, FG_MAP_MMAP, &f);
  if (s) return s;
  split_keys k;
  s = read_keys_guarded(f, &k);
  if (!s) s = lone_file(path, &k, named, no, count);
  if (s) {
    fg_gguf_close(f);
    return s;
  }
  *out = f;
  return FG_OK;
}
