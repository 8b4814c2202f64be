// One case per row of the kernel-family table (device/family_table.h), and through the op
// family one per row of the op table (forgia/elem/op_table.h), generated from the tables:
// a case runs its family on a device through the public API and returns every byte it
// wrote, and computes the same bytes with a scalar loop over the elem/ functions. The CPU
// suite compares the CPU at several thread counts with the scalar loop, the CUDA suite the
// CPU with CUDA, all with memcmp (tests/cpu/test_families.cpp, tests/cuda/test_cuda_families.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/family_table.h"
#include "forgia/elem/attention.h"
#include "forgia/elem/attention_bwd.h"
#include "forgia/elem/embed.h"
#include "forgia/elem/es_trits.h"
#include "forgia/elem/linear.h"
#include "forgia/elem/op_apollo.h"
#include "forgia/elem/op_table.h"
#include "forgia/elem/rmsnorm.h"
#include "forgia/elem/softmax.h"
#include "forgia/elem/rope.h"
#include "forgia/forgia.h"
#include "gemm_ref.h"
#include "op_harness.h"
#include "reduce_ref.h"
#include "testutil.h"

namespace fgt {

using Bytes = std::vector<uint8_t>;

// Device memory holding a copy of host bytes, freed at scope exit.
struct DevBuf {
  fg_device *dev = nullptr;
  void *p = nullptr;
  size_t n = 0;
  DevBuf(fg_device *d, const void *src, size_t bytes) : dev(d), n(bytes) {
    EXPECT_EQ(FG_OK, fg_device_mem_alloc(dev, bytes ? bytes : 1, &p)) << fg_last_error();
    if (bytes && src) {
      EXPECT_EQ(FG_OK, fg_device_copy(dev, p, src, bytes, FG_COPY_H2D)) << fg_last_error();
    }
  }
  DevBuf(fg_device *d, const Bytes &b) : DevBuf(d, b.data(), b.size()) {}
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  ~DevBuf() { fg_device_mem_free(dev, p); }
  Bytes read() const {
    Bytes out(n);
    if (n) {
      EXPECT_EQ(FG_OK, fg_device_copy(dev, out.data(), p, n, FG_COPY_D2H)) << fg_last_error();
    }
    return out;
  }
  template <class T> T *as() const { return (T *)p; }
};

template <class T> inline Bytes to_bytes(const std::vector<T> &v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
inline void append(Bytes &dst, const Bytes &src) { dst.insert(dst.end(), src.begin(), src.end()); }

struct FamilyCase {
  std::string name;
  std::function<Bytes(fg_device *)> run;
  std::function<Bytes()> ref;
};

// ---- the op family: every row of the op table, with its stream dtypes from the table ----

struct OpRow {
  fg_op_kind op;
  const char *name;
  unsigned W, ns, rm, wm, dts;
  void (*fn)(const fg_op_params *, fg_op_vals *, uint64_t, uint64_t);
};

inline const std::vector<OpRow> &op_rows() {
  static const std::vector<OpRow> rows = {
#define FGT_OP_ROW_(E, id, name, W, ns, rm, wm, dts) {FG_OP_##E, #name, W, ns, rm, wm, dts, fg_op_##name},
      FG_OP_TABLE(FGT_OP_ROW_)
#undef FGT_OP_ROW_
  };
  return rows;
}

// Sizes that give one element, odd tails, several chunks of the launchers (32768) and odd
// RNG windows (index0 of every other tensor is odd, so W = 2 pairs straddle tensor starts).
inline std::vector<size_t> op_sizes() { return {1, 7, 33, 40001}; }

// The scalars every op gets: each op reads the slots it documents. u[0] is 3, which is the
// ES update's stream count (its table has 3 streams per row), SGD-momentum's flags
// (nesterov, first step) and a valid divisor for muon_eye; u[1] the ES ops' parameter dtype.
inline fg_op_params op_generic_params(fg_dtype stream0) {
  fg_op_params p;
  std::memset(&p, 0, sizeof p);
  const float f[8] = {0.9f, 0.1f, 0.999f, 0.001f, 2.5e-3f, 0.97f, 1e-6f, 0.05f};
  std::memcpy(p.f, f, sizeof f);
  p.d[0] = -0.5, p.d[1] = 2.0, p.d[2] = 0.25, p.d[3] = 3.0;
  p.u[0] = 3, p.u[1] = (uint64_t)stream0, p.u[2] = 5, p.u[3] = 7;
  return p;
}

// The ES update's stream table: coef[3] then 3 seeds for each of rows rows.
inline Bytes op_es_table(size_t rows) {
  const uint64_t S = 3;
  Bytes t((size_t)fg_es_table_bytes(S, rows), 0);
  const float coef[3] = {0.75f, -1.25f, 0.5f};
  std::memcpy(t.data(), coef, sizeof coef);
  uint64_t *seeds = (uint64_t *)(t.data() + 8 * ((S + 1) / 2));
  for (size_t i = 0; i < rows * S; i++) seeds[i] = 0x9e3779b97f4a7c15ull * (i + 1);
  return t;
}

inline fg_dtype op_stream_dtype(unsigned set, fg_dtype fd) {
  return set == FG_OP_DT_FLOAT ? fd : set == FG_OP_DT_MASK ? FG_U8 : FG_F32;
}

// The launchers' contract by its definition: W = 2 groups are pairs on even counters; a
// group's lanes outside the tensor are neither loaded nor stored.
inline void op_scalar(const OpRow &r, const fg_op_params &P, fg_dtype *dt, OpTensor &t) {
  const long long n = (long long)t.n;
  long long i = 0;
  while (i < n) {
    const long long start = (r.W == 2 && ((t.index0 + (uint64_t)i) & 1u)) ? i - 1 : i;
    fg_op_vals v[2];
    std::memset(v, 0, sizeof v);
    for (unsigned w = 0; w < r.W; w++) {
      const long long j = start + w;
      if (j < 0 || j >= n) continue;
      for (unsigned k = 0; k < r.ns; k++)
        if (r.rm >> k & 1u) v[w][k] = fg_op_load(t.s[k].data(), dt[k], (size_t)j);
    }
    r.fn(&P, v, t.seed, t.index0 + (uint64_t)start);
    for (unsigned w = 0; w < r.W; w++) {
      const long long j = start + w;
      if (j < 0 || j >= n) continue;
      for (unsigned k = 0; k < r.ns; k++)
        if (r.wm >> k & 1u) fg_op_store(t.s[k].data(), dt[k], (size_t)j, v[w][k]);
    }
    i = start + r.W;
  }
}

inline std::vector<OpTensor> op_row_inputs(const OpRow &r, fg_dtype *dt, uint64_t seed) {
  const std::vector<size_t> sizes = op_sizes();
  std::vector<OpTensor> list(sizes.size());
  for (size_t t = 0; t < sizes.size(); t++) {
    list[t].n = sizes[t];
    list[t].seed = t;  // also the ES update's row in its table
    list[t].index0 = (t % 2) ? 12345 + t : 0;
    for (unsigned k = 0; k < r.ns; k++)
      if (FG_OP_DT_OF(r.dts, k) != FG_OP_DT_NONE)
        list[t].s[k] = op_stream_values(dt[k], sizes[t], seed + 31 * t + k, k == 3 ? 0.01f : 1.0f, k == 3);
  }
  return list;
}

// Every op, every float dtype of its float streams: one case each.
inline std::vector<FamilyCase> op_family_cases() {
  std::vector<FamilyCase> out;
  for (const OpRow &r : op_rows()) {
    for (fg_dtype fd : {FG_F32, FG_F16, FG_BF16}) {
      std::vector<fg_dtype> dt(FG_OP_MAX_STREAMS, FG_F32);
      for (unsigned k = 0; k < r.ns; k++) dt[k] = op_stream_dtype(FG_OP_DT_OF(r.dts, k), fd);
      const uint64_t seed = 1000u * (unsigned)r.op + (unsigned)fd;
      FamilyCase c;
      c.name = std::string("op ") + r.name + " " + fg_dtype_name(fd);
      c.ref = [r, dt, seed]() {
        std::vector<fg_dtype> d = dt;
        std::vector<OpTensor> list = op_row_inputs(r, d.data(), seed);
        fg_op_params P = op_generic_params(d[0]);
        const double dscalar = 2.25;
        Bytes table = op_es_table(list.size());
        P.dscalar = &dscalar;
        P.dtable = table.data();
        Bytes all;
        for (OpTensor &t : list) {
          op_scalar(r, P, d.data(), t);
          for (unsigned k = 0; k < r.ns; k++) append(all, t.s[k]);
        }
        return all;
      };
      c.run = [r, dt, seed](fg_device *dev) {
        std::vector<fg_dtype> d = dt;
        std::vector<OpTensor> list = op_row_inputs(r, d.data(), seed);
        OpCase oc;
        std::memset(&oc, 0, sizeof oc);
        oc.op = r.op;
        oc.nstreams = r.ns;
        for (unsigned k = 0; k < FG_OP_MAX_STREAMS; k++) oc.dt[k] = d[k];
        oc.p = op_generic_params(d[0]);
        const double dscalar = 2.25;
        DevBuf ds(dev, &dscalar, sizeof dscalar);
        DevBuf table(dev, op_es_table(list.size()));
        oc.p.dscalar = ds.as<double>();
        oc.p.dtable = table.p;
        std::vector<OpTensor> res = op_run_on(dev, oc, list);
        Bytes all;
        for (OpTensor &t : res)
          for (unsigned k = 0; k < r.ns; k++) append(all, t.s[k]);
        return all;
      };
      out.push_back(c);
    }
  }
  return out;
}

// ---- reductions ----

inline Bytes float_values(fg_dtype d, size_t n, uint64_t seed) { return op_stream_values(d, n, seed, 3.0f, false); }

inline std::vector<FamilyCase> reduce_family_cases() {
  std::vector<FamilyCase> out;
  const std::vector<size_t> sizes = {0, 5, 16, 33, 32768, 32769, 100003};
  const fg_dtype types[] = {FG_F32, FG_F16, FG_BF16};
  for (int op = 0; op < FG_REDUCE_OP_COUNT; op++) {
    auto inputs = [sizes, types](uint64_t salt) {
      std::vector<Bytes> xs;
      for (size_t t = 0; t < sizes.size(); t++) xs.push_back(float_values(types[t % 3], sizes[t], 77 + t + salt));
      return xs;
    };
    FamilyCase c;
    c.name = std::string("reduce ") + fg_reduce_op_name((fg_reduce_op)op);
    c.ref = [=]() {
      std::vector<Bytes> xs = inputs((uint64_t)op);
      std::vector<double> per;
      for (size_t t = 0; t < xs.size(); t++) per.push_back(ref_tensor((fg_reduce_op)op, ref_widen(types[t % 3], xs[t])));
      Bytes all = to_bytes(per);
      append(all, to_bytes(std::vector<double>{ref_total((fg_reduce_op)op, per)}));
      return all;
    };
    c.run = [=](fg_device *dev) {
      std::vector<Bytes> xs = inputs((uint64_t)op);
      std::vector<std::unique_ptr<DevBuf>> bufs;
      std::vector<const void *> ptrs;
      std::vector<fg_dtype> dts;
      std::vector<size_t> ns;
      for (size_t t = 0; t < xs.size(); t++) {
        bufs.emplace_back(new DevBuf(dev, xs[t]));
        ptrs.push_back(bufs.back()->p);
        dts.push_back(types[t % 3]);
        ns.push_back(sizes[t]);
      }
      DevBuf per(dev, nullptr, xs.size() * 8), total(dev, nullptr, 8);
      EXPECT_EQ(FG_OK, fg_reduce_list(dev, (fg_reduce_op)op, ptrs.data(), dts.data(), ns.data(), xs.size(),
                                      per.as<double>(), total.as<double>(), nullptr))
          << fg_last_error();
      Bytes all = per.read();
      append(all, total.read());
      return all;
    };
    out.push_back(c);
  }
  return out;
}

inline std::vector<FamilyCase> sum_f64_family_cases() {
  FamilyCase c;
  c.name = "sum_f64";
  auto values = []() {
    std::vector<double> v;
    for (float f : gaussian(37, 5, 1e3f)) v.push_back((double)f * 1.0000001);
    v[3] = 1e300, v[4] = -1e300, v[9] = 1e-310;
    return v;
  };
  c.ref = [=]() {
    double t = 0.0;
    for (double x : values()) t = t + x;
    return to_bytes(std::vector<double>{t});
  };
  c.run = [=](fg_device *dev) {
    std::vector<double> v = values();
    DevBuf x(dev, to_bytes(v)), out(dev, nullptr, 8);
    EXPECT_EQ(FG_OK, fg_reduce_f64_sum(dev, x.as<double>(), v.size(), out.as<double>(), nullptr)) << fg_last_error();
    return out.read();
  };
  return {c};
}

// ---- GEMM, exact mode (the fast mode is BLAS's, tested with a tolerance elsewhere) ----

inline std::vector<FamilyCase> gemm_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    bool ta, tb;
    size_t m, n, k;
    fg_dtype at, bt;
    float alpha, beta;
  };
  const Shape shapes[] = {{false, false, 37, 29, 65, FG_F32, FG_F32, 1.0f, 0.0f},
                          {true, false, 64, 33, 130, FG_BF16, FG_F32, 0.5f, 0.25f},
                          {false, true, 5, 70, 17, FG_F32, FG_BF16, -1.5f, 1.0f},
                          {true, true, 48, 48, 300, FG_BF16, FG_BF16, 1.0f, -0.5f}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 900 + (uint64_t)idx++;
    const size_t ar = s.ta ? s.k : s.m, ac = s.ta ? s.m : s.k, br = s.tb ? s.n : s.k, bc = s.tb ? s.k : s.n;
    auto operands = [=]() {
      return std::make_pair(Operand(s.at, ar, ac, ac + 3, seed), Operand(s.bt, br, bc, bc + 1, seed + 50));
    };
    auto c0 = [=]() { return gaussian(s.m * (s.n + 2), seed + 99); };
    FamilyCase c;
    c.name = "gemm exact " + std::to_string(idx);
    c.ref = [=]() {
      auto ab = operands();
      std::vector<float> cm = c0();
      ref_gemm(s.ta, s.tb, s.m, s.n, s.k, s.alpha, ab.first, ab.second, s.beta, cm.data(), s.n + 2);
      return to_bytes(cm);
    };
    c.run = [=](fg_device *dev) {
      auto ab = operands();
      DevBuf a(dev, ab.first.data(), ab.first.bytes()), b(dev, ab.second.data(), ab.second.bytes());
      DevBuf cm(dev, to_bytes(c0()));
      EXPECT_EQ(FG_OK, fg_gemm(dev, FG_GEMM_EXACT, s.ta, s.tb, s.m, s.n, s.k, s.alpha, a.p, s.at, ac + 3, b.p, s.bt,
                               bc + 1, s.beta, cm.as<float>(), s.n + 2, nullptr))
          << fg_last_error();
      return cm.read();
    };
    out.push_back(c);
  }
  return out;
}

