/* The CPU target without staging. Kept tensors are borrowed from the mapping (their pages
 * populated unless FG_LOAD_FLAG_LAZY); copied, converted and dequantized tensors are produced in
 * chunks, with every thread, while the next chunks are read ahead.
 *
 * Pages of a chunk that are not in the page cache are read in exactly, with pread through
 * the loader's own descriptor (kernel readahead off): faulting cold pages in through the
 * mapping would let the kernel's mmap readahead pull in rejected neighbours. Cached pages
 * are taken through the mapping (MADV_RANDOM on it: a fault never starts readahead), since
 * a pread over a page that the parsers' header faults marked for readahead would start a
 * read of a whole window past it. A file truncated under the load is a status, never
 * SIGBUS: borrowed pages are populated with MADV_POPULATE_READ, and the mapping is read
 * only under its guard (forgia/mapping.h), one piece per OpenMP thread (a guard cannot
 * leave a parallel region, so each thread guards its own piece). Copied tensors are
 * copied straight into their output; converted ones (f32/f16/bf16) are converted element
 * by element straight from the mapping, with the elem/ functions the CPU backend's loops
 * call (the same bits as fg_convert, whose threads could not be guarded); dequantized ones
 * are copied into a bounce buffer that the decoder reads. Pages only read from are released
 * from the process afterwards. Process memory beyond the output is about one chunk of file
 * pages plus a bounce buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "forgia/elem/bytes.h"
#include "forgia/elem/half.h"
#include "forgia/quant.h"
#include "host/load_internal.h"

#define FG_CPU_CHUNK ((uint64_t)16 << 20)       /* stored bytes worked on at a time */
#define FG_CPU_POPULATE_PIECE ((uint64_t)4 << 20) /* per thread when populating in parallel */
#define FG_CPU_AHEAD ((uint64_t)64 << 20)        /* readahead window beyond the cursor */

/* Readahead over the selected tensors only, in load order: keeps WILLNEED hints issued up to
 * FG_CPU_AHEAD bytes past the cursor. */
typedef struct prefetcher {
  size_t item;
  uint64_t off;
  uint64_t issued; /* sequence bytes hinted so far */
} prefetcher;

static void prefetch_to(fg_load_ctx *c, prefetcher *p, uint64_t upto) {
  while (p->issued < upto && p->item < c->nitems) {
    const fg_ckpt_tensor *t = c->items[p->item].src;
    bool lazy = c->items[p->item].how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_FLAG_LAZY);
    uint64_t step = t->nbytes - p->off < FG_CPU_CHUNK ? t->nbytes - p->off : FG_CPU_CHUNK;
    if (step && !lazy) fg_load_io_prefetch(c->io, t, p->off, step);
    p->issued += step;
    p->off += step;
    if (p->off >= t->nbytes) {
      p->item++;
      p->off = 0;
    }
  }
}

/* The first failure among parallel workers, carried to the calling thread (messages are
 * thread-local). */
typedef struct err_slot {
  fg_status st;
  uint64_t at;
  char msg[768];
} err_slot;

/* Keeps the failure at the lowest offset, so the message does not depend on which thread
 * failed first. Called by the failing thread; the critical section orders the writers. */
static void err_keep(err_slot *e, fg_status s, uint64_t at) {
#pragma omp critical(fg_load_cpu_err)
  if (at < e->at) {
    e->st = s;
    e->at = at;
    snprintf(e->msg, sizeof e->msg, "%s", fg_last_error());
  }
}

static fg_status populate_parallel(fg_load_ctx *c, const fg_ckpt_tensor *t, uint64_t off, uint64_t len) {
  int64_t pieces = (int64_t)((len + FG_CPU_POPULATE_PIECE - 1) / FG_CPU_POPULATE_PIECE);
  int threads = c->threads < pieces ? c->threads : (int)pieces;
  if (threads <= 1) return fg_load_io_populate(c->io, t, off, len);
  err_slot e = {FG_OK, UINT64_MAX, ""};
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t p = 0; p < pieces; p++) {
    uint64_t o = off + (uint64_t)p * FG_CPU_POPULATE_PIECE;
    uint64_t n = off + len - o < FG_CPU_POPULATE_PIECE ? off + len - o : FG_CPU_POPULATE_PIECE;
    fg_status s = fg_load_io_populate(c->io, t, o, n);
    if (s) err_keep(&e, s, o);
  }
  return e.st ? fg_fail(e.st, "%s", e.msg) : FG_OK;
}

