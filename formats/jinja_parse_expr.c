/* Jinja expressions: precedence as jinja2 parses them (conditional, or, and, not,
 * comparisons, + -, ~, * / // %, **, unary -, then postfix . [] () with filters and tests
 * binding tighter than every binary operator). */
#include <string.h>

#include "formats/jinja_internal.h"

jnode *jnode_new(jarena *a, jnode_kind k, const jtok *at) {
  jnode *n = ja_alloc(a, sizeof *n);
  memset(n, 0, sizeof *n);
  n->kind = (uint8_t)k;
  n->line = at->line;
  n->col = at->col;
  return n;
}

void jnode_push(jarena *a, jnode *n, jnode *kid, const char *kw) {
  if ((n->nk & (n->nk - 1)) == 0) { /* capacity doubles at powers of two */
    size_t cap = n->nk ? n->nk * 2u : 1u;
    n->kids = ja_grow(a, n->kids, n->nk * sizeof *n->kids, cap * sizeof *n->kids);
    n->kw = ja_grow(a, (void *)n->kw, n->nk * sizeof *n->kw, cap * sizeof *n->kw);
    n->ops = ja_grow(a, n->ops, n->nk, cap);
  }
  n->kids[n->nk] = kid;
  n->kw[n->nk] = kw;
  n->ops[n->nk] = 0;
  n->nk++;
}

void jparse_enter(jarena *a, const jtok *at) {
  if (++a->depth > JINJA_MAX_NESTING) jsyntax(a, at->line, at->col, "nested more than %d deep", JINJA_MAX_NESTING);
}
void jparse_leave(jarena *a) { a->depth--; }

bool jtok_is(const jtok *t, jtok_kind k, const char *s) {
  if (t->k != k) return false;
  return !s || (t->n == strlen(s) && memcmp(t->s, s, t->n) == 0);
}

static bool op(const jtok *t, const char *s) { return jtok_is(t, JT_OP, s); }
static bool name(const jtok *t, const char *s) { return jtok_is(t, JT_NAME, s); }

static const char *tok_desc(const jtok *t) {
  switch (t->k) {
  case JT_EOF: return "the end of the template";
  case JT_DATA: return "template text";
  case JT_VAR_BEGIN: return "'{{'";
  case JT_VAR_END: return "'}}'";
  case JT_BLOCK_BEGIN: return "'{%'";
  case JT_BLOCK_END: return "'%}'";
  case JT_NAME: return "a name";
  case JT_STRING: return "a string";
  case JT_INT: case JT_FLOAT: return "a number";
  default: return t->s;
  }
}

static void expect_op(jarena *a, const jtok *t, size_t *i, const char *s) {
  if (!op(&t[*i], s)) jsyntax(a, t[*i].line, t[*i].col, "expected '%s', found %s", s, tok_desc(&t[*i]));
  (*i)++;
}

static jnode *parse_or(jarena *a, const jtok *t, size_t *i);
static jnode *parse_unary(jarena *a, const jtok *t, size_t *i, bool with_filter);

/* Call arguments after "(": positional, name=value; up to ")". */
static void parse_args(jarena *a, const jtok *t, size_t *i, jnode *call) {
  bool kw_seen = false;
  while (!op(&t[*i], ")")) {
    if (call->nk) expect_op(a, t, i, ",");
    if (op(&t[*i], ")")) break;
    if (t[*i].k == JT_NAME && op(&t[*i + 1], "=")) {
      const char *kw = ja_strdup(a, t[*i].s, t[*i].n);
      *i += 2;
      jnode_push(a, call, jparse_expr(a, t, i, true), kw);
      kw_seen = true;
    } else {
      if (kw_seen) jsyntax(a, t[*i].line, t[*i].col, "a positional argument after keyword arguments");
      jnode_push(a, call, jparse_expr(a, t, i, true), NULL);
    }
  }
  (*i)++;
}

