/* Importance-matrix files (forgia/imatrix.h): both forms are turned into one sorted table of
 * per-column weights at open, with llama-quantize's normalisation, so that a look-up is a
 * binary search and the encoders read floats directly. */
#include "forgia/imatrix.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/elem/bytes.h"
#include "forgia/gguf.h"
#include "forgia/mapping.h"

typedef struct fg_im_entry {
  char *name;
  float *weights;
  int64_t n_values;
  int64_t n_counts;
} fg_im_entry;

struct fg_imatrix {
  fg_imatrix_format format;
  size_t n;
  fg_im_entry *e;
  size_t ndatasets;
  char **datasets;
  int64_t chunk_count;
  int64_t chunk_size;
};

void fg_imatrix_close(fg_imatrix *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n; i++) {
    free(m->e[i].name);
    free(m->e[i].weights);
  }
  free(m->e);
  for (size_t i = 0; i < m->ndatasets; i++) free(m->datasets[i]);
  free(m->datasets);
  free(m);
}

static char *fg_im_strndup(const char *s, size_t n) {
  char *p = (char *)malloc(n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}

static fg_status fg_im_add_dataset(fg_imatrix *m, const char *s, size_t n) {
  char **d = (char **)realloc(m->datasets, (m->ndatasets + 1) * sizeof *d);
  if (!d) return fg_fail(FG_ERR_NOMEM, "imatrix: out of memory for a dataset name");
  m->datasets = d;
  if (!(d[m->ndatasets] = fg_im_strndup(s, n))) return fg_fail(FG_ERR_NOMEM, "imatrix: out of memory");
  m->ndatasets++;
  return FG_OK;
}

static int fg_im_cmp(const void *a, const void *b) {
  return strcmp(((const fg_im_entry *)a)->name, ((const fg_im_entry *)b)->name);
}

/* Index of the first non-finite weight, or -1. */
static int64_t fg_im_first_nonfinite(const float *w, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(w[i])) return i;
  return -1;
}

/* ---- legacy .dat --------------------------------------------------------------------- */

typedef struct fg_im_cursor {
  const uint8_t *p;
  size_t len, off;
  const char *label;
} fg_im_cursor;

static fg_status fg_im_i32(fg_im_cursor *c, const char *what, int64_t entry, int32_t *out) {
  if (c->len - c->off < 4) {
    if (entry >= 0)
      return fg_fail(FG_ERR_TRUNCATED, "imatrix %s: entry %" PRId64 ": file ends at byte %zu inside its %s "
                     "(4 bytes needed, %zu left)", c->label, entry, c->off, what, c->len - c->off);
    return fg_fail(FG_ERR_TRUNCATED, "imatrix %s: file ends at byte %zu inside the %s (4 bytes needed, %zu left)",
                   c->label, c->off, what, c->len - c->off);
  }
  *out = (int32_t)fg_bytes_ld_le32(c->p + c->off);
  c->off += 4;
  return FG_OK;
}