/* Converts n elements between f32, f16 and bf16 (f16 <-> bf16 through f32, as fg_convert
 * does), src possibly unaligned. One thread, no OpenMP: it runs under a mapping guard. */
typedef struct cvt_job {
  uint8_t *dst;
  fg_dtype dt;
  const uint8_t *src;
  fg_dtype st;
  size_t n;
} cvt_job;

static inline float load_float(fg_dtype st, const uint8_t *p) {
  if (st == FG_F16) return fg_f16_to_f32(fg_ld_le16(p));
  if (st == FG_BF16) return fg_bf16_to_f32(fg_ld_le16(p));
  float v;
  memcpy(&v, p, 4);
  return v;
}

#define FG_CVT_LOOP(ST, SSZ, STORE)                                                             \
  for (size_t i = 0; i < j->n; i++) {                                                          \
    float v = load_float(ST, j->src + (SSZ) * i);                                               \
    STORE;                                                                                      \
  }

static fg_status cvt_fn(void *user) {
  const cvt_job *j = user;
  if (j->dt == FG_F32) {
    float *d = (float *)(void *)j->dst;
    if (j->st == FG_F16) FG_CVT_LOOP(FG_F16, 2, d[i] = v)
    else FG_CVT_LOOP(FG_BF16, 2, d[i] = v)
  } else {
    uint16_t *d = (uint16_t *)(void *)j->dst;
    bool f16 = j->dt == FG_F16;
    if (j->st == FG_F32) {
      if (f16) FG_CVT_LOOP(FG_F32, 4, d[i] = fg_f32_to_f16(v))
      else FG_CVT_LOOP(FG_F32, 4, d[i] = fg_f32_to_bf16(v))
    } else if (f16) {
      FG_CVT_LOOP(FG_BF16, 2, d[i] = fg_f32_to_f16(v))
    } else {
      FG_CVT_LOOP(FG_F16, 2, d[i] = fg_f32_to_bf16(v))
    }
  }
  return FG_OK;
}

/* Stored bytes worked on at a time for an item: a whole number of elements or rows. */
static uint64_t chunk_step(const fg_load_item *it, uint64_t *unit_out) {
  const fg_ckpt_tensor *t = it->src;
  const fg_dtype_traits *tr = fg_dtype_info(t->dtype);
  uint64_t step = FG_CPU_CHUNK, unit = 1;
  if (it->how == FG_HOW_CONVERT || (it->how == FG_HOW_WIDEN64 && !tr->is_quant)) {
    unit = tr->block_bytes;
  } else if (it->how == FG_HOW_DEQUANT || it->how == FG_HOW_WIDEN64) {
    unit = fg_load_row(t) / tr->block_elems * tr->block_bytes; /* one row */
  }
  if (step < unit) step = unit;
  step -= step % unit;
  *unit_out = unit;
  return step;
}

typedef struct cpu_work {
  uint8_t *bounce;         /* a chunk's stored bytes to dequantize; elsewhere, where the preads
                              that only bring pages into the cache land (bytes not used) */
  size_t bounce_bytes;
  unsigned char *vec;      /* mincore output for one chunk */
  size_t vec_len;
} cpu_work;

/* mincore of the mapping's pages under t's bytes [off, off+len) into w->vec; *lo_out is the
 * address of the first page. A failing mincore reads as "nothing cached". */
