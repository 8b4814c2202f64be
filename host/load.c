/* fg_model_create: options, filter, the plan (what each selected tensor becomes and where), the
 * model container with its name index, and the choice between the CPU and staged paths.
 * Everything is validated and allocated before the first tensor byte is read, so a failure
 * while reading only has to free what the plan made. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "forgia/quant.h"
#include "host/load_internal.h"

#define FG_ARENA_ALIGN 256u

struct fg_model {
  fg_device *dev;
  char *path;
  const char *format;
  size_t n;
  fg_model_tensor *tensors;   /* file order */
  size_t *by_name;            /* indices sorted by name */
  char *names;                /* all names, NUL-terminated, back to back */
  uint64_t *shapes;           /* all shapes back to back */
  void *arena;                /* device memory of the owned tensors */
  size_t arena_mapped;        /* CPU: the arena is an anonymous mapping of this many bytes */
  size_t arena_bytes;         /* what the arena holds (at least stats.bytes_owned) */
  fg_mapping **maps;          /* per file: retained when a tensor borrows from it */
  size_t nmaps;
  char **files;               /* paths of the source's files */
  size_t nfiles;
  fg_load_stats stats;
};

/* ---- small public helpers ---------------------------------------------------------------- */

static const char *const fg_load_dtype_names[] = {"keep", "f32", "bf16", "f16", "dequant", "f64"};
#define FG_LOAD_DTYPE_COUNT 6

fg_status fg_load_dtype_from_name(const char *name, fg_load_dtype *out) {
  if (!name || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_load_dtype_from_name: NULL argument");
  for (int i = 0; i < FG_LOAD_DTYPE_COUNT; i++)
    if (strcmp(name, fg_load_dtype_names[i]) == 0) {
      *out = (fg_load_dtype)i;
      return FG_OK;
    }
  return fg_fail(FG_ERR_INVALID_ARG, "unknown dtype policy '%s' (expected keep, f32, bf16, f16, dequant or f64)", name);
}

const char *fg_load_dtype_name(fg_load_dtype p) {
  return (unsigned)p < FG_LOAD_DTYPE_COUNT ? fg_load_dtype_names[p] : "invalid";
}

bool fg_load_is_half(fg_dtype t) { return t == FG_F16 || t == FG_BF16; }

fg_dtype fg_load_target_dtype(fg_load_dtype p, fg_dtype stored) {
  const fg_dtype_traits *tr = fg_dtype_info(stored);
  bool quant = tr && tr->is_quant;
  bool cvt = stored == FG_F32 || fg_load_is_half(stored);
  switch (p) {
  case FG_LOAD_DTYPE_F32: return (quant || cvt) ? FG_F32 : stored;
  case FG_LOAD_DTYPE_BF16: return cvt ? FG_BF16 : stored;
  case FG_LOAD_DTYPE_F16: return cvt ? FG_F16 : stored;
  case FG_LOAD_DTYPE_DEQUANT: return quant ? FG_F32 : stored;
  case FG_LOAD_DTYPE_F64: return (quant || cvt) ? FG_F64 : stored;
  default: return stored;
  }
}

fg_dtype fg_load_options_target(const fg_load_options *o, fg_dtype stored) {
  if (!o) return stored;
  const fg_dtype_traits *tr = fg_dtype_info(stored);
  if ((o->flags & FG_LOAD_FLAG_KEEP_QUANT) && tr && tr->is_quant) return stored;
  return fg_load_target_dtype(o->dtype, stored);
}

void fg_load_options_init(fg_load_options *o) {
  if (o) memset(o, 0, sizeof *o);
}

bool fg_load_verbose(void) {
  const char *v = getenv("FORGIA_VERBOSE");
  return v && *v && strcmp(v, "0") != 0;
}

fg_status fg_load_progress_step(fg_load_ctx *c, const char *tensor) {
  if (!c->opt->progress) return FG_OK;
  fg_load_progress p = {tensor, c->tensors_done, c->nitems, c->bytes_done, c->bytes_total, fg_clock_seconds() - c->t0};
  if (c->opt->progress(&p, c->opt->progress_user)) return FG_OK;
  return fg_fail(FG_ERR_STATE, "%s: load cancelled by the progress callback at tensor %s (%llu of %llu bytes read)",
                 fg_ckpt_path(c->ckpt), tensor,
                 (unsigned long long)c->bytes_done, (unsigned long long)c->bytes_total);
}

fg_status fg_load_final_check(fg_load_ctx *c) {
  size_t nf = fg_ckpt_file_count(c->ckpt);
  bool *done = calloc(nf ? nf : 1, sizeof *done);
  if (!done) return fg_fail(FG_ERR_NOMEM, "load: out of memory");
  fg_status s = FG_OK;
  for (size_t i = 0; i < c->nitems && !s; i++) {
    const fg_ckpt_tensor *t = c->items[i].src;
    bool lazy = c->items[i].how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_FLAG_LAZY);
    if (lazy || done[t->file]) continue;
    done[t->file] = true;
    s = fg_load_io_check(c->io, t, t->nbytes);
  }
  free(done);
  return s;
}

