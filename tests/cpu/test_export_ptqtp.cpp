// Export PTQTP mode (forgia/export_ptqtp.h, `forgia export --ptqtp`): the per-tensor plan
// and its reasons, the output's tensor set and order, every plane decodable by forgia's
// TQ2_0 decoder with the planes summing close to the source and equal to the solver's own
// bytes (expert stacks per expert, plane-major), metadata copied with the version and tie
// stamps, the include/exclude filters, refusals, and the CLI (dry run, summary, errors,
// thread count).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "export_fixtures.h"
#include "forgia/export_ptqtp.h"
#include "forgia/ptqtp.h"

namespace {

using fgx::Tensor;

void model_kvs(fg_gguf_writer *w) {
  ASSERT_EQ(FG_OK, fg_gguf_writer_set_str(w, "general.architecture", "llama", 5));
  ASSERT_EQ(FG_OK, fg_gguf_writer_set_u32(w, "llama.block_count", 1));
  ASSERT_EQ(FG_OK, fg_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f));
}

std::vector<Tensor> model_tensors() {
  return {
    fgx::make("token_embd.weight", FG_F16, {16, 256}, 1),            // default: stays
    fgx::make("blk.0.attn_norm.weight", FG_F32, {256}, 2),           // 1-D
    fgx::make("blk.0.attn_q.weight", FG_F16, {32, 512}, 3),          // quantized
    fgx::make("blk.0.attn_k.weight", FG_Q8_0, {16, 256}, 4),         // dequantized, quantized
    fgx::make("blk.0.attn_output.weight", FG_BF16, {16, 512}, 5),    // quantized
    fgx::make("blk.0.ffn_down.weight", FG_F32, {8, 320}, 6),         // ne[0] = 320: stays
    fgx::make("blk.0.ffn_gate_exps.weight", FG_F32, {3, 16, 256}, 7), // stack, per expert
    fgx::make("blk.0.ffn_up.weight", FG_TQ2_0, {8, 256}, 8),         // already ternary
    fgx::make("blk.0.post_norm.weight", FG_F32, {4, 256}, 9),        // norm
    fgx::make("blk.0.attn_v.scales", FG_F32, {4, 256}, 10),          // not .weight
    fgx::make("blk.0.conv.weight", FG_F32, {2, 4, 256}, 11),         // 3-D, not _exps
    fgx::make("output.weight", FG_F32, {16, 256}, 12),               // default: stays
  };
}

const char *const kQuantized[] = {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_output.weight",
                                  "blk.0.ffn_gate_exps.weight"};

class ExportPtqtp : public ::testing::Test {
 protected:
  fgt::TempDir dir;
  std::string in;
  std::vector<Tensor> ts;
  fg_ckpt *src = nullptr;
  void SetUp() override {
    in = dir.file("m.gguf");
    ts = model_tensors();
    fgx::write_gguf(in, model_kvs, ts);
    ASSERT_EQ(FG_OK, fg_ckpt_open(in.c_str(), &src)) << fg_last_error();
  }
  void TearDown() override { fg_ckpt_close(src); }

  fg_status run(const fg_export_ptqtp_options &o, const std::string &out, fg_export_ptqtp_summary *sum = nullptr) {
    fg_export_ptqtp_plan *p = nullptr;
    fg_status s = fg_export_ptqtp_plan_create(src, &o, &p);
    if (!s) s = fg_export_ptqtp_run(p, out.c_str(), nullptr, nullptr, sum);
    fg_export_ptqtp_plan_free(p);
    return s;
  }
};

fg_export_ptqtp_options opts(int k, bool tie = false) {
  fg_export_ptqtp_options o = fg_export_ptqtp_options_default();
  o.solver.planes = k;
  o.solver.tie_scales = tie;
  return o;
}

std::vector<float> src_f32(const Tensor &t) { return fgx::decode(t.dtype, t.data, t.rows(), t.row()); }

