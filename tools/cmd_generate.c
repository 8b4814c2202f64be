/* forgia generate: continue a prompt with a language model, streaming the text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/lm.h"
#include "util_args.h"
#include "util_chat.h"
#include "util_adapters.h"
#include "util_lm.h"
#include "util_report.h"

const char fg_cmd_generate_summary[] = "continue a prompt (text, chat or ids) with a language model";

static const char synopsis[] =
    "forgia generate MODEL (--prompt TEXT | --chat MESSAGES.json | --ids \"ID ...\") [-n N] [--temp T] "
    "[--top-k K] [--top-p P] [--min-p P] [--seed S] [--print-ids] [--adapters DIR [--alpha A]] [--device D] "
    "[--mode exact|fast] [--threads N]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "MODEL is a GGUF file or a Hugging Face folder of a llama, qwen2, qwen3 or gemma3 model.\n"
          "The prompt is one of:\n"
          "  --prompt TEXT        tokenized as `forgia tokenize` does (the BOS as the checkpoint says)\n"
          "  --chat MESSAGES.json a conversation ([{\"role\": ..., \"content\": ...}], \"-\": stdin)\n"
          "                       rendered by the checkpoint's chat template with the assistant's\n"
          "                       turn opened (see forgia help tokenize; --template NAME and\n"
          "                       --no-think as there)\n"
          "  --ids \"ID ...\"       token ids, as given\n"
          "Generates up to N tokens (-n, default 128), streaming the text to stdout as it comes;\n"
          "it stops early after the end-of-sequence or end-of-turn token (not printed).\n"
          "  --temp T      temperature (default 0.8); 0 is greedy (the most likely token)\n"
          "  --top-k K     keep the K most likely tokens (default 40; 0: off)\n"
          "  --top-p P     keep the smallest set whose probability reaches P (default 0.95; 1: off)\n"
          "  --min-p P     keep tokens at least P times as likely as the most likely (default 0.05)\n"
          "  --seed S      the draws' random stream (default 0): a seed reproduces a run on any\n"
          "                device in exact mode\n"
          "  --print-ids   print the generated ids (the stop token included) space-separated\n"
          "                instead of text\n"
          "  --adapters DIR, --alpha A, --device D, --mode exact|fast, --threads N   as in forgia help eval\n"
          "A summary line (prompt and generation tokens/s) goes to stderr.\n",
          synopsis);
}

typedef struct out_state {
  fg_tok_stream *ts;
  const fg_tokenizer *t;
  bool print_ids;
  size_t printed;
  fg_status err;
} out_state;

static bool on_token(int32_t id, void *user) {
  out_state *o = user;
  if (o->print_ids) {
    printf(o->printed++ ? " %d" : "%d", (int)id);
    fflush(stdout);
    return true;
  }
  if (fg_cli_lm_is_stop(o->t, id)) return true;
  const char *bytes = NULL;
  size_t len = 0;
  o->err = fg_tok_stream_push(o->ts, id, &bytes, &len);
  if (o->err) return false;
  if (len) fwrite(bytes, 1, len, stdout);
  fflush(stdout);
  return true;
}

static int parse_float(const fg_cli_spec *s, const char *name, const char *v, float lo, float hi, float *out) {
  if (!v) return FG_CLI_GO;
  char *end = NULL;
  const double x = strtod(v, &end);
  if (end == v || *end || !isfinite(x) || x < lo || x > hi)
    return fg_cli_usage_error(s, name, "'%s': expected a number in [%g, %g]", v, (double)lo, (double)hi);
  *out = (float)x;
  return FG_CLI_GO;
}

int fg_cmd_generate(int argc, char **argv) {
  const char *path = NULL, *prompt = NULL, *chat = NULL, *ids_text = NULL, *n_text = NULL, *temp = NULL, *top_k = NULL,
             *top_p = NULL, *min_p = NULL, *seed = NULL, *device = NULL, *mode = NULL, *threads = NULL, *tmpl = NULL,
             *adapters = NULL, *alpha = NULL;
  bool print_ids = false, no_think = false;
  const fg_cli_opt opts[] = {{"--prompt", &prompt, NULL}, {"--chat", &chat, NULL},         {"--ids", &ids_text, NULL},
                             {"-n", &n_text, NULL},       {"--temp", &temp, NULL},         {"--top-k", &top_k, NULL},
                             {"--top-p", &top_p, NULL},   {"--min-p", &min_p, NULL},       {"--seed", &seed, NULL},
                             {"--print-ids", NULL, &print_ids}, {"--device", &device, NULL}, {"--mode", &mode, NULL},
                             {"--threads", &threads, NULL}, {"--template", &tmpl, NULL},   {"--no-think", NULL, &no_think},
                             {"--adapters", &adapters, NULL}, {"--alpha", &alpha, NULL}};
  static const char *const pos_names[] = {"MODEL"};
  const fg_cli_spec spec = {"generate", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, &path, 1, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  if ((prompt != NULL) + (chat != NULL) + (ids_text != NULL) != 1)
    return fg_cli_usage_error(&spec, prompt ? (chat ? "--chat" : "--ids") : chat ? "--ids" : "--prompt",
                              "give exactly one of --prompt, --chat and --ids");
  if (alpha && !adapters) return fg_cli_usage_error(&spec, "--alpha", "goes with --adapters");
  if (!chat && (tmpl || no_think)) return fg_cli_usage_error(&spec, tmpl ? "--template" : "--no-think", "goes with --chat");
  fg_sample_params sp;
  fg_sample_params_init(&sp);
  uint64_t n_new = 128, k = sp.top_k;
  if (n_text && (!fg_cli_parse_u64(n_text, 10, &n_new) || n_new > ((uint64_t)1 << 24)))
    return fg_cli_usage_error(&spec, "-n", "'%s': expected a token count 0..16777216", n_text);
  if (top_k && (!fg_cli_parse_u64(top_k, 10, &k) || k > ((uint64_t)1 << 31)))
    return fg_cli_usage_error(&spec, "--top-k", "'%s': expected a count (0: off)", top_k);
  sp.top_k = (size_t)k;
  if (seed && !fg_cli_parse_u64(seed, 0, &sp.seed))
    return fg_cli_usage_error(&spec, "--seed", "'%s': expected an integer 0..2^64-1", seed);
  if ((rc = parse_float(&spec, "--temp", temp, 0.0f, 1e6f, &sp.temp)) != FG_CLI_GO ||
      (rc = parse_float(&spec, "--top-p", top_p, 1e-9f, 1.0f, &sp.top_p)) != FG_CLI_GO ||
      (rc = parse_float(&spec, "--min-p", min_p, 0.0f, 1.0f, &sp.min_p)) != FG_CLI_GO)
    return rc;
  fg_cli_lm m;
  rc = fg_cli_lm_open(&spec, path, device, mode, threads, &m);
  if (rc != FG_CLI_GO) return rc;
  fg_cli_adapters ad = {0};
  if (adapters && (rc = fg_cli_adapters_attach(&spec, m.lm, adapters, alpha, &ad)) != FG_CLI_GO) {
    fg_cli_lm_close(&m);
    return rc;
  }
  rc = 1;
  const fg_tokenizer *t = fg_lm_tokenizer(m.lm);
  const fg_lm_config *c = fg_lm_get_config(m.lm);
  int32_t *ids = NULL;
  size_t n = 0, nm = 0;
  bool ids_malloced = false;
  cJSON *root = NULL;
  fg_chat_msg *msgs = NULL;
  fg_cli_chat pick = {0};
  char *text = NULL, *raw = NULL;
  size_t tlen = 0, rawlen = 0;
  fg_lm_cache *cache = NULL;
  out_state o = {.t = t, .print_ids = print_ids};
  if (!t && !ids_text) {
    fg_cli_fail("generate", path, "carries no tokenizer: give the prompt as --ids");
    goto done;
  }
  if (!t && !print_ids) {
    fg_cli_fail("generate", path, "carries no tokenizer: use --print-ids");
    goto done;
  }
  if (ids_text) {
    if (fg_cli_lm_parse_ids(&spec, "--ids", ids_text, c->n_vocab, &ids, &n)) {
      rc = 2;
      goto done;
    }
    ids_malloced = true;
  } else if (prompt) {
    if (fg_tokenizer_encode(t, prompt, strlen(prompt), fg_tokenizer_add_bos(t), &ids, &n)) {
      fg_cli_report("generate", path);
      goto done;
    }
  } else {
    if (fg_cli_chat_pick("generate", path, tmpl, &pick) ||
        fg_cli_chat_messages("generate", chat, &root, &msgs, &nm, &raw, &rawlen))
      goto done;
    const fg_chat_opts co = {.add_generation_prompt = true, .no_think = no_think};
    if (fg_cli_chat_render_json(&pick, t, raw, rawlen, msgs, nm, &co, &text, &tlen) ||
        fg_tokenizer_encode(t, text, tlen, false, &ids, &n)) {
      fg_cli_report("generate", path);
      goto done;
    }
  }
  if (!n) {
    fg_cli_fail("generate", NULL, "the prompt has no tokens");
    goto done;
  }
  size_t ctx = n + (size_t)n_new;
  if (c->n_ctx_train && ctx > c->n_ctx_train) ctx = c->n_ctx_train > n ? c->n_ctx_train : n;
  if (fg_lm_cache_create(m.lm, 1, ctx, &cache) || (t && fg_tok_stream_create(t, &o.ts))) {
    fg_cli_report("generate", path);
    goto done;
  }
  fg_cli_gen_stats gs;
  fg_status st = fg_cli_lm_generate(m.lm, cache, ids, n, (size_t)n_new, &sp, 0, on_token, &o, &gs);
  if (!st) st = o.err;
  if (!print_ids && o.ts) {
    const char *bytes = NULL;
    size_t len = 0;
    fg_tok_stream_finish(o.ts, &bytes, &len);
    if (len) fwrite(bytes, 1, len, stdout);
  }
  putchar('\n');
  if (st) {
    fg_cli_report("generate", path);
    goto done;
  }
  fprintf(stderr,
          "forgia generate: %zu prompt tokens in %.3f s (%.1f tokens/s), %zu generated in %.3f s (%.1f tokens/s) on %s "
          "(%s mode)%s\n",
          gs.prompt_tokens, gs.prompt_seconds, gs.prompt_seconds > 0 ? (double)gs.prompt_tokens / gs.prompt_seconds : 0.0,
          gs.generated, gs.gen_seconds, gs.gen_seconds > 0 ? (double)gs.generated / gs.gen_seconds : 0.0,
          fg_device_spec(m.dev), fg_cli_lm_mode_name(m.mode), gs.stopped ? ", stopped at end of turn" : "");
  if (pick.arch) fg_cli_chat_note("generate", path, &pick);
  rc = 0;
done:
  fg_tok_stream_free(o.ts);
  fg_lm_cache_free(cache);
  if (ids_malloced) free(ids);
  else fg_tokenizer_free_ids(ids);
  fg_chat_free(text);
  fg_cli_chat_free(&pick);
  free(msgs);
  free(raw);
  cJSON_Delete(root);
  fg_cli_adapters_free(m.lm, &ad);
  fg_cli_lm_close(&m);
  return rc;
}
