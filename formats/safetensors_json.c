/* Strict JSON for safetensors headers and index files: a one-pass parser into a flat
 * tree, and the reference check (a lexer that enforces what cJSON lets through, then
 * cJSON) that words the error when the parser refuses a text (see safetensors_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/safetensors_internal.h"

/* Length of the well-formed UTF-8 sequence starting with a byte >= 0x80 at s[i], or 0 when
 * it is not one (overlong forms, UTF-16 surrogates and code points above U+10FFFF refused). */
static size_t st_utf8_seq_len(const uint8_t *s, size_t n, size_t i) {
  const uint8_t c = s[i];
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;       /* overlong */
    if (c == 0xED) hi = 0x9F;       /* UTF-16 surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;       /* overlong */
    if (c == 0xF4) hi = 0x8F;       /* above U+10FFFF */
  } else {
    return 0;
  }
  if (n - i <= need || s[i + 1] < lo || s[i + 1] > hi) return 0;
  for (size_t k = 2; k <= need; k++)
    if ((s[i + k] & 0xC0) != 0x80) return 0;
  return need + 1;
}

bool st_utf8_valid(const uint8_t *s, size_t n, size_t *bad) {
  size_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    const size_t k = st_utf8_seq_len(s, n, i);
    if (!k) {
      *bad = i;
      return false;
    }
    i += k;
  }
  return true;
}

/* ---------------------------------------------------------------- lexer (reference check) */

typedef struct st_tok {
  uint32_t pos;              /* byte position in the JSON text */
  uint32_t len;              /* raw length (numbers) */
  char *str;                 /* decoded string, NUL-terminated (NULL for numbers) */
  size_t str_len;
  const char *raw;           /* number text (not terminated) */
} st_tok;

typedef struct lexer {
  const char *t;
  size_t n, i;
  const char *where;
  uint64_t base;
  st_tok *toks;
  size_t ntoks, cap;
} lexer;

static fg_status lex_fail(const lexer *L, size_t pos, const char *what) {
  return fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON at byte %llu: %s", L->where,
                 (unsigned long long)(L->base + pos), what);
}

