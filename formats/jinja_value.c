/* Jinja values with Python's semantics: truthiness, equality across int/float/bool, ordering
 * that fails where Python's does, and str()/repr() spelled as CPython spells them (floats
 * by the shortest round-trip digits, strings quoted as repr quotes them). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/jinja_internal.h"

_Noreturn void jfail(jctx *c, const jnode *at, fg_status s, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (at) c->a.st = fg_fail(s, "jinja: line %u:%u: %s", at->line, at->col, msg);
  else c->a.st = fg_fail(s, "jinja: %s", msg);
  longjmp(c->jb, 1);
}

jv jv_undef(const char *name) {
  jv v = {.t = JV_UNDEF};
  v.u.s = name;
  return v;
}
jv jv_none(void) { return (jv){.t = JV_NONE}; }
jv jv_bool(bool b) {
  jv v = {.t = JV_BOOL};
  v.u.b = b;
  return v;
}
jv jv_int(int64_t i) {
  jv v = {.t = JV_INT};
  v.u.i = i;
  return v;
}
jv jv_float(double f) {
  jv v = {.t = JV_FLOAT};
  v.u.f = f;
  return v;
}
jv jv_str(const char *s, size_t n) {
  jv v = {.t = JV_STR, .n = n};
  v.u.s = s;
  return v;
}
jv jv_strz(const char *s) { return jv_str(s, strlen(s)); }

jv jv_list(jctx *c, size_t cap) {
  jv v = {.t = JV_LIST};
  v.u.l = ja_alloc(&c->a, sizeof *v.u.l);
  v.u.l->n = 0;
  v.u.l->cap = cap;
  v.u.l->v = cap ? ja_alloc(&c->a, cap * sizeof(jv)) : NULL;
  return v;
}

jv jv_dict(jctx *c, size_t cap) {
  jv v = {.t = JV_DICT};
  v.u.d = ja_alloc(&c->a, sizeof *v.u.d);
  memset(v.u.d, 0, sizeof *v.u.d);
  if (cap) {
    v.u.d->k = ja_alloc(&c->a, cap * sizeof(jv));
    v.u.d->v = ja_alloc(&c->a, cap * sizeof(jv));
    v.u.d->cap = cap;
  }
  return v;
}

void jl_push(jctx *c, jlist *l, jv v) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 4;
    l->v = ja_grow(&c->a, l->v, l->cap * sizeof(jv), cap * sizeof(jv));
    l->cap = cap;
  }
  l->v[l->n++] = v;
}

jv *jd_get(const jdict *d, jv k) {
  for (size_t i = 0; i < d->n; i++)
    if (jv_eq(d->k[i], k) && (d->k[i].t == JV_STR) == (k.t == JV_STR)) return &d->v[i];
  return NULL;
}

jv *jd_gets(const jdict *d, const char *s, size_t n) {
  for (size_t i = 0; i < d->n; i++)
    if (d->k[i].t == JV_STR && d->k[i].n == n && memcmp(d->k[i].u.s, s, n) == 0) return &d->v[i];
  return NULL;
}

void jd_set(jctx *c, jdict *d, jv k, jv v) {
  jv *have = jd_get(d, k);
  if (have) {
    *have = v;
    return;
  }
  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 4;
    d->k = ja_grow(&c->a, d->k, d->cap * sizeof(jv), cap * sizeof(jv));
    d->v = ja_grow(&c->a, d->v, d->cap * sizeof(jv), cap * sizeof(jv));
    d->cap = cap;
  }
  d->k[d->n] = k;
  d->v[d->n++] = v;
}

bool jv_truthy(jv v) {
  switch (v.t) {
  case JV_UNDEF: case JV_NONE: return false;
  case JV_BOOL: return v.u.b;
  case JV_INT: return v.u.i != 0;
  case JV_FLOAT: return v.u.f != 0.0;
  case JV_STR: return v.n != 0;
  case JV_LIST: return v.tuple == 2 || v.u.l->n != 0;
  case JV_DICT: return v.u.d->n != 0;
  default: return true;
  }
}

static bool is_num(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double num(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : v.u.b; }
static int64_t inum(jv v) { return v.t == JV_INT ? v.u.i : v.u.b; }

bool jv_eq(jv a, jv b) {
  if (is_num(a) && is_num(b)) {
    if (a.t != JV_FLOAT && b.t != JV_FLOAT) return inum(a) == inum(b);
    return num(a) == num(b);
  }
  if (a.t != b.t) return false;
  switch (a.t) {
  case JV_UNDEF: case JV_NONE: return true;
  case JV_STR: return a.n == b.n && (a.n == 0 || memcmp(a.u.s, b.u.s, a.n) == 0);
  case JV_LIST:
    if (a.tuple == 2 || b.tuple == 2) return a.u.l == b.u.l && a.tuple == b.tuple;
    if (a.tuple != b.tuple || a.u.l->n != b.u.l->n) return false;
    for (size_t i = 0; i < a.u.l->n; i++)
      if (!jv_eq(a.u.l->v[i], b.u.l->v[i])) return false;
    return true;
  case JV_DICT:
    if (a.u.d->n != b.u.d->n) return false;
    for (size_t i = 0; i < a.u.d->n; i++) {
      jv *o = jd_get(b.u.d, a.u.d->k[i]);
      if (!o || !jv_eq(a.u.d->v[i], *o)) return false;
    }
    return true;
  case JV_NS: return a.u.d == b.u.d;
  case JV_FUNC: return a.u.fn == b.u.fn;
  case JV_LOOP: return a.u.lp == b.u.lp;
  default: return false;
  }
}

const char *jv_typename(jv v) {
  switch (v.t) {
  case JV_UNDEF: return "Undefined";
  case JV_NONE: return "NoneType";
  case JV_BOOL: return "bool";
  case JV_INT: return "int";
  case JV_FLOAT: return "float";
  case JV_STR: return v.tuple ? "Markup" : "str";
  case JV_LIST: return v.tuple == 2 ? "generator" : v.tuple ? "tuple" : "list";
  case JV_DICT: return "dict";
  case JV_NS: return "Namespace";
  case JV_FUNC: return "function";
  default: return "LoopContext";
  }
}

int jv_cmp(jctx *c, const jnode *at, jv a, jv b) {
  if (is_num(a) && is_num(b)) {
    if (a.t != JV_FLOAT && b.t != JV_FLOAT) return inum(a) < inum(b) ? -1 : inum(a) > inum(b);
    double x = num(a), y = num(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.t == JV_STR && b.t == JV_STR) {
    size_t m = a.n < b.n ? a.n : b.n;
    int r = m ? memcmp(a.u.s, b.u.s, m) : 0;
    return r ? r : (a.n < b.n ? -1 : a.n > b.n);
  }
  if (a.t == JV_LIST && b.t == JV_LIST && a.tuple == b.tuple && a.tuple != 2) {
    for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
      if (jv_eq(a.u.l->v[i], b.u.l->v[i])) continue;
      return jv_cmp(c, at, a.u.l->v[i], b.u.l->v[i]);
    }
    return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
  }
  jv_check_defined(c, at, a);
  jv_check_defined(c, at, b);
  jfail(c, at, FG_ERR_INVALID_ARG, "comparison not supported between instances of '%s' and '%s'", jv_typename(a),
        jv_typename(b));
}

void jv_check_defined(jctx *c, const jnode *at, jv v) {
  if (v.t != JV_UNDEF) return;
  if (v.u.s) jfail(c, at, FG_ERR_INVALID_ARG, "%s is undefined", v.u.s);
  jfail(c, at, FG_ERR_INVALID_ARG, "a value is undefined");
}

/* ---- text ------------------------------------------------------------------------------ */

