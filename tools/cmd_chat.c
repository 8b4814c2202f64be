/* forgia chat: an interactive conversation over the checkpoint's own chat template, the
 * key/value cache kept between turns (only the tokens a turn adds run through the model). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forgia/lm.h"
#include "util_args.h"
#include "util_chat.h"
#include "util_lm.h"
#include "util_report.h"

const char fg_cmd_chat_summary[] = "talk with a language model over its own chat template";

static const char synopsis[] =
    "forgia chat MODEL [--system TEXT] [-n N] [--temp T] [--seed S] [--ctx N] [--template NAME] [--no-think] "
    "[--device D] [--mode exact|fast] [--threads N]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "Reads one user message per line from standard input and answers each, streaming, with\n"
          "the conversation rendered by the checkpoint's chat template (see forgia help tokenize).\n"
          "Only the tokens a turn adds run through the model: the key/value cache keeps the rest.\n"
          "An empty line is skipped; /reset starts a new conversation; /exit or end of input ends.\n"
          "  --system TEXT   a system message first\n"
          "  -n N            at most N tokens per answer (default 512)\n"
          "  --temp T, --seed S   as in forgia help generate (top-k 40, top-p 0.95, min-p 0.05)\n"
          "  --ctx N         the conversation's token budget (default: 4096, or the model's context)\n"
          "  --template NAME, --no-think   as in forgia help tokenize\n"
          "  --device D, --mode exact|fast, --threads N   as in forgia help eval\n",
          synopsis);
}

typedef struct turn_out {
  const fg_tokenizer *t;
  fg_tok_stream *ts;
  char *text;
  size_t len, cap;
  int32_t *gen;      /* the ids generated this turn (room for the turn's limit) */
  size_t n_gen;
  fg_status err;
} turn_out;

static bool on_token(int32_t id, void *user) {
  turn_out *o = user;
  o->gen[o->n_gen++] = id;
  if (fg_cli_lm_is_stop(o->t, id)) return true;
  const char *bytes = NULL;
  size_t len = 0;
  if ((o->err = fg_tok_stream_push(o->ts, id, &bytes, &len))) return false;
  if (!len) return true;
  fwrite(bytes, 1, len, stdout);
  fflush(stdout);
  if (o->len + len + 1 > o->cap) {
    size_t nc = (o->len + len + 1) * 2;
    char *nt = realloc(o->text, nc);
    if (!nt) {
      o->err = fg_fail(FG_ERR_NOMEM, "chat: out of memory");
      return false;
    }
    o->text = nt;
    o->cap = nc;
  }
  memcpy(o->text + o->len, bytes, len);
  o->len += len;
  o->text[o->len] = 0;
  return true;
}

typedef struct convo {
  fg_chat_msg *msgs;
  char **owned;
  size_t n, cap;
} convo;

static int convo_add(convo *c, const char *role, const char *content) {
  if (c->n == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 8;
    fg_chat_msg *m = realloc(c->msgs, nc * sizeof *m);
    if (!m) return 1;
    c->msgs = m;
    char **o = realloc(c->owned, nc * sizeof *o);
    if (!o) return 1;
    c->owned = o;
    c->cap = nc;
  }
  char *copy = strdup(content);
  if (!copy) return 1;
  c->owned[c->n] = copy;
  c->msgs[c->n].role = role;
  c->msgs[c->n].content = copy;
  c->n++;
  return 0;
}

static void convo_clear(convo *c, size_t keep) {
  while (c->n > keep) free(c->owned[--c->n]);
}

