/* forgia eval: the negative log-likelihood and perplexity of a text under a model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "forgia/lm.h"
#include "util_args.h"
#include "util_file.h"
#include "util_adapters.h"
#include "util_lm.h"
#include "util_report.h"

const char fg_cmd_eval_summary[] = "perplexity of a text under a language model (GGUF or HF folder)";

static const char synopsis[] =
    "forgia eval MODEL --file F [--ctx N] [--json] [--adapters DIR [--alpha A]] [--device D] [--mode exact|fast] "
    "[--threads N]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "MODEL is a GGUF file or a Hugging Face folder of a llama, qwen2, qwen3 or gemma3 model.\n"
          "The text of F (\"-\": standard input) is tokenized as `forgia tokenize MODEL --file`\n"
          "tokenizes one text (the BOS as the checkpoint says; the whole file, newlines included),\n"
          "then the first N tokens run through the model in one causal pass (chunked, the key/value\n"
          "cache carried across chunks). Prints the token count, the mean negative log-likelihood\n"
          "of tokens 2..N given the ones before, and the perplexity exp(mean NLL).\n"
          "  --ctx N        tokens to evaluate (default: all of F, up to the model's context)\n"
          "  --json         print {\"ids\": [...], \"nll\": [...], \"ppl\": x, \"tokens\": n}, where\n"
          "                 nll[i] = -log softmax(logits after ids[0..i])[ids[i+1]] in f64\n"
          "  --adapters DIR LoRA adapters applied without merging: DIR a checkpoint directory holding\n"
          "                 adapters.safetensors (layers.<i>.<target>.lora_{a,b}), or that file\n"
          "  --alpha A      the adapters' LoRA alpha (scale alpha / rank); default: lora_alpha of\n"
          "                 DIR/trainer_state.json\n"
          "  --device D     cpu, cuda, cuda:N or auto (default: the first GPU when present)\n"
          "  --mode M       exact: every kernel and the projections give the same bits on every\n"
          "                 device and thread count; fast (default): BLAS/cuBLAS projections\n"
          "  --threads N    CPU threads (default: the cores); never changes the bits\n"
          "A summary line (device, mode, tokens/s) goes to stderr.\n",
          synopsis);
}

int fg_cmd_eval(int argc, char **argv) {
  const char *path = NULL, *file = NULL, *ctx = NULL, *device = NULL, *mode = NULL, *threads = NULL,
             *adapters = NULL, *alpha = NULL;
  bool json = false;
  const fg_cli_opt opts[] = {{"--file", &file, NULL},     {"--ctx", &ctx, NULL},   {"--json", NULL, &json},
                             {"--device", &device, NULL}, {"--mode", &mode, NULL}, {"--threads", &threads, NULL},
                             {"--adapters", &adapters, NULL}, {"--alpha", &alpha, NULL}};
  static const char *const pos_names[] = {"MODEL"};
  const fg_cli_spec spec = {"eval", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, &path, 1, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  if (!file) return fg_cli_usage_error(&spec, "--file", "missing: the text to evaluate");
  if (alpha && !adapters) return fg_cli_usage_error(&spec, "--alpha", "goes with --adapters");
  uint64_t n_ctx = 0;
  if (ctx && (!fg_cli_parse_u64(ctx, 10, &n_ctx) || n_ctx < 2 || n_ctx > ((uint64_t)1 << 24)))
    return fg_cli_usage_error(&spec, "--ctx", "'%s': expected a token count 2..16777216", ctx);
  fg_gemm_mode checked;
  if ((rc = fg_cli_lm_parse(&spec, mode, threads, &checked)) != FG_CLI_GO) return rc;
  uint8_t *text = NULL;
  size_t len = 0;
  if (fg_cli_read_input(file, 0, &text, &len)) {
    fg_cli_report("eval", strcmp(file, "-") ? file : "standard input");
    return 1;
  }
  fg_cli_lm m;
  rc = fg_cli_lm_open(&spec, path, device, mode, threads, &m);
  if (rc != FG_CLI_GO) {
    free(text);
    return rc;
  }
  fg_cli_adapters ad = {0};
  if (adapters && (rc = fg_cli_adapters_attach(&spec, m.lm, adapters, alpha, &ad)) != FG_CLI_GO) {
    fg_cli_lm_close(&m);
    free(text);
    return rc;
  }
  rc = 1;
  int32_t *ids = NULL;
  double *nll = NULL;
  size_t n = 0;
  const fg_tokenizer *t = fg_lm_tokenizer(m.lm);
  const fg_lm_config *c = fg_lm_get_config(m.lm);
  if (!t) {
    fg_cli_fail("eval", path, "carries no tokenizer, so a text cannot be evaluated");
    goto done;
  }
  if (fg_tokenizer_encode(t, (const char *)text, len, fg_tokenizer_add_bos(t), &ids, &n)) {
    fg_cli_report("eval", path);
    goto done;
  }
  size_t limit = n_ctx ? (size_t)n_ctx : (c->n_ctx_train ? c->n_ctx_train : n);
  if (n > limit) n = limit;
  if (n < 2) {
    fg_cli_fail("eval", file, "%zu token%s: at least 2 are needed to predict one", n, n == 1 ? "" : "s");
    goto done;
  }
  nll = malloc((n - 1) * sizeof *nll);
  if (!nll) {
    fg_cli_fail("eval", NULL, "out of memory");
    goto done;
  }
  const double t0 = fg_clock_seconds();
  if (fg_lm_nll(m.lm, ids, n, 0, nll)) {
    fg_cli_report("eval", path);
    goto done;
  }
  const double secs = fg_clock_seconds() - t0;
  double sum = 0.0;
  for (size_t i = 0; i + 1 < n; i++) sum += nll[i];
  const double mean = sum / (double)(n - 1), ppl = exp(mean);
  if (json) {
    printf("{\"ids\": [");
    for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", (int)ids[i]);
    printf("], \"nll\": [");
    for (size_t i = 0; i + 1 < n; i++) printf(i ? ", %.17g" : "%.17g", nll[i]);
    printf("], \"ppl\": %.17g, \"tokens\": %zu}\n", ppl, n);
  } else {
    printf("tokens %zu\nnll %.6f\nppl %.4f\n", n, mean, ppl);
  }
  fprintf(stderr, "forgia eval: %zu tokens on %s (%s mode%s) in %.2f s, %.1f tokens/s; model loaded in %.2f s\n", n,
          fg_device_spec(m.dev), fg_cli_lm_mode_name(m.mode), ad.count ? ", LoRA adapters" : "", secs, (double)n / secs,
          m.load_seconds);
  rc = 0;
done:
  fg_tokenizer_free_ids(ids);
  free(nll);
  free(text);
  fg_cli_adapters_free(m.lm, &ad);
  fg_cli_lm_close(&m);
  return rc;
}
