/* tokenizer.json pre-tokenizers: Sequence (read flat), Split, ByteLevel, Metaspace, Whitespace,
 * WhitespaceSplit, BertPreTokenizer, Digits, Punctuation and CharDelimiterSplit. Each step cuts
 * every piece of the one before. A cut is a list of spans, each a match or not; the behaviour
 * then says what becomes of the matches (as `tokenizers` documents, and as checked against it
 * in tests/cpu/test_tokenizer_hf.cpp):
 *   Removed: dropped; Isolated: pieces of their own; MergedWithPrevious / MergedWithNext:
 *   joined to the non-match before / after (a match next to a match stays alone);
 *   Contiguous: adjacent spans of the same kind joined. invert swaps match and non-match. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/text.h"
#include "formats/tokenizer_hf_internal.h"

typedef enum { B_REMOVED, B_ISOLATED, B_PREV, B_NEXT, B_CONTIGUOUS } behavior;
typedef enum { P_SPLIT, P_BYTELEVEL, P_METASPACE, P_WHITESPACE, P_WSSPLIT, P_BERT, P_DIGITS, P_PUNCT, P_CHAR } pre_kind;

struct fg_hf_pre {
  pre_kind kind;
  behavior beh;
  bool invert, prefix_space, use_regex, split, individual;
  int scheme; /* Metaspace: 0 always, 1 first, 2 never */
  fg_hf_pattern pat;
  char repl[8];
  size_t repl_n;
};

#define WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
/* GPT-2's regex (ByteLevel's use_regex), \s spelled as Unicode White_Space (tokenizer_pre.c). */
static const char re_gpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS
                              "])|[" WS "]+";
/* Whitespace's \w+|[^\w\s]+ with \w as Rust's Unicode word class: Alphabetic (letters, Nl
 * and Other_Alphabetic such as the circled letters), marks, Nd, Pc and the joiners. */
#define WORD "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}"
static const char re_words[] = "[" WORD "]+|[^" WORD WS "]+";

static bool flag(const cJSON *o, const char *key, bool dflt) {
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsBool(b) ? cJSON_IsTrue(b) : dflt;
}

static fg_status read_behavior(const char *file, const char *where, const cJSON *o, behavior dflt, behavior *b) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "behavior");
  *b = dflt;
  if (!x) return FG_OK;
  static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
  for (int i = 0; cJSON_IsString(x) && i < 5; i++)
    if (strcmp(x->valuestring, names[i]) == 0) {
      *b = (behavior)i;
      return FG_OK;
    }
  return fg_fail(FG_ERR_UNSUPPORTED, "%s: %s.behavior %s is none of Removed, Isolated, MergedWithPrevious, "
                                     "MergedWithNext, Contiguous",
                 file, where, cJSON_IsString(x) ? x->valuestring : "(not a string)");
}