static fg_status lex_push(lexer *L, st_tok tok) {
  if (L->ntoks == L->cap) {
    size_t cap = L->cap ? L->cap * 2 : 64;
    st_tok *p = realloc(L->toks, cap * sizeof *p);
    if (!p) {
      free(tok.str);
      return fg_fail(FG_ERR_NOMEM, "%s: out of memory lexing JSON", L->where);
    }
    L->toks = p;
    L->cap = cap;
  }
  L->toks[L->ntoks++] = tok;
  return FG_OK;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool read_hex4(const lexer *L, size_t at, unsigned *out) {
  if (L->n - at < 4) return false;
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexval(L->t[at + (size_t)k]);
    if (h < 0) return false;
    v = v * 16 + (unsigned)h;
  }
  *out = v;
  return true;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* At an opening quote. Decoded bytes are never longer than the raw ones. */
static fg_status lex_string(lexer *L) {
  size_t start = L->i++;
  size_t end = L->i;
  while (end < L->n && L->t[end] != '"') end += (L->t[end] == '\\') ? 2 : 1;
  if (end >= L->n) return lex_fail(L, start, "unterminated string");
  char *o = malloc(end - L->i + 1);
  if (!o) return fg_fail(FG_ERR_NOMEM, "%s: out of memory lexing JSON", L->where);
  size_t k = 0;
  while (L->i < end) {
    unsigned char c = (unsigned char)L->t[L->i];
    if (c < 0x20) {
      free(o);
      return lex_fail(L, L->i, "control character inside a string");
    }
    if (c != '\\') {
      o[k++] = (char)c;
      L->i++;
      continue;
    }
    char e = L->t[L->i + 1];
    size_t at = L->i;
    L->i += 2;
    switch (e) {
      case '"': o[k++] = '"'; break;
      case '\\': o[k++] = '\\'; break;
      case '/': o[k++] = '/'; break;
      case 'b': o[k++] = '\b'; break;
      case 'f': o[k++] = '\f'; break;
      case 'n': o[k++] = '\n'; break;
      case 'r': o[k++] = '\r'; break;
      case 't': o[k++] = '\t'; break;
      case 'u': {
        unsigned cp, lo;
        if (!read_hex4(L, L->i, &cp) || L->i + 4 > end) {
          free(o);
          return lex_fail(L, at, "bad \\u escape");
        }
        L->i += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          free(o);
          return lex_fail(L, at, "lone low surrogate escape");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (L->i + 6 > end || L->t[L->i] != '\\' || L->t[L->i + 1] != 'u' ||
              !read_hex4(L, L->i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
            free(o);
            return lex_fail(L, at, "lone high surrogate escape");
          }
          L->i += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        k += put_utf8(o + k, cp);
        break;
      }
      default:
        free(o);
        return lex_fail(L, at, "invalid escape");
    }
  }
  o[k] = '\0';
  L->i = end + 1;
  st_tok tok = {.pos = (uint32_t)start, .str = o, .str_len = k};
  return lex_push(L, tok);
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? over exactly [a, b). */
static bool number_grammar(const char *s, size_t n) {
  size_t i = 0;
  if (i < n && s[i] == '-') i++;
  if (i >= n || !is_digit(s[i])) return false;
  if (s[i] == '0') {
    i++;
  } else {
    while (i < n && is_digit(s[i])) i++;
  }
  if (i < n && s[i] == '.') {
    i++;
    if (i >= n || !is_digit(s[i])) return false;
    while (i < n && is_digit(s[i])) i++;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= n || !is_digit(s[i])) return false;
    while (i < n && is_digit(s[i])) i++;
  }
  return i == n;
}

static fg_status lex_all(lexer *L) {
  while (L->i < L->n) {
    char c = L->t[L->i];
    if (c == '"') {
      fg_status s = lex_string(L);
      if (s) return s;
    } else if (c == '-' || is_digit(c)) {
      size_t a = L->i;
      while (L->i < L->n && strchr("0123456789+-eE.", L->t[L->i]) && L->t[L->i]) L->i++;
      if (!number_grammar(L->t + a, L->i - a)) return lex_fail(L, a, "malformed number");
      if (L->i - a > UINT32_MAX) return lex_fail(L, a, "number too long");
      st_tok tok = {.pos = (uint32_t)a, .len = (uint32_t)(L->i - a), .raw = L->t + a};
      fg_status s = lex_push(L, tok);
      if (s) return s;
    } else if (c >= 'a' && c <= 'z') {
      size_t a = L->i;
      while (L->i < L->n && L->t[L->i] >= 'a' && L->t[L->i] <= 'z') L->i++;
      size_t w = L->i - a;
      if (!((w == 4 && !memcmp(L->t + a, "true", 4)) || (w == 5 && !memcmp(L->t + a, "false", 5)) ||
            (w == 4 && !memcmp(L->t + a, "null", 4))))
        return lex_fail(L, a, "unknown literal");
    } else if (c && strchr("{}[]:, \t\r\n", c)) {
      L->i++;
    } else {
      return lex_fail(L, L->i, "unexpected character (only space, tab, CR and LF are whitespace)");
    }
  }
  return FG_OK;
}

/* ---------------------------------------------------------------- reference check */

/* cJSON has no spare field for positions, so the token index + 1 is kept in valueint
 * (string and number nodes: their own token) and valuedouble (members: the key token);
 * both are exact for indices below 2^31. */
static bool annotate(cJSON *node, const st_tok *toks, size_t ntoks, size_t *cur, bool member) {
  if (member) {
    if (*cur >= ntoks || !toks[*cur].str) return false;
    node->valuedouble = (double)(*cur + 1);
    (*cur)++;
  }
  if (cJSON_IsString(node)) {
    if (*cur >= ntoks || !toks[*cur].str) return false;
    node->valueint = (int)(*cur + 1);
    (*cur)++;
  } else if (cJSON_IsNumber(node)) {
    if (*cur >= ntoks || toks[*cur].str) return false;
    node->valueint = (int)(*cur + 1);
    (*cur)++;
  } else if (cJSON_IsObject(node) || cJSON_IsArray(node)) {
    bool obj = cJSON_IsObject(node);
    for (cJSON *c = node->child; c; c = c->next)
      if (!annotate(c, toks, ntoks, cur, obj)) return false;
  }
  return true;
}

/* The reference check, run only on a text the parser refused: UTF-8, the lexer, cJSON
 * over a copy in which every number is "0" padded with spaces (the value comes from the
 * token, and cJSON's own number reader (64-byte buffer, strtod) is bypassed), and the
 * token stream tied to cJSON's tree. Returns the first failure, worded for the caller. */
static fg_status st_json_diagnose(const char *text, size_t n, const char *where, uint64_t base) {
  size_t bad;
  if (!st_utf8_valid((const uint8_t *)text, n, &bad))
    return fg_fail(FG_ERR_HEADER_NOT_UTF8, "%s: invalid UTF-8 at byte %llu (0x%02x)", where,
                   (unsigned long long)(base + bad), (unsigned)(uint8_t)text[bad]);
  if (n >= (size_t)INT32_MAX) return fg_fail(FG_ERR_INVALID_JSON, "%s: JSON text of %zu bytes is too long", where, n);
  lexer L = {.t = text, .n = n, .where = where, .base = base};
  cJSON *root = NULL;
  char *copy = NULL;
  fg_status s = lex_all(&L);
  if (s) goto done;
  copy = malloc(n + 1);
  if (!copy) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", where);
    goto done;
  }
  memcpy(copy, text, n);
  copy[n] = '\0';
  for (size_t k = 0; k < L.ntoks; k++) {
    if (L.toks[k].str) continue;
    copy[L.toks[k].pos] = '0';
    memset(copy + L.toks[k].pos + 1, ' ', L.toks[k].len - 1);
  }
  size_t lead = 0;
  while (lead < n && strchr(" \t\r\n", text[lead])) lead++;
  if (lead == n) {
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON at byte %llu: EOF while parsing a value", where,
                (unsigned long long)(base + n));
    goto done;
  }
  const char *end = NULL;
  root = cJSON_ParseWithLengthOpts(copy, n, &end, 0);
  if (!root) {
    size_t at = end && end >= copy ? (size_t)(end - copy) : 0;
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON at byte %llu", where, (unsigned long long)(base + at));
    goto done;
  }
  size_t at = end ? (size_t)(end - copy) : n;
  while (at < n && strchr(" \t\r\n", text[at])) at++;
  if (at != n) {
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON at byte %llu: trailing characters", where,
                (unsigned long long)(base + at));
    goto done;
  }
  size_t cur = 0;
  if (!annotate(root, L.toks, L.ntoks, &cur, false) || cur != L.ntoks) {
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON (token stream disagrees with the parse tree)", where);
    goto done;
  }
  /* accepted here, refused by the parser: only a bug can get here */
  s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON (the strict parser refused a text cJSON accepts)", where);
