// Writes llama.cpp's per-tensor type choices for real model shapes, through llama.cpp's own
// type-selection entry points (llama_quant_model_from_metadata, llama_quant_compute_types:
// the function llama-quantize runs per tensor, without reading any tensor data), so that
// forgia's mixture rules can be checked on shapes too large to quantize here (Llama 3.1 70B,
// Mixtral, Qwen3-30B-A3B). Our program; it links libllama from the llama-cpp-python sdist.
//
// Output (stdout), one block per model:
//   model <name> <arch> <n_layer> <n_head> <n_head_kv> <n_expert>
//   tensor <name> <ne0,ne1,ne2,ne3> <q|->        every tensor of the model, in file order;
//                                                q: llama.cpp quantizes it
//   mix <MIXTURE> <default ggml type>            then, for the quantized tensors whose type
//   type <tensor> <ggml type>                    is not the default, one line each
//   error <MIXTURE>                              llama.cpp refuses the mixture for this model
#include "llama-ext.h"
#include "ggml.h"
#include "llama.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

struct shape {
  std::string name;
  int64_t ne[4];
};

struct model {
  const char *name, *arch;
  uint32_t n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_vocab, n_expert, n_ff_exp;
  bool tied, qkv_fused, qk_norm, gemma_norms, biases;
};

static void add(std::vector<shape> &v, const std::string &n, int64_t a, int64_t b = 1, int64_t c = 1) {
  v.push_back({n, {a, b, c, 1}});
}

// The tensor list llama.cpp's converters write for each shape family (GGUF names, ne order).
static std::vector<shape> tensors_of(const model &m) {
  std::vector<shape> v;
  const int64_t E = m.n_embd, q = (int64_t)m.n_head * m.head_dim, kv = (int64_t)m.n_head_kv * m.head_dim;
  add(v, "token_embd.weight", E, m.n_vocab);
  add(v, "output_norm.weight", E);
  if (!m.tied) add(v, "output.weight", E, m.n_vocab);
  for (uint32_t i = 0; i < m.n_layer; i++) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(v, b + "attn_norm.weight", E);
    if (m.qkv_fused) {
      add(v, b + "attn_qkv.weight", E, q + 2 * kv);
    } else {
      add(v, b + "attn_q.weight", E, q);
      add(v, b + "attn_k.weight", E, kv);
      add(v, b + "attn_v.weight", E, kv);
      if (m.biases) {
        add(v, b + "attn_q.bias", q);
        add(v, b + "attn_k.bias", kv);
        add(v, b + "attn_v.bias", kv);
      }
    }
    if (m.qk_norm) {
      add(v, b + "attn_q_norm.weight", m.head_dim);
      add(v, b + "attn_k_norm.weight", m.head_dim);
    }
    add(v, b + "attn_output.weight", q, E);
    if (m.gemma_norms) add(v, b + "post_attention_norm.weight", E);
    add(v, b + "ffn_norm.weight", E);
    if (m.gemma_norms) add(v, b + "post_ffw_norm.weight", E);
    if (m.n_expert > 1) {
      add(v, b + "ffn_gate_inp.weight", E, m.n_expert);
      add(v, b + "ffn_gate_exps.weight", E, m.n_ff_exp, m.n_expert);
      add(v, b + "ffn_up_exps.weight", E, m.n_ff_exp, m.n_expert);
      add(v, b + "ffn_down_exps.weight", m.n_ff_exp, E, m.n_expert);
    } else if (m.qkv_fused) { // Phi-3 and Falcon keep up (and gate) in one tensor
      add(v, b + "ffn_up.weight", E, strcmp(m.arch, "phi3") == 0 ? 2 * m.n_ff : m.n_ff);
      add(v, b + "ffn_down.weight", m.n_ff, E);
    } else {
      add(v, b + "ffn_gate.weight", E, m.n_ff);
      add(v, b + "ffn_up.weight", E, m.n_ff);
      add(v, b + "ffn_down.weight", m.n_ff, E);
    }
  }
  return v;
}

// Published configurations (config.json of each model).
static const model models[] = {
  {"llama-3.1-8b", "llama", 4096, 14336, 32, 32, 8, 128, 128256, 0, 0, false, false, false, false, false},
  {"llama-3.1-70b", "llama", 8192, 28672, 80, 64, 8, 128, 128256, 0, 0, false, false, false, false, false},
  {"llama-3.2-1b", "llama", 2048, 8192, 16, 32, 8, 64, 128256, 0, 0, true, false, false, false, false},
  {"llama-2-7b", "llama", 4096, 11008, 32, 32, 32, 128, 32000, 0, 0, false, false, false, false, false},
  {"mixtral-8x7b", "llama", 4096, 14336, 32, 32, 8, 128, 32000, 8, 14336, false, false, false, false, false},
  {"qwen2.5-0.5b", "qwen2", 896, 4864, 24, 14, 2, 64, 151936, 0, 0, true, false, false, false, true},
  {"qwen2.5-7b", "qwen2", 3584, 18944, 28, 28, 4, 128, 152064, 0, 0, false, false, false, false, true},
  {"qwen3-0.6b", "qwen3", 1024, 3072, 28, 16, 8, 128, 151936, 0, 0, false, false, true, false, false},
  {"qwen3-30b-a3b", "qwen3moe", 2048, 6144, 48, 32, 4, 128, 151936, 128, 768, false, false, true, false, false},
  {"gemma-3-270m", "gemma3", 640, 2048, 18, 4, 1, 256, 262144, 0, 0, true, false, true, true, false},
  {"gemma-3-4b", "gemma3", 2560, 10240, 34, 8, 4, 256, 262208, 0, 0, true, false, true, true, false},
  {"phi-3-mini", "phi3", 3072, 8192, 32, 32, 32, 96, 32064, 0, 0, false, true, false, false, false},
  {"falcon-7b", "falcon", 4544, 18176, 32, 71, 1, 64, 65024, 0, 0, false, true, false, false, false},
};