static jnode *parse_primary(jarena *a, const jtok *t, size_t *i) {
  const jtok *k = &t[*i];
  jnode *n;
  switch (k->k) {
  case JT_NAME:
    n = jnode_new(a, JN_LIT, k);
    if (name(k, "true") || name(k, "True")) n->lit = jv_bool(true);
    else if (name(k, "false") || name(k, "False")) n->lit = jv_bool(false);
    else if (name(k, "none") || name(k, "None")) n->lit = jv_none();
    else {
      n->kind = JN_NAME;
      n->s = ja_strdup(a, k->s, k->n);
      n->n = k->n;
    }
    (*i)++;
    return n;
  case JT_STRING: {
    n = jnode_new(a, JN_LIT, k);
    size_t len = 0, j = *i;
    for (; t[j].k == JT_STRING; j++) len += t[j].n;
    char *s = ja_alloc(a, len + 1), *p = s;
    for (; t[*i].k == JT_STRING; (*i)++) {
      memcpy(p, t[*i].s, t[*i].n);
      p += t[*i].n;
    }
    *p = 0;
    n->lit = jv_str(s, len);
    return n;
  }
  case JT_INT:
    n = jnode_new(a, JN_LIT, k);
    n->lit = jv_int(k->i);
    (*i)++;
    return n;
  case JT_FLOAT:
    n = jnode_new(a, JN_LIT, k);
    n->lit = jv_float(k->f);
    (*i)++;
    return n;
  case JT_OP:
    if (op(k, "(")) {
      (*i)++;
      if (op(&t[*i], ")")) {
        (*i)++;
        return jnode_new(a, JN_TUPLE, k);
      }
      n = jparse_tuple_or_expr(a, t, i, true);
      expect_op(a, t, i, ")");
      return n;
    }
    if (op(k, "[")) {
      n = jnode_new(a, JN_LIST, k);
      (*i)++;
      while (!op(&t[*i], "]")) {
        if (n->nk) expect_op(a, t, i, ",");
        if (op(&t[*i], "]")) break;
        jnode_push(a, n, jparse_expr(a, t, i, true), NULL);
      }
      (*i)++;
      return n;
    }
    if (op(k, "{")) {
      n = jnode_new(a, JN_DICT, k);
      (*i)++;
      while (!op(&t[*i], "}")) {
        if (n->nk) expect_op(a, t, i, ",");
        if (op(&t[*i], "}")) break;
        jnode_push(a, n, jparse_expr(a, t, i, true), NULL);
        expect_op(a, t, i, ":");
        jnode_push(a, n, jparse_expr(a, t, i, true), NULL);
      }
      (*i)++;
      return n;
    }
    break;
  default:
    break;
  }
  jsyntax(a, k->line, k->col, "expected an expression, found %s", tok_desc(k));
}

static jnode *parse_subscript(jarena *a, const jtok *t, size_t *i, jnode *obj, const jtok *at) {
  jnode *parts[3] = {NULL, NULL, NULL};
  int np = 0;
  bool slice = false;
  for (;;) {
    if (!op(&t[*i], ":") && !op(&t[*i], "]")) parts[np] = jparse_expr(a, t, i, true);
    if (op(&t[*i], ":")) {
      slice = true;
      if (++np > 2) jsyntax(a, t[*i].line, t[*i].col, "a slice takes at most start:stop:step");
      (*i)++;
      continue;
    }
    break;
  }
  expect_op(a, t, i, "]");
  jnode *n = jnode_new(a, slice ? JN_SLICE : JN_ITEM, at);
  n->a = obj;
  n->b = parts[0];
  if (!slice && !parts[0]) jsyntax(a, at->line, at->col, "expected a subscript");
  n->c = parts[1];
  n->d = parts[2];
  return n;
}

static jnode *parse_postfix(jarena *a, const jtok *t, size_t *i, jnode *n) {
  for (;;) {
    const jtok *k = &t[*i];
    if (op(k, ".")) {
      (*i)++;
      const jtok *m = &t[*i];
      jnode *x;
      if (m->k == JT_NAME) {
        x = jnode_new(a, JN_ATTR, k);
        x->s = ja_strdup(a, m->s, m->n);
        x->n = m->n;
      } else if (m->k == JT_INT) {
        x = jnode_new(a, JN_ITEM, k);
        x->b = jnode_new(a, JN_LIT, m);
        x->b->lit = jv_int(m->i);
      } else {
        jsyntax(a, m->line, m->col, "expected an attribute name after '.', found %s", tok_desc(m));
      }
      x->a = n;
      n = x;
      (*i)++;
    } else if (op(k, "[")) {
      (*i)++;
      n = parse_subscript(a, t, i, n, k);
    } else if (op(k, "(")) {
      (*i)++;
      jnode *c = jnode_new(a, JN_CALL, k);
      c->a = n;
      parse_args(a, t, i, c);
      n = c;
    } else {
      return n;
    }
  }
}

