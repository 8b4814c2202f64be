// LoRA adapters on the CPU (forgia/lora.h): a new adapter adds exactly nothing, A is the
// kaiming stream of fg_rng, bad configurations are refused, merges equal a dense reference
// computed here (bitwise with the exact GEMM; 16-bit bases rounded once), quantized bases are
// refused with their own status, the backward pass agrees with finite differences and a
// dense f64 reference, dropout uses fg_rng's keep mask, the adapters.safetensors round trip,
// optimizer registration, and forward, backward and merge against PEFT
// (tests/data/golden/peft_lora.txt, generator tests/data/lora_gen/gen_peft.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/lora.h"
#include "forgia/quant.h"
#include "lora_rig.h"
#include "op_harness.h"

using fgt::DevBuf;

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  ~Cpu() { fg_device_close(dev); }
};

fg_lora *make(fg_device *dev, uint64_t in, uint64_t out, uint32_t r, float alpha, float p, uint64_t seed) {
  fg_lora_config c = {r, alpha, p};
  fg_lora *l = nullptr;
  EXPECT_EQ(FG_OK, fg_lora_create(dev, in, out, &c, seed, &l)) << fg_last_error();
  return l;
}

// x W^T with the library's GEMM in mode m (the base path the adapter itself takes).
std::vector<float> base_out(fg_device *dev, fg_gemm_mode m, const std::vector<float> &x, const std::vector<float> &w,
                            uint64_t n, uint64_t in, uint64_t out) {
  std::vector<float> y(n * out);
  EXPECT_EQ(FG_OK, fg_gemm(dev, m, false, true, n, out, in, 1.0f, x.data(), FG_F32, in, w.data(), FG_F32, in, 0.0f,
                           y.data(), out, nullptr));
  return y;
}

}  // namespace

// The LoRA ops of the op layer against their elements applied one by one here, with
// special values, several tensors in a list and odd stream counters.
TEST(Lora, OpsEqualTheirElementsAppliedSerially) {
  Cpu c;
  for (fg_dtype fd : {FG_F32, FG_F16, FG_BF16}) {
    for (fg_op_kind op : {FG_OP_LORA_ADD, FG_OP_LORA_SCALE, FG_OP_LORA_DROPOUT_ADD}) {
      if (op != FG_OP_LORA_ADD && fd != FG_F32) continue; /* f32 streams only */
      fgt::OpCase k;
      std::memset(&k, 0, sizeof k);
      k.op = op;
      k.nstreams = op == FG_OP_LORA_ADD ? 3 : 2;
      for (unsigned i = 0; i < k.nstreams; i++) k.dt[i] = i < 2 ? fd : FG_F32;
      fg_rng_spec r;
      std::memset(&r, 0, sizeof r);
      r.kind = FG_RNG_KEEP_MASK;
      r.p = 0.4f;
      ASSERT_EQ(FG_OK, fg_rng_op_params(&r, nullptr, &k.p));
      if (op != FG_OP_LORA_DROPOUT_ADD) k.p.f[0] = 1.75f;
      std::vector<fgt::OpTensor> in = fgt::op_inputs(k, {5, 70001, 1}, 3);
      std::vector<fgt::OpTensor> got = fgt::op_run_on(c.dev, k, in), want = in;
      size_t dropped = 0;
      for (fgt::OpTensor &t : want) {
        for (size_t i = 0; i < t.n; i++) {
          fg_op_vals v[1] = {{0}};
          for (unsigned s = 0; s < k.nstreams; s++) v[0][s] = fg_op_load(t.s[s].data(), k.dt[s], i);
          const uint64_t ctr = t.index0 + i;
          if (op == FG_OP_LORA_ADD) fg_op_lora_add(&k.p, v, t.seed, ctr);
          if (op == FG_OP_LORA_SCALE) fg_op_lora_scale(&k.p, v, t.seed, ctr);
          if (op == FG_OP_LORA_DROPOUT_ADD) {
            fg_op_lora_dropout_add(&k.p, v, t.seed, ctr);
            dropped += !fg_rng_keep(fg_rng_at(t.seed, ctr), k.p.u[0]);
          }
          fg_op_store(t.s[0].data(), k.dt[0], i, v[0][0]);
        }
      }
      EXPECT_TRUE(fgt::op_lists_equal(want, got)) << fg_op_name(op) << " " << fg_dtype_name(fd);
      if (op == FG_OP_LORA_DROPOUT_ADD) {
        EXPECT_GT(dropped, 20000u);
      }
    }
  }
  EXPECT_STREQ("lora_add", fg_op_name(FG_OP_LORA_ADD));
}

