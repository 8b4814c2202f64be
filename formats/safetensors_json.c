/* Strict JSON for safetensors headers and index files: a one-pass parser into a flat
 * tree, and the reference check (a lexer that enforces what cJSON lets through, then
 * cJSON) that words the error when the parser refuses a text (see safetensors_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
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

/* The lexer checks what cJSON would let through (escapes, controls, number grammar,
 * literals, stray bytes) and writes the text cJSON is given: a copy in which every number
 * is "0" padded with spaces (the value comes from the text, and cJSON's own number reader
 * (64-byte buffer, strtod) is bypassed). It keeps nothing per token. */
typedef struct lexer {
  const char *t;
  char *copy;
  size_t n, i;
  const char *where;
  uint64_t base;
} lexer;

static fg_status lex_fail(const lexer *L, size_t pos, const char *what) {
  return fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON at byte %llu: %s", L->where,
                 (unsigned long long)(L->base + pos), what);
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

/* At an opening quote: checks the string's escapes and bytes. */
static fg_status lex_string(lexer *L) {
  size_t start = L->i++;
  size_t end = L->i;
  while (end < L->n && L->t[end] != '"') end += (L->t[end] == '\\') ? 2 : 1;
  if (end >= L->n) return lex_fail(L, start, "unterminated string");
  while (L->i < end) {
    unsigned char c = (unsigned char)L->t[L->i];
    if (c < 0x20) return lex_fail(L, L->i, "control character inside a string");
    if (c != '\\') {
      L->i++;
      continue;
    }
    char e = L->t[L->i + 1];
    size_t at = L->i;
    L->i += 2;
    if (e == 'u') {
      unsigned cp, lo;
      if (!read_hex4(L, L->i, &cp) || L->i + 4 > end) return lex_fail(L, at, "bad \\u escape");
      L->i += 4;
      if (cp >= 0xDC00 && cp <= 0xDFFF) return lex_fail(L, at, "lone low surrogate escape");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (L->i + 6 > end || L->t[L->i] != '\\' || L->t[L->i + 1] != 'u' || !read_hex4(L, L->i + 2, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF)
          return lex_fail(L, at, "lone high surrogate escape");
        L->i += 6;
      }
    } else if (!strchr("\"\\/bfnrt", e) || !e) {
      return lex_fail(L, at, "invalid escape");
    }
  }
  L->i = end + 1;
  return FG_OK;
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
      L->copy[a] = '0';
      memset(L->copy + a + 1, ' ', L->i - a - 1);
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

/* ---------------------------------------------------------------- parser state */

/* cJSON refuses arrays and objects nested deeper than this (CJSON_NESTING_LIMIT). */
#define ST_DEPTH_LIMIT 1000
#define ST_NONE UINT32_MAX

/* An open array or object: its node (ST_NONE inside a container kept whole), whether it is
 * an object and whether its members go on the tape; for the reference check, where it
 * opens and its last two children (start, value start, end; end 0 while incomplete). */
typedef struct frame {
  uint32_t node;
  bool obj, tree;
  uint32_t open;
  uint32_t cur, cur_val, cur_end;
  uint32_t prev, prev_val, prev_end;
} frame;

typedef struct parser {
  const uint8_t *t;
  size_t n, i;
  st_node *nodes;
  size_t nn, cap, max;       /* nodes in use, allocated, and the most the text can need */
  char *strs;                /* decoded strings, each at its opening quote + 1 */
  size_t tree_depth;         /* objects at a depth below this put their members on the tape */
  frame *stack;              /* ST_DEPTH_LIMIT frames */
  size_t depth;
  uint32_t root, root_end;   /* the root value (root_end 0 while incomplete) */
} parser;

/* ---------------------------------------------------------------- reference check */

static void blank(char *copy, size_t a, size_t b) {
  if (b > a) memset(copy + a, ' ', b - a);
}

/* A complete value [a, e) as an empty container of the same length (scalars stay). */
static void hollow(char *copy, size_t a, size_t e) {
  if ((copy[a] == '[' || copy[a] == '{') && e >= a + 2) blank(copy, a + 1, e - 1);
}

/* cJSON builds a node for every value it reads before the error, which for a refused
 * header of 100 MB would be gigabytes. The parser stopped where cJSON stops, with the
 * same containers open: so every complete value it passed is kept as an empty container
 * of the same length, and every child of an open container but the last complete one is
 * blanked with its comma. cJSON then reads the same structure at the same offsets and
 * fails at the same byte, holding a few nodes per open container. */
static void compress(char *copy, const parser *P) {
  for (size_t k = 0; k < P->depth; k++) {
    const frame *f = &P->stack[k];
    if (f->prev_end) {
      blank(copy, (size_t)f->open + 1, f->prev);
      hollow(copy, f->prev_val, f->prev_end);
    }
    if (f->cur_end) hollow(copy, f->cur_val, f->cur_end);
  }
  if (!P->depth && P->root_end) hollow(copy, P->root, P->root_end);
}

/* The reference check, run only on a text the parser refused (P: its state where it
 * stopped, NULL when it did not run): UTF-8, the lexer, then cJSON over the lexer's copy.
 * Returns the first failure, worded for the caller. */
static fg_status st_json_diagnose(const char *text, size_t n, const char *where, uint64_t base, const parser *P) {
  size_t bad;
  if (!st_utf8_valid((const uint8_t *)text, n, &bad))
    return fg_fail(FG_ERR_HEADER_NOT_UTF8, "%s: invalid UTF-8 at byte %llu (0x%02x)", where,
                   (unsigned long long)(base + bad), (unsigned)(uint8_t)text[bad]);
  if (n >= (size_t)INT32_MAX) return fg_fail(FG_ERR_INVALID_JSON, "%s: JSON text of %zu bytes is too long", where, n);
  char *copy = malloc(n + 1);
  if (!copy) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", where);
  memcpy(copy, text, n);
  copy[n] = '\0';
  lexer L = {.t = text, .copy = copy, .n = n, .where = where, .base = base};
  cJSON *root = NULL;
  fg_status s = lex_all(&L);
  if (s) goto done;
  size_t lead = 0;
  while (lead < n && strchr(" \t\r\n", text[lead])) lead++;
  if (lead == n) {
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON at byte %llu: EOF while parsing a value", where,
                (unsigned long long)(base + n));
    goto done;
  }
  if (P) compress(copy, P);
  const char *end = NULL;
  root = cJSON_ParseWithLengthOpts(copy, n, &end, 0);
  if (!root) {
    size_t at = end && end >= copy ? (size_t)(end - copy) : 0;
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON at byte %llu", where, (unsigned long long)(base + at));
    goto done;
  }
  /* a bare number of more than one character is "0" and spaces in the copy: what follows
   * the "0" in the text reads as trailing characters */
  size_t at = end ? (size_t)(end - copy) : n;
  while (at < n && strchr(" \t\r\n", text[at])) at++;
  if (at != n) {
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON at byte %llu: trailing characters", where,
                (unsigned long long)(base + at));
    goto done;
  }
  /* accepted here, refused by the parser: only a bug can get here */
  s = fg_fail(FG_ERR_INVALID_JSON, "%s: invalid JSON (the strict parser refused a text cJSON accepts)", where);
