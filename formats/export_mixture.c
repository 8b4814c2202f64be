/* llama-quantize's mixtures: names, default types, which tensors quantize, the per-tensor
 * rules and the row fallback (see export_mixture_internal.h for where the facts come from). */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "formats/export_mixture_internal.h"

static const fg_mix_info fg_mixes[] = {
  {"F32", FG_FT_F32, FG_F32},           {"F16", FG_FT_F16, FG_F16},
  {"BF16", FG_FT_BF16, FG_BF16},        {"Q4_0", FG_FT_Q4_0, FG_Q4_0},
  {"Q4_1", FG_FT_Q4_1, FG_Q4_1},        {"Q5_0", FG_FT_Q5_0, FG_Q5_0},
  {"Q5_1", FG_FT_Q5_1, FG_Q5_1},        {"Q8_0", FG_FT_Q8_0, FG_Q8_0},
  {"Q1_0", FG_FT_Q1_0, FG_Q1_0},        {"Q2_0", FG_FT_Q2_0, FG_Q2_0},
  {"MXFP4_MOE", FG_FT_MXFP4_MOE, FG_MXFP4},
  {"Q2_K", FG_FT_Q2_K, FG_Q2_K},        {"Q2_K_S", FG_FT_Q2_K_S, FG_Q2_K},
  {"Q3_K_S", FG_FT_Q3_K_S, FG_Q3_K},    {"Q3_K_M", FG_FT_Q3_K_M, FG_Q3_K},
  {"Q3_K_L", FG_FT_Q3_K_L, FG_Q3_K},    {"Q4_K_S", FG_FT_Q4_K_S, FG_Q4_K},
  {"Q4_K_M", FG_FT_Q4_K_M, FG_Q4_K},    {"Q5_K_S", FG_FT_Q5_K_S, FG_Q5_K},
  {"Q5_K_M", FG_FT_Q5_K_M, FG_Q5_K},    {"Q6_K", FG_FT_Q6_K, FG_Q6_K},
  {"IQ4_NL", FG_FT_IQ4_NL, FG_IQ4_NL},  {"IQ4_XS", FG_FT_IQ4_XS, FG_IQ4_XS},
  {"TQ1_0", FG_FT_TQ1_0, FG_TQ1_0},     {"TQ2_0", FG_FT_TQ2_0, FG_TQ2_0},
  {"IQ2_XXS", FG_FT_IQ2_XXS, FG_IQ2_XXS}, {"IQ2_XS", FG_FT_IQ2_XS, FG_IQ2_XS},
  {"IQ2_S", FG_FT_IQ2_S, FG_IQ2_XS},    {"IQ2_M", FG_FT_IQ2_M, FG_IQ2_S},
  {"IQ3_XXS", FG_FT_IQ3_XXS, FG_IQ3_XXS}, {"IQ3_XS", FG_FT_IQ3_XS, FG_IQ3_S},
  {"IQ3_S", FG_FT_IQ3_S, FG_IQ3_S},     {"IQ3_M", FG_FT_IQ3_M, FG_IQ3_S},
  {"IQ1_S", FG_FT_IQ1_S, FG_IQ1_S},     {"IQ1_M", FG_FT_IQ1_M, FG_IQ1_M},
};
#define FG_NMIXES (sizeof fg_mixes / sizeof fg_mixes[0])

/* llama-quantize's aliases: the plain K names are the _M mixtures, MXFP4 its MoE mixture. */
static const struct {
  const char *alias;
  uint32_t ftype;
} fg_mix_aliases[] = {{"Q3_K", FG_FT_Q3_K_M}, {"Q4_K", FG_FT_Q4_K_M}, {"Q5_K", FG_FT_Q5_K_M},
                      {"MXFP4", FG_FT_MXFP4_MOE}};

const fg_mix_info *fg_mix_by_ftype(uint32_t ftype) {
  for (size_t i = 0; i < FG_NMIXES; i++)
    if (fg_mixes[i].ftype == ftype) return &fg_mixes[i];
  return NULL;
}