TEST(Lora, ZeroDeltaAtInitReturnsTheBaseBitwise) {
  Cpu c;
  const uint64_t in = 24, out = 10, n = 5;
  for (fg_gemm_mode m : {FG_GEMM_FAST, FG_GEMM_EXACT}) {
    fg_lora *l = make(c.dev, in, out, 4, 8.0f, 0.25f, 42);
    ASSERT_NE(nullptr, l);
    l->gemm = m;
    std::vector<float> x = fgt::gaussian(n * in, 1), w = fgt::gaussian(out * in, 2);
    fg_tensor *wt = fgt::lora_tensor(c.dev, "w", FG_F32, out, in, w);
    std::vector<float> base = base_out(c.dev, m, x, w, n, in, out);
    std::vector<float> y(n * out, 7.0f);
    ASSERT_EQ(FG_OK, fg_lora_forward(l, wt, x.data(), n, nullptr, y.data(), nullptr)) << fg_last_error();
    EXPECT_EQ(0, std::memcmp(base.data(), y.data(), y.size() * 4)) << "eval, mode " << m;
    uint64_t seed = 99; /* train mode: dropout runs, B is still zero */
    ASSERT_EQ(FG_OK, fg_lora_forward(l, wt, x.data(), n, &seed, y.data(), nullptr));
    EXPECT_EQ(0, std::memcmp(base.data(), y.data(), y.size() * 4)) << "train, mode " << m;
    std::vector<float> y2 = base; /* the caller's base output, added into */
    ASSERT_EQ(FG_OK, fg_lora_forward(l, nullptr, x.data(), n, nullptr, y2.data(), nullptr));
    EXPECT_EQ(0, std::memcmp(base.data(), y2.data(), y2.size() * 4));
    fg_tensor_free(wt);
    fg_lora_free(l);
  }
}

TEST(Lora, AIsTheKaimingStreamOfTheSeedAndBIsZero) {
  Cpu c;
  const uint64_t in = 37, out = 11;
  fg_lora *l = make(c.dev, in, out, 5, 10.0f, 0.0f, 1234);
  fg_lora *l2 = make(c.dev, in, out, 5, 10.0f, 0.0f, 1234);
  fg_lora *l3 = make(c.dev, in, out, 5, 10.0f, 0.0f, 1235);
  ASSERT_TRUE(l && l2 && l3);
  fg_rng_spec r;
  std::memset(&r, 0, sizeof r);
  r.kind = FG_RNG_KAIMING;
  r.seed = 1234;
  r.fan_in = in;
  std::vector<float> want(5 * in);
  ASSERT_EQ(FG_OK, fg_rng_fill_host(&r, want.data(), want.size()));
  std::vector<float> a = fgt::lora_download(l->a);
  EXPECT_EQ(0, std::memcmp(want.data(), a.data(), a.size() * 4));
  EXPECT_EQ(0, std::memcmp(a.data(), fgt::lora_download(l2->a).data(), a.size() * 4));
  EXPECT_NE(0, std::memcmp(a.data(), fgt::lora_download(l3->a).data(), a.size() * 4));
  const float bound = (float)std::sqrt(1.0 / (double)in);
  for (float v : a) EXPECT_TRUE(v >= -bound && v < bound);
  for (float v : fgt::lora_download(l->b)) EXPECT_EQ(0u, fgt::f32_bits_of(v));
  EXPECT_EQ(10.0f / 5.0f, l->scale);
  EXPECT_EQ(5u, l->a->shape[0]);
  EXPECT_EQ(in, l->a->shape[1]);
  EXPECT_EQ(out, l->b->shape[0]);
  EXPECT_EQ(5u, l->b->shape[1]);
  ASSERT_NE(nullptr, l->a->grad);
  ASSERT_NE(nullptr, l->b->grad);
  fg_lora_free(l);
  fg_lora_free(l2);
  fg_lora_free(l3);
}

TEST(Lora, CreateValidatesRankDropoutAndAlpha) {
  Cpu c;
  fg_lora *l = nullptr;
  struct Bad {
    uint64_t in, out;
    fg_lora_config cfg;
    fg_status st;
    const char *msg;
  } bad[] = {
      {8, 4, {0, 1.0f, 0.0f}, FG_ERR_INVALID_ARG, "rank 0"},
      {8, 4, {5, 1.0f, 0.0f}, FG_ERR_INVALID_ARG, "rank 5 outside 1..min(in 8, out 4)"},
      {3, 9, {4, 1.0f, 0.0f}, FG_ERR_INVALID_ARG, "rank 4"},
      {8, 4, {2, 1.0f, 1.0f}, FG_ERR_INVALID_ARG, "dropout 1"},
      {8, 4, {2, 1.0f, -0.01f}, FG_ERR_INVALID_ARG, "dropout -0.01"},
      {8, 4, {2, 1.0f, NAN}, FG_ERR_INVALID_ARG, "dropout nan"},
      {8, 4, {2, INFINITY, 0.0f}, FG_ERR_NONFINITE, "alpha inf"},
  };
  for (const Bad &b : bad) {
    EXPECT_EQ(b.st, fg_lora_create(c.dev, b.in, b.out, &b.cfg, 1, &l)) << b.msg;
    EXPECT_EQ(nullptr, l);
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), b.msg)) << fg_last_error();
  }
  fg_lora_config ok = {4, 1.0f, 0.999f}; /* rank = min(in, out) and p just under 1 */
  ASSERT_EQ(FG_OK, fg_lora_create(c.dev, 8, 4, &ok, 1, &l));
  fg_lora_free(l);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lora_create(nullptr, 8, 4, &ok, 1, &l));
}

