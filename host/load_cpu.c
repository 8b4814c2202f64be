/* The CPU target without staging. Kept tensors are borrowed from the mapping (their pages
 * populated unless FG_LOAD_FLAG_LAZY); copied, converted and dequantized tensors are produced
 * into memory the model owns.
 *
 * The plan's bytes are taken a window at a time (up to FG_CPU_WINDOW stored bytes, across
 * tensor boundaries, so that a model of many small tensors keeps every thread busy too).
 * A window is cut into pieces, and each piece is done start to finish by one thread in one
 * parallel region: its file pages brought in, then its bytes copied, converted or decoded
 * into the output. A converted piece writes one huge page of output (see FG_CPU_HUGE), so the
 * thread's bounce buffer it goes through stays in that core's cache, and no thread waits for
 * another between reading and converting: the only barrier is at the end of the window.
 *
 * Pages of a piece that are not in the page cache are read in exactly, with pread through
 * the loader's own descriptor (kernel readahead off): faulting cold pages in through the
 * mapping would let the kernel's mmap readahead pull in rejected neighbours. Cached pages
 * are taken through the mapping (MADV_RANDOM on it: a fault never starts readahead), mapped
 * with one MADV_POPULATE_READ per run rather than a fault per page, since a pread over a
 * page that the parsers' header faults marked for readahead would start a read of a whole
 * window past it. A file truncated under the load is a status, never SIGBUS: borrowed pages
 * are populated with MADV_POPULATE_READ, and the mapping is read only under its guard
 * (forgia/mapping.h), by the thread that owns the piece (a guard cannot leave a parallel
 * region, so each thread guards its own piece). Copied tensors are copied straight into
 * their output; converted ones (f32/f16/bf16) are converted element by element straight
 * from the mapping when every page of the piece is cached, with the elem/ functions the CPU
 * backend's loops call (the same bits as fg_convert, whose threads could not be guarded);
 * dequantized ones likewise by the row decoder on the piece's thread when every page is
 * cached, else copied into the thread's bounce buffer, which the decoder reads.
 * Pages only read from are released from the process after their window, one call per run
 * of neighbouring spans. Process memory beyond the output is about one window of file
 * pages plus a bounce buffer per thread. */
#include <errno.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "forgia/elem/bytes.h"
#include "forgia/elem/half.h"
#include "formats/quant_stream.h"
#include "forgia/quant.h"
#include "host/load_internal.h"

/* Stored bytes between two barriers. Large, because a thread that the system preempts holds
 * up the others at the barrier (measured on a shared 2-core machine: 64 MiB windows loaded
 * 1.6x faster than 16 MiB ones with 2 threads); file pages of one window stay mapped. */
#define FG_CPU_WINDOW ((uint64_t)64 << 20)
#define FG_CPU_PIECE ((uint64_t)256 << 10)        /* stored bytes of a window's cut inside a converted tensor */
#define FG_CPU_COPY_PIECE ((uint64_t)1 << 20)     /* the same, copied */
/* A piece's output: its pages are first touched by the thread that writes them, and a huge
 * page (the CPU arena asks for them) faulted by one thread stalls any other writing into it
 * while the kernel zeroes 2 MiB. So pieces are cut at FG_CPU_HUGE boundaries of the output's
 * addresses, FG_CPU_OUT_PIECE (one huge page) per converted piece, FG_CPU_OUT_COPY per copied
 * one: measured with 2 threads into fresh memory, a kept copy went from 0.74x to 0.94x of
 * page-cache read. */
#define FG_CPU_HUGE ((uint64_t)2 << 20)
#define FG_CPU_OUT_PIECE FG_CPU_HUGE
#define FG_CPU_OUT_COPY ((uint64_t)4 << 20)
#define FG_CPU_POPULATE_PIECE ((uint64_t)4 << 20) /* per thread when populating borrowed bytes */
#define FG_CPU_SINK ((uint64_t)4 << 20)           /* where preads that only fill the cache land */
#define FG_CPU_EVICT_GAP ((uint64_t)64 << 10)     /* padding one release of read pages may span */
#define FG_CPU_AHEAD ((uint64_t)64 << 20)         /* readahead window beyond the cursor */

