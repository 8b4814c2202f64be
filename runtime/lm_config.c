/* Hyperparameters: from a GGUF's `<arch>.*` keys (the names llama.cpp writes) or from a Hugging
 * Face config.json. Both fill the same fg_lm_config; defaults are the ones both ecosystems
 * apply when a key is absent. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/ckpt.h"
#include "forgia/gguf.h"
#include "runtime/lm_internal.h"

static void fg_lm_defaults(fg_lm *lm, const fg_lm_arch_desc *a, fg_lm_source src) {
  fg_lm_config *c = &lm->cfg;
  snprintf(lm->arch_name, sizeof lm->arch_name, "%s", a->name);
  c->arch = a->arch;
  c->arch_name = lm->arch_name;
  c->glu = a->glu;
  c->qk_norm = a->qk_norm;
  c->post_norms = a->post_norms;
  c->attn_bias = a->attn_bias;
  c->rope_layout = src == FG_LM_SRC_GGUF ? a->gguf_rope : a->hf_rope;
  c->norm_offset = (a->gemma_norms && src == FG_LM_SRC_HF) ? 1.0f : 0.0f;
  c->rope_base = 10000.0;
  c->rope_base_local = 10000.0;
  c->rope_freq_scale = 1.0;
  c->norm_eps = 1e-5f;
  lm->source = src;
}

/* The derived values and the checks that make the rest of the runtime safe. */
static fg_status fg_lm_finish_config(fg_lm *lm, const char *where, const fg_lm_arch_desc *a) {
  fg_lm_config *c = &lm->cfg;
  if (!c->n_layer || !c->n_embd || !c->n_ff || !c->n_head)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %s needs nonzero layers, embedding, feed-forward and head counts "
                   "(got %zu, %zu, %zu, %zu)", where, a->name, c->n_layer, c->n_embd, c->n_ff, c->n_head);
  if (c->n_layer > 4096 || c->n_embd > (1u << 20) || c->n_ff > (1u << 22) || c->n_head > 4096)
    return fg_fail(FG_ERR_RANGE, "%s: hyperparameters out of range (%zu layers, embedding %zu, feed-forward %zu, "
                   "%zu heads)", where, c->n_layer, c->n_embd, c->n_ff, c->n_head);
  if (!c->n_kv_head) c->n_kv_head = c->n_head;
  if (c->n_head % c->n_kv_head)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu attention heads is not a multiple of %zu key/value heads", where,
                   c->n_head, c->n_kv_head);
  if (!c->head_dim) {
    if (c->n_embd % c->n_head)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: embedding %zu is not a multiple of %zu heads and no head size is "
                     "given", where, c->n_embd, c->n_head);
    c->head_dim = c->n_embd / c->n_head;
  }
  if (c->head_dim > 4096) return fg_fail(FG_ERR_RANGE, "%s: head size %zu out of range", where, c->head_dim);
  if (!c->rope_dims) c->rope_dims = c->head_dim;
  if (c->rope_dims > c->head_dim || c->rope_dims % 2)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu rotary dimensions, expected an even count <= the head size %zu",
                   where, c->rope_dims, c->head_dim);
  if (!(c->norm_eps >= 0.0f) || !isfinite(c->norm_eps))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: RMSNorm epsilon %g is not a finite value >= 0", where, (double)c->norm_eps);
  if (!(c->rope_base > 0.0) || !isfinite(c->rope_base) || !(c->rope_base_local > 0.0) || !isfinite(c->rope_base_local) ||
      !(c->rope_freq_scale > 0.0) || !isfinite(c->rope_freq_scale))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: RoPE base %g (local %g), frequency scale %g: expected finite values > 0",
                   where, c->rope_base, c->rope_base_local, c->rope_freq_scale);
  if (!c->attn_scale) c->attn_scale = (float)(1.0 / sqrt((double)c->head_dim));
  c->embd_scale = a->embd_scale_sqrt ? (float)sqrt((double)c->n_embd) : 1.0f;
  if (c->sliding_window && !c->sliding_period && a->arch == FG_LM_GEMMA3) c->sliding_period = 6;
  return FG_OK;
}

/* ---- GGUF -------------------------------------------------------------------------------- */

