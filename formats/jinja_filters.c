/* jinja2's built-in filters that chat templates use, plus transformers' tojson. Unknown
 * filter names are compile errors (jfilter_find), as in jinja2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/jinja_internal.h"

#define ARG(i, name, dflt) jarg(a, i, name, dflt)

static jv str_of(jctx *c, jv v) { return jv_to_str(c, v); }
static jv ret_str(jbuf *b) { return jv_str(b->p ? b->p : "", b->n); }

/* make_attrgetter: "a.b.0" walks items, integers as indices. */
static jv attr_path(jctx *c, const jnode *at, jv obj, jv path) {
  if (path.t == JV_INT) return jgetitem(c, at, obj, path);
  if (path.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "attribute must be a string");
  size_t b = 0;
  for (size_t i = 0; i <= path.n; i++) {
    if (i < path.n && path.u.s[i] != '.') continue;
    jv key = jv_str(path.u.s + b, i - b);
    bool digits = i > b;
    int64_t k = 0;
    for (size_t j = b; j < i && digits; j++) {
      digits = path.u.s[j] >= '0' && path.u.s[j] <= '9' && k < 100000000;
      k = k * 10 + (path.u.s[j] - '0');
    }
    obj = jgetitem(c, at, obj, digits ? jv_int(k) : key);
    b = i + 1;
  }
  return obj;
}

static jv f_length(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)a;
  switch (in.t) {
  case JV_STR: return jv_int((int64_t)ju_len(in.u.s, in.n));
  case JV_LIST:
    if (in.tuple == 2) jfail(c, at, FG_ERR_INVALID_ARG, "object of type 'generator' has no len()");
    return jv_int((int64_t)in.u.l->n);
  case JV_DICT: case JV_NS: return jv_int((int64_t)in.u.d->n);
  case JV_UNDEF: return jv_int(0);
  case JV_LOOP: return jv_int((int64_t)in.u.lp->items->n);
  default: jfail(c, at, FG_ERR_INVALID_ARG, "object of type '%s' has no len()", jv_typename(in));
  }
}

/* Markup in, Markup out, as markupsafe's str methods give. */
static jv f_trim(jctx *c, const jnode *at, jv in, const jargs *a) {
  return jv_markup_like(jpy_strip(c, at, str_of(c, in), ARG(0, "chars", jv_none()), 0), in);
}
static jv f_upper(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)at; (void)a;
  return jv_markup_like(jpy_case(c, str_of(c, in), 1), in);
}
static jv f_lower(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)at; (void)a;
  return jv_markup_like(jpy_case(c, str_of(c, in), 2), in);
}
static jv f_capitalize(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)at; (void)a;
  return jv_markup_like(jpy_case(c, str_of(c, in), 3), in);
}

/* jinja2's title: a word starts after whitespace, '-', '(', '{', '[' or '<'. */
static jv f_title(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)at; (void)a;
  jv s = str_of(c, in);
  jbuf b = {0};
  size_t i = 0;
  while (i < s.n) {
    size_t e = i;
    bool sep = strchr(" \t\n\r\f\v-({[<", s.u.s[i]) != NULL;
    while (e < s.n && (strchr(" \t\n\r\f\v-({[<", s.u.s[e]) != NULL) == sep) e++;
    if (sep) jb_put(c, &b, s.u.s + i, e - i);
    else {
      size_t w = 1;
      while (i + w < e && ((unsigned char)s.u.s[i + w] & 0xc0) == 0x80) w++;
      jv first = jpy_case(c, jv_str(s.u.s + i, w), 1), rest = jpy_case(c, jv_str(s.u.s + i + w, e - i - w), 2);
      jb_put(c, &b, first.u.s, first.n);
      jb_put(c, &b, rest.u.s, rest.n);
    }
    i = e;
  }
  return ret_str(&b);
}

static jv f_default(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)c; (void)at;
  jv d = ARG(0, "default_value", jv_strz("")), boolean = ARG(1, "boolean", jv_bool(false));
  if (in.t == JV_UNDEF || (jv_truthy(boolean) && !jv_truthy(in))) return d;
  return in;
}

