// The parameter registry: the table's checks, registration into an optimizer (all or
// nothing, state-dict names as slot names), and state dicts through it: Fucina's
// model.safetensors loads and is written back byte for byte; strict, non-strict, aliased and
// failing loads (a failure changes no tensor byte).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/registry.h"
#include "testutil.h"

namespace {

using Bytes = std::vector<uint8_t>;

// ckpt_gen.zig's tiny model, in its entry order: every state-dict dtype, a non-ASCII name.
struct Model {
  fg_device *dev = nullptr;
  std::vector<fg_tensor *> ts;
  std::vector<fg_registry_entry> table;
  fg_registry *reg = nullptr;
  Model() {
    EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev));
    struct Spec {
      const char *name;
      fg_dtype dt;
      int ndim;
      uint64_t shape[2];
      bool trainable;
    } specs[] = {{"layers.0.weight", FG_F32, 2, {2, 3}, true}, {"embed", FG_F32, 2, {3, 2}, true},
                 {"bl\xc3\xb6" "ck.scale", FG_F32, 1, {1, 0}, true}, {"norm.weight", FG_BF16, 1, {3, 0}, true},
                 {"head.bias", FG_F16, 1, {2, 0}, false},          {"positions", FG_I64, 2, {2, 2}, false}};
    uint8_t fill = 1;
    for (const Spec &s : specs) {
      fg_tensor *t = nullptr;
      EXPECT_EQ(FG_OK, fg_tensor_create(dev, s.name, s.dt, s.ndim, s.shape, &t));
      Bytes v(t->nbytes, fill++);
      EXPECT_EQ(FG_OK, fg_tensor_upload(t, v.data(), v.size(), nullptr));
      ts.push_back(t);
      table.push_back({s.name, t, s.trainable});
    }
    EXPECT_EQ(FG_OK, fg_registry_create(table.data(), table.size(), &reg)) << fg_last_error();
  }
  ~Model() {
    fg_registry_free(reg);
    for (fg_tensor *t : ts) fg_tensor_free(t);
    fg_device_close(dev);
  }
  Bytes all() const {
    Bytes r;
    for (fg_tensor *t : ts) r.insert(r.end(), (uint8_t *)t->data, (uint8_t *)t->data + t->nbytes);
    return r;
  }
  Bytes serialize() const {
    uint8_t *p = nullptr;
    size_t n = 0;
    EXPECT_EQ(FG_OK, fg_registry_serialize(reg, &p, &n)) << fg_last_error();
    Bytes r(p, p + n);
    free(p);
    return r;
  }
};

std::string fucina_model() { return std::string(FORGIA_TEST_DATA) + "/golden/fucina_ckpt/model.safetensors"; }

}  // namespace

TEST(Registry, EntriesAndLookups) {
  Model m;
  ASSERT_EQ(6u, fg_registry_count(m.reg));
  EXPECT_STREQ("embed", fg_registry_entry_at(m.reg, 1)->name);
  EXPECT_EQ(m.ts[5], fg_registry_find(m.reg, "positions")->tensor);
  EXPECT_FALSE(fg_registry_find(m.reg, "positions")->trainable);
  EXPECT_EQ(nullptr, fg_registry_find(m.reg, "nope"));
  EXPECT_EQ(nullptr, fg_registry_entry_at(m.reg, 6));
  // A NULL name takes the tensor's own.
  fg_registry_entry one = {nullptr, m.ts[1], true};
  fg_registry *r = nullptr;
  ASSERT_EQ(FG_OK, fg_registry_create(&one, 1, &r));
  EXPECT_STREQ("embed", fg_registry_entry_at(r, 0)->name);
  fg_registry_free(r);
}

