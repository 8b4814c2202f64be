/* The staged pipeline: disk -> pinned ring -> copy stream -> (convert) -> device tensor.
 *
 * Two threads share the ring through two queues under one mutex:
 *   staging thread (bound to the NUMA node of the ring): takes a free buffer, preads the
 *     next piece of the next selected tensor into it (or decodes a quantized piece into it),
 *     and queues it as filled;
 *   calling thread: takes a filled buffer, queues its copy to the device (and the
 *     conversion) on the ring's stream, records the buffer's event, and hands the buffer
 *     back as free only once that event has completed.
 * Every device call stays on the calling thread (the CUDA device is current there); the
 * staging thread only reads files and fills host memory. With N buffers, up to N-1 copies
 * are queued while the next buffer is being filled. */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/quant.h"
#include "forgia/topology.h"
#include "host/load_internal.h"

typedef struct piece {
  size_t item;
  uint64_t src_off, src_len; /* stored bytes of the tensor */
  uint64_t dst_off;          /* bytes into the output tensor */
  uint64_t n;                /* elements (convert), or decoded f32 elements (dequant) */
  int64_t nrows, rowlen;     /* dequant: rows of rowlen elements */
  bool last;                 /* the tensor's last piece */
} piece;

typedef struct filled_entry {
  uint32_t buf;
  piece p;
} filled_entry;

typedef struct staged {
  fg_load_ctx *c;
  fg_load_ring *r;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t *freeq;           /* FIFO of free buffer indices */
  uint32_t free_head, free_n;
  filled_entry *filled;      /* FIFO of filled buffers */
  uint32_t filled_head, filled_n;
  bool filler_done, stop;
  fg_status err;             /* first failure, from either thread */
  char errmsg[1024];
  void **scratch;            /* device: stored bytes (+ f32 for f16<->bf16) per buffer */
  bool cross;                /* some tensor goes f16 <-> bf16 */
  uint8_t *bounce;           /* host: quantized input of one piece */
  size_t bounce_bytes;
  int fill_threads;
} staged;

/* ---- pieces ---------------------------------------------------------------------------- */

/* Cursor over the plan: the piece starting at (item, off) of at most one buffer. */
static bool next_piece(const staged *g, size_t *item, uint64_t *off, piece *p) {
  const fg_load_ctx *c = g->c;
  size_t B = g->r->bytes;
  while (*item < c->nitems) {
    const fg_load_item *it = &c->items[*item];
    const fg_ckpt_tensor *t = it->src;
    if (t->nbytes == 0 && *off == 0) {
      *p = (piece){*item, 0, 0, 0, 0, 0, 0, true};
      (*item)++;
      return true;
    }
    if (*off >= t->nbytes) {
      (*item)++;
      *off = 0;
      continue;
    }
    memset(p, 0, sizeof *p);
    p->item = *item;
    p->src_off = *off;
    uint64_t rem = t->nbytes - *off;
    const fg_dtype_traits *tr = fg_dtype_info(t->dtype);
    if (it->how == FG_HOW_COPY) {
      p->src_len = rem < B ? rem : B;
      p->dst_off = *off;
    } else if (it->how == FG_HOW_CONVERT) { /* whole elements, or whole blocks to decode */
      uint64_t bb = tr->block_bytes, be = tr->block_elems, de = it->out->nbytes / t->numel;
      uint64_t units = B / bb, left = rem / bb;
      if (units > left) units = left;
      p->n = units * be;
      p->src_len = units * bb;
      p->dst_off = *off / bb * be * de;
    } else { /* FG_HOW_DEQUANT, FG_HOW_WIDEN64: whole rows when a row fits the buffer, else
              * whole blocks (a float type: be = 1) */
      uint64_t be = tr->block_elems, bb = tr->block_bytes, oe = it->how == FG_HOW_WIDEN64 ? 8 : 4;
      uint64_t per_buf = B / (be * oe), per_row = fg_load_row(t) / be, left = rem / bb;
      uint64_t blocks;
      if (per_buf >= per_row && *off % (per_row * bb) == 0) {
        uint64_t rows = per_buf / per_row, rows_left = left / per_row;
        if (rows > rows_left) rows = rows_left;
        blocks = rows * per_row;
        p->nrows = (int64_t)rows;
        p->rowlen = (int64_t)fg_load_row(t);
      } else {
        blocks = left < per_buf ? left : per_buf;
        /* stay inside the current row so that later pieces start on row boundaries */
        uint64_t in_row = per_row - (*off / bb) % per_row;
        if (blocks > in_row) blocks = in_row;
        p->nrows = 1;
        p->rowlen = (int64_t)(blocks * be);
      }
      p->src_len = blocks * bb;
      p->n = blocks * be;
      p->dst_off = *off / bb * be * oe;
    }
    *off += p->src_len;
    p->last = *off >= t->nbytes;
    return true;
  }
  return false;
}