TEST(Lora, ForwardRefusesABaseOfTheWrongShape) {
  Cpu c;
  fg_lora *l = make(c.dev, 8, 6, 2, 1.0f, 0.0f, 3);
  fg_tensor *w = fgt::lora_tensor(c.dev, "blk.0.attn_q.weight", FG_F32, 8, 6, fgt::gaussian(48, 1));
  std::vector<float> x(16), y(12);
  EXPECT_EQ(FG_ERR_BAD_SHAPE, fg_lora_forward(l, w, x.data(), 2, nullptr, y.data(), nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "blk.0.attn_q.weight")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lora_forward(l, nullptr, nullptr, 2, nullptr, y.data(), nullptr));
  fg_tensor_free(w);
  fg_lora_free(l);
}

// Merges into f32 (in place) and 16-bit bases (new tensors) against the reference computed
// here: bitwise with the exact GEMM, within GEMM tolerance with the fast one.
TEST(Lora, MergeEqualsTheDenseReference) {
  Cpu c;
  const uint64_t in = 40, out = 24;
  const uint32_t r = 6;
  for (fg_dtype dt : {FG_F32, FG_F16, FG_BF16}) {
    for (fg_gemm_mode m : {FG_GEMM_EXACT, FG_GEMM_FAST}) {
      fg_lora *l = make(c.dev, in, out, r, 12.0f, 0.0f, 7);
      l->gemm = m;
      std::vector<float> b = fgt::gaussian(out * r, 9, 0.3f);
      fgt::lora_set(l->b, b);
      std::vector<float> a = fgt::lora_download(l->a);
      std::vector<float> w = fgt::gaussian(out * in, 8);
      std::vector<uint8_t> wb = fgt::lora_narrow(w, dt);
      fg_tensor *wt = fgt::lora_tensor_bytes(c.dev, "blk.3.ffn_up.weight", dt, out, in, wb.data(), wb.size());
      std::vector<float> wide = w; /* what the base holds, widened */
      for (size_t i = 0; i < w.size(); i++)
        wide[i] = dt == FG_F32 ? w[i] : dt == FG_F16 ? fg_f16_to_f32(fg_f32_to_f16(w[i])) : fg_bf16_to_f32(fg_f32_to_bf16(w[i]));
      std::vector<float> want = fgt::lora_ref_merge(wide, fgt::lora_ref_ba(a, b, out, in, r), l->scale);
      std::vector<uint8_t> want_bytes = fgt::lora_narrow(want, dt); /* rounded once */
      fg_tensor *merged = nullptr;
      if (dt == FG_F32) {
        ASSERT_EQ(FG_OK, fg_lora_merge_into(l, wt, nullptr)) << fg_last_error();
        merged = wt;
      } else {
        EXPECT_EQ(FG_ERR_TYPE, fg_lora_merge_into(l, wt, nullptr));
        ASSERT_EQ(FG_OK, fg_lora_merge_copy(l, wt, nullptr, &merged, nullptr)) << fg_last_error();
        EXPECT_STREQ("blk.3.ffn_up.weight", merged->name);
        EXPECT_EQ(dt, merged->dtype);
        EXPECT_EQ(0, std::memcmp(wb.data(), fgt::lora_download_bytes(wt).data(), wb.size())) << "base changed";
      }
      std::vector<uint8_t> got = fgt::lora_download_bytes(merged);
      if (m == FG_GEMM_EXACT) {
        EXPECT_EQ(0, std::memcmp(want_bytes.data(), got.data(), got.size())) << fg_dtype_name(dt);
      } else {
        const size_t es = dt == FG_F32 ? 4 : 2;
        for (size_t i = 0; i < want.size(); i++) {
          float g;
          if (dt == FG_F32) {
            std::memcpy(&g, &got[i * 4], 4);
          } else {
            uint16_t h;
            std::memcpy(&h, &got[i * es], 2);
            g = dt == FG_F16 ? fg_f16_to_f32(h) : fg_bf16_to_f32(h);
          }
          ASSERT_NEAR(want[i], g, 1e-5 + std::fabs(want[i]) * (dt == FG_F32 ? 1e-5 : dt == FG_F16 ? 2e-3 : 1.6e-2));
        }
      }
      if (merged != wt) fg_tensor_free(merged);
      fg_tensor_free(wt);
      fg_lora_free(l);
    }
  }
}