// ---- APOLLO's projection: scaling, build, limit, for each layout ----

inline std::vector<FamilyCase> apollo_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    fg_apollo_layout layout;
    size_t rows, cols, rank;
  };
  const Shape shapes[] = {{FG_APOLLO_LAYOUT_TALL, 300, 40, 8}, {FG_APOLLO_LAYOUT_WIDE, 24, 513, 4},
                          {FG_APOLLO_LAYOUT_WHOLE, 64, 96, 1}};
  for (const Shape &s : shapes) {
    const size_t ch = s.rows >= s.cols ? s.rows : s.cols;
    const size_t nch = s.layout == FG_APOLLO_LAYOUT_TALL ? s.rows : s.layout == FG_APOLLO_LAYOUT_WIDE ? s.cols : 1;
    const size_t rn = ch * s.rank, n = s.rows * s.cols;
    auto pos = [](std::vector<float> v) {
      for (float &x : v) x = std::fabs(x);
      return v;
    };
    auto m = [=]() { return gaussian(rn, 11 + s.layout); };
    auto v = [=]() { return pos(gaussian(rn, 12 + s.layout, 0.01f)); };
    auto r = [=]() { return gaussian(rn, 13 + s.layout); };
    auto g = [=]() { return gaussian(n, 14 + s.layout); };
    const float eps = 1e-6f, front = 1.25f, prev0 = 0.5f;
    const double sumsq = 3.75;
    FamilyCase c;
    c.name = "apollo layout " + std::to_string((int)s.layout);
    c.ref = [=]() {
      std::vector<float> M = m(), V = v(), R = r(), G = g(), scaling(nch), u(n);
      for (size_t k = 0; k < nch; k++) {
        size_t first, count, stride;
        fg_apollo_channel_span((int)s.layout, s.rows, s.cols, s.rank, k, &first, &count, &stride);
        scaling[k] = fg_apollo_channel_factor(M.data(), V.data(), R.data(), first, count, stride, eps);
      }
      for (size_t i = 0; i < n; i++) u[i] = fg_apollo_build_at((int)s.layout, G.data(), scaling.data(), s.cols, i, front);
      float prev = prev0;
      const double lim = (double)fg_apollo_limit_eval(sumsq, &prev);
      Bytes all = to_bytes(scaling);
      append(all, to_bytes(u));
      append(all, to_bytes(std::vector<float>{prev}));
      append(all, to_bytes(std::vector<double>{lim}));
      return all;
    };
    c.run = [=](fg_device *dev) {
      DevBuf M(dev, to_bytes(m())), V(dev, to_bytes(v())), R(dev, to_bytes(r())), G(dev, to_bytes(g()));
      DevBuf scaling(dev, nullptr, nch * 4), u(dev, nullptr, n * 4);
      DevBuf ss(dev, &sumsq, 8), prev(dev, &prev0, 4), lim(dev, nullptr, 8);
      EXPECT_EQ(FG_OK, fg_apollo_scaling(dev, s.layout, s.rows, s.cols, s.rank, M.as<float>(), V.as<float>(),
                                         R.as<float>(), eps, scaling.as<float>(), nullptr))
          << fg_last_error();
      EXPECT_EQ(FG_OK, fg_apollo_build(dev, s.layout, s.rows, s.cols, G.as<float>(), scaling.as<float>(), front,
                                       u.as<float>(), nullptr))
          << fg_last_error();
      EXPECT_EQ(FG_OK, fg_apollo_limit(dev, ss.as<double>(), prev.as<float>(), lim.as<double>(), nullptr))
          << fg_last_error();
      Bytes all = scaling.read();
      append(all, u.read());
      append(all, prev.read());
      append(all, lim.read());
      return all;
    };
    out.push_back(c);
  }
  return out;
}

