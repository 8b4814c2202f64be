/* The str, dict and list methods chat templates call, with Python's semantics (whitespace is
 * Unicode whitespace as str.isspace() sees it; case mapping by utf8proc), and printf-style
 * and str.format formatting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "formats/jinja_internal.h"

static utf8proc_int32_t cp_at(const char *s, size_t n, size_t i, size_t *w) {
  utf8proc_int32_t cp;
  utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
  if (k <= 0) {
    *w = 1;
    return -1;
  }
  *w = (size_t)k;
  return cp;
}

static bool py_space(utf8proc_int32_t cp) {
  if (cp < 0) return false;
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x1f)) return true;
  if (cp < 0x80) return false;
  const utf8proc_property_t *p = utf8proc_get_property(cp);
  return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

static bool in_chars(jv chars, const char *s, size_t w) {
  for (size_t i = 0; i < chars.n;) {
    size_t k = 1;
    while (i + k < chars.n && ((unsigned char)chars.u.s[i + k] & 0xc0) == 0x80) k++;
    if (k == w && !memcmp(chars.u.s + i, s, w)) return true;
    i += k;
  }
  return false;
}

jv jpy_strip(jctx *c, const jnode *at, jv s, jv chars, int which) {
  if (s.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "strip: expected a string, got %s", jv_typename(s));
  if (chars.t != JV_NONE && chars.t != JV_UNDEF && chars.t != JV_STR)
    jfail(c, at, FG_ERR_INVALID_ARG, "strip arg must be None or str");
  bool ws = chars.t != JV_STR;
  size_t a = 0, e = s.n, w;
  if (which != 2)
    while (a < e) {
      utf8proc_int32_t cp = cp_at(s.u.s, e, a, &w);
      if (ws ? !py_space(cp) : !in_chars(chars, s.u.s + a, w)) break;
      a += w;
    }
  if (which != 1)
    while (e > a) {
      size_t b = e - 1;
      while (b > a && ((unsigned char)s.u.s[b] & 0xc0) == 0x80) b--;
      utf8proc_int32_t cp = cp_at(s.u.s, e, b, &w);
      if (ws ? !py_space(cp) : !in_chars(chars, s.u.s + b, e - b)) break;
      e = b;
    }
  return jv_str(s.u.s + a, e - a);
}

jv jpy_split(jctx *c, const jnode *at, jv s, jv sep, int64_t maxsplit) {
  jv out = jv_list(c, 0);
  size_t w;
  if (sep.t != JV_STR) {
    size_t i = 0;
    for (;;) {
      while (i < s.n && py_space(cp_at(s.u.s, s.n, i, &w))) i += w;
      if (i >= s.n) break;
      if (maxsplit >= 0 && (int64_t)out.u.l->n >= maxsplit) {
        size_t e = s.n;
        while (e > i) {
          size_t b = e - 1;
          while (b > i && ((unsigned char)s.u.s[b] & 0xc0) == 0x80) b--;
          if (!py_space(cp_at(s.u.s, e, b, &w))) break;
          e = b;
        }
        jl_push(c, out.u.l, jv_str(s.u.s + i, e - i));
        break;
      }
      size_t b = i;
      while (i < s.n && !py_space(cp_at(s.u.s, s.n, i, &w))) i += w;
      jl_push(c, out.u.l, jv_str(s.u.s + b, i - b));
      jstep(c, at);
    }
    return out;
  }
  if (!sep.n) jfail(c, at, FG_ERR_INVALID_ARG, "empty separator");
  size_t b = 0;
  for (size_t i = 0; i + sep.n <= s.n;) {
    if ((maxsplit < 0 || (int64_t)out.u.l->n < maxsplit) && !memcmp(s.u.s + i, sep.u.s, sep.n)) {
      jl_push(c, out.u.l, jv_str(s.u.s + b, i - b));
      jstep(c, at);
      i += sep.n;
      b = i;
    } else {
      i++;
    }
  }
  jl_push(c, out.u.l, jv_str(s.u.s + b, s.n - b));
  return out;
}

jv jpy_replace(jctx *c, jv s, jv old, jv new_, int64_t count) {
  jbuf b = {0};
  size_t i = 0;
  int64_t done = 0;
  if (!old.n) { /* Python inserts new_ between every character */
    for (size_t w; i <= s.n && (count < 0 || done < count); i += w, done++) {
      jb_put(c, &b, new_.u.s, new_.n);
      if (i == s.n) {
        i++;
        break;
      }
      cp_at(s.u.s, s.n, i, &w);
      jb_put(c, &b, s.u.s + i, w);
    }
    if (i < s.n) jb_put(c, &b, s.u.s + i, s.n - i);
    return jv_str(b.p ? b.p : "", b.n);
  }
  while (i < s.n) {
    if ((count < 0 || done < count) && i + old.n <= s.n && !memcmp(s.u.s + i, old.u.s, old.n)) {
      jb_put(c, &b, new_.u.s, new_.n);
      i += old.n;
      done++;
    } else {
      jb_putc(c, &b, s.u.s[i++]);
    }
  }
  return jv_str(b.p ? b.p : "", b.n);
}

