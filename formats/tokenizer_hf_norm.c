/* tokenizer.json normalizers: Sequence (read flat), NFC, NFD, NFKC, NFKD, Lowercase, Strip,
 * StripAccents, Replace, Prepend and BertNormalizer, each as `tokenizers` documents it. The
 * Unicode forms are utf8proc's (the library's NFC already is); text that is not valid UTF-8
 * (which a Python str never holds) goes through a step unchanged. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/text.h"
#include "formats/tokenizer_hf_internal.h"

typedef enum { N_FORM, N_LOWER, N_STRIP, N_ACCENTS, N_REPLACE, N_PREPEND, N_BERT } norm_kind;

struct fg_hf_norm {
  norm_kind kind;
  int form;                                   /* N_FORM: utf8proc options */
  bool left, right;                           /* Strip */
  bool clean, chinese, accents, lower;        /* BertNormalizer */
  bool mn_only;                               /* N_ACCENTS inside BertNormalizer */
  fg_hf_pattern pat;                          /* Replace */
  char *content;                              /* Replace, Prepend */
  size_t content_n;
};

static bool flag(const cJSON *o, const char *key, bool dflt) {
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsBool(b) ? cJSON_IsTrue(b) : dflt;
}

static fg_status read_one(const char *file, const char *where, const cJSON *o, fg_hf_norm **v, size_t *n, size_t *cap);

static fg_status read_one(const char *file, const char *where, const cJSON *o, fg_hf_norm **v, size_t *n, size_t *cap) {
  const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
  if (!cJSON_IsString(ty)) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s has no \"type\" string", file, where);
  const char *t = ty->valuestring;
  char sub[160];
  if (strcmp(t, "Sequence") == 0) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "normalizers"), *e;
    if (!cJSON_IsArray(a)) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.normalizers is not an array", file, where);
    int i = 0;
    cJSON_ArrayForEach(e, a) {
      snprintf(sub, sizeof sub, "%s.normalizers[%d]", where, i++);
      fg_status s = read_one(file, sub, e, v, n, cap);
      if (s) return s;
    }
    return FG_OK;
  }
  fg_hf_norm *x = NULL;
  fg_status s = fg_hf_list_push((void **)v, n, cap, sizeof **v, (void **)&x);
  if (s) return s;
  if (strcmp(t, "NFC") == 0) x->kind = N_FORM, x->form = UTF8PROC_STABLE | UTF8PROC_COMPOSE;
  else if (strcmp(t, "NFD") == 0) x->kind = N_FORM, x->form = UTF8PROC_STABLE | UTF8PROC_DECOMPOSE;
  else if (strcmp(t, "NFKC") == 0) x->kind = N_FORM, x->form = UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
  else if (strcmp(t, "NFKD") == 0) x->kind = N_FORM, x->form = UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
  else if (strcmp(t, "Lowercase") == 0) x->kind = N_LOWER;
  else if (strcmp(t, "StripAccents") == 0) x->kind = N_ACCENTS;
  else if (strcmp(t, "Strip") == 0) x->kind = N_STRIP, x->left = flag(o, "strip_left", true), x->right = flag(o, "strip_right", true);
  else if (strcmp(t, "BertNormalizer") == 0) {
    x->kind = N_BERT;
    x->clean = flag(o, "clean_text", true);
    x->chinese = flag(o, "handle_chinese_chars", true);
    x->lower = flag(o, "lowercase", true);
    x->accents = flag(o, "strip_accents", x->lower); /* null: follows lowercase */
  } else if (strcmp(t, "Replace") == 0 || strcmp(t, "Prepend") == 0) {
    bool rep = t[0] == 'R';
    x->kind = rep ? N_REPLACE : N_PREPEND;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, rep ? "content" : "prepend");
    if (!cJSON_IsString(c))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.%s is not a string", file, where, rep ? "content" : "prepend");
    if (!(x->content = strdup(c->valuestring))) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    x->content_n = strlen(x->content);
    snprintf(sub, sizeof sub, "%s.pattern", where);
    if (rep && (s = fg_hf_pattern_read(file, sub, cJSON_GetObjectItemCaseSensitive(o, "pattern"), &x->pat))) return s;
  } else {
    (*n)--;
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: %s.type \"%s\" is not supported", file, where, t);
  }
  return FG_OK;
}

fg_status fg_hf_norm_read(const char *file, const cJSON *o, fg_hf_norm **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!o || cJSON_IsNull(o)) return FG_OK;
  size_t cap = 0;
  fg_status s = read_one(file, "normalizer", o, out, n, &cap);
  if (s) {
    fg_hf_norm_free(*out, *n);
    *out = NULL;
    *n = 0;
  }
  return s;
}

void fg_hf_norm_free(fg_hf_norm *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) {
    fg_hf_pattern_free(&v[i].pat);
    free(v[i].content);
  }
  free(v);
}