/* A filter or test name with its arguments; for tests one bare argument is allowed. */
static jnode *parse_filter_or_test(jarena *a, const jtok *t, size_t *i, jnode *in, bool test) {
  const jtok *k = &t[*i];
  if (k->k != JT_NAME && !(test && k->k == JT_OP && (op(k, "==") || op(k, "!=") || op(k, "<") || op(k, ">") ||
                                                         op(k, "<=") || op(k, ">="))))
    jsyntax(a, k->line, k->col, "expected a %s name, found %s", test ? "test" : "filter", tok_desc(k));
  jnode *n = jnode_new(a, test ? JN_TEST : JN_FILTER, k);
  n->a = in;
  size_t len = k->n;
  const char *s = k->s;
  (*i)++;
  while (op(&t[*i], ".") && t[*i + 1].k == JT_NAME) { /* dotted names: none exist, reported below */
    len = (size_t)(t[*i + 1].s + t[*i + 1].n - s);
    *i += 2;
  }
  n->s = ja_strdup(a, s, len);
  n->n = len;
  n->fn = test ? (void (*)(void))jtest_find(n->s, len) : (void (*)(void))jfilter_find(n->s, len);
  /* an unknown name fails when reached, as in jinja2 3 (templates guard with "is filter") */
  if (op(&t[*i], "(")) {
    (*i)++;
    parse_args(a, t, i, n);
  } else if (test) {
    const jtok *m = &t[*i];
    bool arg = m->k == JT_STRING || m->k == JT_INT || m->k == JT_FLOAT || op(m, "(") || op(m, "[") || op(m, "{") ||
               (m->k == JT_NAME && !name(m, "and") && !name(m, "or") && !name(m, "else") && !name(m, "if") &&
                !name(m, "is") && !name(m, "in") && !name(m, "not"));
    if (arg) jnode_push(a, n, parse_unary(a, t, i, false), NULL);
  }
  return n;
}

static jnode *parse_filters(jarena *a, const jtok *t, size_t *i, jnode *n) {
  for (;;) {
    if (op(&t[*i], "|")) {
      (*i)++;
      n = parse_filter_or_test(a, t, i, n, false);
    } else if (name(&t[*i], "is")) {
      (*i)++;
      bool neg = false;
      if (name(&t[*i], "not")) {
        neg = true;
        (*i)++;
      }
      n = parse_filter_or_test(a, t, i, n, true);
      n->op = neg;
    } else {
      return n;
    }
  }
}

static jnode *parse_unary(jarena *a, const jtok *t, size_t *i, bool with_filter) {
  const jtok *k = &t[*i];
  jnode *n;
  if (op(k, "-") || op(k, "+")) {
    (*i)++;
    n = jnode_new(a, op(k, "-") ? JN_NEG : JN_POS, k);
    jparse_enter(a, k);
    n->a = parse_unary(a, t, i, false);
    jparse_leave(a);
  } else {
    n = parse_postfix(a, t, i, parse_primary(a, t, i));
  }
  return with_filter ? parse_filters(a, t, i, n) : n;
}

static jnode *bin(jarena *a, const jtok *at, jop o, jnode *l, jnode *r) {
  jnode *n = jnode_new(a, JN_BIN, at);
  n->op = (uint8_t)o;
  n->a = l;
  n->b = r;
  return n;
}

static jnode *parse_pow(jarena *a, const jtok *t, size_t *i) {
  jnode *n = parse_unary(a, t, i, true);
  while (op(&t[*i], "**")) {
    const jtok *k = &t[(*i)++];
    n = bin(a, k, JO_POW, n, parse_unary(a, t, i, true));
  }
  return n;
}

static jnode *parse_mul(jarena *a, const jtok *t, size_t *i) {
  jnode *n = parse_pow(a, t, i);
  for (;;) {
    const jtok *k = &t[*i];
    jop o = op(k, "*") ? JO_MUL : op(k, "/") ? JO_DIV : op(k, "//") ? JO_FLOORDIV : op(k, "%") ? JO_MOD : JO_EQ;
    if (o == JO_EQ) return n;
    (*i)++;
    n = bin(a, k, o, n, parse_pow(a, t, i));
  }
}