const fg_mix_info *fg_mix_find(const char *name) {
  for (size_t i = 0; i < FG_NMIXES; i++)
    if (strcasecmp(name, fg_mixes[i].name) == 0) return &fg_mixes[i];
  for (size_t i = 0; i < sizeof fg_mix_aliases / sizeof fg_mix_aliases[0]; i++)
    if (strcasecmp(name, fg_mix_aliases[i].alias) == 0) return fg_mix_by_ftype(fg_mix_aliases[i].ftype);
  return NULL;
}

/* ---- the model -------------------------------------------------------------------------- */

/* A count that may be a scalar or a per-layer array (layer 0's entry is the one the rules
 * read). *found is false when the key is absent. */
static fg_status get_count(const fg_gguf_file *g, const char *key, uint32_t *out, bool *found) {
  *found = false;
  int64_t i = fg_gguf_key_index(g, key);
  if (i < 0) return FG_OK;
  uint64_t v = 0;
  fg_status st;
  if (fg_gguf_kv_type(g, (size_t)i) == FG_GGUF_ARRAY) {
    fg_gguf_array a;
    if ((st = fg_gguf_kv_array(g, (size_t)i, &a))) return st;
    if (a.len == 0) return FG_OK;
    st = fg_gguf_array_uint(&a, 0, &v);
  } else {
    st = fg_gguf_kv_uint(g, (size_t)i, &v);
  }
  if (st) return fg_fail_prefix(st, "%s: metadata '%s': ", fg_gguf_path(g), key);
  if (v > UINT32_MAX)
    return fg_fail(FG_ERR_RANGE, "%s: metadata '%s' is %llu, expected a count below 2^32", fg_gguf_path(g), key,
                   (unsigned long long)v);
  *out = (uint32_t)v;
  *found = true;
  return FG_OK;
}

fg_status fg_mix_model_from_gguf(const fg_gguf_file *g, fg_mix_model *m) {
  memset(m, 0, sizeof *m);
  fg_gguf_str a;
  if (fg_gguf_get_str(g, "general.architecture", &a) != FG_OK)
    return fg_fail(FG_ERR_NOT_FOUND, "%s: a llama-quantize mixture needs general.architecture (a STRING), "
                   "which this file does not have", fg_gguf_path(g));
  if (a.len == 0 || a.len >= sizeof m->arch || memchr(a.ptr, 0, a.len))
    return fg_fail(FG_ERR_BAD_STRING, "%s: general.architecture of %llu bytes is not an architecture name",
                   fg_gguf_path(g), (unsigned long long)a.len);
  memcpy(m->arch, a.ptr, a.len);
  char key[128];
  bool found;
  fg_status st;
  snprintf(key, sizeof key, "%s.block_count", m->arch);
  if ((st = get_count(g, key, &m->n_layer, &found))) return st;
  if (!found || m->n_layer == 0)
    return fg_fail(FG_ERR_NOT_FOUND, "%s: a llama-quantize mixture needs %s (the layer count, above 0)",
                   fg_gguf_path(g), key);
  snprintf(key, sizeof key, "%s.attention.head_count", m->arch);
  if ((st = get_count(g, key, &m->n_head, &found))) return st;
  snprintf(key, sizeof key, "%s.attention.head_count_kv", m->arch);
  m->n_head_kv = m->n_head; /* llama.cpp: absent means one KV head per head */
  if ((st = get_count(g, key, &m->n_head_kv, &found))) return st;
  snprintf(key, sizeof key, "%s.expert_count", m->arch);
  if ((st = get_count(g, key, &m->n_expert, &found))) return st;
  /* LLM_TYPE_70B, which one attn_v rule tests, as each architecture's loader assigns it. */
  const uint32_t L = m->n_layer;
  if (strcmp(m->arch, "llama") == 0) m->is_70b = L == 80 && m->n_head != m->n_head_kv;
  else if (!strcmp(m->arch, "qwen2") || !strcmp(m->arch, "deci") || !strcmp(m->arch, "olmo")) m->is_70b = L == 80;
  else if (strcmp(m->arch, "jais2") == 0) m->is_70b = L == 68;
  return FG_OK;
}