/* A growing output string. */
typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
  if (n > PTRDIFF_MAX) b->oom = true;
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t c = b->cap ? b->cap : 64;
    while (c < b->n + n + 1) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) {
      b->oom = true;
      return;
    }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void put_cp(sbuf *b, uint32_t c) {
  char u[4];
  put(b, u, fg_utf8_put(c, u));
}

/* Rust's char::to_lowercase: the simple mapping, plus U+0130's two-character one. */
static void put_lower(sbuf *b, uint32_t c) {
  if (c == 0x130) {
    put(b, "i\xCC\x87", 3);
    return;
  }
  put_cp(b, fg_hf_lower(c));
}

/* CJK ideographs, as BERT's _is_chinese_char lists them. */
static bool is_cjk(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static fg_status form_run(int opts, const char *s, size_t n, sbuf *o) {
  utf8proc_uint8_t *r = NULL;
  utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &r, (utf8proc_option_t)opts);
  if (k == UTF8PROC_ERROR_NOMEM) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  if (k < 0) put(o, s, n);
  else put(o, (const char *)r, (size_t)k);
  free(r);
  return FG_OK;
}

/* A Unicode form, except that the code points `tokenizers`' older tables do not decompose
 * stay as they are: the runs between them are normalized on their own (such a code point is
 * a starter there, so nothing reorders or composes across it). */
static fg_status form_other(int opts, const char *s, size_t n, sbuf *o) {
  bool compat = (opts & UTF8PROC_COMPAT) != 0;
  size_t start = 0;
  for (size_t i = 0; i < n;) {
    uint32_t c;
    size_t l = fg_tok_utf8_get((const unsigned char *)s + i, n - i, &c);
    if (!l) {
      i++;
      continue;
    }
    if (fg_hf_form_keeps(c, compat)) {
      fg_status st = form_run(opts, s + start, i - start, o);
      if (st) return st;
      put(o, s + i, l);
      start = i + l;
    }
    i += l;
  }
  return form_run(opts, s + start, n - start, o);
}

/* ASCII is its own form in all four. Decomposing forms also take ASCII runs apart from the
 * rest: an ASCII character is a starter that decomposes to itself, so nothing reorders across
 * it; composing ones (NFC, NFKC) may join it with the mark after it, so they take mixed text
 * whole. */
static fg_status form(int opts, const char *s, size_t n, sbuf *o) {
  size_t a = 0;
  while (a < n && (unsigned char)s[a] < 0x80) a++;
  if (a == n) {
    put(o, s, n);
    return FG_OK;
  }
  if (opts & UTF8PROC_COMPOSE) return form_other(opts, s, n, o);
  fg_status st = FG_OK;
  for (size_t i = 0; i < n && !st;) {
    size_t j = i;
    if ((unsigned char)s[i] < 0x80) {
      while (j < n && (unsigned char)s[j] < 0x80) j++;
      put(o, s + i, j - i);
    } else {
      while (j < n && (unsigned char)s[j] >= 0x80) j++;
      st = form_other(opts, s + i, j - i, o);
    }
    i = j;
  }
  return st;
}

/* Per code point steps; an invalid byte is copied as it is. */
static void per_cp(const fg_hf_norm *x, const char *s, size_t n, sbuf *o) {
  for (size_t i = 0; i < n;) {
    if ((unsigned char)s[i] < 0x80 && x->kind != N_BERT) { /* no ASCII byte is a mark */
      size_t j = i;
      while (j < n && (unsigned char)s[j] < 0x80) j++;
      if (x->kind == N_LOWER) {
        for (; i < j; i++) {
          char c = (char)fg_hf_lower((unsigned char)s[i]); /* ASCII lower-cases to ASCII */
          put(o, &c, 1);
        }
      } else {
        put(o, s + i, j - i);
        i = j;
      }
      continue;
    }
    uint32_t c;
    size_t l = fg_tok_utf8_get((const unsigned char *)s + i, n - i, &c);
    if (!l) {
      put(o, s + i, 1);
      i++;
      continue;
    }
    i += l;
    if (x->kind == N_LOWER) {
      put_lower(o, c);
    } else if (x->kind == N_ACCENTS) {
      if (!fg_hf_is_mark(c, x->mn_only)) put_cp(o, c);
    } else { /* N_BERT's first pass: clean_text and the CJK spaces */
      if (x->clean && (c == 0 || c == 0xFFFD || fg_hf_is_control(c))) continue;
      if (x->clean && fg_hf_is_whitespace(c)) c = ' ';
      if (x->chinese && is_cjk(c)) {
        put(o, " ", 1);
        put_cp(o, c);
        put(o, " ", 1);
      } else {
        put_cp(o, c);
      }
    }
  }
}