static fg_status fg_lm_gguf_u(const fg_gguf_file *f, const char *arch, const char *key, bool required, size_t *out) {
  char full[128];
  snprintf(full, sizeof full, "%s.%s", arch, key);
  if (fg_gguf_key_index(f, full) < 0) {
    if (!required) return FG_OK;
    return fg_fail(FG_ERR_NOT_FOUND, "%s: metadata key %s is missing", fg_gguf_path(f), full);
  }
  uint64_t v = 0;
  fg_status st = fg_gguf_get_uint(f, full, &v);
  if (st) return fg_fail(st, "%s: metadata key %s: expected an unsigned integer", fg_gguf_path(f), full);
  if (v > (uint64_t)1 << 40) return fg_fail(FG_ERR_RANGE, "%s: metadata key %s = %llu is out of range", fg_gguf_path(f), full,
                                           (unsigned long long)v);
  *out = (size_t)v;
  return FG_OK;
}

static fg_status fg_lm_gguf_f(const fg_gguf_file *f, const char *arch, const char *key, double *out) {
  char full[128];
  snprintf(full, sizeof full, "%s.%s", arch, key);
  if (fg_gguf_key_index(f, full) < 0) return FG_OK;
  fg_status st = fg_gguf_get_float(f, full, out);
  if (st) return fg_fail(st, "%s: metadata key %s: expected a number", fg_gguf_path(f), full);
  return FG_OK;
}

fg_status fg_lm_read_config_gguf(fg_lm *lm, const char *path) {
  /* The checkpoint sniffer first, so a file that is no checkpoint gets the words every other
   * command gives it, and a lone safetensors file (no config beside it) is named as such. */
  fg_ckpt *ck = NULL;
  fg_status st = fg_ckpt_open(path, &ck);
  if (st) return st;
  const bool gguf = fg_ckpt_format_of(ck) == FG_CKPT_GGUF;
  fg_ckpt_close(ck);
  if (!gguf)
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: a safetensors file carries no hyperparameters: give the Hugging Face folder "
                   "that holds it and its config.json", path);
  fg_gguf_file *f = NULL;
  st = fg_gguf_open_auto(path, &f);
  if (st) return st;
  fg_gguf_str an = {0};
  if (fg_gguf_key_index(f, "general.architecture") < 0 || fg_gguf_get_str(f, "general.architecture", &an)) {
    st = fg_fail(FG_ERR_NOT_FOUND, "%s: no general.architecture string: not a model GGUF", path);
    goto done;
  }
  const fg_lm_arch_desc *a = fg_lm_arch_find(an.ptr, an.len);
  if (!a) {
    st = fg_fail(FG_ERR_UNSUPPORTED, "%s: architecture '%.*s' is not one forgia runs (llama, qwen2, qwen3, gemma3)",
                 path, (int)(an.len > 64 ? 64 : an.len), an.ptr);
    goto done;
  }
  fg_lm_defaults(lm, a, FG_LM_SRC_GGUF);
  fg_lm_config *c = &lm->cfg;
  const char *n = a->name;
  double eps = 1e-5, base = 10000.0, scale_factor = 0.0;
  if ((st = fg_lm_gguf_u(f, n, "block_count", true, &c->n_layer)) || (st = fg_lm_gguf_u(f, n, "embedding_length", true, &c->n_embd)) ||
      (st = fg_lm_gguf_u(f, n, "feed_forward_length", true, &c->n_ff)) ||
      (st = fg_lm_gguf_u(f, n, "attention.head_count", true, &c->n_head)) ||
      (st = fg_lm_gguf_u(f, n, "attention.head_count_kv", false, &c->n_kv_head)) ||
      (st = fg_lm_gguf_u(f, n, "attention.key_length", false, &c->head_dim)) ||
      (st = fg_lm_gguf_u(f, n, "context_length", false, &c->n_ctx_train)) ||
      (st = fg_lm_gguf_u(f, n, "vocab_size", false, &c->n_vocab)) ||
      (st = fg_lm_gguf_u(f, n, "rope.dimension_count", false, &c->rope_dims)) ||
      (st = fg_lm_gguf_u(f, n, "attention.sliding_window", false, &c->sliding_window)) ||
      (st = fg_lm_gguf_f(f, n, "attention.layer_norm_rms_epsilon", &eps)) || (st = fg_lm_gguf_f(f, n, "rope.freq_base", &base)) ||
      (st = fg_lm_gguf_f(f, n, "rope.scaling.factor", &scale_factor)))
    goto done;
  c->norm_eps = (float)eps;
  c->rope_base = base;
  c->rope_base_local = a->arch == FG_LM_GEMMA3 ? 10000.0 : base;
  {
    char full[128];
    snprintf(full, sizeof full, "%s.rope.scaling.type", n);
    fg_gguf_str ty = {0};
    bool linear = fg_gguf_key_index(f, full) >= 0 && !fg_gguf_get_str(f, full, &ty) && ty.len == 6 && !memcmp(ty.ptr, "linear", 6);
    if (linear && scale_factor > 0.0) c->rope_freq_scale = 1.0 / scale_factor;
  }
  if (a->arch != FG_LM_GEMMA3) c->sliding_window = 0;
  st = fg_lm_finish_config(lm, path, a);
  /* The vocabulary from the same parse. A GGUF without one (FG_ERR_NOT_FOUND) still runs on ids. */
  if (!st) {
    st = fg_tokenizer_from_gguf(f, &lm->tok);
    if (st == FG_ERR_NOT_FOUND) st = FG_OK, lm->tok = NULL;
  }