/* ---- the model -------------------------------------------------------------------------- */

void fg_model_free(fg_model *m) {
  if (!m) return;
  if (m->arena && m->arena_mapped) munmap(m->arena, m->arena_mapped);
  else if (m->arena) fg_device_mem_free(m->dev, m->arena);
  for (size_t i = 0; i < m->nmaps; i++) fg_mapping_release(m->maps[i]);
  free(m->maps);
  for (size_t i = 0; i < m->nfiles; i++) free(m->files[i]);
  free(m->files);
  free(m->tensors);
  free(m->by_name);
  free(m->names);
  free(m->shapes);
  free(m->path);
  free(m);
}

size_t fg_model_count(const fg_model *m) { return m ? m->n : 0; }
const fg_model_tensor *fg_model_at(const fg_model *m, size_t i) { return m && i < m->n ? &m->tensors[i] : NULL; }
fg_device *fg_model_device(const fg_model *m) { return m ? m->dev : NULL; }
const char *fg_model_path(const fg_model *m) { return m ? m->path : ""; }
const char *fg_model_format(const fg_model *m) { return m ? m->format : ""; }
const fg_load_stats *fg_model_stats(const fg_model *m) { return m ? &m->stats : NULL; }
size_t fg_model_file_count(const fg_model *m) { return m ? m->nfiles : 0; }
const char *fg_model_file_path(const fg_model *m, size_t i) { return m && i < m->nfiles ? m->files[i] : NULL; }

static fg_status copy_file_paths(fg_model *m, const fg_ckpt *src) {
  size_t n = fg_ckpt_file_count(src);
  m->files = calloc(n ? n : 1, sizeof *m->files);
  if (!m->files) return fg_fail(FG_ERR_NOMEM, "load: out of memory");
  for (size_t i = 0; i < n; i++) {
    if (!(m->files[i] = strdup(fg_ckpt_file_at(src, i)->path))) return fg_fail(FG_ERR_NOMEM, "load: out of memory");
    m->nfiles = i + 1;
  }
  return FG_OK;
}

static int tensor_name_cmp(const fg_model_tensor *t, const char *name, size_t len) {
  int c = memcmp(t->name, name, t->name_len < len ? t->name_len : len);
  if (c) return c;
  return (t->name_len > len) - (t->name_len < len);
}