TEST(Registry, BadTablesAreRefused) {
  Model m;
  fg_registry *r = nullptr;
  std::vector<fg_registry_entry> t = {{"a", m.ts[0], true}, {"a", m.ts[1], true}};
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_registry_create(t.data(), 2, &r));
  t = {{"a", m.ts[0], true}, {"b", m.ts[0], false}};
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_registry_create(t.data(), 2, &r));
  t = {{"pos", m.ts[5], true}}; // i64 cannot be trained
  EXPECT_EQ(FG_ERR_TYPE, fg_registry_create(t.data(), 1, &r));
  t = {{"", m.ts[0], true}};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_registry_create(t.data(), 1, &r));
  t = {{"__metadata__", m.ts[0], true}};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_registry_create(t.data(), 1, &r));
  t = {{"bad\xff", m.ts[0], true}};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_registry_create(t.data(), 1, &r));
  fg_tensor *q = nullptr;
  const uint64_t shape[1] = {32};
  ASSERT_EQ(FG_OK, fg_tensor_create(m.dev, "q", FG_Q4_0, 1, shape, &q));
  t = {{"q", q, false}};
  EXPECT_EQ(FG_ERR_TYPE, fg_registry_create(t.data(), 1, &r));
  fg_tensor_free(q);
  EXPECT_EQ(nullptr, r);
}

TEST(Registry, AddToOptimRegistersTrainableEntriesByName) {
  Model m;
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_ADAMW);
  fg_optim *o = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_create(m.dev, &c, &o));
  ASSERT_EQ(FG_OK, fg_registry_add_to_optim(m.reg, o)) << fg_last_error();
  ASSERT_EQ(4u, fg_optim_count(o));
  for (size_t i = 0; i < 4; i++) EXPECT_STREQ(fg_registry_entry_at(m.reg, i)->name, fg_optim_name_at(o, i));
  // A second time every entry collides; nothing more is registered.
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_registry_add_to_optim(m.reg, o));
  EXPECT_EQ(4u, fg_optim_count(o));
  fg_optim_free(o);
  // A name the optimizer holds already (the LAST trainable entry's) refuses the whole call.
  ASSERT_EQ(FG_OK, fg_optim_create(m.dev, &c, &o));
  fg_tensor *other = nullptr;
  const uint64_t shape[1] = {4};
  ASSERT_EQ(FG_OK, fg_tensor_create(m.dev, "x", FG_F32, 1, shape, &other));
  ASSERT_EQ(FG_OK, fg_optim_add(o, other, "norm.weight"));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_registry_add_to_optim(m.reg, o));
  EXPECT_EQ(1u, fg_optim_count(o));
  fg_optim_free(o);
  fg_tensor_free(other);
}

TEST(Registry, FucinasModelLoadsAndSavesBackByteForByte) {
  Model m;
  const Bytes file = fgt::read_file(fucina_model());
  ASSERT_FALSE(file.empty());
  ASSERT_EQ(FG_OK, fg_registry_load_file(m.reg, fucina_model().c_str(), nullptr, nullptr)) << fg_last_error();
  const float w[6] = {0.5f, -1.25f, 3.0f, 0.001f, -0.0f, 1.0e-30f};
  EXPECT_EQ(0, std::memcmp(w, m.ts[0]->data, sizeof w));
  const int64_t pos[4] = {0, 1, -7, (int64_t)1 << 40};
  EXPECT_EQ(0, std::memcmp(pos, m.ts[5]->data, sizeof pos));
  const uint16_t nrm[3] = {0x3f80, 0xbf00, 0x4049};
  EXPECT_EQ(0, std::memcmp(nrm, m.ts[3]->data, sizeof nrm));
  EXPECT_EQ(file, m.serialize());
  fgt::TempDir dir;
  ASSERT_EQ(FG_OK, fg_registry_save(m.reg, dir.file("model.safetensors").c_str()));
  EXPECT_EQ(file, fgt::read_file(dir.file("model.safetensors")));
  fg_registry_snapshot snap;
  ASSERT_EQ(FG_OK, fg_registry_snapshot_take(m.reg, true, &snap));
  ASSERT_EQ(4u, snap.n);
  EXPECT_STREQ("norm.weight", snap.entries[3].name);
  EXPECT_EQ(0, std::memcmp(nrm, snap.entries[3].data, sizeof nrm));
  fg_registry_snapshot_free(&snap);
}

