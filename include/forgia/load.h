/* Streaming loader: a checkpoint on disk -> named tensors on a device.
 *
 *   fg_load_options o;
 *   fg_load_options_init(&o);
 *   o.dtype = FG_LOAD_DTYPE_F32;                        // widen f16/bf16, dequantize blocks
 *   fg_model *m;
 *   if (fg_model_create("model.gguf", dev, &o, &m)) { fprintf(stderr, "%s\n", fg_last_error()); ... }
 *   const fg_model_tensor *w = fg_model_find(m, "blk.0.attn_q.weight");
 *   ...
 *   fg_model_free(m);                             // before fg_device_close(dev)
 *
 * Sources. The path may be a GGUF file, part 1 of a split GGUF (NAME-00001-of-0000N.gguf:
 * every part is loaded), a safetensors file, a sharded Hugging Face directory (or its
 * model.safetensors.index.json). A file starting with "GGUF" is GGUF; a directory, a
 * .json or a .safetensors file is safetensors; anything else is tried as safetensors and
 * refused with FG_ERR_BAD_MAGIC when it is not.
 *
 * What a load does, by target:
 *   GPU (and any target with FG_LOAD_FLAG_STAGED): the files stay memory-mapped for the parsers,
 *     but tensor bytes are read with pread(2) into a ring of pinned buffers by a staging
 *     thread, while the calling thread queues each filled buffer's copy to the device on a
 *     copy stream (then the conversion there, with fg_convert) and records an event that
 *     orders the buffer's reuse. Block types asked to become f32 cross the bus quantized and
 *     are decoded on the device when the device layer decodes that type, else decoded on the
 *     host into the staging buffer (fg_quant_decode_rows). pread rather than memcpy from the
 *     mapping: a file truncated under the load gives a short read and a status instead of
 *     SIGBUS, and no file page enters the process (nothing to release behind the cursor).
 *     Peak host memory is the ring (plus one buffer's worth of quantized input when the host
 *     decodes), whatever the model size. The ring is allocated on the NUMA node nearest the
 *     GPU and the staging thread is bound to that node's cores (hwloc); on a one-node
 *     machine that is a no-op, said once on stderr when FORGIA_VERBOSE=1.
 *   CPU: a tensor kept in its stored dtype is borrowed from the mapping (zero copy; the model
 *     holds the mapping until fg_model_free); its pages are populated during the load
 *     (MADV_POPULATE_READ) unless FG_LOAD_FLAG_LAZY. Copied and converted tensors are read in
 *     chunks, with every thread, into memory the model owns (converted: into a bounce buffer
 *     the conversion reads): uncached pages with pread, cached ones copied out of the mapping
 *     under its guard (fg_mapping_copy), so a file truncated at any moment of the load is a
 *     status, never SIGBUS. Source pages are read ahead of the cursor and released
 *     (MADV_DONTNEED) behind it.
 *   Both paths: readahead hints (WILLNEED) run 64 MiB (staged: at least twice the ring)
 *     ahead of the cursor over the bytes of selected tensors only, through the loader's own
 *     descriptor on which kernel readahead is off, so rejected tensors are not read. The one
 *     exception is not the loader's: the format parsers fault the header in through the
 *     mapping, and the kernel may read around it (up to read_ahead_kb) into the first tensors.
 *
 * Faults: a file truncated, rewritten in place or replaced (renamed over) during the load
 * ends it with FG_ERR_TRUNCATED or FG_ERR_IO naming the file, tensor and offset; so does a
 * device allocation failure (FG_ERR_DEVICE_NOMEM, checked once for the whole model before
 * any byte is read), a conversion that the build cannot do (FG_ERR_UNSUPPORTED, also before
 * anything is read) or a device error. A failed load has freed everything it allocated,
 * device memory included. Borrowed CPU tensors are as safe as any mmap: changing the file
 * after the load changes (or, when truncated, faults) what they point at.
 *
 * Threads: fg_model_create may be called from several threads with different devices or options;
 * a fg_load_ring is used by one load at a time. A loaded fg_model is immutable: its getters
 * may be called from many threads (fg_model_free only once they are done). The progress
 * callback runs on the thread that called fg_model_create. */
#ifndef FORGIA_LOAD_H
#define FORGIA_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/dtype.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What dtype each tensor gets on the device. Only f32, f16, bf16 and the ggml block types
 * are ever converted; integers, bool, f64 and the F8/F6/F4 kinds are always kept.
 * FG_LOAD_FLAG_KEEP_QUANT (below) keeps block types as stored under every policy. */