const fg_model_tensor *fg_model_find(const fg_model *m, const char *name) {
  if (!m || !name) return NULL;
  size_t len = strlen(name), lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const fg_model_tensor *t = &m->tensors[m->by_name[mid]];
    int c = tensor_name_cmp(t, name, len);
    if (c == 0) return t;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

fg_status fg_model_get(const fg_model *m, const char *name, const fg_model_tensor **out) {
  if (!m || !name || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_model_get: NULL argument");
  const fg_model_tensor *t = fg_model_find(m, name);
  if (!t) return fg_fail(FG_ERR_NOT_FOUND, "%s: no loaded tensor named '%s' (%zu loaded)", m->path, name, m->n);
  *out = t;
  return FG_OK;
}

/* C11 qsort has no context pointer: sort (key, index) pairs instead. */
typedef struct sort_ref {
  const fg_model_tensor *t;
  size_t file;
  uint64_t offset;
  size_t index;
} sort_ref;

static int by_name_cmp(const void *a, const void *b) {
  const sort_ref *x = a, *y = b;
  return tensor_name_cmp(x->t, y->t->name, y->t->name_len);
}

static int by_offset_cmp(const void *a, const void *b) {
  const sort_ref *x = a, *y = b;
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  return (x->offset > y->offset) - (x->offset < y->offset);
}

/* ---- plan ------------------------------------------------------------------------------- */

static fg_status select_tensors(const fg_ckpt *src, const fg_load_options *o, bool *sel, uint64_t *skipped) {
  size_t n = fg_ckpt_count(src);
  const char *path = fg_ckpt_path(src);
  if (o->names) {
    for (size_t i = 0; i < o->n_names; i++) {
      if (!o->names[i]) return fg_fail(FG_ERR_INVALID_ARG, "fg_model_create: names[%zu] is NULL", i);
      const fg_ckpt_tensor *t = fg_ckpt_find(src, o->names[i]);
      if (!t)
        return fg_fail(FG_ERR_NOT_FOUND, "%s: no tensor named '%s' (the source has %zu tensors)", path, o->names[i], n);
      sel[t - fg_ckpt_tensor_at(src, 0)] = true;
    }
  } else {
    for (size_t i = 0; i < n; i++) sel[i] = true;
  }
  *skipped = 0;
  for (size_t i = 0; i < n; i++) {
    const fg_ckpt_tensor *t = fg_ckpt_tensor_at(src, i);
    if (sel[i] && o->filter) {
      fg_load_tensor_info info = {t->name, t->name_len, t->dtype, t->ndim, t->shape, t->nbytes};
      sel[i] = o->filter(&info, o->filter_user);
    }
    if (!sel[i]) (*skipped)++;
  }
  return FG_OK;
}

static fg_status plan_tensor(const fg_ckpt *src, fg_device *dev, const fg_ckpt_tensor *t, const fg_load_options *o,
                             bool cpu_direct, fg_dtype *out_dtype, fg_load_how *how, uint64_t *out_bytes) {
  const char *path = fg_ckpt_file_at(src, t->file)->path;
  const uint64_t row = fg_load_row(t);
  const unsigned flags = o->flags;
  fg_dtype od = fg_load_options_target(o, t->dtype);
  *out_dtype = od;
  if (od == t->dtype) {
    *how = (cpu_direct && !(flags & FG_LOAD_FLAG_COPY)) ? FG_HOW_BORROW : FG_HOW_COPY;
    *out_bytes = t->nbytes;
    return FG_OK;
  }
  const fg_dtype_traits *tr = fg_dtype_info(t->dtype);
  if (od == FG_F64) {
    /* the host converts: a block type needs the row decoder, whole rows of blocks */
    if (tr->is_quant && !fg_quant_can_decode(t->dtype))
      return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor %s: this build cannot decode %s on the host for an f64 load", path,
                     t->name, fg_dtype_name(t->dtype));
    if (tr->is_quant && (row == 0 || row % tr->block_elems || t->numel % row))
      return fg_fail(FG_ERR_BAD_ROW, "%s: tensor %s: rows of %llu elements are not whole %s blocks of %u", path,
                     t->name, (unsigned long long)row, fg_dtype_name(t->dtype), tr->block_elems);
    *how = FG_HOW_WIDEN64;
  } else if (tr->is_quant) {
    if (!fg_quant_can_decode(t->dtype) && fg_convert(dev, NULL, FG_F32, NULL, t->dtype, 0, NULL) != FG_OK)
      return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor %s: this build cannot dequantize %s to f32", path, t->name,
                     fg_dtype_name(t->dtype));
    if (row == 0 || row % tr->block_elems || t->numel % row)
      return fg_fail(FG_ERR_BAD_ROW, "%s: tensor %s: rows of %llu elements are not whole %s blocks of %u", path,
                     t->name, (unsigned long long)row, fg_dtype_name(t->dtype), tr->block_elems);
    *how = FG_HOW_DEQUANT;
  } else {
    *how = FG_HOW_CONVERT;
  }
  fg_status s = fg_dtype_nbytes(od, t->numel, out_bytes);
  if (s) return fg_fail_prefix(s, "%s: tensor %s: ", path, t->name);
  return FG_OK;
}