// Widen, merge, round once: an f16 base whose merged value lands just past a rounding tie
// of the narrowed delta. Rounding the delta to f16 first (twice) gives another answer.
TEST(Lora, SixteenBitMergeRoundsOnce) {
  Cpu c;
  fg_lora *l = make(c.dev, 1, 1, 1, 1.0f, 0.0f, 1);
  l->gemm = FG_GEMM_EXACT;
  fgt::lora_set(l->a, {1.0f});
  /* base 1.0 (its f16 ulp is 2^-10) and delta 2^-11 + 2^-23: just over half an ulp, so one
   * rounding of 1 + delta (exact in f32) goes up to 1 + 2^-10. Rounding the delta to f16
   * first loses its 2^-23 (f16 keeps 10 bits below 2^-11), and the tie 1 + 2^-11 then rounds
   * to even: 1.0. */
  fgt::lora_set(l->b, {0x1p-11f + 0x1p-23f});
  fg_tensor *w = fgt::lora_tensor(c.dev, "w", FG_F16, 1, 1, {1.0f});
  fg_tensor *m = nullptr;
  ASSERT_EQ(FG_OK, fg_lora_merge_copy(l, w, "merged", &m, nullptr));
  uint16_t h;
  ASSERT_EQ(FG_OK, fg_tensor_download(m, &h, 2, nullptr));
  EXPECT_EQ(fg_f32_to_f16(1.0f + 0x1p-10f), h);
  const uint16_t twice = fg_f32_to_f16(1.0f + fg_f16_to_f32(fg_f32_to_f16(0x1p-11f + 0x1p-23f)));
  EXPECT_NE(twice, h);
  fg_tensor_free(m);
  fg_tensor_free(w);
  fg_lora_free(l);
}

TEST(Lora, QuantizedAndReadOnlyBasesAreRefused) {
  Cpu c;
  const uint64_t in = 64, out = 4;
  fg_lora *l = make(c.dev, in, out, 2, 4.0f, 0.0f, 5);
  fgt::lora_set(l->b, fgt::gaussian(out * 2, 3));
  std::vector<float> w = fgt::gaussian(out * in, 4);
  std::vector<uint8_t> q(out * (in / 32) * 34);
  ASSERT_EQ(FG_OK, fg_quant_encode_rows(FG_Q8_0, w.data(), out, in, q.data(), q.size()));
  fg_tensor *wq = fgt::lora_tensor_bytes(c.dev, "blk.1.attn_v.weight", FG_Q8_0, out, in, q.data(), q.size());
  fg_tensor *m = nullptr;
  EXPECT_EQ(FG_ERR_QUANTIZED_BASE, fg_lora_merge_into(l, wq, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "blk.1.attn_v.weight")) << fg_last_error();
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "quantized base")) << fg_last_error();
  EXPECT_EQ(FG_ERR_QUANTIZED_BASE, fg_lora_merge_copy(l, wq, nullptr, &m, nullptr));
  EXPECT_EQ(nullptr, m);
  EXPECT_STREQ("FG_ERR_QUANTIZED_BASE", fg_status_name(FG_ERR_QUANTIZED_BASE));

  // ... but a quantized base is a fine frozen base for the forward pass: it is dequantized.
  std::vector<float> deq(out * in);
  ASSERT_EQ(FG_OK, fg_quant_decode_rows(FG_Q8_0, q.data(), q.size(), deq.data(), out, in));
  fg_tensor *wd = fgt::lora_tensor(c.dev, "deq", FG_F32, out, in, deq);
  l->gemm = FG_GEMM_EXACT;
  std::vector<float> x = fgt::gaussian(3 * in, 6), y1(3 * out), y2(3 * out);
  ASSERT_EQ(FG_OK, fg_lora_forward(l, wq, x.data(), 3, nullptr, y1.data(), nullptr)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_lora_forward(l, wd, x.data(), 3, nullptr, y2.data(), nullptr));
  EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4));

  wd->readonly = true; /* as a file-mapping view is */
  EXPECT_EQ(FG_ERR_STATE, fg_lora_merge_into(l, wd, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "read-only")) << fg_last_error();
  wd->readonly = false;
  fg_tensor_free(wd);
  fg_tensor_free(wq);
  fg_lora_free(l);
}