TEST(Registry, FailedLoadsChangeNoByte) {
  Model src;
  const Bytes good = src.serialize();
  Model dst;
  for (fg_tensor *t : dst.ts) std::memset(t->data, 0x55, t->nbytes);
  const Bytes before = dst.all();
  // Strict: one destination missing from the stream.
  std::vector<fg_registry_entry> sub(src.table.begin(), src.table.begin() + 5);
  fg_registry *five = nullptr;
  ASSERT_EQ(FG_OK, fg_registry_create(sub.data(), sub.size(), &five));
  uint8_t *p = nullptr;
  size_t n = 0;
  ASSERT_EQ(FG_OK, fg_registry_serialize(five, &p, &n));
  const Bytes partial(p, p + n);
  free(p);
  EXPECT_EQ(FG_ERR_NOT_FOUND, fg_registry_load_bytes(dst.reg, partial.data(), partial.size(), "partial", nullptr, nullptr));
  EXPECT_EQ(before, dst.all());
  // A shape unlike the destination's, in the stream's last tensor.
  fg_tensor *wide = nullptr;
  const uint64_t shape[2] = {4, 1};
  ASSERT_EQ(FG_OK, fg_tensor_create(src.dev, "positions", FG_I64, 2, shape, &wide));
  sub.push_back({"positions", wide, false});
  fg_registry *bad = nullptr;
  ASSERT_EQ(FG_OK, fg_registry_create(sub.data(), sub.size(), &bad));
  ASSERT_EQ(FG_OK, fg_registry_serialize(bad, &p, &n));
  const Bytes misshapen(p, p + n);
  free(p);
  EXPECT_EQ(FG_ERR_BAD_SHAPE, fg_registry_load_bytes(dst.reg, misshapen.data(), misshapen.size(), "x", nullptr, nullptr));
  EXPECT_EQ(before, dst.all());
  // Truncated streams.
  for (size_t cut = 0; cut < good.size(); cut += 13) {
    ASSERT_NE(FG_OK, fg_registry_load_bytes(dst.reg, good.data(), cut, "cut", nullptr, nullptr)) << cut;
    ASSERT_EQ(before, dst.all()) << cut;
  }
  // Non-strict: the five present load, "positions" keeps its bytes.
  fg_state_dict_load_opts ns = {};
  ns.non_strict = true;
  bool loaded[6] = {};
  ASSERT_EQ(FG_OK, fg_registry_load_bytes(dst.reg, partial.data(), partial.size(), "partial", &ns, loaded));
  for (int i = 0; i < 5; i++) {
    EXPECT_TRUE(loaded[i]);
    EXPECT_EQ(0, std::memcmp(src.ts[i]->data, dst.ts[i]->data, src.ts[i]->nbytes)) << i;
  }
  EXPECT_FALSE(loaded[5]);
  EXPECT_EQ(Bytes(dst.ts[5]->nbytes, 0x55), Bytes((uint8_t *)dst.ts[5]->data, (uint8_t *)dst.ts[5]->data + 32));
  // An alias: the stream's "embed" loads into a registry entry renamed "tok_embed".
  std::vector<fg_registry_entry> renamed = dst.table;
  renamed[1].name = "tok_embed";
  fg_registry *rr = nullptr;
  ASSERT_EQ(FG_OK, fg_registry_create(renamed.data(), renamed.size(), &rr));
  std::memset(dst.ts[1]->data, 0, dst.ts[1]->nbytes);
  const fg_state_dict_alias al = {"embed", "tok_embed"};
  fg_state_dict_load_opts ao = {};
  ao.aliases = &al;
  ao.naliases = 1;
  ASSERT_EQ(FG_OK, fg_registry_load_bytes(rr, good.data(), good.size(), "good", &ao, nullptr)) << fg_last_error();
  EXPECT_EQ(src.all(), dst.all());
  fg_registry_free(rr);
  fg_registry_free(five);
  fg_registry_free(bad);
  fg_tensor_free(wide);
}
