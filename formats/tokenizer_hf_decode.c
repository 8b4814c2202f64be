/* tokenizer.json decoders: Sequence (read flat), ByteLevel, Metaspace, WordPiece, Replace,
 * ByteFallback, Fuse, Strip and BPEDecoder. Each rewrites the list of token texts, added
 * tokens included (as `tokenizers` passes them through the decoder too); decode joins what is
 * left. ByteLevel keeps the bytes as they are where `tokenizers` would put U+FFFD for an
 * invalid sequence: the C API hands back bytes, and a streaming decode needs them whole. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "formats/tokenizer_hf_internal.h"

typedef enum { D_BYTELEVEL, D_METASPACE, D_WORDPIECE, D_REPLACE, D_BYTEFALLBACK, D_FUSE, D_STRIP, D_BPE } dec_kind;

struct fg_hf_dec {
  dec_kind kind;
  bool cleanup, prepend;
  int start, stop;
  fg_hf_pattern pat;
  char *a; /* Metaspace replacement, WordPiece prefix, Replace content, Strip content, BPE suffix */
  size_t an;
};

static fg_status read_one(const char *file, const char *where, const cJSON *o, fg_hf_dec **v, size_t *n, size_t *cap) {
  const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
  if (!cJSON_IsString(ty)) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s has no \"type\" string", file, where);
  const char *t = ty->valuestring;
  char sub[160];
  fg_status s = FG_OK;
  if (strcmp(t, "Sequence") == 0) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "decoders"), *e;
    if (!cJSON_IsArray(arr)) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.decoders is not an array", file, where);
    int i = 0;
    cJSON_ArrayForEach(e, arr) {
      snprintf(sub, sizeof sub, "%s.decoders[%d]", where, i++);
      if ((s = read_one(file, sub, e, v, n, cap))) return s;
    }
    return FG_OK;
  }
  fg_hf_dec *x;
  if ((s = fg_hf_list_push((void **)v, n, cap, sizeof **v, (void **)&x))) return s;
  const char *key = NULL, *dflt = "";
  if (strcmp(t, "ByteLevel") == 0) x->kind = D_BYTELEVEL;
  else if (strcmp(t, "ByteFallback") == 0) x->kind = D_BYTEFALLBACK;
  else if (strcmp(t, "Fuse") == 0) x->kind = D_FUSE;
  else if (strcmp(t, "Metaspace") == 0) {
    x->kind = D_METASPACE, key = "replacement", dflt = "\xE2\x96\x81";
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "prepend_scheme");
    const cJSON *ap = cJSON_GetObjectItemCaseSensitive(o, "add_prefix_space");
    x->prepend = cJSON_IsString(sc) ? strcmp(sc->valuestring, "never") != 0 : !cJSON_IsFalse(ap);
  } else if (strcmp(t, "WordPiece") == 0) {
    x->kind = D_WORDPIECE, key = "prefix", dflt = "##";
    x->cleanup = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "cleanup"));
  } else if (strcmp(t, "BPEDecoder") == 0) {
    x->kind = D_BPE, key = "suffix", dflt = "</w>";
  } else if (strcmp(t, "Replace") == 0) {
    x->kind = D_REPLACE, key = "content";
    snprintf(sub, sizeof sub, "%s.pattern", where);
    if ((s = fg_hf_pattern_read(file, sub, cJSON_GetObjectItemCaseSensitive(o, "pattern"), &x->pat))) return s;
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, key)))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.content is not a string", file, where);
  } else if (strcmp(t, "Strip") == 0) {
    x->kind = D_STRIP, key = "content", dflt = " ";
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "start"), *b = cJSON_GetObjectItemCaseSensitive(o, "stop");
    if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || a->valuedouble < 0 || b->valuedouble < 0 || a->valuedouble > 1e6 ||
        b->valuedouble > 1e6)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.start and .stop must be counts", file, where);
    x->start = (int)a->valuedouble;
    x->stop = (int)b->valuedouble;
  } else {
    (*n)--;
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: %s.type \"%s\" is not supported", file, where, t);
  }
  if (key) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!(x->a = strdup(cJSON_IsString(c) ? c->valuestring : dflt))) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    x->an = strlen(x->a);
    if ((x->kind == D_STRIP || x->kind == D_METASPACE || x->kind == D_WORDPIECE) && !x->an)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.%s is empty", file, where, key);
  }
  return FG_OK;
}

