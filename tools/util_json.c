#include "util_json.h"
#include "util_report.h"
#include "util_text.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

cJSON *fg_cli_json_f64(double v) {
  /* cJSON prints a double equal to its int value with %d, which drops the sign of -0 */
  if (v == 0 && signbit(v)) return cJSON_CreateRaw("-0.0");
  return cJSON_CreateNumber(v);
}

/* The quoted JSON string of len bytes (malloc'd, NUL-terminated), or NULL. */
static char *quote(const char *s, size_t len) {
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
      size_t q = fg_cli_utf8_seq(u + i, len - i);
      if (q == 2 && c == 0xC2 && u[i + 1] <= 0x9F) {
        /* U+0080..U+009F: C1 controls, which some terminals obey; JSON allows them escaped */
        k += (size_t)snprintf(o + k, 7, "\\u%04x", u[i + 1]);
        i += 2;
      } else if (!q) {
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
  return o;
}

cJSON *fg_cli_json_bytes(const char *s, size_t len) {
  char *o = quote(s, len);
  if (!o) return NULL;
  cJSON *r = cJSON_CreateRaw(o);
  free(o);
  return r;
}

/* ---- objects with byte-string keys ---- */

static void put(fg_cli_json_obj *o, const char *s, size_t n) {
  if (o->failed) return;
  if (o->cap - o->len <= n) {
    size_t cap = o->cap ? o->cap : 256;
    while (cap - o->len <= n) {
      if (cap > SIZE_MAX / 2) {
        o->failed = true;
        return;
      }
      cap *= 2;
    }
    char *b = realloc(o->buf, cap);
    if (!b) {
      o->failed = true;
      return;
    }
    o->buf = b;
    o->cap = cap;
  }
  memcpy(o->buf + o->len, s, n);
  o->len += n;
  o->buf[o->len] = '\0';
}

static void puts_(fg_cli_json_obj *o, const char *s) { put(o, s, strlen(s)); }

void fg_cli_json_obj_add(fg_cli_json_obj *o, const char *key, size_t key_len, cJSON *value) {
  char *k = value ? quote(key, key_len) : NULL;
  char *v = k ? cJSON_Print(value) : NULL;
  cJSON_Delete(value);
  if (!v) {
    o->failed = true;
  } else {
    puts_(o, o->n ? ",\n\t\t" : "{\n\t\t");
    puts_(o, k);
    puts_(o, ":\t");
    /* members sit two levels deep: indent the value's own lines by two more tabs */
    for (const char *p = v; *p; p++) {
      put(o, p, 1);
      if (*p == '\n') puts_(o, "\t\t");
    }
    o->n++;
  }
  free(k);
  cJSON_free(v);
}

cJSON *fg_cli_json_obj_finish(fg_cli_json_obj *o) {
  puts_(o, o->n ? "\n\t}" : "{\n\t}");
  cJSON *r = o->failed ? NULL : cJSON_CreateRaw(o->buf);
  free(o->buf);
  memset(o, 0, sizeof *o);
  return r;
}

int fg_cli_json_print(const char *cmd, const char *path, cJSON *root) {
  char *text = root ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text) {
    fg_cli_fail(cmd, path, "out of memory building JSON");
    return 1;
  }
  fputs(text, stdout);
  fputc('\n', stdout);
  free(text);
  return 0;
}