void jb_put(jctx *c, jbuf *b, const char *s, size_t n) {
  if (!n) return;
  if (b->n + n > c->o.max_output)
    jfail(c, NULL, FG_ERR_RANGE, "output exceeds the bound of %zu bytes", c->o.max_output);
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    b->p = ja_grow(&c->a, b->p, b->cap, cap);
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

void jb_putc(jctx *c, jbuf *b, char ch) { jb_put(c, b, &ch, 1); }

/* repr(float): the shortest digits that read back as f, fixed notation for exponents in
 * [-4, 16), scientific otherwise, as CPython prints them. */
void jpy_float(char *buf, size_t cap, double f) {
  if (isnan(f)) {
    snprintf(buf, cap, "nan");
    return;
  }
  if (isinf(f)) {
    snprintf(buf, cap, f < 0 ? "-inf" : "inf");
    return;
  }
  char e[40];
  int p = 1;
  for (; p <= 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, f);
    if (strtod(e, NULL) == f) break;
  }
  char digits[24];
  int nd = 0, exp10 = 0;
  bool neg = e[0] == '-';
  for (const char *q = e + neg; *q && *q != 'e'; q++)
    if (*q >= '0' && *q <= '9') digits[nd++] = *q;
  exp10 = atoi(strchr(e, 'e') + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  char *o = buf;
  size_t left = cap;
#define OUT(...)                                         \
  do {                                                   \
    int w_ = snprintf(o, left, __VA_ARGS__);             \
    if (w_ < 0 || (size_t)w_ >= left) return;            \
    o += w_;                                             \
    left -= (size_t)w_;                                  \
  } while (0)
  if (neg) OUT("-");
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      OUT("0.");
      for (int z = 0; z < -exp10 - 1; z++) OUT("0");
      OUT("%.*s", nd, digits);
    } else if (nd <= exp10 + 1) {
      OUT("%.*s", nd, digits);
      for (int z = nd; z < exp10 + 1; z++) OUT("0");
      OUT(".0");
    } else {
      OUT("%.*s.%.*s", exp10 + 1, digits, nd - exp10 - 1, digits + exp10 + 1);
    }
  } else {
    OUT("%c", digits[0]);
    if (nd > 1) OUT(".%.*s", nd - 1, digits + 1);
    OUT("e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  }
#undef OUT
}

static void repr_str(jctx *c, jbuf *b, const char *s, size_t n) {
  bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
  char q = sq && !dq ? '"' : '\'';
  jb_putc(c, b, q);
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    char tmp[8];
    if (ch == '\\' || ch == (unsigned char)q) {
      jb_putc(c, b, '\\');
      jb_putc(c, b, (char)ch);
    } else if (ch == '\n') jb_put(c, b, "\\n", 2);
    else if (ch == '\r') jb_put(c, b, "\\r", 2);
    else if (ch == '\t') jb_put(c, b, "\\t", 2);
    else if (ch < 0x20 || ch == 0x7f) {
      snprintf(tmp, sizeof tmp, "\\x%02x", ch);
      jb_put(c, b, tmp, 4);
    } else jb_putc(c, b, (char)ch);
  }
  jb_putc(c, b, q);
}

