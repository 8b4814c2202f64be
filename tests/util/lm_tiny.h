// Tiny transformer checkpoints for the runtime's tests: random weights written as a GGUF (the
// names and keys llama.cpp writes) or as a Hugging Face folder (config.json + safetensors), and
// an independent f64 forward pass over the same values (the arithmetic of transformers'
// modeling code, written from the math, not from forgia's kernels).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "forgia/forgia.h"

namespace fgt {

struct TinySpec {
  std::string arch = "llama";  // llama, qwen2, qwen3, gemma3
  size_t L = 2, E = 64, H = 4, KV = 2, HD = 16, F = 96, V = 61;
  double base = 10000.0;
  float eps = 1e-5f;
  size_t window = 0;           // gemma3: sliding window of the local layers
  bool tied = true;
  fg_dtype wtype = FG_F32;     // projections' dtype (norms stay f32)
  uint64_t seed = 1;
};

struct TinyModel {
  TinySpec s;
  // Every weight by its Hugging Face name, row-major, as the values the file stores decode to.
  std::map<std::string, std::vector<float>> w;
  std::map<std::string, std::vector<size_t>> shape;
  bool qk_norm() const { return s.arch == "qwen3" || s.arch == "gemma3"; }
  bool gemma() const { return s.arch == "gemma3"; }
  bool bias() const { return s.arch == "qwen2"; }
};

inline float tiny_rand(uint64_t &st) {
  st = st * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(st >> 40) / (double)(1ull << 24) - 0.5);
}

// Random weights; norms near 1 (Gemma's as w - 1 near 0: the folder form), projections of
// scale ~1/sqrt(fan-in). Matrices quantized to s.wtype keep their decoded values.
inline TinyModel tiny_make(const TinySpec &s) {
  TinyModel m;
  m.s = s;
  uint64_t st = s.seed;
  auto mat = [&](const std::string &n, size_t r, size_t c, float scale, bool quant) {
    std::vector<float> v(r * c);
    for (auto &x : v) x = tiny_rand(st) * 2.0f * scale;
    if (quant && s.wtype != FG_F32) {
      const fg_dtype_traits *tr = fg_dtype_info(s.wtype);
      std::vector<uint8_t> q(r * (c / tr->block_elems) * tr->block_bytes);
      fg_quant_encode_rows(s.wtype, v.data(), (int64_t)r, (int64_t)c, q.data(), q.size());
      fg_quant_decode_rows(s.wtype, q.data(), q.size(), v.data(), (int64_t)r, (int64_t)c);
    }
    m.w[n] = v;
    m.shape[n] = r == 1 ? std::vector<size_t>{c} : std::vector<size_t>{r, c};
  };
  auto norm = [&](const std::string &n, size_t c) {
    std::vector<float> v(c);
    for (auto &x : v) x = (m.gemma() ? 0.0f : 1.0f) + tiny_rand(st) * 0.4f;
    m.w[n] = v;
    m.shape[n] = {c};
  };
  const size_t Q = s.H * s.HD, K = s.KV * s.HD;
  mat("model.embed_tokens.weight", s.V, s.E, 1.0f, true);
  if (!s.tied) mat("lm_head.weight", s.V, s.E, 1.0f / std::sqrt((float)s.E), true);
  norm("model.norm.weight", s.E);
  for (size_t l = 0; l < s.L; l++) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    norm(p + "input_layernorm.weight", s.E);
    mat(p + "self_attn.q_proj.weight", Q, s.E, 1.0f / std::sqrt((float)s.E), true);
    mat(p + "self_attn.k_proj.weight", K, s.E, 1.0f / std::sqrt((float)s.E), true);
    mat(p + "self_attn.v_proj.weight", K, s.E, 1.0f / std::sqrt((float)s.E), true);
    mat(p + "self_attn.o_proj.weight", s.E, Q, 1.0f / std::sqrt((float)Q), true);
    if (m.bias()) {
      mat(p + "self_attn.q_proj.bias", 1, Q, 0.5f, false);
      mat(p + "self_attn.k_proj.bias", 1, K, 0.5f, false);
      mat(p + "self_attn.v_proj.bias", 1, K, 0.5f, false);
    }
    if (m.qk_norm()) {
      norm(p + "self_attn.q_norm.weight", s.HD);
      norm(p + "self_attn.k_norm.weight", s.HD);
    }
    norm(p + "post_attention_layernorm.weight", s.E);
    if (m.gemma()) {
      norm(p + "pre_feedforward_layernorm.weight", s.E);
      norm(p + "post_feedforward_layernorm.weight", s.E);
    }
    mat(p + "mlp.gate_proj.weight", s.F, s.E, 1.0f / std::sqrt((float)s.E), true);
    mat(p + "mlp.up_proj.weight", s.F, s.E, 1.0f / std::sqrt((float)s.E), true);
    mat(p + "mlp.down_proj.weight", s.E, s.F, 1.0f / std::sqrt((float)s.F), true);
  }
  return m;
}

