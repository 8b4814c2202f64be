/* The CPU target without staging. Kept tensors are borrowed from the mapping (their pages
 * populated unless FG_LOAD_FLAG_LAZY); copied, converted and dequantized tensors are produced in
 * chunks, with every thread, while the next chunks are read ahead.
 *
 * Every chunk is read from the mapping after populating it (MADV_POPULATE_READ: a truncated
 * file is a status, not SIGBUS), and pages only read from are released from the process
 * afterwards. Before that, the chunk's pages that are not in the page cache are read in
 * exactly, with pread through the loader's own descriptor: faulting cold pages in through
 * the mapping would let the kernel's mmap readahead pull in rejected neighbours. Process
 * memory beyond the output is about one chunk of file pages plus a bounce buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
    if (s) {
#pragma omp critical(fg_load_cpu_err)
      if (o < e.at) {
        e.st = s;
        e.at = o;
        snprintf(e.msg, sizeof e.msg, "%s", fg_last_error());
      }
    }
  }
  return e.st ? fg_fail(e.st, "%s", e.msg) : FG_OK;
}

/* Converts n elements src -> dst on the CPU device, through f32 for f16 <-> bf16 (no
 * direct pair). The device API is the only way to the backend's threaded loops. */
static fg_status convert(fg_device *dev, void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n,
                         float *tmp) {
  if (fg_load_is_half(dt) && fg_load_is_half(st)) {
    fg_status s = fg_convert(dev, tmp, FG_F32, src, st, n, NULL);
    return s ? s : fg_convert(dev, dst, dt, tmp, FG_F32, n, NULL);
  }
  return fg_convert(dev, dst, dt, src, st, n, NULL);
}

#define FG_CPU_TMP_ELEMS (FG_CPU_CHUNK / 2) /* f32 staging for f16 <-> bf16: 32 MiB */

/* Stored bytes worked on at a time for an item: a whole number of elements or rows. */
static uint64_t chunk_step(const fg_load_item *it, uint64_t *unit_out) {
  const fg_ckpt_tensor *t = it->src;
  const fg_dtype_traits *tr = fg_dtype_info(t->dtype);
  uint64_t step = FG_CPU_CHUNK, unit = 1;
  if (it->how == FG_HOW_CONVERT) {
    unit = tr->block_bytes;
    if (fg_load_is_half(it->out->dtype) && fg_load_is_half(t->dtype) && step / unit > FG_CPU_TMP_ELEMS)
      step = FG_CPU_TMP_ELEMS * unit;
  } else if (it->how == FG_HOW_DEQUANT) {
    unit = fg_load_row(t) / tr->block_elems * tr->block_bytes; /* one row */
  }
  if (step < unit) step = unit;
  step -= step % unit;
  *unit_out = unit;
  return step;
}

typedef struct cpu_work {
  float *tmp;              /* f16 <-> bf16 through f32 */
  uint8_t *bounce;         /* where cache_exactly's preads land (the bytes are not used) */
  size_t bounce_bytes;
  unsigned char *vec;      /* mincore output for one chunk */
  size_t vec_len;
} cpu_work;

/* Brings t's bytes [off, off+len) into the page cache exactly: mincore finds the pages that
 * are not cached yet, and each run of them is read with pread through the loader's own
 * descriptor (kernel readahead off) into the bounce buffer. Cached pages are not read
 * again: a page the kernel marked for readahead (the parsers' header faults leave such
 * marks) would start a read of a whole window past it, rejected tensors included. */
static fg_status cache_exactly(const fg_load_ctx *c, cpu_work *w, const fg_ckpt_tensor *t, uint64_t off,
                               uint64_t len) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uint8_t *p = t->data + off;
  uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(page - 1), hi = (uintptr_t)p + len;
  size_t pages = (size_t)((hi - lo + page - 1) / page);
  if (pages > w->vec_len) {
    unsigned char *v = realloc(w->vec, pages);
    if (!v) return fg_fail(FG_ERR_NOMEM, "load: out of memory");
    w->vec = v;
    w->vec_len = pages;
  }
  if (mincore((void *)lo, hi - lo, w->vec) != 0) memset(w->vec, 0, pages);
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
    fg_status s = fg_load_io_read(c->io, t, off + a, w->bounce, (size_t)(b - a), c->threads);
    if (s) return s;
    i = j;
  }
  return FG_OK;
}