static fg_status fg_im_parse_legacy(fg_imatrix *m, const uint8_t *p, size_t len, const char *label) {
  fg_im_cursor c = {p, len, 0, label};
  int32_t n_entries = 0;
  fg_status st = fg_im_i32(&c, "entry count", -1, &n_entries);
  if (st) return st;
  if (n_entries < 1)
    return fg_fail(FG_ERR_RANGE, "imatrix %s: entry count %" PRId32 " at byte 0: no data (llama.cpp needs at least 1)",
                   label, n_entries);
  /* each entry takes at least 16 bytes (three i32 fields, one value): a count beyond what
   * the file can hold is refused before anything is allocated for it */
  if ((uint64_t)n_entries > (len - 4) / 16)
    return fg_fail(FG_ERR_TRUNCATED, "imatrix %s: entry count %" PRId32 " at byte 0 needs at least %" PRIu64
                   " bytes, the file has %zu", label, n_entries, (uint64_t)n_entries * 16 + 4, len);
  m->e = (fg_im_entry *)calloc((size_t)n_entries, sizeof *m->e);
  if (!m->e) return fg_fail(FG_ERR_NOMEM, "imatrix %s: out of memory for %" PRId32 " entries", label, n_entries);
  for (int32_t i = 0; i < n_entries; i++) {
    const size_t at = c.off;
    int32_t nlen = 0, ncall = 0, nval = 0;
    if ((st = fg_im_i32(&c, "name length", i, &nlen))) return st;
    if (nlen < 1)
      return fg_fail(FG_ERR_RANGE, "imatrix %s: entry %" PRId32 " at byte %zu: name length %" PRId32 " (expected >= 1)",
                     label, i, at, nlen);
    if ((size_t)nlen > c.len - c.off)
      return fg_fail(FG_ERR_TRUNCATED, "imatrix %s: entry %" PRId32 ": name of %" PRId32 " bytes at byte %zu runs past "
                     "the end (%zu bytes left)", label, i, nlen, c.off, c.len - c.off);
    const char *name = (const char *)c.p + c.off;
    if (memchr(name, 0, (size_t)nlen))
      return fg_fail(FG_ERR_BAD_STRING, "imatrix %s: entry %" PRId32 ": name at byte %zu holds a NUL byte", label, i, c.off);
    c.off += (size_t)nlen;
    if ((st = fg_im_i32(&c, "call count", i, &ncall))) return st;
    const size_t nval_at = c.off;
    if ((st = fg_im_i32(&c, "value count", i, &nval))) return st;
    if (nval < 1)
      return fg_fail(FG_ERR_RANGE, "imatrix %s: entry %" PRId32 " '%.*s': value count %" PRId32 " at byte %zu "
                     "(expected >= 1)", label, i, (int)nlen, name, nval, nval_at);
    if ((uint64_t)nval * 4 > c.len - c.off)
      return fg_fail(FG_ERR_TRUNCATED, "imatrix %s: entry %" PRId32 " '%.*s': %" PRId32 " values (%" PRIu64 " bytes) "
                     "at byte %zu run past the end (%zu bytes left)", label, i, (int)nlen, name, nval,
                     (uint64_t)nval * 4, c.off, c.len - c.off);
    fg_im_entry *e = &m->e[m->n];
    e->name = fg_im_strndup(name, (size_t)nlen);
    e->weights = (float *)malloc((size_t)nval * sizeof(float));
    if (!e->name || !e->weights) {
      free(e->name);
      free(e->weights);
      e->name = NULL;
      e->weights = NULL;
      return fg_fail(FG_ERR_NOMEM, "imatrix %s: out of memory for entry %" PRId32, label, i);
    }
    m->n++;
    e->n_values = nval;
    e->n_counts = 1;
    /* llama-quantize: the stored values are (sum/count)*ncall; it divides by ncall (an
     * int64 there, converted to float for the division) when ncall is positive */
    for (int32_t k = 0; k < nval; k++) {
      const float v = fg_bits_f32(fg_bytes_ld_le32(c.p + c.off + 4 * (size_t)k));
      e->weights[k] = ncall > 0 ? v / (float)(int64_t)ncall : v;
    }
    const int64_t bad = fg_im_first_nonfinite(e->weights, nval);
    if (bad >= 0)
      return fg_fail(FG_ERR_NONFINITE, "imatrix %s: entry %" PRId32 " '%s': value %" PRId64 " at byte %zu is %s "
                     "(llama-quantize refuses non-finite weights)", label, i, e->name, bad,
                     c.off + 4 * (size_t)bad, isnan(e->weights[bad]) ? "NaN" : "Inf");
    c.off += (size_t)nval * 4;
  }
  /* the optional trailer: chunk count, then the dataset name */
  if (c.off < c.len) {
    int32_t chunks = 0, dlen = 0;
    if ((st = fg_im_i32(&c, "chunk count", -1, &chunks))) return st;
    m->chunk_count = chunks;
    if (c.off < c.len) {
      const size_t at = c.off;
      if ((st = fg_im_i32(&c, "dataset name length", -1, &dlen))) return st;
      if (dlen < 0)
        return fg_fail(FG_ERR_RANGE, "imatrix %s: dataset name length %" PRId32 " at byte %zu (expected >= 0)", label,
                       dlen, at);
      if ((size_t)dlen > c.len - c.off)
        return fg_fail(FG_ERR_TRUNCATED, "imatrix %s: dataset name of %" PRId32 " bytes at byte %zu runs past the end "
                       "(%zu bytes left)", label, dlen, c.off, c.len - c.off);
      if (dlen > 0) {
        /* llama.cpp reads it as a C string: it ends at a NUL, if any */
        const char *d = (const char *)c.p + c.off;
        const void *nul = memchr(d, 0, (size_t)dlen);
        if ((st = fg_im_add_dataset(m, d, nul ? (size_t)((const char *)nul - d) : (size_t)dlen))) return st;
      }
      c.off += (size_t)dlen;
      if (c.off != c.len)
        return fg_fail(FG_ERR_RANGE, "imatrix %s: %zu unexpected bytes after the dataset name, at byte %zu", label,
                       c.len - c.off, c.off);
    }
  }
  qsort(m->e, m->n, sizeof *m->e, fg_im_cmp);
  for (size_t i = 1; i < m->n; i++)
    if (strcmp(m->e[i - 1].name, m->e[i].name) == 0)
      return fg_fail(FG_ERR_DUPLICATE, "imatrix %s: entry '%s' appears twice", label, m->e[i].name);
  return FG_OK;
}

