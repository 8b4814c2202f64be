/* Jinja statements and the render entry point. Scoping follows jinja2: a for loop's body
 * and a macro's body get their own scope (a set inside them does not leak out, which is why
 * templates carry state across iterations in a namespace), if blocks do not. */
#include <stdlib.h>
#include <string.h>

#include "formats/jinja_internal.h"

static jscope *scope_new(jctx *c, jscope *up) {
  jscope *s = ja_alloc(&c->a, sizeof *s);
  memset(s, 0, sizeof *s);
  s->up = up;
  return s;
}

static void bind(jctx *c, jscope *s, const char *name, size_t n, jv v) { jd_set(c, &s->vars, jv_str(name, n), v); }

/* Assigns v to a target: a name, a tuple of names (unpacking), or ns.attr. */
static void assign(jctx *c, jscope *s, const jnode *t, jv v) {
  if (t->kind == JN_NAME) {
    bind(c, s, t->s, t->n, v);
  } else if (t->kind == JN_TUPLE) {
    jlist *l = v.t == JV_LIST ? v.u.l : jv_iter(c, t, v);
    if (l->n != t->nk)
      jfail(c, t, FG_ERR_INVALID_ARG, "%s values to unpack (expected %u, got %zu)", l->n > t->nk ? "too many" : "not enough",
            t->nk, l->n);
    for (uint32_t k = 0; k < t->nk; k++) assign(c, s, t->kids[k], l->v[k]);
  } else {
    jv ns = jlookup(c, t->a->s, t->a->n);
    if (ns.t != JV_NS) jfail(c, t, FG_ERR_INVALID_ARG, "cannot assign attribute on non-namespace object");
    jd_set(c, ns.u.d, jv_str(t->s, t->n), v);
  }
}

jv jcapture(jctx *c, const jnode *body, jscope *scope) {
  jbuf *saved = c->out, b = {0};
  jscope *ss = c->root;
  c->out = &b;
  if (scope) c->root = scope;
  jexec(c, body);
  c->out = saved;
  c->root = ss;
  return jv_str(b.p ? b.p : "", b.n);
}

/* A filter chain of {% filter %} / {% set x | f %} applied to v (innermost first). */
static jv apply_chain(jctx *c, const jnode *f, jv v) {
  if (f->a) v = apply_chain(c, f->a, v);
  if (!f->fn) jfail(c, f, FG_ERR_INVALID_ARG, "no filter named '%s'", f->s);
  jargs a = {.n = f->nk, .kw = f->kw, .v = f->nk ? ja_alloc(&c->a, f->nk * sizeof(jv)) : NULL};
  for (uint32_t k = 0; k < f->nk; k++) a.v[k] = jeval(c, f->kids[k]);
  return ((jfilter_fn)f->fn)(c, f, v, &a);
}

jv jcall_macro(jctx *c, const jnode *at, const jfunc *f, const jargs *a) {
  const jnode *m = f->macro;
  jscope *s = scope_new(c, f->scope);
  jv varargs = jv_list(c, 0), kwargs = jv_dict(c, 0);
  varargs.tuple = 1;
  bool *set = ja_alloc(&c->a, m->nk + 1);
  memset(set, 0, m->nk + 1);
  uint32_t pos = 0;
  for (uint32_t k = 0; k < a->n; k++) {
    if (!a->kw[k]) {
      if (pos < m->nk) {
        bind(c, s, m->kids[pos]->s, m->kids[pos]->n, a->v[k]);
        set[pos] = true;
      } else {
        jl_push(c, varargs.u.l, a->v[k]);
      }
      pos++;
      continue;
    }
    uint32_t p = 0;
    while (p < m->nk && strcmp(m->kids[p]->s, a->kw[k])) p++;
    if (p < m->nk) {
      if (set[p]) jfail(c, at, FG_ERR_INVALID_ARG, "macro '%s' got multiple values for argument '%s'", f->name, a->kw[k]);
      bind(c, s, m->kids[p]->s, m->kids[p]->n, a->v[k]);
      set[p] = true;
    } else {
      jd_set(c, kwargs.u.d, jv_strz(a->kw[k]), a->v[k]);
    }
  }
  jscope *ss = c->root;
  c->root = s;
  for (uint32_t p = 0; p < m->nk; p++)
    if (!set[p]) {
      const jnode *d = m->d->kids[p];
      bind(c, s, m->kids[p]->s, m->kids[p]->n, d ? jeval(c, d) : jv_undef(NULL));
    }
  c->root = ss;
  bind(c, s, "varargs", 7, varargs);
  bind(c, s, "kwargs", 6, kwargs);
  if (f->caller) {
    jv cv = {.t = JV_FUNC};
    cv.u.fn = f->caller;
    bind(c, s, "caller", 6, cv);
  }
  uint32_t ld = c->loop_depth;
  c->loop_depth = 0;
  jv out = jcapture(c, m->b, s);
  c->loop_depth = ld;
  return out;
}

