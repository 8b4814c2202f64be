/* JSON for the interpreter: the render context in (integers stay integers, 1.0 stays a float,
 * key order kept, as Python's json.loads gives them), and tojson out, spelled as Python's
 * json.dumps spells it under transformers' tojson (ensure_ascii, indent, separators,
 * sort_keys). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/jinja_internal.h"

typedef struct jp {
  jctx *c;
  const char *s;
  size_t n, i;
  char *err;
  size_t errcap;
  int depth;
} jp;

static bool perr(jp *p, const char *what) {
  snprintf(p->err, p->errcap, "%s at byte %zu", what, p->i);
  return false;
}

static void ws(jp *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static int hex4(const char *s) {
  int v = 0;
  for (int k = 0; k < 4; k++) {
    char h = s[k];
    int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

static size_t put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) { o[0] = (char)cp; return 1; }
  if (cp < 0x800) { o[0] = (char)(0xc0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 63)); o[2] = (char)(0x80 | (cp & 63));
    return 3;
  }
  o[0] = (char)(0xf0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 63)); o[2] = (char)(0x80 | ((cp >> 6) & 63));
  o[3] = (char)(0x80 | (cp & 63));
  return 4;
}

static bool pstr(jp *p, jv *out) {
  p->i++;
  size_t b = p->i;
  while (p->i < p->n && p->s[p->i] != '"' && p->s[p->i] != '\\') p->i++;
  if (p->i < p->n && p->s[p->i] == '"') { /* no escapes: borrow nothing, copy once */
    *out = jv_str(ja_strdup(&p->c->a, p->s + b, p->i - b), p->i - b);
    p->i++;
    return true;
  }
  size_t e = p->i; /* the closing quote bounds the decoded length (escapes only shrink) */
  while (e < p->n && p->s[e] != '"') e += p->s[e] == '\\' ? 2 : 1;
  char *o = ja_alloc(&p->c->a, (e < p->n ? e : p->n) - b + 1);
  size_t k = p->i - b;
  memcpy(o, p->s + b, k);
  for (;;) {
    if (p->i >= p->n) return perr(p, "unterminated string");
    char ch = p->s[p->i++];
    if (ch == '"') break;
    if ((unsigned char)ch < 0x20) return perr(p, "control character in a string");
    if (ch != '\\') {
      o[k++] = ch;
      continue;
    }
    if (p->i >= p->n) return perr(p, "unterminated string");
    char e = p->s[p->i++];
    switch (e) {
    case '"': case '\\': case '/': o[k++] = e; break;
    case 'n': o[k++] = '\n'; break;
    case 't': o[k++] = '\t'; break;
    case 'r': o[k++] = '\r'; break;
    case 'b': o[k++] = '\b'; break;
    case 'f': o[k++] = '\f'; break;
    case 'u': {
      int u = p->n - p->i >= 4 ? hex4(p->s + p->i) : -1;
      if (u < 0) return perr(p, "bad \\u escape");
      p->i += 4;
      uint32_t cp = (uint32_t)u;
      if (cp >= 0xd800 && cp < 0xdc00 && p->n - p->i >= 6 && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
        int lo = hex4(p->s + p->i + 2);
        if (lo >= 0xdc00 && lo < 0xe000) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (uint32_t)(lo - 0xdc00);
          p->i += 6;
        }
      }
      if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd; /* a lone surrogate has no UTF-8 form */
      k += put_utf8(o + k, cp);
      break;
    }
    default: return perr(p, "bad escape");
    }
  }
  o[k] = 0;
  *out = jv_str(o, k);
  return true;
}

