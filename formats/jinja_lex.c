/* Jinja lexer: template text to tokens, with jinja2's whitespace control as Hugging Face
 * configures it (trim_blocks: one newline after a block or comment tag is dropped;
 * lstrip_blocks: spaces and tabs before a block or comment tag on its own line are dropped;
 * "-" strips all whitespace on that side, "+" keeps it). Also the arena both halves use. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/jinja_internal.h"

/* ---- arena --------------------------------------------------------------------------- */

static _Noreturn void ja_oom(jarena *a, size_t n) {
  a->st = fg_fail(a->total + n > a->limit ? FG_ERR_RANGE : FG_ERR_NOMEM, "jinja: %s needs more than %zu bytes of memory",
          a->what, a->limit);
  longjmp(*a->jb, 1);
}

void *ja_alloc(jarena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  jchunk *h = a->head;
  if (!h || h->cap - h->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    if (h && h->cap * 2 > cap && h->cap < (1u << 24)) cap = h->cap * 2;
    if (a->total + cap > a->limit) {
      if (a->total + n > a->limit) ja_oom(a, n);
      cap = n;
    }
    h = malloc(sizeof *h + cap);
    if (!h) ja_oom(a, n);
    h->next = a->head;
    h->used = 0;
    h->cap = cap;
    a->head = h;
    a->total += cap;
  }
  void *p = (char *)h->data + h->used;
  h->used += n;
  return p;
}

/* Whether bytes [p, p+n) end exactly at the arena's top, so growing them extends in place. */
static bool ja_at_top(const jarena *a, const void *p, size_t n) {
  const jchunk *h = a->head;
  if (!h || !p) return false;
  const char *base = (const char *)h->data, *end = (const char *)p + n;
  size_t top = h->used, rounded = ((size_t)(end - base) + 15) & ~(size_t)15;
  return (const char *)p >= base && end <= base + h->cap && rounded == top;
}

void *ja_grow(jarena *a, void *p, size_t old, size_t n) {
  if (n <= old) return p;
  jchunk *h = a->head;
  if (p && ja_at_top(a, p, old)) {
    size_t start = (size_t)((char *)p - (char *)h->data), need = (start + n + 15) & ~(size_t)15;
    if (need <= h->cap) {
      h->used = need;
      return p;
    }
  }
  void *q = ja_alloc(a, n);
  if (old) memcpy(q, p, old);
  return q;
}

char *ja_strdup(jarena *a, const char *s, size_t n) {
  char *p = ja_alloc(a, n + 1);
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}

void ja_free(jarena *a) {
  for (jchunk *h = a->head, *nx; h; h = nx) {
    nx = h->next;
    free(h);
  }
  a->head = NULL;
  a->total = 0;
}

_Noreturn void jsyntax(jarena *a, uint32_t line, uint32_t col, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  a->st = fg_fail(FG_ERR_INVALID_ARG, "jinja: line %u:%u: %s", line, col, msg);
  longjmp(*a->jb, 1);
}

/* ---- lexer ------------------------------------------------------------------------------ */

typedef struct lexer {
  jarena *a;
  const char *s;
  size_t n, i;
  uint32_t line, col; /* of s[i] */
  jtok *t;
  size_t nt, cap;
} lexer;

static void adv(lexer *L, size_t k) {
  for (; k && L->i < L->n; k--, L->i++) {
    if (L->s[L->i] == '\n') {
      L->line++;
      L->col = 1;
    } else if (((unsigned char)L->s[L->i] & 0xc0) != 0x80) {
      L->col++;
    }
  }
}

static jtok *emit(lexer *L, jtok_kind k, uint32_t line, uint32_t col) {
  if (L->nt == L->cap) {
    size_t cap = L->cap ? L->cap * 2 : 256;
    L->t = ja_grow(L->a, L->t, L->cap * sizeof *L->t, cap * sizeof *L->t);
    L->cap = cap;
  }
  jtok *t = &L->t[L->nt++];
  memset(t, 0, sizeof *t);
  t->k = k;
  t->line = line;
  t->col = col;
  return t;
}

static bool at(const lexer *L, const char *lit) {
  size_t k = strlen(lit);
  return L->n - L->i >= k && memcmp(L->s + L->i, lit, k) == 0;
}

static bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v'; }

