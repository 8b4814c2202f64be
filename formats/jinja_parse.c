/* Jinja statements: the block tags chat templates use (if, for, set, macro, call, filter,
 * break/continue, generation) into a tree of bodies; and the compile/free entry points. */
#include <stdlib.h>
#include <string.h>

#include "formats/jinja_internal.h"

typedef struct parser {
  jarena *a;
  const jtok *t;
  size_t i;
} parser;

static bool name_at(const parser *p, size_t k, const char *s) { return jtok_is(&p->t[p->i + k], JT_NAME, s); }

static void expect_end(parser *p, const char *what) {
  const jtok *k = &p->t[p->i];
  if (k->k != JT_BLOCK_END) jsyntax(p->a, k->line, k->col, "expected '%%}' to end the %s tag", what);
  p->i++;
}

static const char *need_name(parser *p, const char *what) {
  const jtok *k = &p->t[p->i];
  if (k->k != JT_NAME) jsyntax(p->a, k->line, k->col, "expected %s", what);
  p->i++;
  return ja_strdup(p->a, k->s, k->n);
}

/* Statements up to a block tag named one of ENDS (NULL-terminated); p->i is left on that
 * tag's name. At the top level (ends NULL) up to the end of the template. */
static jnode *parse_body(parser *p, const char *const *ends, const char *opened, const jtok *open_at);

static bool is_end(const parser *p, const char *const *ends) {
  for (; ends && *ends; ends++)
    if (name_at(p, 0, *ends)) return true;
  return false;
}

/* A target of for/set: a name, names separated by commas, or (set only) ns.attr. */
static jnode *parse_target(parser *p, bool allow_attr) {
  const jtok *at = &p->t[p->i];
  bool paren = jtok_is(at, JT_OP, "(");
  if (paren) p->i++;
  jnode *tu = NULL, *first = NULL;
  for (;;) {
    const jtok *k = &p->t[p->i];
    jnode *n = jnode_new(p->a, JN_NAME, k);
    n->s = need_name(p, "a variable name to assign");
    n->n = strlen(n->s);
    if (allow_attr && !tu && jtok_is(&p->t[p->i], JT_OP, ".")) {
      p->i++;
      jnode *x = jnode_new(p->a, JN_ATTR, k);
      x->a = n;
      x->s = need_name(p, "an attribute name after '.'");
      x->n = strlen(x->s);
      return x;
    }
    if (!first) first = n;
    else {
      if (!tu) {
        tu = jnode_new(p->a, JN_TUPLE, at);
        jnode_push(p->a, tu, first, NULL);
      }
      jnode_push(p->a, tu, n, NULL);
    }
    if (!jtok_is(&p->t[p->i], JT_OP, ",")) break;
    p->i++;
    if (!tu) {
      tu = jnode_new(p->a, JN_TUPLE, at);
      jnode_push(p->a, tu, first, NULL);
    }
  }
  if (paren) {
    if (!jtok_is(&p->t[p->i], JT_OP, ")")) jsyntax(p->a, p->t[p->i].line, p->t[p->i].col, "expected ')'");
    p->i++;
  }
  return tu ? tu : first;
}

/* Parameters of macro and call blocks: (a, b=default, ...) into n->kids (defaults in d's kids). */
static void parse_params(parser *p, jnode *n) {
  n->d = jnode_new(p->a, JN_LIST, &p->t[p->i]);
  if (!jtok_is(&p->t[p->i], JT_OP, "(")) return;
  p->i++;
  while (!jtok_is(&p->t[p->i], JT_OP, ")")) {
    if (n->nk) {
      if (!jtok_is(&p->t[p->i], JT_OP, ",")) jsyntax(p->a, p->t[p->i].line, p->t[p->i].col, "expected ',' or ')'");
      p->i++;
      if (jtok_is(&p->t[p->i], JT_OP, ")")) break;
    }
    jnode *pn = jnode_new(p->a, JN_NAME, &p->t[p->i]);
    pn->s = need_name(p, "a parameter name");
    pn->n = strlen(pn->s);
    jnode *dflt = NULL;
    if (jtok_is(&p->t[p->i], JT_OP, "=")) {
      p->i++;
      dflt = jparse_expr(p->a, p->t, &p->i, true);
    } else if (n->d->nk) {
      jnode *prev = n->d->kids[n->d->nk - 1];
      if (prev) jsyntax(p->a, pn->line, pn->col, "a parameter without a default after one with a default");
    }
    jnode_push(p->a, n, pn, NULL);
    jnode_push(p->a, n->d, dflt, NULL);
  }
  p->i++;
}