done:
  for (size_t k = 0; k < L.ntoks; k++) free(L.toks[k].str);
  free(L.toks);
  cJSON_Delete(root);
  free(copy);
  return s;
}

/* ---------------------------------------------------------------- parser */

/* cJSON refuses arrays and objects nested deeper than this (CJSON_NESTING_LIMIT). */
#define ST_DEPTH_LIMIT 1000

/* 1: bytes a string copies as they are (printable ASCII other than quote and backslash). */
static const uint8_t st_plain[256] = {
#define R8(v) v, v, v, v, v, v, v, v
  R8(0), R8(0), R8(0), R8(0),                           /* 0x00-0x1f: controls */
  1, 1, 0, 1, 1, 1, 1, 1, R8(1), R8(1), R8(1),          /* 0x20-0x3f: '"' is 0x22 */
  R8(1), R8(1), R8(1), 1, 1, 1, 1, 0, 1, 1, 1,          /* 0x40-0x5f: '\\' is 0x5c */
  R8(1), R8(1), R8(1), R8(1),                           /* 0x60-0x7f */
  R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0),
  R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0),
#undef R8
};

static bool is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

typedef struct parser {
  const uint8_t *t;
  size_t n, i;
  st_node *nodes;
  size_t nn, cap;
  size_t nnums;
  char *o;                   /* next free byte of the string block */
} parser;

static bool hex4(const uint8_t *p, unsigned *out) {
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexval((char)p[k]);
    if (h < 0) return false;
    v = v * 16 + (unsigned)h;
  }
  *out = v;
  return true;
}

/* At an opening quote: decodes into the string block; false on anything the lexer or
 * the UTF-8 check refuses. */