// The GGUF name of a Hugging Face name (llama.cpp's converter's table for these tensors).
inline std::string tiny_gguf_name(const TinyModel &m, const std::string &hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "lm_head.weight") return "output.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  const size_t a = std::string("model.layers.").size(), b = hf.find('.', a);
  const std::string l = hf.substr(a, b - a), rest = hf.substr(b + 1);
  static const std::map<std::string, std::string> t = {
      {"input_layernorm.weight", "attn_norm.weight"},       {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},         {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},    {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},             {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"}, {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},          {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"}};
  if (rest == "post_attention_layernorm.weight")
    return "blk." + l + (m.gemma() ? ".post_attention_norm.weight" : ".ffn_norm.weight");
  return "blk." + l + "." + t.at(rest);
}

// llama.cpp's converter reorders Llama's Q/K rows so each head's half-split pairs (i, i + d/2)
// become adjacent (2i, 2i + 1): GGUF row h*d + 2i + j holds folder row h*d + j*d/2 + i.
inline std::vector<float> tiny_permute(const std::vector<float> &w, size_t heads, size_t hd, size_t cols) {
  std::vector<float> out(w.size());
  for (size_t h = 0; h < heads; h++)
    for (size_t i = 0; i < hd / 2; i++)
      for (size_t j = 0; j < 2; j++)
        std::copy_n(&w[(h * hd + j * hd / 2 + i) * cols], cols, &out[(h * hd + 2 * i + j) * cols]);
  return out;
}

// Writes the GGUF form: keys as llama.cpp writes them, matrices in s.wtype, norms f32 (Gemma's
// with the 1 added, as its converter does), Llama's Q/K permuted.
inline fg_status tiny_write_gguf(const TinyModel &m, const std::string &path) {
  const TinySpec &s = m.s;
  fg_gguf_writer *w = nullptr;
  fg_status st = fg_gguf_writer_create(&w);
  if (st) return st;
  const std::string a = s.arch;
  fg_gguf_writer_set_str(w, "general.architecture", a.c_str(), a.size());
  fg_gguf_writer_set_u32(w, (a + ".block_count").c_str(), (uint32_t)s.L);
  fg_gguf_writer_set_u32(w, (a + ".context_length").c_str(), 4096);
  fg_gguf_writer_set_u32(w, (a + ".embedding_length").c_str(), (uint32_t)s.E);
  fg_gguf_writer_set_u32(w, (a + ".feed_forward_length").c_str(), (uint32_t)s.F);
  fg_gguf_writer_set_u32(w, (a + ".attention.head_count").c_str(), (uint32_t)s.H);
  fg_gguf_writer_set_u32(w, (a + ".attention.head_count_kv").c_str(), (uint32_t)s.KV);
  fg_gguf_writer_set_u32(w, (a + ".attention.key_length").c_str(), (uint32_t)s.HD);
  fg_gguf_writer_set_u32(w, (a + ".attention.value_length").c_str(), (uint32_t)s.HD);
  fg_gguf_writer_set_f32(w, (a + ".rope.freq_base").c_str(), (float)s.base);
  fg_gguf_writer_set_f32(w, (a + ".attention.layer_norm_rms_epsilon").c_str(), s.eps);
  if (s.window) fg_gguf_writer_set_u32(w, (a + ".attention.sliding_window").c_str(), (uint32_t)s.window);
  static std::vector<std::vector<uint8_t>> keep;  // the writer borrows data until finish
  keep.clear();
  for (const auto &kv : m.w) {
    const std::string name = tiny_gguf_name(m, kv.first);
    std::vector<float> v = kv.second;
    const auto &sh = m.shape.at(kv.first);
    const bool vec = sh.size() == 1;
    if (vec && m.gemma() && name.find("norm") != std::string::npos)
      for (auto &x : v) x = x + 1.0f;
    if (s.arch == "llama" && name.find("attn_q.weight") != std::string::npos) v = tiny_permute(v, s.H, s.HD, s.E);
    if (s.arch == "llama" && name.find("attn_k.weight") != std::string::npos) v = tiny_permute(v, s.KV, s.HD, s.E);
    const fg_dtype dt = vec ? FG_F32 : s.wtype;
    std::vector<uint8_t> bytes;
    if (dt == FG_F32) {
      bytes.resize(v.size() * 4);
      memcpy(bytes.data(), v.data(), bytes.size());
    } else {
      const fg_dtype_traits *tr = fg_dtype_info(dt);
      bytes.resize(sh[0] * (sh[1] / tr->block_elems) * tr->block_bytes);
      fg_quant_encode_rows(dt, v.data(), (int64_t)sh[0], (int64_t)sh[1], bytes.data(), bytes.size());
    }
    keep.push_back(std::move(bytes));
    uint64_t ne[2] = {vec ? sh[0] : sh[1], vec ? 1 : sh[0]};
    st = fg_gguf_writer_add_tensor(w, name.c_str(), dt, vec ? 1 : 2, ne, keep.back().data(), keep.back().size());
    if (st) break;
  }
  if (!st) st = fg_gguf_writer_finish(w, path.c_str());
  fg_gguf_writer_free(w);
  return st;
}