// ---- ES trit flips: flips with their log, moves, then the undo of the flips ----

inline std::vector<FamilyCase> es_trits_family_cases() {
  const uint64_t len = 3 * FG_TRIT_BLOCK_ELEMS, flips = 500, moves = 300, seed = 0xabcdef12345ull;
  auto genome = [=]() {
    Bytes b(3 * FG_TRIT_BLOCK_BYTES);
    for (size_t i = 0; i < b.size(); i++) b[i] = (uint8_t)(0x55u ^ (i * 37u));  // codes 1 and others
    for (uint64_t e = 0; e < len; e++)
      if (fg_trit_get(b.data(), e) == 3) fg_trit_set(b.data(), e, 2);  // no invalid code
    return b;
  };
  auto move_idx = [=]() {
    std::vector<uint64_t> idx;
    for (uint64_t j = 0; j < moves; j++) idx.push_back((j * 7919u) % (len + 3));  // some out of range
    return idx;
  };
  auto move_dir = [=]() {
    std::vector<int8_t> d;
    for (uint64_t j = 0; j < moves; j++) d.push_back((int8_t)((j % 3) - 1));
    return d;
  };
  // Distinct elements for the moves (the API's contract), the out-of-range ones skipped.
  FamilyCase c;
  c.name = "es_trits flip, move, undo";
  c.ref = [=]() {
    Bytes b = genome();
    std::vector<uint64_t> li(flips), idx = move_idx();
    std::vector<uint8_t> lc(flips);
    std::vector<int8_t> dir = move_dir();
    fg_trit_flips(b.data(), len, seed, flips, 1, li.data(), lc.data());
    Bytes all = b;
    for (uint64_t j = 0; j < moves; j++) {
      if (idx[j] >= len) continue;
      uint8_t *p = b.data() + fg_trit_byte(idx[j]);
      *p = fg_trit_moved_byte(*p, idx[j], dir[j]);
    }
    append(all, b);
    fg_trit_undo(b.data(), len, li.data(), lc.data(), flips);
    append(all, b);
    append(all, to_bytes(li));
    append(all, to_bytes(std::vector<uint8_t>(lc)));
    return all;
  };
  c.run = [=](fg_device *dev) {
    DevBuf b(dev, genome()), li(dev, nullptr, flips * 8), lc(dev, nullptr, flips);
    DevBuf idx(dev, to_bytes(move_idx())), dir(dev, to_bytes(move_dir()));
    EXPECT_EQ(FG_OK, fg_es_trits_flip(dev, b.as<uint8_t>(), len, seed, flips, true, li.as<uint64_t>(), lc.as<uint8_t>(),
                                      nullptr))
        << fg_last_error();
    Bytes all = b.read();
    EXPECT_EQ(FG_OK, fg_es_trits_move(dev, b.as<uint8_t>(), len, idx.as<uint64_t>(), dir.as<int8_t>(), moves, nullptr))
        << fg_last_error();
    append(all, b.read());
    EXPECT_EQ(FG_OK, fg_es_trits_undo(dev, b.as<uint8_t>(), len, li.as<uint64_t>(), lc.as<uint8_t>(), flips, nullptr))
        << fg_last_error();
    append(all, b.read());
    append(all, li.read());
    append(all, lc.read());
    return all;
  };
  return {c};
}

// ---- RMSNorm forward and backward ----

