// Runs an op of the op layer over a list of host-side tensors on any device, and builds
// inputs with every special class of float, for the CPU and CUDA op tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "testutil.h"

namespace fgt {

// One tensor of a list: raw bytes per stream (dtype given by the case).
struct OpTensor {
  std::vector<uint8_t> s[FG_OP_MAX_STREAMS];
  size_t n = 0;
  uint64_t seed = 0, index0 = 0;
};

struct OpCase {
  fg_op_kind op;
  fg_op_params p;
  fg_dtype dt[FG_OP_MAX_STREAMS];
  unsigned nstreams;
};

inline size_t op_elem_bytes(fg_dtype d) { return d == FG_F32 ? 4 : (d == FG_F16 || d == FG_BF16) ? 2 : 1; }

// f32 bit patterns of every class: zeros, infinities, NaNs with payloads, subnormals,
// the largest finite, f16/bf16 rounding ties and overflow edges.
inline const std::vector<uint32_t> &special_bits() {
  static const std::vector<uint32_t> v = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                          0xffc00001u, 0x7f800001u, 0x00000001u, 0x807fffffu, 0x7f7fffffu,
                                          0x477fe000u, 0x477ff000u, 0x33000000u, 0x33000001u, 0x3f808000u,
                                          0x3f818000u, 0x38800000u, 0x387fffffu, 0xbf800000u, 0x3f800000u};
  return v;
}

// n values of one stream in dtype d: a gaussian bulk (scale) with specials scattered; for
// a mask, 0/1 bytes. positive: absolute values (second moments).
inline std::vector<uint8_t> op_stream_values(fg_dtype d, size_t n, uint64_t seed, float scale, bool positive,
                                             bool specials = true) {
  std::vector<float> x = gaussian(n, seed, scale);
  if (specials) {
    const auto &sp = special_bits();
    size_t k = seed % sp.size();
    for (size_t i = seed % 7; i < n; i += 997) std::memcpy(&x[i], &sp[k++ % sp.size()], 4);
  }
  if (positive)
    for (float &v : x) v = std::fabs(v);
  std::vector<uint8_t> out(n * op_elem_bytes(d));
  for (size_t i = 0; i < n; i++) {
    if (d == FG_F32) {
      std::memcpy(&out[i * 4], &x[i], 4);
    } else if (d == FG_F16 || d == FG_BF16) {
      uint16_t h = d == FG_F16 ? fg_f32_to_f16(x[i]) : fg_f32_to_bf16(x[i]);
      std::memcpy(&out[i * 2], &h, 2);
    } else {
      out[i] = x[i] > 0.0f;
    }
  }
  return out;
}

// Runs c over the list on dev and returns the list with every stream read back.
inline std::vector<OpTensor> op_run_on(fg_device *dev, const OpCase &c, const std::vector<OpTensor> &in) {
  std::vector<OpTensor> out = in;
  std::vector<fg_op_args> args(in.size());
  std::vector<void *> mem;
  for (size_t t = 0; t < in.size(); t++) {
    fg_op_args &a = args[t];
    std::memset(&a, 0, sizeof a);
    a.n = in[t].n;
    a.seed = in[t].seed;
    a.index0 = in[t].index0;
    for (unsigned k = 0; k < FG_OP_MAX_STREAMS; k++) {
      a.dtype[k] = c.dt[k];
      if (k >= c.nstreams || in[t].s[k].empty()) continue;
      void *p = nullptr;
      EXPECT_EQ(FG_OK, fg_device_mem_alloc(dev, in[t].s[k].size(), &p)) << fg_last_error();
      EXPECT_EQ(FG_OK, fg_device_copy(dev, p, in[t].s[k].data(), in[t].s[k].size(), FG_COPY_H2D));
      mem.push_back(p);
      a.ptr[k] = p;
    }
  }
  EXPECT_EQ(FG_OK, fg_op_run(dev, c.op, &c.p, args.data(), args.size(), nullptr)) << fg_last_error();
  for (size_t t = 0; t < in.size(); t++) {
    for (unsigned k = 0; k < c.nstreams; k++) {
      if (args[t].ptr[k]) {
        EXPECT_EQ(FG_OK, fg_device_copy(dev, out[t].s[k].data(), args[t].ptr[k], out[t].s[k].size(), FG_COPY_D2H));
      }
    }
  }
  for (void *p : mem) fg_device_mem_free(dev, p);
  return out;
}

inline bool op_lists_equal(const std::vector<OpTensor> &a, const std::vector<OpTensor> &b) {
  if (a.size() != b.size()) return false;
  for (size_t t = 0; t < a.size(); t++)
    for (unsigned k = 0; k < FG_OP_MAX_STREAMS; k++)
      if (a[t].s[k] != b[t].s[k]) return false;
  return true;
}