TEST_F(ExportPtqtp, PlanDecidesEveryTensor) {
  fg_export_ptqtp_plan *p = nullptr;
  fg_export_ptqtp_options o = opts(2);
  ASSERT_EQ(FG_OK, fg_export_ptqtp_plan_create(src, &o, &p)) << fg_last_error();
  const fg_export_ptqtp_why want[] = {FG_PTQTP_WHY_DEFAULT, FG_PTQTP_WHY_SHAPE,  FG_PTQTP_WHY_QUANTIZE,
                                      FG_PTQTP_WHY_QUANTIZE, FG_PTQTP_WHY_QUANTIZE, FG_PTQTP_WHY_ROW,
                                      FG_PTQTP_WHY_QUANTIZE, FG_PTQTP_WHY_SOURCE, FG_PTQTP_WHY_NORM,
                                      FG_PTQTP_WHY_NOT_WEIGHT, FG_PTQTP_WHY_SHAPE, FG_PTQTP_WHY_DEFAULT};
  ASSERT_EQ(ts.size(), fg_export_ptqtp_plan_count(p));
  for (size_t i = 0; i < ts.size(); i++) {
    const fg_export_ptqtp_tensor *t = fg_export_ptqtp_plan_tensor(p, i);
    EXPECT_EQ(want[i], t->why) << t->name << ": " << fg_export_ptqtp_why_name(t->why);
    EXPECT_EQ(ts[i].data.size(), t->src_bytes) << t->name;
    if (t->why != FG_PTQTP_WHY_QUANTIZE) {
      EXPECT_EQ(t->src_bytes, t->dst_bytes) << t->name;
    }
  }
  // attn_q: 32 rows of 2 blocks, 2 planes of 66-byte blocks; values 64 KiB f32 + planes + one read piece
  const fg_export_ptqtp_tensor *q = fg_export_ptqtp_plan_tensor(p, 2);
  EXPECT_EQ(2u * 32 * 2 * 66, q->dst_bytes);
  EXPECT_EQ(32u * 512 * 4 + 2 * 32 * 2 * 66 + 32 * 512 * 2, q->workset_bytes);
  const fg_export_ptqtp_tensor *x = fg_export_ptqtp_plan_tensor(p, 6);
  EXPECT_EQ(3u, x->experts);
  EXPECT_EQ(16u, x->rows);
  EXPECT_EQ(256u, x->cols);
  EXPECT_EQ(2u * 3 * 16 * 66, x->dst_bytes);
  fg_export_ptqtp_totals tt;
  fg_export_ptqtp_plan_totals(p, &tt);
  EXPECT_EQ(4u, tt.quantized);
  EXPECT_EQ(8u, tt.plane_tensors);
  EXPECT_EQ(1u, tt.stacks);
  EXPECT_EQ(8u, tt.kept);
  EXPECT_EQ(q->workset_bytes, tt.peak_workset_bytes);
  fg_export_ptqtp_plan_free(p);
}