inline std::vector<FamilyCase> rmsnorm_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    size_t rows, cols;
    fg_dtype xt, wt;
    float offset;
  };
  const Shape shapes[] = {{1, 1, FG_F32, FG_F32, 0.0f},     {3, 31, FG_F16, FG_F32, 0.0f},
                          {17, 576, FG_BF16, FG_BF16, 1.0f}, {300, 640, FG_F32, FG_F16, 0.0f},
                          {2, 4099, FG_BF16, FG_F32, 1.0f}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 500 + 10 * (uint64_t)idx++;
    const size_t n = s.rows * s.cols;
    const float eps = 1e-6f;
    auto x = [=]() { return op_stream_values(s.xt, n, seed, 2.0f, false, false); };
    auto w = [=]() { return op_stream_values(s.wt, s.cols, seed + 1, 0.5f, false, false); };
    auto dy = [=]() { return gaussian(n, seed + 2); };
    FamilyCase c;
    c.name = "rmsnorm " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
    c.ref = [=]() {
      Bytes X = x(), Wt = w();
      std::vector<float> DY = dy(), y(n), rstd(s.rows), dx(n), dw(s.cols);
      for (size_t r = 0; r < s.rows; r++) {
        double lanes[FG_ROW_LANES] = {0}, dl[FG_ROW_LANES] = {0};
        for (size_t i = 0; i < s.cols; i++) {
          const double v = (double)fg_row_load(X.data(), s.xt, r * s.cols + i);
          lanes[i % FG_ROW_LANES] = lanes[i % FG_ROW_LANES] + v * v;
        }
        rstd[r] = fg_rmsnorm_rstd(fg_row_fold(lanes), s.cols, eps);
        for (size_t i = 0; i < s.cols; i++) {
          const float xi = fg_row_load(X.data(), s.xt, r * s.cols + i), wi = fg_row_load(Wt.data(), s.wt, i);
          y[r * s.cols + i] = fg_rmsnorm_y(xi, rstd[r], wi, s.offset);
          dl[i % FG_ROW_LANES] = dl[i % FG_ROW_LANES] + fg_rmsnorm_dot_term(xi, DY[r * s.cols + i], wi, s.offset);
        }
        const double coef = fg_rmsnorm_coef(fg_row_fold(dl), s.cols, rstd[r]);
        for (size_t i = 0; i < s.cols; i++) {
          const float xi = fg_row_load(X.data(), s.xt, r * s.cols + i), wi = fg_row_load(Wt.data(), s.wt, i);
          dx[r * s.cols + i] = fg_rmsnorm_dx(xi, DY[r * s.cols + i] * (wi + s.offset), rstd[r], coef);
        }
      }
      for (size_t i = 0; i < s.cols; i++) {
        double acc = 0.0;
        for (size_t r = 0; r < s.rows; r++)
          acc = acc + fg_rmsnorm_dw_term(fg_row_load(X.data(), s.xt, r * s.cols + i), DY[r * s.cols + i], rstd[r]);
        dw[i] = (float)acc;
      }
      Bytes all = to_bytes(y);
      for (const auto *v : {&rstd, &dx, &dw}) append(all, to_bytes(*v));
      return all;
    };
    c.run = [=](fg_device *dev) {
      DevBuf X(dev, x()), Wt(dev, w()), DY(dev, to_bytes(dy()));
      DevBuf y(dev, nullptr, n * 4), rstd(dev, nullptr, s.rows * 4), dx(dev, nullptr, n * 4), dw(dev, nullptr, s.cols * 4);
      EXPECT_EQ(FG_OK, fg_rmsnorm_forward(dev, X.p, s.xt, Wt.p, s.wt, s.rows, s.cols, eps, s.offset, y.as<float>(),
                                          rstd.as<float>(), nullptr))
          << fg_last_error();
      EXPECT_EQ(FG_OK, fg_rmsnorm_backward(dev, X.p, s.xt, Wt.p, s.wt, s.rows, s.cols, s.offset, rstd.as<float>(),
                                           DY.as<float>(), dx.as<float>(), dw.as<float>(), nullptr))
          << fg_last_error();
      Bytes all = y.read();
      for (const DevBuf *b : {&rstd, &dx, &dw}) append(all, b->read());
      return all;
    };
    out.push_back(c);
  }
  return out;
}

// ---- Attention: GQA, windows, several sequences, out-of-range tokens, a span past CUDA's tile ----

// The forward by the contract's loop over the elem functions: a's out and lse.
inline void attention_scalar_forward(const fg_attention_call &a) {
  std::vector<float> sc(a.n_ctx);
  const size_t D = a.head_dim;
  for (size_t t = 0; t < a.n_tok; t++)
    for (size_t h = 0; h < a.n_head; h++) {
      const size_t row = t * a.n_head + h;
      size_t lo = 0, hi = 0, kv = 0;
      if (!fg_attn_span(&a, t, h, &lo, &hi, &kv)) {
        for (size_t d = 0; d < D; d++) a.out[row * D + d] = fg_bits_f32(0x7fc00000u);
        a.lse[row] = fg_bits_f32(0x7fc00000u);
        continue;
      }
      float m = fg_bits_f32(0xff800000u), l = 0.0f;
      for (size_t j = lo; j <= hi; j++) {
        sc[j] = fg_attn_score(&a.q[row * D], &a.k[kv + j * D], D, a.scale);
        m = fg_attn_max(m, sc[j]);
      }
      for (size_t j = lo; j <= hi; j++) l = l + (sc[j] = fg_attn_p(sc[j], m));
      for (size_t d = 0; d < D; d++) {
        float acc = 0.0f;
        for (size_t j = lo; j <= hi; j++) acc = acc + sc[j] * a.v[kv + j * D + d];
        a.out[row * D + d] = fg_attn_out(acc, l);
      }
      a.lse[row] = fg_attn_lse(m, l);
    }
}

inline std::vector<FamilyCase> attention_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    size_t n_tok, n_head, n_kv_head, head_dim, n_seq, n_ctx, window;
    bool seq;
  };
  const Shape shapes[] = {{1, 1, 1, 1, 1, 1, 0, false},    {7, 4, 2, 16, 1, 9, 0, false},
                          {12, 8, 2, 64, 3, 40, 5, true},  {5, 6, 6, 24, 2, 33, 0, true},
                          {3, 2, 1, 8, 1, 2600, 0, false}, {2, 4, 1, 40, 1, 3000, 2100, false}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 700 + 10 * (uint64_t)idx++;
    const size_t qn = s.n_tok * s.n_head * s.head_dim, cn = s.n_seq * s.n_kv_head * s.n_ctx * s.head_dim;
    const float scale = 1.0f / std::sqrt((float)s.head_dim);
    std::vector<int32_t> seq(s.n_tok), pos(s.n_tok);
    for (size_t t = 0; t < s.n_tok; t++) {
      seq[t] = s.seq ? (int32_t)(t % s.n_seq) : 0;
      pos[t] = (int32_t)((s.n_ctx - 1) - (t * 7) % s.n_ctx);
    }
    if (s.n_tok > 4) pos[3] = (int32_t)s.n_ctx;          // out of range: a NaN row
    if (s.seq && s.n_tok > 5) seq[5] = (int32_t)s.n_seq;  // out of range: a NaN row
    FamilyCase c;
    c.name = "attention " + std::to_string(s.n_tok) + "x" + std::to_string(s.n_head) + "/" +
             std::to_string(s.n_kv_head) + "x" + std::to_string(s.head_dim) + " ctx " + std::to_string(s.n_ctx);
    c.ref = [=]() {
      const std::vector<float> q = gaussian(qn, seed), k = gaussian(cn, seed + 1), v = gaussian(cn, seed + 2);
      std::vector<float> o(qn), lse(s.n_tok * s.n_head);
      const fg_attention_call a = {s.n_tok, s.n_head, s.n_kv_head, s.head_dim, s.n_seq, s.n_ctx, s.window,
                                   q.data(), k.data(), v.data(), s.seq ? seq.data() : nullptr, pos.data(), scale,
                                   o.data(), lse.data()};
      attention_scalar_forward(a);
      Bytes all = to_bytes(o);
      append(all, to_bytes(lse));
      return all;
    };
    c.run = [=](fg_device *dev) {
      DevBuf Q(dev, to_bytes(gaussian(qn, seed))), K(dev, to_bytes(gaussian(cn, seed + 1))),
          V(dev, to_bytes(gaussian(cn, seed + 2))), S(dev, to_bytes(seq)), P(dev, to_bytes(pos));
      DevBuf o(dev, nullptr, qn * 4), lse(dev, nullptr, s.n_tok * s.n_head * 4);
      fg_attention_args a = {};
      a.n_tok = s.n_tok, a.n_head = s.n_head, a.n_kv_head = s.n_kv_head, a.head_dim = s.head_dim;
      a.n_seq = s.n_seq, a.n_ctx = s.n_ctx, a.window = s.window, a.scale = scale;
      a.q = Q.as<float>(), a.k = K.as<float>(), a.v = V.as<float>();
      a.seq = s.seq ? S.as<int32_t>() : nullptr, a.pos = P.as<int32_t>();
      a.out = o.as<float>(), a.lse = lse.as<float>();
      EXPECT_EQ(FG_OK, fg_attention_forward(dev, &a, nullptr)) << fg_last_error();
      Bytes all = o.read();
      append(all, lse.read());
      return all;
    };
    out.push_back(c);
  }
  return out;
}

