/* Internals of the loader (include/forgia/load.h), shared by host/load_*.c:
 *   load_io.c        the loader's own reading of an opened checkpoint (forgia/ckpt.h): one
 *                    descriptor per file for pread and fadvise, populate and paging hints on
 *                    the mappings, identity checks that catch a file truncated, rewritten or
 *                    replaced under the load
 *   load_ring.c      pinned staging ring (buffers, events, copy stream)
 *   load_staged.c    the pipeline: staging thread -> ring -> copy stream -> convert
 *   load_cpu.c       the CPU target: borrow, or read (guarded) and convert/dequantize, in
 *                    windows of pieces that one thread each takes from the file to the output
 *   load_f64.c       the host conversion of f64 destinations
 *   load.c           options, filter, plan, the model container and lookup */
#ifndef FORGIA_HOST_LOAD_INTERNAL_H
#define FORGIA_HOST_LOAD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "core/clock.h"
#include "forgia/ckpt.h"
#include "forgia/load.h"
#include "forgia/mapping.h"

/* ---- reading ------------------------------------------------------------------------- */

/* One file of the checkpoint as the loader reads it. */
typedef struct fg_load_file {
  const char *path;          /* borrowed from the checkpoint */
  const fg_mapping *map;     /* borrowed from the checkpoint */
  const uint8_t *base;       /* fg_mapping_data(map) */
  uint64_t size;
  int fd;                    /* our own descriptor: pread, fadvise, fstat */
  dev_t st_dev;
  ino_t st_ino;
  struct timespec mtime;
} fg_load_file;

typedef struct fg_load_io {
  const fg_ckpt *ckpt;       /* borrowed: close the io before the checkpoint */
  size_t nfiles;
  fg_load_file *files;       /* parallel to the checkpoint's files */
} fg_load_io;

/* Opens a descriptor on every file of c (kernel readahead off on it) and records what the
 * file is. */
fg_status fg_load_io_open(const fg_ckpt *c, fg_load_io **out);
void fg_load_io_close(fg_load_io *io);
/* The path of the file holding t, for messages. */
const char *fg_load_io_path(const fg_load_io *io, const fg_ckpt_tensor *t);

/* FG_OK while the file still is what was parsed: same inode at its path, same size and
 * modification time. Names the tensor and offset otherwise. */
fg_status fg_load_io_check(const fg_load_io *io, const fg_ckpt_tensor *t, uint64_t off);
/* Reads [off, off+len) of t's bytes with pread, in parallel pieces for large len
 * (threads <= 1: one thread). A short read is FG_ERR_TRUNCATED. */
fg_status fg_load_io_read(const fg_load_io *io, const fg_ckpt_tensor *t, uint64_t off, void *dst, size_t len,
                          int threads);
/* Hints, never failing: WILLNEED on t's bytes [off, off+len) through our descriptor (exact:
 * its kernel readahead is off); MADV_DONTNEED on the mapping of file `file`'s bytes
 * [off, off+len) (file offsets: one call may cover several tensors). */
void fg_load_io_prefetch(const fg_load_io *io, const fg_ckpt_tensor *t, uint64_t off, uint64_t len);
void fg_load_io_evict(const fg_load_io *io, size_t file, uint64_t off, uint64_t len);
/* Faults in the mapping's pages of t's bytes [off, off+len) without copying. A page past
 * the end of the file is FG_ERR_TRUNCATED, never SIGBUS (MADV_POPULATE_READ; older kernels
 * touch each page under the mapping's guard, fg_mapping_access). */
fg_status fg_load_io_populate(const fg_load_io *io, const fg_ckpt_tensor *t, uint64_t off, uint64_t len);
/* Makes faults on the mappings ignore the kernel's readahead state (MADV_RANDOM) or restores
 * it. The parsers' header faults leave readahead marks in the pages after the header; a
 * later fault on a marked page would read a whole window ahead, rejected tensors included. */
void fg_load_io_set_random(const fg_load_io *io, bool random);

/* Elements of the innermost dimension (1 for a scalar): the row of a block type. */
static inline uint64_t fg_load_row(const fg_ckpt_tensor *t) { return t->ndim > 0 ? t->shape[t->ndim - 1] : 1; }

/* ---- plan ---------------------------------------------------------------------------- */

typedef enum fg_load_how {
  FG_HOW_BORROW = 0,  /* CPU: pointer into the mapping */
  FG_HOW_COPY,        /* same dtype, own memory */
  FG_HOW_CONVERT,     /* f32/f16/bf16 pair (fg_convert / fg_cpu_convert) */
  FG_HOW_DEQUANT,     /* block type -> f32 (fg_quant_decode_rows on the host) */
  FG_HOW_WIDEN64,     /* f32/f16/bf16 or a block type -> f64, on the host (fg_load_to_f64) */
} fg_load_how;

typedef struct fg_load_item {
  const fg_ckpt_tensor *src;
  fg_model_tensor *out;      /* out->data already points at its destination */
  fg_load_how how;
} fg_load_item;

typedef struct fg_load_ctx {
  const fg_ckpt *ckpt;
  fg_load_io *io;
  fg_device *dev;
  const fg_load_options *opt;
  fg_load_item *items;       /* selected tensors in (file, offset) order */
  size_t nitems;
  uint64_t bytes_total, bytes_done, tensors_done;
  double t0;
  int threads;
  fg_load_stats *stats;
} fg_load_ctx;

/* Calls the progress callback; FG_ERR_STATE when it asks to cancel. */
fg_status fg_load_progress_step(fg_load_ctx *c, const char *tensor);
/* Data read out of a file is only trustworthy if the file was intact until the last byte
 * was read: checks once more every file a tensor came from (but for lazily borrowed ones,
 * whose pages the load never touched). */
fg_status fg_load_final_check(fg_load_ctx *c);
/* True when FORGIA_VERBOSE is set to something other than "0" or "". */
bool fg_load_verbose(void);
/* f16 or bf16: the pair fg_convert can only join through f32. */
bool fg_load_is_half(fg_dtype t);

/* f64 output on the host (host/load_f64.c): nrows rows of rowlen elements stored as st
 * (f32, f16, bf16, or a block type the row codecs decode) in src_bytes, into dst. Floats
 * widen exactly; blocks decode to f32 as ggml does and then widen. The bits do not depend
 * on the thread count. */
fg_status fg_load_to_f64(fg_dtype st, const void *src, size_t src_bytes, double *dst, int64_t nrows, int64_t rowlen);

/* The two ways of running a plan. Both leave partial output to the caller to free. */
fg_status fg_load_run_cpu(fg_load_ctx *c);
fg_status fg_load_run_staged(fg_load_ctx *c);

/* ---- ring ---------------------------------------------------------------------------- */

struct fg_load_ring {
  fg_device *dev;
  uint32_t count;
  size_t bytes;
  int numa_node;
  void **buf;                /* pinned, count entries */
  fg_event **ev;             /* ev[i] recorded after the last copy out of buf[i] */
  fg_stream *stream;         /* the copy stream */
};

#endif