// The output, checked tensor by tensor against the source and the solver.
void check_output(const std::string &out, const std::vector<Tensor> &ts, int k, bool tie,
                  const std::vector<std::string> &quantized) {
  fg_ckpt *o = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(out.c_str(), &o)) << fg_last_error();
  size_t j = 0;
  fg_ptqtp_options so = fg_ptqtp_options_default();
  so.planes = k;
  so.tie_scales = tie;
  for (const Tensor &t : ts) {
    const bool quant = std::find(quantized.begin(), quantized.end(), t.name) != quantized.end();
    if (!quant) {
      const fg_ckpt_tensor *x = fg_ckpt_tensor_at(o, j++);
      ASSERT_NE(nullptr, x);
      EXPECT_EQ(t.name, x->name);
      EXPECT_EQ(t.dtype, x->dtype);
      EXPECT_TRUE(std::vector<uint8_t>(x->data, x->data + x->nbytes) == t.data) << t.name;
      continue;
    }
    const std::vector<float> w = src_f32(t);
    const uint64_t cols = t.shape.back(), rows = t.shape[t.shape.size() - 2];
    const uint64_t experts = t.shape.size() == 3 ? t.shape[0] : 1;
    std::vector<float> sum(w.size(), 0.0f);
    std::vector<std::vector<uint8_t>> got(k);
    for (int p = 0; p < k; p++) {
      const fg_ckpt_tensor *x = fg_ckpt_tensor_at(o, j++);
      ASSERT_NE(nullptr, x);
      EXPECT_EQ(t.name + ".ptqtp" + std::to_string(p), x->name);
      EXPECT_EQ(FG_TQ2_0, x->dtype);
      EXPECT_EQ((int)t.shape.size(), x->ndim);
      EXPECT_EQ(0, std::memcmp(x->shape, t.shape.data(), t.shape.size() * 8)) << x->name;
      got[p].assign(x->data, x->data + x->nbytes);
      // forgia's own TQ2_0 decoder reads every plane
      const std::vector<float> d = fgx::decode(FG_TQ2_0, got[p], experts * rows, cols);
      for (size_t i = 0; i < w.size(); i++) sum[i] += d[i];
    }
    double e = 0, n = 0;
    for (size_t i = 0; i < w.size(); i++) {
      e += ((double)w[i] - sum[i]) * ((double)w[i] - sum[i]);
      n += (double)w[i] * w[i];
    }
    const double bound = k == 1 ? 0.6 : k == 2 ? 0.3 : 0.12;
    EXPECT_LT(std::sqrt(e / n), bound) << t.name << " K=" << k;
    // the solver's bytes, expert by expert, plane-major
    uint64_t pe = 0;
    ASSERT_EQ(FG_OK, fg_ptqtp_plane_bytes(rows, cols, &pe));
    for (uint64_t ex = 0; ex < experts; ex++) {
      std::vector<std::vector<uint8_t>> want(3, std::vector<uint8_t>(pe));
      void *ptr[3] = {want[0].data(), want[1].data(), want[2].data()};
      ASSERT_EQ(FG_OK, fg_ptqtp_quantize(w.data() + ex * rows * cols, rows, cols, &so, ptr, nullptr));
      for (int p = 0; p < k; p++)
        EXPECT_EQ(0, std::memcmp(want[p].data(), got[p].data() + ex * pe, pe)) << t.name << " expert " << ex << " plane " << p;
    }
  }
  EXPECT_EQ(j, fg_ckpt_count(o));
  // metadata: the source's, in order, then the stamps
  const fg_gguf_file *g = fg_ckpt_gguf(o);
  ASSERT_NE(nullptr, g);
  EXPECT_EQ(0, fg_gguf_key_index(g, "general.architecture"));
  EXPECT_EQ(1, fg_gguf_key_index(g, "llama.block_count"));
  EXPECT_EQ(2, fg_gguf_key_index(g, "llama.rope.freq_base"));
  const int64_t vi = fg_gguf_key_index(g, FG_PTQTP_VERSION_KEY);
  if (quantized.empty()) {
    EXPECT_LT(vi, 0);
  } else {
    ASSERT_GE(vi, 0);
    EXPECT_EQ(FG_GGUF_UINT32, fg_gguf_kv_type(g, (size_t)vi));
    uint64_t v = 0;
    EXPECT_EQ(FG_OK, fg_gguf_kv_uint(g, (size_t)vi, &v));
    EXPECT_EQ(1u, v);
  }
  const int64_t ti = fg_gguf_key_index(g, FG_PTQTP_TIE_KEY);
  if (tie && !quantized.empty()) {
    ASSERT_GE(ti, 0);
    EXPECT_EQ(FG_GGUF_UINT32, fg_gguf_kv_type(g, (size_t)ti));
  } else {
    EXPECT_LT(ti, 0);
  }
  fg_ckpt_close(o);
}

std::vector<std::string> default_set() { return std::vector<std::string>(std::begin(kQuantized), std::end(kQuantized)); }