// Writes the Hugging Face form (f32 safetensors + config.json) into dir.
inline fg_status tiny_write_hf(const TinyModel &m, const std::string &dir) {
  const TinySpec &s = m.s;
  std::vector<fg_st_write_tensor> ts;
  std::vector<std::vector<uint64_t>> shapes;
  shapes.reserve(m.w.size());
  for (const auto &kv : m.w) {
    const auto &sh = m.shape.at(kv.first);
    shapes.emplace_back(sh.begin(), sh.end());
    ts.push_back({kv.first.c_str(), FG_F32, (int)sh.size(), shapes.back().data(), kv.second.data(),
                  (uint64_t)kv.second.size() * 4});
  }
  fg_status st = fg_st_save((dir + "/model.safetensors").c_str(), ts.data(), ts.size(), nullptr, 0);
  if (st) return st;
  const std::string mt = m.gemma() ? "gemma3_text" : s.arch;
  char cfg[1024];
  snprintf(cfg, sizeof cfg,
           "{\"model_type\": \"%s\", \"hidden_size\": %zu, \"intermediate_size\": %zu, \"num_hidden_layers\": %zu, "
           "\"num_attention_heads\": %zu, \"num_key_value_heads\": %zu, \"head_dim\": %zu, \"vocab_size\": %zu, "
           "\"max_position_embeddings\": 4096, \"rms_norm_eps\": %.9g, \"rope_theta\": %.17g, "
           "\"tie_word_embeddings\": %s%s}",
           mt.c_str(), s.E, s.F, s.L, s.H, s.KV, s.HD, s.V, (double)s.eps, s.base, s.tied ? "true" : "false",
           s.window ? (", \"sliding_window\": " + std::to_string(s.window) + ", \"sliding_window_pattern\": 6, "
                       "\"rope_local_base_freq\": 10000.0, \"query_pre_attn_scalar\": " + std::to_string(s.HD)).c_str()
                    : "");
  FILE *f = fopen((dir + "/config.json").c_str(), "wb");
  if (!f) return FG_ERR_IO;
  fputs(cfg, f);
  fclose(f);
  return FG_OK;
}

// ---- the f64 reference forward pass --------------------------------------------------------

struct TinyRef {
  const TinyModel &m;
  explicit TinyRef(const TinyModel &mm) : m(mm) {}
  const std::vector<float> &W(const std::string &n) const { return m.w.at(n); }

  std::vector<double> norm(const std::vector<double> &x, size_t off, size_t n, const std::vector<float> &w) const {
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += x[off + i] * x[off + i];
    const double r = 1.0 / std::sqrt(ss / (double)n + (double)m.s.eps);
    std::vector<double> y(n);
    for (size_t i = 0; i < n; i++) y[i] = x[off + i] * r * ((double)w[i] + (m.gemma() ? 1.0 : 0.0));
    return y;
  }
  std::vector<double> proj(const std::vector<double> &x, const std::string &n, size_t rows, size_t cols) const {
    const auto &w = W(n);
    std::vector<double> y(rows);
    for (size_t o = 0; o < rows; o++) {
      double acc = 0;
      for (size_t i = 0; i < cols; i++) acc += x[i] * (double)w[o * cols + i];
      y[o] = acc;
    }
    return y;
  }
  // Half-split rotation (the folder's layout; the GGUF's permuted rows are the same model).
  void rope(std::vector<double> &x, size_t heads, size_t pos, double base) const {
    const size_t d = m.s.HD;
    for (size_t h = 0; h < heads; h++)
      for (size_t i = 0; i < d / 2; i++) {
        const double th = (double)pos * std::pow(base, -2.0 * (double)i / (double)d);
        const double a = x[h * d + i], b = x[h * d + i + d / 2];
        x[h * d + i] = a * std::cos(th) - b * std::sin(th);
        x[h * d + i + d / 2] = a * std::sin(th) + b * std::cos(th);
      }
  }
  bool windowed(size_t l) const { return m.s.window && (l + 1) % 6 != 0; }

