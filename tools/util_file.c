#include "util_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fg_status read_stream(FILE *f, const char *path, size_t max, uint8_t **out, size_t *len);

/* Read in chunks rather than sized by stat: logs and pipes grow or have no size. */
fg_status fg_cli_read_file(const char *path, size_t max, uint8_t **out, size_t *len) {
  *out = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return fg_fail(FG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  fg_status s = read_stream(f, path, max, out, len);
  fclose(f);
  return s;
}

fg_status fg_cli_read_input(const char *path, size_t max, uint8_t **out, size_t *len) {
  if (strcmp(path, "-") != 0) return fg_cli_read_file(path, max, out, len);
  *out = NULL;
  *len = 0;
  return read_stream(stdin, "standard input", max, out, len);
}

static fg_status read_stream(FILE *f, const char *path, size_t max, uint8_t **out, size_t *len) {
  uint8_t *buf = NULL, tmp[65536];
  size_t n = 0, cap = 0, k;
  fg_status s = FG_OK;
  while (s == FG_OK && (k = fread(tmp, 1, sizeof tmp, f)) > 0) {
    if (max && n + k > max) {
      s = fg_fail(FG_ERR_INVALID_ARG, "%s: larger than the %zu bytes expected of it", path, max);
      break;
    }
    if (n + k + 1 > cap) {
      cap = 2 * (n + k + 1);
      uint8_t *nb = realloc(buf, cap);
      if (!nb) {
        s = fg_fail(FG_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, n + k);
        break;
      }
      buf = nb;
    }
    memcpy(buf + n, tmp, k);
    n += k;
  }
  if (s == FG_OK && ferror(f)) s = fg_fail(FG_ERR_IO, "%s: read error", path);
  if (s == FG_OK && !buf && !(buf = malloc(1))) s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  if (s) {
    free(buf);
    return s;
  }
  buf[n] = 0;
  *out = buf;
  *len = n;
  return FG_OK;
}
