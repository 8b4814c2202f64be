/* Status codes and the thread-local last-error message.
 *
 * Every fallible function returns fg_status; FG_OK is 0. On failure the function has
 * left no partial state behind, and fg_last_error() holds one line naming the file,
 * tensor, offset and what was expected versus found. */
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
  FG_ERR_INVALID_ARG,      /* a caller passed a value outside the contract */
  FG_ERR_NOMEM,            /* host allocation failed */
  FG_ERR_IO,               /* open/read/write/rename/mmap failed (errno in the message) */
  FG_ERR_NOT_FOUND,        /* a named key, tensor or file does not exist */
  FG_ERR_UNSUPPORTED,      /* valid input this build cannot handle */
  FG_ERR_OVERFLOW,         /* arithmetic on sizes or counts would overflow */
  FG_ERR_RANGE,            /* a value is outside the range its type allows */
  FG_ERR_TYPE,             /* a value has a different type than asked for */
  FG_ERR_NONFINITE,        /* NaN or Inf where only finite values are accepted */
  FG_ERR_STATE,            /* call out of order (e.g. writing after finish) */
  /* devices */
  FG_ERR_NO_DEVICE,        /* the device asked for is not present */
  FG_ERR_DEVICE,           /* a device runtime call failed */
  FG_ERR_DEVICE_NOMEM,     /* device allocation failed */
  /* container formats: shared */
  FG_ERR_TRUNCATED,        /* the input ends before a structure it announces */
  FG_ERR_BAD_MAGIC,
  FG_ERR_BAD_VERSION,
  FG_ERR_BAD_DTYPE,        /* unknown or removed tensor type */
  FG_ERR_BAD_SHAPE,        /* dims count, zero/negative dims, products that overflow */
  FG_ERR_BAD_ALIGNMENT,
  FG_ERR_BAD_OFFSET,       /* tensor data misplaced, overlapping or past the end */
  FG_ERR_DUPLICATE,        /* duplicate key or tensor name */
  FG_ERR_BAD_VALUE_TYPE,   /* unknown GGUF metadata value type, nested arrays */
  FG_ERR_BAD_STRING,       /* string length past the end, or not UTF-8 */
  /* safetensors validation classes (upstream SafeTensorError) */
  FG_ERR_HEADER_TOO_SMALL,
  FG_ERR_HEADER_TOO_LARGE,
  FG_ERR_INVALID_HEADER_START,
  FG_ERR_HEADER_NOT_UTF8,
  FG_ERR_INVALID_JSON,
  FG_ERR_INVALID_OFFSET,   /* offsets not contiguous, ascending, covering the buffer */
  FG_ERR_TENSOR_INVALID_INFO, /* byte length != dtype x shape */
  FG_ERR_METADATA_NOT_STRING,
  FG_ERR_MISALIGNED_SLICE,
  /* quantization */
  FG_ERR_BAD_ROW,          /* row length not a multiple of the block, or slice size mismatch */
  /* safetensors, continued */
  FG_ERR_INVALID_HEADER_LENGTH, /* 8 + header length runs past the end of the input */
  FG_ERR_INCOMPLETE_BUFFER,     /* data section not covered exactly (short file or trailing bytes) */
  FG_STATUS_COUNT
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