static bool pval(jp *p, jv *out) {
  ws(p);
  if (p->i >= p->n) return perr(p, "expected a value");
  if (++p->depth > 200) return perr(p, "nested deeper than 200");
  char ch = p->s[p->i];
  bool ok = true;
  if (ch == '{') {
    p->i++;
    *out = jv_dict(p->c, 0);
    ws(p);
    if (p->i < p->n && p->s[p->i] == '}') p->i++;
    else
      for (;;) {
        ws(p);
        jv k, v;
        if (p->i >= p->n || p->s[p->i] != '"') return perr(p, "expected a string key");
        if (!pstr(p, &k)) return false;
        ws(p);
        if (p->i >= p->n || p->s[p->i] != ':') return perr(p, "expected ':'");
        p->i++;
        if (!pval(p, &v)) return false;
        jd_set(p->c, out->u.d, k, v);
        ws(p);
        if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
        if (p->i < p->n && p->s[p->i] == '}') { p->i++; break; }
        return perr(p, "expected ',' or '}'");
      }
  } else if (ch == '[') {
    p->i++;
    *out = jv_list(p->c, 0);
    ws(p);
    if (p->i < p->n && p->s[p->i] == ']') p->i++;
    else
      for (;;) {
        jv v;
        if (!pval(p, &v)) return false;
        jl_push(p->c, out->u.l, v);
        ws(p);
        if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
        if (p->i < p->n && p->s[p->i] == ']') { p->i++; break; }
        return perr(p, "expected ',' or ']'");
      }
  } else if (ch == '"') {
    ok = pstr(p, out);
  } else if (p->n - p->i >= 4 && !memcmp(p->s + p->i, "true", 4)) {
    *out = jv_bool(true); p->i += 4;
  } else if (p->n - p->i >= 5 && !memcmp(p->s + p->i, "false", 5)) {
    *out = jv_bool(false); p->i += 5;
  } else if (p->n - p->i >= 4 && !memcmp(p->s + p->i, "null", 4)) {
    *out = jv_none(); p->i += 4;
  } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
    size_t b = p->i;
    bool fl = false;
    if (p->s[p->i] == '-') p->i++;
    while (p->i < p->n && ((p->s[p->i] >= '0' && p->s[p->i] <= '9') || p->s[p->i] == '.' || p->s[p->i] == 'e' ||
                           p->s[p->i] == 'E' || p->s[p->i] == '+' || p->s[p->i] == '-')) {
      if (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E') fl = true;
      p->i++;
    }
    char num[64];
    if (p->i - b >= sizeof num) return perr(p, "number too long");
    memcpy(num, p->s + b, p->i - b);
    num[p->i - b] = 0;
    char *end;
    if (!fl) {
      long long v = strtoll(num, &end, 10);
      if (*end || end == num) return perr(p, "bad number");
      if ((v == LLONG_MAX || v == LLONG_MIN)) fl = true;
      else *out = jv_int(v);
    }
    if (fl) {
      double f = strtod(num, &end);
      if (*end || end == num) return perr(p, "bad number");
      *out = jv_float(f);
    }
  } else {
    return perr(p, "unexpected character");
  }
  p->depth--;
  return ok;
}

bool jjson_parse(jctx *c, const char *s, size_t n, jv *out, char *err, size_t errcap) {
  jp p = {.c = c, .s = s, .n = n, .err = err, .errcap = errcap};
  if (!pval(&p, out)) return false;
  ws(&p);
  if (p.i != n) return perr(&p, "trailing characters");
  return true;
}

/* ---- json.dumps ---------------------------------------------------------------------------- */