static fg_status residency(cpu_work *w, const fg_ckpt_tensor *t, uint64_t off, uint64_t len, uintptr_t *lo_out) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)t->data + off) & ~(uintptr_t)(page - 1), hi = (uintptr_t)t->data + off + len;
  size_t pages = (size_t)((hi - lo + page - 1) / page);
  if (pages > w->vec_len) {
    unsigned char *v = realloc(w->vec, pages);
    if (!v) return fg_fail(FG_ERR_NOMEM, "load: out of memory");
    w->vec = v;
    w->vec_len = pages;
  }
  if (mincore((void *)lo, hi - lo, w->vec) != 0) memset(w->vec, 0, pages);
  *lo_out = lo;
  return FG_OK;
}

/* Brings t's bytes [off, off+len) into the page cache exactly: mincore finds the pages that
 * are not cached yet, and each run of them is read with pread through the loader's own
 * descriptor (kernel readahead off) into the bounce buffer. Cached pages are not read
 * again: a page the kernel marked for readahead (the parsers' header faults leave such
 * marks) would start a read of a whole window past it, rejected tensors included. */
static fg_status cache_exactly(const fg_load_ctx *c, cpu_work *w, const fg_ckpt_tensor *t, uint64_t off,
                               uint64_t len) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uint8_t *p = t->data + off;
  uintptr_t lo = 0;
  fg_status s = residency(w, t, off, len, &lo);
  if (s) return s;
  size_t pages = (size_t)(((uintptr_t)p + len - lo + page - 1) / page);
  for (size_t i = 0; i < pages;) {
    if (w->vec[i] & 1) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < pages && !(w->vec[j] & 1)) j++;
    /* the run [i, j) of pages, clamped to the chunk */
    uint64_t a = (uint64_t)(lo + i * page) > (uint64_t)(uintptr_t)p ? (uint64_t)(lo + i * page - (uintptr_t)p) : 0;
    uint64_t b = (uint64_t)(lo + j * page - (uintptr_t)p);
    if (b > len) b = len;
    if ((s = fg_load_io_read(c->io, t, off + a, w->bounce, (size_t)(b - a), c->threads))) return s;
    i = j;
  }
  return FG_OK;
}

#define FG_CPU_READ_PIECE ((uint64_t)1 << 20) /* per thread when reading a chunk */

/* A guarded read of t's bytes from offset `at` (chunk-relative: off + at) that faulted: the
 * loader's own words when its identity check can tell what happened, else the guard's,
 * with the tensor. */
static fg_status fault(const fg_load_ctx *c, const fg_ckpt_tensor *t, uint64_t at, fg_status s) {
  const fg_load_file *f = &c->io->files[t->file];
  fg_status id = fg_load_io_check(c->io, t, at);
  if (id) return id;
  const char *mp = fg_mapping_path(f->map), *m = fg_last_error();
  size_t n = strlen(mp);
  char msg[768];
  snprintf(msg, sizeof msg, "%s", strncmp(m, mp, n) == 0 && m[n] == ':' && m[n + 1] == ' ' ? m + n + 2 : m);
  return fg_fail(s, "%s: tensor %s at offset %llu: %s", f->path, t->name, (unsigned long long)(t->offset + at), msg);
}

/* One piece [a, b) of the chunk at off. Runs of uncached pages are read with pread: into
 * target + a when there is a target, else into the bounce buffer just to bring them into
 * the page cache. Then, under the mapping's guard, runs of cached pages are copied to
 * target + a, or (no target) the whole piece is converted from the mapping by cvt (whose
 * src, dst and n this sets). */