static fg_status run_item(fg_load_ctx *c, const fg_load_item *it, prefetcher *pf, cpu_work *w) {
  const fg_ckpt_tensor *t = it->src;
  fg_model_tensor *mt = it->out;
  const uint8_t *base = t->data;
  const uint64_t row = fg_load_row(t);
  uint64_t unit, step = chunk_step(it, &unit);
  bool lazy = it->how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_FLAG_LAZY);
  for (uint64_t off = 0; off < t->nbytes; off += step) {
    uint64_t len = t->nbytes - off < step ? t->nbytes - off : step;
    prefetch_to(c, pf, c->bytes_done + len + FG_CPU_AHEAD);
    fg_status s = FG_OK;
    const uint8_t *from = base + off;
    if (!lazy) {
      if ((s = fg_load_io_check(c->io, t, off))) return s;
      if ((s = cache_exactly(c, w, t, off, len))) return s;
      if ((s = populate_parallel(c, t, off, len))) return s;
    }
    uint8_t *dst = mt->data;
    switch (it->how) {
    case FG_HOW_BORROW: break;
    case FG_HOW_COPY: s = fg_device_copy(c->dev, dst + off, from, (size_t)len, FG_COPY_H2D); break;
    case FG_HOW_CONVERT: {
      uint64_t first = off / unit, n = len / unit;
      uint64_t out_elem = mt->nbytes / (t->numel ? t->numel : 1);
      uint64_t per = fg_dtype_info(t->dtype)->block_elems;
      s = convert(c->dev, dst + first * per * out_elem, mt->dtype, from, t->dtype, (size_t)(n * per), w->tmp);
      break;
    }
    case FG_HOW_DEQUANT: {
      uint64_t first_row = off / unit, rows = len / unit;
      float *out = (float *)(void *)dst + first_row * row;
      if (fg_quant_can_decode(t->dtype))
        s = fg_quant_decode_rows(t->dtype, from, (size_t)len, out, (int64_t)rows, (int64_t)row);
      else /* the device layer's decoder, for a type the row codecs lack */
        s = fg_convert(c->dev, out, FG_F32, from, t->dtype, (size_t)(rows * row), NULL);
      break;
    }
    }
    if (s)
      return fg_fail_prefix(s, "%s: tensor %s at offset %llu: ", fg_load_io_path(c->io, t), t->name,
                            (unsigned long long)(t->offset + off));
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
  bool need_tmp = false;
  for (size_t i = 0; i < c->nitems; i++) {
    const fg_load_item *it = &c->items[i];
    if (it->how == FG_HOW_CONVERT && fg_load_is_half(it->out->dtype) && fg_load_is_half(it->src->dtype))
      need_tmp = true;
    uint64_t unit, step = chunk_step(it, &unit);
    if (!(it->how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_FLAG_LAZY)) && it->src->nbytes) {
      uint64_t need = step < it->src->nbytes ? step : it->src->nbytes;
      if (need > w.bounce_bytes) w.bounce_bytes = (size_t)need;
    }
  }
  fg_status s = FG_OK;
  if (need_tmp && !(w.tmp = malloc((size_t)FG_CPU_TMP_ELEMS * sizeof *w.tmp)))
    s = fg_fail(FG_ERR_NOMEM, "load: out of memory for a conversion buffer");
  if (!s && w.bounce_bytes && !(w.bounce = malloc(w.bounce_bytes)))
    s = fg_fail(FG_ERR_NOMEM, "load: out of memory for a %zu-byte read buffer", w.bounce_bytes);
  /* Pages are populated only once they are cached (cache_exactly), so with the readahead
   * marks ignored a populate never starts a read of its own. */
  bool touch = w.bounce_bytes > 0;
  if (touch) fg_load_io_set_random(c->io, true);
  prefetcher pf = {0, 0, 0};
  for (size_t i = 0; i < c->nitems && !s; i++) s = run_item(c, &c->items[i], &pf, &w);
  if (touch) fg_load_io_set_random(c->io, false);
  if (!s) s = fg_load_final_check(c);
  if (s == FG_OK && c->opt->progress && c->nitems == 0) s = fg_load_progress_step(c, "");
  free(w.tmp);
  free(w.bounce);
  free(w.vec);
  return s;
}
