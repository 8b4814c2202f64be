/* Hugging Face checkpoint directories: model.safetensors.index.json + shards, or one
 * file, presented as one view; config.json beside them; the sharded writer. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/safetensors_internal.h"

typedef struct dir_entry {
  size_t shard;
  const fg_st_tensor *t;
} dir_entry;

struct fg_st_dir {
  char *dir;               /* folder holding the shards */
  size_t nshards;
  fg_st_file **shards;
  char **shard_names;
  size_t n;
  dir_entry *entries;
  fg_name_table names;     /* tensor name -> entry index */
  bool sharded;
  uint64_t total_size;
  char *index_text;        /* the index file as read (fg_st_dir_index_text), NUL-terminated */
  size_t index_len;
  char *config_text;       /* config.json as read (fg_st_dir_config_text), NUL-terminated */
  size_t config_len;
  cJSON *config;           /* parsed config_text, for the typed getters; never exposed */
};

static fg_name entry_name_at(const void *dir, uint64_t i) {
  const fg_st_dir *d = dir;
  return (fg_name){d->entries[i].t->name, d->entries[i].t->name_len};
}

/* Names of weight_map entries: the values (shard files) or the keys (tensors). */
typedef struct wm_seen {
  const st_json *j;
  const st_node **at;
} wm_seen;
static fg_name node_str_at(const void *ctx, uint64_t i) {
  const wm_seen *w = ctx;
  return (fg_name){st_str(w->j, w->at[i]), w->at[i]->len};
}
static fg_name node_key_at(const void *ctx, uint64_t i) {
  const wm_seen *w = ctx;
  return (fg_name){st_key(w->j, w->at[i]), w->at[i]->key_len};
}

static char *path_join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *p = malloc(la + lb + 2);
  if (!p) return NULL;
  memcpy(p, a, la);
  p[la] = '/';
  memcpy(p + la + 1, b, lb + 1);
  return p;
}

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Reads a whole small file (index, config) with a size cap. */
static fg_status slurp(const char *path, char **out, size_t *len) {
  fg_mapping *m = NULL;
  fg_status s = fg_mapping_open(path, FG_MAP_READ, &m);
  if (s) return s;
  size_t n = fg_mapping_size(m);
  if (n > FG_ST_MAX_HEADER_SIZE) {
    fg_mapping_release(m);
    return fg_fail(FG_ERR_HEADER_TOO_LARGE, "%s: %zu bytes, more than the %llu-byte limit for JSON files", path, n,
                   (unsigned long long)FG_ST_MAX_HEADER_SIZE);
  }
  char *p = malloc(n + 1);
  if (!p) {
    fg_mapping_release(m);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  }
  if (n) memcpy(p, fg_mapping_data(m), n);
  p[n] = '\0';
  fg_mapping_release(m);
  *out = p;
  *len = n;
  return FG_OK;
}

void fg_st_dir_close(fg_st_dir *d) {
  if (!d) return;
  for (size_t i = 0; i < d->nshards; i++) {
    fg_st_close(d->shards[i]);
    free(d->shard_names[i]);
  }
  free(d->shards);
  free(d->shard_names);
  free(d->entries);
  fg_name_table_free(&d->names);
  free(d->dir);
  free(d->index_text);
  free(d->config_text);
  cJSON_Delete(d->config);
  free(d);
}

static size_t dir_lookup(const fg_st_dir *d, const char *name, size_t len) {
  int64_t i = fg_name_table_find(&d->names, name, len, entry_name_at, d);
  return i < 0 ? SIZE_MAX : (size_t)i;
}