/* Retains the mapping of every file a borrowed tensor points into. */
static fg_status retain_borrowed(fg_model *m, const fg_ckpt *src, const fg_load_item *items, size_t n) {
  m->nmaps = fg_ckpt_file_count(src);
  m->maps = calloc(m->nmaps ? m->nmaps : 1, sizeof *m->maps);
  if (!m->maps) return fg_fail(FG_ERR_NOMEM, "load: out of memory");
  for (size_t i = 0; i < n; i++) {
    size_t f = items[i].src->file;
    if (items[i].how != FG_HOW_BORROW || m->maps[f] || !items[i].src->nbytes) continue;
    m->maps[f] = fg_ckpt_retain_mapping(src, f);
    if (!m->maps[f]) return fg_fail(FG_ERR_STATE, "%s: cannot retain the mapping", fg_ckpt_file_at(src, f)->path);
  }
  return FG_OK;
}

/* CPU output of 2 MiB or more: an anonymous mapping on a 2 MiB boundary, so that every byte
 * of it can be a huge page. The output is written once, and its first touch costs the
 * kernel a fault and the zeroing of each page: with huge pages that is one fault per 2 MiB
 * instead of 512, and the zeroing runs at memset speed (a hint; kernels without THP ignore
 * it). The pages are faulted by the threads that write them, so the zeroing is spread
 * over every thread of the load. */
#define FG_ARENA_HUGE ((uint64_t)2 << 20)