static fg_status read_one(const char *file, const char *where, const cJSON *o, fg_hf_pre **v, size_t *n, size_t *cap) {
  const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
  if (!cJSON_IsString(ty)) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s has no \"type\" string", file, where);
  const char *t = ty->valuestring;
  char sub[160];
  fg_status s = FG_OK;
  if (strcmp(t, "Sequence") == 0) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "pretokenizers"), *e;
    if (!cJSON_IsArray(a)) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.pretokenizers is not an array", file, where);
    int i = 0;
    cJSON_ArrayForEach(e, a) {
      snprintf(sub, sizeof sub, "%s.pretokenizers[%d]", where, i++);
      if ((s = read_one(file, sub, e, v, n, cap))) return s;
    }
    return FG_OK;
  }
  fg_hf_pre *x;
  if ((s = fg_hf_list_push((void **)v, n, cap, sizeof **v, (void **)&x))) return s;
  x->beh = B_ISOLATED;
  if (strcmp(t, "Split") == 0) {
    x->kind = P_SPLIT;
    x->invert = flag(o, "invert", false);
    snprintf(sub, sizeof sub, "%s.pattern", where);
    if ((s = read_behavior(file, where, o, B_ISOLATED, &x->beh)) ||
        (s = fg_hf_pattern_read(file, sub, cJSON_GetObjectItemCaseSensitive(o, "pattern"), &x->pat)))
      return s;
  } else if (strcmp(t, "ByteLevel") == 0) {
    x->kind = P_BYTELEVEL;
    x->prefix_space = flag(o, "add_prefix_space", true);
    x->use_regex = flag(o, "use_regex", true);
    if (x->use_regex) s = fg_hf_regex(file, where, re_gpt2, &x->pat.re);
  } else if (strcmp(t, "Metaspace") == 0) {
    x->kind = P_METASPACE;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "replacement");
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "prepend_scheme");
    const char *rs = cJSON_IsString(r) ? r->valuestring : "\xE2\x96\x81";
    uint32_t cp;
    if (!(x->repl_n = fg_tok_utf8_get((const unsigned char *)rs, strlen(rs), &cp)) || x->repl_n != strlen(rs))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.replacement must be one character", file, where);
    memcpy(x->repl, rs, x->repl_n);
    x->split = flag(o, "split", true);
    if (cJSON_IsString(sc)) {
      const char *v2 = sc->valuestring;
      x->scheme = strcmp(v2, "always") == 0 ? 0 : strcmp(v2, "first") == 0 ? 1 : strcmp(v2, "never") == 0 ? 2 : -1;
      if (x->scheme < 0) return fg_fail(FG_ERR_UNSUPPORTED, "%s: %s.prepend_scheme \"%s\" is not supported", file, where, v2);
    } else {
      x->scheme = flag(o, "add_prefix_space", true) ? 0 : 2; /* older files */
    }
  } else if (strcmp(t, "Whitespace") == 0) {
    x->kind = P_WHITESPACE;
    s = fg_hf_regex(file, where, re_words, &x->pat.re);
  } else if (strcmp(t, "WhitespaceSplit") == 0) {
    x->kind = P_WSSPLIT;
  } else if (strcmp(t, "BertPreTokenizer") == 0) {
    x->kind = P_BERT;
  } else if (strcmp(t, "Digits") == 0) {
    x->kind = P_DIGITS;
    x->individual = flag(o, "individual_digits", false);
  } else if (strcmp(t, "Punctuation") == 0) {
    x->kind = P_PUNCT;
    s = read_behavior(file, where, o, B_ISOLATED, &x->beh);
  } else if (strcmp(t, "CharDelimiterSplit") == 0) {
    x->kind = P_CHAR;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "delimiter");
    uint32_t cp;
    if (!cJSON_IsString(d) || !(x->repl_n = fg_tok_utf8_get((const unsigned char *)d->valuestring, strlen(d->valuestring), &cp)))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.delimiter must be one character", file, where);
    memcpy(x->repl, d->valuestring, x->repl_n);
  } else {
    (*n)--;
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: %s.type \"%s\" is not supported", file, where, t);
  }
  return s;
}

fg_status fg_hf_pre_read(const char *file, const cJSON *o, fg_hf_pre **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!o || cJSON_IsNull(o)) return FG_OK;
  size_t cap = 0;
  fg_status s = read_one(file, "pre_tokenizer", o, out, n, &cap);
  if (s) {
    fg_hf_pre_free(*out, *n);
    *out = NULL;
    *n = 0;
  }
  return s;
}

void fg_hf_pre_free(fg_hf_pre *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) fg_hf_pattern_free(&v[i].pat);
  free(v);
}

/* The spans of one piece: [off, off+n) and whether it matched. */
typedef struct span {
  size_t a, b;
  bool m;
} span;

typedef struct spans {
  span *v;
  size_t n, cap;
} spans;

static fg_status add(spans *s, size_t a, size_t b, bool m) {
  if (a == b) return FG_OK;
  if (s->n == s->cap) {
    size_t c = s->cap ? s->cap * 2 : 16;
    span *q = realloc(s->v, c * sizeof *q);
    if (!q) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    s->v = q;
    s->cap = c;
  }
  s->v[s->n++] = (span){a, b, m};
  return FG_OK;
}

