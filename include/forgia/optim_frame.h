/* Optimizer state frames: Fucina's `saveState` wire format as plain data, parsed and
 * written byte for byte, independent of any live optimizer.
 *
 * Frames (all integers and floats little-endian, no padding):
 *   AdamW FZA3/FZA4/FZA5, Adam FZAD/FZD4/FZD5, SGD FZS3/FZS4/FZS5, Muon FZM3/FZM4/FZM5
 *   (followed by its fallback's full AdamW frame), APOLLO FZP3/FZP5, the optimizer set
 *   FZO3 (member frames concatenated), and the positional f32 tensor list FZT1.
 * v3 state buffers are untagged f32; v4 and v5 prefix every buffer with a one-byte dtype
 * tag (f32 = 0, bf16 = 1); v5 adds a master record (u8 has, then rows*cols f32) after each
 * slot's buffers. A buffer's length is never on the wire: it follows from the slot's dims
 * (and the header: SGD without momentum has empty buffers, APOLLO's rank-path moments hold
 * rows*rank values when rows >= cols, else rank*cols), so a frame parses on its own.
 *
 * Bytes (state buffers, masters, tensor data) are kept as little-endian bytes exactly as on
 * the wire: f32 buffers hold 4 bytes a value, bf16 buffers 2 (the u16 bit pattern).
 *
 * Error classes (Fucina's OptimError -> fg_status): CheckpointMagicMismatch ->
 * FG_ERR_BAD_MAGIC (a known family with an unknown version digit -> FG_ERR_BAD_VERSION);
 * CheckpointUnsupportedDtype -> FG_ERR_BAD_DTYPE; CheckpointInvalidName -> FG_ERR_BAD_STRING;
 * CheckpointDuplicateName -> FG_ERR_DUPLICATE; CheckpointUnknownName ->
 * FG_ERR_FRAME_UNKNOWN_NAME; CheckpointMissingEntry -> FG_ERR_FRAME_MISSING_ENTRY;
 * CheckpointShapeMismatch -> FG_ERR_FRAME_SHAPE_MISMATCH; CheckpointConfigMismatch ->
 * FG_ERR_FRAME_CONFIG_MISMATCH; CheckpointDtypeMismatch -> FG_ERR_FRAME_DTYPE_MISMATCH; a
 * short stream -> FG_ERR_TRUNCATED; bytes after the frame -> FG_ERR_FRAME_TRAILING_BYTES.
 * Bytes that no Fucina optimizer can write (a header bool above 1, an unknown enum,
 * nesterov without momentum or with dampening, a v5 master flag above 1) -> FG_ERR_RANGE.
 * Parsing is context-free, so where a stream has several faults the first one in byte
 * order is reported (Fucina's loader, which matches while it reads, may name another).
 *
 * Thread safety: parsed frames are immutable and may be read from many threads. */
#ifndef FORGIA_OPTIM_FRAME_H
#define FORGIA_OPTIM_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_oframe_kind {
  FG_OFRAME_KIND_ADAMW = 0,
  FG_OFRAME_KIND_ADAM = 1,
  FG_OFRAME_KIND_SGD = 2,
  FG_OFRAME_KIND_MUON = 3,
  FG_OFRAME_KIND_APOLLO = 4,
  FG_OFRAME_KIND_SET = 5,     /* FZO3 */
  FG_OFRAME_KIND_TENSORS = 6, /* FZT1 */
} fg_oframe_kind;

/* The wire tags of Fucina's StateDType. */
typedef enum fg_oframe_dtype {
  FG_OFRAME_DTYPE_F32 = 0,
  FG_OFRAME_DTYPE_BF16 = 1,
} fg_oframe_dtype;

/* One state buffer: count values of dtype, as little-endian bytes (count * 4 or * 2). */
typedef struct fg_oframe_buf {
  fg_oframe_dtype dtype;
  uint64_t count;
  uint8_t *data; /* NULL when count is 0 */
} fg_oframe_buf;

/* One slot record. Which fields are on the wire depends on the frame:
 *   AdamW/Adam: step, bufs[0] = m, bufs[1] = v              (n_bufs 2)
 *   SGD:        step, bufs[0] = momentum buffer              (n_bufs 1)
 *   Muon:       bufs[0] = momentum (no step on the wire)     (n_bufs 1)
 *   APOLLO main: step, seed, prev_norm_bits, bufs m, v (f32)  (n_bufs 2)
 *   APOLLO fallback: step, bufs m, v (f32)                    (n_bufs 2)
 * Fields not on the wire are 0 after a parse and ignored by the writer. */