TEST_F(ExportPtqtp, PlanesReplaceTheirBaseAndDecodeCloseToIt) {
  for (int k = 1; k <= 3; k++) {
    SCOPED_TRACE(k);
    const std::string out = dir.file("o" + std::to_string(k) + ".gguf");
    fg_export_ptqtp_summary s;
    ASSERT_EQ(FG_OK, run(opts(k), out, &s)) << fg_last_error();
    check_output(out, ts, k, false, default_set());
    EXPECT_EQ(4u, s.totals.quantized);
    EXPECT_GT(s.peak_workset_bytes, 0u);
    EXPECT_LE(s.peak_workset_bytes, s.totals.peak_workset_bytes);
    EXPECT_GT(s.peak_rss_bytes, 0u);
    EXPECT_EQ((uint64_t)(32 * 2 + 16 + 16 * 2 + 3 * 16), s.groups);
    EXPECT_GT(s.max_rel_err, 0);
  }
}

TEST_F(ExportPtqtp, TiedRunsStampTieScales) {
  for (int k = 2; k <= 3; k++) {
    const std::string out = dir.file("t" + std::to_string(k) + ".gguf");
    ASSERT_EQ(FG_OK, run(opts(k, true), out)) << fg_last_error();
    check_output(out, ts, k, true, default_set());
  }
  // a free re-run of a tied output drops the inherited stamp: not every plane set is tied then
  fg_ckpt *t = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(dir.file("t2.gguf").c_str(), &t));
  fg_export_ptqtp_options o = opts(2);
  const char *inc[] = {"output.weight"};
  o.include = inc;
  o.n_include = 1;
  fg_export_ptqtp_plan *p = nullptr;
  ASSERT_EQ(FG_OK, fg_export_ptqtp_plan_create(t, &o, &p)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_export_ptqtp_run(p, dir.file("t2free.gguf").c_str(), nullptr, nullptr, nullptr)) << fg_last_error();
  fg_export_ptqtp_plan_free(p);
  fg_ckpt_close(t);
  fg_ckpt *r = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(dir.file("t2free.gguf").c_str(), &r));
  EXPECT_LT(fg_gguf_key_index(fg_ckpt_gguf(r), FG_PTQTP_TIE_KEY), 0);
  EXPECT_GE(fg_gguf_key_index(fg_ckpt_gguf(r), FG_PTQTP_VERSION_KEY), 0);
  EXPECT_NE(nullptr, fg_ckpt_find(r, "output.weight.ptqtp1"));
  EXPECT_NE(nullptr, fg_ckpt_find(r, "blk.0.attn_q.weight.ptqtp1"));  // earlier planes pass through
  fg_ckpt_close(r);
}

TEST_F(ExportPtqtp, IncludeReplacesTheDefaultAndExcludeSubtracts) {
  fg_export_ptqtp_options o = opts(2);
  const char *inc[] = {"attn_q", "output", "token_embd"};
  const char *exc[] = {"attn_output", "embd"};
  o.include = inc;
  o.n_include = 3;
  o.exclude = exc;
  o.n_exclude = 2;
  const std::string out = dir.file("f.gguf");
  ASSERT_EQ(FG_OK, run(o, out)) << fg_last_error();
  check_output(out, ts, 2, false, {"blk.0.attn_q.weight", "output.weight"});
  // nothing eligible: a plain copy without stamps
  const char *none[] = {"no-such-name"};
  o.include = none;
  o.n_include = 1;
  o.n_exclude = 0;
  ASSERT_EQ(FG_OK, run(o, dir.file("n.gguf"))) << fg_last_error();
  check_output(dir.file("n.gguf"), ts, 2, false, {});
}