/* ---- GGUF ---------------------------------------------------------------------------- */

typedef struct fg_im_part {
  const fg_gguf_tensor *t;
  size_t base_len;
  int kind; /* 0: in_sum2, 1: counts */
} fg_im_part;

static int fg_im_part_cmp(const void *a, const void *b) {
  const fg_im_part *x = (const fg_im_part *)a, *y = (const fg_im_part *)b;
  const size_t n = x->base_len < y->base_len ? x->base_len : y->base_len;
  const int c = memcmp(x->t->name, y->t->name, n);
  if (c) return c;
  if (x->base_len != y->base_len) return x->base_len < y->base_len ? -1 : 1;
  return x->kind - y->kind;
}

static bool fg_im_suffix(const fg_gguf_tensor *t, const char *suf, size_t *base_len) {
  const size_t n = strlen(suf);
  if (t->name_len < n || memcmp(t->name + t->name_len - n, suf, n) != 0) return false;
  *base_len = t->name_len - n;
  return true;
}

static fg_status fg_im_u32_key(const fg_gguf_file *f, int64_t k, const char *key, const char *label, int64_t *out) {
  if (fg_gguf_kv_type(f, (size_t)k) != FG_GGUF_UINT32)
    return fg_fail(FG_ERR_TYPE, "imatrix %s: key %s has wire type %s, expected UINT32", label, key,
                   fg_gguf_type_name(fg_gguf_kv_type(f, (size_t)k)));
  uint64_t v;
  fg_status st = fg_gguf_kv_uint(f, (size_t)k, &v);
  if (st) return st;
  *out = (int64_t)v;
  return FG_OK;
}