/* The next tag start at or after i: "{{", "{%" or "{#"; n when none. */
static size_t next_tag(const char *s, size_t n, size_t i) {
  for (; i + 1 < n; i++) {
    const char *p = memchr(s + i, '{', n - i - 1);
    if (!p) return n;
    i = (size_t)(p - s);
    if (s[i + 1] == '{' || s[i + 1] == '%' || s[i + 1] == '#') return i;
  }
  return n;
}

/* Data s[from, to) before a tag whose opening is tag[0..1] followed by sign ('-', '+' or other). */
static void emit_data(lexer *L, size_t from, size_t to, char kind, char sign, uint32_t line, uint32_t col) {
  size_t e = to;
  if (sign == '-') {
    while (e > from && is_space(L->s[e - 1])) e--;
  } else if (sign != '+' && kind != '{') {
    size_t ls = e;
    while (ls > from && (L->s[ls - 1] == ' ' || L->s[ls - 1] == '\t')) ls--;
    bool line_start = ls > from ? L->s[ls - 1] == '\n' : (from == 0 || L->s[from - 1] == '\n');
    if (line_start) e = ls;
  }
  if (e > from) {
    jtok *t = emit(L, JT_DATA, line, col);
    t->s = L->s + from;
    t->n = e - from;
  }
}

/* After a block or comment end: "-" eats all whitespace, otherwise one newline (trim_blocks)
 * unless "+" kept it. */
static void after_end(lexer *L, char sign, bool block) {
  if (sign == '-') {
    while (L->i < L->n && is_space(L->s[L->i])) adv(L, 1);
  } else if (block && sign != '+' && L->i < L->n && L->s[L->i] == '\n') {
    adv(L, 1);
  }
}

static void lex_string(lexer *L) {
  uint32_t line = L->line, col = L->col;
  char q = L->s[L->i];
  adv(L, 1);
  char *buf = ja_alloc(L->a, L->n - L->i + 1);
  size_t k = 0;
  for (;;) {
    if (L->i >= L->n) jsyntax(L->a, line, col, "unterminated string: expected the closing %c", q);
    char ch = L->s[L->i];
    if (ch == q) {
      adv(L, 1);
      break;
    }
    if (ch != '\\' || L->i + 1 >= L->n) {
      buf[k++] = ch;
      adv(L, 1);
      continue;
    }
    char e = L->s[L->i + 1];
    adv(L, 2);
    switch (e) {
    case 'n': buf[k++] = '\n'; break;
    case 't': buf[k++] = '\t'; break;
    case 'r': buf[k++] = '\r'; break;
    case '0': buf[k++] = '\0'; break;
    case 'a': buf[k++] = '\a'; break;
    case 'b': buf[k++] = '\b'; break;
    case 'f': buf[k++] = '\f'; break;
    case 'v': buf[k++] = '\v'; break;
    case '\\': case '\'': case '"': buf[k++] = e; break;
    case '\n': break;
    case 'x': case 'u': case 'U': {
      int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      uint32_t cp = 0;
      for (int d = 0; d < nd; d++, adv(L, 1)) {
        char h = L->i < L->n ? L->s[L->i] : 0;
        int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (v < 0) jsyntax(L->a, L->line, L->col, "bad \\%c escape: expected %d hex digits", e, nd);
        cp = cp * 16 + (uint32_t)v;
      }
      if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) jsyntax(L->a, L->line, L->col, "escape outside Unicode");
      if (cp < 0x80) buf[k++] = (char)cp;
      else if (cp < 0x800) { buf[k++] = (char)(0xc0 | cp >> 6); buf[k++] = (char)(0x80 | (cp & 63)); }
      else if (cp < 0x10000) { buf[k++] = (char)(0xe0 | cp >> 12); buf[k++] = (char)(0x80 | ((cp >> 6) & 63)); buf[k++] = (char)(0x80 | (cp & 63)); }
      else { buf[k++] = (char)(0xf0 | cp >> 18); buf[k++] = (char)(0x80 | ((cp >> 12) & 63)); buf[k++] = (char)(0x80 | ((cp >> 6) & 63)); buf[k++] = (char)(0x80 | (cp & 63)); }
      break;
    }
    default: buf[k++] = '\\'; buf[k++] = e; break;
    }
  }
  jtok *t = emit(L, JT_STRING, line, col);
  t->s = buf;
  t->n = k;
}

