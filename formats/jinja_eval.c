/* Jinja expressions: evaluation with Python's operators, jinja2's attribute and item lookup
 * (a dict key is reachable as m.content and m['content']; a missing one is undefined), and
 * the globals transformers gives chat templates. */
#define _POSIX_C_SOURCE 200809L /* localtime_r */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "formats/jinja_internal.h"

enum { G_RANGE = 1, G_NAMESPACE, G_RAISE, G_STRFTIME, G_DICT };

void jstep(jctx *c, const jnode *at) {
  if (++c->steps > c->o.max_steps)
    jfail(c, at, FG_ERR_RANGE, "rendering exceeds the bound of %llu steps", (unsigned long long)c->o.max_steps);
}

static jv func(jctx *c, jfunc_kind k, int id, const char *name, size_t n) {
  jv v = {.t = JV_FUNC};
  v.u.fn = ja_alloc(&c->a, sizeof *v.u.fn);
  memset(v.u.fn, 0, sizeof *v.u.fn);
  v.u.fn->kind = k;
  v.u.fn->id = id;
  v.u.fn->name = name;
  v.u.fn->nlen = n;
  return v;
}

jv jlookup(jctx *c, const char *name, size_t n) {
  for (jscope *s = c->root; s; s = s->up) { /* c->root is the innermost scope */
    jv *v = jd_gets(&s->vars, name, n);
    if (v) return *v;
  }
  static const struct { const char *s; int id; } G[] = {
      {"range", G_RANGE}, {"namespace", G_NAMESPACE}, {"raise_exception", G_RAISE}, {"strftime_now", G_STRFTIME},
      {"dict", G_DICT}};
  for (size_t i = 0; i < sizeof G / sizeof G[0]; i++)
    if (strlen(G[i].s) == n && !memcmp(G[i].s, name, n)) return func(c, JF_BUILTIN, G[i].id, G[i].s, n);
  return jv_undef(NULL);
}

jv jarg(const jargs *a, uint32_t i, const char *name, jv dflt) {
  uint32_t pos = 0;
  for (uint32_t k = 0; k < a->n; k++) {
    if (a->kw[k]) {
      if (name && !strcmp(a->kw[k], name)) return a->v[k];
    } else if (pos++ == i) {
      return a->v[k];
    }
  }
  return dflt;
}

static int64_t need_int(jctx *c, const jnode *at, jv v, const char *what) {
  if (v.t == JV_INT) return v.u.i;
  if (v.t == JV_BOOL) return v.u.b;
  jfail(c, at, FG_ERR_INVALID_ARG, "%s: expected an integer, got %s", what, jv_typename(v));
}

static jv call_builtin(jctx *c, const jnode *at, int id, const jargs *a) {
  switch (id) {
  case G_RANGE: {
    uint32_t np = 0;
    for (uint32_t k = 0; k < a->n; k++) np += !a->kw[k];
    if (np < 1 || np > 3) jfail(c, at, FG_ERR_INVALID_ARG, "range expected 1 to 3 arguments, got %u", np);
    int64_t start = 0, stop, step = 1;
    if (np == 1) stop = need_int(c, at, a->v[0], "range");
    else {
      start = need_int(c, at, a->v[0], "range");
      stop = need_int(c, at, a->v[1], "range");
      if (np == 3) step = need_int(c, at, a->v[2], "range");
    }
    if (step == 0) jfail(c, at, FG_ERR_INVALID_ARG, "range() arg 3 must not be zero");
    jv l = jv_list(c, 0);
    for (int64_t x = start; step > 0 ? x < stop : x > stop; x += step) {
      jstep(c, at);
      jl_push(c, l.u.l, jv_int(x));
      if ((step > 0 && x > INT64_MAX - step) || (step < 0 && x < INT64_MIN - step)) break;
    }
    return l;
  }
  case G_NAMESPACE: case G_DICT: {
    jv d = jv_dict(c, a->n);
    for (uint32_t k = 0; k < a->n; k++) {
      if (a->kw[k]) jd_set(c, d.u.d, jv_strz(a->kw[k]), a->v[k]);
      else if (a->v[k].t == JV_DICT || a->v[k].t == JV_NS)
        for (size_t i = 0; i < a->v[k].u.d->n; i++) jd_set(c, d.u.d, a->v[k].u.d->k[i], a->v[k].u.d->v[i]);
      else jfail(c, at, FG_ERR_INVALID_ARG, "%s() takes a mapping or keyword arguments", id == G_DICT ? "dict" : "namespace");
    }
    if (id == G_NAMESPACE) d.t = JV_NS;
    return d;
  }
  case G_RAISE: {
    jv m = jv_to_str(c, jarg(a, 0, NULL, jv_strz("")));
    c->a.st = fg_fail(FG_ERR_INVALID_ARG, "%.*s", (int)(m.n > 4000 ? 4000 : m.n), m.u.s);
    longjmp(c->jb, 1);
  }
  case G_STRFTIME: {
    jv f = jarg(a, 0, NULL, jv_undef(NULL));
    if (f.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "strftime_now expects a format string");
    time_t now = c->o.now ? (time_t)c->o.now : time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char *fmt = ja_strdup(&c->a, f.u.s, f.n), out[512];
    size_t n = f.n && f.n < 128 ? strftime(out, sizeof out, fmt, &tm) : 0;
    return jv_str(ja_strdup(&c->a, out, n), n);
  }
  default:
    jfail(c, at, FG_ERR_INVALID_ARG, "not callable");
  }
}