static fg_status fg_im_parse_gguf(fg_imatrix *m, const fg_gguf_file *f, const char *label) {
  const size_t nt = fg_gguf_tensor_count(f);
  if (nt < 1) return fg_fail(FG_ERR_RANGE, "imatrix %s: the GGUF file holds no tensors (no data)", label);
  const int64_t kd = fg_gguf_key_index(f, "imatrix.datasets");
  const int64_t kc = fg_gguf_key_index(f, "imatrix.chunk_count");
  const int64_t ks = fg_gguf_key_index(f, "imatrix.chunk_size");
  if (kd < 0 || kc < 0 || ks < 0)
    return fg_fail(FG_ERR_NOT_FOUND, "imatrix %s: missing imatrix metadata (key %s absent; llama-quantize needs "
                   "imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size)", label,
                   kd < 0 ? "imatrix.datasets" : kc < 0 ? "imatrix.chunk_count" : "imatrix.chunk_size");
  fg_status st;
  if ((st = fg_im_u32_key(f, kc, "imatrix.chunk_count", label, &m->chunk_count))) return st;
  if ((st = fg_im_u32_key(f, ks, "imatrix.chunk_size", label, &m->chunk_size))) return st;
  fg_gguf_array a;
  if (fg_gguf_kv_type(f, (size_t)kd) != FG_GGUF_ARRAY || fg_gguf_kv_array(f, (size_t)kd, &a) != FG_OK ||
      a.elem_type != FG_GGUF_STRING)
    return fg_fail(FG_ERR_TYPE, "imatrix %s: key imatrix.datasets is not an array of strings", label);
  for (uint64_t j = 0; j < a.len; j++) {
    fg_gguf_str s;
    if ((st = fg_gguf_array_str(&a, j, &s))) return st;
    /* llama.cpp keeps these as C strings: a NUL ends one */
    const void *nul = memchr(s.ptr, 0, (size_t)s.len);
    if ((st = fg_im_add_dataset(m, s.ptr, nul ? (size_t)((const char *)nul - s.ptr) : (size_t)s.len))) return st;
  }
  fg_im_part *parts = (fg_im_part *)malloc(nt * sizeof *parts);
  if (!parts) return fg_fail(FG_ERR_NOMEM, "imatrix %s: out of memory", label);
  size_t np = 0;
  for (size_t i = 0; i < nt; i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    size_t bl;
    if (t->name_len == 0) continue;
    if (fg_im_suffix(t, ".in_sum2", &bl)) parts[np++] = (fg_im_part){t, bl, 0};
    else if (fg_im_suffix(t, ".counts", &bl)) parts[np++] = (fg_im_part){t, bl, 1};
  }
  qsort(parts, np, sizeof *parts, fg_im_part_cmp);
  m->e = (fg_im_entry *)calloc(np ? np : 1, sizeof *m->e);
  if (!m->e) {
    free(parts);
    return fg_fail(FG_ERR_NOMEM, "imatrix %s: out of memory", label);
  }
  st = FG_OK;
  for (size_t i = 0; i < np && st == FG_OK;) {
    const fg_im_part *s = &parts[i];
    const fg_im_part *nx = i + 1 < np ? &parts[i + 1] : NULL;
    const bool paired = nx && s->kind == 0 && nx->kind == 1 && nx->base_len == s->base_len &&
                        memcmp(nx->t->name, s->t->name, s->base_len) == 0;
    if (!paired) {
      st = fg_fail(FG_ERR_BAD_SHAPE, "imatrix %s: entry '%.*s' has %s but no %s tensor (mismatched sums and counts)",
                   label, (int)s->base_len, s->t->name, s->kind ? "a .counts" : "an .in_sum2",
                   s->kind ? ".in_sum2" : ".counts");
      break;
    }
    const fg_gguf_tensor *ts = s->t, *tc = parts[i + 1].t;
    i += 2;
    if (ts->dtype != FG_F32 || tc->dtype != FG_F32) {
      const fg_gguf_tensor *bad = ts->dtype != FG_F32 ? ts : tc;
      st = fg_fail(FG_ERR_BAD_DTYPE, "imatrix %s: tensor '%s' at data offset %" PRIu64 " is %s, expected f32 "
                   "(sums and counts must be F32)", label, bad->name, bad->offset, fg_dtype_name(bad->dtype));
      break;
    }
    const int64_t nval = (int64_t)fg_gguf_tensor_numel(ts), ncnt = (int64_t)fg_gguf_tensor_numel(tc);
    if (ncnt < 1 || nval % ncnt != 0) {
      st = fg_fail(FG_ERR_BAD_SHAPE, "imatrix %s: entry '%.*s': %" PRId64 " sums and %" PRId64 " counts (the sums "
                   "must be a whole number of rows, one per count)", label, (int)s->base_len, ts->name, nval, ncnt);
      break;
    }
    fg_im_entry *e = &m->e[m->n];
    e->name = fg_im_strndup(ts->name, s->base_len);
    e->weights = (float *)malloc((size_t)(nval ? nval : 1) * sizeof(float));
    if (!e->name || !e->weights) {
      free(e->name);
      free(e->weights);
      e->name = NULL;
      e->weights = NULL;
      st = fg_fail(FG_ERR_NOMEM, "imatrix %s: out of memory for entry '%.*s'", label, (int)s->base_len, ts->name);
      break;
    }
    m->n++;
    e->n_values = nval;
    e->n_counts = ncnt;
    const int64_t ne0 = nval / ncnt;
    for (int64_t j = 0; j < ncnt && st == FG_OK; j++) {
      const float cf = fg_bits_f32(fg_bytes_ld_le32(tc->data + 4 * j));
      /* std::lround, exactly: finite and within int64 */
      if (!isfinite(cf)) {
        st = fg_fail(FG_ERR_NONFINITE, "imatrix %s: tensor '%s' count %" PRId64 " at data offset %" PRIu64 " is %s",
                     label, tc->name, j, tc->offset + 4 * (uint64_t)j, isnan(cf) ? "NaN" : "Inf");
        break;
      }
      const double r = round((double)cf);
      if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0)) {
        st = fg_fail(FG_ERR_RANGE, "imatrix %s: tensor '%s' count %" PRId64 " at data offset %" PRIu64 " (%g) does "
                     "not round into int64", label, tc->name, j, tc->offset + 4 * (uint64_t)j, (double)cf);
        break;
      }
      const float count = (float)(int64_t)r;
      float *w = e->weights + j * ne0;
      const uint8_t *src = ts->data + 4 * (size_t)(j * ne0);
      for (int64_t k = 0; k < ne0; k++)
        w[k] = count > 0.0f ? fg_bits_f32(fg_bytes_ld_le32(src + 4 * k)) / count : 1.0f;
      const int64_t bad = fg_im_first_nonfinite(w, ne0);
      if (bad >= 0)
        st = fg_fail(FG_ERR_NONFINITE, "imatrix %s: tensor '%s' value %" PRId64 " at data offset %" PRIu64 " gives a "
                     "%s weight (llama-quantize refuses non-finite weights)", label, ts->name, j * ne0 + bad,
                     ts->offset + 4 * (uint64_t)(j * ne0 + bad), isnan(w[bad]) ? "NaN" : "Inf");
    }
  }
  free(parts);
  if (st) return st;
  if (m->n == 0)
    return fg_fail(FG_ERR_RANGE, "imatrix %s: no .in_sum2/.counts tensor pairs among the %zu tensors (no data)", label,
                   nt);
  /* the pairs were sorted by name bytes, which is the order strcmp gives */
  return FG_OK;
}