static bool cased(utf8proc_int32_t cp) {
  if (cp < 0) return false;
  utf8proc_category_t k = utf8proc_category(cp);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}

jv jpy_case(jctx *c, jv s, int how) {
  jbuf b = {0};
  bool prev_cased = false;
  for (size_t i = 0, w, k = 0; i < s.n; i += w, k++) {
    utf8proc_int32_t cp = cp_at(s.u.s, s.n, i, &w);
    if (cp < 0) {
      jb_put(c, &b, s.u.s + i, w);
      continue;
    }
    utf8proc_int32_t o = cp;
    if (how == 1) o = utf8proc_toupper(cp);
    else if (how == 2) o = utf8proc_tolower(cp);
    else if (how == 3) o = k == 0 ? utf8proc_totitle(cp) : utf8proc_tolower(cp);
    else {
      o = prev_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp);
      prev_cased = cased(cp);
    }
    utf8proc_uint8_t enc[4];
    jb_put(c, &b, (const char *)enc, (size_t)utf8proc_encode_char(o, enc));
  }
  return jv_str(b.p ? b.p : "", b.n);
}

/* ---- formatting -------------------------------------------------------------------------- */

jv jfmt_percent(jctx *c, const jnode *at, jv fmt, jv args) {
  jbuf b = {0};
  size_t ai = 0;
  bool tuple = args.t == JV_LIST && args.tuple;
  for (size_t i = 0; i < fmt.n; i++) {
    char ch = fmt.u.s[i];
    if (ch != '%') {
      jb_putc(c, &b, ch);
      continue;
    }
    if (++i >= fmt.n) jfail(c, at, FG_ERR_INVALID_ARG, "incomplete format");
    char spec[16] = "%";
    size_t k = 1;
    while (i < fmt.n && k < 10 && strchr("-+ #0123456789.", fmt.u.s[i])) spec[k++] = fmt.u.s[i++];
    if (i >= fmt.n) jfail(c, at, FG_ERR_INVALID_ARG, "incomplete format");
    char conv = fmt.u.s[i];
    if (conv == '%') {
      jb_putc(c, &b, '%');
      continue;
    }
    jv a;
    if (tuple) {
      if (ai >= args.u.l->n) jfail(c, at, FG_ERR_INVALID_ARG, "not enough arguments for format string");
      a = args.u.l->v[ai++];
    } else {
      if (ai++) jfail(c, at, FG_ERR_INVALID_ARG, "not enough arguments for format string");
      a = args;
    }
    char tmp[128];
    int w;
    switch (conv) {
    case 's': case 'r': {
      jbuf t = {0};
      conv == 's' ? jv_str_into(c, &t, a) : jv_repr_into(c, &t, a);
      jb_put(c, &b, t.p ? t.p : "", t.n);
      continue;
    }
    case 'd': case 'i':
      if (a.t != JV_INT && a.t != JV_BOOL && a.t != JV_FLOAT)
        jfail(c, at, FG_ERR_INVALID_ARG, "%%%c format: a real number is required, not %s", conv, jv_typename(a));
      memcpy(spec + k, "lld", 4);
      w = snprintf(tmp, sizeof tmp, spec, a.t == JV_INT ? (long long)a.u.i : a.t == JV_BOOL ? (long long)a.u.b : (long long)a.u.f);
      break;
    case 'f': case 'e': case 'g': case 'F': case 'E': case 'G':
      if (a.t != JV_INT && a.t != JV_BOOL && a.t != JV_FLOAT)
        jfail(c, at, FG_ERR_INVALID_ARG, "%%%c format: a real number is required, not %s", conv, jv_typename(a));
      spec[k] = conv;
      spec[k + 1] = 0;
      w = snprintf(tmp, sizeof tmp, spec, a.t == JV_FLOAT ? a.u.f : a.t == JV_INT ? (double)a.u.i : (double)a.u.b);
      break;
    default:
      jfail(c, at, FG_ERR_INVALID_ARG, "unsupported format character '%c'", conv >= 32 && conv < 127 ? conv : '?');
    }
    if (w > 0) jb_put(c, &b, tmp, (size_t)w < sizeof tmp ? (size_t)w : sizeof tmp - 1);
  }
  if (tuple && ai < args.u.l->n) jfail(c, at, FG_ERR_INVALID_ARG, "not all arguments converted during string formatting");
  return jv_str(b.p ? b.p : "", b.n);
}