/* ---- names ------------------------------------------------------------------------------ */

static bool has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static bool is_token_embd(const char *n) {
  return strcmp(n, "token_embd.weight") == 0 || strcmp(n, "per_layer_token_embd.weight") == 0;
}

fg_mix_cat fg_mix_category(const char *n) {
  if (strcmp(n, "output.weight") == 0) return FG_MIX_OUTPUT;
  if (is_token_embd(n)) return FG_MIX_TOKEN_EMBD;
  if (has(n, "attn_qkv.weight")) return FG_MIX_QKV;
  if (has(n, "attn_kv_b.weight")) return FG_MIX_KV_B;
  if (has(n, "attn_v.weight")) return FG_MIX_V;
  if (has(n, "attn_k.weight")) return FG_MIX_K;
  if (has(n, "attn_q.weight")) return FG_MIX_Q;
  if (has(n, "attn_output.weight")) return FG_MIX_ATTN_OUT;
  if (has(n, "ffn_up")) return FG_MIX_FFN_UP;
  if (has(n, "ffn_gate")) return FG_MIX_FFN_GATE;
  if (has(n, "ffn_down")) return FG_MIX_FFN_DOWN;
  return FG_MIX_OTHER;
}

static bool is_attn_v(fg_mix_cat c) { return c == FG_MIX_V || c == FG_MIX_QKV || c == FG_MIX_KV_B; }

/* Substrings that keep a tensor out of quantization in every architecture. */
static const char *const fg_mix_keep[] = {
  "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
  "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
  "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
  "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight",
  "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
  "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd",
  "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook",
  "mm.a.code_embd",
};

/* And those kept in GLM5-next only. */
static const char *const fg_mix_keep_glm5[] = {
  "hc_", "indexer.attn_q_b", "indexer.attn_k", "indexer.proj", "indexer_compressor_gate",
  "indexer_compressor_ape", "ssm_f_a.weight", "ssm_f_b.weight", "ssm_g_a.weight", "ssm_g_b.weight",
  "ssm_beta.weight", "attn_kv_a_mqa.weight", "attn_k_b.weight", "attn_v_b.weight",
};

bool fg_mix_allows(const fg_mix_model *m, const char *name, int n_dims, bool quantize_output) {
  if (n_dims < 2) return false;
  const size_t n = strlen(name);
  /* llama.cpp asks whether the last "weight" in the name is at its end */
  if (n < 6 || memcmp(name + n - 6, "weight", 6) != 0) return false;
  if (!quantize_output && strcmp(name, "output.weight") == 0) return false;
  for (size_t i = 0; i < sizeof fg_mix_keep / sizeof fg_mix_keep[0]; i++)
    if (has(name, fg_mix_keep[i])) return false;
  if (strcmp(m->arch, "glm5-next") == 0)
    for (size_t i = 0; i < sizeof fg_mix_keep_glm5 / sizeof fg_mix_keep_glm5[0]; i++)
      if (has(name, fg_mix_keep_glm5[i])) return false;
  /* positional embeddings and BERT's token types */
  return strcmp(name, "position_embd.weight") != 0 && strcmp(name, "token_types.weight") != 0;
}

/* ---- order ------------------------------------------------------------------------------ */

/* sscanf("blk.%d.")'s reading: whitespace, a sign, digits; the dot after them is not needed
 * for the number to count. */
int fg_mix_layer_of(const char *name) {
  if (strncmp(name, "blk.", 4) != 0) return -1;
  const char *p = name + 4;
  while (isspace((unsigned char)*p)) p++;
  int sign = 1;
  if (*p == '+' || *p == '-') sign = *p++ == '-' ? -1 : 1;
  if (!isdigit((unsigned char)*p)) return -1;
  long long v = 0;
  while (isdigit((unsigned char)*p)) {
    if (v < INT_MAX) v = v * 10 + (*p - '0');
    p++;
  }
  if (v > INT_MAX) v = INT_MAX;
  return (int)(sign * v);
}

bool fg_mix_order_less(const char *a, const char *b) {
  const int la = fg_mix_layer_of(a), lb = fg_mix_layer_of(b);
  if (la != lb) return la < lb;
  return strcmp(a, b) < 0;
}