// The parameter block of the op `role` of c's kind at step t (x: the op's own scalar, Muon's
// lr_eff), packed by the kind's descriptor (forgia/optim.h) exactly as the optimizer packs it.
inline fg_op_params optim_params(const fg_optim_config &c, const char *role, uint64_t t, float x = 0.0f) {
  fg_op_params p;
  std::memset(&p, 0, sizeof p);
  const fg_optim_kind_desc *d = fg_optim_kind_describe(c.kind);
  for (size_t i = 0; d && i < d->n_packs; i++)
    if (std::strcmp(d->packs[i].role, role) == 0) {
      d->packs[i].pack(&c, t, x, &p);
      return p;
    }
  ADD_FAILURE() << "kind " << (int)c.kind << " has no op '" << role << "'";
  return p;
}

// A config of kind with the common hyperparameters set (Fucina keeps them in f32).
inline fg_optim_config optim_config(fg_optim_kind kind, double lr, double b1, double b2, double eps, double wd) {
  fg_optim_config c = fg_optim_defaults(kind);
  c.lr = (float)lr, c.beta1 = (float)b1, c.beta2 = (float)b2, c.eps = (float)eps, c.weight_decay = (float)wd;
  return c;
}

// The Fucina AdamW scalars for step t, as the optimizer layer prepares them.
inline fg_op_params adamw_params(double lr, double b1, double b2, double eps, double wd, uint64_t t) {
  return optim_params(optim_config(FG_OPTIM_ADAMW, lr, b1, b2, eps, wd), "step", t);
}