static jnode *parse_filter_chain(parser *p, jnode *in) {
  /* "name(args) | name2 ...": the filters of {% filter %} and {% set x | f %}, applied to in. */
  jnode *n = in;
  for (;;) {
    const jtok *k = &p->t[p->i];
    jnode *f = jnode_new(p->a, JN_FILTER, k);
    f->s = need_name(p, "a filter name");
    f->n = strlen(f->s);
    f->fn = (void (*)(void))jfilter_find(f->s, f->n);
    f->a = n;
    if (jtok_is(&p->t[p->i], JT_OP, "(")) {
      p->i++;
      while (!jtok_is(&p->t[p->i], JT_OP, ")")) {
        if (f->nk) {
          if (!jtok_is(&p->t[p->i], JT_OP, ",")) jsyntax(p->a, p->t[p->i].line, p->t[p->i].col, "expected ','");
          p->i++;
        }
        const char *kw = NULL;
        if (p->t[p->i].k == JT_NAME && jtok_is(&p->t[p->i + 1], JT_OP, "=")) {
          kw = ja_strdup(p->a, p->t[p->i].s, p->t[p->i].n);
          p->i += 2;
        }
        jnode_push(p->a, f, jparse_expr(p->a, p->t, &p->i, true), kw);
      }
      p->i++;
    }
    n = f;
    if (!jtok_is(&p->t[p->i], JT_OP, "|")) return n;
    p->i++;
  }
}

static jnode *parse_if(parser *p, const jtok *at) {
  jnode *n = jnode_new(p->a, JN_IF, at);
  n->a = jparse_tuple_or_expr(p->a, p->t, &p->i, true);
  expect_end(p, "if");
  static const char *const ends[] = {"elif", "else", "endif", NULL};
  n->b = parse_body(p, ends, "if", at);
  const jtok *k = &p->t[p->i];
  if (name_at(p, 0, "elif")) {
    p->i++;
    jparse_enter(p->a, k);
    n->c = parse_if(p, k);
    jparse_leave(p->a);
    return n;
  }
  if (name_at(p, 0, "else")) {
    p->i++;
    expect_end(p, "else");
    static const char *const e2[] = {"endif", NULL};
    n->c = parse_body(p, e2, "if", at);
  }
  p->i++;
  expect_end(p, "endif");
  return n;
}