static void lex_number(lexer *L, bool after_dot) {
  uint32_t line = L->line, col = L->col;
  size_t b = L->i;
  char digits[128];
  size_t k = 0;
  bool fl = false;
  while (L->i < L->n && ((L->s[L->i] >= '0' && L->s[L->i] <= '9') || L->s[L->i] == '_')) {
    if (L->s[L->i] != '_' && k < sizeof digits - 8) digits[k++] = L->s[L->i];
    adv(L, 1);
  }
  if (!after_dot && L->i + 1 < L->n && L->s[L->i] == '.' && L->s[L->i + 1] >= '0' && L->s[L->i + 1] <= '9') {
    fl = true;
    digits[k++] = '.';
    adv(L, 1);
    while (L->i < L->n && ((L->s[L->i] >= '0' && L->s[L->i] <= '9') || L->s[L->i] == '_')) {
      if (L->s[L->i] != '_' && k < sizeof digits - 8) digits[k++] = L->s[L->i];
      adv(L, 1);
    }
  }
  if (!after_dot && L->i < L->n && (L->s[L->i] == 'e' || L->s[L->i] == 'E')) {
    size_t j = L->i + 1;
    if (j < L->n && (L->s[j] == '+' || L->s[j] == '-')) j++;
    if (j < L->n && L->s[j] >= '0' && L->s[j] <= '9') {
      fl = true;
      digits[k++] = 'e';
      adv(L, 1);
      if (L->s[L->i] == '+' || L->s[L->i] == '-') {
        digits[k++] = L->s[L->i];
        adv(L, 1);
      }
      while (L->i < L->n && L->s[L->i] >= '0' && L->s[L->i] <= '9') {
        if (k < sizeof digits - 2) digits[k++] = L->s[L->i];
        adv(L, 1);
      }
    }
  }
  digits[k] = 0;
  jtok *t = emit(L, fl ? JT_FLOAT : JT_INT, line, col);
  t->s = L->s + b;
  t->n = L->i - b;
  if (fl) {
    t->f = strtod(digits, NULL);
  } else {
    int64_t v = 0;
    for (size_t d = 0; d < k; d++) {
      if (v > (INT64_MAX - (digits[d] - '0')) / 10) jsyntax(L->a, line, col, "integer literal too large");
      v = v * 10 + (digits[d] - '0');
    }
    t->i = v;
  }
}

static const char *const OPS[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                  "=", ".", ",", ":", "|", "(", ")", "[", "]", "{", "}"};

/* Tokens inside a tag until its end (end is "}}" or "%}"); returns the strip sign before it. */
static char lex_tag(lexer *L, const char *end, uint32_t tline, uint32_t tcol) {
  int depth = 0;
  for (;;) {
    while (L->i < L->n && is_space(L->s[L->i])) adv(L, 1);
    if (L->i >= L->n) jsyntax(L->a, tline, tcol, "tag opened here is never closed: expected '%s'", end);
    if (depth == 0) {
      if (at(L, end)) return 0;
      if ((L->s[L->i] == '-' || L->s[L->i] == '+') && L->n - L->i >= 3 && memcmp(L->s + L->i + 1, end, 2) == 0 &&
          (L->s[L->i] == '-' || end[0] == '%')) {
        char sign = L->s[L->i];
        adv(L, 1);
        return sign;
      }
    }
    char ch = L->s[L->i];
    bool prev_dot = L->nt && L->t[L->nt - 1].k == JT_OP && L->t[L->nt - 1].s[0] == '.';
    if (ch == '\'' || ch == '"') {
      lex_string(L);
    } else if (ch >= '0' && ch <= '9') {
      lex_number(L, prev_dot);
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
      jtok *t = emit(L, JT_NAME, L->line, L->col);
      size_t b = L->i;
      while (L->i < L->n && ((L->s[L->i] >= 'a' && L->s[L->i] <= 'z') || (L->s[L->i] >= 'A' && L->s[L->i] <= 'Z') ||
                             (L->s[L->i] >= '0' && L->s[L->i] <= '9') || L->s[L->i] == '_'))
        adv(L, 1);
      t->s = L->s + b;
      t->n = L->i - b;
    } else {
      size_t k = 0;
      for (; k < sizeof OPS / sizeof OPS[0]; k++)
        if (at(L, OPS[k])) break;
      if (k == sizeof OPS / sizeof OPS[0])
        jsyntax(L->a, L->line, L->col, "unexpected character '%c' in a tag", ch >= 32 && ch < 127 ? ch : '?');
      if (OPS[k][0] == '(' || OPS[k][0] == '[' || OPS[k][0] == '{') depth++;
      if ((OPS[k][0] == ')' || OPS[k][0] == ']' || OPS[k][0] == '}') && depth > 0) depth--;
      jtok *t = emit(L, JT_OP, L->line, L->col);
      t->s = OPS[k];
      t->n = strlen(OPS[k]);
      adv(L, t->n);
    }
  }
}

