/* Jinja interpreter internals (include/forgia/jinja.h): tokens, the syntax tree, values and
 * the render context shared by formats/jinja_*.c.
 *
 * Memory: a compiled template's nodes live in one arena freed with the template; a render's
 * values live in another, freed when the render ends, so values are plain structs copied by
 * value and shared without reference counts (the immutable sandbox never mutates a list or
 * dict in place, only namespaces, which are shared by design). Errors unwind with longjmp
 * to the entry point, which frees the arena: nothing between allocates elsewhere. */
#ifndef FORGIA_JINJA_INTERNAL_H
#define FORGIA_JINJA_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/jinja.h"

/* ---- arena --------------------------------------------------------------------------- */

typedef struct jchunk {
  struct jchunk *next;
  size_t used, cap;
  max_align_t data[];
} jchunk;

typedef struct jarena {
  jchunk *head;
  size_t total, limit; /* bytes taken from malloc, and the most allowed */
  jmp_buf *jb;         /* where an allocation failure unwinds to */
  const char *what;    /* "template" or "render": for the message */
  fg_status st;        /* the failure being unwound */
  uint32_t depth;      /* parser nesting, bounded so no template overflows the C stack */
} jarena;

void *ja_alloc(jarena *a, size_t n);
char *ja_strdup(jarena *a, const char *s, size_t n);
/* Grows the block p of old bytes to n bytes: in place when it is the arena's last. */
void *ja_grow(jarena *a, void *p, size_t old, size_t n);
void ja_free(jarena *a);

/* ---- tokens ---------------------------------------------------------------------------- */

typedef enum {
  JT_EOF, JT_DATA, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END, JT_NAME, JT_STRING, JT_INT,
  JT_FLOAT, JT_OP
} jtok_kind;

typedef struct jtok {
  jtok_kind k;
  uint32_t line, col;
  const char *s; /* DATA, NAME, STRING (unescaped), OP (its text) */
  size_t n;
  int64_t i;
  double f;
} jtok;

/* ---- values ---------------------------------------------------------------------------- */

typedef enum { JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_NS, JV_FUNC, JV_LOOP } jv_type;

struct jlist;
struct jdict;
struct jfunc;
struct jloop;

typedef struct jv {
  uint8_t t;
  uint8_t tuple; /* JV_LIST: 1 a tuple, 2 a generator (what jinja2's map, select, ... return: always
                  true, no len(), not JSON); JV_UNDEF: 1 from an unsafe attribute; JV_STR: 1 Markup (|safe, |escape:
                  what + joins to it is HTML-escaped, as markupsafe does) */
  uint8_t grow;  /* JV_STR: the bytes sit in a jstrbuf, so s + x may append in place */
  size_t n;      /* JV_STR bytes */
  union {
    bool b;
    int64_t i;
    double f;
    const char *s; /* JV_STR bytes; JV_UNDEF the name for the message (may be NULL) */
    struct jlist *l;
    struct jdict *d;
    struct jfunc *fn;
    struct jloop *lp;
  } u;
} jv;

/* The block behind a growable string: concatenating onto the string whose end is the
 * block's end appends in place, which keeps `{% set ns.s = ns.s ~ x %}` in a loop linear.
 * Older values keep their own length, so they never see the bytes added after them. */
typedef struct jstrbuf {
  size_t used, cap;
  char bytes[];
} jstrbuf;

typedef struct jlist {
  jv *v;
  size_t n, cap;
} jlist;

typedef struct jdict {
  jv *k, *v;
  size_t n, cap;
} jdict;

struct jnode;
struct jscope;

typedef enum { JF_BUILTIN, JF_METHOD, JF_MACRO, JF_CYCLE } jfunc_kind;

typedef struct jfunc {
  jfunc_kind kind;
  int id;                 /* JF_BUILTIN: which global */
  jv self;                /* JF_METHOD: the object; JF_CYCLE: the loop */
  const char *name;       /* JF_METHOD: method name; JF_MACRO: the macro's */
  size_t nlen;
  const struct jnode *macro;  /* JF_MACRO */
  struct jscope *scope;       /* JF_MACRO: where it was defined */
  struct jfunc *caller;       /* JF_MACRO: the call block's body, passed as caller */
} jfunc;

typedef struct jloop {
  jlist *items;
  size_t i;
  uint32_t depth;
} jloop;

/* ---- syntax tree ------------------------------------------------------------------------ */

