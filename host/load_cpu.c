/* The CPU target without staging. Kept tensors are borrowed from the mapping (their pages
 * populated unless FG_LOAD_LAZY); copied, converted and dequantized tensors are produced in
 * chunks straight from the mapping: populate the chunk (a truncated file is a status, not
 * SIGBUS), work on it with every thread, release its pages, while the next chunk is already
 * being read ahead. Process memory beyond the output is about one chunk of file pages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_ops.h"
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
    const fg_src_tensor *t = c->items[p->item].src;
    bool lazy = c->items[p->item].how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_LAZY);
    uint64_t step = t->nbytes - p->off < FG_CPU_CHUNK ? t->nbytes - p->off : FG_CPU_CHUNK;
    if (step && !lazy) fg_source_prefetch_map(c->src, t, p->off, step);
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

static fg_status populate_parallel(fg_load_ctx *c, const fg_src_tensor *t, uint64_t off, uint64_t len) {
  int64_t pieces = (int64_t)((len + FG_CPU_POPULATE_PIECE - 1) / FG_CPU_POPULATE_PIECE);
  int threads = c->threads < pieces ? c->threads : (int)pieces;
  if (threads <= 1) return fg_source_populate(c->src, t, off, len);
  err_slot e = {FG_OK, UINT64_MAX, ""};
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t p = 0; p < pieces; p++) {
    uint64_t o = off + (uint64_t)p * FG_CPU_POPULATE_PIECE;
    uint64_t n = off + len - o < FG_CPU_POPULATE_PIECE ? off + len - o : FG_CPU_POPULATE_PIECE;
    fg_status s = fg_source_populate(c->src, t, o, n);
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

/* Converts n elements src -> dst, through f32 for f16 <-> bf16 (no direct pair). */
static fg_status convert(void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n, float *tmp) {
  if (fg_load_is_half(dt) && fg_load_is_half(st)) {
    fg_status s = fg_cpu_convert(tmp, FG_F32, src, st, n);
    return s ? s : fg_cpu_convert(dst, dt, tmp, FG_F32, n);
  }
  return fg_cpu_convert(dst, dt, src, st, n);
}

static fg_status run_item(fg_load_ctx *c, const fg_load_item *it, prefetcher *pf, float *tmp, uint64_t tmp_elems) {
  const fg_src_tensor *t = it->src;
  fg_model_tensor *mt = it->out;
  const uint8_t *base = fg_source_data(c->src, t);
  uint64_t step = FG_CPU_CHUNK, unit = 1;  /* stored bytes per chunk, and per element/row */
  const fg_dtype_traits *tr = fg_dtype_info(t->dtype);
  if (it->how == FG_HOW_CONVERT) {
    unit = tr->block_bytes;
    if (fg_load_is_half(mt->dtype) && fg_load_is_half(t->dtype) && step / unit > tmp_elems) step = tmp_elems * unit;
  } else if (it->how == FG_HOW_DEQUANT) {
    unit = t->row / tr->block_elems * tr->block_bytes; /* one row */
  }
  if (step < unit) step = unit;
  step -= step % unit;
  bool lazy = it->how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_LAZY);
  for (uint64_t off = 0; off < t->nbytes; off += step) {
    uint64_t len = t->nbytes - off < step ? t->nbytes - off : step;
    prefetch_to(c, pf, c->bytes_done + len + FG_CPU_AHEAD);
    fg_status s = FG_OK;
    if (!lazy) {
      if ((s = fg_source_check(c->src, t, off))) return s;
      if ((s = populate_parallel(c, t, off, len))) return s;
    }
    uint8_t *dst = mt->data;
    switch (it->how) {
    case FG_HOW_BORROW: break;
    case FG_HOW_COPY: fg_cpu_memcpy(dst + off, base + off, (size_t)len); break;
    case FG_HOW_CONVERT: {
      uint64_t first = off / unit, n = len / unit;
      uint64_t out_elem = mt->nbytes / (t->numel ? t->numel : 1);
      s = convert(dst + first * out_elem, mt->dtype, base + off, t->dtype, (size_t)n, tmp);
      break;
    }
    case FG_HOW_DEQUANT: {
      uint64_t first_row = off / unit, rows = len / unit;
      float *out = (float *)(void *)dst + first_row * t->row;
      if (fg_quant_can_decode(t->dtype))
        s = fg_quant_decode_rows(t->dtype, base + off, (size_t)len, out, (int64_t)rows, (int64_t)t->row);
      else /* the device layer's decoder, for a type the row codecs lack */
        s = fg_convert(c->dev, out, FG_F32, base + off, t->dtype, (size_t)(rows * t->row), NULL);
      break;
    }
    }
    if (s)
      return fg_fail_prefix(s, "%s: tensor %s at offset %llu: ", fg_source_file(c->src, t->file)->path, t->name,
                            (unsigned long long)(t->offset + off));
    /* Pages that were only read from are dropped from this process; borrowed ones stay. */
    if (it->how != FG_HOW_BORROW) fg_source_release_map(c->src, t, off, len);
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
  bool need_tmp = false, touch = false;
  for (size_t i = 0; i < c->nitems; i++) {
    const fg_load_item *it = &c->items[i];
    if (it->how == FG_HOW_CONVERT && fg_load_is_half(it->out->dtype) && fg_load_is_half(it->src->dtype))
      need_tmp = true;
    if (!(it->how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_LAZY))) touch = true;
  }
  uint64_t tmp_elems = FG_CPU_CHUNK / 2;
  float *tmp = need_tmp ? malloc((size_t)tmp_elems * sizeof *tmp) : NULL;
  if (need_tmp && !tmp) return fg_fail(FG_ERR_NOMEM, "load: out of memory for a conversion buffer");
  /* Populating must not read around the range it asks for (rejected neighbours stay
   * unread); the hints above do the reading ahead instead. */
  if (touch) fg_source_set_random(c->src, true);
  prefetcher pf = {0, 0, 0};
  fg_status s = FG_OK;
  for (size_t i = 0; i < c->nitems && !s; i++) s = run_item(c, &c->items[i], &pf, tmp, tmp_elems);
  if (!s) s = fg_load_final_check(c);
  if (touch) fg_source_set_random(c->src, false);
  if (s == FG_OK && c->opt->progress && c->nitems == 0) s = fg_load_progress_step(c, "");
  free(tmp);
  return s;
}