static const struct { const char *name; llama_ftype ft; } mixes[] = {
  {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0}, {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1}, {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},
  {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1}, {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0}, {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},
  {"Q2_K_S", LLAMA_FTYPE_MOSTLY_Q2_K_S}, {"Q3_K_S", LLAMA_FTYPE_MOSTLY_Q3_K_S}, {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
  {"Q3_K_L", LLAMA_FTYPE_MOSTLY_Q3_K_L}, {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S}, {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
  {"Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S}, {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},
  {"IQ4_NL", LLAMA_FTYPE_MOSTLY_IQ4_NL}, {"IQ4_XS", LLAMA_FTYPE_MOSTLY_IQ4_XS}, {"TQ1_0", LLAMA_FTYPE_MOSTLY_TQ1_0},
  {"TQ2_0", LLAMA_FTYPE_MOSTLY_TQ2_0}, {"MXFP4_MOE", LLAMA_FTYPE_MOSTLY_MXFP4_MOE},
  {"IQ2_XXS", LLAMA_FTYPE_MOSTLY_IQ2_XXS}, {"IQ2_XS", LLAMA_FTYPE_MOSTLY_IQ2_XS}, {"IQ2_S", LLAMA_FTYPE_MOSTLY_IQ2_S},
  {"IQ2_M", LLAMA_FTYPE_MOSTLY_IQ2_M}, {"IQ3_XXS", LLAMA_FTYPE_MOSTLY_IQ3_XXS}, {"IQ3_XS", LLAMA_FTYPE_MOSTLY_IQ3_XS},
  {"IQ3_S", LLAMA_FTYPE_MOSTLY_IQ3_S}, {"IQ3_M", LLAMA_FTYPE_MOSTLY_IQ3_M}, {"IQ1_S", LLAMA_FTYPE_MOSTLY_IQ1_S},
  {"IQ1_M", LLAMA_FTYPE_MOSTLY_IQ1_M}, {"F16", LLAMA_FTYPE_MOSTLY_F16}, {"BF16", LLAMA_FTYPE_MOSTLY_BF16},
  {"Q1_0", LLAMA_FTYPE_MOSTLY_Q1_0}, {"Q2_0", LLAMA_FTYPE_MOSTLY_Q2_0},
};

int main() {
  llama_backend_init();
  for (const model &m : models) {
    llama_quant_model_desc d = {};
    d.architecture = m.arch;
    d.n_embd = m.n_embd;
    d.n_ff = m.n_ff;
    d.n_layer = m.n_layer;
    d.n_head = m.n_head;
    d.n_head_kv = m.n_head_kv;
    d.n_expert = m.n_expert;
    d.n_embd_head_k = d.n_embd_head_v = m.head_dim;
    llama_model *lm = llama_quant_model_from_metadata(&d);
    llama_model_quantize_params qp = llama_model_quantize_default_params();
    quantize_state_impl *qs = llama_quant_init(lm, &qp);
    const std::vector<shape> all = tensors_of(m);
    printf("model %s %s %u %u %u %u\n", m.name, m.arch, m.n_layer, m.n_head, m.n_head_kv, m.n_expert);
    ggml_init_params ip = {all.size() * ggml_tensor_overhead(), nullptr, true};
    ggml_context *ctx = ggml_init(ip);
    std::vector<ggml_tensor *> q;
    for (const shape &s : all) {
      ggml_tensor *t = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, s.ne[0], s.ne[1], s.ne[2], s.ne[3]);
      ggml_set_name(t, s.name.c_str());
      const bool allowed = llama_quant_tensor_allows_quantization(qs, t);
      if (allowed) q.push_back(t);
      printf("tensor %s %lld,%lld,%lld,%lld %s\n", s.name.c_str(), (long long)s.ne[0], (long long)s.ne[1],
             (long long)s.ne[2], (long long)s.ne[3], allowed ? "q" : "-");
    }
    // llama-quantize visits tensors in llama_model_loader's order: layer, then name
    std::sort(q.begin(), q.end(), [](const ggml_tensor *a, const ggml_tensor *b) {
      int la = -1, lb = -1;
      sscanf(a->name, "blk.%d.", &la);
      sscanf(b->name, "blk.%d.", &lb);
      return la != lb ? la < lb : strcmp(a->name, b->name) < 0;
    });
    for (const auto &mx : mixes) {
      std::vector<ggml_type> types(q.size());
      try {
        llama_quant_compute_types(qs, mx.ft, q.data(), types.data(), q.size());
      } catch (const std::exception &e) { // llama-quantize stops here too (no fallback for the type)
        printf("error %s\n", mx.name);
        continue;
      }
      const ggml_type def = llama_ftype_get_default_type(mx.ft);
      printf("mix %s %s\n", mx.name, ggml_type_name(def));
      for (size_t i = 0; i < q.size(); i++)
        if (types[i] != def) printf("type %s %s\n", q[i]->name, ggml_type_name(types[i]));
    }
    ggml_free(ctx);
    llama_quant_free(qs);
    llama_model_free(lm);
  }
  llama_backend_free();
  return 0;
}