typedef enum {
  /* expressions */
  JN_LIT, JN_NAME, JN_LIST, JN_TUPLE, JN_DICT, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST,
  JN_BIN, JN_NEG, JN_POS, JN_NOT, JN_AND, JN_OR, JN_COND, JN_CMP,
  /* statements */
  JN_BODY, JN_TEXT, JN_OUT, JN_IF, JN_FOR, JN_SET, JN_SETBLOCK, JN_MACRO, JN_CALLBLOCK, JN_FILTERBLOCK,
  JN_BREAK, JN_CONTINUE
} jnode_kind;

typedef enum {
  JO_ADD, JO_SUB, JO_MUL, JO_DIV, JO_FLOORDIV, JO_MOD, JO_POW, JO_CONCAT,
  JO_EQ, JO_NE, JO_LT, JO_LE, JO_GT, JO_GE, JO_IN, JO_NOTIN
} jop;

typedef struct jnode {
  uint8_t kind;
  uint8_t op;  /* JN_BIN: jop; JN_TEST: negated; JN_FOR: has a filter */
  uint32_t line, col;
  struct jnode *a, *b, *c, *d;
  struct jnode **kids; /* arguments, list items, body statements, CMP operands */
  const char **kw;     /* per kid: a keyword argument's name, or NULL */
  uint8_t *ops;        /* JN_CMP: the operators between kids */
  uint32_t nk;
  const char *s; /* names: variable, attribute, filter, test, macro; JN_TEXT the text */
  size_t n;
  jv lit;
  void (*fn)(void); /* JN_FILTER / JN_TEST: the implementation (a jfilter_fn / jtest_fn), found at compile time */
} jnode;

struct fg_jinja {
  jarena a;
  jnode *root;
  char *src; /* the template, newlines normalised */
};

/* ---- render context -------------------------------------------------------------------- */

typedef struct jbuf {
  char *p;
  size_t n, cap;
} jbuf;

typedef struct jscope {
  struct jscope *up;
  jdict vars;
} jscope;

typedef struct jctx {
  jarena a;
  jmp_buf jb;
  fg_jinja_opts o;
  uint64_t steps;
  uint32_t depth, loop_depth;
  jbuf *out;
  jscope *root;
  int ctl; /* 1: break, 2: continue pending */
} jctx;

/* Evaluated call arguments: positional first, then keywords (kw[i] non-NULL). */
typedef struct jargs {
  uint32_t n;
  jv *v;
  const char **kw;
} jargs;

typedef jv (*jfilter_fn)(jctx *c, const jnode *at, jv in, const jargs *a);
typedef bool (*jtest_fn)(jctx *c, const jnode *at, jv in, const jargs *a);

/* ---- lexer and parser ---------------------------------------------------------------- */