/* Character classes of the fixed splitters: 1 where a character is a "match". */
static bool char_hit(const fg_hf_pre *x, uint32_t c, const char *u, size_t l) {
  switch (x->kind) {
  case P_WSSPLIT: return fg_hf_is_whitespace(c);
  case P_BERT: return fg_hf_is_whitespace(c) || fg_hf_is_punct(c);
  case P_PUNCT: return fg_hf_is_punct(c);
  case P_CHAR: return l == x->repl_n && memcmp(u, x->repl, l) == 0;
  case P_DIGITS: {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
  }
  default: return false;
  }
}

/* Cuts s into spans for step x. */
static fg_status cut(const fg_hf_pre *x, pcre2_match_data *md, const char *s, size_t n, spans *out) {
  fg_status st = FG_OK;
  if (x->pat.re || x->pat.lit) {
    size_t pos = 0, a, b;
    while (!st && fg_hf_pattern_next(&x->pat, md, s, n, pos, &a, &b)) {
      if (!(st = add(out, pos, a, false))) st = add(out, a, b, true);
      pos = b;
    }
    return st ? st : add(out, pos, n, false);
  }
  /* Per character: a match run is one span unless each character stands alone. */
  bool alone = x->kind == P_BERT || x->kind == P_PUNCT || x->kind == P_WSSPLIT || x->kind == P_CHAR ||
               (x->kind == P_DIGITS && x->individual);
  size_t start = 0;
  int cur = -1;
  for (size_t i = 0; i < n && !st;) {
    uint32_t c = 0xFFFD;
    size_t l = fg_tok_utf8_get((const unsigned char *)s + i, n - i, &c);
    if (!l) l = 1, c = 0xFFFD;
    int h = char_hit(x, c, s + i, l);
    if (cur >= 0 && (h != cur || (h && alone))) st = add(out, start, i, cur), start = i;
    cur = h;
    i += l;
  }
  return st ? st : add(out, start, n, cur == 1);
}

static fg_status emit(fg_hf_words *o, const char *s, const span *sp, bool first) {
  return fg_hf_words_push(o, s + sp->a, sp->b - sp->a, first && sp->a == 0);
}

/* The pieces of s after behaviour beh over the spans. */
static fg_status apply(behavior beh, const char *s, spans *sp, bool first, fg_hf_words *o) {
  fg_status st = FG_OK;
  size_t base = o->nw;
  for (size_t i = 0; i < sp->n && !st; i++) {
    span *c = &sp->v[i];
    bool prev_m = i > 0 && sp->v[i - 1].m;
    switch (beh) {
    case B_REMOVED:
      if (!c->m) st = emit(o, s, c, first);
      break;
    case B_ISOLATED:
      st = emit(o, s, c, first);
      break;
    case B_PREV:
      if (c->m && i > 0 && !prev_m) st = fg_hf_words_extend(o, s + c->a, c->b - c->a);
      else st = emit(o, s, c, first);
      break;
    case B_NEXT:
      /* A match before a non-match opens it: widen that span and skip this one. */
      if (c->m && i + 1 < sp->n && !sp->v[i + 1].m) sp->v[i + 1].a = c->a;
      else st = emit(o, s, c, first);
      break;
    case B_CONTIGUOUS:
      if (i > 0 && c->m == prev_m && o->nw > base) st = fg_hf_words_extend(o, s + c->a, c->b - c->a);
      else st = emit(o, s, c, first);
      break;
    }
  }
  return st;
}

/* ByteLevel's map: every byte as the code point GPT-2's byte map gives it. */
static fg_status byte_map(const char *s, size_t n, bool first, fg_hf_words *o) {
  fg_status st = fg_hf_words_push(o, "", 0, first);
  for (size_t i = 0; i < n && !st; i++) {
    char u[4];
    st = fg_hf_words_extend(o, u, fg_utf8_put(fg_tok_byte_cp((uint8_t)s[i]), u));
  }
  return st;
}