static void dump_str(jctx *c, jbuf *b, const char *s, size_t n, bool ascii) {
  jb_putc(c, b, '"');
  char tmp[16];
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    switch (ch) {
    case '"': jb_put(c, b, "\\\"", 2); continue;
    case '\\': jb_put(c, b, "\\\\", 2); continue;
    case '\n': jb_put(c, b, "\\n", 2); continue;
    case '\r': jb_put(c, b, "\\r", 2); continue;
    case '\t': jb_put(c, b, "\\t", 2); continue;
    case '\b': jb_put(c, b, "\\b", 2); continue;
    case '\f': jb_put(c, b, "\\f", 2); continue;
    default: break;
    }
    if (ch < 0x20 || (ascii && ch == 0x7f)) {
      jb_put(c, b, tmp, (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", ch));
    } else if (ch >= 0x80 && ascii) {
      int len = ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc0 ? 2 : 1;
      uint32_t cp = len == 1 ? 0xfffd : ch & (0x3f >> (len - 1));
      for (int k = 1; k < len && i + 1 < n; k++) cp = cp << 6 | ((unsigned char)s[++i] & 0x3f);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        jb_put(c, b, tmp, (size_t)snprintf(tmp, sizeof tmp, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff)));
      } else {
        jb_put(c, b, tmp, (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", cp));
      }
    } else {
      jb_putc(c, b, (char)ch);
    }
  }
  jb_putc(c, b, '"');
}

typedef struct dumpopts {
  bool ascii, sort;
  const char *ind, *isep, *ksep;
  size_t ilen;
} dumpopts;

static void newline(jctx *c, jbuf *b, const dumpopts *o, int level) {
  jb_putc(c, b, '\n');
  for (int k = 0; k < level; k++) jb_put(c, b, o->ind, o->ilen);
}

static void dump(jctx *c, const jnode *at, jbuf *b, jv v, const dumpopts *o, int level);

static void dump_key(jctx *c, const jnode *at, jbuf *b, jv k, const dumpopts *o) {
  if (k.t == JV_STR) {
    dump_str(c, b, k.u.s, k.n, o->ascii);
    return;
  }
  if (k.t == JV_LIST || k.t == JV_DICT || k.t == JV_UNDEF || k.t == JV_NS)
    jfail(c, at, FG_ERR_INVALID_ARG, "keys must be str, int, float, bool or None, not %s", jv_typename(k));
  jb_putc(c, b, '"');
  dump(c, at, b, k, o, 0);
  jb_putc(c, b, '"');
}

static int key_cmp(jctx *c, const jnode *at, jv a, jv b) { return jv_cmp(c, at, a, b); }

static void dump(jctx *c, const jnode *at, jbuf *b, jv v, const dumpopts *o, int level) {
  char tmp[64];
  if (level > 500) jfail(c, at, FG_ERR_INVALID_ARG, "tojson: nested too deeply");
  jstep(c, at);
  switch (v.t) {
  case JV_NONE: jb_put(c, b, "null", 4); return;
  case JV_BOOL: v.u.b ? jb_put(c, b, "true", 4) : jb_put(c, b, "false", 5); return;
  case JV_INT: jb_put(c, b, tmp, (size_t)snprintf(tmp, sizeof tmp, "%lld", (long long)v.u.i)); return;
  case JV_FLOAT:
    if (isnan(v.u.f)) jb_put(c, b, "NaN", 3);
    else if (isinf(v.u.f)) v.u.f > 0 ? jb_put(c, b, "Infinity", 8) : jb_put(c, b, "-Infinity", 9);
    else {
      jpy_float(tmp, sizeof tmp, v.u.f);
      jb_put(c, b, tmp, strlen(tmp));
    }
    return;
  case JV_STR: dump_str(c, b, v.u.s, v.n, o->ascii); return;
  case JV_LIST: {
    jlist *l = v.u.l;
    if (v.tuple == 2) jfail(c, at, FG_ERR_INVALID_ARG, "Object of type generator is not JSON serializable");
    if (!l->n) {
      jb_put(c, b, "[]", 2);
      return;
    }
    jb_putc(c, b, '[');
    for (size_t i = 0; i < l->n; i++) {
      if (i) jb_put(c, b, o->isep, strlen(o->isep));
      if (o->ind) newline(c, b, o, level + 1);
      dump(c, at, b, l->v[i], o, level + 1);
    }
    if (o->ind) newline(c, b, o, level);
    jb_putc(c, b, ']');
    return;
  }
  case JV_DICT: {
    jdict *d = v.u.d;
    if (!d->n) {
      jb_put(c, b, "{}", 2);
      return;
    }
    size_t *ord = ja_alloc(&c->a, d->n * sizeof *ord);
    for (size_t i = 0; i < d->n; i++) ord[i] = i;
    if (o->sort) /* insertion sort: stable, and dicts in templates are small */
      for (size_t i = 1; i < d->n; i++)
        for (size_t j = i; j > 0 && key_cmp(c, at, d->k[ord[j - 1]], d->k[ord[j]]) > 0; j--) {
          size_t t = ord[j];
          ord[j] = ord[j - 1];
          ord[j - 1] = t;
        }
    jb_putc(c, b, '{');
    for (size_t i = 0; i < d->n; i++) {
      if (i) jb_put(c, b, o->isep, strlen(o->isep));
      if (o->ind) newline(c, b, o, level + 1);
      dump_key(c, at, b, d->k[ord[i]], o);
      jb_put(c, b, o->ksep, strlen(o->ksep));
      dump(c, at, b, d->v[ord[i]], o, level + 1);
    }
    if (o->ind) newline(c, b, o, level);
    jb_putc(c, b, '}');
    return;
  }
  default:
    jfail(c, at, FG_ERR_INVALID_ARG, "Object of type %s is not JSON serializable", jv_typename(v));
  }
}

void jjson_dump(jctx *c, const jnode *at, jbuf *b, jv v, bool ascii, const char *indent, size_t ilen,
                const char *isep, const char *ksep, bool sort_keys) {
  dumpopts o = {.ascii = ascii, .sort = sort_keys, .ind = indent, .ilen = ilen, .isep = isep, .ksep = ksep};
  dump(c, at, b, v, &o, 0);
}