static fg_status read_piece(const fg_load_ctx *c, const cpu_work *w, const fg_ckpt_tensor *t, uint64_t off,
                            uintptr_t lo, uint64_t a, uint64_t b, uint8_t *target, const cvt_job *cvt) {
  const fg_load_file *f = &c->io->files[t->file];
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uintptr_t base = (uintptr_t)t->data + off;
  fg_status s;
  for (uint64_t x = a; x < b;) {
    bool cached = w->vec[(base + x - lo) / page] & 1;
    uint64_t e = x;
    while (e < b) {
      size_t q = (size_t)((base + e - lo) / page);
      if ((bool)(w->vec[q] & 1) != cached) break;
      uint64_t next = (uint64_t)(lo + (q + 1) * page - base);
      e = next < b ? next : b;
    }
    if (!cached && (s = fg_load_io_read(c->io, t, off + x, (target ? target : w->bounce) + x, (size_t)(e - x), 1)))
      return s;
    if (cached && target && (s = fg_mapping_copy(f->map, target + x, t->offset + off + x, e - x)))
      return fault(c, t, off + x, s);
    x = e;
  }
  if (target) return FG_OK;
  const uint64_t ssz = cvt->st == FG_F32 ? 4 : 2, dsz = cvt->dt == FG_F32 ? 4 : 2;
  cvt_job j = *cvt;
  j.src = t->data + off + a;
  j.dst += (off + a) / ssz * dsz;
  j.n = (size_t)((b - a) / ssz);
  if ((s = fg_mapping_access(f->map, cvt_fn, &j))) return fault(c, t, off + a, s);
  return FG_OK;
}

/* t's bytes [off, off+len), every piece on one thread, with every thread: copied into
 * target, or converted by cvt (target NULL). */
static fg_status read_chunk(fg_load_ctx *c, cpu_work *w, const fg_ckpt_tensor *t, uint64_t off, uint64_t len,
                            uint8_t *target, const cvt_job *cvt) {
  uintptr_t lo = 0;
  fg_status s = residency(w, t, off, len, &lo);
  if (s) return s;
  int64_t pieces = (int64_t)((len + FG_CPU_READ_PIECE - 1) / FG_CPU_READ_PIECE);
  int threads = c->threads < pieces ? c->threads : (int)pieces;
  err_slot e = {FG_OK, UINT64_MAX, ""};
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t p = 0; p < pieces; p++) {
    uint64_t a = (uint64_t)p * FG_CPU_READ_PIECE, b = len - a < FG_CPU_READ_PIECE ? len : a + FG_CPU_READ_PIECE;
    fg_status ps = read_piece(c, w, t, off, lo, a, b, target, cvt);
    if (ps) err_keep(&e, ps, a);
  }
  return e.st ? fg_fail(e.st, "%s", e.msg) : FG_OK;
}

/* Dequantizes t's stored bytes [off, off+len), read into w->bounce, into the output. */
static fg_status dequant(fg_load_ctx *c, const fg_load_item *it, cpu_work *w, uint64_t off, uint64_t len,
                         uint64_t unit) {
  const fg_ckpt_tensor *t = it->src;
  const uint64_t row = fg_load_row(t);
  uint64_t first_row = off / unit, rows = len / unit;
  float *out = (float *)it->out->data + first_row * row;
  if (fg_quant_can_decode(t->dtype))
    return fg_quant_decode_rows(t->dtype, w->bounce, (size_t)len, out, (int64_t)rows, (int64_t)row);
  /* the device layer's decoder, for a type the row codecs lack */
  return fg_convert(c->dev, out, FG_F32, w->bounce, t->dtype, (size_t)(rows * row), NULL);
}

/* Converts t's stored bytes [off, off+len), read into w->bounce, to f64 in the output: a run
 * of elements for a float type, whole rows for a block type. */
static fg_status widen64(const fg_load_item *it, cpu_work *w, uint64_t off, uint64_t len) {
  const fg_ckpt_tensor *t = it->src;
  const fg_dtype_traits *tr = fg_dtype_info(t->dtype);
  uint64_t first = off / tr->block_bytes * tr->block_elems, n = len / tr->block_bytes * tr->block_elems;
  int64_t row = tr->is_quant ? (int64_t)fg_load_row(t) : (int64_t)n;
  int64_t rows = row ? (int64_t)(n / (uint64_t)row) : 0;
  return fg_load_to_f64(t->dtype, w->bounce, (size_t)len, (double *)it->out->data + first, rows, row);
}

