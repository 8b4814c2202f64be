/* Export to safetensors (FG_EXPORT_FORMAT_SAFETENSORS, forgia/export.h): the plan's tensors
 * streamed through export_stream.c's cursor into one file, or into the shards of a folder,
 * each file a temporary one renamed into place (core/atomic_file.h), the folder written under
 * a temporary name and renamed at the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "forgia/output.h"
#include "formats/export_stream.h"
#include "formats/safetensors_internal.h"

/* ---------------------------------------------------------------- __metadata__ */

typedef struct meta_list {
  fg_st_kv *kv; /* keys and values malloc'd */
  size_t n, cap;
} meta_list;

static void meta_free(meta_list *m) {
  for (size_t i = 0; i < m->n; i++) {
    free((char *)m->kv[i].key);
    free((char *)m->kv[i].value);
  }
  free(m->kv);
  *m = (meta_list){0};
}

static char *dup_n(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = 0;
  }
  return p;
}

static fg_status meta_add(meta_list *m, const char *k, size_t kl, const char *v, size_t vl) {
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 16;
    fg_st_kv *kv = realloc(m->kv, cap * sizeof *kv);
    if (!kv) return fg_fail(FG_ERR_NOMEM, "export: out of memory for the metadata");
    m->kv = kv;
    m->cap = cap;
  }
  char *key = dup_n(k, kl), *val = dup_n(v, vl);
  if (!key || !val) {
    free(key);
    free(val);
    return fg_fail(FG_ERR_NOMEM, "export: out of memory for the metadata");
  }
  m->kv[m->n++] = (fg_st_kv){key, val};
  return FG_OK;
}

/* Safetensors metadata is a map of UTF-8 strings: what a C string cannot hold is left out. */
static bool plain_text(const char *s, size_t n) {
  size_t bad;
  return !memchr(s, 0, n) && st_utf8_valid((const uint8_t *)s, n, &bad);
}

/* A GGUF value as text, or false for the kinds left out (arrays, odd strings). */
static bool gguf_value_text(const fg_gguf_file *g, size_t i, char *buf, size_t cap, const char **v, size_t *vl) {
  const fg_gguf_type t = fg_gguf_kv_type(g, i);
  uint64_t u;
  int64_t s;
  double d;
  bool b;
  fg_gguf_str str;
  int n = -1;
  switch (t) {
    case FG_GGUF_STRING:
      if (fg_gguf_kv_str(g, i, &str) || !plain_text(str.ptr, (size_t)str.len)) return false;
      *v = str.ptr;
      *vl = (size_t)str.len;
      return true;
    case FG_GGUF_UINT8: case FG_GGUF_UINT16: case FG_GGUF_UINT32: case FG_GGUF_UINT64:
      if (!fg_gguf_kv_uint(g, i, &u)) n = snprintf(buf, cap, "%" PRIu64, u);
      break;
    case FG_GGUF_INT8: case FG_GGUF_INT16: case FG_GGUF_INT32: case FG_GGUF_INT64:
      if (!fg_gguf_kv_int(g, i, &s)) n = snprintf(buf, cap, "%" PRId64, s);
      break;
    case FG_GGUF_FLOAT32: case FG_GGUF_FLOAT64: /* enough digits to read back the same value */
      if (!fg_gguf_kv_float(g, i, &d)) n = snprintf(buf, cap, t == FG_GGUF_FLOAT32 ? "%.9g" : "%.17g", d);
      /* printf writes the locale's decimal point; Python's float() reads '.' */
      for (char *c = buf, dp = *localeconv()->decimal_point; n > 0 && dp != '.' && *c; c++)
        if (*c == dp) *c = '.';
      break;
    case FG_GGUF_BOOL:
      if (!fg_gguf_kv_bool(g, i, &b)) n = snprintf(buf, cap, "%s", b ? "true" : "false");
      break;
    default:
      return false;
  }
  if (n < 0 || (size_t)n >= cap) return false;
  *v = buf;
  *vl = (size_t)n;
  return true;
}

/* "format": "pt" first (transformers refuses a file whose metadata lacks it), then the
 * source's own entries (forgia/export.h says which). */