/* ---- rules ------------------------------------------------------------------------------ */

static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static uint32_t n_gqa(const fg_mix_model *m) { return m->n_head_kv == 0 ? 0 : m->n_head / m->n_head_kv; }

static bool ft_in(uint32_t ft, const uint32_t *set, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (set[i] == ft) return true;
  return false;
}
#define FT_IN(ft, ...) ft_in((ft), (const uint32_t[]){__VA_ARGS__}, sizeof((const uint32_t[]){__VA_ARGS__}) / 4)

/* The layer an ffn tensor belongs to: its visit counter, or in expert models (whose expert
 * tensors need not come one per layer) the number in its name. */
static fg_status layer_info(const fg_mix_state *s, int counter, const char *name, int *i_layer) {
  *i_layer = counter;
  if (s->m->n_expert > 1) {
    if (strncmp(name, "blk.", 4) != 0 || !(isdigit((unsigned char)name[4]) || name[4] == '-' || name[4] == '+' ||
                                           isspace((unsigned char)name[4])))
      return fg_fail(FG_ERR_BAD_SHAPE, "tensor '%s': an expert model's ffn tensor must name its layer (blk.N.)", name);
    *i_layer = fg_mix_layer_of(name);
    if (*i_layer < 0 || *i_layer >= s->n_ffn)
      return fg_fail(FG_ERR_BAD_SHAPE, "tensor '%s': layer %d outside [0, %d)", name, *i_layer, s->n_ffn);
  }
  return FG_OK;
}

static const uint32_t fg_iq2_family[] = {FG_FT_IQ2_XXS, FG_FT_IQ2_XS, FG_FT_IQ1_S, FG_FT_IQ2_S, FG_FT_IQ2_M, FG_FT_IQ1_M};

/* output.weight, and token_embd.weight when the embeddings are tied. */
static fg_dtype rule_output(const fg_mix_state *s, uint64_t ne0, fg_dtype t, const char **rule) {
  const uint32_t ft = s->ftype;
  if (ft == FG_FT_MXFP4_MOE || !strcmp(s->m->arch, "falcon") || ne0 % fg_dtype_info(t)->block_elems != 0) {
    *rule = "output: q8_0 (MXFP4 mixture, Falcon, or rows not whole blocks of the default)";
    return FG_Q8_0;
  }
  if (FT_IN(ft, FG_FT_IQ2_XXS, FG_FT_IQ2_XS, FG_FT_IQ3_XXS, FG_FT_IQ1_S, FG_FT_IQ2_S, FG_FT_IQ2_M, FG_FT_IQ1_M)) {
    *rule = "output of a 1-3 bit i-quant mixture: q5_K";
    return FG_Q5_K;
  }
  if (t != FG_Q8_0) {
    *rule = "output: q6_K";
    return FG_Q6_K;
  }
  return t;
}

static fg_dtype rule_attn_v(fg_mix_state *s, fg_dtype t, const char **rule) {
  const fg_mix_model *m = s->m;
  const uint32_t ft = s->ftype, gqa = n_gqa(m);
  fg_dtype r = t;
  if (ft == FG_FT_Q2_K) r = gqa >= 4 ? FG_Q4_K : FG_Q3_K;
  else if (ft == FG_FT_Q2_K_S && gqa >= 4) r = FG_Q4_K;
  else if (ft == FG_FT_IQ3_XXS) r = gqa >= 4 ? FG_Q4_K : !s->has_imatrix ? FG_IQ3_S : FG_IQ3_XXS;
  else if ((ft == FG_FT_IQ3_XS || ft == FG_FT_IQ3_S) && gqa >= 4) r = FG_Q4_K;
  else if (ft == FG_FT_IQ3_M) r = FG_Q4_K;
  else if (ft == FG_FT_Q3_K_M) r = s->i_attention_wv < 2 ? FG_Q5_K : FG_Q4_K;
  else if (ft == FG_FT_Q3_K_L) r = FG_Q5_K;
  else if ((ft == FG_FT_IQ4_NL || ft == FG_FT_IQ4_XS) && gqa >= 4) r = FG_Q5_K;
  else if ((ft == FG_FT_Q4_K_M || ft == FG_FT_Q5_K_M) && more_bits(s->i_attention_wv, s->n_attention_wv)) r = FG_Q6_K;
  else if (ft == FG_FT_Q4_K_S && s->i_attention_wv < 4) r = FG_Q5_K;
  if (r != t) *rule = "attn_v: the mixture's rule (GQA, first layers or a more-bits layer)";
  if (m->is_70b && (r == FG_Q3_K || r == FG_Q4_K)) {
    r = FG_Q5_K;
    *rule = "attn_v of a 70B model: q5_K";
  }
  if (m->n_expert == 8) {
    r = FG_Q8_0;
    *rule = "attn_v of an 8-expert model: q8_0";
  }
  s->i_attention_wv++;
  return r;
}