static fg_status one_piece(const fg_hf_pre *x, pcre2_match_data *md, const char *s, size_t n, bool first,
                           fg_hf_words *o, spans *sp, fg_hf_words *tmp) {
  sp->n = 0;
  fg_status st = FG_OK;
  switch (x->kind) {
  case P_BYTELEVEL: {
    fg_hf_words_clear(tmp);
    bool pre = x->prefix_space && !(n && s[0] == ' ');
    if ((st = fg_hf_words_push(tmp, " ", pre, first))) return st;
    if ((st = fg_hf_words_extend(tmp, s, n))) return st;
    const char *t = fg_hf_word(tmp, 0);
    size_t tn = tmp->w[0].n;
    if (!x->use_regex) return byte_map(t, tn, first, o);
    /* The regex cuts first; each piece is then mapped. */
    if ((st = cut(x, md, t, tn, sp))) return st;
    for (size_t i = 0; i < sp->n && !st; i++) st = byte_map(t + sp->v[i].a, sp->v[i].b - sp->v[i].a, first && !i, o);
    return st;
  }
  case P_METASPACE: {
    fg_hf_words_clear(tmp);
    bool pre = (x->scheme == 0 || (x->scheme == 1 && first)) &&
               !(n >= x->repl_n && memcmp(s, x->repl, x->repl_n) == 0) && !(n && s[0] == ' ');
    if ((st = fg_hf_words_push(tmp, x->repl, pre ? x->repl_n : 0, first))) return st;
    for (size_t i = 0; i < n && !st; i++)
      st = s[i] == ' ' ? fg_hf_words_extend(tmp, x->repl, x->repl_n) : fg_hf_words_extend(tmp, s + i, 1);
    if (st) return st;
    const char *t = fg_hf_word(tmp, 0);
    size_t tn = tmp->w[0].n;
    if (!x->split) return fg_hf_words_push(o, t, tn, first);
    fg_hf_pattern lit = {NULL, (char *)x->repl, x->repl_n};
    size_t pos = 0, a, b;
    while (!st && fg_hf_pattern_next(&lit, NULL, t, tn, pos, &a, &b)) {
      if (!(st = add(sp, pos, a, false))) st = add(sp, a, b, true);
      pos = b;
    }
    if (!st) st = add(sp, pos, tn, false);
    return st ? st : apply(B_NEXT, t, sp, first, o);
  }
  case P_WHITESPACE:
    /* The regex finds the words: they stay, the rest goes. */
    if ((st = cut(x, md, s, n, sp))) return st;
    for (size_t i = 0; i < sp->n; i++) sp->v[i].m = !sp->v[i].m;
    return apply(B_REMOVED, s, sp, first, o);
  default:
    break;
  }
  if ((st = cut(x, md, s, n, sp))) return st;
  if (x->invert)
    for (size_t i = 0; i < sp->n; i++) sp->v[i].m = !sp->v[i].m;
  if (x->kind == P_WSSPLIT) return apply(B_REMOVED, s, sp, first, o);
  if (x->kind == P_BERT) {
    /* Whitespace goes; every punctuation character is a piece of its own. */
    for (size_t i = 0; i < sp->n && !st; i++) {
      uint32_t c;
      span *p = &sp->v[i];
      if (!p->m) st = emit(o, s, p, first);
      else if (fg_tok_utf8_get((const unsigned char *)s + p->a, p->b - p->a, &c) && !fg_hf_is_whitespace(c))
        st = emit(o, s, p, first);
    }
    return st;
  }
  if (x->kind == P_DIGITS) return apply(B_ISOLATED, s, sp, first, o);
  return apply(x->beh, s, sp, first, o);
}

fg_status fg_hf_pretokenize(const fg_hf_pre *v, size_t n, fg_hf_words *ws) {
  fg_hf_words next = {0}, tmp = {0};
  spans sp = {0};
  fg_status st = FG_OK;
  for (size_t k = 0; k < n && !st; k++) {
    const fg_hf_pre *x = &v[k];
    pcre2_match_data *md = x->pat.re ? pcre2_match_data_create_from_pattern(x->pat.re, NULL) : NULL;
    if (x->pat.re && !md) st = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    fg_hf_words_clear(&next);
    for (size_t i = 0; i < ws->nw && !st; i++)
      st = one_piece(x, md, fg_hf_word(ws, i), ws->w[i].n, ws->w[i].first, &next, &sp, &tmp);
    pcre2_match_data_free(md);
    fg_hf_words t = *ws;
    *ws = next;
    next = t;
  }
  fg_hf_words_free(&next);
  fg_hf_words_free(&tmp);
  free(sp.v);
  return st;
}