typedef enum fg_load_dtype {
  FG_LOAD_DTYPE_KEEP = 0,    /* every tensor as stored */
  FG_LOAD_DTYPE_F32 = 1,     /* f16/bf16 widened to f32; block types dequantized to f32 */
  FG_LOAD_DTYPE_BF16 = 2,    /* f32 and f16 -> bf16; block types kept */
  FG_LOAD_DTYPE_F16 = 3,     /* f32 and bf16 -> f16; block types kept */
  FG_LOAD_DTYPE_DEQUANT = 4, /* block types dequantized to f32; float types kept */
  FG_LOAD_DTYPE_F64 = 5,     /* f32/f16/bf16 widened to f64 (exactly); block types decoded to f32
                                as ggml does, then widened. Converted on the host whatever the
                                target (the staged path copies f64 bytes), so a block type needs
                                a host decoder (fg_quant_can_decode), else FG_ERR_UNSUPPORTED */
} fg_load_dtype;

/* "keep", "f32", "bf16", "f16", "dequant", "f64"; FG_ERR_INVALID_ARG for anything else. */
FG_API fg_status fg_load_dtype_from_name(const char *name, fg_load_dtype *out);
FG_API const char *fg_load_dtype_name(fg_load_dtype p);
/* The dtype a tensor stored as `stored` gets under policy p. */
FG_API fg_dtype fg_load_target_dtype(fg_load_dtype p, fg_dtype stored);

/* A tensor as the filter sees it (everything borrowed for the duration of the call). */
typedef struct fg_load_tensor_info {
  const char *name;        /* NUL-terminated */
  size_t name_len;
  fg_dtype dtype;          /* as stored */
  int ndim;
  const uint64_t *shape;   /* row-major, outermost first */
  uint64_t nbytes;         /* stored bytes */
} fg_load_tensor_info;

/* Return true to load the tensor. Called once per tensor of the source, in file order, on
 * the calling thread, before anything is read. */
typedef bool (*fg_load_filter_fn)(const fg_load_tensor_info *t, void *user);

typedef struct fg_load_progress {
  const char *tensor;      /* the tensor being loaded (borrowed) */
  size_t tensors_done, tensors_total;
  uint64_t bytes_done, bytes_total; /* stored bytes of the selected tensors */
  double seconds;          /* since the load began */
} fg_load_progress;

/* Called on the calling thread after each chunk (at most one staging buffer or CPU chunk)
 * and once at the end. Return false to cancel: the load then fails with FG_ERR_STATE and
 * frees everything. */
typedef bool (*fg_load_progress_fn)(const fg_load_progress *p, void *user);

/* A reusable staging ring: `count` pinned buffers of `bytes` each on the NUMA node nearest
 * the device, their events, and a copy stream. Page-locking costs about as much as copying
 * the same bytes, so callers that load repeatedly make one ring and pass it to every load. */
typedef struct fg_load_ring fg_load_ring;

#define FG_LOAD_RING_DEFAULT_COUNT 4u
#define FG_LOAD_RING_DEFAULT_BYTES ((size_t)16 << 20)
#define FG_LOAD_RING_MIN_BYTES ((size_t)64 << 10)   /* holds one decoded block of any type */
#define FG_LOAD_RING_MAX_BYTES ((size_t)1 << 30)
#define FG_LOAD_RING_MAX_COUNT 64u

/* count in 1..64 and bytes in [64 KiB, 1 GiB] (rounded up to the page size), else
 * FG_ERR_INVALID_ARG. The ring borrows dev: free the ring before closing the device. */
FG_API fg_status fg_load_ring_create(fg_device *dev, uint32_t count, size_t bytes, fg_load_ring **out);
FG_API void fg_load_ring_free(fg_load_ring *r); /* NULL-safe */

/* Flags. */
#define FG_LOAD_FLAG_LAZY 1u    /* CPU: borrow kept tensors without populating their pages */
#define FG_LOAD_FLAG_COPY 2u    /* CPU: copy kept tensors into owned memory instead of borrowing */
#define FG_LOAD_FLAG_STAGED 4u  /* any target: go through the pinned ring and the copy stream (the
                              GPU path; on the CPU it exercises that path without a GPU) */
#define FG_LOAD_FLAG_KEEP_QUANT 8u /* block types stay as stored (their bytes, borrowed or copied
                              as any kept tensor): the dtype policy then applies to float
                              tensors only, so f32 or f64 widens f16/bf16 and leaves a Q8_0
                              matrix quantized. With FG_LOAD_DTYPE_DEQUANT, FG_ERR_INVALID_ARG */

typedef struct fg_model fg_model;