static bool parse_string(parser *P, const char **str, uint32_t *len) {
  const uint8_t *t = P->t;
  size_t n = P->n, i = P->i + 1;
  char *o = P->o, *start = o;
  for (;;) {
    size_t a = i;
    while (i < n && st_plain[t[i]]) i++;
    memcpy(o, t + a, i - a);
    o += i - a;
    if (i >= n) return false;
    uint8_t c = t[i];
    if (c == '"') break;
    if (c < 0x20) return false;
    if (c == '\\') {
      if (n - i < 2) return false;
      uint8_t e = t[i + 1];
      i += 2;
      switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
          unsigned cp, lo;
          if (n - i < 4 || !hex4(t + i, &cp)) return false;
          i += 4;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (n - i < 6 || t[i] != '\\' || t[i + 1] != 'u' || !hex4(t + i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
              return false;
            i += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          o += put_utf8(o, cp);
          break;
        }
        default:
          return false;
      }
      continue;
    }
    /* c >= 0x80: one UTF-8 sequence, as st_utf8_valid checks it */
    const size_t k = st_utf8_seq_len(t, n, i);
    if (!k) return false;
    memcpy(o, t + i, k);
    o += k;
    i += k;
  }
  *o++ = '\0';
  *str = start;
  *len = (uint32_t)(o - 1 - start);
  P->o = o;
  P->i = i + 1;
  return true;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? from P->i. A longer run of number
 * characters the lexer would refuse cannot be followed by anything JSON allows after a
 * value, so stopping at the end of the grammar refuses the same texts. */
static bool parse_number(parser *P) {
  const uint8_t *t = P->t;
  size_t n = P->n, i = P->i;
  if (i < n && t[i] == '-') i++;
  if (i >= n || !is_digit((char)t[i])) return false;
  if (t[i] == '0') {
    i++;
  } else {
    while (i < n && is_digit((char)t[i])) i++;
  }
  if (i < n && t[i] == '.') {
    i++;
    if (i >= n || !is_digit((char)t[i])) return false;
    while (i < n && is_digit((char)t[i])) i++;
  }
  if (i < n && (t[i] == 'e' || t[i] == 'E')) {
    i++;
    if (i < n && (t[i] == '+' || t[i] == '-')) i++;
    if (i >= n || !is_digit((char)t[i])) return false;
    while (i < n && is_digit((char)t[i])) i++;
  }
  P->i = i;
  return true;
}

static st_node *new_node(parser *P) {
  if (P->nn == P->cap) {
    size_t cap = P->cap * 2;
    st_node *p = realloc(P->nodes, cap * sizeof *p);
    if (!p) return NULL;
    P->nodes = p;
    P->cap = cap;
  }
  st_node *v = &P->nodes[P->nn++];
  memset(v, 0, sizeof *v);
  return v;
}

static void skip_ws(parser *P) {
  while (P->i < P->n && is_ws(P->t[P->i])) P->i++;
}

/* 1 parsed, 0 refused, -1 out of memory. */
static int parse_all(parser *P) {
  uint32_t stack[ST_DEPTH_LIMIT];
  size_t depth = 0;
  const char *key = NULL;
  uint32_t key_len = 0, key_pos = 0;
  const uint8_t *t = P->t;
  skip_ws(P);
value:
  if (P->i >= P->n) return 0;
  {
    st_node *v = new_node(P);
    if (!v) return -1;
    uint32_t self = (uint32_t)(P->nn - 1);
    if (depth) P->nodes[stack[depth - 1]].len++;
    v->key = key;
    v->key_len = key_len;
    v->key_pos = key_pos;
    key = NULL;
    key_len = key_pos = 0;
    v->pos = (uint32_t)P->i;
    uint8_t c = t[P->i];
    switch (c) {
      case '{':
      case '[':
        if (depth >= ST_DEPTH_LIMIT) return 0;
        v->kind = c == '{' ? ST_OBJ : ST_ARR;
        P->i++;
        stack[depth++] = self;
        skip_ws(P);
        if (P->i < P->n && t[P->i] == (c == '{' ? '}' : ']')) {
          P->i++;
          depth--;
          v->next = (uint32_t)P->nn;
          goto after;
        }
        if (c == '{') goto member;
        goto value;
      case '"': {
        const char *s;
        uint32_t len;
        if (!parse_string(P, &s, &len)) return 0;
        v = &P->nodes[self];
        v->kind = ST_STR;
        v->str = s;
        v->len = len;
        break;
      }
      case 't':
      case 'f':
      case 'n': {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t wl = c == 'f' ? 5 : 4;
        if (P->n - P->i < wl || memcmp(t + P->i, w, wl) != 0) return 0;
        P->i += wl;
        v->kind = c == 't' ? ST_TRUE : c == 'f' ? ST_FALSE : ST_NULL;
        break;
      }
      default:
        if (c != '-' && !is_digit((char)c)) return 0;
        if (!parse_number(P)) return 0;
        v->kind = ST_NUM;
        v->str = (const char *)t + v->pos;
        v->len = (uint32_t)(P->i - v->pos);
        P->nnums++;
        break;
    }
    v->next = (uint32_t)P->nn;
  }
after:
  skip_ws(P);
  if (!depth) return P->i == P->n;
  if (P->i >= P->n) return 0;
  {
    st_node *top = &P->nodes[stack[depth - 1]];
    uint8_t c = t[P->i];
    if (c == ',') {
      P->i++;
      skip_ws(P);
      if (top->kind == ST_OBJ) goto member;
      goto value;
    }
    if (c != (top->kind == ST_OBJ ? '}' : ']')) return 0;
    P->i++;
    top->next = (uint32_t)P->nn;
    depth--;
    goto after;
  }
member:
  if (P->i >= P->n || t[P->i] != '"') return 0;
  key_pos = (uint32_t)P->i;
  if (!parse_string(P, &key, &key_len)) return 0;
  skip_ws(P);
  if (P->i >= P->n || t[P->i] != ':') return 0;
  P->i++;
  skip_ws(P);
  goto value;
}

fg_status st_json_parse(const char *text, size_t n, const char *where, uint64_t base, st_json *out) {
  memset(out, 0, sizeof *out);
  if (n >= (size_t)INT32_MAX) return st_json_diagnose(text, n, where, base);
  /* decoded strings never outgrow their quoted source, terminators included */
  parser P = {.t = (const uint8_t *)text, .n = n, .cap = n / 16 + 16};
  P.nodes = malloc(P.cap * sizeof *P.nodes);
  out->strs = malloc(n + 1);
  P.o = out->strs;
  int r = P.nodes && out->strs ? parse_all(&P) : -1;
  /* The reference check refuses a bare number of more than one character: cJSON stops
   * after the "0" standing in for it and the rest reads as trailing characters. */
  if (r == 1 && P.nodes[0].kind == ST_NUM && P.nodes[0].len > 1) r = 0;
  if (r == 1) {
    out->nodes = P.nodes;
    out->nnodes = P.nn;
    out->nnums = P.nnums;
    return FG_OK;
  }
  free(P.nodes);
  free(out->strs);
  out->strs = NULL;
  if (r < 0) return fg_fail(FG_ERR_NOMEM, "%s: out of memory parsing JSON", where);
  return st_json_diagnose(text, n, where, base);
}

void st_json_free(st_json *j) {
  if (!j) return;
  free(j->nodes);
  free(j->strs);
  memset(j, 0, sizeof *j);
}

bool st_num_u64(const st_node *v, uint64_t *out) {
  if (!v || v->kind != ST_NUM || v->len == 0) return false;
  uint64_t x = 0;
  for (uint32_t i = 0; i < v->len; i++) {
    char c = v->str[i];
    if (!is_digit(c)) return false;
    unsigned d = (unsigned)(c - '0');
    if (x > (UINT64_MAX - d) / 10) return false;
    x = x * 10 + d;
  }
  *out = x;
  return true;
}

/* ---------------------------------------------------------------- output buffer */

void st_buf_put(st_buf *b, const void *s, size_t n) {
  if (b->failed) return;
  if (n > SIZE_MAX - b->len - 1) {
    b->failed = true;
    return;
  }
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap = cap > SIZE_MAX / 2 ? b->len + n + 1 : cap * 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void st_buf_puts(st_buf *b, const char *s) { st_buf_put(b, s, strlen(s)); }

void st_buf_printf(st_buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= sizeof tmp) {
    b->failed = true;
    return;
  }
  st_buf_put(b, tmp, (size_t)k);
}

/* serde_json escapes quote, backslash and C0 controls (short forms where JSON has them,
 * \u00xx lowercase otherwise) and writes everything else raw; Python's json.dumps with
 * ensure_ascii also escapes every non-ASCII code point as \uxxxx (surrogate pairs). */
void st_buf_json_string(st_buf *b, const char *s, size_t n, bool ascii_only) {
  st_buf_put(b, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char u[16];
    size_t skip = 0;
    switch (c) {
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      default:
        if (c < 0x20) {
          snprintf(u, sizeof u, "\\u%04x", c);
          esc = u;
        } else if (c >= 0x80 && ascii_only) {
          /* decode one code point (input already validated as UTF-8) */
          unsigned cp;
          size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
          if (i + len > n) len = n - i;
          cp = c & (len == 4 ? 0x07 : len == 3 ? 0x0F : 0x1F);
          for (size_t k = 1; k < len; k++) cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3F);
          if (cp >= 0x10000) {
            cp -= 0x10000;
            snprintf(u, sizeof u, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
          } else {
            snprintf(u, sizeof u, "\\u%04x", cp);
          }
          esc = u;
          skip = len - 1;
        }
    }
    if (esc) {
      st_buf_put(b, s + i - run, run);
      run = 0;
      st_buf_puts(b, esc);
      i += skip;
    } else {
      run++;
    }
  }
  st_buf_put(b, s + n - run, run);
  st_buf_put(b, "\"", 1);
}