jv jcall(jctx *c, const jnode *at, jv fn, const jargs *a) {
  if (fn.t == JV_UNDEF) {
    if (fn.tuple) jfail(c, at, FG_ERR_INVALID_ARG, "access to attribute '%s' is unsafe (the sandbox is immutable)", fn.u.s);
    jv_check_defined(c, at, fn);
  }
  if (fn.t != JV_FUNC) jfail(c, at, FG_ERR_INVALID_ARG, "'%s' object is not callable", jv_typename(fn));
  const jfunc *f = fn.u.fn;
  switch (f->kind) {
  case JF_BUILTIN: return call_builtin(c, at, f->id, a);
  case JF_METHOD: return jmethod(c, at, f->self, f->name, f->nlen, a);
  case JF_MACRO: return jcall_macro(c, at, f, a);
  default: {
    uint32_t np = 0;
    for (uint32_t k = 0; k < a->n; k++) np += !a->kw[k];
    if (!np) jfail(c, at, FG_ERR_INVALID_ARG, "loop.cycle needs at least one argument");
    return a->v[f->self.u.lp->i % np];
  }
  }
}

static jv undef_attr(jctx *c, jv obj, const char *name, size_t n) {
  jbuf b = {0};
  jb_put(c, &b, "'", 1);
  jb_put(c, &b, jv_typename(obj), strlen(jv_typename(obj)));
  jb_put(c, &b, " object' has no attribute '", 27);
  jb_put(c, &b, name, n);
  jb_put(c, &b, "'", 2);
  return jv_undef(b.p);
}

static jv loop_attr(jctx *c, jv obj, const char *name, size_t n) {
  const jloop *lp = obj.u.lp;
  size_t i = lp->i, len = lp->items->n;
#define IS(lit) (n == sizeof lit - 1 && !memcmp(name, lit, n))
  if (IS("index")) return jv_int((int64_t)i + 1);
  if (IS("index0")) return jv_int((int64_t)i);
  if (IS("revindex")) return jv_int((int64_t)(len - i));
  if (IS("revindex0")) return jv_int((int64_t)(len - i - 1));
  if (IS("first")) return jv_bool(i == 0);
  if (IS("last")) return jv_bool(i + 1 == len);
  if (IS("length")) return jv_int((int64_t)len);
  if (IS("depth")) return jv_int(lp->depth);
  if (IS("depth0")) return jv_int(lp->depth - 1);
  if (IS("previtem")) return i ? lp->items->v[i - 1] : jv_undef("there is no previous item");
  if (IS("nextitem")) return i + 1 < len ? lp->items->v[i + 1] : jv_undef("there is no next item");
  if (IS("cycle")) {
    jv f = func(c, JF_CYCLE, 0, "cycle", 5);
    f.u.fn->self = obj;
    return f;
  }
#undef IS
  return undef_attr(c, obj, name, n);
}