done:
  cJSON_Delete(root);
  free(copy);
  return s;
}

/* ---------------------------------------------------------------- parser */

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

/* At an opening quote: decodes in place (strs + quote + 1; the decoded bytes and their
 * NUL never outgrow the quoted source); false on anything the lexer or the UTF-8 check
 * refuses. */
static bool parse_string(parser *P, uint32_t *len) {
  const uint8_t *t = P->t;
  size_t n = P->n, i = P->i + 1;
  char *o = P->strs + i, *start = o;
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
          o += fg_utf8_put(cp, o);
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
  *o = '\0';
  *len = (uint32_t)(o - start);
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

/* NULL only when memory runs out: P->max bounds what a valid text can ask for. */
static st_node *new_node(parser *P) {
  if (P->nn == P->cap) {
    if (P->cap >= P->max) return NULL;
    size_t cap = P->cap * 2 < P->max ? P->cap * 2 : P->max;
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

/* A child of the innermost open container starts at P->i (a member at its key). */
static void child_starts(parser *P) {
  frame *f = &P->stack[P->depth - 1];
  f->prev = f->cur;
  f->prev_val = f->cur_val;
  f->prev_end = f->cur_end;
  f->cur = f->cur_val = (uint32_t)P->i;
  f->cur_end = 0;
}

/* 1 parsed, 0 refused, -1 out of memory. On 0, P->stack[0..depth) are the containers
 * open where it stopped. */
static int parse_all(parser *P) {
  frame *stack = P->stack;
  bool has_key = false;
  uint32_t key_len = 0, key_pos = 0;
  const uint8_t *t = P->t;
  skip_ws(P);
  P->root = (uint32_t)P->i;
value:
  if (P->depth && !stack[P->depth - 1].obj) child_starts(P);
  if (P->depth) stack[P->depth - 1].cur_val = (uint32_t)P->i;
  if (P->i >= P->n) return 0;
  {
    frame *up = P->depth ? &stack[P->depth - 1] : NULL;
    if (up && up->node != ST_NONE) P->nodes[up->node].len++;
    st_node *v = NULL;
    uint32_t self = ST_NONE;
    if (!up || up->tree) {
      if (!(v = new_node(P))) return -1;
      self = (uint32_t)(P->nn - 1);
      v->pos = (uint32_t)P->i;
      if (has_key) {
        v->key_pos = key_pos;
        v->key_len = key_len;
      }
      v->next = self + 1;
    }
    has_key = false;
    uint8_t c = t[P->i];
    switch (c) {
      case '{':
      case '[': {
        if (P->depth >= ST_DEPTH_LIMIT) return 0;
        bool obj = c == '{', tree = v && obj && P->depth < P->tree_depth;
        if (v) {
          v->kind = obj ? ST_OBJ : ST_ARR;
          v->tree = tree;
        }
        stack[P->depth++] = (frame){.node = self, .obj = obj, .tree = tree, .open = (uint32_t)P->i};
        P->i++;
        skip_ws(P);
        if (P->i < P->n && t[P->i] == (obj ? '}' : ']')) {
          P->i++;
          P->depth--;
          goto after;
        }
        if (obj) goto member;
        goto value;
      }
      case '"': {
        uint32_t len;
        if (!parse_string(P, &len)) return 0;
        if (v) {
          v->kind = ST_STR;
          v->len = len;
        }
        break;
      }
      case 't':
      case 'f':
      case 'n': {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t wl = c == 'f' ? 5 : 4;
        if (P->n - P->i < wl || memcmp(t + P->i, w, wl) != 0) return 0;
        P->i += wl;
        if (v) v->kind = c == 't' ? ST_TRUE : c == 'f' ? ST_FALSE : ST_NULL;
        break;
      }
      default: {
        size_t a = P->i;
        if (c != '-' && !is_digit((char)c)) return 0;
        if (!parse_number(P)) return 0;
        if (v) {
          v->kind = ST_NUM;
          v->len = (uint32_t)(P->i - a);
        }
        break;
      }
    }
  }
after:
  if (!P->depth) {
    P->root_end = (uint32_t)P->i;
    skip_ws(P);
    return P->i == P->n;
  }
  stack[P->depth - 1].cur_end = (uint32_t)P->i;
  skip_ws(P);
  if (P->i >= P->n) return 0;
  {
    frame *top = &stack[P->depth - 1];
    uint8_t c = t[P->i];
    if (c == ',') {
      P->i++;
      skip_ws(P);
      if (top->obj) goto member;
      goto value;
    }
    if (c != (top->obj ? '}' : ']')) return 0;
    P->i++;
    if (top->tree) P->nodes[top->node].next = (uint32_t)P->nn;
    P->depth--;
    goto after;
  }
member:
  child_starts(P);
  if (P->i >= P->n || t[P->i] != '"') return 0;
  key_pos = (uint32_t)P->i;
  if (!parse_string(P, &key_len)) return 0;
  has_key = true;
  skip_ws(P);
  if (P->i >= P->n || t[P->i] != ':') return 0;
  P->i++;
  skip_ws(P);
  goto value;
}

fg_status st_json_parse_depth(const char *text, size_t n, const char *where, uint64_t base, int depth,
                              st_json *out) {
  memset(out, 0, sizeof *out);
  if (n >= (size_t)INT32_MAX) return st_json_diagnose(text, n, where, base, NULL);
  /* Every node but the root is an object member, and a member holds at least 4 bytes of
   * its own when its node is made (key quotes, colon, the value's first byte; 5 once the
   * comma or brace after it is read): the tape grows towards n / 4 + 2 nodes, never past. */
  parser P = {.t = (const uint8_t *)text, .n = n, .max = n / 4 + 2, .tree_depth = depth > 0 ? (size_t)depth : 0};
  P.cap = n / 64 + 16 < P.max ? n / 64 + 16 : P.max;
  P.nodes = malloc(P.cap * sizeof *P.nodes);
  P.strs = malloc(n + 1);
  P.stack = malloc(ST_DEPTH_LIMIT * sizeof *P.stack);
  int r = P.nodes && P.strs && P.stack ? parse_all(&P) : -1;
  /* The reference check refuses a bare number of more than one character: cJSON stops
   * after the "0" standing in for it and the rest reads as trailing characters. */
  if (r == 1 && P.nodes[0].kind == ST_NUM && P.nodes[0].len > 1) r = 0;
  if (r == 1) {
    free(P.stack);
    out->nodes = P.nodes;
    out->nnodes = P.nn;
    out->text = text;
    out->strs = P.strs;
    return FG_OK;
  }
  free(P.nodes);
  free(P.strs);
  P.nodes = NULL;
  P.strs = NULL;
  fg_status s = r < 0 ? fg_fail(FG_ERR_NOMEM, "%s: out of memory parsing JSON", where)
                      : st_json_diagnose(text, n, where, base, &P);
  free(P.stack);
  return s;
}

fg_status st_json_parse(const char *text, size_t n, const char *where, uint64_t base, st_json *out) {
  return st_json_parse_depth(text, n, where, base, 2, out);
}

void st_json_free(st_json *j) {
  if (!j) return;
  free(j->nodes);
  free(j->strs);
  memset(j, 0, sizeof *j);
}

bool st_num_u64(const st_json *j, const st_node *v, uint64_t *out) {
  if (!v || v->kind != ST_NUM || v->len == 0) return false;
  const char *s = st_str(j, v);
  uint64_t x = 0;
  for (uint32_t i = 0; i < v->len; i++) {
    char c = s[i];
    if (!is_digit(c)) return false;
    unsigned d = (unsigned)(c - '0');
    if (x > (UINT64_MAX - d) / 10) return false;
    x = x * 10 + d;
  }
  *out = x;
  return true;
}

/* ---------------------------------------------------------------- array elements */

/* The walk reads text the parser accepted, so it needs no checks. */
static size_t text_ws(const char *t, size_t i) {
  while (is_ws((uint8_t)t[i])) i++;
  return i;
}

/* From an opening quote: the byte after the closing one; *len gets the decoded length. */
static size_t text_string(const char *t, size_t i, uint32_t *len) {
  uint32_t k = 0;
  for (i++; t[i] != '"';) {
    if (t[i] != '\\') {
      i++;
      k++;
    } else if (t[i + 1] != 'u') {
      i += 2;
      k++;
    } else {
      unsigned cp = 0;
      hex4((const uint8_t *)t + i + 2, &cp);
      i += 6;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        i += 6; /* the low surrogate */
        k += 4;
      } else {
        k += cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3;
      }
    }
  }
  *len = k;
  return i + 1;
}

void st_iter_init(st_iter *it, const st_json *j, const st_node *arr) {
  it->j = j;
  it->at = (size_t)arr->pos + 1;
  it->left = arr->kind == ST_ARR ? arr->len : 0;
}

bool st_iter_next(st_iter *it, st_node *out) {
  if (!it->left) return false;
  const char *t = it->j->text;
  size_t i = text_ws(t, it->at);
  if (t[i] == ',') i = text_ws(t, i + 1);
  memset(out, 0, sizeof *out);
  out->pos = (uint32_t)i;
  char c = t[i];
  if (c == '"') {
    out->kind = ST_STR;
    i = text_string(t, i, &out->len);
  } else if (c == '-' || is_digit(c)) {
    out->kind = ST_NUM;
    size_t a = i;
    while (is_digit(t[i]) || t[i] == '-' || t[i] == '+' || t[i] == '.' || t[i] == 'e' || t[i] == 'E') i++;
    out->len = (uint32_t)(i - a);
  } else if (c == 't' || c == 'n') {
    out->kind = c == 't' ? ST_TRUE : ST_NULL;
    i += 4;
  } else if (c == 'f') {
    out->kind = ST_FALSE;
    i += 5;
  } else {
    out->kind = c == '{' ? ST_OBJ : ST_ARR;
    int open = 0;
    do {
      if (t[i] == '"') {
        uint32_t skip;
        i = text_string(t, i, &skip);
        continue;
      }
      if (t[i] == '{' || t[i] == '[') open++;
      else if (t[i] == '}' || t[i] == ']') open--;
      i++;
    } while (open);
  }
  it->at = i;
  it->left--;
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