static jv f_join(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv sep = str_of(c, ARG(0, "d", jv_strz(""))), attr = ARG(1, "attribute", jv_none());
  jlist *l = jv_iter(c, at, in);
  jbuf b = {0};
  for (size_t i = 0; i < l->n; i++) {
    if (i) jb_put(c, &b, sep.u.s, sep.n);
    jv_str_into(c, &b, attr.t == JV_NONE ? l->v[i] : attr_path(c, at, l->v[i], attr));
  }
  return ret_str(&b);
}

static jv f_first(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)a;
  jlist *l = jv_iter(c, at, in);
  return l->n ? l->v[0] : jv_undef("no first item, sequence was empty");
}

static jv f_last(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)a;
  if (in.t == JV_LIST && in.tuple == 2) jfail(c, at, FG_ERR_INVALID_ARG, "'generator' object is not reversible");
  jlist *l = jv_iter(c, at, in);
  return l->n ? l->v[l->n - 1] : jv_undef("no last item, sequence was empty");
}

static jv f_list(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)a;
  jlist *l = jv_iter(c, at, in);
  jv out = jv_list(c, l->n);
  for (size_t i = 0; i < l->n; i++) jl_push(c, out.u.l, l->v[i]);
  return out;
}

/* Arguments from index k on, as a call's arguments (for map/select passing them on). */
static jargs rest(const jargs *a, uint32_t k) {
  jargs r = {0};
  if (k < a->n) {
    r.n = a->n - k;
    r.v = a->v + k;
    r.kw = a->kw + k;
  }
  return r;
}

static jv gen(jv v) {
  v.tuple = 2;
  return v;
}

static jv f_map(jctx *c, const jnode *at, jv in, const jargs *a) {
  jlist *l = jv_truthy(in) ? jv_iter(c, at, in) : jv_list(c, 0).u.l; /* jinja2 maps nothing over a false value */
  jv out = gen(jv_list(c, l->n));
  jv attr = ARG(99, "attribute", jv_undef(NULL));
  if (attr.t != JV_UNDEF) {
    jv dflt = ARG(99, "default", jv_undef(NULL));
    for (size_t i = 0; i < l->n; i++) {
      jv v = attr_path(c, at, l->v[i], attr);
      jl_push(c, out.u.l, v.t == JV_UNDEF && dflt.t != JV_UNDEF ? dflt : v);
    }
    return out;
  }
  jv name = ARG(0, NULL, jv_undef(NULL));
  if (name.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "map: expected a filter name or attribute=");
  jargs r = rest(a, 1);
  for (size_t i = 0; i < l->n; i++) jl_push(c, out.u.l, jcall_filter(c, at, name.u.s, name.n, l->v[i], &r));
  return out;
}

static jv select_common(jctx *c, const jnode *at, jv in, const jargs *a, bool attr, bool keep) {
  jlist *l = jv_truthy(in) ? jv_iter(c, at, in) : jv_list(c, 0).u.l; /* nothing selected from a false value */
  jv out = gen(jv_list(c, 0));
  uint32_t k = attr ? 1 : 0;
  jv an = attr ? ARG(0, NULL, jv_undef(NULL)) : jv_none();
  jv test = ARG(k, NULL, jv_undef(NULL));
  if (test.t != JV_UNDEF && test.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "select: the test must be named by a string");
  jargs r = rest(a, k + 1);
  for (size_t i = 0; i < l->n; i++) {
    jstep(c, at);
    jv v = attr ? attr_path(c, at, l->v[i], an) : l->v[i];
    bool ok = test.t == JV_UNDEF ? jv_truthy(v) : jcall_test(c, at, test.u.s, test.n, v, &r);
    if (ok == keep) jl_push(c, out.u.l, l->v[i]);
  }
  return out;
}
static jv f_select(jctx *c, const jnode *at, jv in, const jargs *a) { return select_common(c, at, in, a, false, true); }
static jv f_reject(jctx *c, const jnode *at, jv in, const jargs *a) { return select_common(c, at, in, a, false, false); }
static jv f_selectattr(jctx *c, const jnode *at, jv in, const jargs *a) { return select_common(c, at, in, a, true, true); }
static jv f_rejectattr(jctx *c, const jnode *at, jv in, const jargs *a) { return select_common(c, at, in, a, true, false); }