/* ---- opening ------------------------------------------------------------------------- */

static fg_status fg_im_from_mapping(fg_mapping *map, const char *label, fg_imatrix **out) {
  fg_imatrix *m = (fg_imatrix *)calloc(1, sizeof *m);
  if (!m) return fg_fail(FG_ERR_NOMEM, "imatrix %s: out of memory", label);
  const uint8_t *p = fg_mapping_data(map);
  const size_t len = fg_mapping_size(map);
  fg_status st;
  if (len >= 4 && memcmp(p, "GGUF", 4) == 0) {
    m->format = FG_IMATRIX_GGUF;
    fg_gguf_file *f = NULL;
    st = fg_gguf_open_mapping(map, &f);
    if (st) st = fg_fail_prefix(st, "imatrix %s: ", label);
    else st = fg_im_parse_gguf(m, f, label);
    fg_gguf_close(f);
  } else {
    m->format = FG_IMATRIX_LEGACY;
    st = fg_im_parse_legacy(m, p, len, label);
  }
  if (st) {
    fg_imatrix_close(m);
    return st;
  }
  *out = m;
  return FG_OK;
}

fg_status fg_imatrix_open(const char *path, fg_imatrix **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "imatrix open: NULL argument");
  *out = NULL;
  fg_mapping *map = NULL;
  fg_status st = fg_mapping_open(path, FG_MAP_MMAP, &map);
  if (st) return fg_fail_prefix(st, "imatrix %s: ", path);
  st = fg_im_from_mapping(map, path, out);
  fg_mapping_release(map);
  return st;
}

