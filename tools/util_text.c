#include "util_text.h"

#include <string.h>

size_t fg_cli_utf8_seq(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c >= 0xE0 && c <= 0xEF) need = 2, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) need = 3, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (n <= need || s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k <= need; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  return need + 1;
}

/* Length of the sequence at s that may be shown as it is, 0 when the byte at s must be
 * escaped (control byte, C1 control, or not valid UTF-8). */
static size_t shown_seq(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return s[0] < 0x20 || s[0] == 0x7F ? 0 : 1;
  if (s[0] == 0xC2 && n > 1 && s[1] <= 0x9F) return 0; /* U+0080..U+009F: C1 controls (CSI is U+009B) */
  return fg_cli_utf8_seq(s, n);
}

/* Calls emit(piece, len, user) for each shown piece (a character or an escape); returns
 * the number of pieces. */
typedef int (*emit_fn)(const char *piece, size_t len, void *user);

static int walk(const char *s, size_t n, emit_fn emit, void *user) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *u = (const unsigned char *)s;
  int pieces = 0;
  for (size_t i = 0; i < n;) {
    size_t q = shown_seq(u + i, n - i);
    if (q) {
      if (emit(s + i, q, user)) break;
      i += q;
    } else {
      char e[4] = {'\\', 'x', hex[u[i] >> 4], hex[u[i] & 15]};
      if (emit(e, 4, user)) break;
      i++;
    }
    pieces++;
  }
  return pieces;
}

static int emit_file(const char *piece, size_t len, void *user) {
  fwrite(piece, 1, len, (FILE *)user);
  return 0;
}

void fg_cli_put_escaped(FILE *f, const char *s, size_t n, int width) {
  int shown = s ? walk(s, n, emit_file, f) : 0;
  for (; shown < width; shown++) fputc(' ', f);
}

void fg_cli_puts_escaped(FILE *f, const char *s, int width) { fg_cli_put_escaped(f, s, s ? strlen(s) : 0, width); }

typedef struct sink {
  char *dst;
  size_t cap, len;
} sink;

static int emit_buf(const char *piece, size_t len, void *user) {
  sink *k = user;
  if (k->len + len >= k->cap) return 1;
  memcpy(k->dst + k->len, piece, len);
  k->len += len;
  return 0;
}

size_t fg_cli_escape_into(char *dst, size_t cap, const char *s, size_t n) {
  if (!cap) return 0;
  sink k = {dst, cap, 0};
  if (s) walk(s, n, emit_buf, &k);
  dst[k.len] = '\0';
  return k.len;
}