/* Sort keys: the attribute's value, strings lowered unless case-sensitive. */
static jv sort_key(jctx *c, const jnode *at, jv v, jv attr, bool cs) {
  if (attr.t != JV_NONE && attr.t != JV_UNDEF) v = attr_path(c, at, v, attr);
  return !cs && v.t == JV_STR ? jpy_case(c, v, 2) : v;
}

static void merge_sort(jctx *c, const jnode *at, jv *items, jv *keys, size_t n, bool rev, jv *ti, jv *tk) {
  if (n < 2) return;
  size_t h = n / 2;
  merge_sort(c, at, items, keys, h, rev, ti, tk);
  merge_sort(c, at, items + h, keys + h, n - h, rev, ti, tk);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) {
    int r = jv_cmp(c, at, keys[j], keys[i]);
    bool take_right = rev ? r > 0 : r < 0;
    if (take_right) { ti[k] = items[j]; tk[k++] = keys[j++]; }
    else { ti[k] = items[i]; tk[k++] = keys[i++]; }
  }
  while (i < h) { ti[k] = items[i]; tk[k++] = keys[i++]; }
  while (j < n) { ti[k] = items[j]; tk[k++] = keys[j++]; }
  memcpy(items, ti, n * sizeof *ti);
  memcpy(keys, tk, n * sizeof *tk);
}

static jv sorted(jctx *c, const jnode *at, jlist *l, bool rev, bool cs, jv attr) {
  jv out = jv_list(c, l->n);
  jv *keys = ja_alloc(&c->a, (l->n + 1) * sizeof *keys), *ti = ja_alloc(&c->a, (l->n + 1) * sizeof *ti),
     *tk = ja_alloc(&c->a, (l->n + 1) * sizeof *tk);
  for (size_t i = 0; i < l->n; i++) {
    jl_push(c, out.u.l, l->v[i]);
    keys[i] = sort_key(c, at, l->v[i], attr, cs);
  }
  merge_sort(c, at, out.u.l->v, keys, l->n, rev, ti, tk);
  return out;
}

static jv f_sort(jctx *c, const jnode *at, jv in, const jargs *a) {
  return sorted(c, at, jv_iter(c, at, in), jv_truthy(ARG(0, "reverse", jv_bool(false))),
                jv_truthy(ARG(1, "case_sensitive", jv_bool(false))), ARG(2, "attribute", jv_none()));
}

static jv f_dictsort(jctx *c, const jnode *at, jv in, const jargs *a) {
  if (in.t != JV_DICT && in.t != JV_NS) jfail(c, at, FG_ERR_INVALID_ARG, "dictsort: expected a dict, got %s", jv_typename(in));
  bool cs = jv_truthy(ARG(0, "case_sensitive", jv_bool(false)));
  jv by = ARG(1, "by", jv_strz("key"));
  bool rev = jv_truthy(ARG(2, "reverse", jv_bool(false)));
  bool by_value = by.t == JV_STR && by.n == 5 && !memcmp(by.u.s, "value", 5);
  jv items = jv_list(c, in.u.d->n);
  for (size_t i = 0; i < in.u.d->n; i++) {
    jv t = jv_list(c, 2);
    t.tuple = 1;
    jl_push(c, t.u.l, in.u.d->k[i]);
    jl_push(c, t.u.l, in.u.d->v[i]);
    jl_push(c, items.u.l, t);
  }
  return sorted(c, at, items.u.l, rev, cs, jv_int(by_value ? 1 : 0));
}