jv jgetattr(jctx *c, const jnode *at, jv obj, const char *name, size_t n) {
  switch (obj.t) {
  case JV_UNDEF: jv_check_defined(c, at, obj); break;
  case JV_LOOP: return loop_attr(c, obj, name, n);
  case JV_NS: {
    jv *v = jd_gets(obj.u.d, name, n);
    return v ? *v : undef_attr(c, obj, name, n);
  }
  case JV_DICT: {
    if (!jmethod_exists(obj, name, n)) {
      jv *v = jd_gets(obj.u.d, name, n);
      return v ? *v : undef_attr(c, obj, name, n);
    }
    break;
  }
  default: break;
  }
  if (jmethod_exists(obj, name, n)) {
    jv f = func(c, JF_METHOD, 0, ja_strdup(&c->a, name, n), n);
    f.u.fn->self = obj;
    return f;
  }
  static const char *const unsafe[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear",
                                       "popitem", "setdefault", "update", "add", "discard"};
  if (obj.t == JV_LIST || obj.t == JV_DICT)
    for (size_t k = 0; k < sizeof unsafe / sizeof unsafe[0]; k++)
      if (strlen(unsafe[k]) == n && !memcmp(unsafe[k], name, n)) {
        jv u = jv_undef(ja_strdup(&c->a, name, n));
        u.tuple = 1;
        return u;
      }
  return undef_attr(c, obj, name, n);
}

jv jgetitem(jctx *c, const jnode *at, jv obj, jv key) {
  switch (obj.t) {
  case JV_UNDEF: jv_check_defined(c, at, obj); break;
  case JV_DICT: {
    jv *v = jd_get(obj.u.d, key);
    if (v) return *v;
    if (key.t == JV_STR && jmethod_exists(obj, key.u.s, key.n)) return jgetattr(c, at, obj, key.u.s, key.n);
    break;
  }
  case JV_LIST: case JV_STR:
    if (obj.tuple == 2) break; /* a generator is not subscriptable: jinja2 gives undefined */
    if (key.t == JV_INT || key.t == JV_BOOL) {
      int64_t i = key.t == JV_INT ? key.u.i : key.u.b;
      size_t len = obj.t == JV_LIST ? obj.u.l->n : ju_len(obj.u.s, obj.n);
      if (i < 0) i += (int64_t)len;
      if (i < 0 || (size_t)i >= len) break;
      if (obj.t == JV_LIST) return obj.u.l->v[i];
      size_t b = ju_off(obj.u.s, obj.n, (size_t)i), e = ju_off(obj.u.s, obj.n, (size_t)i + 1);
      return jv_str(obj.u.s + b, e - b);
    }
    break;
  default: break;
  }
  if (key.t == JV_STR) return jgetattr(c, at, obj, key.u.s, key.n);
  return jv_undef(NULL);
}

static int64_t slice_bound(jctx *c, const jnode *at, jv v, int64_t len, int64_t dflt, bool lower, int64_t step) {
  if (v.t == JV_NONE || v.t == JV_UNDEF) return dflt;
  int64_t x = need_int(c, at, v, "slice");
  if (x < 0) {
    x += len;
    if (x < 0) x = step < 0 && !lower ? -1 : step < 0 ? -1 : 0;
  } else if (x >= len) {
    x = step < 0 ? len - 1 : len;
  }
  return x;
}

