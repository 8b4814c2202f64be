/* Status codes and the thread-local last-error message.
 *
 * Every fallible function returns fg_status; FG_OK is 0. On failure the function has
 * left no partial state behind, and fg_last_error() holds one line naming the file,
 * tensor, offset and what was expected versus found.
 *
 * Stability: every code has an explicit number, grouped by range (generic 1-19, devices
 * 20-39, container formats 40-59, safetensors validation classes 60-79, quantization
 * 80-99, optimizer frames 100-119). Once released a number never changes meaning and is
 * never reused; new codes are appended at the end of their group. Callers must treat any
 * nonzero value, unknown ones included, as an error (fg_status_name says "FG_ERR_UNKNOWN"
 * for those).
 *
 * Thread safety: every function here may be called from any thread. The last-error
 * message is thread-local: a failure on one thread never changes another's message. */
#ifndef FORGIA_STATUS_H
#define FORGIA_STATUS_H

#include <stdarg.h>

#include "forgia/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_status {
  FG_OK = 0,
  /* generic */
  FG_ERR_INVALID_ARG = 1,         /* a caller passed a value outside the contract */
  FG_ERR_NOMEM = 2,               /* host allocation failed */
  FG_ERR_IO = 3,                  /* open/read/write/rename/mmap failed (errno in the message) */
  FG_ERR_NOT_FOUND = 4,           /* a named key, tensor or file does not exist */
  FG_ERR_UNSUPPORTED = 5,         /* valid input this build cannot handle */
  FG_ERR_OVERFLOW = 6,            /* arithmetic on sizes or counts would overflow */
  FG_ERR_RANGE = 7,               /* a value is outside the range its type allows */
  FG_ERR_TYPE = 8,                /* a value has a different type than asked for */
  FG_ERR_NONFINITE = 9,           /* NaN or Inf where only finite values are accepted */
  FG_ERR_STATE = 10,              /* call out of order (e.g. writing after finish) */
  /* devices */
  FG_ERR_NO_DEVICE = 20,          /* the device asked for is not present */
  FG_ERR_DEVICE = 21,             /* a device runtime call failed */
  FG_ERR_DEVICE_NOMEM = 22,       /* device allocation failed */
  /* container formats: shared */
  FG_ERR_TRUNCATED = 40,          /* the input ends before a structure it announces */
  FG_ERR_BAD_MAGIC = 41,
  FG_ERR_BAD_VERSION = 42,
  FG_ERR_BAD_DTYPE = 43,          /* unknown or removed tensor type */
  FG_ERR_BAD_SHAPE = 44,          /* dims count, zero/negative dims, products that overflow */
  FG_ERR_BAD_ALIGNMENT = 45,
  FG_ERR_BAD_OFFSET = 46,         /* tensor data misplaced, overlapping or past the end */
  FG_ERR_DUPLICATE = 47,          /* duplicate key or tensor name */
  FG_ERR_BAD_VALUE_TYPE = 48,     /* unknown GGUF metadata value type, nested arrays */
  FG_ERR_BAD_STRING = 49,         /* string length past the end, or not UTF-8 */
  /* safetensors validation classes (upstream SafeTensorError) */
  FG_ERR_HEADER_TOO_SMALL = 60,
  FG_ERR_HEADER_TOO_LARGE = 61,
  FG_ERR_INVALID_HEADER_START = 62,
  FG_ERR_HEADER_NOT_UTF8 = 63,
  FG_ERR_INVALID_JSON = 64,
  FG_ERR_INVALID_OFFSET = 65,     /* offsets not contiguous, ascending, covering the buffer */
  FG_ERR_TENSOR_INVALID_INFO = 66, /* byte length != dtype x shape */
  FG_ERR_METADATA_NOT_STRING = 67,
  FG_ERR_MISALIGNED_SLICE = 68,
  FG_ERR_INVALID_HEADER_LENGTH = 69, /* 8 + header length runs past the end of the input */
  FG_ERR_INCOMPLETE_BUFFER = 70,  /* data section not covered exactly (short file or trailing bytes) */
  /* quantization */
  FG_ERR_BAD_ROW = 80,            /* row length not a multiple of the block, or slice size mismatch */
  /* optimizer frames (Fucina's Checkpoint* error classes; see forgia/optim_frame.h) */
  FG_ERR_FRAME_UNKNOWN_NAME = 100,    /* a slot record names no registered slot */
  FG_ERR_FRAME_MISSING_ENTRY = 101,   /* a registered slot has no record */
  FG_ERR_FRAME_SHAPE_MISMATCH = 102,  /* dims or member count differ from the live optimizer */
  FG_ERR_FRAME_CONFIG_MISMATCH = 103, /* a structural config field differs */
  FG_ERR_FRAME_DTYPE_MISMATCH = 104,  /* stored state dtype or master presence differs */
  FG_ERR_FRAME_TRAILING_BYTES = 105,  /* bytes after the last frame */
  /* LoRA */
  FG_ERR_QUANTIZED_BASE = 120,       /* a LoRA merge into a block-quantized base (merge into f32/f16/bf16, then quantize) */
} fg_status;

/* Stable upper-case name of a status, e.g. "FG_ERR_TRUNCATED". Never NULL. */
FG_API const char *fg_status_name(fg_status s);

/* The message of the last failure on this thread ("" when none). Valid until the next
 * forgia call on this thread. */
FG_API const char *fg_last_error(void);

/* Records a message for this thread and returns s, so that callers can write
 * `return fg_fail(FG_ERR_IO, "open %s: %s", path, strerror(errno));`. */
FG_API fg_status fg_fail(fg_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
FG_API fg_status fg_failv(fg_status s, const char *fmt, va_list ap);

/* Prefixes the current message with context ("file.gguf: "), keeping the status. */
FG_API fg_status fg_fail_prefix(fg_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

FG_API void fg_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