static jv f_unique(jctx *c, const jnode *at, jv in, const jargs *a) {
  bool cs = jv_truthy(ARG(0, "case_sensitive", jv_bool(false)));
  jv attr = ARG(1, "attribute", jv_none());
  jlist *l = jv_iter(c, at, in);
  jv out = gen(jv_list(c, 0)), seen = jv_list(c, 0);
  for (size_t i = 0; i < l->n; i++) {
    jv k = sort_key(c, at, l->v[i], attr, cs);
    bool dup = false;
    for (size_t j = 0; j < seen.u.l->n && !dup; j++) dup = jv_eq(seen.u.l->v[j], k);
    jstep(c, at);
    if (dup) continue;
    jl_push(c, seen.u.l, k);
    jl_push(c, out.u.l, l->v[i]);
  }
  return out;
}

static jv f_reverse(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)a;
  if (in.t == JV_STR) {
    jbuf b = {0};
    for (size_t e = in.n; e > 0;) {
      size_t s = e - 1;
      while (s > 0 && ((unsigned char)in.u.s[s] & 0xc0) == 0x80) s--;
      jb_put(c, &b, in.u.s + s, e - s);
      e = s;
    }
    return ret_str(&b);
  }
  jlist *l = jv_iter(c, at, in);
  jv out = jv_list(c, l->n);
  for (size_t i = l->n; i > 0; i--) jl_push(c, out.u.l, l->v[i - 1]);
  return in.t == JV_LIST && in.tuple != 2 ? gen(out) : out; /* reversed(list) is an iterator; a generator's is a list */
}

static jv f_replace(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv cnt = ARG(2, "count", jv_none());
  if (cnt.t != JV_NONE && cnt.t != JV_INT) jfail(c, at, FG_ERR_INVALID_ARG, "replace: count must be an integer");
  return jpy_replace(c, str_of(c, in), str_of(c, ARG(0, "old", jv_strz(""))), str_of(c, ARG(1, "new", jv_strz(""))),
                     cnt.t == JV_INT ? cnt.u.i : -1);
}

static jv f_string(jctx *c, const jnode *at, jv in, const jargs *a) { (void)at; (void)a; return str_of(c, in); }
static jv f_safe(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)at; (void)a;
  jv s = jv_to_str(c, in);
  s.tuple = 1;
  return s;
}

static jv f_int(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)at;
  jv d = ARG(0, "default", jv_int(0));
  switch (in.t) {
  case JV_INT: return in;
  case JV_BOOL: return jv_int(in.u.b);
  case JV_FLOAT: return isfinite(in.u.f) && fabs(in.u.f) < 9.2e18 ? jv_int((int64_t)in.u.f) : d;
  case JV_STR: {
    char buf[64];
    size_t k = 0;
    jv t = jpy_strip(c, at, in, jv_none(), 0);
    for (size_t i = 0; i < t.n && k < sizeof buf - 1; i++)
      if (t.u.s[i] != '_') buf[k++] = t.u.s[i];
    buf[k] = 0;
    if (!k || t.n >= sizeof buf) return d;
    char *e;
    long long v = strtoll(buf, &e, 10);
    if (!*e) return jv_int(v);
    double f = strtod(buf, &e);
    if (*e || !isfinite(f) || fabs(f) >= 9.2e18) return d;
    return jv_int((int64_t)f);
  }
  default: return d;
  }
}

static jv f_float(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv d = ARG(0, "default", jv_float(0.0));
  if (in.t == JV_FLOAT) return in;
  if (in.t == JV_INT || in.t == JV_BOOL) return jv_float(in.t == JV_INT ? (double)in.u.i : in.u.b);
  if (in.t != JV_STR) return d;
  jv t = jpy_strip(c, at, in, jv_none(), 0);
  char buf[64];
  if (!t.n || t.n >= sizeof buf) return d;
  memcpy(buf, t.u.s, t.n);
  buf[t.n] = 0;
  char *e;
  double f = strtod(buf, &e);
  return *e || (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) ? d : jv_float(f);
}

static jv f_abs(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)a;
  if (in.t == JV_INT) {
    if (in.u.i == INT64_MIN) jfail(c, at, FG_ERR_RANGE, "abs overflows");
    return jv_int(in.u.i < 0 ? -in.u.i : in.u.i);
  }
  if (in.t == JV_BOOL) return jv_int(in.u.b);
  if (in.t == JV_FLOAT) return jv_float(fabs(in.u.f));
  jfail(c, at, FG_ERR_INVALID_ARG, "bad operand type for abs(): '%s'", jv_typename(in));
}