static fg_status rule_ffn_down(fg_mix_state *s, const char *name, fg_dtype t, fg_dtype *out, const char **rule) {
  const fg_mix_model *m = s->m;
  const uint32_t ft = s->ftype;
  const bool falcon = strcmp(m->arch, "falcon") == 0;
  int il;
  fg_status st = layer_info(s, s->i_ffn_down, name, &il);
  if (st) return st;
  const int nl = s->n_ffn;
  fg_dtype r = t;
  if (ft == FG_FT_Q2_K) r = FG_Q3_K;
  else if (ft == FG_FT_Q2_K_S) {
    if (il < nl / 8) r = FG_Q4_K;
  } else if (ft == FG_FT_IQ3_XXS && !s->has_imatrix) r = il < nl / 8 ? FG_Q4_K : FG_Q3_K;
  else if (ft == FG_FT_Q3_K_M)
    r = il < nl / 16 ? FG_Q5_K : !falcon || more_bits(il, nl) ? FG_Q4_K : FG_Q3_K;
  else if (ft == FG_FT_IQ3_M && (il < nl / 8 || (m->n_expert == 8 && more_bits(il, nl)))) r = FG_Q4_K;
  else if (ft == FG_FT_Q3_K_L) r = falcon ? FG_Q4_K : FG_Q5_K;
  else if (ft == FG_FT_Q4_K_M) {
    if (falcon) r = il < nl / 16 ? FG_Q6_K : more_bits(il, nl) ? FG_Q5_K : FG_Q4_K;
    else if (more_bits(il, nl)) r = FG_Q6_K;
  } else if (il < nl / 8 && (ft == FG_FT_IQ4_NL || ft == FG_FT_IQ4_XS) && !s->has_imatrix) r = FG_Q5_K;
  else if (ft == FG_FT_Q5_K_M && more_bits(il, nl)) r = FG_Q6_K;
  else if (ft == FG_FT_Q4_K_S && !falcon && il < nl / 8) r = FG_Q5_K;
  else if ((ft == FG_FT_Q4_0 || ft == FG_FT_Q5_0) && s->has_imatrix && il < nl / 8)
    r = ft == FG_FT_Q4_0 ? FG_Q4_1 : FG_Q5_1;
  if (r != t) *rule = "ffn_down: the mixture's rule (first layers or a more-bits layer)";
  s->i_ffn_down++;
  *out = r;
  return FG_OK;
}

static fg_dtype rule_attn_output(const fg_mix_state *s, fg_dtype t, const char **rule) {
  const uint32_t ft = s->ftype;
  fg_dtype r = t;
  if (strcmp(s->m->arch, "falcon") != 0) {
    if (s->m->n_expert == 8) {
      if (FT_IN(ft, FG_FT_Q2_K, FG_FT_IQ3_XS, FG_FT_IQ3_XXS, FG_FT_Q3_K_S, FG_FT_Q3_K_M, FG_FT_IQ4_NL,
                FG_FT_Q4_K_S, FG_FT_Q4_K_M, FG_FT_IQ3_S, FG_FT_IQ3_M, FG_FT_IQ4_XS))
        r = FG_Q5_K;
    } else if (ft == FG_FT_Q2_K) r = FG_Q3_K;
    else if (ft == FG_FT_IQ3_XXS) r = FG_IQ3_S;
    else if (ft == FG_FT_Q3_K_M) r = FG_Q4_K;
    else if (ft == FG_FT_Q3_K_L) r = FG_Q5_K;
    else if (ft == FG_FT_IQ3_M) r = FG_Q4_K;
  } else if (ft == FG_FT_Q3_K_L) r = FG_Q4_K;
  if (r != t) *rule = "attn_output: the mixture's rule";
  return r;
}