TEST_F(ExportPtqtp, Refusals) {
  fg_export_ptqtp_plan *p = nullptr;
  fg_export_ptqtp_options o = opts(1, true);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_export_ptqtp_plan_create(src, &o, &p));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("tie_scales"));
  o = opts(4);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_export_ptqtp_plan_create(src, &o, &p));
  EXPECT_EQ(nullptr, p);
  // the output may not be the input
  o = opts(2);
  EXPECT_EQ(FG_ERR_INVALID_ARG, run(o, in));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("m.gguf")) << fg_last_error();
  // a name whose plane names pass 63 bytes, and a plane name the model already holds
  std::string longname = "blk.0." + std::string(50, 'x') + ".weight";
  std::vector<Tensor> bad = {fgx::make(longname, FG_F32, {2, 256}, 1)};
  fgx::write_gguf(dir.file("long.gguf"), nullptr, bad);
  fg_ckpt *c = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(dir.file("long.gguf").c_str(), &c));
  EXPECT_EQ(FG_ERR_BAD_STRING, fg_export_ptqtp_plan_create(c, &o, &p));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find(longname));
  const char *exc[] = {"xxxx"};
  o.exclude = exc;
  o.n_exclude = 1;
  EXPECT_EQ(FG_OK, fg_export_ptqtp_plan_create(c, &o, &p)) << fg_last_error();  // excluded: fine
  fg_export_ptqtp_plan_free(p);
  fg_ckpt_close(c);
  o = opts(2);
  bad = {fgx::make("a.weight", FG_F32, {2, 256}, 1), fgx::make("a.weight.ptqtp1", FG_F32, {2, 256}, 2)};
  fgx::write_gguf(dir.file("dup.gguf"), nullptr, bad);
  ASSERT_EQ(FG_OK, fg_ckpt_open(dir.file("dup.gguf").c_str(), &c));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_export_ptqtp_plan_create(c, &o, &p));
  fg_ckpt_close(c);
  // safetensors: the name policy is GGUF's
  fgx::write_safetensors(dir.file("m.safetensors"), {fgx::make("a.weight", FG_F32, {2, 256}, 1)});
  ASSERT_EQ(FG_OK, fg_ckpt_open(dir.file("m.safetensors").c_str(), &c));
  EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_export_ptqtp_plan_create(c, &o, &p));
  fg_ckpt_close(c);
}

TEST_F(ExportPtqtp, CancelLeavesNoFile) {
  fg_export_ptqtp_plan *p = nullptr;
  fg_export_ptqtp_options o = opts(2);
  ASSERT_EQ(FG_OK, fg_export_ptqtp_plan_create(src, &o, &p));
  const auto before = fgx::list_dir(dir.path);
  int calls = 0;
  auto stop = [](const fg_export_ptqtp_progress *pr, void *u) {
    ++*(int *)u;
    return pr->index < 3;
  };
  EXPECT_EQ(FG_ERR_STATE, fg_export_ptqtp_run(p, dir.file("c.gguf").c_str(), stop, &calls, nullptr));
  EXPECT_EQ(4, calls);
  EXPECT_EQ(before, fgx::list_dir(dir.path));
  fg_export_ptqtp_plan_free(p);
}

// ---- the CLI ----

std::string cli() { return FORGIA_CLI; }

TEST_F(ExportPtqtp, CliDryRunPrintsThePlanAndWritesNothing) {
  std::string out, err;
  const auto before = fgx::list_dir(dir.path);
  ASSERT_EQ(0, fgt::run(cli() + " export --from-gguf " + in + " --ptqtp=3 --dry-run", &out, &err)) << err;
  EXPECT_EQ(before, fgx::list_dir(dir.path));
  EXPECT_NE(std::string::npos, out.find("blk.0.attn_q.weight")) << out;
  EXPECT_NE(std::string::npos, out.find("[32, 512]")) << out;
  EXPECT_NE(std::string::npos, out.find("f16 -> tq2_0 x3")) << out;
  EXPECT_NE(std::string::npos, out.find("32768 -> 12672")) << out;  // 32x512 f16 -> 3 x 64 blocks of 66
  EXPECT_NE(std::string::npos, out.find("ptqtp per expert (3 experts)")) << out;
  EXPECT_NE(std::string::npos, out.find("keep (embeddings/output head stay)")) << out;
  EXPECT_NE(std::string::npos, out.find("q8_0 -> tq2_0 x3")) << out;
  EXPECT_NE(std::string::npos, out.find("4 ptqtp-quantized (K=3, 12 plane tensors, 1 expert stacks)")) << out;
  EXPECT_NE(std::string::npos, out.find("peak working set (planned)")) << out;
}