static bool is_lazy(const fg_load_ctx *c, const fg_load_item *it) {
  return it->how == FG_HOW_BORROW && (c->opt->flags & FG_LOAD_FLAG_LAZY);
}

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
    uint64_t step = t->nbytes - p->off < FG_CPU_WINDOW ? t->nbytes - p->off : FG_CPU_WINDOW;
    if (step && !is_lazy(c, &c->items[p->item])) fg_load_io_prefetch(c->io, t, p->off, step);
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

/* Keeps the failure at the lowest position, so the message does not depend on which thread
 * failed first. Called by the failing thread; the critical section orders the writers. */
static void err_keep(err_slot *e, fg_status s, uint64_t at) {
#pragma omp critical(fg_load_cpu_err)
  if (at < e->at) {
    e->st = s;
    e->at = at;
    snprintf(e->msg, sizeof e->msg, "%s", fg_last_error());
  }
}

/* Converts n elements between f32, f16 and bf16 (f16 <-> bf16 through f32, as fg_convert
 * does), src possibly unaligned. One thread, no OpenMP: it may run under a mapping guard. */
typedef struct cvt_job {
  uint8_t *dst;
  fg_dtype dt;
  const uint8_t *src;
  fg_dtype st;
  size_t n;
} cvt_job;

static inline float load_float(fg_dtype st, const uint8_t *p) {
  if (st == FG_F16) return fg_f16_to_f32(fg_bytes_ld_le16(p));
  if (st == FG_BF16) return fg_bf16_to_f32(fg_bytes_ld_le16(p));
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
  /* To and from f32, the row codecs' loops: the same elem/ functions, built for AVX2 as
   * well (f16 -> f32 2.7x this loop's speed); one thread here, so no region of their own.
   * An f32 source must be aligned for them (a safetensors offset need not be). */
  if (j->dt == FG_F32) return fg_quant_decode_rows(j->st, j->src, j->n * 2, (float *)(void *)j->dst, 1, (int64_t)j->n);
  if (j->st == FG_F32 && !((uintptr_t)j->src & 3))
    return fg_quant_encode_rows(j->dt, (const float *)(const void *)j->src, 1, (int64_t)j->n, j->dst, j->n * 2);
  /* what is left: an unaligned f32 source, and f16 <-> bf16 */
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
  return FG_OK;
}

/* Stored bytes one thread takes at a time for an item, a whole number of its units (elements
 * or blocks: the decoders work block by block, so a piece may end inside a row). */
static uint64_t piece_bytes(const fg_load_item *it) {
  const fg_dtype_traits *tr = fg_dtype_info(it->src->dtype);
  switch (it->how) {
  case FG_HOW_BORROW: return FG_CPU_POPULATE_PIECE;
  case FG_HOW_COPY: return FG_CPU_COPY_PIECE;
  default: {
    uint64_t unit = tr->block_bytes, p = FG_CPU_PIECE - FG_CPU_PIECE % unit;
    return p ? p : unit;
  }
  }
}

/* Stored and output bytes of one unit of an item that writes output (a byte, an element or a
 * block). */
static void units_of(const fg_load_item *it, uint64_t *sunit, uint64_t *ounit) {
  const fg_dtype_traits *tr = fg_dtype_info(it->src->dtype);
  *sunit = tr->block_bytes;
  switch (it->how) {
  case FG_HOW_COPY: *sunit = *ounit = 1; break;
  case FG_HOW_CONVERT: *ounit = it->out->dtype == FG_F32 ? 4 : 2; break;
  case FG_HOW_WIDEN64: *ounit = (uint64_t)tr->block_elems * 8; break;
  default: *ounit = (uint64_t)tr->block_elems * 4; break;
  }
}

/* The most stored bytes of one piece of an item that converts (what its bounce must hold). */
static uint64_t piece_stored_max(const fg_load_item *it) {
  uint64_t su, ou;
  units_of(it, &su, &ou);
  return (FG_CPU_OUT_PIECE / ou + 1) * su;
}

/* One tensor's bytes [off, off+len) in the current window. */
typedef struct span {
  size_t item;
  uint64_t off, len;
  uintptr_t lo;            /* address of the first page */
  size_t vec0;             /* its first page's entry in the window's residency vector */
  uint64_t pos;            /* window bytes before it: orders failures */
} span;

/* [a, b) of a span: what one thread does. */
typedef struct piece {
  uint32_t span;
  uint64_t a, b;
} piece;