/* {% raw %} ... {% endraw %}: the text between as data. L->i is just past "raw %}". */
static void lex_raw(lexer *L, char end_sign, uint32_t line, uint32_t col) {
  after_end(L, end_sign, true);
  size_t from = L->i;
  for (size_t i = from;; i++) {
    i = next_tag(L->s, L->n, i);
    if (i >= L->n) jsyntax(L->a, line, col, "{%% raw %%} is never closed: expected {%% endraw %%}");
    if (L->s[i + 1] != '%') continue;
    size_t j = i + 2;
    char sign = j < L->n ? L->s[j] : 0;
    if (sign == '-' || sign == '+') j++;
    while (j < L->n && is_space(L->s[j])) j++;
    if (L->n - j < 6 || memcmp(L->s + j, "endraw", 6) != 0) continue;
    j += 6;
    while (j < L->n && is_space(L->s[j])) j++;
    char esign = 0;
    if (j < L->n && (L->s[j] == '-' || L->s[j] == '+')) esign = L->s[j++];
    if (L->n - j < 2 || memcmp(L->s + j, "%}", 2) != 0) continue;
    emit_data(L, from, i, '%', sign, line, col);
    adv(L, j + 2 - L->i);
    after_end(L, esign, true);
    return;
  }
}

void jlex(jarena *a, const char *src, size_t len, jtok **toks, size_t *n) {
  lexer L = {.a = a, .s = src, .n = len, .line = 1, .col = 1};
  while (L.i < L.n) {
    size_t from = L.i, tag = next_tag(L.s, L.n, L.i);
    uint32_t dline = L.line, dcol = L.col;
    if (tag >= L.n) {
      emit_data(&L, from, L.n, '{', 0, dline, dcol);
      break;
    }
    char kind = L.s[tag + 1], sign = tag + 2 < L.n ? L.s[tag + 2] : 0;
    adv(&L, tag - L.i);
    uint32_t tline = L.line, tcol = L.col;
    emit_data(&L, from, tag, kind, sign == '-' || (sign == '+' && kind != '{') ? sign : 0, dline, dcol);
    adv(&L, (sign == '-' || (sign == '+' && kind != '{')) ? 3 : 2);
    if (kind == '#') {
      const char *e = NULL;
      for (size_t i = L.i; i + 1 < L.n; i++)
        if (L.s[i] == '#' && L.s[i + 1] == '}') {
          e = L.s + i;
          break;
        }
      if (!e) jsyntax(a, tline, tcol, "comment opened here is never closed: expected '#}'");
      size_t ei = (size_t)(e - L.s);
      char es = ei > L.i && (L.s[ei - 1] == '-' || L.s[ei - 1] == '+') ? L.s[ei - 1] : 0;
      adv(&L, ei + 2 - L.i);
      after_end(&L, es, true);
      continue;
    }
    if (kind == '%') {
      size_t j = L.i;
      while (j < L.n && is_space(L.s[j])) j++;
      if (L.n - j >= 3 && memcmp(L.s + j, "raw", 3) == 0) {
        size_t k = j + 3;
        while (k < L.n && is_space(L.s[k])) k++;
        char es = 0;
        if (k < L.n && (L.s[k] == '-' || L.s[k] == '+')) es = L.s[k++];
        if (L.n - k >= 2 && memcmp(L.s + k, "%}", 2) == 0) {
          adv(&L, k + 2 - L.i);
          lex_raw(&L, es, tline, tcol);
          continue;
        }
      }
    }
    emit(&L, kind == '{' ? JT_VAR_BEGIN : JT_BLOCK_BEGIN, tline, tcol);
    const char *end = kind == '{' ? "}}" : "%}";
    char es = lex_tag(&L, end, tline, tcol);
    emit(&L, kind == '{' ? JT_VAR_END : JT_BLOCK_END, L.line, L.col);
    adv(&L, 2);
    after_end(&L, es, kind == '%');
  }
  emit(&L, JT_EOF, L.line, L.col);
  *toks = L.t;
  *n = L.nt;
}