/* ---- errors across threads -------------------------------------------------------------- */

static void set_error(staged *g, fg_status s) {
  pthread_mutex_lock(&g->mu);
  if (!g->err) {
    g->err = s;
    snprintf(g->errmsg, sizeof g->errmsg, "%s", fg_last_error());
  }
  g->stop = true;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

/* ---- the staging thread ----------------------------------------------------------------- */

#define FG_STAGED_AHEAD_MIN ((uint64_t)64 << 20)

static fg_status fill(staged *g, const piece *p, void *buf) {
  const fg_load_item *it = &g->c->items[p->item];
  const fg_ckpt_tensor *t = it->src;
  if (p->src_len == 0) return FG_OK;
  fg_status s = fg_load_io_check(g->c->io, t, p->src_off);
  if (s) return s;
  if (it->how != FG_HOW_DEQUANT && it->how != FG_HOW_WIDEN64)
    return fg_load_io_read(g->c->io, t, p->src_off, buf, (size_t)p->src_len, g->fill_threads);
  if ((s = fg_load_io_read(g->c->io, t, p->src_off, g->bounce, (size_t)p->src_len, g->fill_threads))) return s;
  if (it->how == FG_HOW_WIDEN64) s = fg_load_to_f64(t->dtype, g->bounce, (size_t)p->src_len, buf, p->nrows, p->rowlen);
  else s = fg_quant_decode_rows(t->dtype, g->bounce, (size_t)p->src_len, buf, p->nrows, p->rowlen);
  if (s)
    return fg_fail_prefix(s, "%s: tensor %s at offset %llu: ", fg_load_io_path(g->c->io, t), t->name,
                          (unsigned long long)(t->offset + p->src_off));
  return FG_OK;
}

static _Atomic int said_single_node = 0;

static void *filler_main(void *arg) {
  staged *g = arg;
  fg_load_ctx *c = g->c;
  /* the host decoders' teams, started from this thread, have the load's threads */
  omp_set_num_threads(g->fill_threads > 0 ? g->fill_threads : 1);
  int node = g->r->numa_node;
  if (node >= 0) {
    fg_topology_info ti;
    bool single = fg_topology_query(&ti) == FG_OK && ti.numa_nodes <= 1;
    if (single) {
      if (fg_load_verbose() && atomic_exchange(&said_single_node, 1) == 0)
        fprintf(stderr, "forgia: load: one NUMA node; the staging ring and thread are not bound\n");
    } else if (fg_topology_bind_thread(node) == FG_OK) {
      c->stats->numa_node = node;
    }
  }
  /* Readahead hints run over the selected tensors only, a window ahead of the reader. */
  uint64_t ahead = (uint64_t)g->r->count * g->r->bytes * 2;
  if (ahead < FG_STAGED_AHEAD_MIN) ahead = FG_STAGED_AHEAD_MIN;
  size_t pf_item = 0;
  uint64_t pf_off = 0, pf_issued = 0, read_pos = 0;

  size_t item = 0;
  uint64_t off = 0;
  piece p;
  while (next_piece(g, &item, &off, &p)) {
    pthread_mutex_lock(&g->mu);
    while (!g->stop && g->free_n == 0) pthread_cond_wait(&g->cv, &g->mu);
    if (g->stop) {
      pthread_mutex_unlock(&g->mu);
      break;
    }
    uint32_t b = g->freeq[g->free_head];
    g->free_head = (g->free_head + 1) % g->r->count;
    g->free_n--;
    pthread_mutex_unlock(&g->mu);

    while (pf_issued < read_pos + p.src_len + ahead && pf_item < c->nitems) {
      const fg_ckpt_tensor *t = c->items[pf_item].src;
      uint64_t step = t->nbytes - pf_off < g->r->bytes ? t->nbytes - pf_off : g->r->bytes;
      fg_load_io_prefetch(c->io, t, pf_off, step);
      pf_issued += step;
      pf_off += step;
      if (pf_off >= t->nbytes) {
        pf_item++;
        pf_off = 0;
      }
    }
    read_pos += p.src_len;

    fg_status s = fill(g, &p, g->r->buf[b]);
    pthread_mutex_lock(&g->mu);
    if (s) {
      if (!g->err) {
        g->err = s;
        snprintf(g->errmsg, sizeof g->errmsg, "%s", fg_last_error());
      }
      g->stop = true;
    } else {
      uint32_t tail = (g->filled_head + g->filled_n) % g->r->count;
      g->filled[tail] = (filled_entry){b, p};
      g->filled_n++;
    }
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (s) break;
  }
  pthread_mutex_lock(&g->mu);
  g->filler_done = true;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

/* ---- the calling thread ------------------------------------------------------------------ */

static fg_status submit(staged *g, uint32_t b, const piece *p) {
  fg_load_ctx *c = g->c;
  const fg_load_item *it = &c->items[p->item];
  fg_model_tensor *mt = it->out;
  fg_load_ring *r = g->r;
  if (p->src_len == 0) return FG_OK;
  uint8_t *dst = (uint8_t *)mt->data + p->dst_off;
  fg_status s;
  switch (it->how) {
  case FG_HOW_COPY: s = fg_device_copy_async(c->dev, dst, r->buf[b], (size_t)p->src_len, FG_COPY_H2D, r->stream); break;
  case FG_HOW_DEQUANT: s = fg_device_copy_async(c->dev, dst, r->buf[b], (size_t)p->n * 4, FG_COPY_H2D, r->stream); break;
  case FG_HOW_WIDEN64: s = fg_device_copy_async(c->dev, dst, r->buf[b], (size_t)p->n * 8, FG_COPY_H2D, r->stream); break;
  case FG_HOW_CONVERT: {
    void *sc = g->scratch[b];
    s = fg_device_copy_async(c->dev, sc, r->buf[b], (size_t)p->src_len, FG_COPY_H2D, r->stream);
    if (s) break;
    if (fg_load_is_half(mt->dtype) && fg_load_is_half(mt->file_dtype)) {
      void *f32 = (uint8_t *)sc + r->bytes;
      s = fg_convert(c->dev, f32, FG_F32, sc, mt->file_dtype, (size_t)p->n, r->stream);
      if (!s) s = fg_convert(c->dev, dst, mt->dtype, f32, FG_F32, (size_t)p->n, r->stream);
    } else {
      s = fg_convert(c->dev, dst, mt->dtype, sc, mt->file_dtype, (size_t)p->n, r->stream);
    }
    break;
  }
  default: s = fg_fail(FG_ERR_STATE, "staged load: tensor %s cannot be borrowed", mt->name);
  }
  if (s)
    return fg_fail_prefix(s, "%s: tensor %s at offset %llu -> %s: ", fg_load_io_path(c->io, it->src),
                          mt->name, (unsigned long long)(it->src->offset + p->src_off), fg_device_spec(c->dev));
  return FG_OK;
}

static fg_status alloc_work(staged *g) {
  fg_load_ctx *c = g->c;
  uint32_t n = g->r->count;
  bool convert = false;
  size_t bounce = 0;
  for (size_t i = 0; i < c->nitems; i++) {
    const fg_load_item *it = &c->items[i];
    if (it->how == FG_HOW_CONVERT) {
      convert = true;
      if (fg_load_is_half(it->out->dtype) && fg_load_is_half(it->src->dtype)) g->cross = true;
    } else if (it->how == FG_HOW_DEQUANT && fg_convert(c->dev, NULL, FG_F32, NULL, it->src->dtype, 0, NULL) == FG_OK) {
      /* The device decodes this block type itself: copy the (smaller) quantized bytes. */
      c->items[i].how = FG_HOW_CONVERT;
      convert = true;
    } else if (it->how == FG_HOW_DEQUANT || it->how == FG_HOW_WIDEN64) {
      fg_clear_error();
      const fg_dtype_traits *tr = fg_dtype_info(it->src->dtype);
      size_t oe = it->how == FG_HOW_WIDEN64 ? 8 : 4;
      size_t need = g->r->bytes / ((size_t)tr->block_elems * oe) * tr->block_bytes;
      if (need > bounce) bounce = need;
    }
  }
  g->freeq = calloc(n, sizeof *g->freeq);
  g->filled = calloc(n, sizeof *g->filled);
  g->scratch = calloc(n, sizeof *g->scratch);
  if (!g->freeq || !g->filled || !g->scratch) return fg_fail(FG_ERR_NOMEM, "staged load: out of memory");
  for (uint32_t i = 0; i < n; i++) g->freeq[i] = i;
  g->free_n = n;
  if (bounce) {
    g->bounce = malloc(bounce);
    g->bounce_bytes = bounce;
    if (!g->bounce) return fg_fail(FG_ERR_NOMEM, "staged load: out of memory for a %zu-byte staging buffer", bounce);
  }
  if (convert) {
    /* stored bytes, plus their f32 form for f16 <-> bf16 (at most twice the stored bytes) */
    size_t per = g->r->bytes * (g->cross ? 3 : 1);
    for (uint32_t i = 0; i < n; i++) {
      fg_status s = fg_device_mem_alloc(c->dev, per, &g->scratch[i]);
      if (s) return fg_fail_prefix(s, "staged load: conversion scratch %u of %u (%zu bytes) on %s: ", i, n, per,
                                   fg_device_spec(c->dev));
    }
  }
  return FG_OK;
}

static void free_work(staged *g) {
  if (g->scratch)
    for (uint32_t i = 0; i < g->r->count; i++) fg_device_mem_free(g->c->dev, g->scratch[i]);
  free(g->scratch);
  free(g->freeq);
  free(g->filled);
  free(g->bounce);
}

/* The submit loop: returns the first failure of either thread. */
static fg_status pump(staged *g) {
  fg_load_ctx *c = g->c;
  fg_load_ring *r = g->r;
  uint32_t *inflight = calloc(r->count, sizeof *inflight), in_head = 0, in_n = 0;
  if (!inflight) return fg_fail(FG_ERR_NOMEM, "staged load: out of memory");
  pthread_mutex_lock(&g->mu);
  for (;;) {
    if (g->stop) break;
    if (g->filled_n > 0) {
      filled_entry e = g->filled[g->filled_head];
      g->filled_head = (g->filled_head + 1) % r->count;
      g->filled_n--;
      pthread_mutex_unlock(&g->mu);
      fg_status s = submit(g, e.buf, &e.p);
      if (!s) s = fg_event_record(r->ev[e.buf], r->stream);
      if (!s) {
        inflight[(in_head + in_n) % r->count] = e.buf;
        in_n++;
        const fg_load_item *it = &c->items[e.p.item];
        c->bytes_done += e.p.src_len;
        if (e.p.last) c->tensors_done++;
        s = fg_load_progress_step(c, it->out->name);
      }
      if (s) set_error(g, s);
      pthread_mutex_lock(&g->mu);
      continue;
    }
    if (g->filler_done) break;
    if (g->free_n == 0 && in_n > 0) {
      /* The staging thread waits for a buffer: retire the oldest copy. */
      uint32_t b = inflight[in_head];
      in_head = (in_head + 1) % r->count;
      in_n--;
      pthread_mutex_unlock(&g->mu);
      fg_status s = fg_event_sync(r->ev[b]);
      pthread_mutex_lock(&g->mu);
      if (s) {
        pthread_mutex_unlock(&g->mu);
        set_error(g, fg_fail_prefix(s, "staged load: waiting for a copy to %s: ", fg_device_spec(c->dev)));
        pthread_mutex_lock(&g->mu);
        continue;
      }
      g->freeq[(g->free_head + g->free_n) % r->count] = b;
      g->free_n++;
      pthread_cond_broadcast(&g->cv);
      continue;
    }
    pthread_cond_wait(&g->cv, &g->mu);
  }
  fg_status err = g->err;
  pthread_mutex_unlock(&g->mu);
  free(inflight);
  return err;
}

fg_status fg_load_run_staged(fg_load_ctx *c) {
  const fg_load_options *o = c->opt;
  fg_load_ring *own = NULL, *r = o->ring;
  fg_status s;
  if (!r) {
    double t = fg_clock_seconds();
    s = fg_load_ring_create(c->dev, o->ring_count ? o->ring_count : FG_LOAD_RING_DEFAULT_COUNT,
                            o->ring_bytes ? o->ring_bytes : FG_LOAD_RING_DEFAULT_BYTES, &own);
    if (s) return s;
    c->stats->ring_seconds = fg_clock_seconds() - t;
    r = own;
  }
  c->stats->ring_count = r->count;
  c->stats->ring_bytes = r->bytes;
  staged g;
  memset(&g, 0, sizeof g);
  g.c = c;
  g.r = r;
  g.fill_threads = c->threads;
  if (r->numa_node >= 0) {
    int cores = fg_topology_node_cores(r->numa_node);
    if (cores > 0 && g.fill_threads > cores) g.fill_threads = cores;
  }
  pthread_mutex_init(&g.mu, NULL);
  pthread_cond_init(&g.cv, NULL);
  pthread_t th;
  bool started = false;
  if ((s = alloc_work(&g))) goto done;
  if (pthread_create(&th, NULL, filler_main, &g) != 0) {
    s = fg_fail(FG_ERR_NOMEM, "staged load: cannot start the staging thread");
    goto done;
  }
  started = true;
  s = pump(&g);
  if (s && g.errmsg[0]) fg_fail(s, "%s", g.errmsg);
done:
  if (started) {
    pthread_mutex_lock(&g.mu);
    g.stop = g.stop || s != FG_OK;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(th, NULL);
  }
  /* Copies and conversions must be finished before the caller frees (or uses) the output
   * and before the scratch goes away. */
  fg_status sync = fg_stream_sync(r->stream);
  if (!s && sync) s = fg_fail_prefix(sync, "staged load: finishing the copies to %s: ", fg_device_spec(c->dev));
  if (!s) s = fg_load_final_check(c);
  if (!s && o->progress && c->nitems == 0) s = fg_load_progress_step(c, "");
  free_work(&g);
  pthread_cond_destroy(&g.cv);
  pthread_mutex_destroy(&g.mu);
  fg_load_ring_free(own);
  return s;
}