typedef struct cpu_work {
  uint8_t *bounce;         /* nbounce slices of slice bytes, one per thread */
  size_t slice;
  int nbounce;
  unsigned char *vec;      /* mincore of the window's pages */
  size_t vec_len;
  span *spans;
  size_t spans_cap;
  piece *pieces;
  size_t pieces_cap;
  size_t *groups;          /* each thread's unit of work: a run of pieces, by first index */
  size_t groups_cap;
  bool *pread_all;         /* per file: every page the load takes may go through pread */
} cpu_work;

static fg_status grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return FG_OK;
  size_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * elem);
  if (!q) return fg_fail(FG_ERR_NOMEM, "load: out of memory");
  *p = q;
  *cap = n;
  return FG_OK;
}

/* mincore of the mapping's pages under the span's bytes into w->vec at its vec0 (set here).
 * A failing mincore reads as "nothing cached". */
static fg_status residency(cpu_work *w, const fg_ckpt_tensor *t, span *sp, size_t *used) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)t->data + sp->off) & ~(uintptr_t)(page - 1), hi = (uintptr_t)t->data + sp->off + sp->len;
  size_t pages = (size_t)((hi - lo + page - 1) / page);
  fg_status s = grow((void **)&w->vec, &w->vec_len, *used + pages, 1);
  if (s) return s;
  sp->lo = lo;
  sp->vec0 = *used;
  if (mincore((void *)lo, hi - lo, w->vec + *used) != 0) memset(w->vec + *used, 0, pages);
  *used += pages;
  return FG_OK;
}

/* A guarded read of t's bytes from offset `at` that faulted: the loader's own words when its
 * identity check can tell what happened, else the guard's, with the tensor. */
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

/* The end of the run of pages starting at piece offset x that share x's residency, within
 * [x, b). */
static uint64_t run_end(const cpu_work *w, const span *sp, uintptr_t base, uint64_t page, uint64_t x, uint64_t b,
                        bool *cached) {
  *cached = w->vec[sp->vec0 + (base + x - sp->lo) / page] & 1;
  uint64_t e = x;
  while (e < b) {
    size_t q = (size_t)((base + e - sp->lo) / page);
    if ((bool)(w->vec[sp->vec0 + q] & 1) != *cached) break;
    uint64_t next = (uint64_t)(sp->lo + (q + 1) * page - base);
    e = next < b ? next : b;
  }
  return e;
}

static bool all_cached(const cpu_work *w, const span *sp, uintptr_t base, uint64_t page, uint64_t a, uint64_t b) {
  size_t q0 = (size_t)((base + a - sp->lo) / page), q1 = (size_t)((base + b - 1 - sp->lo) / page);
  for (size_t q = q0; q <= q1; q++)
    if (!(w->vec[sp->vec0 + q] & 1)) return false;
  return true;
}

/* Brings the piece's uncached pages into the page cache with preads that land in the sink
 * (sink_bytes at a time), then maps every page of it (MADV_POPULATE_READ). */
static fg_status borrow_piece(const fg_load_ctx *c, const cpu_work *w, const span *sp, uint64_t a, uint64_t b,
                              uint8_t *sink, size_t sink_bytes) {
  const fg_ckpt_tensor *t = c->items[sp->item].src;
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uintptr_t base = (uintptr_t)t->data + sp->off;
  fg_status s;
  for (uint64_t x = a; x < b;) {
    bool cached;
    uint64_t e = run_end(w, sp, base, page, x, b, &cached);
    for (uint64_t y = x; !cached && y < e;) {
      size_t n = e - y < sink_bytes ? (size_t)(e - y) : sink_bytes;
      if ((s = fg_load_io_read(c->io, t, sp->off + y, sink, n, 1))) return s;
      y += n;
    }
    x = e;
  }
  return fg_load_io_populate(c->io, t, sp->off + a, b - a);
}

/* Stored bytes [a, b) of the span into dst (dst[0] is byte a): preads for uncached runs,
 * populated and guarded copies out of the mapping for cached ones, or one pread for all when
 * the file allows it (see files_pread_all). */