/* Tokens of the (normalised) source; *toks in a. Syntax errors unwind through a->jb. */
void jlex(jarena *a, const char *src, size_t len, jtok **toks, size_t *n);
jnode *jparse(jarena *a, const jtok *toks, size_t n);
_Noreturn void jsyntax(jarena *a, uint32_t line, uint32_t col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Parses one expression starting at toks[*i] (jinja_parse_expr.c). */
jnode *jparse_expr(jarena *a, const jtok *t, size_t *i, bool with_cond);
jnode *jparse_tuple_or_expr(jarena *a, const jtok *t, size_t *i, bool with_cond);
jnode *jnode_new(jarena *a, jnode_kind k, const jtok *at);
/* Enters one level of syntactic nesting (a syntax error past JINJA_MAX_NESTING); jparse_leave leaves it. */
#define JINJA_MAX_NESTING 200
void jparse_enter(jarena *a, const jtok *at);
void jparse_leave(jarena *a);
void jnode_push(jarena *a, jnode *n, jnode *kid, const char *kw);
bool jtok_is(const jtok *t, jtok_kind k, const char *s);

jfilter_fn jfilter_find(const char *name, size_t n);
jtest_fn jtest_find(const char *name, size_t n);

/* ---- values (jinja_value.c) ------------------------------------------------------------ */

_Noreturn void jfail(jctx *c, const jnode *at, fg_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
jv jv_undef(const char *name);
jv jv_none(void);
jv jv_bool(bool b);
jv jv_int(int64_t i);
jv jv_float(double f);
jv jv_str(const char *s, size_t n);
jv jv_strz(const char *s);
jv jv_list(jctx *c, size_t cap);
jv jv_dict(jctx *c, size_t cap);
void jl_push(jctx *c, jlist *l, jv v);
void jd_set(jctx *c, jdict *d, jv k, jv v);
/* The value of key k, or NULL. */
jv *jd_get(const jdict *d, jv k);
jv *jd_gets(const jdict *d, const char *s, size_t n);
bool jv_truthy(jv v);
bool jv_eq(jv a, jv b);
/* <0, 0, >0; fails as Python does for values that do not order. */
int jv_cmp(jctx *c, const jnode *at, jv a, jv b);
const char *jv_typename(jv v);
/* str(v) and repr(v) appended to b. */
void jv_str_into(jctx *c, jbuf *b, jv v);
void jv_repr_into(jctx *c, jbuf *b, jv v);
jv jv_to_str(jctx *c, jv v);
/* markupsafe's escape: & < > " ' as entities, the result Markup; Markup stays as it is. */
jv jv_escape(jctx *c, jv s);
/* s with its Markup flag set like that of model. */
jv jv_markup_like(jv s, jv model);
void jb_put(jctx *c, jbuf *b, const char *s, size_t n);
void jb_putc(jctx *c, jbuf *b, char ch);
void jpy_float(char *buf, size_t cap, double f);
/* Iterating: a list's items, a dict's keys, a string's characters; fails for others. */
jlist *jv_iter(jctx *c, const jnode *at, jv v);
/* UTF-8 code points in s. */
size_t ju_len(const char *s, size_t n);
/* Byte offset of code point k (k <= length). */
size_t ju_off(const char *s, size_t n, size_t k);
void jv_check_defined(jctx *c, const jnode *at, jv v);

/* ---- JSON (jinja_json.c) --------------------------------------------------------------- */

/* Parses JSON text into values; false (with a message in err) when malformed. */
bool jjson_parse(jctx *c, const char *s, size_t n, jv *out, char *err, size_t errcap);
/* json.dumps(v, ensure_ascii, indent, separators, sort_keys) as transformers' tojson calls it;
 * indent NULL for none. */
void jjson_dump(jctx *c, const jnode *at, jbuf *b, jv v, bool ascii, const char *indent, size_t ilen,
                const char *isep, const char *ksep, bool sort_keys);

/* ---- evaluation (jinja_eval.c, jinja_exec.c) ------------------------------------------- */

jv jeval(jctx *c, const jnode *n);
jv jcall(jctx *c, const jnode *at, jv fn, const jargs *a);
jv jgetattr(jctx *c, const jnode *at, jv obj, const char *name, size_t n);
jv jgetitem(jctx *c, const jnode *at, jv obj, jv key);
void jexec(jctx *c, const jnode *n);
jv jlookup(jctx *c, const char *name, size_t n);
void jstep(jctx *c, const jnode *at);
/* Renders body into a fresh buffer and returns it as a string. */
jv jcapture(jctx *c, const jnode *body, jscope *scope);
jv jcall_macro(jctx *c, const jnode *at, const jfunc *f, const jargs *a);
/* A str/dict/list method, or JV_UNDEF with tuple=0 when the type has none of that name. */
jv jmethod(jctx *c, const jnode *at, jv self, const char *name, size_t n, const jargs *a);
bool jmethod_exists(jv self, const char *name, size_t n);
/* Argument i (positional) or name (keyword); dflt when absent. */
jv jarg(const jargs *a, uint32_t i, const char *name, jv dflt);
jv jcall_filter(jctx *c, const jnode *at, const char *name, size_t n, jv in, const jargs *a);
bool jcall_test(jctx *c, const jnode *at, const char *name, size_t n, jv in, const jargs *a);


/* ---- Python str helpers (jinja_methods.c) --------------------------------------------- */

/* str.strip / lstrip (which 1) / rstrip (which 2); chars JV_NONE for whitespace. */
jv jpy_strip(jctx *c, const jnode *at, jv s, jv chars, int which);
/* str.split(sep, maxsplit); sep JV_NONE for runs of whitespace. */
jv jpy_split(jctx *c, const jnode *at, jv s, jv sep, int64_t maxsplit);
jv jpy_replace(jctx *c, jv s, jv old, jv new_, int64_t count);
/* str.upper (1), lower (2), capitalize (3), Python's title (4). */
jv jpy_case(jctx *c, jv s, int how);
/* Printf-style "fmt % args" (|format and the % operator). */
jv jfmt_percent(jctx *c, const jnode *at, jv fmt, jv args);
#endif