static jv f_round(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv p = ARG(0, "precision", jv_int(0)), m = ARG(1, "method", jv_strz("common"));
  if (p.t != JV_INT || p.u.i < 0 || p.u.i > 300) jfail(c, at, FG_ERR_INVALID_ARG, "round: precision must be an integer in [0, 300]");
  if (m.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "round: method must be common, ceil or floor");
  bool common = m.n == 6 && !memcmp(m.u.s, "common", 6), ceil_ = m.n == 4 && !memcmp(m.u.s, "ceil", 4),
       floor_ = m.n == 5 && !memcmp(m.u.s, "floor", 5);
  if (!common && !ceil_ && !floor_) jfail(c, at, FG_ERR_INVALID_ARG, "method must be common, ceil or floor");
  if (in.t == JV_INT && common) return in;
  if (in.t != JV_INT && in.t != JV_FLOAT && in.t != JV_BOOL) jfail(c, at, FG_ERR_INVALID_ARG, "round: expected a number");
  double x = in.t == JV_FLOAT ? in.u.f : in.t == JV_INT ? (double)in.u.i : in.u.b;
  if (common) {
    if (!isfinite(x)) return jv_float(x);
    char buf[400];
    snprintf(buf, sizeof buf, "%.*f", (int)p.u.i, x); /* correctly rounded, ties to even: Python's round */
    return jv_float(strtod(buf, NULL));
  }
  double s = pow(10.0, (double)p.u.i);
  return jv_float((ceil_ ? ceil(x * s) : floor(x * s)) / s);
}

static jv f_tojson(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv ascii = ARG(0, "ensure_ascii", jv_bool(false)), ind = ARG(1, "indent", jv_none()), seps = ARG(2, "separators", jv_none()),
     sk = ARG(3, "sort_keys", jv_bool(false));
  char spaces[64];
  const char *indent = NULL;
  size_t ilen = 0;
  if (ind.t == JV_INT || ind.t == JV_BOOL) {
    int64_t k = ind.t == JV_INT ? ind.u.i : ind.u.b;
    if (k > 60) jfail(c, at, FG_ERR_INVALID_ARG, "tojson: indent above 60");
    ilen = k > 0 ? (size_t)k : 0;
    memset(spaces, ' ', ilen);
    indent = spaces;
  } else if (ind.t == JV_STR) {
    indent = ind.u.s;
    ilen = ind.n;
  } else if (ind.t != JV_NONE) {
    jfail(c, at, FG_ERR_INVALID_ARG, "tojson: indent must be an integer or a string");
  }
  const char *isep = indent ? "," : ", ", *ksep = ": ";
  if (seps.t == JV_LIST && seps.u.l->n == 2 && seps.u.l->v[0].t == JV_STR && seps.u.l->v[1].t == JV_STR) {
    isep = ja_strdup(&c->a, seps.u.l->v[0].u.s, seps.u.l->v[0].n);
    ksep = ja_strdup(&c->a, seps.u.l->v[1].u.s, seps.u.l->v[1].n);
  } else if (seps.t != JV_NONE) {
    jfail(c, at, FG_ERR_INVALID_ARG, "tojson: separators must be a pair of strings");
  }
  jbuf b = {0};
  jjson_dump(c, at, &b, in, jv_truthy(ascii), indent, ilen, isep, ksep, jv_truthy(sk));
  return ret_str(&b);
}

static jv f_items(jctx *c, const jnode *at, jv in, const jargs *a) {
  if (in.t == JV_UNDEF) return jv_list(c, 0);
  if (in.t != JV_DICT && in.t != JV_NS) jfail(c, at, FG_ERR_INVALID_ARG, "items: expected a mapping, got %s", jv_typename(in));
  in.t = JV_DICT;
  return gen(jmethod(c, at, in, "items", 5, a));
}