static fg_status gather(const fg_load_ctx *c, const cpu_work *w, const span *sp, uint64_t a, uint64_t b, uint8_t *dst) {
  const fg_ckpt_tensor *t = c->items[sp->item].src;
  if (w->pread_all[t->file]) return fg_load_io_read(c->io, t, sp->off + a, dst, (size_t)(b - a), 1);
  const fg_load_file *f = &c->io->files[t->file];
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uintptr_t base = (uintptr_t)t->data + sp->off;
  fg_status s;
  for (uint64_t x = a; x < b;) {
    bool cached;
    uint64_t e = run_end(w, sp, base, page, x, b, &cached);
    if (!cached && (s = fg_load_io_read(c->io, t, sp->off + x, dst + (x - a), (size_t)(e - x), 1))) return s;
    if (cached) {
      if ((s = fg_load_io_populate(c->io, t, sp->off + x, e - x))) return s;
      if ((s = fg_mapping_copy(f->map, dst + (x - a), t->offset + sp->off + x, e - x))) return fault(c, t, sp->off + x, s);
    }
    x = e;
  }
  return FG_OK;
}

/* Decodes (or widens to f64) the stored bytes [a, b) of the span, gathered in src. */
static fg_status decode_piece(fg_load_ctx *c, const fg_load_item *it, const span *sp, uint64_t a, uint64_t b,
                              const uint8_t *src) {
  const fg_ckpt_tensor *t = it->src;
  const fg_dtype_traits *tr = fg_dtype_info(t->dtype);
  uint64_t first = (sp->off + a) / tr->block_bytes * tr->block_elems, n = (b - a) / tr->block_bytes * tr->block_elems;
  fg_status s;
  if (it->how == FG_HOW_WIDEN64) {
    /* a run of whole blocks decodes the same as the rows it lies in: one "row" of n */
    s = fg_load_to_f64(t->dtype, src, (size_t)(b - a), (double *)it->out->data + first, 1, (int64_t)n);
  } else if (fg_quant_can_decode(t->dtype)) {
    float *y = (float *)it->out->data + first;
    /* A load into recycled memory whose output the last-level cache cannot hold writes the
     * floats around the caches: nothing reads them before they have left it anyway. Not
     * into fresh memory: the kernel zeroes each new page through the cache at its first
     * touch, and streaming over it writes it twice (2 threads, q8_0 -> f32: 2.7 -> 1.9 GB/s
     * of source). */
    if (c->stats && c->stats->recycled && fg_quant_stream_worth(c->stats->bytes_owned))
      s = fg_quant_decode_streaming(t->dtype, src, (size_t)(b - a), y, (int64_t)n);
    else
      s = fg_quant_decode_rows(t->dtype, src, (size_t)(b - a), y, 1, (int64_t)n);
  } else { /* the device layer's decoder, for a type the row codecs lack */
    s = fg_convert(c->dev, (float *)it->out->data + first, FG_F32, src, t->dtype, (size_t)n, NULL);
  }
  if (s)
    return fg_fail_prefix(s, "%s: tensor %s at offset %llu: ", fg_load_io_path(c->io, t), t->name,
                          (unsigned long long)(t->offset + sp->off + a));
  return FG_OK;
}

typedef struct dec_job {
  fg_load_ctx *c;
  const fg_load_item *it;
  const span *sp;
  uint64_t a, b;
  const uint8_t *src;
  bool returned; /* the decoder returned: its status is its own, not a fault's */
} dec_job;

static fg_status dec_fn(void *user) {
  dec_job *j = user;
  fg_status s = decode_piece(j->c, j->it, j->sp, j->a, j->b, j->src);
  j->returned = true;
  return s;
}