static jnode *parse_concat(jarena *a, const jtok *t, size_t *i) {
  jnode *n = parse_mul(a, t, i);
  while (op(&t[*i], "~")) {
    const jtok *k = &t[(*i)++];
    n = bin(a, k, JO_CONCAT, n, parse_mul(a, t, i));
  }
  return n;
}

static jnode *parse_add(jarena *a, const jtok *t, size_t *i) {
  jnode *n = parse_concat(a, t, i);
  for (;;) {
    const jtok *k = &t[*i];
    if (!op(k, "+") && !op(k, "-")) return n;
    (*i)++;
    n = bin(a, k, op(k, "+") ? JO_ADD : JO_SUB, n, parse_concat(a, t, i));
  }
}

static jnode *parse_compare(jarena *a, const jtok *t, size_t *i) {
  jnode *first = parse_add(a, t, i), *n = NULL;
  for (;;) {
    const jtok *k = &t[*i];
    int o = op(k, "==") ? JO_EQ : op(k, "!=") ? JO_NE : op(k, "<") ? JO_LT : op(k, "<=") ? JO_LE : op(k, ">") ? JO_GT
          : op(k, ">=") ? JO_GE : name(k, "in") ? JO_IN : (name(k, "not") && name(&t[*i + 1], "in")) ? JO_NOTIN : -1;
    if (o < 0) return n ? n : first;
    *i += o == JO_NOTIN ? 2 : 1;
    if (!n) {
      n = jnode_new(a, JN_CMP, k);
      jnode_push(a, n, first, NULL);
    }
    n->ops[n->nk - 1] = (uint8_t)o;
    jnode_push(a, n, parse_add(a, t, i), NULL);
  }
}

static jnode *parse_not(jarena *a, const jtok *t, size_t *i) {
  if (name(&t[*i], "not")) {
    jnode *n = jnode_new(a, JN_NOT, &t[(*i)++]);
    jparse_enter(a, &t[*i - 1]);
    n->a = parse_not(a, t, i);
    jparse_leave(a);
    return n;
  }
  return parse_compare(a, t, i);
}

static jnode *parse_and(jarena *a, const jtok *t, size_t *i) {
  jnode *n = parse_not(a, t, i);
  while (name(&t[*i], "and")) {
    jnode *x = jnode_new(a, JN_AND, &t[(*i)++]);
    x->a = n;
    x->b = parse_not(a, t, i);
    n = x;
  }
  return n;
}

static jnode *parse_or(jarena *a, const jtok *t, size_t *i) {
  jnode *n = parse_and(a, t, i);
  while (name(&t[*i], "or")) {
    jnode *x = jnode_new(a, JN_OR, &t[(*i)++]);
    x->a = n;
    x->b = parse_and(a, t, i);
    n = x;
  }
  return n;
}

jnode *jparse_expr(jarena *a, const jtok *t, size_t *i, bool with_cond) {
  jparse_enter(a, &t[*i]);
  jnode *n = parse_or(a, t, i);
  while (with_cond && name(&t[*i], "if")) {
    jnode *x = jnode_new(a, JN_COND, &t[(*i)++]);
    x->b = n;
    x->a = parse_or(a, t, i);
    if (name(&t[*i], "else")) {
      (*i)++;
      x->c = jparse_expr(a, t, i, true);
    }
    n = x;
  }
  jparse_leave(a);
  return n;
}

jnode *jparse_tuple_or_expr(jarena *a, const jtok *t, size_t *i, bool with_cond) {
  const jtok *at = &t[*i];
  jnode *n = jparse_expr(a, t, i, with_cond);
  if (!op(&t[*i], ",")) return n;
  jnode *tu = jnode_new(a, JN_TUPLE, at);
  jnode_push(a, tu, n, NULL);
  while (op(&t[*i], ",")) {
    (*i)++;
    const jtok *k = &t[*i];
    if (k->k == JT_VAR_END || k->k == JT_BLOCK_END || op(k, ")") || op(k, "=") || name(k, "in")) break;
    jnode_push(a, tu, jparse_expr(a, t, i, with_cond), NULL);
  }
  return tu;
}