static jv f_indent(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)at;
  jv w = ARG(0, "width", jv_int(4)), first = ARG(1, "first", jv_bool(false)), blank = ARG(2, "blank", jv_bool(false));
  jv ind;
  if (w.t == JV_STR) ind = w;
  else {
    int64_t k = w.t == JV_INT ? w.u.i : 4;
    if (k < 0) k = 0;
    if (k > 256) jfail(c, at, FG_ERR_INVALID_ARG, "indent: width above 256");
    char *p = ja_alloc(&c->a, (size_t)k + 1);
    memset(p, ' ', (size_t)k);
    ind = jv_str(p, (size_t)k);
  }
  jv s = str_of(c, in);
  jbuf b = {0};
  if (jv_truthy(first)) jb_put(c, &b, ind.u.s, ind.n);
  s.tuple = 0;
  /* jinja2 splits s + "\n" into lines: s's own lines, an empty last one when s ends in a newline */
  size_t i = 0;
  for (bool line0 = true;; line0 = false) {
    size_t e = i;
    while (e < s.n && s.u.s[e] != '\n' && s.u.s[e] != '\r') e++;
    if (!line0) {
      jb_putc(c, &b, '\n');
      if (e > i || jv_truthy(blank)) jb_put(c, &b, ind.u.s, ind.n);
    }
    jb_put(c, &b, s.u.s + i, e - i);
    if (e >= s.n) break;
    i = e + (s.u.s[e] == '\r' && e + 1 < s.n && s.u.s[e + 1] == '\n' ? 2 : 1);
  }
  return jv_markup_like(ret_str(&b), in);
}

static jv f_center(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv s = str_of(c, in), w = ARG(0, "width", jv_int(80));
  if (w.t != JV_INT) jfail(c, at, FG_ERR_INVALID_ARG, "center: width must be an integer");
  int64_t len = (int64_t)ju_len(s.u.s, s.n), width = w.u.i;
  if (width <= len) return s;
  if (width > 100000) jfail(c, at, FG_ERR_RANGE, "center: width above 100000");
  int64_t marg = width - len, left = marg / 2 + (marg & width & 1);
  jbuf b = {0};
  for (int64_t i = 0; i < left; i++) jb_putc(c, &b, ' ');
  jb_put(c, &b, s.u.s, s.n);
  for (int64_t i = 0; i < marg - left; i++) jb_putc(c, &b, ' ');
  return ret_str(&b);
}

static jv f_escape(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)at; (void)a;
  return jv_escape(c, in);
}

static jv f_wordcount(jctx *c, const jnode *at, jv in, const jargs *a) {
  (void)at; (void)a;
  jv s = str_of(c, in);
  int64_t k = 0;
  bool inw = false;
  for (size_t i = 0; i < s.n; i++) {
    unsigned char ch = (unsigned char)s.u.s[i];
    bool w = ch >= 0x80 || ch == '_' || (ch >= '0' && ch <= '9') || ((ch | 32) >= 'a' && (ch | 32) <= 'z');
    if (w && !inw) k++;
    inw = w;
  }
  return jv_int(k);
}

static jv f_batch(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv n = ARG(0, "linecount", jv_undef(NULL)), fill = ARG(1, "fill_with", jv_none());
  if (n.t != JV_INT || n.u.i <= 0) jfail(c, at, FG_ERR_INVALID_ARG, "batch: linecount must be a positive integer");
  jlist *l = jv_iter(c, at, in);
  jv out = gen(jv_list(c, 0)), cur = jv_list(c, 0);
  for (size_t i = 0; i < l->n; i++) {
    if ((int64_t)cur.u.l->n == n.u.i) {
      jl_push(c, out.u.l, cur);
      cur = jv_list(c, 0);
    }
    jl_push(c, cur.u.l, l->v[i]);
  }
  if (cur.u.l->n) {
    if (fill.t != JV_NONE)
      while ((int64_t)cur.u.l->n < n.u.i) jl_push(c, cur.u.l, fill);
    jl_push(c, out.u.l, cur);
  }
  return out;
}