// f16 and bf16 bases in the forward pass: the same as their f32 widening.
TEST(Lora, SixteenBitBasesForwardAsTheirWidening) {
  Cpu c;
  const uint64_t in = 16, out = 12, n = 3;
  fg_lora *l = make(c.dev, in, out, 3, 2.0f, 0.0f, 5);
  l->gemm = FG_GEMM_EXACT;
  fgt::lora_set(l->b, fgt::gaussian(out * 3, 3));
  std::vector<float> x = fgt::gaussian(n * in, 6);
  for (fg_dtype dt : {FG_F16, FG_BF16}) {
    std::vector<float> w = fgt::gaussian(out * in, 4);
    for (float &v : w) v = dt == FG_F16 ? fg_f16_to_f32(fg_f32_to_f16(v)) : fg_bf16_to_f32(fg_f32_to_bf16(v));
    fg_tensor *w16 = fgt::lora_tensor(c.dev, "w16", dt, out, in, w), *w32 = fgt::lora_tensor(c.dev, "w32", FG_F32, out, in, w);
    std::vector<float> y1(n * out), y2(n * out), d1(n * in), d2(n * in);
    ASSERT_EQ(FG_OK, fg_lora_forward(l, w16, x.data(), n, nullptr, y1.data(), nullptr)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_lora_forward(l, w32, x.data(), n, nullptr, y2.data(), nullptr));
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4)) << fg_dtype_name(dt);
    ASSERT_EQ(FG_OK, fg_lora_backward(l, w16, x.data(), n, nullptr, y1.data(), d1.data(), nullptr));
    ASSERT_EQ(FG_OK, fg_lora_backward(l, w32, x.data(), n, nullptr, y1.data(), d2.data(), nullptr));
    EXPECT_EQ(0, std::memcmp(d1.data(), d2.data(), d1.size() * 4)) << fg_dtype_name(dt);
    fg_tensor_free(w16);
    fg_tensor_free(w32);
  }
  fg_lora_free(l);
}

// The forward pass in train mode equals the eval forward of x masked by fg_rng's keep mask
// and scaled by f32(1 / (1 - p)), computed here.
TEST(Lora, DropoutIsTheKeepMaskOfTheSeed) {
  Cpu c;
  const uint64_t in = 32, out = 8, n = 6;
  const float p = 0.35f;
  fg_lora *l = make(c.dev, in, out, 4, 4.0f, p, 11);
  fgt::lora_set(l->b, fgt::gaussian(out * 4, 12));
  std::vector<float> x = fgt::gaussian(n * in, 13);
  const uint64_t seed = 0xfeedull;
  fg_rng_spec r;
  std::memset(&r, 0, sizeof r);
  r.kind = FG_RNG_KEEP_MASK;
  r.seed = seed;
  r.p = p;
  std::vector<uint8_t> mask(n * in);
  ASSERT_EQ(FG_OK, fg_rng_fill_host(&r, mask.data(), mask.size()));
  const float inv = 1.0f / (1.0f - p);
  std::vector<float> xm(n * in);
  size_t kept = 0;
  for (size_t i = 0; i < xm.size(); i++) {
    xm[i] = mask[i] ? x[i] * inv : 0.0f;
    kept += mask[i];
  }
  EXPECT_GT(kept, xm.size() / 3);
  EXPECT_LT(kept, xm.size());
  std::vector<float> y1(n * out, 0.0f), y2(n * out, 0.0f);
  ASSERT_EQ(FG_OK, fg_lora_forward(l, nullptr, x.data(), n, &seed, y1.data(), nullptr));
  ASSERT_EQ(FG_OK, fg_lora_forward(l, nullptr, xm.data(), n, nullptr, y2.data(), nullptr));
  EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4));
  // A is the gradient's other side: the masked input reaches A->grad, and dx is masked.
  std::vector<float> dy = fgt::gaussian(n * out, 14), dx(n * in, 0.0f);
  ASSERT_EQ(FG_OK, fg_lora_backward(l, nullptr, x.data(), n, &seed, dy.data(), dx.data(), nullptr));
  std::vector<float> ga1 = std::vector<float>(l->a->grad, l->a->grad + l->a->numel);
  ASSERT_EQ(FG_OK, fg_tensor_grad_zero(l->a, nullptr));
  ASSERT_EQ(FG_OK, fg_tensor_grad_zero(l->b, nullptr));
  std::vector<float> dx2(n * in, 0.0f);
  ASSERT_EQ(FG_OK, fg_lora_backward(l, nullptr, xm.data(), n, nullptr, dy.data(), dx2.data(), nullptr));
  EXPECT_EQ(0, std::memcmp(ga1.data(), l->a->grad, ga1.size() * 4));
  for (size_t i = 0; i < dx.size(); i++) {
    if (!mask[i]) EXPECT_EQ(0.0f, dx[i]) << i;
    else EXPECT_EQ(fgt::f32_bits_of(dx2[i] * inv), fgt::f32_bits_of(dx[i])) << i;
  }
  fg_lora_free(l);
}

