/* es-finetune's rewards (tools/es_reward.h). */
#include "es_reward.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/sample.h"
#include "util_lm.h"

static const char *const names[] = {"nll", "acc", "rule"};

bool es_reward_parse(const char *s, es_reward_kind *out) {
  for (int k = 0; k < 3; k++)
    if (!strcmp(s, names[k])) {
      *out = (es_reward_kind)k;
      return true;
    }
  return false;
}

const char *es_reward_name(es_reward_kind k) { return (unsigned)k < 3 ? names[k] : "?"; }

/* The words of s: pointers and lengths into s. */
static size_t words(const char *s, const char ***w, size_t **len) {
  size_t n = 0, cap = 16;
  *w = malloc(cap * sizeof **w);
  *len = malloc(cap * sizeof **len);
  while (*w && *len && *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    if (!*s) break;
    const char *b = s;
    while (*s && !isspace((unsigned char)*s)) s++;
    if (n == cap) {
      cap *= 2;
      const char **nw = realloc(*w, cap * sizeof *nw);
      size_t *nl = nw ? realloc(*len, cap * sizeof *nl) : NULL;
      if (nw) *w = nw;
      if (!nl) return (size_t)-1;
      *len = nl;
    }
    (*w)[n] = b;
    (*len)[n++] = (size_t)(s - b);
  }
  return *w && *len ? n : (size_t)-1;
}

double es_unigram_f1(const char *got, const char *want) {
  const char **gw = NULL, **ww = NULL;
  size_t *gl = NULL, *wl = NULL;
  const size_t ng = words(got, &gw, &gl), nw = words(want, &ww, &wl);
  double f1 = 0.0;
  bool *used = (ng == (size_t)-1 || nw == (size_t)-1) ? NULL : calloc(nw ? nw : 1, 1);
  if (used) {
    size_t common = 0;
    for (size_t i = 0; i < ng; i++)
      for (size_t j = 0; j < nw; j++)
        if (!used[j] && gl[i] == wl[j] && !memcmp(gw[i], ww[j], gl[i])) {
          used[j] = true;
          common++;
          break;
        }
    if (!ng && !nw) f1 = 1.0;
    else if (common) f1 = 2.0 * (double)common / (double)(ng + nw);
  }
  free(used);
  free(gw);
  free(gl);
  free(ww);
  free(wl);
  return f1;
}

/* The targets of example e teacher-forced: correct argmaxes and the NLL sum. */
static fg_status forced(es_ctx *c, const ft_example *e, double *correct, double *nll, size_t *den) {
  const float *lg = NULL;
  size_t rows = 0;
  const size_t V = fg_lm_get_config(c->lm)->n_vocab;
  fg_status st = fg_lm_cache_truncate(c->cache, 0, 0);
  const fg_lm_batch b = {.n_tok = e->n - 1, .ids = e->ids};
  if (!st) st = fg_lm_forward(c->lm, c->cache, &b, &lg, &rows);
  float *host = st ? NULL : malloc(rows * V * sizeof *host);
  if (!st && !host) st = fg_fail(FG_ERR_NOMEM, "out of memory");
  if (!st) st = fg_device_copy(fg_lm_device(c->lm), host, lg, rows * V * sizeof *host, FG_COPY_D2H);
  for (size_t j = 1; !st && j < e->n; j++) {
    if (!e->predict[j]) continue;
    const float *row = host + (j - 1) * V;
    size_t best = 0;
    for (size_t v = 1; v < V; v++)
      if (row[v] > row[best]) best = v;
    double s = 0.0;
    for (size_t v = 0; v < V; v++) s += exp((double)row[v] - (double)row[best]);
    *nll += (double)row[best] + log(s) - (double)row[e->ids[j]];
    *correct += best == (size_t)e->ids[j];
    (*den)++;
  }
  free(host);
  return st;
}

typedef struct gen_buf {
  int32_t *ids;
  size_t n;
} gen_buf;

static bool keep(int32_t id, void *user) {
  gen_buf *g = user;
  g->ids[g->n++] = id;
  return true;
}

static bool starts(const char *s, const char *p) { return !p || !strncmp(s, p, strlen(p)); }
static bool ends(const char *s, size_t n, const char *x) {
  const size_t k = x ? strlen(x) : 0;
  return !x || (n >= k && !memcmp(s + n - k, x, k));
}

/* Example e's rule reward: greedy generation from its prompt. */
static fg_status rule(es_ctx *c, const ft_example *e, double *out) {
  const fg_tokenizer *t = fg_lm_tokenizer(c->lm);
  size_t p = 1;
  while (p < e->n && !e->predict[p]) p++;
  if (p >= e->n) return fg_fail(FG_ERR_INVALID_ARG, "rule reward: an example without targets");
  int32_t *gold = malloc(e->n * sizeof *gold);
  gen_buf g = {.ids = malloc((c->max_new + 1) * sizeof(int32_t))};
  if (!gold || !g.ids) {
    free(gold);
    free(g.ids);
    return fg_fail(FG_ERR_NOMEM, "out of memory");
  }
  size_t ng = 0;
  for (size_t j = p; j < e->n; j++)
    if (e->predict[j] && !fg_cli_lm_is_stop(t, e->ids[j])) gold[ng++] = e->ids[j];
  fg_sample_params sp;
  fg_sample_params_init(&sp);
  sp.temp = 0.0f;
  fg_cli_gen_stats stats;
  fg_status st = fg_lm_cache_truncate(c->cache, 0, 0);
  if (!st) st = fg_cli_lm_generate(c->lm, c->cache, e->ids, p, c->max_new, &sp, 0, keep, &g, &stats);
  if (!st && g.n && fg_cli_lm_is_stop(t, g.ids[g.n - 1])) g.n--;
  char *gt = NULL, *wt = NULL;
  size_t gl = 0, wl = 0;
  if (!st) st = fg_tokenizer_decode(t, g.ids, g.n, &gt, &gl);
  if (!st) st = fg_tokenizer_decode(t, gold, ng, &wt, &wl);
  if (!st) {
    double r = es_unigram_f1(gt, wt);
    const char *s = gt;
    size_t n = gl;
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if ((c->prefix || c->suffix) && starts(s, c->prefix) && ends(s, n, c->suffix)) r += 0.1;
    *out = r;
  }
  fg_tokenizer_free_text(gt);
  fg_tokenizer_free_text(wt);
  free(gold);
  free(g.ids);
  return st;
}

fg_status es_member_reward(void *user, uint64_t member, float *reward) {
  (void)member;
  es_ctx *c = user;
  double num = 0.0, nll = 0.0;
  size_t den = 0;
  fg_status st = FG_OK;
  for (size_t i = 0; i < c->n_batch && !st; i++) {
    const ft_example *e = &c->data->ex[c->batch[i]];
    if (c->kind == ES_REWARD_NLL) {
      double *v = malloc(e->n * sizeof *v);
      if (!v) return fg_fail(FG_ERR_NOMEM, "out of memory");
      st = fg_lm_nll(c->lm, e->ids, e->n, 0, v);
      for (size_t j = 1; !st && j < e->n; j++)
        if (e->predict[j]) num -= v[j - 1], den++;
      free(v);
    } else if (c->kind == ES_REWARD_ACC) {
      st = forced(c, e, &num, &nll, &den);
    } else {
      double r = 0.0;
      st = rule(c, e, &r);
      num += r;
      den++;
    }
  }
  if (st) return st;
  double r = den ? num / (double)den : 0.0;
  if (c->kind == ES_REWARD_ACC && den) r += 0.1 * exp(-nll / (double)den);
  *reward = (float)r;
  return FG_OK;
}