  // Logits (n x V) of one sequence from position 0.
  std::vector<double> forward(const std::vector<int32_t> &ids) const {
    const TinySpec &s = m.s;
    const size_t n = ids.size(), Q = s.H * s.HD, K = s.KV * s.HD;
    const double es = m.gemma() ? (double)(float)std::sqrt((double)s.E) : 1.0;
    std::vector<std::vector<double>> x(n, std::vector<double>(s.E));
    const auto &emb = W("model.embed_tokens.weight");
    for (size_t t = 0; t < n; t++)
      for (size_t i = 0; i < s.E; i++) x[t][i] = (double)emb[ids[t] * s.E + i] * es;
    for (size_t l = 0; l < s.L; l++) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      std::vector<std::vector<double>> q(n), k(n), v(n);
      for (size_t t = 0; t < n; t++) {
        auto h = norm(x[t], 0, s.E, W(p + "input_layernorm.weight"));
        q[t] = proj(h, p + "self_attn.q_proj.weight", Q, s.E);
        k[t] = proj(h, p + "self_attn.k_proj.weight", K, s.E);
        v[t] = proj(h, p + "self_attn.v_proj.weight", K, s.E);
        if (m.bias())
          for (size_t i = 0; i < Q; i++) q[t][i] += W(p + "self_attn.q_proj.bias")[i];
        if (m.bias())
          for (size_t i = 0; i < K; i++) k[t][i] += W(p + "self_attn.k_proj.bias")[i], v[t][i] += W(p + "self_attn.v_proj.bias")[i];
        if (m.qk_norm()) {
          for (size_t h2 = 0; h2 < s.H; h2++) {
            auto y = norm(q[t], h2 * s.HD, s.HD, W(p + "self_attn.q_norm.weight"));
            std::copy(y.begin(), y.end(), q[t].begin() + h2 * s.HD);
          }
          for (size_t h2 = 0; h2 < s.KV; h2++) {
            auto y = norm(k[t], h2 * s.HD, s.HD, W(p + "self_attn.k_norm.weight"));
            std::copy(y.begin(), y.end(), k[t].begin() + h2 * s.HD);
          }
        }
        const double base = windowed(l) ? 10000.0 : s.base;
        rope(q[t], s.H, t, base);
        rope(k[t], s.KV, t, base);
      }
      const double scale = 1.0 / std::sqrt((double)s.HD);
      for (size_t t = 0; t < n; t++) {
        std::vector<double> o(Q, 0.0);
        const size_t lo = windowed(l) && t + 1 > s.window ? t + 1 - s.window : 0;
        for (size_t h = 0; h < s.H; h++) {
          const size_t g = h / (s.H / s.KV);
          std::vector<double> sc;
          double mx = -INFINITY;
          for (size_t j = lo; j <= t; j++) {
            double d = 0;
            for (size_t e = 0; e < s.HD; e++) d += q[t][h * s.HD + e] * k[j][g * s.HD + e];
            sc.push_back(d * scale);
            mx = std::max(mx, d * scale);
          }
          double sum = 0;
          for (auto &z : sc) sum += (z = std::exp(z - mx));
          for (size_t j = lo; j <= t; j++)
            for (size_t e = 0; e < s.HD; e++) o[h * s.HD + e] += sc[j - lo] / sum * v[j][g * s.HD + e];
        }
        auto a = proj(o, p + "self_attn.o_proj.weight", s.E, Q);
        if (m.gemma()) a = norm(a, 0, s.E, W(p + "post_attention_layernorm.weight"));
        for (size_t i = 0; i < s.E; i++) x[t][i] += a[i];
        auto h = norm(x[t], 0, s.E, W(p + (m.gemma() ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight")));
        auto gt = proj(h, p + "mlp.gate_proj.weight", s.F, s.E), up = proj(h, p + "mlp.up_proj.weight", s.F, s.E);
        std::vector<double> act(s.F);
        for (size_t i = 0; i < s.F; i++) {
          const double z = gt[i];
          const double f = m.gemma() ? 0.5 * z * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (z + 0.044715 * z * z * z)))
                                     : z / (1.0 + std::exp(-z));
          act[i] = f * up[i];
        }
        auto d = proj(act, p + "mlp.down_proj.weight", s.E, s.F);
        if (m.gemma()) d = norm(d, 0, s.E, W(p + "post_feedforward_layernorm.weight"));
        for (size_t i = 0; i < s.E; i++) x[t][i] += d[i];
      }
    }
    std::vector<double> logits(n * s.V);
    const std::string out = s.tied ? "model.embed_tokens.weight" : "lm_head.weight";
    for (size_t t = 0; t < n; t++) {
      auto h = norm(x[t], 0, s.E, W("model.norm.weight"));
      auto lg = proj(h, out, s.V, s.E);
      std::copy(lg.begin(), lg.end(), logits.begin() + t * s.V);
    }
    return logits;
  }
};

}  // namespace fgt
