/* jinja2's tests ("x is defined", "n is divisibleby 3", "a is sameas b", ...). Unknown test
 * names are compile errors (jtest_find), as in jinja2. */
#include <string.h>

#include "formats/jinja_internal.h"

#define ARG0 jarg(a, 0, NULL, jv_undef(NULL))
#define UNUSED (void)c, (void)at, (void)a

static bool t_defined(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t != JV_UNDEF; }
static bool t_undefined(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_UNDEF; }
static bool t_none(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_NONE; }
static bool t_boolean(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_BOOL; }
static bool t_true(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_BOOL && v.u.b; }
static bool t_false(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_BOOL && !v.u.b; }
static bool t_integer(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_INT; }
static bool t_float(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_FLOAT; }
static bool t_number(jctx *c, const jnode *at, jv v, const jargs *a) {
  UNUSED;
  return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
}
static bool t_string(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_STR; }
static bool t_mapping(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_DICT; }
static bool t_iterable(jctx *c, const jnode *at, jv v, const jargs *a) {
  UNUSED;
  return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
}
static bool t_sequence(jctx *c, const jnode *at, jv v, const jargs *a) {
  UNUSED;
  return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT;
}
static bool t_callable(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; return v.t == JV_FUNC; }
static bool t_escaped(jctx *c, const jnode *at, jv v, const jargs *a) { UNUSED; (void)v; return false; }

static bool t_lower(jctx *c, const jnode *at, jv v, const jargs *a) {
  (void)a;
  if (v.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "test lower: expected a string");
  return jmethod(c, at, v, "islower", 7, a).u.b;
}
static bool t_upper(jctx *c, const jnode *at, jv v, const jargs *a) {
  (void)a;
  if (v.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "test upper: expected a string");
  return jmethod(c, at, v, "isupper", 7, a).u.b;
}

static int64_t need_int(jctx *c, const jnode *at, jv v) {
  if (v.t == JV_INT) return v.u.i;
  if (v.t == JV_BOOL) return v.u.b;
  jv_check_defined(c, at, v);
  jfail(c, at, FG_ERR_INVALID_ARG, "expected an integer, got %s", jv_typename(v));
}
static bool t_even(jctx *c, const jnode *at, jv v, const jargs *a) { (void)a; return need_int(c, at, v) % 2 == 0; }
static bool t_odd(jctx *c, const jnode *at, jv v, const jargs *a) { (void)a; return need_int(c, at, v) % 2 != 0; }
static bool t_divisibleby(jctx *c, const jnode *at, jv v, const jargs *a) {
  int64_t d = need_int(c, at, ARG0);
  if (!d) jfail(c, at, FG_ERR_INVALID_ARG, "integer division or modulo by zero");
  if (d == -1) return true;
  return need_int(c, at, v) % d == 0;
}

static bool t_eq(jctx *c, const jnode *at, jv v, const jargs *a) { (void)c; (void)at; return jv_eq(v, ARG0); }
static bool t_ne(jctx *c, const jnode *at, jv v, const jargs *a) { (void)c; (void)at; return !jv_eq(v, ARG0); }
static bool t_lt(jctx *c, const jnode *at, jv v, const jargs *a) { return jv_cmp(c, at, v, ARG0) < 0; }
static bool t_le(jctx *c, const jnode *at, jv v, const jargs *a) { return jv_cmp(c, at, v, ARG0) <= 0; }
static bool t_gt(jctx *c, const jnode *at, jv v, const jargs *a) { return jv_cmp(c, at, v, ARG0) > 0; }
static bool t_ge(jctx *c, const jnode *at, jv v, const jargs *a) { return jv_cmp(c, at, v, ARG0) >= 0; }

/* Python's "is": singletons and shared containers; equal small values stand in for the
 * interned ones CPython shares. */
static bool t_sameas(jctx *c, const jnode *at, jv v, const jargs *a) {
  (void)c; (void)at;
  jv o = ARG0;
  if (v.t != o.t) return false;
  switch (v.t) {
  case JV_NONE: case JV_UNDEF: return v.t == JV_NONE;
  case JV_BOOL: return v.u.b == o.u.b;
  case JV_INT: return v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256;
  case JV_STR: return v.u.s == o.u.s && v.n == o.n;
  case JV_LIST: return v.u.l == o.u.l;
  case JV_DICT: case JV_NS: return v.u.d == o.u.d;
  case JV_FUNC: return v.u.fn == o.u.fn;
  default: return false;
  }
}

static bool t_in(jctx *c, const jnode *at, jv v, const jargs *a) {
  jv seq = ARG0;
  switch (seq.t) {
  case JV_STR:
    if (v.t != JV_STR) jfail(c, at, FG_ERR_INVALID_ARG, "'in <string>' requires string as left operand");
    for (size_t i = 0; i + v.n <= seq.n; i++)
      if (!memcmp(seq.u.s + i, v.u.s, v.n)) return true;
    return false;
  case JV_LIST:
    for (size_t i = 0; i < seq.u.l->n; i++)
      if (jv_eq(seq.u.l->v[i], v)) return true;
    return false;
  case JV_DICT: case JV_NS: return jd_get(seq.u.d, v) != NULL;
  default: jfail(c, at, FG_ERR_INVALID_ARG, "argument of type '%s' is not iterable", jv_typename(seq));
  }
}

static bool t_filter(jctx *c, const jnode *at, jv v, const jargs *a) {
  UNUSED;
  return v.t == JV_STR && jfilter_find(v.u.s, v.n) != NULL;
}
static bool t_test(jctx *c, const jnode *at, jv v, const jargs *a);

static const struct {
  const char *name;
  jtest_fn fn;
} TESTS[] = {
    {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none}, {"boolean", t_boolean},
    {"true", t_true}, {"false", t_false}, {"integer", t_integer}, {"float", t_float}, {"number", t_number},
    {"string", t_string}, {"mapping", t_mapping}, {"iterable", t_iterable}, {"sequence", t_sequence},
    {"callable", t_callable}, {"escaped", t_escaped}, {"lower", t_lower}, {"upper", t_upper}, {"even", t_even},
    {"odd", t_odd}, {"divisibleby", t_divisibleby}, {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq}, {"ne", t_ne},
    {"!=", t_ne}, {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt}, {"le", t_le}, {"<=", t_le}, {"gt", t_gt},
    {"greaterthan", t_gt}, {">", t_gt}, {"ge", t_ge}, {">=", t_ge}, {"sameas", t_sameas}, {"in", t_in},
    {"filter", t_filter}, {"test", t_test},
};

static bool t_test(jctx *c, const jnode *at, jv v, const jargs *a) {
  (void)c; (void)at; (void)a;
  return v.t == JV_STR && jtest_find(v.u.s, v.n) != NULL;
}

jtest_fn jtest_find(const char *name, size_t n) {
  for (size_t i = 0; i < sizeof TESTS / sizeof TESTS[0]; i++)
    if (strlen(TESTS[i].name) == n && !memcmp(TESTS[i].name, name, n)) return TESTS[i].fn;
  return NULL;
}