static jv macro_value(jctx *c, const jnode *m, const char *name, size_t n) {
  jv v = {.t = JV_FUNC};
  v.u.fn = ja_alloc(&c->a, sizeof *v.u.fn);
  memset(v.u.fn, 0, sizeof *v.u.fn);
  v.u.fn->kind = JF_MACRO;
  v.u.fn->macro = m;
  v.u.fn->scope = c->root;
  v.u.fn->name = name;
  v.u.fn->nlen = n;
  return v;
}

static void exec_for(jctx *c, const jnode *n) {
  jlist *src = jv_iter(c, n->a, jeval(c, n->a));
  jscope *outer = c->root;
  jlist *items = src;
  if (n->op) { /* {% for x in xs if cond %}: loop.length counts what passes */
    jv f = jv_list(c, 0);
    for (size_t i = 0; i < src->n; i++) {
      jstep(c, n);
      c->root = scope_new(c, outer);
      assign(c, c->root, n->d, src->v[i]);
      bool keep = jv_truthy(jeval(c, n->kids[0]));
      c->root = outer;
      if (keep) jl_push(c, f.u.l, src->v[i]);
    }
    items = f.u.l;
  }
  jloop *lp = ja_alloc(&c->a, sizeof *lp);
  lp->items = items;
  lp->depth = 1;
  jv lv = {.t = JV_LOOP};
  lv.u.lp = lp;
  c->loop_depth++;
  for (size_t i = 0; i < items->n; i++) {
    jstep(c, n);
    lp->i = i;
    c->root = scope_new(c, outer);
    assign(c, c->root, n->d, items->v[i]);
    bind(c, c->root, "loop", 4, lv);
    jexec(c, n->b);
    c->root = outer;
    if (c->ctl == 1) {
      c->ctl = 0;
      break;
    }
    c->ctl = 0;
  }
  c->loop_depth--;
  if (!items->n && n->c) jexec(c, n->c);
}