done:
  fg_gguf_close(f);
  return st;
}

/* ---- config.json ------------------------------------------------------------------------- */

static bool fg_lm_json_size(const cJSON *o, const char *key, size_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e12 || v->valuedouble != floor(v->valuedouble))
    return false;
  *out = (size_t)v->valuedouble;
  return true;
}

static void fg_lm_json_num(const cJSON *o, const char *key, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsNumber(v)) *out = v->valuedouble;
}

fg_status fg_lm_read_config_hf(fg_lm *lm, const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *fp = fopen(path, "rb");
  if (!fp) return fg_fail(FG_ERR_NOT_FOUND, "%s: cannot open (a Hugging Face model folder holds config.json)", path);
  char *text = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 > cap) {
      if (cap > ((size_t)16 << 20)) {
        fclose(fp);
        free(text);
        return fg_fail(FG_ERR_RANGE, "%s: larger than 16 MiB", path);
      }
      char *nt = realloc(text, cap = cap * 2 + 8192);
      if (!nt) {
        fclose(fp);
        free(text);
        return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
      }
      text = nt;
    }
    size_t got = fread(text + len, 1, cap - len, fp);
    len += got;
    if (!got) break;
  }
  fclose(fp);
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return fg_fail(FG_ERR_INVALID_JSON, "%s: not a JSON object", path);
  }
  /* Gemma 3's multimodal config nests the language model under text_config. */
  const cJSON *o = root;
  const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
  if (cJSON_IsObject(tc)) o = tc;
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(o, "model_type");
  if (!cJSON_IsString(mt)) mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
  fg_status st = FG_OK;
  if (!cJSON_IsString(mt)) {
    st = fg_fail(FG_ERR_NOT_FOUND, "%s: no model_type", path);
    goto done;
  }
  const char *name = mt->valuestring;
  if (!strcmp(name, "gemma3_text")) name = "gemma3";
  if (!strcmp(name, "mistral")) name = "llama";
  const fg_lm_arch_desc *a = fg_lm_arch_find(name, strlen(name));
  if (!a) {
    st = fg_fail(FG_ERR_UNSUPPORTED, "%s: model_type '%.64s' is not one forgia runs (llama, mistral, qwen2, qwen3, gemma3)",
                 path, mt->valuestring);
    goto done;
  }
  fg_lm_defaults(lm, a, FG_LM_SRC_HF);
  fg_lm_config *c = &lm->cfg;
  if (!fg_lm_json_size(o, "num_hidden_layers", &c->n_layer) || !fg_lm_json_size(o, "hidden_size", &c->n_embd) ||
      !fg_lm_json_size(o, "intermediate_size", &c->n_ff) || !fg_lm_json_size(o, "num_attention_heads", &c->n_head)) {
    st = fg_fail(FG_ERR_NOT_FOUND, "%s: num_hidden_layers, hidden_size, intermediate_size and num_attention_heads "
                 "must be nonnegative integers", path);
    goto done;
  }
  fg_lm_json_size(o, "num_key_value_heads", &c->n_kv_head);
  fg_lm_json_size(o, "head_dim", &c->head_dim);
  fg_lm_json_size(o, "vocab_size", &c->n_vocab);
  fg_lm_json_size(o, "max_position_embeddings", &c->n_ctx_train);
  double eps = a->arch == FG_LM_GEMMA3 ? 1e-6 : 1e-5, base = a->arch == FG_LM_GEMMA3 ? 1e6 : 10000.0, local = 10000.0;
  fg_lm_json_num(o, "rms_norm_eps", &eps);
  fg_lm_json_num(o, "rope_theta", &base);
  fg_lm_json_num(o, "rope_local_base_freq", &local);
  /* transformers 5 writes rope_parameters instead: {rope_theta, rope_type, factor ...}, or one
   * such object per attention type (Gemma 3: full_attention, sliding_attention). */
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(o, "rope_scaling");
  const cJSON *rp = cJSON_GetObjectItemCaseSensitive(o, "rope_parameters");
  if (cJSON_IsObject(rp)) {
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
    const cJSON *slide = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
    if (cJSON_IsObject(slide)) fg_lm_json_num(slide, "rope_theta", &local);
    if (cJSON_IsObject(full)) rp = full;
    fg_lm_json_num(rp, "rope_theta", &base);
    if (!cJSON_IsObject(rs)) rs = rp;
  }
  c->norm_eps = (float)eps;
  c->rope_base = base;
  c->rope_base_local = a->arch == FG_LM_GEMMA3 ? local : base;
  if (cJSON_IsObject(rs)) {
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(ty)) ty = cJSON_GetObjectItemCaseSensitive(rs, "type");
    double factor = 0.0;
    fg_lm_json_num(rs, "factor", &factor);
    if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "linear") && factor > 0.0) {
      c->rope_freq_scale = 1.0 / factor;
    } else if (cJSON_IsString(ty) && strcmp(ty->valuestring, "default") != 0) {
      st = fg_fail(FG_ERR_UNSUPPORTED, "%s: rope_scaling type '%.32s' is not supported (linear is)", path, ty->valuestring);
      goto done;
    }
  }
  if (a->arch == FG_LM_GEMMA3) {
    fg_lm_json_size(o, "sliding_window", &c->sliding_window);
    fg_lm_json_size(o, "sliding_window_pattern", &c->sliding_period);
    /* transformers 5 lists each layer's attention: "sliding_attention" or "full_attention". */
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(o, "layer_types");
    if (cJSON_IsArray(lt)) {
      if ((size_t)cJSON_GetArraySize(lt) != c->n_layer) {
        st = fg_fail(FG_ERR_INVALID_ARG, "%s: layer_types lists %d layers, num_hidden_layers is %zu", path,
                     cJSON_GetArraySize(lt), c->n_layer);
        goto done;
      }
      lm->layer_windowed = calloc(c->n_layer ? c->n_layer : 1, 1);
      if (!lm->layer_windowed) {
        st = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
        goto done;
      }
      size_t i = 0;
      const cJSON *e;
      cJSON_ArrayForEach(e, lt) {
        const bool sliding = cJSON_IsString(e) && !strcmp(e->valuestring, "sliding_attention");
        if (!sliding && !(cJSON_IsString(e) && !strcmp(e->valuestring, "full_attention"))) {
          st = fg_fail(FG_ERR_UNSUPPORTED, "%s: layer_types[%zu] is not \"sliding_attention\" or \"full_attention\"",
                       path, i);
          goto done;
        }
        lm->layer_windowed[i++] = sliding;
      }
    }
    double qs = 0.0;
    fg_lm_json_num(o, "query_pre_attn_scalar", &qs);
    if (qs > 0.0) c->attn_scale = (float)(1.0 / sqrt(qs));
  }
  const cJSON *ab = cJSON_GetObjectItemCaseSensitive(o, "attention_bias");
  if (cJSON_IsBool(ab)) c->attn_bias = cJSON_IsTrue(ab) || a->attn_bias;
  st = fg_lm_finish_config(lm, path, a);
done:
  cJSON_Delete(root);
  return st;
}
