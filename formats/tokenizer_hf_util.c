/* What the tokenizer.json pipeline's steps share: the word list they rewrite, regexes and
 * {"String"|"Regex"} patterns, and the Unicode classes `tokenizers` tests with Rust's char
 * methods. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "formats/tokenizer_hf_internal.h"

static fg_status grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return FG_OK;
  size_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * size);
  if (!q) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  *p = q;
  *cap = c;
  return FG_OK;
}

fg_status fg_hf_list_push(void **v, size_t *n, size_t *cap, size_t size, void **slot) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 4;
    void *q = realloc(*v, c * size);
    if (!q) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    *v = q;
    *cap = c;
  }
  *slot = (char *)*v + (*n)++ * size;
  memset(*slot, 0, size);
  return FG_OK;
}

fg_status fg_hf_words_push(fg_hf_words *ws, const char *s, size_t n, bool first) {
  fg_status st = grow((void **)&ws->buf, &ws->cap, ws->len + n + 1, 1);
  if (!st) st = grow((void **)&ws->w, &ws->capw, ws->nw + 1, sizeof *ws->w);
  if (st) return st;
  if (n) memmove(ws->buf + ws->len, s, n);
  ws->w[ws->nw].off = ws->len;
  ws->w[ws->nw].n = n;
  ws->w[ws->nw].first = first;
  ws->nw++;
  ws->len += n;
  return FG_OK;
}

fg_status fg_hf_words_extend(fg_hf_words *ws, const char *s, size_t n) {
  /* Only the last word grows, so its bytes are the buffer's tail. */
  fg_status st = grow((void **)&ws->buf, &ws->cap, ws->len + n + 1, 1);
  if (st) return st;
  if (n) memmove(ws->buf + ws->len, s, n);
  ws->len += n;
  ws->w[ws->nw - 1].n += n;
  return FG_OK;
}

void fg_hf_words_clear(fg_hf_words *ws) { ws->len = ws->nw = 0; }

void fg_hf_words_free(fg_hf_words *ws) {
  free(ws->buf);
  free(ws->w);
  memset(ws, 0, sizeof *ws);
}

#define WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

/* \s and \S spelled as Unicode White_Space, which is Oniguruma's \s (PCRE2's also takes
 * U+180E, which Unicode stopped calling a space in 6.3); \S inside a class is left alone. */
static char *spell_spaces(const char *re) {
  size_t n = strlen(re), cap = n * (sizeof WS + 4) + 1, k = 0; /* each \\s may become the class */
  char *o = malloc(cap);
  if (!o) return NULL;
  bool in_class = false;
  for (size_t i = 0; i < n; i++) {
    if (re[i] == '\\' && i + 1 < n) {
      char c = re[i + 1];
      const char *rep = c == 's' ? (in_class ? WS : "[" WS "]") : c == 'S' && !in_class ? "[^" WS "]" : NULL;
      if (rep) {
        size_t l = strlen(rep);
        memcpy(o + k, rep, l);
        k += l;
      } else {
        o[k++] = re[i];
        o[k++] = c;
      }
      i++;
      continue;
    }
    if (re[i] == '[' && !in_class) in_class = true;
    else if (re[i] == ']' && in_class) in_class = false;
    o[k++] = re[i];
  }
  o[k] = 0;
  return o;
}

fg_status fg_hf_regex(const char *file, const char *where, const char *re_in, pcre2_code **out) {
  int err;
  PCRE2_SIZE at = 0;
  char *re = spell_spaces(re_in);
  if (!re) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  /* UCP: \w, \d and the POSIX classes are Unicode's, as in Oniguruma, which `tokenizers` runs. */
  pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
                                &err, &at, NULL);
  free(re);
  if (!c) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: %s regex \"%.200s\" does not compile (%s)", file, where, re_in,
                   (const char *)msg);
  }
  (void)pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);
  *out = c;
  return FG_OK;
}

fg_status fg_hf_pattern_read(const char *file, const char *where, const cJSON *o, fg_hf_pattern *p) {
  memset(p, 0, sizeof *p);
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "String"), *r = cJSON_GetObjectItemCaseSensitive(o, "Regex");
  if (cJSON_IsString(s)) {
    p->lit_n = strlen(s->valuestring);
    if (!p->lit_n) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.String is empty", file, where);
    if (!(p->lit = strdup(s->valuestring))) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    return FG_OK;
  }
  if (cJSON_IsString(r)) return fg_hf_regex(file, where, r->valuestring, &p->re);
  return fg_fail(FG_ERR_INVALID_ARG, "%s: %s is neither {\"String\": ...} nor {\"Regex\": ...}", file, where);
}

void fg_hf_pattern_free(fg_hf_pattern *p) {
  pcre2_code_free(p->re);
  free(p->lit);
}

bool fg_hf_pattern_next(const fg_hf_pattern *p, pcre2_match_data *md, const char *s, size_t n, size_t pos, size_t *a,
                        size_t *b) {
  if (!p->re) {
    for (size_t i = pos; i + p->lit_n <= n; i++)
      if (memcmp(s + i, p->lit, p->lit_n) == 0) {
        *a = i;
        *b = i + p->lit_n;
        return true;
      }
    return false;
  }
  for (;;) {
    if (pos > n) return false;
    int rc = pcre2_match(p->re, (PCRE2_SPTR)s, n, pos, 0, md, NULL);
    if (rc < 0) return false;
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    if (ov[1] > ov[0]) {
      *a = ov[0];
      *b = ov[1];
      return true;
    }
    /* An empty match cuts nothing: look again one character on. */
    size_t k = ov[0] + 1;
    while (k < n && ((unsigned char)s[k] & 0xC0) == 0x80) k++;
    pos = k;
  }
}

bool fg_hf_is_whitespace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