int fg_cmd_chat(int argc, char **argv) {
  const char *path = NULL, *system = NULL, *n_text = NULL, *temp = NULL, *seed = NULL, *ctx_text = NULL, *tmpl = NULL,
             *device = NULL, *mode = NULL, *threads = NULL;
  bool no_think = false;
  const fg_cli_opt opts[] = {{"--system", &system, NULL}, {"-n", &n_text, NULL},         {"--temp", &temp, NULL},
                             {"--seed", &seed, NULL},     {"--ctx", &ctx_text, NULL},    {"--template", &tmpl, NULL},
                             {"--no-think", NULL, &no_think}, {"--device", &device, NULL}, {"--mode", &mode, NULL},
                             {"--threads", &threads, NULL}};
  static const char *const pos_names[] = {"MODEL"};
  const fg_cli_spec spec = {"chat", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, &path, 1, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  fg_sample_params sp;
  fg_sample_params_init(&sp);
  uint64_t n_new = 512, ctx = 0;
  if (n_text && (!fg_cli_parse_u64(n_text, 10, &n_new) || !n_new || n_new > ((uint64_t)1 << 24)))
    return fg_cli_usage_error(&spec, "-n", "'%s': expected a token count 1..16777216", n_text);
  if (ctx_text && (!fg_cli_parse_u64(ctx_text, 10, &ctx) || ctx < 16 || ctx > ((uint64_t)1 << 24)))
    return fg_cli_usage_error(&spec, "--ctx", "'%s': expected a token count 16..16777216", ctx_text);
  if (seed && !fg_cli_parse_u64(seed, 0, &sp.seed))
    return fg_cli_usage_error(&spec, "--seed", "'%s': expected an integer 0..2^64-1", seed);
  if (temp) {
    char *end = NULL;
    const double x = strtod(temp, &end);
    if (end == temp || *end || !(x >= 0.0 && x <= 1e6))
      return fg_cli_usage_error(&spec, "--temp", "'%s': expected a number in [0, 1e+06]", temp);
    sp.temp = (float)x;
  }
  fg_cli_lm m;
  rc = fg_cli_lm_open(&spec, path, device, mode, threads, &m);
  if (rc != FG_CLI_GO) return rc;
  rc = 1;
  const fg_tokenizer *t = fg_lm_tokenizer(m.lm);
  const fg_lm_config *c = fg_lm_get_config(m.lm);
  fg_cli_chat pick = {0};
  fg_lm_cache *cache = NULL;
  convo cv = {0};
  int32_t *held = NULL; /* the ids the cache holds, in order */
  size_t n_held = 0;
  char *line = NULL;
  size_t line_cap = 0;
  uint64_t step = 0;
  turn_out o = {.t = t};
  if (!t) {
    fg_cli_fail("chat", path, "carries no tokenizer");
    goto done;
  }
  if (!ctx) ctx = c->n_ctx_train && c->n_ctx_train < 4096 ? c->n_ctx_train : 4096;
  if (fg_cli_chat_pick("chat", path, tmpl, &pick) || fg_lm_cache_create(m.lm, 1, (size_t)ctx, &cache) ||
      (held = malloc((size_t)ctx * sizeof *held)) == NULL || (o.gen = malloc((size_t)ctx * sizeof *o.gen)) == NULL) {
    if (!held && cache) fg_cli_fail("chat", NULL, "out of memory");
    else fg_cli_report("chat", path);
    goto done;
  }
  if (system && convo_add(&cv, "system", system)) goto oom;
  if (pick.arch) fg_cli_chat_note("chat", path, &pick);
  const bool tty = isatty(0);
  for (;;) {
    if (tty) fputs("> ", stderr);
    const ssize_t got = getline(&line, &line_cap, stdin);
    if (got < 0) break;
    size_t len = (size_t)got;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (!len) continue;
    if (!strcmp(line, "/exit")) break;
    if (!strcmp(line, "/reset")) {
      convo_clear(&cv, system ? 1 : 0);
      if (fg_lm_cache_truncate(cache, 0, 0)) goto report;
      n_held = 0;
      continue;
    }
    if (convo_add(&cv, "user", line)) goto oom;
    char *prompt = NULL;
    size_t plen = 0, n = 0;
    int32_t *ids = NULL;
    const fg_chat_opts co = {.add_generation_prompt = true, .no_think = no_think};
    if (fg_cli_chat_render(&pick, t, cv.msgs, cv.n, &co, &prompt, &plen) ||
        fg_tokenizer_encode(t, prompt, plen, false, &ids, &n)) {
      fg_chat_free(prompt);
      goto report;
    }
    fg_chat_free(prompt);
    if (n + 1 >= ctx) {
      fg_tokenizer_free_ids(ids);
      fg_cli_fail("chat", NULL, "the conversation needs %zu tokens, more than --ctx %llu: /reset or raise --ctx", n,
                  (unsigned long long)ctx);
      cv.n--;
      free(cv.owned[cv.n]);
      continue;
    }
    /* Keep the cached prefix the new prompt shares; run only the rest. */
    size_t same = 0;
    while (same < n_held && same < n && held[same] == ids[same]) same++;
    if (same == n) same--; /* the last prompt token must run to give the next token's logits */
    if (fg_lm_cache_truncate(cache, 0, same)) {
      fg_tokenizer_free_ids(ids);
      goto report;
    }
    memcpy(held, ids, n * sizeof *ids);
    n_held = n;
    o.len = 0;
    o.n_gen = 0;
    if (o.text) o.text[0] = 0;
    if (fg_tok_stream_create(t, &o.ts)) {
      fg_tokenizer_free_ids(ids);
      goto report;
    }
    fg_cli_gen_stats gs;
    size_t room = (size_t)ctx - n;
    fg_status st = fg_cli_lm_generate(m.lm, cache, ids + same, n - same, room < n_new ? room : (size_t)n_new, &sp, step,
                                      on_token, &o, &gs);
    fg_tokenizer_free_ids(ids);
    if (!st) st = o.err;
    const char *bytes = NULL;
    size_t blen = 0;
    fg_tok_stream_finish(o.ts, &bytes, &blen);
    if (blen) fwrite(bytes, 1, blen, stdout);
    fg_tok_stream_free(o.ts);
    o.ts = NULL;
    putchar('\n');
    fflush(stdout);
    if (st) goto report;
    step += gs.generated;
    /* The cache now holds the prompt and the answer's ids as sampled (all but a final stop
     * token); the next render re-tokenizes the answer, and the shared prefix decides how
     * much of it is reused. */
    const size_t fed = fg_lm_cache_len(cache, 0) - n;
    memcpy(held + n, o.gen, fed * sizeof *held);
    n_held = n + fed;
    if (convo_add(&cv, "assistant", o.text ? o.text : "")) goto oom;
  }
  rc = 0;
  goto done;
oom:
  fg_cli_fail("chat", NULL, "out of memory");
  goto done;
report:
  fg_cli_report("chat", path);
done:
  convo_clear(&cv, 0);
  free(cv.msgs);
  free(cv.owned);
  free(held);
  free(line);
  free(o.text);
  free(o.gen);
  fg_tok_stream_free(o.ts);
  fg_lm_cache_free(cache);
  fg_cli_chat_free(&pick);
  fg_cli_lm_close(&m);
  return rc;
}