typedef struct fg_oframe_slot {
  char *name;      /* name_len bytes, NUL-terminated after a parse (names hold no NUL) */
  size_t name_len; /* 1..65535 */
  uint64_t rows;   /* shape[0] */
  uint64_t cols;   /* product of the remaining dims (1 for a rank-1 param) */
  uint64_t step;
  uint64_t seed;           /* APOLLO main slots: the projection seed */
  uint32_t prev_norm_bits; /* APOLLO main slots: f32 bits of the limiter's norm (-1: none) */
  int n_bufs;              /* set by the parser; the writer uses the kind's count */
  fg_oframe_buf bufs[2];
  bool has_master; /* v5: the param is f16/bf16 and its f32 master follows */
  uint8_t *master; /* rows*cols f32 values (little-endian bytes) when has_master */
} fg_oframe_slot;

typedef struct fg_oframe_sgd_config {
  uint32_t momentum_bits;  /* f32 bits */
  uint32_t dampening_bits; /* f32 bits */
  uint8_t nesterov;        /* 0 or 1 */
} fg_oframe_sgd_config;

typedef struct fg_oframe_muon_config {
  uint8_t scale;    /* 0 spectral, 1 match_rms_adamw */
  uint8_t nesterov; /* 0 or 1 */
  uint32_t ns_steps;
} fg_oframe_muon_config;

typedef struct fg_oframe_apollo_config {
  uint64_t rank;
  uint64_t update_proj_gap;
  uint32_t scale_bits; /* f32 bits */
  uint8_t scale_type;  /* 0 channel, 1 tensor */
  uint8_t correct_bias, scale_front, disable_limiter; /* 0 or 1 each */
} fg_oframe_apollo_config;

/* FZT1 entry: rank dims, then product(dims) f32 values. */
typedef struct fg_oframe_tensor {
  uint32_t rank;
  uint64_t *dims;  /* rank values; NULL when rank is 0 */
  uint64_t count;  /* product of dims (1 for rank 0) */
  uint8_t *data;   /* count * 4 bytes */
} fg_oframe_tensor;

typedef struct fg_oframe fg_oframe;
struct fg_oframe {
  fg_oframe_kind kind;
  /* 3, 4 or 5 for optimizer frames (APOLLO: 3 or 5), 3 for a set, 1 for FZT1. Given to
   * the writer as 0 it picks Fucina's rule: 5 if any slot carries a master, else 4 if
   * any state buffer is not f32, else 3 (Muon decides from its own slots only). */
  int version;
  fg_oframe_sgd_config sgd;       /* SGD only */
  fg_oframe_muon_config muon;     /* Muon only */
  fg_oframe_apollo_config apollo; /* APOLLO only */
  size_t n_slots;                 /* optimizer kinds: the (main) slot list */
  fg_oframe_slot *slots;
  size_t n_fallback; /* APOLLO: the fallback slot list (its own name space) */
  fg_oframe_slot *fallback;
  fg_oframe *embedded; /* Muon: its AdamW fallback frame (always present after a parse) */
  size_t n_members;    /* set: member frames, in registration order (no nested sets) */
  fg_oframe *members;
  size_t n_tensors; /* FZT1 */
  fg_oframe_tensor *tensors;
};

/* How a frame kind is laid out on the wire: one row per kind (formats/optim_frame_kinds.c),
 * read by the parser, the writer, the matcher, the optimizers (training/optim_kind_*.c) and
 * `forgia inspect`, so that a new frame kind is a row, not a branch in each of them. */
typedef enum fg_oframe_field_type {
  FG_OFRAME_FIELD_BOOL = 0, /* u8, 0 or 1 */
  FG_OFRAME_FIELD_ENUM = 1, /* u8, 0 or 1, naming names[0] or names[1] */
  FG_OFRAME_FIELD_F32 = 2,  /* u32: the bits of an f32 */
  FG_OFRAME_FIELD_U32 = 3,
  FG_OFRAME_FIELD_U64 = 4,
} fg_oframe_field_type;

/* One header field, in wire order. */
typedef struct fg_oframe_field {
  const char *key;           /* inspect's name for it ("momentum", "disable_limiter") */
  const char *label;         /* the name in error messages ("disable_norm_growth_limiter") */
  fg_oframe_field_type type;
  size_t offset;             /* of its uint8_t / uint32_t / uint64_t in fg_oframe */
  const char *names[2];      /* ENUM: the names of 0 and 1 */
  const char *text;          /* inspect's readable output: BOOL, the phrase when set
                                (", nesterov"); ENUM, a suffix after the name (" scaling") */
} fg_oframe_field;