static fg_status cpu_arena(fg_model *m, size_t bytes) {
  const size_t huge = (size_t)FG_ARENA_HUGE;
  size_t len = (bytes + huge - 1) / huge * huge;
  if (len < bytes || len + huge < len) return fg_fail(FG_ERR_DEVICE_NOMEM, "cpu: cannot allocate %zu bytes", bytes);
  uint8_t *p = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return fg_fail(FG_ERR_DEVICE_NOMEM, "cpu: cannot allocate %zu bytes", bytes);
  uint8_t *a = (uint8_t *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
  if (a > p) munmap(p, (size_t)(a - p));
  if (a + len < p + len + huge) munmap(a + len, (size_t)(p + len + huge - (a + len)));
  (void)madvise(a, len, MADV_HUGEPAGE);
  m->arena = a;
  m->arena_mapped = len;
  m->arena_bytes = len;
  return FG_OK;
}

/* Takes over old's arena for `bytes` of output when it is on the same device and holds
 * them: a mapped CPU arena gives its unused whole huge pages back; any other may be at
 * most twice the size needed, so that recycling never pins much more than a load needs.
 * True when taken. */
static bool take_arena(fg_model *m, fg_model *old, size_t bytes) {
  if (!old || old->dev != m->dev || !old->arena || old->arena_bytes < bytes) return false;
  if (old->arena_mapped) {
    size_t keep = (bytes + (size_t)FG_ARENA_HUGE - 1) / (size_t)FG_ARENA_HUGE * (size_t)FG_ARENA_HUGE;
    if (keep < old->arena_mapped) {
      munmap((uint8_t *)old->arena + keep, old->arena_mapped - keep);
      old->arena_mapped = keep;
      old->arena_bytes = keep;
    }
  } else if (old->arena_bytes / 2 > bytes) {
    return false;
  }
  m->arena = old->arena;
  m->arena_mapped = old->arena_mapped;
  m->arena_bytes = old->arena_bytes;
  old->arena = NULL;
  old->arena_mapped = old->arena_bytes = 0;
  m->stats.recycled = true;
  return true;
}

static fg_status build_model(const fg_ckpt *src, fg_device *dev, const fg_load_options *o, const bool *sel,
                             bool cpu_direct, fg_model *m, fg_model **recycle, fg_load_item **items_out) {
  size_t n = fg_ckpt_count(src), k = 0, name_bytes = 0, dims = 0;
  for (size_t i = 0; i < n; i++)
    if (sel[i]) {
      const fg_ckpt_tensor *t = fg_ckpt_tensor_at(src, i);
      k++;
      name_bytes += t->name_len + 1;
      dims += (size_t)t->ndim;
    }
  m->n = k;
  m->tensors = calloc(k ? k : 1, sizeof *m->tensors);
  m->by_name = calloc(k ? k : 1, sizeof *m->by_name);
  m->names = malloc(name_bytes ? name_bytes : 1);
  m->shapes = calloc(dims ? dims : 1, sizeof *m->shapes);
  fg_load_item *items = calloc(k ? k : 1, sizeof *items);
  sort_ref *refs = calloc(k ? k : 1, sizeof *refs);
  fg_status s = FG_OK;
  if (!m->tensors || !m->by_name || !m->names || !m->shapes || !items || !refs) {
    s = fg_fail(FG_ERR_NOMEM, "load: out of memory for %zu tensors", k);
    goto done;
  }
  /* Names, shapes, dtypes and sizes; the arena offsets ride in data until it exists. */
  char *np = m->names;
  uint64_t *sp = m->shapes, arena = 0;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (!sel[i]) continue;
    const fg_ckpt_tensor *t = fg_ckpt_tensor_at(src, i);
    fg_model_tensor *mt = &m->tensors[j];
    fg_load_item *it = &items[j];
    memcpy(np, t->name, t->name_len);
    np[t->name_len] = '\0';
    mt->name = np;
    mt->name_len = t->name_len;
    np += t->name_len + 1;
    if (t->ndim) memcpy(sp, t->shape, (size_t)t->ndim * sizeof *sp);
    mt->shape = sp;
    mt->ndim = t->ndim;
    sp += t->ndim;
    mt->file_dtype = t->dtype;
    mt->numel = t->numel;
    mt->file = t->file;
    mt->file_offset = t->offset;
    if ((s = plan_tensor(src, dev, t, o, cpu_direct, &mt->dtype, &it->how, &mt->nbytes))) goto done;
    it->src = t;
    it->out = mt;
    if (it->how == FG_HOW_BORROW) {
      mt->borrowed = true;
      mt->data = (void *)(uintptr_t)t->data;
      m->stats.bytes_borrowed += mt->nbytes;
    } else if (mt->nbytes) {
      uint64_t padded = (mt->nbytes + FG_ARENA_ALIGN - 1) / FG_ARENA_ALIGN * FG_ARENA_ALIGN;
      if (padded < mt->nbytes || arena + padded < arena) {
        s = fg_fail(FG_ERR_OVERFLOW, "%s: tensor %s: the model's total size overflows",
                    fg_ckpt_file_at(src, t->file)->path, t->name);
        goto done;
      }
      mt->data = (void *)(uintptr_t)(arena + 1); /* offset + 1, so that 0 stays "none" */
      arena += padded;
    }
    refs[j] = (sort_ref){mt, t->file, t->offset, j};
    j++;
  }
  m->stats.bytes_owned = arena;
  if (arena) {
    if (arena > SIZE_MAX) {
      s = fg_fail(FG_ERR_OVERFLOW, "%s: %llu bytes do not fit in this address space", m->path,
                  (unsigned long long)arena);
      goto done;
    }
    bool taken = take_arena(m, *recycle, (size_t)arena);
    /* whatever is left of the recycled model goes before fresh memory is asked for */
    fg_model_free(*recycle);
    *recycle = NULL;
    if (taken) s = FG_OK;
    else if (fg_device_kind_of(dev) == FG_DEVICE_CPU && arena >= FG_ARENA_HUGE) s = cpu_arena(m, (size_t)arena);
    else if ((s = fg_device_mem_alloc(dev, (size_t)arena, &m->arena)) == FG_OK) m->arena_bytes = (size_t)arena;
    if (s) {
      s = fg_fail_prefix(s, "%s: %zu tensors need %llu bytes on %s: ", m->path, k, (unsigned long long)arena,
                         fg_device_spec(dev));
      goto done;
    }
    for (size_t i = 0; i < k; i++)
      if (!m->tensors[i].borrowed && m->tensors[i].data)
        m->tensors[i].data = (uint8_t *)m->arena + ((uintptr_t)m->tensors[i].data - 1);
  }
  if ((s = retain_borrowed(m, src, items, k))) goto done;
  /* The name index, then the items in the order their bytes lie on disk. */
  qsort(refs, k, sizeof *refs, by_name_cmp);
  for (size_t i = 0; i < k; i++) {
    if (i && by_name_cmp(&refs[i - 1], &refs[i]) == 0) {
      s = fg_fail(FG_ERR_DUPLICATE, "%s: tensor %s appears twice", m->path, refs[i].t->name);
      goto done;
    }
    m->by_name[i] = refs[i].index;
  }
  qsort(refs, k, sizeof *refs, by_offset_cmp);
  fg_load_item *sorted = calloc(k ? k : 1, sizeof *sorted);
  if (!sorted) {
    s = fg_fail(FG_ERR_NOMEM, "load: out of memory");
    goto done;
  }
  for (size_t i = 0; i < k; i++) sorted[i] = items[refs[i].index];
  free(items);
  items = sorted;
done:
  free(refs);
  if (s) free(items);
  else *items_out = items;
  return s;
}