// Gradients added into A->grad and B->grad, and dx, against central differences of
// loss = sum(y * dy) through the library's own forward (the loss is linear in each of A, B
// and x, so the differences are exact up to rounding), and against a dense f64 reference.
TEST(Lora, BackwardMatchesFiniteDifferencesAndAddsIntoGradients) {
  Cpu c;
  const uint64_t in = 10, out = 7, n = 4;
  const uint32_t r = 3;
  fg_lora *l = make(c.dev, in, out, r, 6.0f, 0.0f, 21);
  std::vector<float> b = fgt::gaussian(out * r, 22, 0.5f);
  fgt::lora_set(l->b, b);
  std::vector<float> a = fgt::lora_download(l->a);
  std::vector<float> x = fgt::gaussian(n * in, 23), w = fgt::gaussian(out * in, 24), dy = fgt::gaussian(n * out, 25);
  fg_tensor *wt = fgt::lora_tensor(c.dev, "w", FG_F32, out, in, w);
  auto loss = [&](const std::vector<float> &xv) {
    std::vector<float> y(n * out);
    EXPECT_EQ(FG_OK, fg_lora_forward(l, wt, xv.data(), n, nullptr, y.data(), nullptr));
    double s = 0;
    for (size_t i = 0; i < y.size(); i++) s += (double)y[i] * dy[i];
    return s;
  };
  std::vector<float> dx(n * in, 123.0f); /* overwritten: a base is given */
  ASSERT_EQ(FG_OK, fg_lora_backward(l, wt, x.data(), n, nullptr, dy.data(), dx.data(), nullptr));
  std::vector<float> ga(l->a->grad, l->a->grad + l->a->numel), gb(l->b->grad, l->b->grad + l->b->numel);
  fgt::LoraRef R = fgt::lora_ref(x, w, a, b, dy, n, in, out, r, l->scale);
  fgt::lora_expect_close(ga, R.ga, 1e-5, "dA");
  fgt::lora_expect_close(gb, R.gb, 1e-5, "dB");
  fgt::lora_expect_close(dx, R.dx, 1e-5, "dx");
  const float eps = 0.25f;
  for (size_t i = 0; i < a.size(); i += 3) {
    float *ap = (float *)l->a->data;
    const float keep = ap[i];
    ap[i] = keep + eps;
    double up = loss(x);
    ap[i] = keep - eps;
    double dn = loss(x);
    ap[i] = keep;
    EXPECT_NEAR((up - dn) / (2 * eps), ga[i], 1e-3 * (1 + std::fabs(ga[i]))) << "A " << i;
  }
  for (size_t i = 0; i < b.size(); i += 2) {
    float *bp = (float *)l->b->data;
    const float keep = bp[i];
    bp[i] = keep + eps;
    double up = loss(x);
    bp[i] = keep - eps;
    double dn = loss(x);
    bp[i] = keep;
    EXPECT_NEAR((up - dn) / (2 * eps), gb[i], 1e-3 * (1 + std::fabs(gb[i]))) << "B " << i;
  }
  for (size_t i = 0; i < x.size(); i += 3) {
    std::vector<float> xp = x, xm = x;
    xp[i] += eps;
    xm[i] -= eps;
    EXPECT_NEAR((loss(xp) - loss(xm)) / (2 * eps), dx[i], 1e-3 * (1 + std::fabs(dx[i]))) << "x " << i;
  }
  // A second backward adds: the gradients double; without a base dx receives only the adapter's part.
  std::vector<float> dx2(n * in, 0.0f);
  ASSERT_EQ(FG_OK, fg_lora_backward(l, nullptr, x.data(), n, nullptr, dy.data(), dx2.data(), nullptr));
  for (size_t i = 0; i < ga.size(); i++) EXPECT_NEAR(2 * ga[i], l->a->grad[i], 1e-5 * (1 + std::fabs(ga[i])));
  for (size_t i = 0; i < gb.size(); i++) EXPECT_NEAR(2 * gb[i], l->b->grad[i], 1e-5 * (1 + std::fabs(gb[i])));
  std::vector<float> base_dx(n * in, 0.0f);
  for (uint64_t s = 0; s < n; s++)
    for (uint64_t i = 0; i < in; i++)
      for (uint64_t o = 0; o < out; o++) base_dx[s * in + i] += dy[s * out + o] * w[o * in + i];
  for (size_t i = 0; i < dx.size(); i++) EXPECT_NEAR(dx[i] - base_dx[i], dx2[i], 1e-4 * (1 + std::fabs(dx[i])));
  // dx NULL: the weights' gradients alone.
  ASSERT_EQ(FG_OK, fg_lora_backward(l, wt, x.data(), n, nullptr, dy.data(), nullptr, nullptr));
  fg_tensor_free(wt);
  fg_lora_free(l);
}