static void bert_ascii(const fg_hf_norm *x, const char *s, size_t n, sbuf *o) {
  char b[256];
  for (size_t i = 0; i < n;) {
    size_t k = 0;
    for (; i < n && k < sizeof b; i++) {
      uint32_t c = (unsigned char)s[i];
      if (x->clean && (c == 0 || fg_hf_is_control(c))) continue;
      if (x->clean && fg_hf_is_whitespace(c)) c = ' ';
      b[k++] = (char)(x->lower ? fg_hf_lower(c) : c); /* ASCII lower-cases to ASCII */
    }
    put(o, b, k);
  }
}

/* BertNormalizer on text without ASCII: clean_text and the CJK spaces, NFD and the marks
 * dropped, lower case, pass after pass. */
static fg_status bert_other(const fg_hf_norm *x, const char *s, size_t n, sbuf *o) {
  fg_status st = FG_OK;
  sbuf t1 = {0}, t2 = {0};
  per_cp(x, s, n, &t1);
  const char *cur = t1.p ? t1.p : "";
  size_t cn = t1.n;
  if (x->accents) {
    fg_hf_norm acc = {.kind = N_ACCENTS, .mn_only = true};
    if (!(st = form(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, cur, cn, &t2))) {
      sbuf t3 = {0};
      per_cp(&acc, t2.p ? t2.p : "", t2.n, &t3);
      free(t2.p);
      t2 = t3;
      cur = t2.p ? t2.p : "";
      cn = t2.n;
    }
  }
  if (!st && x->lower) {
    fg_hf_norm low = {.kind = N_LOWER};
    per_cp(&low, cur, cn, o);
  } else if (!st) {
    put(o, cur, cn);
  }
  bool oom = t1.oom || t2.oom;
  free(t1.p);
  free(t2.p);
  return st ? st : oom ? fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory") : FG_OK;
}

static fg_status step(const fg_hf_norm *x, const char *s, size_t n, sbuf *o) {
  fg_status st = FG_OK;
  switch (x->kind) {
  case N_FORM:
    return form(x->form, s, n, o);
  case N_LOWER:
  case N_ACCENTS:
    per_cp(x, s, n, o);
    return FG_OK;
  case N_STRIP: {
    size_t a = 0, b = n;
    uint32_t c;
    size_t l;
    while (x->left && a < b && (l = fg_tok_utf8_get((const unsigned char *)s + a, b - a, &c)) && fg_hf_is_whitespace(c))
      a += l;
    while (x->right && b > a) {
      size_t k = b - 1;
      while (k > a && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
      if (!(l = fg_tok_utf8_get((const unsigned char *)s + k, b - k, &c)) || k + l != b || !fg_hf_is_whitespace(c)) break;
      b = k;
    }
    put(o, s + a, b - a);
    return FG_OK;
  }
  case N_PREPEND:
    if (n) put(o, x->content, x->content_n); /* nothing is prepended to nothing */
    put(o, s, n);
    return FG_OK;
  case N_REPLACE: {
    pcre2_match_data *md = x->pat.re ? pcre2_match_data_create_from_pattern(x->pat.re, NULL) : NULL;
    if (x->pat.re && !md) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    size_t pos = 0, a, b;
    while (fg_hf_pattern_next(&x->pat, md, s, n, pos, &a, &b)) {
      put(o, s + pos, a - pos);
      put(o, x->content, x->content_n);
      pos = b;
    }
    put(o, s + pos, n - pos);
    pcre2_match_data_free(md);
    return FG_OK;
  }
  case N_BERT:
    /* ASCII bytes, most of most text, take one pass: NFD, the accent strip and the CJK
     * spacing change none, and as starters they part the runs NFD works on, so the runs of
     * other characters are normalized on their own with the same result. */
    for (size_t i = 0; i < n && !st;) {
      size_t j = i;
      if ((unsigned char)s[i] < 0x80) {
        while (j < n && (unsigned char)s[j] < 0x80) j++;
        bert_ascii(x, s + i, j - i, o);
      } else {
        while (j < n && (unsigned char)s[j] >= 0x80) j++;
        st = bert_other(x, s + i, j - i, o);
      }
      i = j;
    }
    return st ? st : o->oom ? fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory") : FG_OK;
  }
  return FG_OK;
}

fg_status fg_hf_normalize(const fg_hf_norm *v, size_t n, const char *s, size_t len, char **out, size_t *out_n) {
  sbuf cur = {0};
  put(&cur, s, len);
  if (!cur.p && !cur.oom) put(&cur, "", 0), cur.p = cur.p ? cur.p : calloc(1, 1);
  for (size_t i = 0; i < n && !cur.oom && cur.p; i++) {
    sbuf next = {0};
    fg_status st = step(&v[i], cur.p, cur.n, &next);
    free(cur.p);
    if (st) {
      free(next.p);
      return st;
    }
    if (!next.p && !next.oom) next.p = calloc(1, 1);
    cur = next;
  }
  if (cur.oom || !cur.p) {
    free(cur.p);
    return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  }
  *out = cur.p;
  *out_n = cur.n;
  return FG_OK;
}