static void exec(jctx *c, const jnode *n) {
  switch (n->kind) {
  case JN_BODY:
    for (uint32_t k = 0; k < n->nk && !c->ctl; k++) jexec(c, n->kids[k]);
    return;
  case JN_TEXT: jb_put(c, c->out, n->s, n->n); return;
  case JN_OUT: jv_str_into(c, c->out, jeval(c, n->a)); return;
  case JN_IF:
    if (jv_truthy(jeval(c, n->a))) jexec(c, n->b);
    else if (n->c) jexec(c, n->c);
    return;
  case JN_FOR: exec_for(c, n); return;
  case JN_SET: assign(c, c->root, n->d, jeval(c, n->a)); return;
  case JN_SETBLOCK: {
    jv v = jcapture(c, n->b, NULL);
    if (n->c) v = apply_chain(c, n->c, v);
    assign(c, c->root, n->d, v);
    return;
  }
  case JN_MACRO: bind(c, c->root, n->s, n->n, macro_value(c, n, n->s, n->n)); return;
  case JN_CALLBLOCK: {
    const jnode *call = n->a;
    jv fn;
    if (call->a->kind == JN_ATTR) fn = jgetattr(c, call->a, jeval(c, call->a->a), call->a->s, call->a->n);
    else fn = jeval(c, call->a);
    jargs a = {.n = call->nk, .kw = call->kw, .v = call->nk ? ja_alloc(&c->a, call->nk * sizeof(jv)) : NULL};
    for (uint32_t k = 0; k < call->nk; k++) a.v[k] = jeval(c, call->kids[k]);
    if (fn.t != JV_FUNC || fn.u.fn->kind != JF_MACRO) {
      jv_str_into(c, c->out, jcall(c, call, fn, &a));
      return;
    }
    jfunc *f = ja_alloc(&c->a, sizeof *f);
    *f = *fn.u.fn;
    f->caller = macro_value(c, n, "caller", 6).u.fn;
    jv_str_into(c, c->out, jcall_macro(c, call, f, &a));
    return;
  }
  case JN_FILTERBLOCK: jv_str_into(c, c->out, apply_chain(c, n->c, jcapture(c, n->b, NULL))); return;
  case JN_BREAK: case JN_CONTINUE:
    if (!c->loop_depth) jfail(c, n, FG_ERR_INVALID_ARG, "%s outside a loop", n->kind == JN_BREAK ? "break" : "continue");
    c->ctl = n->kind == JN_BREAK ? 1 : 2;
    return;
  default: jv_str_into(c, c->out, jeval(c, n)); return;
  }
}

void jexec(jctx *c, const jnode *n) {
  jstep(c, n);
  if (++c->depth > c->o.max_depth) jfail(c, n, FG_ERR_RANGE, "nesting exceeds the bound of %u", c->o.max_depth);
  exec(c, n);
  c->depth--;
}

fg_status fg_jinja_render(const fg_jinja *t, const char *context_json, size_t len, const fg_jinja_opts *o, char **out,
                          size_t *out_len) {
  if (!t || !out || (!context_json && len)) return fg_fail(FG_ERR_INVALID_ARG, "fg_jinja_render: NULL argument");
  *out = NULL;
  if (out_len) *out_len = 0;
  jctx *c = calloc(1, sizeof *c);
  if (!c) return fg_fail(FG_ERR_NOMEM, "jinja: out of memory");
  if (o) c->o = *o;
  if (!c->o.max_output) c->o.max_output = (size_t)16 << 20;
  if (!c->o.max_steps) c->o.max_steps = 50000000;
  if (!c->o.max_depth) c->o.max_depth = 1000;
  if (c->o.max_depth > 20000) c->o.max_depth = 20000; /* past this the C stack, not the bound, would give out */
  c->a.limit = c->o.max_memory ? c->o.max_memory : (size_t)512 << 20;
  c->a.jb = &c->jb;
  c->a.what = "rendering";
  if (setjmp(c->jb)) {
    fg_status st = c->a.st ? c->a.st : FG_ERR_INVALID_ARG;
    ja_free(&c->a);
    free(c);
    return st;
  }
  jv ctx = jv_dict(c, 0);
  if (len) {
    char err[160];
    if (!jjson_parse(c, context_json, len, &ctx, err, sizeof err)) {
      c->a.st = fg_fail(FG_ERR_INVALID_JSON, "jinja: the context is not valid JSON: %s", err);
      longjmp(c->jb, 1);
    }
    if (ctx.t != JV_DICT) {
      c->a.st = fg_fail(FG_ERR_INVALID_JSON, "jinja: the context must be a JSON object");
      longjmp(c->jb, 1);
    }
  }
  c->root = scope_new(c, NULL);
  c->root->vars = *ctx.u.d;
  jbuf b = {0};
  c->out = &b;
  jexec(c, t->root);
  char *r = malloc(b.n + 1);
  if (!r) {
    ja_free(&c->a);
    free(c);
    return fg_fail(FG_ERR_NOMEM, "jinja: out of memory for %zu bytes of output", b.n);
  }
  if (b.n) memcpy(r, b.p, b.n);
  r[b.n] = 0;
  *out = r;
  if (out_len) *out_len = b.n;
  ja_free(&c->a);
  free(c);
  return FG_OK;
}

void fg_jinja_free_text(char *text) { free(text); }