fg_status fg_imatrix_open_bytes(const void *data, size_t len, const char *label, fg_imatrix **out) {
  if (!out || (!data && len)) return fg_fail(FG_ERR_INVALID_ARG, "imatrix open: NULL argument");
  *out = NULL;
  if (!label) label = "<memory>";
  fg_mapping *map = NULL;
  fg_status st = fg_mapping_wrap(data, len, &map);
  if (st) return st;
  st = fg_im_from_mapping(map, label, out);
  fg_mapping_release(map);
  return st;
}

/* ---- getters ------------------------------------------------------------------------- */

fg_imatrix_format fg_imatrix_format_of(const fg_imatrix *m) { return m->format; }
size_t fg_imatrix_count(const fg_imatrix *m) { return m ? m->n : 0; }
size_t fg_imatrix_dataset_count(const fg_imatrix *m) { return m ? m->ndatasets : 0; }
const char *fg_imatrix_dataset(const fg_imatrix *m, size_t i) { return m && i < m->ndatasets ? m->datasets[i] : NULL; }
int64_t fg_imatrix_chunk_count(const fg_imatrix *m) { return m ? m->chunk_count : 0; }
int64_t fg_imatrix_chunk_size(const fg_imatrix *m) { return m ? m->chunk_size : 0; }

static void fg_im_fill(const fg_im_entry *e, fg_imatrix_entry *out) {
  out->name = e->name;
  out->weights = e->weights;
  out->n_values = e->n_values;
  out->n_counts = e->n_counts;
}

fg_status fg_imatrix_entry_at(const fg_imatrix *m, size_t i, fg_imatrix_entry *out) {
  if (!m || !out) return fg_fail(FG_ERR_INVALID_ARG, "imatrix entry: NULL argument");
  if (i >= m->n) return fg_fail(FG_ERR_RANGE, "imatrix entry %zu: the matrix has %zu entries", i, m->n);
  fg_im_fill(&m->e[i], out);
  return FG_OK;
}

fg_status fg_imatrix_get(const fg_imatrix *m, const char *name, fg_imatrix_entry *out) {
  if (!m || !name || !out) return fg_fail(FG_ERR_INVALID_ARG, "imatrix get: NULL argument");
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const int c = strcmp(m->e[mid].name, name);
    if (c == 0) {
      fg_im_fill(&m->e[mid], out);
      return FG_OK;
    }
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return fg_fail(FG_ERR_NOT_FOUND, "imatrix: no entry for tensor '%s' (%zu entries)", name, m->n);
}

fg_status fg_imatrix_weights_for(const fg_imatrix *m, const char *tensor_name, int64_t n_per_row,
                                 int64_t n_experts, const float **weights) {
  if (!weights) return fg_fail(FG_ERR_INVALID_ARG, "imatrix weights: NULL argument");
  *weights = NULL;
  if (n_per_row < 1 || n_experts < 1)
    return fg_fail(FG_ERR_INVALID_ARG, "imatrix weights for '%s': row length %" PRId64 " and expert count %" PRId64
                   " must be positive", tensor_name ? tensor_name : "(null)", n_per_row, n_experts);
  fg_imatrix_entry e;
  fg_status st = fg_imatrix_get(m, tensor_name, &e);
  if (st) return st;
  if (n_per_row > INT64_MAX / n_experts || e.n_values != n_per_row * n_experts)
    return fg_fail(FG_ERR_BAD_SHAPE, "imatrix: entry '%s' holds %" PRId64 " weights, the tensor needs %" PRId64
                   " x %" PRId64 " (row length x experts)", tensor_name, e.n_values, n_per_row, n_experts);
  *weights = e.weights;
  return FG_OK;
}