typedef struct fg_oframe_kind_desc {
  fg_oframe_kind kind;
  const char *name;          /* "adamw", "set", "tensors" (inspect's JSON) */
  const char *title;         /* "AdamW", "optimizer set" (messages) */
  const char *magics[6];     /* magics[v]: the magic of version v, NULL when v does not exist */
  const char *magic_list;    /* the magics in messages: "FZA3/4/5" */
  int n_bufs;                /* state buffers per slot (0: not an optimizer frame) */
  const char *buf_names[2];  /* in messages: "m", "v", "buf", "momentum" */
  bool step;                 /* main slots carry a step (Muon's do not) */
  bool main_extras;          /* main slots carry seed and prev_norm (APOLLO) */
  bool fallback_list;        /* a fallback slot list follows the main one (APOLLO; its slots
                                carry steps and no extras) */
  bool embedded_adamw;       /* the frame of an AdamW fallback follows (Muon) */
  bool untagged;             /* buffers carry no dtype tag in any version (APOLLO: f32 only) */
  const char *header_what;   /* the header in messages: "the SGD header (...)" */
  size_t n_header;
  const fg_oframe_field *header;
} fg_oframe_kind_desc;

/* The row of kind, or NULL for a value that is no frame kind. */
FG_API const fg_oframe_kind_desc *fg_optim_frame_describe(fg_oframe_kind kind);

/* Parses exactly one frame from data[0..len): bytes after it are FG_ERR_FRAME_TRAILING_BYTES.
 * Strict: every length is checked against the remaining input before anything is
 * allocated; names must be 1..65535 bytes of UTF-8 without NUL and unique within their
 * slot list. On failure *out is NULL and fg_last_error() names the offset, the slot and
 * what was expected. Free the result with fg_optim_frame_free. */
FG_API fg_status fg_optim_frame_parse(const uint8_t *data, size_t len, fg_oframe **out);

/* The same, reading one frame from the front of data and reporting its length in *used
 * (for streams that carry more after it). */
FG_API fg_status fg_optim_frame_parse_prefix(const uint8_t *data, size_t len, size_t *used, fg_oframe **out);

/* Frees a frame from fg_optim_frame_parse and everything it owns. NULL-safe. */
FG_API void fg_optim_frame_free(fg_oframe *f);

/* Writes f in the exact wire layout into a malloc'd buffer (*out, *out_len; free()).
 * Validates first and writes nothing on failure (FG_ERR_INVALID_ARG for a layout the
 * frame cannot hold: a buffer whose count does not follow from the dims, a version too
 * low for its dtypes or masters, APOLLO v4 or non-f32 state, a Muon frame without an
 * AdamW fallback; FG_ERR_BAD_STRING / FG_ERR_DUPLICATE for names; FG_ERR_RANGE for
 * header bytes outside their range). Auto-names (`param<i>`) are the caller's business. */
FG_API fg_status fg_optim_frame_serialize(const fg_oframe *f, uint8_t **out, size_t *out_len);

/* Number of state buffers a slot of this kind holds (2, 1, 1, 2 for AdamW/Adam, SGD, Muon,
 * APOLLO; 0 for sets and FZT1). */
FG_API int fg_optim_frame_bufs_per_slot(fg_oframe_kind kind);

/* What a live optimizer expects of one slot. */
typedef struct fg_oframe_expect {
  const char *name;
  size_t name_len;
  uint64_t rows, cols;
  fg_oframe_dtype dtypes[2]; /* of each state buffer (SGD without momentum: F32) */
  bool is16;                 /* the param is f16/bf16 (so it keeps an f32 master) */
} fg_oframe_expect;

/* Matches a parsed slot list (f->slots, or f->fallback when fallback is true) to the
 * expected slots by name, in record order, with Fucina's errors: a record whose name is
 * not expected -> FG_ERR_FRAME_UNKNOWN_NAME; a name seen twice -> FG_ERR_DUPLICATE; other
 * dims -> FG_ERR_FRAME_SHAPE_MISMATCH; a stored dtype other than expected, or a master for
 * an f32 param -> FG_ERR_FRAME_DTYPE_MISMATCH; an expected slot without a record ->
 * FG_ERR_FRAME_MISSING_ENTRY. On success map[i] (n_expect entries, may be NULL) is the
 * index of the record for expected slot i. A v5 record without a master for a 16-bit param
 * is accepted (the loader re-widens the master from the param). */
FG_API fg_status fg_optim_frame_match(const fg_oframe *f, bool fallback, const fg_oframe_expect *expect,
                                      size_t n_expect, size_t *map);

/* Checks that a parsed frame has the kind and header config of `want` (only kind and that
 * kind's config fields are read): another kind -> FG_ERR_BAD_MAGIC, another header value ->
 * FG_ERR_FRAME_CONFIG_MISMATCH. */
FG_API fg_status fg_optim_frame_check_header(const fg_oframe *f, const fg_oframe *want);

#ifdef __cplusplus
}
#endif
#endif