static jv slice(jctx *c, const jnode *n, jv obj) {
  jv none = jv_none();
  jv b = n->b ? jeval(c, n->b) : none, e = n->c ? jeval(c, n->c) : none, s = n->d ? jeval(c, n->d) : none;
  int64_t step = s.t == JV_NONE ? 1 : need_int(c, n, s, "slice step");
  if (step == 0) jfail(c, n, FG_ERR_INVALID_ARG, "slice step cannot be zero");
  if (obj.t == JV_UNDEF) jv_check_defined(c, n, obj);
  if ((obj.t != JV_LIST && obj.t != JV_STR) || obj.tuple == 2)
    jfail(c, n, FG_ERR_INVALID_ARG, "'%s' object is not subscriptable", jv_typename(obj));
  int64_t len = (int64_t)(obj.t == JV_LIST ? obj.u.l->n : ju_len(obj.u.s, obj.n));
  if (step > len) step = len + 1; /* one item either way; keeps i + step from overflowing */
  if (step < -len) step = -len - 1;
  int64_t lo = slice_bound(c, n, b, len, step > 0 ? 0 : len - 1, true, step);
  int64_t hi = slice_bound(c, n, e, len, step > 0 ? len : -1, false, step);
  jv out = jv_list(c, 0);
  out.tuple = obj.tuple;
  jbuf sb = {0};
  for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
    jstep(c, n);
    if (obj.t == JV_LIST) jl_push(c, out.u.l, obj.u.l->v[i]);
    else {
      size_t x = ju_off(obj.u.s, obj.n, (size_t)i), y = ju_off(obj.u.s, obj.n, (size_t)i + 1);
      jb_put(c, &sb, obj.u.s + x, y - x);
    }
  }
  return obj.t == JV_LIST ? out : jv_str(sb.p ? sb.p : "", sb.n);
}

static void eval_args(jctx *c, const jnode *n, jargs *a) {
  a->n = n->nk;
  a->v = n->nk ? ja_alloc(&c->a, n->nk * sizeof *a->v) : NULL;
  a->kw = n->kw;
  for (uint32_t k = 0; k < n->nk; k++) a->v[k] = jeval(c, n->kids[k]);
}

static _Noreturn void bad_operands(jctx *c, const jnode *at, const char *op, jv a, jv b) {
  jv_check_defined(c, at, a);
  jv_check_defined(c, at, b);
  jfail(c, at, FG_ERR_INVALID_ARG, "unsupported operand type(s) for %s: '%s' and '%s'", op, jv_typename(a), jv_typename(b));
}

static bool isint(jv v) { return v.t == JV_INT || v.t == JV_BOOL; }
static bool isnum(jv v) { return isint(v) || v.t == JV_FLOAT; }
static int64_t ival(jv v) { return v.t == JV_INT ? v.u.i : v.u.b; }
static double fval(jv v) { return v.t == JV_FLOAT ? v.u.f : (double)ival(v); }

static jv repeat(jctx *c, const jnode *at, jv seq, int64_t k) {
  if (k < 0 || (seq.t == JV_STR ? seq.n : seq.u.l->n) == 0) k = 0; /* an empty sequence stays empty, at once */
  if (seq.t == JV_STR) {
    if (seq.n && (uint64_t)k > c->o.max_output / seq.n) jfail(c, at, FG_ERR_RANGE, "string repetition exceeds the output bound");
    jbuf b = {0};
    for (int64_t i = 0; i < k; i++) jb_put(c, &b, seq.u.s, seq.n);
    return jv_str(b.p ? b.p : "", b.n);
  }
  jv out = jv_list(c, 0);
  out.tuple = seq.tuple;
  for (int64_t i = 0; i < k; i++)
    for (size_t j = 0; j < seq.u.l->n; j++) {
      jstep(c, at);
      jl_push(c, out.u.l, seq.u.l->v[j]);
    }
  return out;
}

static jv concat(jctx *c, jv a, jv b) {
  if (a.grow) {
    jstrbuf *sb = (jstrbuf *)(void *)(a.u.s - offsetof(jstrbuf, bytes));
    if (sb->used == a.n && sb->cap - sb->used > b.n) {
      memcpy(sb->bytes + a.n, b.u.s, b.n);
      sb->used += b.n;
      sb->bytes[sb->used] = 0;
      a.n += b.n;
      return a;
    }
  }
  size_t n = a.n + b.n, cap = n < 64 ? 64 : n * 2;
  jstrbuf *sb = ja_alloc(&c->a, sizeof *sb + cap + 1);
  sb->cap = cap;
  sb->used = n;
  memcpy(sb->bytes, a.u.s, a.n);
  memcpy(sb->bytes + a.n, b.u.s, b.n);
  sb->bytes[n] = 0;
  jv r = jv_markup_like(jv_str(sb->bytes, n), a);
  r.grow = 1;
  return r;
}

