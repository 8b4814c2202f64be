#include "forgia/status.h"

#include <stdio.h>
#include <string.h>

#define FG_ERR_CAP 1024

static _Thread_local char fg_err_buf[FG_ERR_CAP];

/* A switch, not a table: the codes are sparse (grouped ranges, see status.h). */
const char *fg_status_name(fg_status s) {
#define FG_NAME(x) \
  case x:          \
    return #x
  switch (s) {
    FG_NAME(FG_OK);
    FG_NAME(FG_ERR_INVALID_ARG);
    FG_NAME(FG_ERR_NOMEM);
    FG_NAME(FG_ERR_IO);
    FG_NAME(FG_ERR_NOT_FOUND);
    FG_NAME(FG_ERR_UNSUPPORTED);
    FG_NAME(FG_ERR_OVERFLOW);
    FG_NAME(FG_ERR_RANGE);
    FG_NAME(FG_ERR_TYPE);
    FG_NAME(FG_ERR_NONFINITE);
    FG_NAME(FG_ERR_STATE);
    FG_NAME(FG_ERR_NO_DEVICE);
    FG_NAME(FG_ERR_DEVICE);
    FG_NAME(FG_ERR_DEVICE_NOMEM);
    FG_NAME(FG_ERR_TRUNCATED);
    FG_NAME(FG_ERR_BAD_MAGIC);
    FG_NAME(FG_ERR_BAD_VERSION);
    FG_NAME(FG_ERR_BAD_DTYPE);
    FG_NAME(FG_ERR_BAD_SHAPE);
    FG_NAME(FG_ERR_BAD_ALIGNMENT);
    FG_NAME(FG_ERR_BAD_OFFSET);
    FG_NAME(FG_ERR_DUPLICATE);
    FG_NAME(FG_ERR_BAD_VALUE_TYPE);
    FG_NAME(FG_ERR_BAD_STRING);
    FG_NAME(FG_ERR_HEADER_TOO_SMALL);
    FG_NAME(FG_ERR_HEADER_TOO_LARGE);
    FG_NAME(FG_ERR_INVALID_HEADER_START);
    FG_NAME(FG_ERR_HEADER_NOT_UTF8);
    FG_NAME(FG_ERR_INVALID_JSON);
    FG_NAME(FG_ERR_INVALID_OFFSET);
    FG_NAME(FG_ERR_TENSOR_INVALID_INFO);
    FG_NAME(FG_ERR_METADATA_NOT_STRING);
    FG_NAME(FG_ERR_MISALIGNED_SLICE);
    FG_NAME(FG_ERR_BAD_ROW);
    FG_NAME(FG_ERR_INVALID_HEADER_LENGTH);
    FG_NAME(FG_ERR_INCOMPLETE_BUFFER);
    FG_NAME(FG_ERR_FRAME_UNKNOWN_NAME);
    FG_NAME(FG_ERR_FRAME_MISSING_ENTRY);
    FG_NAME(FG_ERR_FRAME_SHAPE_MISMATCH);
    FG_NAME(FG_ERR_FRAME_CONFIG_MISMATCH);
    FG_NAME(FG_ERR_FRAME_DTYPE_MISMATCH);
    FG_NAME(FG_ERR_FRAME_TRAILING_BYTES);
    FG_NAME(FG_ERR_QUANTIZED_BASE);
  }
#undef FG_NAME
  return "FG_ERR_UNKNOWN";
}

const char *fg_last_error(void) { return fg_err_buf; }

void fg_clear_error(void) { fg_err_buf[0] = '\0'; }

fg_status fg_failv(fg_status s, const char *fmt, va_list ap) {
  vsnprintf(fg_err_buf, FG_ERR_CAP, fmt, ap);
  return s;
}

fg_status fg_fail(fg_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fg_failv(s, fmt, ap);
  va_end(ap);
  return s;
}

fg_status fg_fail_prefix(fg_status s, const char *fmt, ...) {
  char prefix[FG_ERR_CAP], old[FG_ERR_CAP];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, fg_err_buf, FG_ERR_CAP);
  size_t lp = strnlen(prefix, FG_ERR_CAP - 1), lo = strnlen(old, FG_ERR_CAP - 1);
  if (lp + lo > FG_ERR_CAP - 1) lo = FG_ERR_CAP - 1 - lp;
  memcpy(fg_err_buf, prefix, lp);
  memcpy(fg_err_buf + lp, old, lo);
  fg_err_buf[lp + lo] = '\0';
  return s;
}