/* One piece, on the calling OpenMP thread, with that thread's bounce slice. */
static fg_status do_piece(fg_load_ctx *c, const cpu_work *w, const span *sp, uint64_t a, uint64_t b, uint8_t *bounce) {
  const fg_load_item *it = &c->items[sp->item];
  const fg_ckpt_tensor *t = it->src;
  const fg_load_file *f = &c->io->files[t->file];
  fg_model_tensor *mt = it->out;
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uintptr_t base = (uintptr_t)t->data + sp->off;
  fg_status s;
  switch (it->how) {
  case FG_HOW_BORROW: return borrow_piece(c, w, sp, a, b, bounce, w->slice);
  case FG_HOW_COPY: /* a CPU device's memory is host memory: read into place */
    return gather(c, w, sp, a, b, (uint8_t *)mt->data + sp->off + a);
  case FG_HOW_CONVERT: {
    const uint64_t ssz = t->dtype == FG_F32 ? 4 : 2, dsz = mt->dtype == FG_F32 ? 4 : 2;
    cvt_job j = {(uint8_t *)mt->data + (sp->off + a) / ssz * dsz, mt->dtype, NULL, t->dtype, (size_t)((b - a) / ssz)};
    if (all_cached(w, sp, base, page, a, b)) {
      /* the common case: straight from the mapping, no bounce */
      if ((s = fg_load_io_populate(c->io, t, sp->off + a, b - a))) return s;
      j.src = t->data + sp->off + a;
      if ((s = fg_mapping_access(f->map, cvt_fn, &j))) return fault(c, t, sp->off + a, s);
      return FG_OK;
    }
    if ((s = gather(c, w, sp, a, b, bounce))) return s;
    j.src = bounce;
    return cvt_fn(&j);
  }
  case FG_HOW_DEQUANT:
    if (fg_quant_can_decode(t->dtype) && all_cached(w, sp, base, page, a, b)) {
      /* Decoded straight from the mapping, as converted pieces are: a copy into the bounce
       * first costs a pass over the stored bytes (q8_0 -> f32, one thread: 0.79x of the
       * decoder's own speed through the bounce). The row decoder runs on this thread alone
       * (one OpenMP thread here: no region) and holds nothing a fault's jump could leak. */
      if ((s = fg_load_io_populate(c->io, t, sp->off + a, b - a))) return s;
      dec_job j = {c, it, sp, a, b, t->data + sp->off + a, false};
      if ((s = fg_mapping_access(f->map, dec_fn, &j))) return j.returned ? s : fault(c, t, sp->off + a, s);
      return FG_OK;
    }
    /* fall through */
  case FG_HOW_WIDEN64:
    if ((s = gather(c, w, sp, a, b, bounce))) return s;
    return decode_piece(c, it, sp, a, b, bounce);
  }
  return fg_fail(FG_ERR_STATE, "load: tensor %s has no CPU plan", t->name);
}

/* The output addresses [*lo, *hi) a piece writes (none for a borrowed one: false). */
static bool piece_out(const fg_load_ctx *c, const cpu_work *w, const piece *pc, uintptr_t *lo, uintptr_t *hi) {
  const span *sp = &w->spans[pc->span];
  const fg_load_item *it = &c->items[sp->item];
  if (it->how == FG_HOW_BORROW) return false;
  uint64_t su, ou;
  units_of(it, &su, &ou);
  *lo = (uintptr_t)it->out->data + (uintptr_t)((sp->off + pc->a) / su * ou);
  *hi = (uintptr_t)it->out->data + (uintptr_t)((sp->off + pc->b + su - 1) / su * ou);
  return true;
}

/* Cuts the window's pieces into the runs each thread takes whole: a piece joins the run
 * before it when its output starts in the huge page where that run's output ends, while the
 * run writes less than FG_CPU_OUT_COPY. Small tensors lie several to a huge page of the
 * arena, and two threads writing into one new huge page stall each other while the kernel
 * zeroes it. Measured on SmolLM2's 272 tensors, kept copy with 2 threads into fresh memory:
 * 0.72-0.83x of page-cache read into fresh memory with a piece per thread, 0.88-1.04x with
 * runs. */
static fg_status group_pieces(const fg_load_ctx *c, cpu_work *w, size_t np, size_t *ng) {
  fg_status s = grow((void **)&w->groups, &w->groups_cap, np + 1, sizeof *w->groups);
  if (s) return s;
  size_t n = 0;
  uintptr_t run_lo = 0, run_hi = 0;
  bool open = false;
  for (size_t p = 0; p < np; p++) {
    uintptr_t lo = 0, hi = 0;
    bool writes = piece_out(c, w, &w->pieces[p], &lo, &hi);
    const uintptr_t huge = ~(uintptr_t)(FG_CPU_HUGE - 1);
    bool join = open && writes && lo >= run_hi && (lo & huge) == ((run_hi - 1) & huge) && run_hi - run_lo < FG_CPU_OUT_COPY;
    if (!join) {
      w->groups[n++] = p;
      run_lo = lo;
    }
    open = writes;
    if (writes) run_hi = hi;
  }
  w->groups[n] = np;
  *ng = n;
  return FG_OK;
}