static fg_status meta_build(const fg_ckpt *src, meta_list *m) {
  const fg_gguf_file *g = fg_ckpt_gguf(src);
  const fg_st_dir *d = fg_ckpt_safetensors(src);
  const fg_st_file *f = d && fg_st_dir_shard_count(d) ? fg_st_dir_shard(d, 0) : NULL;
  fg_status st = FG_OK;
  if (!(f && fg_st_metadata_find(f, "format"))) st = meta_add(m, "format", 6, "pt", 2);
  for (size_t i = 0; !st && f && i < fg_st_metadata_count(f); i++) {
    const char *k, *v;
    size_t kl, vl;
    if (!fg_st_metadata_at_n(f, i, &k, &kl, &v, &vl)) break;
    if (memchr(k, 0, kl) || memchr(v, 0, vl))
      return fg_fail(FG_ERR_BAD_STRING, "%s: __metadata__ entry %zu (\"%s\") holds a NUL byte, which the "
                     "safetensors writer's C strings cannot carry", fg_st_source(f), i, k);
    st = meta_add(m, k, kl, v, vl);
  }
  for (size_t i = 0; !st && g && i < fg_gguf_kv_count(g); i++) {
    const fg_gguf_str key = fg_gguf_kv_key(g, i);
    char buf[64];
    const char *v;
    size_t vl;
    if (!plain_text(key.ptr, (size_t)key.len)) continue;
    if (key.len == 6 && memcmp(key.ptr, "format", 6) == 0) continue; /* ours */
    if (gguf_value_text(g, i, buf, sizeof buf, &v, &vl)) st = meta_add(m, key.ptr, (size_t)key.len, v, vl);
  }
  return st;
}

/* ---------------------------------------------------------------- files */

/* Writes plan tensors [first, first + count) as one safetensors file at path. */
static fg_status write_file(fg_export_cursor *c, const char *path, size_t first, size_t count, const meta_list *m) {
  const fg_export_plan *p = c->p;
  fg_st_write_tensor *wt = malloc((count ? count : 1) * sizeof *wt);
  if (!wt) return fg_fail(FG_ERR_NOMEM, "export: out of memory");
  for (size_t j = 0; j < count; j++) {
    const fg_export_tensor *t = &p->t[first + j];
    const fg_ckpt_tensor *x = fg_ckpt_tensor_at(p->src, t->src_index);
    /* a scalar stays a scalar (GGUF would have made it [1]) */
    wt[j] = (fg_st_write_tensor){t->name, t->dst_dtype, x->ndim == 0 ? 0 : t->ndim, t->shape, NULL, t->dst_bytes};
  }
  st_buf head = {0};
  const fg_st_write_tensor **order = NULL;
  uint64_t total = 0;
  fg_status st = st_header_build(wt, count, m->kv, m->n, false, &head, &order, &total);
  if (st) st = fg_fail_prefix(st, "%s: ", path);
  fg_atomic_file af = FG_ATOMIC_FILE_INIT;
  if (!st) st = fg_atomic_file_begin(&af, path);
  if (!st) st = fg_atomic_file_write(&af, head.p, head.len);
  c->af = &af;
  for (size_t k = 0; !st && k < count; k++) {
    const fg_export_tensor *t = &p->t[first + (size_t)(order[k] - wt)];
    const fg_ckpt_tensor *s = fg_ckpt_tensor_at(p->src, t->src_index);
    c->prog.tensor = t;
    st = t->action == FG_EXPORT_ACTION_COPY ? fg_export_copy_tensor(c, s) : fg_export_transcode_tensor(c, s, t);
    c->prog.tensors_done++;
    if (!st) st = fg_export_report(c, 0);
  }
  c->af = NULL;
  if (!st) st = fg_export_sources_unchanged(p);
  if (!st) st = fg_atomic_file_commit(&af);
  fg_atomic_file_abort(&af); /* a no-op unless a step above failed */
  free(head.p);
  free(order);
  free(wt);
  return st;
}