TEST_F(ExportPtqtp, CliWritesTheLibrarysBytesAtAnyThreadCount) {
  std::string out, err, a = dir.file("a.gguf"), b = dir.file("b.gguf");
  ASSERT_EQ(0, fgt::run("OMP_NUM_THREADS=1 " + cli() + " export --from-gguf " + in + " --out " + a +
                            " --ptqtp-planes 2 --ptqtp-tie --ptqtp-include attn,ffn --ptqtp-exclude attn_k",
                        &out, &err))
      << err;
  EXPECT_NE(std::string::npos, out.find("ptqtp blk.0.attn_q.weight [32, 512] f16 -> tq2_0 x2  rel_err")) << out;
  EXPECT_NE(std::string::npos, out.find("(mean of 3 experts, max")) << out;
  EXPECT_NE(std::string::npos, out.find("peak tensor working set")) << out;
  EXPECT_NE(std::string::npos, out.find("peak RSS")) << out;
  ASSERT_EQ(0, fgt::run("OMP_NUM_THREADS=3 " + cli() + " export --from-gguf " + in + " --out " + b +
                            " --ptqtp-tie --ptqtp-include=attn --ptqtp-include ffn --ptqtp-exclude=attn_k",
                        &out, &err))
      << err;
  EXPECT_TRUE(fgt::read_file(a) == fgt::read_file(b));
  fg_export_ptqtp_options o = opts(2, true);
  const char *inc[] = {"attn", "ffn"};
  const char *exc[] = {"attn_k"};
  o.include = inc;
  o.n_include = 2;
  o.exclude = exc;
  o.n_exclude = 1;
  ASSERT_EQ(FG_OK, run(o, dir.file("lib.gguf"))) << fg_last_error();
  EXPECT_TRUE(fgt::read_file(a) == fgt::read_file(dir.file("lib.gguf")));
  check_output(a, ts, 2, true, {"blk.0.attn_q.weight", "blk.0.attn_output.weight", "blk.0.ffn_gate_exps.weight"});
}

TEST_F(ExportPtqtp, CliUsageErrors) {
  std::string out, err, o = " --out " + dir.file("o.gguf");
  const std::string base = cli() + " export --from-gguf " + in;
  EXPECT_EQ(2, fgt::run(base + o + " --ptqtp --dtype q8_0", &out, &err));
  EXPECT_NE(std::string::npos, err.find("--dtype")) << err;
  EXPECT_EQ(2, fgt::run(base + o + " --ptqtp-tie --adapters x --alpha 1", &out, &err));
  EXPECT_EQ(2, fgt::run(base + o + " --ptqtp=4", &out, &err));
  EXPECT_NE(std::string::npos, err.find("1, 2 or 3")) << err;
  EXPECT_EQ(2, fgt::run(base + o + " --ptqtp=1 --ptqtp-tie", &out, &err));
  EXPECT_NE(std::string::npos, err.find("at least 2")) << err;
  EXPECT_EQ(2, fgt::run(base + o + " --ptqtp=3 --ptqtp-planes 2", &out, &err));
  EXPECT_EQ(2, fgt::run(base + o + " --ptqtp-include", &out, &err));
  EXPECT_EQ(2, fgt::run(base + " --ptqtp", &out, &err));                       // no --out
  EXPECT_EQ(2, fgt::run(base + " --out " + in + " --ptqtp", &out, &err));      // the input itself
  EXPECT_EQ(2, fgt::run(cli() + " export --from-safetensors x --ptqtp --dry-run", &out, &err));
  EXPECT_EQ(1, fgt::run(cli() + " export --from-gguf " + dir.file("missing.gguf") + " --ptqtp --dry-run", &out, &err));
  EXPECT_EQ(std::vector<std::string>{"m.gguf"}, fgx::list_dir(dir.path)) << "no file but the model";
}

}  // namespace