/* Every piece of the window's spans, each on one thread, with every thread. */
static fg_status run_window(fg_load_ctx *c, cpu_work *w, size_t nspans) {
  size_t used = 0, np = 0;
  fg_status s;
  size_t checked = SIZE_MAX; /* the file last checked in this window */
  for (size_t i = 0; i < nspans; i++) {
    span *sp = &w->spans[i];
    const fg_load_item *it = &c->items[sp->item];
    if (sp->len == 0 || is_lazy(c, it)) continue;
    /* that the file is still the one opened, once per window and file (a stat of the path
     * per tensor was 4% of a 2-thread copy of SmolLM2's 272 tensors, all before the threads
     * start); a change is named at the first tensor of the window that meets it */
    if (it->src->file != checked) {
      if ((s = fg_load_io_check(c->io, it->src, sp->off))) return s;
      checked = it->src->file;
    }
    /* a copy that reads every page with pread never asks which are cached */
    if (!(it->how == FG_HOW_COPY && w->pread_all[it->src->file]) && (s = residency(w, it->src, sp, &used))) return s;
    if (it->how == FG_HOW_BORROW) {
      uint64_t pb = piece_bytes(it);
      size_t k = (size_t)((sp->len + pb - 1) / pb);
      if ((s = grow((void **)&w->pieces, &w->pieces_cap, np + k, sizeof *w->pieces))) return s;
      for (uint64_t a = 0; a < sp->len; a += pb)
        w->pieces[np++] = (piece){(uint32_t)i, a, sp->len - a < pb ? sp->len : a + pb};
      continue;
    }
    /* pieces that end where the output crosses a huge-page boundary */
    uint64_t su, ou;
    units_of(it, &su, &ou);
    const uint64_t want = it->how == FG_HOW_COPY ? FG_CPU_OUT_COPY : FG_CPU_OUT_PIECE;
    const uintptr_t out = (uintptr_t)it->out->data;
    for (uint64_t a = 0; a < sp->len;) {
      uintptr_t o = out + (uintptr_t)((sp->off + a) / su * ou);
      uintptr_t end = (o + want) & ~(uintptr_t)(FG_CPU_HUGE - 1);
      if (end <= o) end = (o + FG_CPU_HUGE) & ~(uintptr_t)(FG_CPU_HUGE - 1);
      uint64_t units = (uint64_t)(end - o) / ou;
      uint64_t e = a + (units ? units : 1) * su;
      if (e > sp->len) e = sp->len;
      if ((s = grow((void **)&w->pieces, &w->pieces_cap, np + 1, sizeof *w->pieces))) return s;
      w->pieces[np++] = (piece){(uint32_t)i, a, e};
      a = e;
    }
  }
  if (np == 0) return FG_OK;
  size_t ng = 0;
  if ((s = group_pieces(c, w, np, &ng))) return s;
  int threads = c->threads < (int)ng ? c->threads : (int)ng;
  if (threads > w->nbounce) threads = w->nbounce;
  err_slot e = {FG_OK, UINT64_MAX, ""};
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    /* The codecs' own parallel loops stay on this thread: each thread of the load is one
     * worker (a region of one thread would not count as active, and a codec called in it
     * would start a team of its own per piece). The setting lives in this region's task. */
    omp_set_num_threads(1);
    uint8_t *bounce = w->bounce ? w->bounce + (size_t)omp_get_thread_num() * w->slice : NULL;
    /* dynamic: pieces cost what their type costs, and a thread that the system preempts
     * leaves its share to the others */
#pragma omp for schedule(dynamic, 1)
    for (int64_t g = 0; g < (int64_t)ng; g++) {
      for (size_t p = w->groups[g]; p < w->groups[g + 1]; p++) {
        const piece *pc = &w->pieces[p];
        const span *sp = &w->spans[pc->span];
        fg_status ps = do_piece(c, w, sp, pc->a, pc->b, bounce);
        if (ps) {
          err_keep(&e, ps, sp->pos + pc->a);
          break;
        }
      }
    }
  }
  return e.st ? fg_fail(e.st, "%s", e.msg) : FG_OK;
}

/* After a window: pages that were only read from are dropped from this process (borrowed
 * ones stay), and progress is told tensor by tensor. */