static void put_items(jctx *c, jbuf *b, jv v) {
  if (v.t == JV_LIST && v.tuple == 2) {
    jb_put(c, b, "<generator object>", 18);
    return;
  }
  if (v.t == JV_LIST) {
    jb_putc(c, b, v.tuple ? '(' : '[');
    for (size_t i = 0; i < v.u.l->n; i++) {
      if (i) jb_put(c, b, ", ", 2);
      jv_repr_into(c, b, v.u.l->v[i]);
    }
    if (v.tuple && v.u.l->n == 1) jb_putc(c, b, ',');
    jb_putc(c, b, v.tuple ? ')' : ']');
    return;
  }
  jb_putc(c, b, '{');
  for (size_t i = 0; i < v.u.d->n; i++) {
    if (i) jb_put(c, b, ", ", 2);
    jv_repr_into(c, b, v.u.d->k[i]);
    jb_put(c, b, ": ", 2);
    jv_repr_into(c, b, v.u.d->v[i]);
  }
  jb_putc(c, b, '}');
}

void jv_str_into(jctx *c, jbuf *b, jv v) {
  char tmp[64];
  switch (v.t) {
  case JV_UNDEF: return;
  case JV_NONE: jb_put(c, b, "None", 4); return;
  case JV_BOOL: v.u.b ? jb_put(c, b, "True", 4) : jb_put(c, b, "False", 5); return;
  case JV_INT: jb_put(c, b, tmp, (size_t)snprintf(tmp, sizeof tmp, "%lld", (long long)v.u.i)); return;
  case JV_FLOAT: jpy_float(tmp, sizeof tmp, v.u.f); jb_put(c, b, tmp, strlen(tmp)); return;
  case JV_STR: jb_put(c, b, v.u.s, v.n); return;
  case JV_LIST: case JV_DICT: put_items(c, b, v); return;
  case JV_NS: {
    jb_put(c, b, "<Namespace ", 11);
    jv d = {.t = JV_DICT};
    d.u.d = v.u.d;
    put_items(c, b, d);
    jb_putc(c, b, '>');
    return;
  }
  case JV_FUNC:
    jb_put(c, b, "<function ", 10);
    if (v.u.fn->name) jb_put(c, b, v.u.fn->name, v.u.fn->nlen);
    jb_putc(c, b, '>');
    return;
  default:
    jb_put(c, b, tmp, (size_t)snprintf(tmp, sizeof tmp, "<LoopContext %zu/%zu>", v.u.lp->i + 1, v.u.lp->items->n));
    return;
  }
}