TEST(Lora, RegistersWithAnOptimizerUnderItsNames) {
  Cpu c;
  fg_lora *l = make(c.dev, 8, 6, 2, 4.0f, 0.0f, 31);
  fg_optim_config oc = fg_optim_defaults(FG_OPTIM_ADAMW);
  oc.lr = 0.1f;
  fg_optim *o = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_create(c.dev, &oc, &o));
  ASSERT_EQ(FG_OK, fg_lora_register(l, o, "layers.2.v")) << fg_last_error();
  ASSERT_EQ(2u, fg_optim_count(o));
  EXPECT_STREQ("layers.2.v.lora_a", fg_optim_name_at(o, 0));
  EXPECT_STREQ("layers.2.v.lora_b", fg_optim_name_at(o, 1));
  EXPECT_NE(FG_OK, fg_lora_register(l, o, "layers.2.v")); /* twice: refused, nothing added */
  EXPECT_EQ(2u, fg_optim_count(o));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lora_register(l, o, ""));
  // One training step: B leaves zero, so the adapter's delta does too.
  std::vector<float> x = fgt::gaussian(3 * 8, 32), dy = fgt::gaussian(3 * 6, 33);
  ASSERT_EQ(FG_OK, fg_lora_backward(l, nullptr, x.data(), 3, nullptr, dy.data(), nullptr, nullptr));
  ASSERT_EQ(FG_OK, fg_optim_step(o, nullptr));
  bool moved = false;
  for (float v : fgt::lora_download(l->b)) moved |= v != 0.0f;
  EXPECT_TRUE(moved);
  char names[2][FG_LORA_NAME_MAX];
  fg_registry_entry rows[2];
  ASSERT_EQ(FG_OK, fg_lora_registry_entries(l, "layers.2.v", names, rows));
  EXPECT_STREQ("layers.2.v.lora_a", rows[0].name);
  EXPECT_EQ(l->b, rows[1].tensor);
  EXPECT_TRUE(rows[0].trainable && rows[1].trainable);
  fg_optim_free(o);
  fg_lora_free(l);
}

TEST(Lora, AdaptersSafetensorsRoundTrip) {
  Cpu c;
  fgt::TempDir d;
  const std::string path = d.file("adapters.safetensors");
  fg_lora *q = make(c.dev, 16, 8, 4, 8.0f, 0.0f, 1), *down = make(c.dev, 12, 16, 2, 8.0f, 0.0f, 2);
  fgt::lora_set(q->b, fgt::gaussian(8 * 4, 3));
  fgt::lora_set(down->b, fgt::gaussian(16 * 2, 4));
  fg_lora_slot set[2] = {{0, FG_LORA_Q, q}, {3, FG_LORA_DOWN, down}};
  ASSERT_EQ(FG_OK, fg_lora_save(path.c_str(), set, 2)) << fg_last_error();
  fg_st_file *f = nullptr;
  ASSERT_EQ(FG_OK, fg_st_open(path.c_str(), FG_MAP_READ, &f));
  EXPECT_EQ(4u, fg_st_count(f));
  for (const char *n : {"layers.0.q.lora_a", "layers.0.q.lora_b", "layers.3.down.lora_a", "layers.3.down.lora_b"})
    EXPECT_NE(nullptr, fg_st_find(f, n)) << n;
  const fg_st_tensor *t = fg_st_find(f, "layers.3.down.lora_b");
  ASSERT_NE(nullptr, t);
  EXPECT_EQ(FG_F32, t->dtype);
  EXPECT_EQ(16u, t->shape[0]);
  EXPECT_EQ(2u, t->shape[1]);
  EXPECT_EQ(0, std::memcmp(t->data, fgt::lora_download(down->b).data(), t->nbytes));
  fg_st_close(f);

  fg_lora *q2 = make(c.dev, 16, 8, 4, 8.0f, 0.0f, 99), *down2 = make(c.dev, 12, 16, 2, 8.0f, 0.0f, 98);
  fg_lora_slot set2[2] = {{3, FG_LORA_DOWN, down2}, {0, FG_LORA_Q, q2}};
  ASSERT_EQ(FG_OK, fg_lora_load(path.c_str(), set2, 2)) << fg_last_error();
  for (auto pr : {std::make_pair(q, q2), std::make_pair(down, down2)}) {
    EXPECT_EQ(0, std::memcmp(fgt::lora_download(pr.first->a).data(), fgt::lora_download(pr.second->a).data(),
                             pr.first->a->nbytes));
    EXPECT_EQ(0, std::memcmp(fgt::lora_download(pr.first->b).data(), fgt::lora_download(pr.second->b).data(),
                             pr.first->b->nbytes));
  }
  // Strict: a set without one of the file's adapters, or with a wrong shape, loads nothing.
  fg_lora *q3 = make(c.dev, 16, 8, 4, 8.0f, 0.0f, 77);
  std::vector<float> before = fgt::lora_download(q3->a);
  fg_lora_slot one[1] = {{0, FG_LORA_Q, q3}};
  EXPECT_EQ(FG_ERR_NOT_FOUND, fg_lora_load(path.c_str(), one, 1));
  EXPECT_EQ(0, std::memcmp(before.data(), fgt::lora_download(q3->a).data(), before.size() * 4));
  fg_lora *wrong = make(c.dev, 16, 8, 2, 8.0f, 0.0f, 77);
  fg_lora_slot bad[2] = {{0, FG_LORA_Q, wrong}, {3, FG_LORA_DOWN, down2}};
  EXPECT_EQ(FG_ERR_BAD_SHAPE, fg_lora_load(path.c_str(), bad, 2));
  fg_lora_slot dup[2] = {{0, FG_LORA_Q, q}, {0, FG_LORA_Q, q2}};
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_lora_save(d.file("dup.safetensors").c_str(), dup, 2));
  fg_lora_slot unk[1] = {{0, (fg_lora_target)9, q}};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lora_save(d.file("unk.safetensors").c_str(), unk, 1));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lora_save(d.file("none.safetensors").c_str(), set, 0));
  EXPECT_STREQ("gate", fg_lora_target_name(FG_LORA_GATE));
  EXPECT_EQ(nullptr, fg_lora_target_name(FG_LORA_TARGET_COUNT));
  for (fg_lora *l : {q, down, q2, down2, q3, wrong}) fg_lora_free(l);
}