static fg_status finish_window(fg_load_ctx *c, cpu_work *w, size_t nspans) {
  /* One release per run of spans that lie together in one file: each release of mapped
   * pages interrupts every other core running this process to flush its TLB (on this VM
   * about 8 us a call; SmolLM2's 272 tensors paid it per tensor, 4% of a 2-thread load).
   * A run bridges gaps of alignment padding only, never a borrowed span's pages. */
  for (size_t i = 0; i < nspans;) {
    const fg_load_item *it = &c->items[w->spans[i].item];
    if (it->how == FG_HOW_BORROW) {
      i++;
      continue;
    }
    const fg_ckpt_tensor *t0 = it->src;
    uint64_t lo = t0->offset + w->spans[i].off, hi = lo + w->spans[i].len;
    size_t k = i + 1;
    for (; k < nspans; k++) {
      const fg_load_item *nx = &c->items[w->spans[k].item];
      uint64_t a = nx->src->offset + w->spans[k].off;
      if (nx->how == FG_HOW_BORROW || nx->src->file != t0->file || a < hi || a - hi > FG_CPU_EVICT_GAP) break;
      hi = a + w->spans[k].len;
    }
    fg_load_io_evict(c->io, t0->file, lo, hi - lo);
    i = k;
  }
  for (size_t i = 0; i < nspans; i++) {
    const span *sp = &w->spans[i];
    const fg_ckpt_tensor *t = c->items[sp->item].src;
    c->bytes_done += sp->len;
    if (sp->off + sp->len >= t->nbytes) c->tensors_done++;
    fg_status s = fg_load_progress_step(c, t->name);
    if (s) return s;
  }
  return FG_OK;
}

/* Per file: whether every tensor byte in it is read by this load (none rejected by a filter,
 * none lazy). Then cached pages are read with pread too, not through the mapping: pread
 * copies out of the page cache, where the mapping adds a page-table entry per page (populated,
 * then evicted) for the same copy (a kept copy: 0.72x of page-cache read through the mapping,
 * 0.95x with pread). Only there: a pread that meets a page the parsers' faults marked for
 * readahead starts an asynchronous read past it (even with POSIX_FADV_RANDOM), which may take
 * in a rejected tensor's pages; with nothing rejected, it only reads what comes next. */