// ---- Attention backward: the forward's shapes, a dq span and a slot's (token, head) pairs
// past CUDA's tiles, a training-like batch of consecutive positions ----

// The backward by the contract's loops over the elem functions, into b's dq, dk, dv.
inline void attention_scalar_backward(const fg_attention_bwd_call &b) {
  const fg_attention_call &a = b.f;
  const size_t D = a.head_dim, G = a.n_head / a.n_kv_head;
  auto ds_of = [&](size_t row, const float *kr, const float *vr, float *p) {
    const float s = fg_attn_score(&a.q[row * D], kr, D, a.scale), dp = fg_attn_dot(&b.dout[row * D], vr, D);
    *p = fg_attn_p(s, a.lse[row]);
    return fg_attn_ds(*p, dp, fg_attn_dot(&b.dout[row * D], &a.out[row * D], D));
  };
  for (size_t row = 0; row < a.n_tok * a.n_head; row++) {
    size_t lo = 0, hi = 0, kv = 0;
    if (!fg_attn_span(&a, row / a.n_head, row % a.n_head, &lo, &hi, &kv)) {
      for (size_t d = 0; d < D; d++) b.dq[row * D + d] = fg_bits_f32(0x7fc00000u);
      continue;
    }
    std::vector<float> ds(hi - lo + 1);
    for (size_t j = lo; j <= hi; j++) {
      float p = 0.0f;
      ds[j - lo] = ds_of(row, &a.k[kv + j * D], &a.v[kv + j * D], &p);
    }
    for (size_t d = 0; d < D; d++) {
      float acc = 0.0f;
      for (size_t j = lo; j <= hi; j++) acc = acc + ds[j - lo] * a.k[kv + j * D + d];
      b.dq[row * D + d] = fg_attn_dscaled(a.scale, acc);
    }
  }
  for (size_t slot = 0; slot < a.n_seq * a.n_kv_head * a.n_ctx; slot++) {
    const size_t j = slot % a.n_ctx, sq = slot / a.n_ctx / a.n_kv_head, kvh = slot / a.n_ctx % a.n_kv_head;
    std::vector<size_t> rs;  // the (token, head) rows that attend, in the contract's order
    std::vector<float> ps, dss;
    for (size_t t = 0; t < a.n_tok; t++) {
      size_t lo = 0, hi = 0;
      if (!fg_attn_attends(&a, t, sq, j, &lo, &hi)) continue;
      for (size_t g = 0; g < G; g++) {
        float p = 0.0f;
        rs.push_back(t * a.n_head + kvh * G + g);
        dss.push_back(ds_of(rs.back(), &a.k[slot * D], &a.v[slot * D], &p));
        ps.push_back(p);
      }
    }
    for (size_t d = 0; d < D; d++) {
      float dk = 0.0f, dv = 0.0f;
      for (size_t i = 0; i < rs.size(); i++) {
        dk = dk + dss[i] * a.q[rs[i] * D + d];
        dv = dv + ps[i] * b.dout[rs[i] * D + d];
      }
      b.dk[slot * D + d] = rs.empty() ? 0.0f : fg_attn_dscaled(a.scale, dk);
      b.dv[slot * D + d] = fg_attn_canon(dv);
    }
  }
}

inline std::vector<FamilyCase> attention_bwd_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    size_t n_tok, n_head, n_kv_head, head_dim, n_seq, n_ctx, window;
    bool seq, consecutive, negative_scale;
  };
  const Shape shapes[] = {{1, 1, 1, 1, 1, 1, 0, false, false, false},    {7, 4, 2, 16, 1, 9, 0, false, false, false},
                          {12, 8, 2, 64, 3, 40, 5, true, false, false},  {5, 6, 6, 24, 2, 33, 0, true, false, true},
                          {3, 2, 1, 8, 1, 1100, 0, false, false, false}, {300, 4, 1, 8, 1, 320, 0, false, true, false},
                          {40, 9, 3, 64, 2, 24, 7, true, true, false},   {0, 2, 1, 8, 2, 5, 0, true, false, true}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 900 + 10 * (uint64_t)idx++;
    const size_t qn = s.n_tok * s.n_head * s.head_dim, cn = s.n_seq * s.n_kv_head * s.n_ctx * s.head_dim;
    const size_t rows = s.n_tok * s.n_head;
    const float scale = (s.negative_scale ? -1.0f : 1.0f) / std::sqrt((float)s.head_dim);
    std::vector<int32_t> seq(s.n_tok), pos(s.n_tok);
    for (size_t t = 0; t < s.n_tok; t++) {
      seq[t] = s.seq ? (int32_t)(s.consecutive ? t * s.n_seq / s.n_tok : t % s.n_seq) : 0;
      pos[t] = (int32_t)(s.consecutive ? t % (s.n_tok / s.n_seq) : (s.n_ctx - 1) - (t * 7) % s.n_ctx);
    }
    if (s.n_tok > 4 && !s.consecutive) pos[3] = (int32_t)s.n_ctx;  // out of range: a NaN row
    if (s.seq && s.n_tok > 5) seq[5] = (int32_t)s.n_seq;            // out of range: a NaN row
    // The forward's out and lse, as the backward gets them.
    std::vector<float> o(qn), lse(rows);
    const std::vector<float> q = gaussian(qn, seed), k = gaussian(cn, seed + 1), v = gaussian(cn, seed + 2);
    const std::vector<float> dout = gaussian(qn, seed + 3);
    const fg_attention_call f = {s.n_tok, s.n_head, s.n_kv_head, s.head_dim, s.n_seq, s.n_ctx, s.window,
                                 q.data(), k.data(), v.data(), s.seq ? seq.data() : nullptr, pos.data(), scale,
                                 o.data(), lse.data()};
    attention_scalar_forward(f);
    FamilyCase c;
    c.name = "attention_bwd " + std::to_string(s.n_tok) + "x" + std::to_string(s.n_head) + "/" +
             std::to_string(s.n_kv_head) + "x" + std::to_string(s.head_dim) + " ctx " + std::to_string(s.n_ctx);
    c.ref = [=]() {
      std::vector<float> dq(qn), dk(cn), dv(cn);
      fg_attention_call a = f;
      a.q = q.data(), a.k = k.data(), a.v = v.data(), a.seq = s.seq ? seq.data() : nullptr, a.pos = pos.data();
      a.out = (float *)o.data(), a.lse = (float *)lse.data();
      attention_scalar_backward({a, dout.data(), dq.data(), dk.data(), dv.data()});
      Bytes all = to_bytes(dq);
      append(all, to_bytes(dk));
      append(all, to_bytes(dv));
      return all;
    };
    c.run = [=](fg_device *dev) {
      DevBuf Q(dev, to_bytes(q)), K(dev, to_bytes(k)), V(dev, to_bytes(v)), S(dev, to_bytes(seq)),
          P(dev, to_bytes(pos)), O(dev, to_bytes(o)), L(dev, to_bytes(lse)), DO(dev, to_bytes(dout));
      DevBuf dq(dev, nullptr, qn * 4), dk(dev, nullptr, cn * 4), dv(dev, nullptr, cn * 4);
      fg_attention_args a = {};
      a.n_tok = s.n_tok, a.n_head = s.n_head, a.n_kv_head = s.n_kv_head, a.head_dim = s.head_dim;
      a.n_seq = s.n_seq, a.n_ctx = s.n_ctx, a.window = s.window, a.scale = scale;
      a.q = Q.as<float>(), a.k = K.as<float>(), a.v = V.as<float>();
      a.seq = s.seq ? S.as<int32_t>() : nullptr, a.pos = P.as<int32_t>();
      a.out = O.as<float>(), a.lse = L.as<float>();
      const fg_attention_grads g = {DO.as<float>(), dq.as<float>(), dk.as<float>(), dv.as<float>()};
      EXPECT_EQ(FG_OK, fg_attention_backward(dev, &a, &g, nullptr)) << fg_last_error();
      Bytes all = dq.read();
      append(all, dk.read());
      append(all, dv.read());
      return all;
    };
    out.push_back(c);
  }
  return out;
}