// ---- PEFT ----------------------------------------------------------------------------------

namespace {

struct PeftCase {
  std::string name;
  uint64_t in = 0, out = 0, n = 0;
  uint32_t r = 0;
  float alpha = 0, scale = 0;
  std::vector<float> x, w, a, b, dy, y, dx, ga, gb, merged;
};

float hexf(const std::string &h) {
  uint32_t u = (uint32_t)std::stoul(h, nullptr, 16);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<PeftCase> peft_cases() {
  std::ifstream f(std::string(FORGIA_TEST_DATA) + "/golden/peft_lora.txt");
  EXPECT_TRUE(f.good()) << "tests/data/golden/peft_lora.txt";
  std::vector<PeftCase> v;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string tag, word;
    ss >> tag;
    if (tag == "case") {
      PeftCase c;
      ss >> c.name;
      while (ss >> word) {
        const size_t eq = word.find('=');
        const std::string k = word.substr(0, eq), val = word.substr(eq + 1);
        if (k == "in") c.in = std::stoull(val);
        if (k == "out") c.out = std::stoull(val);
        if (k == "r") c.r = (uint32_t)std::stoul(val);
        if (k == "batch") c.n = std::stoull(val);
        if (k == "alpha") c.alpha = std::stof(val);
        if (k == "scale") c.scale = hexf(val);
      }
      v.push_back(c);
      continue;
    }
    std::vector<float> vals;
    while (ss >> word) vals.push_back(hexf(word));
    PeftCase &c = v.back();
    std::vector<float> *dst = tag == "x" ? &c.x : tag == "w" ? &c.w : tag == "a" ? &c.a : tag == "b" ? &c.b
                            : tag == "dy" ? &c.dy : tag == "y" ? &c.y : tag == "dx" ? &c.dx : tag == "ga" ? &c.ga
                            : tag == "gb" ? &c.gb : &c.merged;
    *dst = vals;
  }
  return v;
}

}  // namespace

TEST(Lora, ForwardBackwardAndMergeMatchPeft) {
  Cpu c;
  std::vector<PeftCase> cases = peft_cases();
  ASSERT_EQ(4u, cases.size());
  for (const PeftCase &k : cases) {
    SCOPED_TRACE(k.name);
    fg_lora *l = make(c.dev, k.in, k.out, k.r, k.alpha, 0.0f, 1);
    ASSERT_NE(nullptr, l);
    EXPECT_EQ(fgt::f32_bits_of(k.scale), fgt::f32_bits_of(l->scale)); /* alpha / r, as PEFT */
    fgt::lora_set(l->a, k.a);
    fgt::lora_set(l->b, k.b);
    fg_tensor *w = fgt::lora_tensor(c.dev, "lin.weight", FG_F32, k.out, k.in, k.w);
    std::vector<float> y(k.n * k.out), dx(k.n * k.in);
    ASSERT_EQ(FG_OK, fg_lora_forward(l, w, k.x.data(), k.n, nullptr, y.data(), nullptr));
    fgt::lora_expect_close(y, fgt::widen(k.y), 1e-5, "y");
    ASSERT_EQ(FG_OK, fg_lora_backward(l, w, k.x.data(), k.n, nullptr, k.dy.data(), dx.data(), nullptr));
    fgt::lora_expect_close(dx, fgt::widen(k.dx), 1e-5, "dx");
    fgt::lora_expect_close(std::vector<float>(l->a->grad, l->a->grad + l->a->numel), fgt::widen(k.ga), 1e-5, "dA");
    fgt::lora_expect_close(std::vector<float>(l->b->grad, l->b->grad + l->b->numel), fgt::widen(k.gb), 1e-5, "dB");
    ASSERT_EQ(FG_OK, fg_lora_merge_into(l, w, nullptr));
    fgt::lora_expect_close(fgt::lora_download(w), fgt::widen(k.merged), 1e-5, "merged");
    fg_tensor_free(w);
    fg_lora_free(l);
  }
}