static fg_status files_pread_all(const fg_load_ctx *c, cpu_work *w) {
  const fg_ckpt *ck = c->io->ckpt;
  size_t nf = c->io->nfiles;
  size_t *want = calloc(2 * (nf ? nf : 1), sizeof *want);
  w->pread_all = calloc(nf ? nf : 1, sizeof *w->pread_all);
  if (!want || !w->pread_all) {
    free(want);
    return fg_fail(FG_ERR_NOMEM, "load: out of memory");
  }
  for (size_t i = 0, n = fg_ckpt_count(ck); i < n; i++) {
    const fg_ckpt_tensor *t = fg_ckpt_tensor_at(ck, i);
    if (t->nbytes && t->file < nf) want[t->file]++;
  }
  for (size_t i = 0; i < c->nitems; i++) {
    const fg_ckpt_tensor *t = c->items[i].src;
    if (t->nbytes && t->file < nf && !is_lazy(c, &c->items[i])) want[nf + t->file]++;
  }
  for (size_t f = 0; f < nf; f++) w->pread_all[f] = want[f] == want[nf + f];
  free(want);
  return FG_OK;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Fresh output memory costs the kernel a zeroing of every page at its first touch, about as
 * long as writing the output once. When the load leaves a core idle (fewer threads than the
 * process may run on), one more thread takes that off the load's threads: it faults the
 * output in, in load order, a huge page at a time, while they convert (measured, one load
 * thread on two cores, into fresh memory against the codec's own speed: f16 -> f32 0.61x ->
 * 0.79x, q4_K -> f32 0.60x -> 0.92x, q6_K -> f32 0.50x -> 0.71x, each then level with the
 * load into recycled memory). A load thread that reaches a page first faults it itself. */
typedef struct prefaulter {
  const fg_load_ctx *c;
  atomic_bool stop;
  pthread_t th;
  bool running;
} prefaulter;

static void *prefault_main(void *arg) {
  prefaulter *p = arg;
  const fg_load_ctx *c = p->c;
  for (size_t i = 0; i < c->nitems && !atomic_load_explicit(&p->stop, memory_order_relaxed); i++) {
    const fg_load_item *it = &c->items[i];
    if (it->how == FG_HOW_BORROW || !it->out || !it->out->data || !it->out->nbytes) continue;
    uintptr_t lo = (uintptr_t)it->out->data, hi = lo + (uintptr_t)it->out->nbytes;
    for (uintptr_t a = lo & ~(uintptr_t)(FG_CPU_HUGE - 1); a < hi;) {
      if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return NULL;
      uintptr_t e = a + (uintptr_t)FG_CPU_HUGE;
      uintptr_t x = a < lo ? lo & ~(uintptr_t)4095 : a;
      if (madvise((void *)x, (e < hi ? e : hi) - x, MADV_POPULATE_WRITE) != 0 && errno != EINTR && errno != EAGAIN)
        return NULL; /* a kernel without it, or no memory: the load's threads fault as before */
      a = e;
    }
  }
  return NULL;
}

static void prefault_start(prefaulter *p, const fg_load_ctx *c) {
  memset(p, 0, sizeof *p);
  p->c = c;
  atomic_init(&p->stop, false);
  bool fresh = !(c->stats && c->stats->recycled), writes = false;
  for (size_t i = 0; i < c->nitems && !writes; i++) writes = c->items[i].how != FG_HOW_BORROW && c->items[i].src->nbytes;
  if (!fresh || !writes || c->threads >= omp_get_num_procs()) return;
  p->running = pthread_create(&p->th, NULL, prefault_main, p) == 0;
}

static void prefault_stop(prefaulter *p) {
  if (!p->running) return;
  atomic_store(&p->stop, true);
  pthread_join(p->th, NULL);
  p->running = false;
}

fg_status fg_load_run_cpu(fg_load_ctx *c) {
  cpu_work w;
  memset(&w, 0, sizeof w);
  bool touch = false, sink = false, bounce = false;
  uint64_t slice = FG_CPU_PIECE;
  for (size_t i = 0; i < c->nitems; i++) {
    const fg_load_item *it = &c->items[i];
    if (is_lazy(c, it) || !it->src->nbytes) continue;
    touch = true;
    if (it->how == FG_HOW_BORROW) {
      sink = true;
    } else if (it->how != FG_HOW_COPY) {
      bounce = true;
      if (piece_stored_max(it) > slice) slice = piece_stored_max(it);
    }
  }
  w.nbounce = c->threads > 0 ? c->threads : 1;
  w.slice = (size_t)slice;
  if (sink && (uint64_t)w.slice * (uint64_t)w.nbounce < FG_CPU_SINK) w.slice = (size_t)(FG_CPU_SINK / (uint64_t)w.nbounce);
  fg_status s = files_pread_all(c, &w);
  if (!s && (sink || bounce) && !(w.bounce = malloc(w.slice * (size_t)w.nbounce)))
    s = fg_fail(FG_ERR_NOMEM, "load: out of memory for %d read buffers of %zu bytes", w.nbounce, w.slice);
  /* Pages are faulted in only once they are cached (preads first), so with the readahead
   * marks ignored a fault never starts a read of its own. */
  if (touch) fg_load_io_set_random(c->io, true);
  prefaulter pre;
  prefault_start(&pre, c);
  prefetcher pf = {0, 0, 0};
  size_t item = 0;
  uint64_t off = 0;
  while (!s && item < c->nitems) {
    /* the next window: whole tensors and pieces of tensors up to FG_CPU_WINDOW bytes */
    size_t n = 0;
    uint64_t filled = 0;
    while (item < c->nitems && (filled < FG_CPU_WINDOW || n == 0)) {
      const fg_ckpt_tensor *t = c->items[item].src;
      uint64_t len = t->nbytes - off, room = FG_CPU_WINDOW - filled; /* filled < FG_CPU_WINDOW here */
      if (len > room) {
        /* a part of this tensor, in whole pieces (at least one) */
        uint64_t pb = piece_bytes(&c->items[item]);
        if (room >= pb) len = room - room % pb;
        else if (len > pb) len = pb;
      }
      if ((s = grow((void **)&w.spans, &w.spans_cap, n + 1, sizeof *w.spans))) break;
      w.spans[n++] = (span){item, off, len, 0, 0, filled};
      filled += len;
      off += len;
      if (off >= t->nbytes) {
        item++;
        off = 0;
      }
    }
    if (s) break;
    prefetch_to(c, &pf, c->bytes_done + filled + FG_CPU_AHEAD);
    if ((s = run_window(c, &w, n))) break;
    s = finish_window(c, &w, n);
  }
  prefault_stop(&pre);
  if (touch) fg_load_io_set_random(c->io, false);
  if (!s) s = fg_load_final_check(c);
  if (s == FG_OK && c->opt->progress && c->nitems == 0) s = fg_load_progress_step(c, "");
  free(w.bounce);
  free(w.vec);
  free(w.spans);
  free(w.pieces);
  free(w.groups);
  free(w.pread_all);
  return s;
}