// ---- Softmax rows (out of place and in place), nll, and nll's gradient ----

inline std::vector<FamilyCase> softmax_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    size_t rows, cols;
    bool domain;  // rows sweeping exp's whole domain (subnormal results, 0, -inf, NaN)
  };
  const Shape shapes[] = {{1, 1, false},    {3, 31, false},    {6, 1000, false},
                          {70, 333, false}, {2, 49157, false}, {4, 8192, true}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 800 + 10 * (uint64_t)idx++;
    const size_t n = s.rows * s.cols;
    const float scale = 0.37f;
    std::vector<int32_t> tg(s.rows);
    for (size_t r = 0; r < s.rows; r++) tg[r] = (int32_t)((r * 7919 + 3) % s.cols);
    if (s.rows > 2) tg[1] = (int32_t)s.cols, tg[2] = -1;  // out of range: NaN
    auto xs = [=]() {
      if (!s.domain) return gaussian(n, seed, 4.0f);
      std::vector<float> x(n);
      for (size_t i = 0; i < n; i++) x[i] = -112.0f * (float)(i % s.cols) / (float)s.cols + (float)(i / s.cols);
      x[s.cols + 5] = -INFINITY, x[2 * s.cols + 7] = -3e38f, x[3 * s.cols + 9] = NAN;
      return x;
    };
    FamilyCase c;
    c.name = std::string(s.domain ? "softmax exp domain " : "softmax ") + std::to_string(s.rows) + "x" + std::to_string(s.cols);
    c.ref = [=]() {
      const std::vector<float> x = xs();
      std::vector<float> y(n), dx(n);
      std::vector<double> nll(s.rows);
      for (size_t r = 0; r < s.rows; r++) {
        const float *xr = &x[r * s.cols];
        float m = fg_sm_max_init();
        for (size_t j = 0; j < s.cols; j++) m = fg_sm_max(m, xr[j]);
        double lanes[FG_ROW_LANES] = {0};
        for (size_t j = 0; j < s.cols; j++) lanes[j % FG_ROW_LANES] = lanes[j % FG_ROW_LANES] + (double)fg_sm_e(xr[j], m);
        const double S = fg_row_fold(lanes);
        const bool ok = tg[r] >= 0 && (size_t)tg[r] < s.cols;
        nll[r] = ok ? fg_sm_nll(m, S, xr[tg[r]]) : fg_sm_nan64();
        for (size_t j = 0; j < s.cols; j++) {
          y[r * s.cols + j] = fg_sm_y(fg_sm_e(xr[j], m), S);
          dx[r * s.cols + j] =
              ok ? fg_sm_dx(fg_sm_e(xr[j], m), S, (int32_t)j == tg[r], scale) : fg_bits_f32(0x7fc00000u);
        }
      }
      Bytes all = to_bytes(y);
      append(all, to_bytes(y));  // in place
      append(all, to_bytes(nll));
      append(all, to_bytes(dx));
      return all;
    };
    c.run = [=](fg_device *dev) {
      const Bytes xb = to_bytes(xs());
      DevBuf X(dev, xb), XI(dev, xb), T(dev, to_bytes(tg)), y(dev, nullptr, n * 4), nll(dev, nullptr, s.rows * 8),
          dx(dev, nullptr, n * 4);
      EXPECT_EQ(FG_OK, fg_softmax_rows(dev, X.as<float>(), s.rows, s.cols, y.as<float>(), nullptr)) << fg_last_error();
      EXPECT_EQ(FG_OK, fg_softmax_rows(dev, XI.as<float>(), s.rows, s.cols, XI.as<float>(), nullptr)) << fg_last_error();
      EXPECT_EQ(FG_OK, fg_softmax_nll(dev, X.as<float>(), s.rows, s.cols, T.as<int32_t>(), nll.as<double>(), nullptr))
          << fg_last_error();
      EXPECT_EQ(FG_OK, fg_softmax_nll_backward(dev, X.as<float>(), s.rows, s.cols, T.as<int32_t>(), scale,
                                               dx.as<float>(), nullptr))
          << fg_last_error();
      Bytes all = y.read();
      for (const DevBuf *b : {&XI, &nll, &dx}) append(all, b->read());
      return all;
    };
    out.push_back(c);
  }
  return out;
}

// ---- RoPE: both pairings, forward and inverse, partial rotation, positions out of range ----

inline std::vector<FamilyCase> rope_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    size_t n_tok, n_heads, head_dim, n_dims;
    fg_rope_layout layout;
    bool inverse;
  };
  const Shape shapes[] = {{1, 1, 2, 2, FG_ROPE_NORM, false},     {7, 3, 64, 64, FG_ROPE_NORM, false},
                          {5, 4, 128, 128, FG_ROPE_NEOX, true},   {33, 2, 80, 32, FG_ROPE_NEOX, false},
                          {300, 8, 64, 48, FG_ROPE_NORM, true}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 700 + 10 * (uint64_t)idx++;
    const size_t n = s.n_tok * s.n_heads * s.head_dim, n_pos = 2 * s.n_tok + 3;
    auto x = [=]() { return gaussian(n, seed, 2.0f); };
    auto pos = [=]() {
      std::vector<int32_t> p(s.n_tok);
      for (size_t t = 0; t < s.n_tok; t++) p[t] = (int32_t)((t * 7 + 1) % n_pos);
      if (s.n_tok > 3) p[1] = -1, p[2] = (int32_t)n_pos, p[3] = INT32_MAX;  // left unchanged
      return p;
    };
    auto table = [=]() {
      std::vector<float> tb(n_pos * s.n_dims);
      EXPECT_EQ(FG_OK, fg_rope_table_fill(tb.data(), n_pos, s.n_dims, 10000.0, 1.0, nullptr)) << fg_last_error();
      return tb;
    };
    FamilyCase c;
    c.name = "rope " + std::to_string(s.n_tok) + "x" + std::to_string(s.n_heads) + "x" + std::to_string(s.head_dim) +
             " dims " + std::to_string(s.n_dims) + (s.layout == FG_ROPE_NEOX ? " neox" : " norm") +
             (s.inverse ? " inverse" : "");
    c.ref = [=]() {
      std::vector<float> X = x(), T = table();
      std::vector<int32_t> P = pos();
      fg_rope_call rc = {X.data(), s.n_tok, s.n_heads, s.head_dim, s.n_dims, n_pos, (int)s.layout, s.inverse ? 1 : 0,
                         P.data(), T.data()};
      for (size_t t = 0; t < s.n_tok; t++) {
        const float *row = fg_rope_row(&rc, t);
        for (size_t h = 0; row && h < s.n_heads; h++)
          for (size_t i = 0; i < s.n_dims / 2; i++)
            fg_rope_pair(&rc, X.data() + (t * s.n_heads + h) * s.head_dim, row, i);
      }
      return to_bytes(X);
    };
    c.run = [=](fg_device *dev) {
      DevBuf X(dev, to_bytes(x())), P(dev, to_bytes(pos())), T(dev, to_bytes(table()));
      EXPECT_EQ(FG_OK, fg_rope_apply(dev, X.as<float>(), s.n_tok, s.n_heads, s.head_dim, s.n_dims, s.layout,
                                     P.as<int32_t>(), T.as<float>(), n_pos, s.inverse, nullptr))
          << fg_last_error();
      return X.read();
    };
    out.push_back(c);
  }
  return out;
}