void jv_repr_into(jctx *c, jbuf *b, jv v) {
  if (v.t == JV_STR) repr_str(c, b, v.u.s, v.n);
  else if (v.t == JV_UNDEF) jb_put(c, b, "Undefined", 9);
  else jv_str_into(c, b, v);
}

jv jv_escape(jctx *c, jv s) {
  if (s.t == JV_STR && s.tuple) return s;
  s = jv_to_str(c, s);
  jbuf b = {0};
  for (size_t i = 0; i < s.n; i++) {
    switch (s.u.s[i]) {
    case '&': jb_put(c, &b, "&amp;", 5); break;
    case '<': jb_put(c, &b, "&lt;", 4); break;
    case '>': jb_put(c, &b, "&gt;", 4); break;
    case '"': jb_put(c, &b, "&#34;", 5); break;
    case '\'': jb_put(c, &b, "&#39;", 5); break;
    default: jb_putc(c, &b, s.u.s[i]);
    }
  }
  jv r = jv_str(b.p ? b.p : "", b.n);
  r.tuple = 1;
  return r;
}

jv jv_markup_like(jv s, jv model) {
  if (s.t == JV_STR) s.tuple = model.t == JV_STR && model.tuple;
  return s;
}

jv jv_to_str(jctx *c, jv v) {
  if (v.t == JV_STR) return v;
  jbuf b = {0};
  jv_str_into(c, &b, v);
  return jv_str(b.p ? b.p : "", b.n);
}

/* ---- iteration and UTF-8 ---------------------------------------------------------------- */

size_t ju_len(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xc0) != 0x80;
  return k;
}

size_t ju_off(const char *s, size_t n, size_t k) {
  size_t i = 0;
  for (; i < n; i++) {
    if (((unsigned char)s[i] & 0xc0) != 0x80) {
      if (k == 0) return i;
      k--;
    }
  }
  return n;
}

jlist *jv_iter(jctx *c, const jnode *at, jv v) {
  jv l;
  switch (v.t) {
  case JV_LIST: return v.u.l;
  case JV_UNDEF: return jv_list(c, 0).u.l;
  case JV_DICT: case JV_NS:
    l = jv_list(c, v.u.d->n);
    for (size_t i = 0; i < v.u.d->n; i++) jl_push(c, l.u.l, v.u.d->k[i]);
    return l.u.l;
  case JV_STR:
    l = jv_list(c, 0);
    for (size_t i = 0; i < v.n;) {
      size_t e = i + 1;
      while (e < v.n && ((unsigned char)v.u.s[e] & 0xc0) == 0x80) e++;
      jl_push(c, l.u.l, jv_str(v.u.s + i, e - i));
      i = e;
    }
    return l.u.l;
  default:
    jfail(c, at, FG_ERR_INVALID_ARG, "'%s' object is not iterable", jv_typename(v));
  }
}