static jnode *parse_stmt(parser *p, const jtok *at) {
  const jtok *k = &p->t[p->i];
  if (k->k != JT_NAME) jsyntax(p->a, k->line, k->col, "expected a statement name after '{%%'");
  char word[32] = {0};
  memcpy(word, k->s, k->n < sizeof word - 1 ? k->n : sizeof word - 1);
  p->i++;
  jnode *n;
  if (!strcmp(word, "if")) return parse_if(p, at);
  if (!strcmp(word, "for")) {
    n = jnode_new(p->a, JN_FOR, at);
    n->d = parse_target(p, false);
    if (!name_at(p, 0, "in")) jsyntax(p->a, p->t[p->i].line, p->t[p->i].col, "expected 'in' in the for tag");
    p->i++;
    n->a = jparse_tuple_or_expr(p->a, p->t, &p->i, false);
    if (name_at(p, 0, "if")) {
      p->i++;
      jnode *f = jparse_expr(p->a, p->t, &p->i, true);
      n->kids = ja_alloc(p->a, sizeof *n->kids);
      n->kids[0] = f;
      n->op = 1;
    }
    if (name_at(p, 0, "recursive"))
      jsyntax(p->a, p->t[p->i].line, p->t[p->i].col, "recursive for loops are not supported");
    expect_end(p, "for");
    static const char *const ends[] = {"else", "endfor", NULL};
    n->b = parse_body(p, ends, "for", at);
    if (name_at(p, 0, "else")) {
      p->i++;
      expect_end(p, "else");
      static const char *const e2[] = {"endfor", NULL};
      n->c = parse_body(p, e2, "for", at);
    }
    p->i++;
    expect_end(p, "endfor");
    return n;
  }
  if (!strcmp(word, "set")) {
    jnode *target = parse_target(p, true);
    if (jtok_is(&p->t[p->i], JT_OP, "=")) {
      p->i++;
      n = jnode_new(p->a, JN_SET, at);
      n->d = target;
      n->a = jparse_tuple_or_expr(p->a, p->t, &p->i, true);
      expect_end(p, "set");
      return n;
    }
    n = jnode_new(p->a, JN_SETBLOCK, at);
    n->d = target;
    if (target->kind == JN_TUPLE) jsyntax(p->a, at->line, at->col, "a block set assigns one name");
    if (jtok_is(&p->t[p->i], JT_OP, "|")) {
      p->i++;
      n->c = parse_filter_chain(p, NULL);
    }
    expect_end(p, "set");
    static const char *const ends[] = {"endset", NULL};
    n->b = parse_body(p, ends, "set", at);
    p->i++;
    expect_end(p, "endset");
    return n;
  }
  if (!strcmp(word, "macro")) {
    n = jnode_new(p->a, JN_MACRO, at);
    n->s = need_name(p, "the macro's name");
    n->n = strlen(n->s);
    parse_params(p, n);
    expect_end(p, "macro");
    static const char *const ends[] = {"endmacro", NULL};
    n->b = parse_body(p, ends, "macro", at);
    p->i++;
    if (p->t[p->i].k == JT_NAME) p->i++;
    expect_end(p, "endmacro");
    return n;
  }
  if (!strcmp(word, "call")) {
    n = jnode_new(p->a, JN_CALLBLOCK, at);
    parse_params(p, n);
    n->a = jparse_expr(p->a, p->t, &p->i, true);
    if (n->a->kind != JN_CALL) jsyntax(p->a, n->a->line, n->a->col, "expected a macro call in the call tag");
    expect_end(p, "call");
    static const char *const ends[] = {"endcall", NULL};
    n->b = parse_body(p, ends, "call", at);
    p->i++;
    expect_end(p, "endcall");
    return n;
  }
  if (!strcmp(word, "filter")) {
    n = jnode_new(p->a, JN_FILTERBLOCK, at);
    n->c = parse_filter_chain(p, NULL);
    expect_end(p, "filter");
    static const char *const ends[] = {"endfilter", NULL};
    n->b = parse_body(p, ends, "filter", at);
    p->i++;
    expect_end(p, "endfilter");
    return n;
  }
  if (!strcmp(word, "generation")) {
    expect_end(p, "generation");
    static const char *const ends[] = {"endgeneration", NULL};
    n = parse_body(p, ends, "generation", at);
    p->i++;
    expect_end(p, "endgeneration");
    return n;
  }
  if (!strcmp(word, "break") || !strcmp(word, "continue")) {
    n = jnode_new(p->a, word[0] == 'b' ? JN_BREAK : JN_CONTINUE, at);
    expect_end(p, word);
    return n;
  }
  jsyntax(p->a, k->line, k->col, "unknown tag '%s'", word);
}