// ---- the embedding gather: scalar and block types, ids out of range, a scale ----

inline std::vector<FamilyCase> embed_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    fg_dtype dt;
    size_t n_rows, n_cols, n_ids;
    float scale;
  };
  const Shape shapes[] = {{FG_F32, 11, 33, 9, 1.0f},         {FG_F16, 50, 64, 17, 45.254834f},
                          {FG_BF16, 7, 96, 300, 1.0f},        {FG_Q8_0, 40, 128, 64, 0.5f},
                          {FG_Q4_K, 9, 512, 13, 1.0f},        {FG_Q6_K, 5, 256, 700, 3.0f},
                          {FG_IQ4_NL, 6, 64, 5, 1.0f},        {FG_MXFP4, 4, 96, 7, -2.0f}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 800 + 10 * (uint64_t)idx++;
    const fg_dtype_traits *tr = fg_dtype_info(s.dt);
    const size_t row_bytes = s.n_cols / tr->block_elems * tr->block_bytes;
    auto table = [=]() {
      Bytes tb(s.n_rows * row_bytes);
      EXPECT_EQ(FG_OK, fg_quant_encode_rows(s.dt, gaussian(s.n_rows * s.n_cols, seed).data(), (int64_t)s.n_rows,
                                            (int64_t)s.n_cols, tb.data(), tb.size()))
          << fg_last_error();
      return tb;
    };
    auto ids = [=]() {
      std::vector<int32_t> v(s.n_ids);
      for (size_t t = 0; t < s.n_ids; t++) v[t] = (int32_t)((t * 5 + 2) % s.n_rows);
      v[s.n_ids / 2] = (int32_t)s.n_rows;  // a NaN row
      if (s.n_ids > 3) v[1] = -3;
      return v;
    };
    FamilyCase c;
    c.name = std::string("embed ") + fg_dtype_name(s.dt) + " " + std::to_string(s.n_ids) + " of " +
             std::to_string(s.n_rows) + "x" + std::to_string(s.n_cols);
    c.ref = [=]() {
      Bytes T = table();
      std::vector<int32_t> I = ids();
      std::vector<float> y(s.n_ids * s.n_cols);
      fg_embed_call ec = {T.data(), s.dt, tr->block_elems, tr->block_bytes, s.n_rows, s.n_cols, row_bytes,
                          I.data(), s.n_ids, s.scale, y.data()};
      for (size_t t = 0; t < s.n_ids; t++) {
        const uint8_t *row = fg_embed_row(&ec, t);
        for (size_t b = 0; b < s.n_cols / tr->block_elems; b++) {
          float *yb = y.data() + t * s.n_cols + b * tr->block_elems;
          if (!row) {
            fg_embed_nan(yb, tr->block_elems);
            continue;
          }
          fg_embed_decode(&ec, row, b, 1, yb);
          fg_embed_scale(&ec, yb, tr->block_elems);
        }
      }
      return to_bytes(y);
    };
    c.run = [=](fg_device *dev) {
      DevBuf T(dev, table()), I(dev, to_bytes(ids())), y(dev, nullptr, s.n_ids * s.n_cols * 4);
      EXPECT_EQ(FG_OK, fg_embed_rows(dev, T.p, s.dt, s.n_rows, s.n_cols, I.as<int32_t>(), s.n_ids, s.scale,
                                     y.as<float>(), nullptr))
          << fg_last_error();
      return y.read();
    };
    out.push_back(c);
  }
  return out;
}

// An n_out x n_in weight matrix stored as t: f32 values, f16/bf16 rounded from them, or a
// block type through forgia/quant.h's quantizer.
inline Bytes linear_weights(fg_dtype t, size_t n_out, size_t n_in, uint64_t seed) {
  const std::vector<float> v = gaussian(n_out * n_in, seed);
  if (t == FG_F32) return to_bytes(v);
  const fg_dtype_traits *tr = fg_dtype_info(t);
  Bytes out(n_out * (n_in / tr->block_elems) * tr->block_bytes);
  if (t == FG_F16 || t == FG_BF16) {
    for (size_t i = 0; i < v.size(); i++) {
      const uint16_t h = t == FG_F16 ? fg_f32_to_f16(v[i]) : fg_f32_to_bf16(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
    return out;
  }
  EXPECT_EQ(FG_OK, fg_quant_encode_rows(t, v.data(), (int64_t)n_out, (int64_t)n_in, out.data(), out.size()))
      << fg_last_error();
  return out;
}

// The exact mode's scalar loop: rows decoded by elem/quant_decode.h, sums by elem/linear.h.
inline std::vector<float> linear_exact_ref(const std::vector<float> &x, size_t n_tok, size_t n_in, const Bytes &w,
                                           fg_dtype t, size_t n_out, const std::vector<float> &y0, bool accumulate) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  const size_t be = tr->block_elems, row_bytes = n_in / be * tr->block_bytes;
  std::vector<float> y(n_tok * n_out), row(n_in + FG_LINEAR_MAX_BLOCK);
  for (size_t o = 0; o < n_out; o++) {
    for (size_t b = 0; b < n_in / be; b++)
      EXPECT_TRUE(fg_dequant_block(t, w.data() + o * row_bytes + b * tr->block_bytes, row.data() + b * be));
    for (size_t tk = 0; tk < n_tok; tk++) {
      float acc = 0.0f;
      for (size_t i = 0; i < n_in; i++) acc = fg_gemm_exact_step(acc, x[tk * n_in + i], row[i]);
      y[tk * n_out + o] = fg_linear_out(acc, accumulate, accumulate ? y0[tk * n_out + o] : 0.0f);
    }
  }
  return y;
}

inline std::vector<FamilyCase> linear_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    size_t n_tok, n_in, n_out;
    fg_dtype t;
    bool accumulate;
  };
  const Shape shapes[] = {{1, 64, 37, FG_F32, false},   {5, 96, 70, FG_F16, true},    {3, 160, 33, FG_BF16, false},
                          {13, 512, 65, FG_Q4_1, false}, {1, 576, 100, FG_Q8_0, true}, {7, 512, 40, FG_Q4_K, false},
                          {300, 256, 9, FG_Q6_K, true}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 900 + 10 * (uint64_t)idx++;
    auto x = [=]() { return gaussian(s.n_tok * s.n_in, seed); };
    auto w = [=]() { return linear_weights(s.t, s.n_out, s.n_in, seed + 1); };
    auto y0 = [=]() { return gaussian(s.n_tok * s.n_out, seed + 2); };
    FamilyCase c;
    c.name = std::string("linear ") + fg_dtype_name(s.t) + " " + std::to_string(s.n_tok) + "x" +
             std::to_string(s.n_in) + "x" + std::to_string(s.n_out) + (s.accumulate ? " acc" : "");
    c.ref = [=]() { return to_bytes(linear_exact_ref(x(), s.n_tok, s.n_in, w(), s.t, s.n_out, y0(), s.accumulate)); };
    c.run = [=](fg_device *dev) {
      DevBuf X(dev, to_bytes(x())), W(dev, w()), Y(dev, to_bytes(y0()));
      EXPECT_EQ(FG_OK, fg_linear(dev, FG_GEMM_EXACT, X.as<float>(), s.n_tok, s.n_in, W.p, s.t, s.n_out, Y.as<float>(),
                                 s.accumulate, nullptr))
          << fg_last_error();
      return Y.read();
    };
    out.push_back(c);
  }
  return out;
}