// A case for each op of the table, with the given float dtype for the float streams.
inline std::vector<OpCase> op_cases(fg_dtype fd) {
  std::vector<OpCase> v;
  auto mk = [&](fg_op_kind op, unsigned ns) {
    OpCase c;
    std::memset(&c, 0, sizeof c);
    c.op = op;
    c.nstreams = ns;
    for (unsigned k = 0; k < FG_OP_MAX_STREAMS; k++) c.dt[k] = fd;
    return c;
  };
  OpCase c = mk(FG_OP_FILL, 1);
  c.p.f[0] = -3.25f;
  v.push_back(c);
  c = mk(FG_OP_SCALE, 1);
  c.p.f[0] = 0.37f;
  v.push_back(c);
  c = mk(FG_OP_AXPY, 2);
  c.p.f[0] = -1.7f;
  v.push_back(c);
  c = mk(FG_OP_ADAMW, 4);
  c.p = adamw_params(1e-3, 0.9, 0.999, 1e-8, 0.01, 7);
  c.dt[1] = FG_F32;
  v.push_back(c);
  c = mk(FG_OP_RNG_UNIFORM, 1);
  c.p.d[0] = -0.5;
  c.p.d[1] = 2.0;
  c.p.f[0] = 1.5f;
  c.p.f[1] = std::nextafter(1.5f, -1.0f);
  v.push_back(c);
  c = mk(FG_OP_RNG_GAUSS_FAST, 1);
  c.p.f[0] = 0.02f;
  v.push_back(c);
  c = mk(FG_OP_RNG_KEEP_MASK, 1);
  c.dt[0] = FG_U8;
  c.p.u[0] = (uint64_t)std::ceil((1.0 - 0.1) * 9007199254740992.0);
  v.push_back(c);
  c = mk(FG_OP_DROPOUT, 2);
  c.p.u[0] = (uint64_t)std::ceil((1.0 - 0.25) * 9007199254740992.0);
  c.p.f[0] = 1.0f / (1.0f - 0.25f);
  v.push_back(c);
  // The optimizers: a master form steps an f32 master (stream 0) and narrows it into the
  // parameter (stream 4) of the case's dtype.
  auto master = [&](fg_op_kind op, fg_op_params p) {
    OpCase m = mk(op, 5);
    m.p = p;
    m.dt[0] = FG_F32;
    m.dt[1] = FG_F32;
    return m;
  };
  c = mk(FG_OP_ADAM, 4);
  c.p = optim_params(optim_config(FG_OPTIM_ADAM, 1e-2, 0.8, 0.99, 1e-6, 0.05), "step", 3);
  c.dt[1] = FG_F32;
  v.push_back(c);
  v.push_back(master(FG_OP_ADAMW_MASTER, adamw_params(1e-3, 0.9, 0.999, 1e-8, 0.01, 1)));
  v.push_back(master(FG_OP_ADAM_MASTER, c.p));
  fg_optim_config oc = optim_config(FG_OPTIM_SGD, 0.1, 0.9, 0.999, 1e-8, 0.05);
  oc.momentum = 0.9f, oc.dampening = 0.25f;
  fg_op_params sp = optim_params(oc, "step", 2);
  c = mk(FG_OP_SGD, 2);
  c.p = sp;
  c.dt[1] = FG_F32;
  v.push_back(c);
  v.push_back(master(FG_OP_SGD_MASTER, sp));
  for (unsigned flags : {0u, 1u, 2u, 3u}) {  // nesterov, first step
    oc.nesterov = (flags & 1u) != 0;
    sp = optim_params(oc, "momentum step", (flags & 2u) ? 1 : 2);
    c = mk(FG_OP_SGD_MOMENTUM, 3);
    c.p = sp;
    c.dt[1] = FG_F32;
    v.push_back(c);
    v.push_back(master(FG_OP_SGD_MOMENTUM_MASTER, sp));
  }
  v.push_back(mk(FG_OP_RELU, 2));  // the activations of the training examples (elem/op_nn.h)
  v.push_back(mk(FG_OP_RELU_BACKWARD, 2));
  v.push_back(mk(FG_OP_SWIGLU, 3));  // the gated feed-forward units of the runtime (elem/op_nn.h)
  v.push_back(mk(FG_OP_SWIGLU_BACKWARD, 5));
  v.push_back(mk(FG_OP_GEGLU, 3));
  v.push_back(mk(FG_OP_GEGLU_BACKWARD, 5));
  for (float beta : {0.95f, 0.3f}) {  // Muon (elem/op_muon.h): both lerp forms, nesterov or not
    for (uint64_t nesterov : {0u, 1u}) {
      fg_optim_config mc = fg_optim_defaults(FG_OPTIM_MUON);
      mc.momentum = beta, mc.nesterov = nesterov != 0;
      c = mk(FG_OP_MUON_MOMENTUM, 3);
      c.p = optim_params(mc, "momentum", 1);
      c.dt[0] = c.dt[1] = FG_F32;
      v.push_back(c);
    }
  }
  c = mk(FG_OP_MUON_NS_COMB, 2);
  c.p.f[0] = -4.775f, c.p.f[1] = 2.0315f;
  c.dt[0] = c.dt[1] = FG_F32;
  v.push_back(c);
  c = mk(FG_OP_MUON_EYE, 1);
  c.p.u[0] = 5;
  c.dt[0] = FG_F32;
  v.push_back(c);
  fg_optim_config mc = fg_optim_defaults(FG_OPTIM_MUON);
  mc.weight_decay = 0.05f;  // keep = f32(1 - 0.02 * 0.05)
  sp = optim_params(mc, "apply", 1, 0.0346f);
  c = mk(FG_OP_MUON_APPLY, 2);
  c.p = sp;
  c.dt[1] = FG_F32;
  v.push_back(c);
  v.push_back(master(FG_OP_MUON_APPLY_MASTER, sp));
  // APOLLO-Mini (elem/op_apollo.h): moments, apply (sqrt(128) after the limiter), HF AdamW
  fg_optim_config ac = fg_optim_defaults(FG_OPTIM_APOLLO_MINI);
  ac.weight_decay = 0.1f;  // decay alpha = f32(-(0.01 * 0.1))
  c = mk(FG_OP_APOLLO_MOMENT, 3);
  c.p = optim_params(ac, "moment", 3);
  c.dt[0] = c.dt[1] = c.dt[2] = FG_F32;
  v.push_back(c);
  sp = optim_params(ac, "fallback", 3);
  c = mk(FG_OP_APOLLO_HF_ADAMW, 4);
  c.p = sp;
  c.dt[1] = c.dt[2] = c.dt[3] = FG_F32;
  v.push_back(c);
  c = master(FG_OP_APOLLO_HF_ADAMW_MASTER, sp);
  c.dt[2] = c.dt[3] = FG_F32;
  v.push_back(c);
  ac.weight_decay = 0.05f;
  sp = optim_params(ac, "apply", 3);
  c = mk(FG_OP_APOLLO_APPLY, 2);
  c.p = sp;
  c.dt[1] = FG_F32;
  v.push_back(c);
  v.push_back(master(FG_OP_APOLLO_APPLY_MASTER, sp));
  return v;
}

inline bool is_adam(fg_op_kind op) {
  return op == FG_OP_ADAMW || op == FG_OP_ADAM || op == FG_OP_ADAMW_MASTER || op == FG_OP_ADAM_MASTER;
}

// Inputs for case c: count tensors of the given sizes, specials in every stream, second
// moments non-negative, odd index0 on every other tensor (RNG windows off the pair grid).
inline std::vector<OpTensor> op_inputs(const OpCase &c, const std::vector<size_t> &sizes, uint64_t seed) {
  std::vector<OpTensor> list(sizes.size());
  for (size_t t = 0; t < sizes.size(); t++) {
    OpTensor &x = list[t];
    x.n = sizes[t];
    x.seed = seed * 1000003u + t;
    x.index0 = (t % 2) ? 12345 + t : 0;
    for (unsigned k = 0; k < c.nstreams; k++)
      x.s[k] = op_stream_values(c.dt[k], x.n, seed + 31 * t + k, k == 3 ? 0.01f : 1.0f, k == 3 && is_adam(c.op));
  }
  return list;
}

}  // namespace fgt