static jnode *parse_body(parser *p, const char *const *ends, const char *opened, const jtok *open_at) {
  jnode *body = jnode_new(p->a, JN_BODY, &p->t[p->i]);
  jparse_enter(p->a, &p->t[p->i]);
  for (;;) {
    const jtok *k = &p->t[p->i];
    switch (k->k) {
    case JT_EOF:
      if (ends)
        jsyntax(p->a, k->line, k->col, "unexpected end of template: expected '{%% %s %%}' for the '%s' opened at line %u:%u",
                ends[0] && ends[1] ? ends[1] : ends[0], opened, open_at->line, open_at->col);
      jparse_leave(p->a);
      return body;
    case JT_DATA: {
      jnode *n = jnode_new(p->a, JN_TEXT, k);
      n->s = k->s;
      n->n = k->n;
      jnode_push(p->a, body, n, NULL);
      p->i++;
      break;
    }
    case JT_VAR_BEGIN: {
      p->i++;
      jnode *n = jnode_new(p->a, JN_OUT, k);
      n->a = jparse_tuple_or_expr(p->a, p->t, &p->i, true);
      const jtok *e = &p->t[p->i];
      if (e->k != JT_VAR_END) jsyntax(p->a, e->line, e->col, "expected '}}' to end the expression");
      p->i++;
      jnode_push(p->a, body, n, NULL);
      break;
    }
    case JT_BLOCK_BEGIN: {
      p->i++;
      if (is_end(p, ends)) {
        jparse_leave(p->a);
        return body;
      }
      const jtok *w = &p->t[p->i];
      if (w->k == JT_NAME && (jtok_is(w, JT_NAME, "endif") || jtok_is(w, JT_NAME, "endfor") || jtok_is(w, JT_NAME, "else") ||
                              jtok_is(w, JT_NAME, "elif") || jtok_is(w, JT_NAME, "endset") || jtok_is(w, JT_NAME, "endmacro") ||
                              jtok_is(w, JT_NAME, "endcall") || jtok_is(w, JT_NAME, "endfilter") ||
                              jtok_is(w, JT_NAME, "endgeneration")))
        jsyntax(p->a, w->line, w->col, "unexpected '%.*s'%s%s", (int)w->n, w->s, ends ? ": expected " : "",
                ends ? ends[0] : "");
      jnode_push(p->a, body, parse_stmt(p, k), NULL);
      break;
    }
    default:
      jsyntax(p->a, k->line, k->col, "unexpected token");
    }
  }
}

jnode *jparse(jarena *a, const jtok *toks, size_t n) {
  (void)n;
  parser p = {.a = a, .t = toks, .i = 0};
  return parse_body(&p, NULL, NULL, NULL);
}

fg_status fg_jinja_compile(const char *text, size_t len, fg_jinja **out) {
  if (!out || (!text && len)) return fg_fail(FG_ERR_INVALID_ARG, "fg_jinja_compile: NULL argument");
  *out = NULL;
  fg_jinja *t = calloc(1, sizeof *t);
  if (!t) return fg_fail(FG_ERR_NOMEM, "jinja: out of memory");
  jmp_buf jb;
  t->a.jb = &jb;
  t->a.limit = (size_t)1 << 30;
  t->a.what = "template";
  if (setjmp(jb)) {
    fg_status st = t->a.st;
    ja_free(&t->a);
    free(t);
    return st;
  }
  /* jinja2 reads \r\n and \r as \n, and drops one newline at the very end. */
  char *src = ja_alloc(&t->a, len + 1);
  size_t k = 0;
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '\r') {
      src[k++] = '\n';
      if (i + 1 < len && text[i + 1] == '\n') i++;
    } else {
      src[k++] = text[i];
    }
  }
  if (k && src[k - 1] == '\n') k--;
  src[k] = 0;
  t->src = src;
  jtok *toks;
  size_t nt;
  jlex(&t->a, src, k, &toks, &nt);
  t->root = jparse(&t->a, toks, nt);
  t->a.jb = NULL;
  *out = t;
  return FG_OK;
}

void fg_jinja_free(fg_jinja *t) {
  if (!t) return;
  ja_free(&t->a);
  free(t);
}