static jv arith(jctx *c, const jnode *n, jop op, jv a, jv b) {
  static const char *const names[] = {"+", "-", "*", "/", "//", "%", "**"};
  if (isint(a) && isint(b)) {
    int64_t x = ival(a), y = ival(b), r;
    switch (op) {
    case JO_ADD: if (__builtin_add_overflow(x, y, &r)) break; return jv_int(r);
    case JO_SUB: if (__builtin_sub_overflow(x, y, &r)) break; return jv_int(r);
    case JO_MUL: if (__builtin_mul_overflow(x, y, &r)) break; return jv_int(r);
    case JO_DIV:
      if (!y) jfail(c, n, FG_ERR_INVALID_ARG, "division by zero");
      return jv_float((double)x / (double)y);
    case JO_FLOORDIV: case JO_MOD: {
      if (!y) jfail(c, n, FG_ERR_INVALID_ARG, "integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) break;
      int64_t q = x / y, m = x % y;
      if (m && ((m < 0) != (y < 0))) {
        q--;
        m += y;
      }
      return jv_int(op == JO_MOD ? m : q);
    }
    case JO_POW:
      if (y < 0) return jv_float(pow((double)x, (double)y));
      r = 1;
      for (int64_t i = 0; i < y; i++) {
        if (__builtin_mul_overflow(r, x, &r)) jfail(c, n, FG_ERR_RANGE, "integer power too large");
        if (r == 0 || r == 1) break;
      }
      if (r == 1 && x == -1 && (y & 1)) r = -1;
      return jv_int(r);
    default: break;
    }
    jfail(c, n, FG_ERR_RANGE, "integer result of %s does not fit 64 bits", names[op]);
  }
  if (isnum(a) && isnum(b)) {
    double x = fval(a), y = fval(b);
    switch (op) {
    case JO_ADD: return jv_float(x + y);
    case JO_SUB: return jv_float(x - y);
    case JO_MUL: return jv_float(x * y);
    case JO_DIV:
      if (y == 0) jfail(c, n, FG_ERR_INVALID_ARG, "float division by zero");
      return jv_float(x / y);
    case JO_FLOORDIV: case JO_MOD: {
      if (y == 0) jfail(c, n, FG_ERR_INVALID_ARG, "float modulo");
      double m = fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return jv_float(op == JO_MOD ? m : round((x - m) / y));
    }
    default: return jv_float(pow(x, y));
    }
  }
  if (op == JO_ADD && a.t == JV_STR && b.t == JV_STR && a.tuple != b.tuple) { /* Markup + str escapes the str */
    jv r = arith(c, n, op, jv_escape(c, a), jv_escape(c, b));
    r.tuple = 1;
    return r;
  }
  if (op == JO_ADD && a.t == JV_STR && b.t == JV_STR) return concat(c, a, b);
  if (op == JO_ADD && a.t == JV_LIST && b.t == JV_LIST && a.tuple == b.tuple && a.tuple != 2) {
    jv out = jv_list(c, a.u.l->n + b.u.l->n);
    out.tuple = a.tuple;
    for (size_t i = 0; i < a.u.l->n; i++) jl_push(c, out.u.l, a.u.l->v[i]);
    for (size_t i = 0; i < b.u.l->n; i++) jl_push(c, out.u.l, b.u.l->v[i]);
    return out;
  }
  if (op == JO_MUL && (a.t == JV_STR || (a.t == JV_LIST && a.tuple != 2)) && isint(b)) return repeat(c, n, a, ival(b));
  if (op == JO_MUL && (b.t == JV_STR || (b.t == JV_LIST && b.tuple != 2)) && isint(a)) return repeat(c, n, b, ival(a));
  if (op == JO_MOD && a.t == JV_STR && a.tuple) { /* Markup % args escapes the args */
    if (b.t == JV_LIST && b.tuple == 1) {
      jv t = jv_list(c, b.u.l->n);
      t.tuple = 1;
      for (size_t i = 0; i < b.u.l->n; i++) jl_push(c, t.u.l, b.u.l->v[i].t == JV_STR ? jv_escape(c, b.u.l->v[i]) : b.u.l->v[i]);
      b = t;
    } else if (b.t == JV_STR) {
      b = jv_escape(c, b);
    }
    jv r = jfmt_percent(c, n, a, b);
    r.tuple = 1;
    return r;
  }
  if (op == JO_MOD && a.t == JV_STR) return jfmt_percent(c, n, a, b);
  bad_operands(c, n, names[op], a, b);
}

static bool contains(jctx *c, const jnode *at, jv item, jv seq) {
  switch (seq.t) {
  case JV_STR:
    if (item.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "'in <string>' requires string as left operand, not %s", jv_typename(item));
    if (!item.n) return true;
    for (size_t i = 0; i + item.n <= seq.n; i++)
      if (!memcmp(seq.u.s + i, item.u.s, item.n)) return true;
    return false;
  case JV_LIST:
    for (size_t i = 0; i < seq.u.l->n; i++)
      if (jv_eq(seq.u.l->v[i], item)) return true;
    return false;
  case JV_DICT: case JV_NS: return jd_get(seq.u.d, item) != NULL;
  case JV_UNDEF: return false; /* jinja2's Undefined iterates as empty */
  default: jfail(c, at, FG_ERR_INVALID_ARG, "argument of type '%s' is not iterable", jv_typename(seq));
  }
}

static bool compare(jctx *c, const jnode *at, jop op, jv a, jv b) {
  switch (op) {
  case JO_EQ: return jv_eq(a, b);
  case JO_NE: return !jv_eq(a, b);
  case JO_LT: return jv_cmp(c, at, a, b) < 0;
  case JO_LE: return jv_cmp(c, at, a, b) <= 0;
  case JO_GT: return jv_cmp(c, at, a, b) > 0;
  case JO_GE: return jv_cmp(c, at, a, b) >= 0;
  case JO_IN: return contains(c, at, a, b);
  default: return !contains(c, at, a, b);
  }
}

static jv eval(jctx *c, const jnode *n) {
  jargs a;
  switch (n->kind) {
  case JN_LIT: return n->lit;
  case JN_NAME: {
    jv v = jlookup(c, n->s, n->n);
    if (v.t == JV_UNDEF) {
      char *m = ja_alloc(&c->a, n->n + 3);
      m[0] = '\'';
      memcpy(m + 1, n->s, n->n);
      memcpy(m + 1 + n->n, "'", 2);
      v.u.s = m;
    }
    return v;
  }
  case JN_LIST: case JN_TUPLE: {
    jv l = jv_list(c, n->nk);
    l.tuple = n->kind == JN_TUPLE;
    for (uint32_t k = 0; k < n->nk; k++) jl_push(c, l.u.l, jeval(c, n->kids[k]));
    return l;
  }
  case JN_DICT: {
    jv d = jv_dict(c, n->nk / 2);
    for (uint32_t k = 0; k + 1 < n->nk; k += 2) {
      jv key = jeval(c, n->kids[k]);
      if (key.t == JV_LIST && !key.tuple) jfail(c, n->kids[k], FG_ERR_INVALID_ARG, "unhashable type: 'list'");
      if (key.t == JV_DICT || key.t == JV_NS) jfail(c, n->kids[k], FG_ERR_INVALID_ARG, "unhashable type: 'dict'");
      jd_set(c, d.u.d, key, jeval(c, n->kids[k + 1]));
    }
    return d;
  }
  case JN_ATTR: return jgetattr(c, n, jeval(c, n->a), n->s, n->n);
  case JN_ITEM: {
    jv obj = jeval(c, n->a);
    return jgetitem(c, n, obj, jeval(c, n->b));
  }
  case JN_SLICE: return slice(c, n, jeval(c, n->a));
  case JN_CALL: {
    if (n->a->kind == JN_ATTR) { /* obj.method(...) without building the bound method */
      jv obj = jeval(c, n->a->a);
      if (obj.t != JV_DICT && obj.t != JV_NS && obj.t != JV_LOOP && obj.t != JV_UNDEF && jmethod_exists(obj, n->a->s, n->a->n)) {
        eval_args(c, n, &a);
        return jmethod(c, n, obj, n->a->s, n->a->n, &a);
      }
      jv fn = jgetattr(c, n->a, obj, n->a->s, n->a->n);
      eval_args(c, n, &a);
      return jcall(c, n, fn, &a);
    }
    jv fn = jeval(c, n->a);
    eval_args(c, n, &a);
    return jcall(c, n, fn, &a);
  }
  case JN_FILTER: {
    if (!n->fn) jfail(c, n, FG_ERR_INVALID_ARG, "no filter named '%s'", n->s);
    jv in = jeval(c, n->a);
    eval_args(c, n, &a);
    return ((jfilter_fn)n->fn)(c, n, in, &a);
  }
  case JN_TEST: {
    if (!n->fn) jfail(c, n, FG_ERR_INVALID_ARG, "no test named '%s'", n->s);
    jv in = jeval(c, n->a);
    eval_args(c, n, &a);
    return jv_bool(((jtest_fn)n->fn)(c, n, in, &a) != (n->op != 0));
  }
  case JN_BIN: {
    jv x = jeval(c, n->a), y = jeval(c, n->b);
    if (n->op == JO_CONCAT) { /* ~ joins as str: no Markup escaping without autoescape */
      x = jv_to_str(c, x);
      y = jv_to_str(c, y);
      x.tuple = y.tuple = 0;
      return arith(c, n, JO_ADD, x, y);
    }
    return arith(c, n, (jop)n->op, x, y);
  }
  case JN_NEG: case JN_POS: {
    jv x = jeval(c, n->a);
    if (isint(x)) {
      if (n->kind == JN_POS) return jv_int(ival(x));
      if (ival(x) == INT64_MIN) jfail(c, n, FG_ERR_RANGE, "integer negation overflows");
      return jv_int(-ival(x));
    }
    if (x.t == JV_FLOAT) return jv_float(n->kind == JN_NEG ? -x.u.f : x.u.f);
    jv_check_defined(c, n, x);
    jfail(c, n, FG_ERR_INVALID_ARG, "bad operand type for unary %c: '%s'", n->kind == JN_NEG ? '-' : '+', jv_typename(x));
  }
  case JN_NOT: return jv_bool(!jv_truthy(jeval(c, n->a)));
  case JN_AND: {
    jv x = jeval(c, n->a);
    return jv_truthy(x) ? jeval(c, n->b) : x;
  }
  case JN_OR: {
    jv x = jeval(c, n->a);
    return jv_truthy(x) ? x : jeval(c, n->b);
  }
  case JN_COND:
    if (jv_truthy(jeval(c, n->a))) return jeval(c, n->b);
    return n->c ? jeval(c, n->c) : jv_undef("the inline if's condition was false and it has no else");
  case JN_CMP: {
    jv x = jeval(c, n->kids[0]);
    for (uint32_t k = 1; k < n->nk; k++) {
      jv y = jeval(c, n->kids[k]);
      if (!compare(c, n, (jop)n->ops[k - 1], x, y)) return jv_bool(false);
      x = y;
    }
    return jv_bool(true);
  }
  default:
    jfail(c, n, FG_ERR_INVALID_ARG, "not an expression");
  }
}

jv jeval(jctx *c, const jnode *n) {
  jstep(c, n);
  if (++c->depth > c->o.max_depth) jfail(c, n, FG_ERR_RANGE, "nesting exceeds the bound of %u", c->o.max_depth);
  jv v = eval(c, n);
  c->depth--;
  return v;
}

jv jcall_filter(jctx *c, const jnode *at, const char *name, size_t n, jv in, const jargs *a) {
  jfilter_fn f = jfilter_find(name, n);
  if (!f) jfail(c, at, FG_ERR_INVALID_ARG, "no filter named '%.*s'", (int)n, name);
  return f(c, at, in, a);
}

bool jcall_test(jctx *c, const jnode *at, const char *name, size_t n, jv in, const jargs *a) {
  jtest_fn f = jtest_find(name, n);
  if (!f) jfail(c, at, FG_ERR_INVALID_ARG, "no test named '%.*s'", (int)n, name);
  return f(c, at, in, a);
}