/* str.format with {}, {0} and {name} fields (no format specs). */
static jv str_format(jctx *c, const jnode *at, jv fmt, const jargs *a) {
  jbuf b = {0};
  uint32_t auto_i = 0;
  for (size_t i = 0; i < fmt.n; i++) {
    char ch = fmt.u.s[i];
    if ((ch == '{' || ch == '}') && i + 1 < fmt.n && fmt.u.s[i + 1] == ch) {
      jb_putc(c, &b, ch);
      i++;
      continue;
    }
    if (ch == '}') jfail(c, at, FG_ERR_INVALID_ARG, "Single '}' encountered in format string");
    if (ch != '{') {
      jb_putc(c, &b, ch);
      continue;
    }
    const char *e = memchr(fmt.u.s + i, '}', fmt.n - i);
    if (!e) jfail(c, at, FG_ERR_INVALID_ARG, "Single '{' encountered in format string");
    const char *f = fmt.u.s + i + 1;
    size_t fl = (size_t)(e - f);
    if (memchr(f, ':', fl) || memchr(f, '!', fl) || memchr(f, '.', fl) || memchr(f, '[', fl))
      jfail(c, at, FG_ERR_INVALID_ARG, "format fields with specs are not supported");
    jv v = jv_undef(NULL);
    if (!fl) v = jarg(a, auto_i++, NULL, v);
    else if (f[0] >= '0' && f[0] <= '9') v = jarg(a, (uint32_t)atoi(f), NULL, v);
    else
      for (uint32_t k = 0; k < a->n; k++)
        if (a->kw[k] && strlen(a->kw[k]) == fl && !memcmp(a->kw[k], f, fl)) v = a->v[k];
    if (v.t == JV_UNDEF) jfail(c, at, FG_ERR_INVALID_ARG, "format: no argument for field {%.*s}", (int)fl, f);
    jv_str_into(c, &b, v);
    i = (size_t)(e - fmt.u.s);
  }
  return jv_str(b.p ? b.p : "", b.n);
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static const char *const STR_METHODS[] = {"strip", "lstrip", "rstrip", "split", "startswith", "endswith", "replace",
                                          "upper", "lower", "title", "capitalize", "find", "rfind", "count", "join",
                                          "format", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
                                          "removeprefix", "removesuffix", "splitlines", NULL};
static const char *const DICT_METHODS[] = {"items", "keys", "values", "get", "copy", NULL};
static const char *const LIST_METHODS[] = {"index", "count", "copy", NULL};

static bool in_list(const char *const *l, const char *name, size_t n) {
  for (; *l; l++)
    if (strlen(*l) == n && !memcmp(*l, name, n)) return true;
  return false;
}

bool jmethod_exists(jv self, const char *name, size_t n) {
  if (self.t == JV_STR) return in_list(STR_METHODS, name, n);
  if (self.t == JV_DICT) return in_list(DICT_METHODS, name, n);
  if (self.t == JV_LIST) return in_list(LIST_METHODS, name, n);
  return false;
}

static jv need_str(jctx *c, const jnode *at, jv v, const char *what) {
  if (v.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "%s: expected a string, got %s", what, jv_typename(v));
  return v;
}

static bool affix(jctx *c, const jnode *at, jv s, jv x, bool end) {
  if (x.t == JV_LIST && x.tuple) {
    for (size_t i = 0; i < x.u.l->n; i++)
      if (affix(c, at, s, x.u.l->v[i], end)) return true;
    return false;
  }
  need_str(c, at, x, end ? "endswith" : "startswith");
  return x.n <= s.n && !memcmp(s.u.s + (end ? s.n - x.n : 0), x.u.s, x.n);
}

static int64_t find(jv s, jv x, bool last) {
  int64_t found = -1;
  for (size_t i = 0; i + x.n <= s.n; i++)
    if (!memcmp(s.u.s + i, x.u.s, x.n)) {
      found = (int64_t)ju_len(s.u.s, i);
      if (!last) break;
    }
  return found;
}

static bool all_cp(jv s, int kind) {
  if (!s.n) return false;
  bool any_cased = false;
  for (size_t i = 0, w; i < s.n; i += w) {
    utf8proc_int32_t cp = cp_at(s.u.s, s.n, i, &w);
    if (cp < 0) return false;
    utf8proc_category_t k = utf8proc_category(cp);
    bool letter = k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
    bool digit = k == UTF8PROC_CATEGORY_ND;
    switch (kind) {
    case 0: if (!digit) return false; break;
    case 1: if (!letter) return false; break;
    case 2: if (!letter && !digit && k != UTF8PROC_CATEGORY_NL && k != UTF8PROC_CATEGORY_NO) return false; break;
    case 3: if (!py_space(cp)) return false; break;
    case 4: if (k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LT) return false; any_cased |= k == UTF8PROC_CATEGORY_LL; break;
    default: if (k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT) return false; any_cased |= k == UTF8PROC_CATEGORY_LU; break;
    }
  }
  return kind < 4 || any_cased;
}

static jv method(jctx *c, const jnode *at, jv self, const char *name, size_t n, const jargs *a);

/* Markup's methods give Markup where they give a string. */
jv jmethod(jctx *c, const jnode *at, jv self, const char *name, size_t n, const jargs *a) {
  jv r = method(c, at, self, name, n, a);
  if (self.t == JV_STR && self.tuple && r.t == JV_STR) r.tuple = 1;
  return r;
}

static jv method(jctx *c, const jnode *at, jv self, const char *name, size_t n, const jargs *a) {
  jv none = jv_none();
#define IS(lit) (n == sizeof lit - 1 && !memcmp(name, lit, n))
  if (self.t == JV_STR) {
    if (IS("strip")) return jpy_strip(c, at, self, jarg(a, 0, "chars", none), 0);
    if (IS("lstrip")) return jpy_strip(c, at, self, jarg(a, 0, "chars", none), 1);
    if (IS("rstrip")) return jpy_strip(c, at, self, jarg(a, 0, "chars", none), 2);
    if (IS("split")) {
      jv ms = jarg(a, 1, "maxsplit", jv_int(-1));
      if (ms.t != JV_INT) jfail(c, at, FG_ERR_INVALID_ARG, "split: maxsplit must be an integer");
      jv sep = jarg(a, 0, "sep", none);
      if (sep.t != JV_NONE) need_str(c, at, sep, "split");
      return jpy_split(c, at, self, sep, ms.u.i);
    }
    if (IS("startswith") || IS("endswith")) return jv_bool(affix(c, at, self, jarg(a, 0, NULL, none), IS("endswith")));
    if (IS("replace")) {
      jv cnt = jarg(a, 2, "count", jv_int(-1));
      if (cnt.t != JV_INT) jfail(c, at, FG_ERR_INVALID_ARG, "replace: count must be an integer");
      return jpy_replace(c, self, need_str(c, at, jarg(a, 0, NULL, none), "replace"),
                         need_str(c, at, jarg(a, 1, NULL, none), "replace"), cnt.u.i);
    }
    if (IS("upper")) return jpy_case(c, self, 1);
    if (IS("lower")) return jpy_case(c, self, 2);
    if (IS("capitalize")) return jpy_case(c, self, 3);
    if (IS("title")) return jpy_case(c, self, 4);
    if (IS("find") || IS("rfind")) return jv_int(find(self, need_str(c, at, jarg(a, 0, NULL, none), "find"), IS("rfind")));
    if (IS("count")) {
      jv x = need_str(c, at, jarg(a, 0, NULL, none), "count");
      if (!x.n) return jv_int((int64_t)ju_len(self.u.s, self.n) + 1);
      int64_t k = 0;
      for (size_t i = 0; i + x.n <= self.n;)
        if (!memcmp(self.u.s + i, x.u.s, x.n)) {
          k++;
          i += x.n;
        } else i++;
      return jv_int(k);
    }
    if (IS("join")) {
      jlist *l = jv_iter(c, at, jarg(a, 0, NULL, none));
      jbuf b = {0};
      for (size_t i = 0; i < l->n; i++) {
        if (i) jb_put(c, &b, self.u.s, self.n);
        jb_put(c, &b, need_str(c, at, l->v[i], "join").u.s, l->v[i].n);
      }
      return jv_str(b.p ? b.p : "", b.n);
    }
    if (IS("format")) return str_format(c, at, self, a);
    if (IS("isdigit")) return jv_bool(all_cp(self, 0));
    if (IS("isalpha")) return jv_bool(all_cp(self, 1));
    if (IS("isalnum")) return jv_bool(all_cp(self, 2));
    if (IS("isspace")) return jv_bool(all_cp(self, 3));
    if (IS("islower")) return jv_bool(all_cp(self, 4));
    if (IS("isupper")) return jv_bool(all_cp(self, 5));
    if (IS("removeprefix") || IS("removesuffix")) {
      jv x = need_str(c, at, jarg(a, 0, NULL, none), "removeprefix");
      bool end = IS("removesuffix");
      if (!affix(c, at, self, x, end)) return self;
      return jv_str(self.u.s + (end ? 0 : x.n), self.n - x.n);
    }
    if (IS("splitlines")) {
      jv out = jv_list(c, 0);
      size_t b = 0;
      for (size_t i = 0; i < self.n; i++)
        if (self.u.s[i] == '\n' || self.u.s[i] == '\r') {
          jl_push(c, out.u.l, jv_str(self.u.s + b, i - b));
          if (self.u.s[i] == '\r' && i + 1 < self.n && self.u.s[i + 1] == '\n') i++;
          b = i + 1;
        }
      if (b < self.n) jl_push(c, out.u.l, jv_str(self.u.s + b, self.n - b));
      return out;
    }
  } else if (self.t == JV_DICT) {
    jdict *d = self.u.d;
    if (IS("get")) {
      jv *v = jd_get(d, jarg(a, 0, NULL, none));
      return v ? *v : jarg(a, 1, "default", none);
    }
    if (IS("copy")) {
      jv o = jv_dict(c, d->n);
      for (size_t i = 0; i < d->n; i++) jd_set(c, o.u.d, d->k[i], d->v[i]);
      return o;
    }
    jv out = jv_list(c, d->n);
    for (size_t i = 0; i < d->n; i++) {
      if (IS("keys")) jl_push(c, out.u.l, d->k[i]);
      else if (IS("values")) jl_push(c, out.u.l, d->v[i]);
      else {
        jv t = jv_list(c, 2);
        t.tuple = 1;
        jl_push(c, t.u.l, d->k[i]);
        jl_push(c, t.u.l, d->v[i]);
        jl_push(c, out.u.l, t);
      }
    }
    return out;
  } else if (self.t == JV_LIST) {
    jv x = jarg(a, 0, NULL, none);
    if (IS("copy")) {
      jv o = jv_list(c, self.u.l->n);
      for (size_t i = 0; i < self.u.l->n; i++) jl_push(c, o.u.l, self.u.l->v[i]);
      return o;
    }
    int64_t k = 0;
    for (size_t i = 0; i < self.u.l->n; i++)
      if (jv_eq(self.u.l->v[i], x)) {
        if (IS("index")) return jv_int((int64_t)i);
        k++;
      }
    if (IS("index")) jfail(c, at, FG_ERR_INVALID_ARG, "value is not in list");
    return jv_int(k);
  }
#undef IS
  jfail(c, at, FG_ERR_INVALID_ARG, "'%s' object has no method '%.*s'", jv_typename(self), (int)n, name);
}