/* The 1-2 bit i-quant mixtures (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M). */
static fg_dtype rule_iq2(fg_mix_state *s, fg_mix_cat cat, fg_dtype t, const char **rule) {
  const fg_mix_model *m = s->m;
  const uint32_t ft = s->ftype;
  const bool s_or_m = ft == FG_FT_IQ2_S || ft == FG_FT_IQ2_M;
  fg_dtype r = t;
  if (is_attn_v(cat)) {
    if (n_gqa(m) >= 4 || m->n_expert >= 4) r = FG_Q4_K;
    else r = s_or_m ? FG_IQ3_S : FG_Q2_K;
    s->i_attention_wv++;
  } else if (m->n_expert == 8 && cat == FG_MIX_K) {
    r = FG_Q4_K;
  } else if (cat == FG_MIX_FFN_DOWN) {
    if (s->i_ffn_down < s->n_ffn / 8) r = s_or_m ? FG_IQ3_S : FG_Q2_K;
    s->i_ffn_down++;
  } else if (cat == FG_MIX_ATTN_OUT) {
    if (m->n_expert == 8) r = FG_Q5_K;
    else if (ft == FG_FT_IQ1_S || ft == FG_FT_IQ1_M) r = FG_IQ2_XXS;
    else if (s_or_m) r = FG_IQ3_S;
  }
  if (r != t) *rule = "low-bit i-quant mixture: more bits for this tensor";
  return r;
}

fg_status fg_mix_rule_type(fg_mix_state *s, const char *name, fg_mix_cat cat, uint64_t ne0, uint64_t ne2,
                           fg_dtype def, fg_dtype *out, const char **rule) {
  const fg_mix_model *m = s->m;
  const uint32_t ft = s->ftype;
  fg_dtype t = def;
  *rule = NULL;
  if (strcmp(m->arch, "glm5-next") == 0 &&
      (has(name, "attn_q_a") || has(name, "attn_q_b") || has(name, "nextn.eh_proj")) && t != FG_F32 &&
      t != FG_BF16 && t != FG_F16) {
    *rule = "GLM5-next attention projection: q8_0";
    *out = FG_Q8_0;
    return FG_OK;
  }
  if (cat == FG_MIX_OUTPUT || (s->tied && cat == FG_MIX_TOKEN_EMBD)) {
    if (s->output_set) {
      t = s->output_type;
      *rule = "tied token_embd: --output-tensor-type";
    } else {
      t = rule_output(s, ne0, t, rule);
    }
  } else if (ft == FG_FT_MXFP4_MOE) {
    const bool bailing = strcmp(m->arch, "bailingmoe3") == 0;
    const bool expert_role = cat == FG_MIX_FFN_UP || cat == FG_MIX_FFN_GATE || cat == FG_MIX_FFN_DOWN;
    t = ne2 > 1 && (!bailing || expert_role) ? FG_MXFP4 : FG_Q8_0;
    if (t == FG_Q8_0) *rule = "MXFP4 mixture: q8_0 outside the expert stacks";
  } else if (cat == FG_MIX_TOKEN_EMBD) {
    if (FT_IN(ft, FG_FT_IQ2_XXS, FG_FT_IQ2_XS, FG_FT_IQ1_S, FG_FT_IQ1_M)) t = FG_Q2_K;
    else if (FT_IN(ft, FG_FT_IQ2_S, FG_FT_IQ2_M, FG_FT_IQ3_XXS)) t = FG_IQ3_S;
    else if (FT_IN(ft, FG_FT_TQ1_0, FG_FT_TQ2_0, FG_FT_Q2_0)) t = FG_Q4_K;
    if (t != def) *rule = "token_embd: the mixture's embedding type";
  } else if (ft_in(ft, fg_iq2_family, sizeof fg_iq2_family / sizeof fg_iq2_family[0])) {
    t = rule_iq2(s, cat, t, rule);
  } else if (is_attn_v(cat)) {
    t = rule_attn_v(s, t, rule);
  } else if (cat == FG_MIX_K) {
    if (m->n_expert == 8) t = FG_Q8_0;
    else if (ft == FG_FT_IQ3_XS) t = FG_IQ3_XXS;
    else if (ft == FG_FT_IQ3_XXS) t = FG_IQ2_S;
    if (t != def) *rule = "attn_k: the mixture's rule";
  } else if (cat == FG_MIX_Q) {
    if (ft == FG_FT_IQ3_XS) t = FG_IQ3_XXS;
    else if (ft == FG_FT_IQ3_XXS) t = FG_IQ2_S;
    if (t != def) *rule = "attn_q: the mixture's rule";
  } else if (cat == FG_MIX_FFN_DOWN) {
    return rule_ffn_down(s, name, t, out, rule);
  } else if (cat == FG_MIX_ATTN_OUT) {
    t = rule_attn_output(s, t, rule);
  } else if (cat == FG_MIX_QKV) {
    /* unreachable: attn_qkv is attn_v-like above; kept apart in llama.cpp too */
  } else if (cat == FG_MIX_FFN_GATE || cat == FG_MIX_FFN_UP) {
    int il;
    int *counter = cat == FG_MIX_FFN_GATE ? &s->i_ffn_gate : &s->i_ffn_up;
    fg_status st = layer_info(s, *counter, name, &il);
    if (st) return st;
    if (ft == FG_FT_IQ3_XS && il >= s->n_ffn / 8 && il < 7 * s->n_ffn / 8) {
      t = FG_IQ3_XXS;
      *rule = "ffn_gate/ffn_up of a middle layer: iq3_xxs";
    }
    (*counter)++;
  }
  *out = t;
  return FG_OK;
}

