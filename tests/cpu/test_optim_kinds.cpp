// Optimizer descriptors and the stable surface of forgia/optim.h: the fixed numbers of the
// public enums, the size of fg_optim_config, each kind's defaults, fields and op packing,
// and the frame rows (forgia/optim_frame.h), all through the public API.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>

#include "forgia/forgia.h"

namespace {

constexpr fg_optim_kind kKinds[] = {FG_OPTIM_SGD,  FG_OPTIM_ADAM,   FG_OPTIM_ADAMW,
                                    FG_OPTIM_MUON, FG_OPTIM_APOLLO, FG_OPTIM_APOLLO_MINI};

// Code built against one release must keep its numbers and its struct layout in the next:
// a new kind takes the next number and a struct in the config's union.
TEST(OptimKinds, PublicNumbersAndConfigSizeArePinned) {
  EXPECT_EQ(176u, sizeof(fg_optim_config));
  EXPECT_EQ((size_t)FG_OPTIM_CONFIG_SIZE, sizeof(fg_optim_config));
  EXPECT_EQ(48u, offsetof(fg_optim_config, ns_steps));  // the kind union starts after the common fields
  EXPECT_EQ(48u, offsetof(fg_optim_config, rank));
  EXPECT_EQ(0, (int)FG_OPTIM_SGD);
  EXPECT_EQ(1, (int)FG_OPTIM_ADAM);
  EXPECT_EQ(2, (int)FG_OPTIM_ADAMW);
  EXPECT_EQ(3, (int)FG_OPTIM_MUON);
  EXPECT_EQ(4, (int)FG_OPTIM_APOLLO);
  EXPECT_EQ(5, (int)FG_OPTIM_APOLLO_MINI);
  EXPECT_EQ(0, (int)FG_MUON_SPECTRAL);
  EXPECT_EQ(1, (int)FG_MUON_MATCH_RMS_ADAMW);
  EXPECT_EQ(0, (int)FG_APOLLO_CHANNEL);
  EXPECT_EQ(1, (int)FG_APOLLO_TENSOR);
  EXPECT_EQ(0, (int)FG_OFRAME_KIND_ADAMW);
  EXPECT_EQ(1, (int)FG_OFRAME_KIND_ADAM);
  EXPECT_EQ(2, (int)FG_OFRAME_KIND_SGD);
  EXPECT_EQ(3, (int)FG_OFRAME_KIND_MUON);
  EXPECT_EQ(4, (int)FG_OFRAME_KIND_APOLLO);
  EXPECT_EQ(5, (int)FG_OFRAME_KIND_SET);
  EXPECT_EQ(6, (int)FG_OFRAME_KIND_TENSORS);
}

TEST(OptimKinds, EveryKindHasOneDescriptorNumberedWithoutGaps) {
  const char *names[] = {"sgd", "adam", "adamw", "muon", "apollo", "apollo-mini"};
  for (fg_optim_kind k : kKinds) {
    const fg_optim_kind_desc *d = fg_optim_kind_describe(k);
    ASSERT_NE(nullptr, d) << k;
    EXPECT_EQ(k, d->kind);
    EXPECT_STREQ(names[k], d->name);
    EXPECT_STREQ(names[k], fg_optim_kind_name(k));
    EXPECT_NE(nullptr, fg_optim_frame_describe(d->frame_kind));
    EXPECT_EQ(d->has_fallback, k == FG_OPTIM_MUON || k == FG_OPTIM_APOLLO || k == FG_OPTIM_APOLLO_MINI);
    EXPECT_GT(d->n_fields, 0u);
    EXPECT_GT(d->n_packs, 0u);
  }
  EXPECT_EQ(nullptr, fg_optim_kind_describe((fg_optim_kind)6));
  EXPECT_EQ(nullptr, fg_optim_kind_describe((fg_optim_kind)-1));
  EXPECT_EQ(nullptr, fg_optim_kind_name((fg_optim_kind)6));
}

// Fucina's defaults, as fg_optim_defaults gave them before the descriptors held them.
TEST(OptimKinds, DefaultsAreFucinas) {
  for (fg_optim_kind k : kKinds) {
    const fg_optim_config c = fg_optim_defaults(k);
    const bool muon = k == FG_OPTIM_MUON, apollo = k == FG_OPTIM_APOLLO || k == FG_OPTIM_APOLLO_MINI;
    EXPECT_EQ(k, c.kind);
    EXPECT_EQ(muon ? 0.02f : apollo ? 0.01f : 1e-3f, c.lr) << k;
    EXPECT_EQ(k == FG_OPTIM_ADAMW ? 0.01f : 0.0f, c.weight_decay) << k;
    EXPECT_EQ(muon ? 0.95f : 0.0f, c.momentum) << k;
    EXPECT_EQ(0.0f, c.dampening) << k;
    EXPECT_EQ(muon, c.nesterov) << k;
    EXPECT_EQ(0.9f, c.beta1) << k;
    EXPECT_EQ(0.999f, c.beta2) << k;
    EXPECT_EQ(apollo ? 1e-6f : 1e-8f, c.eps) << k;
    EXPECT_EQ(FG_F32, c.state_dtype) << k;
    EXPECT_EQ(FG_F32, c.second_moment_dtype) << k;
    if (muon) {
      EXPECT_EQ(5u, c.ns_steps);
      EXPECT_EQ(FG_MUON_SPECTRAL, c.muon_scale);
      EXPECT_EQ(3e-4f, c.fallback.lr);
      EXPECT_EQ(0.9f, c.fallback.beta1);
      EXPECT_EQ(0.95f, c.fallback.beta2);
      EXPECT_EQ(1e-10f, c.fallback.eps);
      EXPECT_EQ(0.0f, c.fallback.weight_decay);
      EXPECT_EQ(FG_F32, c.fallback.state_dtype);
      EXPECT_EQ(FG_F32, c.fallback.second_moment_dtype);
    }
    if (apollo) {
      const bool mini = k == FG_OPTIM_APOLLO_MINI;
      EXPECT_EQ(mini ? 1u : 128u, c.rank);
      EXPECT_EQ(200u, c.update_proj_gap);
      EXPECT_EQ(mini ? 128.0f : 1.0f, c.apollo_scale);
      EXPECT_EQ(mini ? FG_APOLLO_TENSOR : FG_APOLLO_CHANNEL, c.scale_type);
      EXPECT_TRUE(c.correct_bias);
      EXPECT_FALSE(c.scale_front);
      EXPECT_FALSE(c.disable_norm_growth_limiter);
      EXPECT_EQ(0u, c.seed);
    }
    EXPECT_EQ(FG_OK, fg_optim_config_check(&c)) << k << ": " << fg_last_error();
  }
}

// Each field a descriptor lists names a distinct key and holds its default in the config
// fg_optim_defaults makes; enums name both values.
TEST(OptimKinds, FieldsAgreeWithTheDefaults) {
  for (fg_optim_kind k : kKinds) {
    const fg_optim_kind_desc *d = fg_optim_kind_describe(k);
    const fg_optim_config c = fg_optim_defaults(k);
    for (int list = 0; list < 2; list++) {
      const fg_optim_field *fs = list ? d->fallback_fields : d->fields;
      const size_t n = list ? d->n_fallback_fields : d->n_fields;
      const char *base = list ? (const char *)&c.fallback : (const char *)&c;
      for (size_t i = 0; i < n; i++) {
        const fg_optim_field &f = fs[i];
        for (size_t j = 0; j < i; j++) EXPECT_STRNE(f.name, fs[j].name) << d->name;
        const char *p = base + f.offset;
        double v = 0;
        switch (f.type) {
          case FG_OPTIM_FIELD_F32: v = *(const float *)p; break;
          case FG_OPTIM_FIELD_BOOL: v = *(const bool *)p; break;
          case FG_OPTIM_FIELD_DTYPE: v = *(const fg_dtype *)p; break;
          case FG_OPTIM_FIELD_U32: v = (double)*(const uint32_t *)p; break;
          case FG_OPTIM_FIELD_U64: v = (double)*(const uint64_t *)p; break;
          case FG_OPTIM_FIELD_ENUM:
            v = *(const int *)p;
            EXPECT_TRUE(f.names[0] && f.names[1]) << d->name << "." << f.name;
            break;
        }
        const double def = f.type == FG_OPTIM_FIELD_F32 ? (double)(float)f.def : f.def;
        EXPECT_EQ(def, v) << d->name << "." << f.name;
      }
    }
  }
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

const fg_optim_op_pack *pack_of(fg_optim_kind k, const char *role) {
  const fg_optim_kind_desc *d = fg_optim_kind_describe(k);
  for (size_t i = 0; i < d->n_packs; i++)
    if (std::strcmp(d->packs[i].role, role) == 0) return &d->packs[i];
  return nullptr;
}

// The parameter blocks the elementwise kinds launch, slot by slot (elem/op_table.h), with the
// f64 preparation rounded once as Fucina does.
TEST(OptimKinds, StepPackingFollowsTheOpTable) {
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_ADAMW);
  c.lr = 3e-4f, c.beta1 = 0.8f, c.beta2 = 0.95f, c.eps = 1e-7f, c.weight_decay = 0.1f;
  const uint64_t t = 7;
  const double bc1 = 1.0 - std::pow((double)c.beta1, 7.0), bc2 = 1.0 - std::pow((double)c.beta2, 7.0);
  const fg_optim_op_pack *pk = pack_of(FG_OPTIM_ADAMW, "step");
  ASSERT_NE(nullptr, pk);
  EXPECT_EQ(FG_OP_ADAMW, pk->op);
  EXPECT_EQ(FG_OP_ADAMW_MASTER, pk->op_master);
  fg_op_params p;
  pk->pack(&c, t, 0.0f, &p);
  EXPECT_EQ(bits((float)(1.0 - (double)c.lr * (double)c.weight_decay)), bits(p.f[0]));
  EXPECT_EQ(bits((float)(1.0 - (double)c.beta1)), bits(p.f[1]));
  EXPECT_EQ(bits(c.beta2), bits(p.f[2]));
  EXPECT_EQ(bits((float)(1.0 - (double)c.beta2)), bits(p.f[3]));
  EXPECT_EQ(bits((float)((double)c.lr / bc1)), bits(p.f[4]));
  EXPECT_EQ(bits((float)std::sqrt(bc2)), bits(p.f[5]));
  EXPECT_EQ(bits(c.eps), bits(p.f[6]));
  EXPECT_EQ(0u, bits(p.f[7]));

  c.kind = FG_OPTIM_ADAM;  // coupled decay: no keep factor, wd in f[7]
  pk = pack_of(FG_OPTIM_ADAM, "step");
  ASSERT_NE(nullptr, pk);
  EXPECT_EQ(FG_OP_ADAM, pk->op);
  fg_op_params q;
  pk->pack(&c, t, 0.0f, &q);
  EXPECT_EQ(1.0f, q.f[0]);
  EXPECT_EQ(0, std::memcmp(&p.f[1], &q.f[1], 6 * sizeof(float)));
  EXPECT_EQ(bits(c.weight_decay), bits(q.f[7]));

  fg_optim_config s = fg_optim_defaults(FG_OPTIM_SGD);
  s.lr = 0.1f, s.weight_decay = 0.05f, s.momentum = 0.9f, s.dampening = 0.25f, s.nesterov = true;
  pk = pack_of(FG_OPTIM_SGD, "momentum step");
  ASSERT_NE(nullptr, pk);
  EXPECT_EQ(FG_OP_SGD_MOMENTUM, pk->op);
  EXPECT_EQ(FG_OP_SGD_MOMENTUM_MASTER, pk->op_master);
  pk->pack(&s, 1, 0.0f, &p);
  EXPECT_EQ(0.1f, p.f[0]);
  EXPECT_EQ(0.05f, p.f[1]);
  EXPECT_EQ(0.9f, p.f[2]);
  EXPECT_EQ(0.75f, p.f[3]);
  EXPECT_EQ(3u, p.u[0]);  // nesterov, first step
  pk->pack(&s, 2, 0.0f, &p);
  EXPECT_EQ(1u, p.u[0]);
}

// The frame rows: the magics Fucina writes, the buffers per slot, the header fields.
TEST(OptimKinds, FrameRowsDescribeFucinasMagics) {
  struct Row {
    fg_oframe_kind kind;
    const char *name, *v3, *v4, *v5;
    int bufs;
    size_t header;
  } rows[] = {{FG_OFRAME_KIND_ADAMW, "adamw", "FZA3", "FZA4", "FZA5", 2, 0},
              {FG_OFRAME_KIND_ADAM, "adam", "FZAD", "FZD4", "FZD5", 2, 0},
              {FG_OFRAME_KIND_SGD, "sgd", "FZS3", "FZS4", "FZS5", 1, 3},
              {FG_OFRAME_KIND_MUON, "muon", "FZM3", "FZM4", "FZM5", 1, 3},
              {FG_OFRAME_KIND_APOLLO, "apollo", "FZP3", nullptr, "FZP5", 2, 7},
              {FG_OFRAME_KIND_SET, "set", "FZO3", nullptr, nullptr, 0, 0}};
  for (const Row &r : rows) {
    const fg_oframe_kind_desc *d = fg_optim_frame_describe(r.kind);
    ASSERT_NE(nullptr, d) << r.name;
    EXPECT_EQ(r.kind, d->kind);
    EXPECT_STREQ(r.name, d->name);
    const char *want[3] = {r.v3, r.v4, r.v5};
    for (int v = 0; v < 3; v++) {
      if (want[v]) EXPECT_STREQ(want[v], d->magics[v + 3]) << r.name << " v" << v + 3;
      else EXPECT_EQ(nullptr, d->magics[v + 3]) << r.name << " v" << v + 3;
    }
    EXPECT_EQ(r.bufs, d->n_bufs);
    EXPECT_EQ(r.bufs, fg_optim_frame_bufs_per_slot(r.kind));
    EXPECT_EQ(r.header, d->n_header) << r.name;
  }
  EXPECT_STREQ("FZT1", fg_optim_frame_describe(FG_OFRAME_KIND_TENSORS)->magics[1]);
  EXPECT_EQ(nullptr, fg_optim_frame_describe((fg_oframe_kind)7));
}

}  // namespace