/* Opens the named shards and builds the merged directory. */
static fg_status add_shards(fg_st_dir *d, fg_map_mode mode) {
  size_t total = 0;
  for (size_t i = 0; i < d->nshards; i++) {
    char *p = path_join(d->dir, d->shard_names[i]);
    if (!p) return fg_fail(FG_ERR_NOMEM, "out of memory");
    fg_status s = fg_st_open(p, mode, &d->shards[i]);
    free(p);
    if (s) return s;
    total += fg_st_count(d->shards[i]);
  }
  d->entries = calloc(total ? total : 1, sizeof *d->entries);
  if (!d->entries || fg_name_table_reset(&d->names, total))
    return fg_fail(FG_ERR_NOMEM, "out of memory for %zu tensors", total);
  uint64_t bytes = 0;
  for (size_t i = 0; i < d->nshards; i++) {
    for (size_t k = 0; k < fg_st_count(d->shards[i]); k++) {
      const fg_st_tensor *t = fg_st_tensor_at(d->shards[i], k);
      d->entries[d->n] = (dir_entry){i, t};
      int64_t prev;
      fg_status s = fg_name_table_insert(&d->names, t->name, t->name_len, d->n, entry_name_at, d, &prev);
      if (s) return s;
      if (prev >= 0)
        return fg_fail(FG_ERR_DUPLICATE, "%s: tensor '%.200s' is in both %s and %s", d->dir, t->name,
                       d->shard_names[d->entries[prev].shard], d->shard_names[i]);
      d->n++;
      bytes += t->nbytes;
    }
  }
  d->total_size = bytes;
  return FG_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static fg_status open_index(fg_st_dir *d, const char *index_path, fg_map_mode mode) {
  char *text = NULL;
  size_t len = 0;
  fg_status s = slurp(index_path, &text, &len);
  if (s) return s;
  st_json j;
  s = st_json_parse(text, len, index_path, 0, &j);
  if (s) {
    free(text);
    return s;
  }
  const st_node *root = j.nodes, *wm = NULL, *meta = NULL;
  const st_node **seen = NULL; /* weight_map entries in order, for the name tables */
  fg_name_table set = {0};
  bool *named = NULL;
  if (root->kind != ST_OBJ) {
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: not a JSON object", index_path);
    goto done;
  }
  const st_node *e = st_first(root);
  for (size_t k = 0; k < root->len; k++, e = st_after(&j, e)) {
    const char *key = st_key(&j, e);
    const st_node **slot = !strcmp(key, "weight_map") ? &wm : !strcmp(key, "metadata") ? &meta : NULL;
    if (!slot) continue;
    if (*slot) {
      s = fg_fail(FG_ERR_DUPLICATE, "%s: key '%s' repeated at byte %u", index_path, key, e->key_pos);
      goto done;
    }
    *slot = e;
  }
  if (!wm || wm->kind != ST_OBJ) {
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: no \"weight_map\" object", index_path);
    goto done;
  }
  /* distinct shard names (a hash set over the values), validated as plain names in this
   * folder, then sorted */
  size_t nmap = wm->len;
  seen = calloc(nmap ? nmap : 1, sizeof *seen);
  wm_seen ws = {&j, seen};
  const char **names = calloc(nmap ? nmap : 1, sizeof *names);
  if (!names || !seen || fg_name_table_reset(&set, nmap)) {
    free(names);
    s = fg_fail(FG_ERR_NOMEM, "out of memory");
    goto done;
  }
  size_t u = 0;
  e = st_first(wm);
  for (size_t k = 0; k < nmap; k++, e = st_after(&j, e)) {
    const char *str = st_str(&j, e);
    if (e->kind != ST_STR || !e->len || memchr(str, '\0', e->len) || memchr(str, '/', e->len) ||
        !strcmp(str, ".") || !strcmp(str, "..")) {
      s = fg_fail(FG_ERR_INVALID_JSON, "%s: weight_map entry '%.200s' (byte %u) must name a file in the same folder",
                  index_path, st_key(&j, e), e->key_pos);
      break;
    }
    seen[k] = e;
    int64_t dup;
    if ((s = fg_name_table_insert(&set, str, e->len, k, node_str_at, &ws, &dup))) break;
    if (dup < 0) names[u++] = str;
  }
  if (!s) {
    qsort(names, u, sizeof *names, cmp_str);
    d->shards = calloc(u ? u : 1, sizeof *d->shards);
    d->shard_names = calloc(u ? u : 1, sizeof *d->shard_names);
    if (!d->shards || !d->shard_names) s = fg_fail(FG_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !s && i < u; i++) {
      d->shard_names[i] = strdup(names[i]);
      if (!d->shard_names[i]) s = fg_fail(FG_ERR_NOMEM, "out of memory");
      d->nshards = i + 1;
    }
  }
  free(names);
  if (s) goto done;
  if ((s = add_shards(d, mode))) goto done;
  /* the index and the shards must agree both ways */
  named = calloc(d->n ? d->n : 1, sizeof *named);
  if (!named || (s = fg_name_table_reset(&set, nmap))) {
    s = fg_fail(FG_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (size_t k = 0; k < nmap && !s; k++) {
    e = seen[k];
    int64_t dup;
    const char *key = st_key(&j, e), *str = st_str(&j, e);
    if ((s = fg_name_table_insert(&set, key, e->key_len, k, node_key_at, &ws, &dup))) break;
    if (dup >= 0) {
      s = fg_fail(FG_ERR_DUPLICATE, "%s: weight_map names tensor '%.200s' twice (byte %u)", index_path, key,
                  e->key_pos);
      break;
    }
    size_t idx = dir_lookup(d, key, e->key_len);
    if (idx == SIZE_MAX || strcmp(d->shard_names[d->entries[idx].shard], str) != 0)
      s = fg_fail(FG_ERR_NOT_FOUND, "%s: weight_map puts tensor '%.200s' in %s, which does not hold it", index_path,
                  key, str);
    else
      named[idx] = true;
  }
  if (s) goto done;
  if (d->n != nmap) {
    for (size_t i = 0; i < d->n; i++) {
      /* the first shard tensor (in shard order) the map does not name */
      if (!named[i]) {
        s = fg_fail(FG_ERR_NOT_FOUND, "%s: tensor '%.200s' of %s is missing from weight_map", index_path,
                    d->entries[i].t->name, d->shard_names[d->entries[i].shard]);
        goto done;
      }
    }
  }
  if (meta && meta->kind == ST_OBJ) {
    e = st_first(meta);
    for (size_t k = 0; k < meta->len; k++, e = st_after(&j, e)) {
      if (strcmp(st_key(&j, e), "total_size") != 0 || e->kind != ST_NUM) continue;
      uint64_t v;
      if (st_num_u64(&j, e, &v)) {
        d->total_size = v;
      } else {
        /* some writers emit 1.6e10 or 123.0: accept an integral, non-negative value */
        char buf[64];
        size_t n = e->len < sizeof buf - 1 ? e->len : sizeof buf - 1;
        memcpy(buf, st_str(&j, e), n);
        buf[n] = '\0';
        double x = strtod(buf, NULL);
        if (!(x >= 0 && x < 18446744073709551616.0) || x != (double)(uint64_t)x) {
          s = fg_fail(FG_ERR_INVALID_JSON, "%s: metadata.total_size %s is not a byte count", index_path, buf);
          goto done;
        }
        d->total_size = (uint64_t)x;
      }
    }
  }
  /* kept for fg_st_dir_index_text */
  d->index_text = text;
  d->index_len = len;
  text = NULL;
  d->sharded = true;
done:
  free(seen);
  free(named);
  fg_name_table_free(&set);
  st_json_free(&j);
  free(text);
  return s;
}

static fg_status open_single(fg_st_dir *d, const char *file, fg_map_mode mode) {
  const char *slash = strrchr(file, '/');
  d->shards = calloc(1, sizeof *d->shards);
  d->shard_names = calloc(1, sizeof *d->shard_names);
  if (!d->shards || !d->shard_names) return fg_fail(FG_ERR_NOMEM, "out of memory");
  d->shard_names[0] = strdup(slash ? slash + 1 : file);
  if (!d->shard_names[0]) return fg_fail(FG_ERR_NOMEM, "out of memory");
  d->nshards = 1;
  return add_shards(d, mode);
}

/* In a folder without model.safetensors(.index.json): exactly one index or one file. */
static fg_status find_in_dir(const char *dir, char **found, bool *is_index) {
  DIR *dp = opendir(dir);
  if (!dp) return fg_fail(FG_ERR_IO, "%s: cannot list: %s", dir, strerror(errno));
  char *idx = NULL, *one = NULL;
  int nidx = 0, none = 0;
  struct dirent *de;
  while ((de = readdir(dp))) {
    if (ends_with(de->d_name, ".safetensors.index.json")) {
      nidx++;
      if (!idx) idx = strdup(de->d_name);
    } else if (ends_with(de->d_name, ".safetensors")) {
      none++;
      if (!one) one = strdup(de->d_name);
    }
  }
  closedir(dp);
  fg_status s = FG_OK;
  if (nidx == 1) {
    *found = idx;
    *is_index = true;
    free(one);
    return FG_OK;
  }
  if (nidx == 0 && none == 1) {
    *found = one;
    *is_index = false;
    return FG_OK;
  }
  s = fg_fail(nidx + none ? FG_ERR_INVALID_ARG : FG_ERR_NOT_FOUND,
              "%s: %s (%d index files, %d .safetensors files)", dir,
              nidx + none ? "ambiguous checkpoint folder, name the file" : "no safetensors checkpoint", nidx, none);
  free(idx);
  free(one);
  return s;
}

fg_status fg_st_dir_open(const char *path, fg_map_mode mode, fg_st_dir **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_dir_open: NULL argument");
  *out = NULL;
  struct stat st;
  if (stat(path, &st) != 0)
    return fg_fail(errno == ENOENT ? FG_ERR_NOT_FOUND : FG_ERR_IO, "%s: %s", path, strerror(errno));
  fg_st_dir *d = calloc(1, sizeof *d);
  if (!d) return fg_fail(FG_ERR_NOMEM, "out of memory");
  fg_status s = FG_OK;
  char *file = NULL;
  bool index = false;
  if (S_ISDIR(st.st_mode)) {
    d->dir = strdup(path);
    char *p = d->dir ? path_join(path, FG_ST_INDEX_NAME) : NULL;
    char *q = d->dir ? path_join(path, FG_ST_SINGLE_NAME) : NULL;
    if (!p || !q) {
      s = fg_fail(FG_ERR_NOMEM, "out of memory");
    } else if (is_file(p)) {
      file = p;
      p = NULL;
      index = true;
    } else if (is_file(q)) {
      file = q;
      q = NULL;
    } else {
      char *name = NULL;
      s = find_in_dir(path, &name, &index);
      if (!s) {
        file = path_join(path, name);
        if (!file) s = fg_fail(FG_ERR_NOMEM, "out of memory");
      }
      free(name);
    }
    free(p);
    free(q);
  } else {
    const char *slash = strrchr(path, '/');
    d->dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
    file = strdup(path);
    if (!d->dir || !file) s = fg_fail(FG_ERR_NOMEM, "out of memory");
    index = ends_with(path, ".index.json");
  }
  if (!s) s = index ? open_index(d, file, mode) : open_single(d, file, mode);
  free(file);
  if (!s) {
    char *cfg = path_join(d->dir, "config.json");
    if (!cfg) {
      s = fg_fail(FG_ERR_NOMEM, "out of memory");
    } else if (is_file(cfg)) {
      char *text = NULL;
      size_t len = 0;
      s = slurp(cfg, &text, &len);
      if (!s) {
        const char *end = NULL;
        d->config = cJSON_ParseWithLengthOpts(text, len, &end, 0);
        if (!d->config)
          s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON at byte %zu", cfg,
                      end ? (size_t)(end - text) : (size_t)0);
        d->config_text = text; /* kept for fg_st_dir_config_text (freed by close on failure too) */
        d->config_len = len;
      }
    }
    free(cfg);
  }
  if (s) {
    fg_st_dir_close(d);
    return s;
  }
  *out = d;
  return FG_OK;
}

size_t fg_st_dir_count(const fg_st_dir *d) { return d ? d->n : 0; }

const fg_st_tensor *fg_st_dir_tensor_at(const fg_st_dir *d, size_t i, size_t *shard) {
  if (!d || i >= d->n) return NULL;
  if (shard) *shard = d->entries[i].shard;
  return d->entries[i].t;
}

size_t st_dir_index_of(const fg_st_dir *d, const char *name, size_t len) {
  return d && name ? dir_lookup(d, name, len) : SIZE_MAX;
}

const fg_st_tensor *fg_st_dir_find(const fg_st_dir *d, const char *name, size_t *shard) {
  if (!d || !name) return NULL;
  size_t i = dir_lookup(d, name, strlen(name));
  if (i == SIZE_MAX) return NULL;
  if (shard) *shard = d->entries[i].shard;
  return d->entries[i].t;
}

size_t fg_st_dir_shard_count(const fg_st_dir *d) { return d ? d->nshards : 0; }
const fg_st_file *fg_st_dir_shard(const fg_st_dir *d, size_t i) { return d && i < d->nshards ? d->shards[i] : NULL; }
const char *fg_st_dir_shard_name(const fg_st_dir *d, size_t i) {
  return d && i < d->nshards ? d->shard_names[i] : NULL;
}
bool fg_st_dir_is_sharded(const fg_st_dir *d) { return d && d->sharded; }
uint64_t fg_st_dir_total_size(const fg_st_dir *d) { return d ? d->total_size : 0; }
const char *fg_st_dir_index_text(const fg_st_dir *d, size_t *len) {
  if (len) *len = d ? d->index_len : 0;
  return d ? d->index_text : NULL;
}
const char *fg_st_dir_config_text(const fg_st_dir *d, size_t *len) {
  if (len) *len = d ? d->config_len : 0;
  return d ? d->config_text : NULL;
}

static fg_status config_item(const fg_st_dir *d, const char *key, const cJSON **out) {
  if (!d || !key) return fg_fail(FG_ERR_INVALID_ARG, "config getter: NULL argument");
  if (!d->config) return fg_fail(FG_ERR_NOT_FOUND, "%s: no config.json", d->dir);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(d->config, key);
  if (!v) return fg_fail(FG_ERR_NOT_FOUND, "%s/config.json: no key '%s'", d->dir, key);
  *out = v;
  return FG_OK;
}

fg_status fg_st_dir_config_int(const fg_st_dir *d, const char *key, int64_t *out) {
  const cJSON *v = NULL;
  fg_status s = config_item(d, key, &v);
  if (s) return s;
  double x = cJSON_IsNumber(v) ? v->valuedouble : 0.5;
  if (x < -9.2e18 || x > 9.2e18 || x != (double)(int64_t)x)
    return fg_fail(FG_ERR_TYPE, "%s/config.json: '%s' is not an integer", d->dir, key);
  *out = (int64_t)x;
  return FG_OK;
}

fg_status fg_st_dir_config_float(const fg_st_dir *d, const char *key, double *out) {
  const cJSON *v = NULL;
  fg_status s = config_item(d, key, &v);
  if (s) return s;
  if (!cJSON_IsNumber(v)) return fg_fail(FG_ERR_TYPE, "%s/config.json: '%s' is not a number", d->dir, key);
  *out = v->valuedouble;
  return FG_OK;
}

fg_status fg_st_dir_config_string(const fg_st_dir *d, const char *key, const char **out) {
  const cJSON *v = NULL;
  fg_status s = config_item(d, key, &v);
  if (s) return s;
  if (!cJSON_IsString(v)) return fg_fail(FG_ERR_TYPE, "%s/config.json: '%s' is not a string", d->dir, key);
  *out = v->valuestring;
  return FG_OK;
}

/* ---------------------------------------------------------------- sharded writer */

static int cmp_wt_name(const void *a, const void *b) {
  const fg_st_write_tensor *x = *(const fg_st_write_tensor *const *)a, *y = *(const fg_st_write_tensor *const *)b;
  return strcmp(x->name, y->name);
}

fg_status fg_st_save_sharded(const char *dir, const fg_st_write_tensor *ts, size_t n, const fg_st_kv *meta,
                             size_t nmeta, uint64_t max_shard, size_t *nshards_out) {
  if (!dir || (n && !ts)) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_save_sharded: NULL argument");
  if (!max_shard) max_shard = FG_ST_DEFAULT_MAX_SHARD;
  /* Greedy in the caller's order (huggingface_hub's split): a tensor over the limit gets
   * a shard of its own; otherwise the shard closes when the next tensor would overflow it. */
  size_t *shard_of = malloc((n ? n : 1) * sizeof *shard_of);
  if (!shard_of) return fg_fail(FG_ERR_NOMEM, "out of memory");
  size_t ns = 0;
  uint64_t cur = 0, total = 0;
  bool open_shard = false;
  for (size_t i = 0; i < n; i++) {
    uint64_t b = ts[i].nbytes;
    if (b > max_shard) {
      shard_of[i] = ns++;
      open_shard = false;
      cur = 0;
    } else {
      if (!open_shard || cur + b > max_shard) {
        ns++;
        open_shard = true;
        cur = 0;
      }
      shard_of[i] = ns - 1;
      cur += b;
    }
    total += b;
  }
  if (ns == 0) ns = 1;
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    free(shard_of);
    return fg_fail(FG_ERR_IO, "%s: mkdir: %s", dir, strerror(errno));
  }
  fg_status s = FG_OK;
  fg_st_write_tensor *sub = malloc((n ? n : 1) * sizeof *sub);
  char **names = calloc(ns, sizeof *names);
  if (!sub || !names) s = fg_fail(FG_ERR_NOMEM, "out of memory");
  /* validate the whole set first (names, sizes, duplicates across shards) */
  uint64_t size_probe;
  if (!s) s = fg_st_serialized_size(ts, n, meta, nmeta, &size_probe);
  for (size_t k = 0; !s && k < ns; k++) {
    char nm[64];
    if (ns == 1) snprintf(nm, sizeof nm, "%s", FG_ST_SINGLE_NAME);
    else snprintf(nm, sizeof nm, "model-%05zu-of-%05zu.safetensors", k + 1, ns);
    names[k] = strdup(nm);
    if (!names[k]) {
      s = fg_fail(FG_ERR_NOMEM, "out of memory");
      break;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (shard_of[i] == k) sub[m++] = ts[i];
    char *p = path_join(dir, nm);
    if (!p) {
      s = fg_fail(FG_ERR_NOMEM, "out of memory");
      break;
    }
    s = fg_st_save(p, sub, m, meta, nmeta);
    free(p);
  }
  if (!s && ns > 1) {
    const fg_st_write_tensor **sorted = malloc(n * sizeof *sorted);
    if (!sorted) {
      s = fg_fail(FG_ERR_NOMEM, "out of memory");
    } else {
      for (size_t i = 0; i < n; i++) sorted[i] = &ts[i];
      qsort(sorted, n, sizeof *sorted, cmp_wt_name);
      /* json.dumps(index, indent=2, sort_keys=True) + "\n", as transformers writes it */
      st_buf b = {0};
      st_buf_printf(&b, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {",
                    (unsigned long long)total);
      for (size_t i = 0; i < n; i++) {
        st_buf_puts(&b, i ? ",\n    " : "\n    ");
        st_buf_json_string(&b, sorted[i]->name, strlen(sorted[i]->name), true);
        st_buf_puts(&b, ": ");
        const char *sh = names[shard_of[sorted[i] - ts]];
        st_buf_json_string(&b, sh, strlen(sh), true);
      }
      st_buf_puts(&b, n ? "\n  }\n}\n" : "}\n}\n");
      free(sorted);
      char *p = path_join(dir, FG_ST_INDEX_NAME);
      if (b.failed || !p) s = fg_fail(FG_ERR_NOMEM, "out of memory");
      else s = st_write_atomic(p, b.p, b.len, NULL, 0);
      free(p);
      free(b.p);
    }
  }
  for (size_t k = 0; names && k < ns; k++) free(names[k]);
  free(names);
  free(sub);
  free(shard_of);
  if (!s && nshards_out) *nshards_out = ns;
  return s;
}
