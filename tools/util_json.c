#include "util_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define EXACT_DOUBLE (1ull << 53)

cJSON *fg_cli_json_u64(uint64_t v) {
  if (v <= EXACT_DOUBLE) return cJSON_CreateNumber((double)v);
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return cJSON_CreateRaw(buf);
}

cJSON *fg_cli_json_i64(int64_t v) {
  if (v <= (int64_t)EXACT_DOUBLE && v >= -(int64_t)EXACT_DOUBLE) return cJSON_CreateNumber((double)v);
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRId64, v);
  return cJSON_CreateRaw(buf);
}

/* Length of the valid UTF-8 sequence at s (0 when invalid). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
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

cJSON *fg_cli_json_bytes(const char *s, size_t len) {
  /* worst case: every byte becomes \u00xx (6) or U+FFFD (3 bytes) */
  if (len > (SIZE_MAX - 3) / 6) return NULL;
  char *o = malloc(len * 6 + 3);
  if (!o) return NULL;
  size_t k = 0;
  o[k++] = '"';
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    unsigned char c = u[i];
    if (c == '"' || c == '\\') {
      o[k++] = '\\';
      o[k++] = (char)c;
      i++;
    } else if (c < 0x20 || c == 0x7F) {
      k += (size_t)snprintf(o + k, 7, "\\u%04x", c);
      i++;
    } else {
      size_t q = utf8_seq(u + i, len - i);
      if (!q) {
        o[k++] = (char)0xEF;
        o[k++] = (char)0xBF;
        o[k++] = (char)0xBD;
        i++;
      } else {
        for (size_t j = 0; j < q; j++) o[k++] = (char)u[i + j];
        i += q;
      }
    }
  }
  o[k++] = '"';
  o[k] = '\0';
  cJSON *r = cJSON_CreateRaw(o);
  free(o);
  return r;
}