/* ---- fg_model_create ---------------------------------------------------------------------------- */

static fg_status load(const char *path, fg_device *dev, const fg_load_options *o, fg_model **recycle, fg_model **out) {
  if (!path || !dev || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_model_create: NULL argument");
  if ((unsigned)o->dtype >= FG_LOAD_DTYPE_COUNT)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_model_create: dtype policy %d out of range", (int)o->dtype);
  if ((o->flags & FG_LOAD_FLAG_KEEP_QUANT) && o->dtype == FG_LOAD_DTYPE_DEQUANT)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_model_create: FG_LOAD_FLAG_KEEP_QUANT contradicts the dequant policy "
                   "(which only changes block types)");
  /* Ring sizes are checked whatever the target, so that a bad option fails the same way on
   * every machine. */
  if (!o->ring && (o->ring_count > FG_LOAD_RING_MAX_COUNT ||
                   (o->ring_bytes && (o->ring_bytes < FG_LOAD_RING_MIN_BYTES || o->ring_bytes > FG_LOAD_RING_MAX_BYTES))))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_model_create: staging ring of %u x %zu bytes, expected 1..%u buffers of %zu..%zu bytes",
                   o->ring_count, o->ring_bytes, FG_LOAD_RING_MAX_COUNT, FG_LOAD_RING_MIN_BYTES, FG_LOAD_RING_MAX_BYTES);
  if (o->ring && o->ring->dev != dev)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_model_create: the ring belongs to %s, the load targets %s",
                   fg_device_spec(o->ring->dev), fg_device_spec(dev));
  double t0 = fg_clock_seconds();
  bool staged = fg_device_kind_of(dev) != FG_DEVICE_CPU || (o->flags & FG_LOAD_FLAG_STAGED);

  fg_ckpt *src = NULL;
  fg_load_io *io = NULL;
  fg_model *m = NULL;
  bool *sel = NULL;
  fg_load_item *items = NULL;
  fg_status s = fg_ckpt_open(path, &src);
  if (s) return s;
  if ((s = fg_load_io_open(src, &io))) goto fail;
  m = calloc(1, sizeof *m);
  sel = calloc(fg_ckpt_count(src) ? fg_ckpt_count(src) : 1, sizeof *sel);
  if (!m || !sel || !(m->path = strdup(path))) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
    goto fail;
  }
  m->dev = dev;
  m->format = fg_ckpt_format_name(fg_ckpt_format_of(src));
  m->stats.files = fg_ckpt_file_count(src);
  m->stats.numa_node = -1;
  if ((s = copy_file_paths(m, src))) goto fail;
  if ((s = select_tensors(src, o, sel, &m->stats.tensors_skipped))) goto fail;
  if ((s = build_model(src, dev, o, sel, !staged, m, recycle, &items))) goto fail;

  fg_load_ctx c = {0};
  c.ckpt = src;
  c.io = io;
  c.dev = dev;
  c.opt = o;
  c.items = items;
  c.nitems = m->n;
  c.t0 = t0;
  c.threads = o->threads > 0 ? o->threads : omp_get_max_threads();
  c.stats = &m->stats;
  for (size_t i = 0; i < c.nitems; i++) c.bytes_total += items[i].src->nbytes;
  s = staged ? fg_load_run_staged(&c) : fg_load_run_cpu(&c);
  if (s) goto fail;
  m->stats.staged = staged;
  m->stats.tensors = m->n;
  m->stats.bytes_read = c.bytes_total;
  m->stats.seconds = fg_clock_seconds() - t0;
  free(items);
  free(sel);
  fg_load_io_close(io);
  fg_ckpt_close(src);
  *out = m;
  return FG_OK;
fail:
  free(items);
  free(sel);
  fg_model_free(m);
  fg_load_io_close(io);
  fg_ckpt_close(src);
  return s;
}

fg_status fg_model_create(const char *path, fg_device *dev, const fg_load_options *opt, fg_model **out) {
  fg_load_options defaults;
  fg_load_options_init(&defaults);
  const fg_load_options *o = opt ? opt : &defaults;
  /* the caller handed the recycled model over: what the plan did not take is freed here */
  fg_model *recycle = o->recycle;
  fg_status s = load(path, dev, o, &recycle, out);
  fg_model_free(recycle);
  return s;
}