// The input gradient's exact scalar loop: W decoded by elem/quant_decode.h, each (t, i)
// summed over o ascending by elem/linear.h's step.
inline std::vector<float> linear_bwd_exact_ref(const std::vector<float> &dy, size_t n_tok, size_t n_out, const Bytes &w,
                                               fg_dtype t, size_t n_in, const std::vector<float> &dx0,
                                               bool accumulate) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  const size_t be = tr->block_elems, row_bytes = n_in / be * tr->block_bytes;
  std::vector<float> wd(n_out * n_in), dx(n_tok * n_in);
  for (size_t o = 0; o < n_out; o++)
    for (size_t b = 0; b < n_in / be; b++)
      EXPECT_TRUE(fg_dequant_block(t, w.data() + o * row_bytes + b * tr->block_bytes, wd.data() + o * n_in + b * be));
  for (size_t tk = 0; tk < n_tok; tk++)
    for (size_t i = 0; i < n_in; i++) {
      float acc = 0.0f;
      for (size_t o = 0; o < n_out; o++) acc = fg_gemm_exact_step(acc, dy[tk * n_out + o], wd[o * n_in + i]);
      dx[tk * n_in + i] = fg_linear_out(acc, accumulate, accumulate ? dx0[tk * n_in + i] : 0.0f);
    }
  return dx;
}

// Shapes that cross the CPU kernels' edges: one token, token remainders after the
// many-token micro-kernel, more tokens than a token tile (120), rows of W over several
// chunks, column counts that are not a whole number of the 32-column tiles, odd chunkings.
inline std::vector<FamilyCase> linear_bwd_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    size_t n_tok, n_out, n_in;
    fg_dtype t;
    bool accumulate;
  };
  const Shape shapes[] = {{1, 37, 64, FG_F32, false},     {5, 70, 96, FG_F16, true},     {3, 33, 160, FG_BF16, false},
                          {6, 50, 45, FG_F32, true},      {13, 65, 512, FG_Q4_1, false}, {1, 100, 576, FG_Q8_0, true},
                          {7, 40, 512, FG_Q4_K, false},   {300, 9, 256, FG_Q6_K, true},
                          {130, 700, 608, FG_Q5_0, false}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 1900 + 10 * (uint64_t)idx++;
    auto dy = [=]() { return gaussian(s.n_tok * s.n_out, seed); };
    auto w = [=]() { return linear_weights(s.t, s.n_out, s.n_in, seed + 1); };
    auto dx0 = [=]() { return gaussian(s.n_tok * s.n_in, seed + 2); };
    FamilyCase c;
    c.name = std::string("linear_bwd ") + fg_dtype_name(s.t) + " " + std::to_string(s.n_tok) + "x" +
             std::to_string(s.n_out) + "x" + std::to_string(s.n_in) + (s.accumulate ? " acc" : "");
    c.ref = [=]() {
      return to_bytes(linear_bwd_exact_ref(dy(), s.n_tok, s.n_out, w(), s.t, s.n_in, dx0(), s.accumulate));
    };
    c.run = [=](fg_device *dev) {
      DevBuf DY(dev, to_bytes(dy())), W(dev, w()), DX(dev, to_bytes(dx0()));
      EXPECT_EQ(FG_OK, fg_linear_backward_x(dev, FG_GEMM_EXACT, DY.as<float>(), s.n_tok, s.n_out, W.p, s.t, s.n_in,
                                            DX.as<float>(), s.accumulate, nullptr))
          << fg_last_error();
      return DX.read();
    };
    out.push_back(c);
  }
  return out;
}

// ---- the embedding gradient: repeated ids summing in order, ids out of range, a scale ----

inline std::vector<FamilyCase> embed_bwd_family_cases() {
  std::vector<FamilyCase> out;
  struct Shape {
    size_t n_rows, n_cols, n_ids;
    float scale;
  };
  const Shape shapes[] = {{11, 33, 9, 1.0f}, {50, 64, 17, 45.254834f}, {7, 96, 300, 1.0f}, {49, 576, 64, 0.5f},
                          {5, 1000, 700, -2.0f}};
  int idx = 0;
  for (const Shape &s : shapes) {
    const uint64_t seed = 1800 + 10 * (uint64_t)idx++;
    auto ids = [=]() {
      std::vector<int32_t> v(s.n_ids);
      for (size_t t = 0; t < s.n_ids; t++) v[t] = (int32_t)((t * 5 + 2) % s.n_rows);
      v[s.n_ids / 2] = (int32_t)s.n_rows;  // adds nothing
      if (s.n_ids > 3) v[1] = -3;
      return v;
    };
    auto dy = [=]() {
      std::vector<float> g = gaussian(s.n_ids * s.n_cols, seed, 3.0f);
      const uint32_t payload = 0xffc12345u;  // a NaN with a payload: stored canonical
      std::memcpy(&g[s.n_cols + 3], &payload, 4);
      return g;
    };
    auto table = [=]() { return gaussian(s.n_rows * s.n_cols, seed + 1); };
    FamilyCase c;
    c.name = "embed_bwd " + std::to_string(s.n_ids) + " of " + std::to_string(s.n_rows) + "x" + std::to_string(s.n_cols);
    c.ref = [=]() {
      std::vector<float> T = table(), G = dy();
      std::vector<int32_t> I = ids();
      fg_embed_bwd_call ec = {G.data(), I.data(), s.n_ids, s.n_rows, s.n_cols, s.scale, T.data()};
      for (size_t t = 0; t < s.n_ids; t++) {
        float *d = fg_embed_bwd_row(&ec, t);
        for (size_t k = 0; d && k < s.n_cols; k++) d[k] = fg_embed_bwd_step(d[k], G[t * s.n_cols + k], s.scale);
      }
      return to_bytes(T);
    };
    c.run = [=](fg_device *dev) {
      DevBuf G(dev, to_bytes(dy())), I(dev, to_bytes(ids())), T(dev, to_bytes(table()));
      EXPECT_EQ(FG_OK, fg_embed_backward(dev, G.as<float>(), I.as<int32_t>(), s.n_ids, s.n_rows, s.n_cols, s.scale,
                                         T.as<float>(), nullptr))
          << fg_last_error();
      return T.read();
    };
    out.push_back(c);
  }
  return out;
}

// The cases of family id, generated for every row of the family table: a row without a
// builder here gives no cases, which tests/cpu/test_families.cpp reports as a failure.
inline std::vector<FamilyCase> family_cases(fg_family_id id) {
  switch (id) {
    case FG_FAMILY_op: return op_family_cases();
    case FG_FAMILY_reduce: return reduce_family_cases();
    case FG_FAMILY_sum_f64: return sum_f64_family_cases();
    case FG_FAMILY_gemm: return gemm_family_cases();
    case FG_FAMILY_apollo: return apollo_family_cases();
    case FG_FAMILY_es_trits: return es_trits_family_cases();
    case FG_FAMILY_rmsnorm: return rmsnorm_family_cases();
    case FG_FAMILY_attention: return attention_family_cases();
    case FG_FAMILY_attention_bwd: return attention_bwd_family_cases();
    case FG_FAMILY_softmax: return softmax_family_cases();
    case FG_FAMILY_rope: return rope_family_cases();
    case FG_FAMILY_embed: return embed_family_cases();
    case FG_FAMILY_linear: return linear_family_cases();
    case FG_FAMILY_linear_bwd: return linear_bwd_family_cases();
    case FG_FAMILY_embed_bwd: return embed_bwd_family_cases();
    default: return {};
  }
}

}  // namespace fgt
