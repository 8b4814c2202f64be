/* fg_lm_open / fg_lm_free: the hyperparameters, the weights through the streaming loader
 * (block types kept as stored), the tokenizer, and the RoPE tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forgia/rope.h"
#include "runtime/lm_internal.h"

fg_status fg_lm_rope_tables(fg_lm *lm, size_t n) {
  if (n <= lm->rope_pos) return FG_OK;
  const fg_lm_config *c = &lm->cfg;
  const size_t floats = n * c->rope_dims;
  if (floats / c->rope_dims != n || floats > ((size_t)1 << 32))
    return fg_fail(FG_ERR_OVERFLOW, "%s: RoPE table for %zu positions is too large", lm->path, n);
  float *host = malloc(floats * sizeof(float));
  if (!host) return fg_fail(FG_ERR_NOMEM, "%s: out of memory for the RoPE table", lm->path);
  float *g = NULL, *l = NULL;
  const bool two = c->rope_base_local != c->rope_base || c->rope_freq_scale != 1.0;
  fg_status st = fg_rope_table_fill(host, n, c->rope_dims, c->rope_base, c->rope_freq_scale, lm->rope_factors);
  if (!st) st = fg_device_mem_alloc(lm->dev, floats * sizeof(float), (void **)&g);
  if (!st) st = fg_device_copy(lm->dev, g, host, floats * sizeof(float), FG_COPY_H2D);
  /* Gemma 3's sliding-window layers rotate with their own base and no scaling. */
  if (!st && two) st = fg_rope_table_fill(host, n, c->rope_dims, c->rope_base_local, 1.0, lm->rope_factors);
  if (!st && two) st = fg_device_mem_alloc(lm->dev, floats * sizeof(float), (void **)&l);
  if (!st && two) st = fg_device_copy(lm->dev, l, host, floats * sizeof(float), FG_COPY_H2D);
  free(host);
  if (st) {
    fg_device_mem_free(lm->dev, g);
    fg_device_mem_free(lm->dev, l);
    return st;
  }
  if (lm->rope_local != lm->rope_global) fg_device_mem_free(lm->dev, lm->rope_local);
  fg_device_mem_free(lm->dev, lm->rope_global);
  lm->rope_global = g;
  lm->rope_local = two ? l : g;
  lm->rope_pos = n;
  return FG_OK;
}

void fg_lm_free(fg_lm *lm) {
  if (!lm) return;
  fg_lm_act_free(lm);
  if (lm->rope_local != lm->rope_global) fg_device_mem_free(lm->dev, lm->rope_local);
  fg_device_mem_free(lm->dev, lm->rope_global);
  for (size_t i = 0; i < lm->n_owned; i++) fg_device_mem_free(lm->dev, lm->owned[i]);
  free(lm->owned);
  for (size_t i = 0; i < lm->n_own_w; i++) fg_device_mem_free(lm->dev, lm->own_w[i]);
  free(lm->own_w);
  free(lm->rope_factors);
  free(lm->layer_windowed);
  free(lm->layers);
  fg_tokenizer_close(lm->tok);
  fg_model_free(lm->weights);
  free(lm);
}

fg_status fg_lm_open(const char *path, fg_device *dev, const fg_lm_options *o, fg_lm **out) {
  if (!path || !dev || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_open: NULL argument");
  if (strlen(path) >= sizeof(((fg_lm *)0)->path))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_open: path longer than %zu bytes", sizeof(((fg_lm *)0)->path) - 1);
  if (o && (o->mode < FG_GEMM_DEFAULT || o->mode > FG_GEMM_FAST_TF32))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_open: mode %d out of range", (int)o->mode);
  fg_lm *lm = calloc(1, sizeof *lm);
  if (!lm) return fg_fail(FG_ERR_NOMEM, "fg_lm_open: out of memory");
  strcpy(lm->path, path);
  lm->dev = dev;
  lm->mode = o ? o->mode : FG_GEMM_DEFAULT;
  lm->grad_keep_bytes = (size_t)1 << 30;
  struct stat sb;
  const bool dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
  fg_status st = dir ? fg_lm_read_config_hf(lm, path) : fg_lm_read_config_gguf(lm, path);
  if (!st) {
    fg_load_options lo;
    fg_load_options_init(&lo);
    lo.flags = FG_LOAD_FLAG_KEEP_QUANT;
    lo.threads = o ? o->threads : 0;
    lo.progress = o ? o->progress : NULL;
    lo.progress_user = o ? o->progress_user : NULL;
    st = fg_model_create(path, dev, &lo, &lm->weights);
  }
  if (!st) st = fg_lm_bind(lm);
  if (!st && dir) {
    /* A folder without tokenizer.json still runs on ids; anything wrong with one is an error.
     * (A GGUF's vocabulary came with its hyperparameters: runtime/lm_config.c.) */
    char tj[4200];
    snprintf(tj, sizeof tj, "%s/tokenizer.json", path);
    struct stat ts_sb;
    if (stat(tj, &ts_sb) == 0) st = fg_tokenizer_open(path, &lm->tok);
  }
  if (!st && lm->tok && fg_tokenizer_n_tokens(lm->tok) > lm->cfg.n_vocab)
    st = fg_fail(FG_ERR_INVALID_ARG, "%s: the tokenizer has %zu tokens, the embedding only %zu rows", path,
                 fg_tokenizer_n_tokens(lm->tok), lm->cfg.n_vocab);
  if (st) {
    fg_lm_free(lm);
    return st;
  }
  *out = lm;
  return FG_OK;
}

const fg_lm_config *fg_lm_get_config(const fg_lm *lm) { return lm ? &lm->cfg : NULL; }
fg_device *fg_lm_device(const fg_lm *lm) { return lm ? lm->dev : NULL; }
const fg_tokenizer *fg_lm_tokenizer(const fg_lm *lm) { return lm ? lm->tok : NULL; }

uint64_t fg_lm_weight_bytes(const fg_lm *lm) {
  if (!lm) return 0;
  const fg_load_stats *s = fg_model_stats(lm->weights);
  return s->bytes_owned + s->bytes_borrowed;
}