static fg_status run_item(fg_load_ctx *c, const fg_load_item *it, prefetcher *pf, cpu_work *w) {
  const fg_ckpt_tensor *t = it->src;
  fg_model_tensor *mt = it->out;
  uint64_t unit, step = chunk_step(it, &unit);
  bool lazy = it->how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_FLAG_LAZY);
  const cvt_job cvt = {(uint8_t *)mt->data, mt->dtype, NULL, t->dtype, 0};
  for (uint64_t off = 0; off < t->nbytes; off += step) {
    uint64_t len = t->nbytes - off < step ? t->nbytes - off : step;
    prefetch_to(c, pf, c->bytes_done + len + FG_CPU_AHEAD);
    fg_status s = FG_OK;
    if (!lazy && (s = fg_load_io_check(c->io, t, off))) return s;
    switch (it->how) {
    case FG_HOW_BORROW:
      if (!lazy && ((s = cache_exactly(c, w, t, off, len)) || (s = populate_parallel(c, t, off, len)))) return s;
      break;
    case FG_HOW_COPY: /* a CPU device's memory is host memory: read into place */
      if ((s = read_chunk(c, w, t, off, len, (uint8_t *)mt->data + off, NULL))) return s;
      break;
    case FG_HOW_CONVERT:
      if ((s = read_chunk(c, w, t, off, len, NULL, &cvt))) return s;
      break;
    case FG_HOW_DEQUANT:
      if ((s = read_chunk(c, w, t, off, len, w->bounce, NULL))) return s;
      if ((s = dequant(c, it, w, off, len, unit)))
        return fg_fail_prefix(s, "%s: tensor %s at offset %llu: ", fg_load_io_path(c->io, t), t->name,
                              (unsigned long long)(t->offset + off));
      break;
    case FG_HOW_WIDEN64:
      if ((s = read_chunk(c, w, t, off, len, w->bounce, NULL))) return s;
      if ((s = widen64(it, w, off, len)))
        return fg_fail_prefix(s, "%s: tensor %s at offset %llu: ", fg_load_io_path(c->io, t), t->name,
                              (unsigned long long)(t->offset + off));
      break;
    }
    /* Pages that were only read from are dropped from this process; borrowed ones stay. */
    if (it->how != FG_HOW_BORROW) fg_load_io_evict(c->io, t, off, len);
    c->bytes_done += len;
    if (off + len >= t->nbytes) c->tensors_done++;
    if ((s = fg_load_progress_step(c, t->name))) return s;
  }
  if (t->nbytes == 0) {
    c->tensors_done++;
    return fg_load_progress_step(c, t->name);
  }
  return FG_OK;
}

fg_status fg_load_run_cpu(fg_load_ctx *c) {
  cpu_work w;
  memset(&w, 0, sizeof w);
  bool touch = false;
  for (size_t i = 0; i < c->nitems; i++) {
    const fg_load_item *it = &c->items[i];
    uint64_t unit, step = chunk_step(it, &unit);
    bool lazy = it->how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_FLAG_LAZY);
    if (!lazy && it->src->nbytes) touch = true;
    if (it->how != FG_HOW_COPY && !lazy && it->src->nbytes) {
      uint64_t need = step < it->src->nbytes ? step : it->src->nbytes;
      if (need > w.bounce_bytes) w.bounce_bytes = (size_t)need;
    }
  }
  fg_status s = FG_OK;
  if (w.bounce_bytes && !(w.bounce = malloc(w.bounce_bytes)))
    s = fg_fail(FG_ERR_NOMEM, "load: out of memory for a %zu-byte read buffer", w.bounce_bytes);
  /* Pages are faulted in only once they are cached (cache_exactly, read_chunk), so with the
   * readahead marks ignored a fault never starts a read of its own. */
  if (touch) fg_load_io_set_random(c->io, true);
  prefetcher pf = {0, 0, 0};
  for (size_t i = 0; i < c->nitems && !s; i++) s = run_item(c, &c->items[i], &pf, &w);
  if (touch) fg_load_io_set_random(c->io, false);
  if (!s) s = fg_load_final_check(c);
  if (s == FG_OK && c->opt->progress && c->nitems == 0) s = fg_load_progress_step(c, "");
  free(w.bounce);
  free(w.vec);
  return s;
}