fg_status fg_mix_fallback(const char *name, fg_dtype t, uint64_t ne0, fg_dtype *out) {
  const uint32_t blk = fg_dtype_info(t)->block_elems;
  *out = t;
  if (ne0 % blk == 0) return FG_OK;
  fg_dtype r;
  switch (t) {
    case FG_IQ1_S: case FG_IQ1_M: case FG_IQ2_XXS: case FG_IQ2_XS: case FG_IQ2_S: case FG_IQ3_XXS:
    case FG_IQ3_S: case FG_IQ4_XS: r = FG_IQ4_NL; break;
    case FG_Q2_0: case FG_Q2_K: case FG_Q3_K: case FG_TQ1_0: case FG_TQ2_0: r = FG_Q4_0; break;
    case FG_Q4_K: r = FG_Q5_0; break;
    case FG_Q5_K: r = FG_Q5_1; break;
    case FG_Q6_K: r = FG_Q8_0; break;
    default:
      if (blk > 32) /* llama.cpp defines none either, and stops */
        return fg_fail(FG_ERR_UNSUPPORTED, "tensor '%s': rows of %llu elements are not whole %u-element blocks "
                       "of %s, and no fallback type is defined for it", name, (unsigned long long)ne0, blk,
                       fg_dtype_name(t));
      r = t; /* a 32-element type has nothing smaller: f16 below */
      break;
  }
  *out = ne0 % fg_dtype_info(r)->block_elems != 0 ? FG_F16 : r;
  return FG_OK;
}

bool fg_mix_requires_imatrix(const char *name, fg_dtype t, uint32_t ftype) {
  if (is_token_embd(name) || strcmp(name, "output.weight") == 0) return false;
  switch (t) {
    case FG_IQ3_XXS: case FG_IQ2_XXS: case FG_IQ2_XS: case FG_IQ2_S: case FG_IQ1_M: case FG_IQ1_S: return true;
    case FG_Q2_K: return ftype == FG_FT_Q2_K_S;
    default: return false;
  }
}