typedef struct fg_load_options {
  /* Filter: with names, exactly those tensors (a name the source lacks is FG_ERR_NOT_FOUND);
   * with filter, those it accepts; with both, those in the list that it accepts; with
   * neither, all. Rejected tensors' bytes are never read. */
  const char *const *names;
  size_t n_names;
  fg_load_filter_fn filter;
  void *filter_user;
  fg_load_dtype dtype;
  /* Staging ring for the staged path: ring if set (count and bytes are then ignored), else a
   * ring of ring_count x ring_bytes made for this load (0: the defaults above). */
  fg_load_ring *ring;
  uint32_t ring_count;
  size_t ring_bytes;
  fg_load_progress_fn progress;
  void *progress_user;
  unsigned flags;          /* FG_LOAD_* */
  int threads;             /* host threads for reads and conversions; 0: OpenMP default */
  /* A model from an earlier load, handed over to this one: its owned memory becomes this
   * load's output when it is on the same device and holds the output (CPU: its unused tail
   * is returned to the system; a device: it may be at most twice the size needed), so the
   * output's pages are already faulted in and nothing is zeroed on the way. fg_model_create frees
   * it before it returns, whatever the outcome (what it does not take, before the new
   * output is allocated); no other thread may use it meanwhile. NULL: fresh memory. */
  fg_model *recycle;
} fg_load_options;

/* Zeroes o: all tensors, kept dtypes, default ring, no callbacks. */
FG_API void fg_load_options_init(fg_load_options *o);
/* The dtype a tensor stored as `stored` gets under o's policy and flags (KEEP_QUANT
 * included); o NULL: the defaults (stored). */
FG_API fg_dtype fg_load_options_target(const fg_load_options *o, fg_dtype stored);

/* ---- the loaded model ------------------------------------------------------------------ */

typedef struct fg_model_tensor {
  const char *name;        /* owned by the model; NUL-terminated */
  size_t name_len;
  fg_dtype dtype;          /* on the device, after the dtype policy */
  fg_dtype file_dtype;     /* as stored */
  int ndim;                /* 0 for a scalar */
  const uint64_t *shape;   /* owned by the model; row-major, outermost first, ndim entries */
  uint64_t numel;
  uint64_t nbytes;         /* bytes at data */
  /* Device memory owned by the model (host memory for the CPU), or, when borrowed, a
   * read-only pointer into the file mapping (writing to it faults). NULL when nbytes is 0. */
  void *data;
  bool borrowed;
  size_t file;             /* index of the file (split part or shard) it came from */
  uint64_t file_offset;    /* byte offset of its stored data in that file */
} fg_model_tensor;

typedef struct fg_load_stats {
  double seconds;            /* wall time of fg_model_create, ring setup included */
  double ring_seconds;       /* of which allocating and pinning a ring made for this load */
  size_t tensors;            /* loaded */
  size_t tensors_skipped;    /* rejected by the filter */
  uint64_t bytes_read;       /* stored bytes of the loaded tensors */
  uint64_t bytes_owned;      /* bytes the model owns on the device */
  uint64_t bytes_borrowed;   /* bytes borrowed from mappings (CPU) */
  size_t files;              /* files of the source */
  bool staged;               /* went through the pinned ring */
  uint32_t ring_count;
  size_t ring_bytes;
  int numa_node;             /* node of the ring and staging thread, -1 when unbound */
  bool recycled;             /* the output went into the memory of fg_load_options.recycle */
} fg_load_stats;

/* Loads path onto dev. opt may be NULL (defaults). On success *out is a new model that
 * borrows dev (free the model first); on failure *out is untouched and nothing is left
 * allocated. */
FG_API fg_status fg_model_create(const char *path, fg_device *dev, const fg_load_options *opt, fg_model **out);
/* Frees every tensor, the model's device memory and its mappings. NULL-safe. */
FG_API void fg_model_free(fg_model *m);

FG_API size_t fg_model_count(const fg_model *m);
/* Tensors in file order (part/shard order, then offset); NULL when out of range. */
FG_API const fg_model_tensor *fg_model_at(const fg_model *m, size_t i);
/* Lookup by name (binary search over a sorted index); NULL when absent. */
FG_API const fg_model_tensor *fg_model_find(const fg_model *m, const char *name);
/* The same, failing with FG_ERR_NOT_FOUND and a message naming the source and tensor. */
FG_API fg_status fg_model_get(const fg_model *m, const char *name, const fg_model_tensor **out);

FG_API fg_device *fg_model_device(const fg_model *m);
FG_API const char *fg_model_path(const fg_model *m);    /* the path given to fg_model_create */
FG_API const char *fg_model_format(const fg_model *m);  /* "gguf" or "safetensors" */
/* The files of the source (split parts or shards), as fg_model_tensor.file numbers them. */
FG_API size_t fg_model_file_count(const fg_model *m);
FG_API const char *fg_model_file_path(const fg_model *m, size_t i); /* NULL when out of range */
FG_API const fg_load_stats *fg_model_stats(const fg_model *m);

#ifdef __cplusplus
}
#endif
#endif