static char *join(const char *dir, const char *name) {
  const size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Writes bytes as dir/name through a temporary file. */
static fg_status write_bytes(const char *dir, const char *name, const void *b, size_t n) {
  char *path = join(dir, name);
  if (!path) return fg_fail(FG_ERR_NOMEM, "export: out of memory");
  fg_status st = fg_output_write(path, b, n);
  free(path);
  return st;
}

typedef struct shard_set {
  size_t n;          /* shards */
  size_t *first;     /* n + 1 entries: shard k holds plan tensors [first[k], first[k + 1]) */
  char (*name)[64]; /* "model-NNNNN-of-NNNNN.safetensors", sized for what the compiler cannot see is bounded */
} shard_set;

/* Greedy in plan order, as fg_st_save_sharded (huggingface_hub's split): a tensor over the
 * limit gets a shard of its own; otherwise a shard closes when the next tensor would take it
 * past the limit. */
static fg_status plan_shards(const fg_export_plan *p, shard_set *s) {
  s->first = malloc((p->n + 2) * sizeof *s->first);
  if (!s->first) return fg_fail(FG_ERR_NOMEM, "export: out of memory");
  s->n = 0;
  uint64_t cur = 0;
  bool open = false;
  for (size_t i = 0; i < p->n; i++) {
    const uint64_t b = p->t[i].dst_bytes;
    if (!open || b > p->opt.shard_bytes || cur + b > p->opt.shard_bytes) {
      s->first[s->n++] = i;
      cur = 0;
    }
    cur += b;
    open = b <= p->opt.shard_bytes;
  }
  if (s->n == 0) s->first[s->n++] = 0;
  s->first[s->n] = p->n;
  if (s->n > 99999) return fg_fail(FG_ERR_RANGE, "export: %zu shards; the names hold at most 99999", s->n);
  if (!(s->name = calloc(s->n, sizeof *s->name))) return fg_fail(FG_ERR_NOMEM, "export: out of memory");
  for (size_t k = 0; k < s->n; k++) {
    if (s->n == 1) snprintf(s->name[k], sizeof s->name[k], "model.safetensors");
    else snprintf(s->name[k], sizeof s->name[k], "model-%05zu-of-%05zu.safetensors", k + 1, s->n);
  }
  return FG_OK;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp((*(const fg_export_tensor *const *)a)->name, (*(const fg_export_tensor *const *)b)->name);
}

/* json.dumps(index, indent=2, sort_keys=True) + "\n", as transformers writes it. */
static fg_status index_json(const fg_export_plan *p, const shard_set *s, st_buf *b) {
  const fg_export_tensor **idx = malloc((p->n ? p->n : 1) * sizeof *idx);
  size_t *shard = malloc((p->n ? p->n : 1) * sizeof *shard);
  if (!idx || !shard) {
    free(idx);
    free(shard);
    return fg_fail(FG_ERR_NOMEM, "export: out of memory");
  }
  for (size_t k = 0; k < s->n; k++)
    for (size_t i = s->first[k]; i < s->first[k + 1]; i++) shard[i] = k;
  for (size_t i = 0; i < p->n; i++) idx[i] = &p->t[i];
  qsort(idx, p->n, sizeof *idx, cmp_name); /* bytewise: the code-point order of sort_keys */
  uint64_t total;
  fg_export_plan_totals(p, NULL, &total);
  st_buf_printf(b, "{\n  \"metadata\": {\n    \"total_size\": %" PRIu64 "\n  },\n  \"weight_map\": {", total);
  for (size_t i = 0; i < p->n; i++) {
    const char *name = idx[i]->name, *file = s->name[shard[idx[i] - p->t]];
    st_buf_puts(b, i ? ",\n    " : "\n    ");
    st_buf_json_string(b, name, strlen(name), true);
    st_buf_puts(b, ": ");
    st_buf_json_string(b, file, strlen(file), true);
  }
  st_buf_puts(b, p->n ? "\n  }\n}\n" : "}\n}\n");
  free((void *)idx);
  free(shard);
  return b->failed ? fg_fail(FG_ERR_NOMEM, "export: out of memory for the index") : FG_OK;
}

/* Removes what a failed folder write made: the files named, then the folder. */
static void remove_tmp_dir(const char *tmp, const shard_set *s) {
  static const char *const extra[] = {"model.safetensors.index.json", "config.json"};
  for (size_t k = 0; s->name && k < s->n; k++) {
    char *f = join(tmp, s->name[k]);
    if (f) unlink(f);
    free(f);
  }
  for (size_t k = 0; k < 2; k++) {
    char *f = join(tmp, extra[k]);
    if (f) unlink(f);
    free(f);
  }
  rmdir(tmp);
}

/* A fresh hidden folder beside out: ".<name>.fgtmp.<pid>.<n>". */
static char *make_tmp_dir(const char *out) {
  const char *slash = strrchr(out, '/');
  const int dl = slash ? (int)(slash - out) : 1;
  const char *dir = slash ? out : ".", *base = slash ? slash + 1 : out;
  const size_t cap = strlen(out) + 96;
  char *tmp = malloc(cap);
  if (!tmp) return NULL;
  for (unsigned n = 0; n < 1000; n++) {
    snprintf(tmp, cap, "%.*s/.%.32s.fgtmp.%ld.%u", slash == out ? 0 : dl, dir, base, (long)getpid(), n);
    if (mkdir(tmp, 0777) == 0) return tmp;
    if (errno != EEXIST) break;
  }
  free(tmp);
  return NULL;
}

static void sync_parent(const char *out) {
  const char *slash = strrchr(out, '/');
  char *dir = slash ? dup_n(out, slash == out ? 1 : (size_t)(slash - out)) : dup_n(".", 1);
  if (!dir) return;
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(dir);
}

static fg_status write_folder(fg_export_cursor *c, const char *out, const meta_list *m) {
  const fg_export_plan *p = c->p;
  shard_set s = {0};
  fg_status st = plan_shards(p, &s);
  char *tmp = NULL;
  if (!st && !(tmp = make_tmp_dir(out)))
    st = fg_fail(FG_ERR_IO, "%s: cannot create a temporary folder beside it: %s", out, strerror(errno));
  for (size_t k = 0; !st && k < s.n; k++) {
    char *path = join(tmp, s.name[k]);
    st = path ? write_file(c, path, s.first[k], s.first[k + 1] - s.first[k], m)
              : fg_fail(FG_ERR_NOMEM, "export: out of memory");
    free(path);
  }
  if (!st && s.n > 1) {
    st_buf b = {0};
    st = index_json(p, &s, &b);
    if (!st) st = write_bytes(tmp, "model.safetensors.index.json", b.p, b.len);
    free(b.p);
  }
  const fg_st_dir *d = fg_ckpt_safetensors(p->src);
  size_t clen = 0;
  const char *config = d ? fg_st_dir_config_text(d, &clen) : NULL;
  if (!st && config) st = write_bytes(tmp, "config.json", config, clen);
  if (!st) st = fg_export_sources_unchanged(p);
  if (!st && rename(tmp, out) != 0)
    st = fg_fail(FG_ERR_IO, "%s: cannot rename the finished folder %s into place: %s", out, tmp, strerror(errno));
  if (!st) sync_parent(out);
  if (st && tmp) remove_tmp_dir(tmp, &s);
  free(tmp);
  free(s.first);
  free(s.name);
  return st;
}

fg_status fg_export_run_safetensors(const fg_export_plan *p, const char *out_path, fg_export_progress_fn progress,
                                    void *user) {
  const bool folder = p->opt.shard_bytes > 0;
  fg_status st = folder ? fg_export_check_output_folder(p->src, out_path) : fg_export_check_output(p->src, out_path);
  if (!st) st = fg_export_plan_ready(p);
  meta_list m = {0};
  if (!st) st = meta_build(p->src, &m);
  fg_export_cursor c = {.p = p, .fn = progress, .user = user};
  c.prog.tensors_total = p->n;
  fg_export_plan_totals(p, NULL, &c.prog.bytes_total);
  if (!st) st = folder ? write_folder(&c, out_path, &m) : write_file(&c, out_path, 0, p->n, &m);
  fg_export_cursor_free(&c);
  meta_free(&m);
  return st;
}
