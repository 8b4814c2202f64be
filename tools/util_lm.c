/* CLI helper for eval, generate and chat (tools/util_lm.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "util_lm.h"
#include "util_report.h"
#include "util_threads.h"

const char *fg_cli_lm_mode_name(fg_gemm_mode m) { return m == FG_GEMM_EXACT ? "exact" : "fast"; }

int fg_cli_lm_parse(const fg_cli_spec *s, const char *mode, const char *threads, fg_gemm_mode *out) {
  int rc = fg_cli_threads(s, threads, NULL);
  if (rc != FG_CLI_GO) return rc;
  *out = FG_GEMM_FAST;
  if (mode && !strcmp(mode, "exact")) *out = FG_GEMM_EXACT;
  else if (mode && strcmp(mode, "fast") != 0)
    return fg_cli_usage_error(s, "--mode", "'%s': expected exact or fast", mode);
  return FG_CLI_GO;
}

int fg_cli_lm_open(const fg_cli_spec *s, const char *path, const char *device, const char *mode, const char *threads,
                   fg_cli_lm *out) {
  memset(out, 0, sizeof *out);
  int rc = fg_cli_lm_parse(s, mode, threads, &out->mode);
  if (rc != FG_CLI_GO) return rc;
  fg_status ds = fg_device_open(device ? device : "auto", &out->dev);
  if (ds) {
    if (ds == FG_ERR_INVALID_ARG || ds == FG_ERR_NO_DEVICE) {
      char problem[512];
      snprintf(problem, sizeof problem, "%s", fg_last_error());
      return fg_cli_usage_error(s, "--device", "%s", problem);
    }
    fg_cli_report(s->cmd, NULL);
    return 1;
  }
  fg_lm_options o = {.mode = out->mode};
  const double t0 = fg_clock_seconds();
  if (fg_lm_open(path, out->dev, &o, &out->lm)) {
    fg_cli_report(s->cmd, path);
    fg_device_close(out->dev);
    out->dev = NULL;
    return 1;
  }
  out->load_seconds = fg_clock_seconds() - t0;
  return FG_CLI_GO;
}

void fg_cli_lm_close(fg_cli_lm *c) {
  fg_lm_free(c->lm);
  fg_device_close(c->dev);
  memset(c, 0, sizeof *c);
}

bool fg_cli_lm_is_stop(const fg_tokenizer *t, int32_t id) {
  if (!t) return false;
  if (id == fg_tokenizer_eos(t)) return true;
  static const char *const ends[] = {"<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|endoftext|>", "<|end|>"};
  for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
    if (fg_tokenizer_index(t, ends[i], strlen(ends[i])) == id && fg_tokenizer_is_special(t, id)) return true;
  return false;
}

fg_status fg_cli_lm_generate(fg_lm *lm, fg_lm_cache *cache, const int32_t *ids, size_t n, size_t max_new,
                             const fg_sample_params *sp, uint64_t step0, fg_cli_lm_token_fn fn, void *user,
                             fg_cli_gen_stats *stats) {
  memset(stats, 0, sizeof *stats);
  const fg_lm_config *c = fg_lm_get_config(lm);
  fg_device *dev = fg_lm_device(lm);
  const fg_tokenizer *t = fg_lm_tokenizer(lm);
  float *row = malloc(c->n_vocab * sizeof(float));
  uint8_t *want = calloc(n ? n : 1, 1);
  if (!row || !want) {
    free(row);
    free(want);
    return fg_fail(FG_ERR_NOMEM, "generate: out of memory");
  }
  fg_status st = FG_OK;
  const float *logits = NULL;
  size_t rows = 0;
  double t0 = fg_clock_seconds();
  if (n) {
    want[n - 1] = 1;
    const fg_lm_batch b = {.n_tok = n, .ids = ids, .logits_rows = want};
    st = fg_lm_forward(lm, cache, &b, &logits, &rows);
    stats->prompt_tokens = n;
  }
  stats->prompt_seconds = fg_clock_seconds() - t0;
  t0 = fg_clock_seconds();
  for (size_t k = 0; k < max_new && !st; k++) {
    if (!logits) break;
    st = fg_device_copy(dev, row, logits, c->n_vocab * sizeof(float), FG_COPY_D2H);
    int32_t id = 0;
    if (!st) st = fg_sample(sp, row, c->n_vocab, step0 + k, &id);
    if (st) break;
    stats->generated++;
    const bool stop = fg_cli_lm_is_stop(t, id);
    if (!fn(id, user)) break;
    if (stop) {
      stats->stopped = true;
      break;
    }
    if (k + 1 == max_new || fg_lm_cache_len(cache, 0) >= fg_lm_cache_ctx(cache)) break;
    const fg_lm_batch b = {.n_tok = 1, .ids = &id};
    st = fg_lm_forward(lm, cache, &b, &logits, &rows);
  }
  stats->gen_seconds = fg_clock_seconds() - t0;
  free(row);
  free(want);
  return st;
}

int fg_cli_lm_parse_ids(const fg_cli_spec *s, const char *what, const char *text, size_t n_vocab, int32_t **ids,
                        size_t *n) {
  size_t cap = 16, k = 0;
  int32_t *v = malloc(cap * sizeof *v);
  if (!v) return fg_cli_usage_error(s, what, "out of memory");
  const char *p = text;
  for (;;) {
    while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') p++;
    if (!*p) break;
    char *end = NULL;
    const long long x = strtoll(p, &end, 10);
    if (end == p || (*end && *end != ' ' && *end != ',' && *end != '\t' && *end != '\n') || x < 0 ||
        (unsigned long long)x >= n_vocab) {
      free(v);
      return fg_cli_usage_error(s, what, "'%.40s': expected token ids 0..%zu separated by spaces", p, n_vocab - 1);
    }
    if (k == cap) {
      int32_t *nv = realloc(v, (cap *= 2) * sizeof *v);
      if (!nv) {
        free(v);
        return fg_cli_usage_error(s, what, "out of memory");
      }
      v = nv;
    }
    v[k++] = (int32_t)x;
    p = end;
  }
  if (!k) {
    free(v);
    return fg_cli_usage_error(s, what, "no token ids");
  }
  *ids = v;
  *n = k;
  return 0;
}