fg_status fg_hf_dec_read(const char *file, const cJSON *o, fg_hf_dec **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!o || cJSON_IsNull(o)) return FG_OK;
  size_t cap = 0;
  fg_status s = read_one(file, "decoder", o, out, n, &cap);
  if (s) {
    fg_hf_dec_free(*out, *n);
    *out = NULL;
    *n = 0;
  }
  return s;
}

void fg_hf_dec_free(fg_hf_dec *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) {
    fg_hf_pattern_free(&v[i].pat);
    free(v[i].a);
  }
  free(v);
}

/* Replaces every occurrence of pat in s with rep, into o as a new word. */
static fg_status replace_into(const fg_hf_pattern *pat, pcre2_match_data *md, const char *s, size_t n, const char *rep,
                              size_t rn, bool first, fg_hf_words *o) {
  fg_status st = fg_hf_words_push(o, "", 0, first);
  size_t pos = 0, a, b;
  while (!st && fg_hf_pattern_next(pat, md, s, n, pos, &a, &b)) {
    if (!(st = fg_hf_words_extend(o, s + pos, a - pos))) st = fg_hf_words_extend(o, rep, rn);
    pos = b;
  }
  return st ? st : fg_hf_words_extend(o, s + pos, n - pos);
}

/* transformers' clean_up_tokenization, which WordPiece's cleanup is. */
static const char *const cleanups[][2] = {{" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},
                                          {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"},
                                          {" 's", "'s"},   {" 've", "'ve"}, {" 're", "'re"}};

static fg_status cleanup(fg_hf_words *o, fg_hf_words *tmp, size_t i) {
  for (size_t k = 0; k < sizeof cleanups / sizeof cleanups[0]; k++) {
    fg_hf_pattern lit = {NULL, (char *)cleanups[k][0], strlen(cleanups[k][0])};
    fg_hf_words_clear(tmp);
    fg_status st = replace_into(&lit, NULL, fg_hf_word(o, i), o->w[i].n, cleanups[k][1], strlen(cleanups[k][1]), false, tmp);
    if (st) return st;
    /* The word only shrinks: write it back in place. */
    memcpy(o->buf + o->w[i].off, fg_hf_word(tmp, 0), tmp->w[0].n);
    o->w[i].n = tmp->w[0].n;
  }
  return FG_OK;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static fg_status step(const fg_hf_dec *x, const fg_hf_words *in, fg_hf_words *o, fg_hf_words *tmp) {
  fg_status st = FG_OK;
  size_t n = in->nw;
  if (x->kind == D_FUSE || x->kind == D_BYTELEVEL) {
    if ((st = fg_hf_words_push(o, "", 0, true))) return st;
    for (size_t i = 0; i < n && !st; i++) {
      const unsigned char *s = (const unsigned char *)fg_hf_word(in, i);
      size_t m = in->w[i].n, k = 0, l;
      bool mapped = x->kind == D_BYTELEVEL;
      /* A token with a character outside the byte map is kept as its text, whole. */
      for (uint32_t c; mapped && k < m; k += l)
        if (!(l = fg_tok_utf8_get(s + k, m - k, &c)) || fg_tok_cp_byte(c) < 0) mapped = false;
      if (!mapped) {
        st = fg_hf_words_extend(o, (const char *)s, m);
        continue;
      }
      k = 0;
      for (uint32_t c; !st && k < m; k += l) {
        l = fg_tok_utf8_get(s + k, m - k, &c);
        char b = (char)fg_tok_cp_byte(c);
        st = fg_hf_words_extend(o, &b, 1);
      }
    }
    return st;
  }
  pcre2_match_data *md = x->pat.re ? pcre2_match_data_create_from_pattern(x->pat.re, NULL) : NULL;
  if (x->pat.re && !md) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  for (size_t i = 0; i < n && !st; i++) {
    const char *s = fg_hf_word(in, i);
    size_t m = in->w[i].n;
    switch (x->kind) {
    case D_METASPACE: {
      fg_hf_pattern lit = {NULL, x->a, x->an};
      if ((st = replace_into(&lit, NULL, s, m, " ", 1, false, o))) break;
      struct fg_hf_word *w = &o->w[o->nw - 1];
      if (i == 0 && x->prepend && w->n && o->buf[w->off] == ' ') w->off++, w->n--;
      break;
    }
    case D_WORDPIECE:
      if (i && m >= x->an && memcmp(s, x->a, x->an) == 0) st = fg_hf_words_push(o, s + x->an, m - x->an, false);
      else if (!(st = fg_hf_words_push(o, " ", i ? 1 : 0, false))) st = fg_hf_words_extend(o, s, m);
      if (!st && x->cleanup) st = cleanup(o, tmp, o->nw - 1);
      break;
    case D_BPE: {
      fg_hf_pattern lit = {NULL, x->a, x->an};
      st = replace_into(&lit, NULL, s, m, " ", i + 1 < n, false, o);
      break;
    }
    case D_REPLACE:
      st = replace_into(&x->pat, md, s, m, x->a, x->an, false, o);
      break;
    case D_STRIP: {
      size_t a = 0, b = m;
      for (int k = 0; k < x->start && b - a >= x->an && memcmp(s + a, x->a, x->an) == 0; k++) a += x->an;
      for (int k = 0; k < x->stop && b - a >= x->an && memcmp(s + b - x->an, x->a, x->an) == 0; k++) b -= x->an;
      st = fg_hf_words_push(o, s + a, b - a, false);
      break;
    }
    case D_BYTEFALLBACK: {
      /* A run of <0xXX> tokens is its bytes when they are UTF-8, else one U+FFFD a byte. */
      size_t j = i;
      int hi, lo;
      while (j < n && in->w[j].n == 6 && memcmp(fg_hf_word(in, j), "<0x", 3) == 0 && fg_hf_word(in, j)[5] == '>' &&
             (hi = hexval(fg_hf_word(in, j)[3])) >= 0 && (lo = hexval(fg_hf_word(in, j)[4])) >= 0)
        j++;
      if (j == i) {
        st = fg_hf_words_push(o, s, m, false);
        break;
      }
      if ((st = fg_hf_words_push(o, "", 0, false))) break;
      size_t start = o->len;
      for (size_t k = i; k < j && !st; k++) {
        const char *w = fg_hf_word(in, k);
        char b = (char)(hexval(w[3]) * 16 + hexval(w[4]));
        st = fg_hf_words_extend(o, &b, 1);
      }
      bool ok = true;
      for (size_t k = start, l; !st && k < o->len; k += l) {
        uint32_t c;
        if (!(l = fg_tok_utf8_get((const unsigned char *)o->buf + k, o->len - k, &c))) {
          ok = false;
          break;
        }
      }
      if (!st && !ok) {
        o->len = start;
        o->w[o->nw - 1].n = 0;
        for (size_t k = i; k < j && !st; k++) st = fg_hf_words_extend(o, "\xEF\xBF\xBD", 3);
      }
      i = j - 1;
      break;
    }
    default:
      break;
    }
  }
  pcre2_match_data_free(md);
  return st;
}

fg_status fg_hf_decode_words(const fg_hf_dec *v, size_t n, fg_hf_words *ws) {
  fg_hf_words next = {0}, tmp = {0};
  fg_status st = FG_OK;
  for (size_t k = 0; k < n && !st; k++) {
    fg_hf_words_clear(&next);
    st = step(&v[k], ws, &next, &tmp);
    fg_hf_words t = *ws;
    *ws = next;
    next = t;
  }
  fg_hf_words_free(&next);
  fg_hf_words_free(&tmp);
  return st;
}
