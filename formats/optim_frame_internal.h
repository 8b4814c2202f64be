/* Shared pieces of the optimizer frame codec (formats/optim_frame_*.c). Internal.
 *
 * The layout rules live here once, so that the reader, the writer and the matcher cannot
 * disagree on a buffer's length: of_buf_count says how many values buffer b of a slot
 * holds, from the dims and the header alone. */
#ifndef FORGIA_FORMATS_OPTIM_FRAME_INTERNAL_H
#define FORGIA_FORMATS_OPTIM_FRAME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/optim_frame.h"

#define OF_MAX_NAME 65535u
/* The smallest slot record: u16 name length, one name byte, two u64 dims. Counts are
 * checked against remaining / this before any array is allocated. */
#define OF_MIN_SLOT 19u

/* A frame kind's row (formats/optim_frame_kinds.c): the public layout and the rules that
 * are code. */
typedef struct of_kind {
  fg_oframe_kind_desc d;
  /* Values held by state buffer b of slot s in list `fallback` (NULL: rows * cols). False
   * when the count overflows 64 bits. */
  bool (*buf_count)(const fg_oframe *f, bool fallback, const fg_oframe_slot *s, int b, uint64_t *count);
  /* A rule across header fields (NULL: none): false, with the reason in why (worded for the
   * writer when writing, else for the reader), when f's header breaks it. */
  bool (*header_rule)(const fg_oframe *f, bool writing, char *why, size_t len);
} of_kind;

/* The row of kind (NULL for an unknown kind), and the number of rows (kinds 0..count-1). */
const of_kind *of_kind_of(fg_oframe_kind kind);
size_t of_kind_count(void);

/* The magic of (kind, version), or NULL when that pair does not exist (APOLLO v4). */
const char *of_magic(fg_oframe_kind kind, int version);
const char *of_kind_name(fg_oframe_kind kind);

/* Values held by state buffer b of slot s in list `fallback` of a frame with this header.
 * Returns false when the count overflows 64 bits. */
bool of_buf_count(const fg_oframe *f, bool fallback, const fg_oframe_slot *s, int b, uint64_t *count);

static inline uint64_t of_dtype_size(fg_oframe_dtype d) { return d == FG_OFRAME_DTYPE_BF16 ? 2 : 4; }

/* Whether buffers carry a dtype tag: v4 on, except for kinds that keep f32 only. */
static inline bool of_tagged(fg_oframe_kind kind, int version) {
  const of_kind *k = of_kind_of(kind);
  return k && !k->d.untagged && version >= 4;
}

/* Header field h's value in f, widened, and its width on the wire in bytes. */
uint64_t of_field_get(const fg_oframe *f, const fg_oframe_field *h);
void of_field_set(fg_oframe *f, const fg_oframe_field *h, uint64_t v);
unsigned of_field_bytes(const fg_oframe_field *h);

/* Checks a name as Fucina's validateName does: 1..65535 bytes, no NUL, UTF-8. On failure
 * *why says what is wrong and *at the first offending byte. */
bool of_name_ok(const char *name, size_t len, const char **why, size_t *at);

/* Index of the first repeated name in a slot list, or -1 (the earlier index in *first). */
fg_status of_find_duplicate(const fg_oframe_slot *slots, size_t n, int64_t *dup, size_t *first);

/* Little-endian appender with one sticky out-of-memory flag. */
typedef struct of_out {
  uint8_t *p;
  size_t len, cap;
  bool oom;
} of_out;
void of_put(of_out *o, const void *src, size_t n);
void of_u8(of_out *o, uint8_t v);
void of_u16(of_out *o, uint16_t v);
void of_u32(of_out *o, uint32_t v);
void of_u64(of_out *o, uint64_t v);

/* Writer halves: validate (no output) and emit (only OOM can fail). Sets and FZT1 live in
 * optim_frame_set.c. */
fg_status of_validate(const fg_oframe *f, int depth);
void of_emit(of_out *o, const fg_oframe *f);
int of_pick_version(const fg_oframe *f);
fg_status of_validate_tensors(const fg_oframe *f);
void of_emit_set(of_out *o, const fg_oframe *f);
void of_emit_tensors(of_out *o, const fg_oframe *f);

/* Bounded reader over the input. */
typedef struct of_rd {
  const uint8_t *p;
  size_t len, off;
  const char *magic;  /* the frame being read ("FZA3", ...), for messages */
  const char *list;   /* "slot", "fallback slot", "tensor", "member", or NULL */
  size_t idx;         /* record index within list */
  const char *name;   /* the record's name once read (valid UTF-8), or NULL */
  size_t name_len;
} of_rd;

fg_status of_rd_fail(const of_rd *r, fg_status s, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Fails with FG_ERR_TRUNCATED unless n more bytes remain. */
fg_status of_need(of_rd *r, uint64_t n, const char *what);
uint8_t of_get_u8(of_rd *r);
uint16_t of_get_u16(of_rd *r);
uint32_t of_get_u32(of_rd *r);
uint64_t of_get_u64(of_rd *r);

fg_status of_parse_frame(of_rd *r, fg_oframe *f, bool allow_set);
fg_status of_parse_set(of_rd *r, fg_oframe *f);
fg_status of_parse_tensors(of_rd *r, fg_oframe *f);
void of_frame_clear(fg_oframe *f);

#endif