static jv minmax(jctx *c, const jnode *at, jv in, const jargs *a, bool max) {
  bool cs = jv_truthy(ARG(0, "case_sensitive", jv_bool(false)));
  jv attr = ARG(1, "attribute", jv_none());
  jlist *l = jv_iter(c, at, in);
  if (!l->n) return jv_undef("no min/max item, sequence was empty");
  size_t best = 0;
  jv bk = sort_key(c, at, l->v[0], attr, cs);
  for (size_t i = 1; i < l->n; i++) {
    jv k = sort_key(c, at, l->v[i], attr, cs);
    int r = jv_cmp(c, at, k, bk);
    if (max ? r > 0 : r < 0) {
      best = i;
      bk = k;
    }
  }
  return l->v[best];
}
static jv f_max(jctx *c, const jnode *at, jv in, const jargs *a) { return minmax(c, at, in, a, true); }
static jv f_min(jctx *c, const jnode *at, jv in, const jargs *a) { return minmax(c, at, in, a, false); }

static jv f_sum(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv attr = ARG(0, "attribute", jv_none()), total = ARG(1, "start", jv_int(0));
  jlist *l = jv_iter(c, at, in);
  jnode add = *at;
  add.kind = JN_BIN;
  add.op = JO_ADD;
  for (size_t i = 0; i < l->n; i++) {
    jv v = attr.t == JV_NONE ? l->v[i] : attr_path(c, at, l->v[i], attr);
    jnode la = *at, lb = *at;
    la.kind = lb.kind = JN_LIT;
    la.lit = total;
    lb.lit = v;
    add.a = &la;
    add.b = &lb;
    total = jeval(c, &add);
  }
  return total;
}

static jv f_attr(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv name = str_of(c, ARG(0, "name", jv_strz("")));
  if (in.t == JV_DICT) return jmethod_exists(in, name.u.s, name.n) ? jgetattr(c, at, in, name.u.s, name.n) : jv_undef(NULL);
  return jgetattr(c, at, in, name.u.s, name.n);
}

static jv f_format(jctx *c, const jnode *at, jv in, const jargs *a) {
  jv args = jv_list(c, a->n);
  args.tuple = 1;
  for (uint32_t k = 0; k < a->n; k++) {
    if (a->kw[k]) jfail(c, at, FG_ERR_INVALID_ARG, "format: keyword arguments are not supported");
    jl_push(c, args.u.l, a->v[k]);
  }
  return jfmt_percent(c, at, str_of(c, in), args);
}

static const struct {
  const char *name;
  jfilter_fn fn;
} FILTERS[] = {
    {"length", f_length}, {"count", f_length}, {"trim", f_trim}, {"upper", f_upper}, {"lower", f_lower},
    {"title", f_title}, {"capitalize", f_capitalize}, {"default", f_default}, {"d", f_default}, {"join", f_join},
    {"first", f_first}, {"last", f_last}, {"list", f_list}, {"map", f_map}, {"select", f_select},
    {"reject", f_reject}, {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr}, {"unique", f_unique},
    {"sort", f_sort}, {"dictsort", f_dictsort}, {"reverse", f_reverse}, {"replace", f_replace},
    {"string", f_string}, {"safe", f_safe}, {"int", f_int}, {"float", f_float}, {"abs", f_abs},
    {"round", f_round}, {"tojson", f_tojson}, {"items", f_items}, {"indent", f_indent}, {"center", f_center},
    {"e", f_escape}, {"escape", f_escape}, {"forceescape", f_escape}, {"wordcount", f_wordcount},
    {"batch", f_batch}, {"max", f_max}, {"min", f_min}, {"sum", f_sum}, {"attr", f_attr}, {"format", f_format},
};

jfilter_fn jfilter_find(const char *name, size_t n) {
  for (size_t i = 0; i < sizeof FILTERS / sizeof FILTERS[0]; i++)
    if (strlen(FILTERS[i].name) == n && !memcmp(FILTERS[i].name, name, n)) return FILTERS[i].fn;
  return NULL;
}
