// State dicts: the frame is Fucina's byte for byte (golden written by Fucina's
// state_dict.saveStateDict), loads are by name, strict or not, with aliases, and
// transactional: every failure leaves every destination byte as it was.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "forgia/state_dict.h"
#include "fucina_ckpt_fixture.h"
#include "testutil.h"

namespace {

const std::string kGolden = std::string(FORGIA_TEST_DATA) + "/golden/fucina_ckpt/model.safetensors";

std::vector<uint8_t> serialize(const std::vector<fg_state_dict_entry> &e) {
  uint8_t *p = nullptr;
  size_t n = 0;
  EXPECT_EQ(fg_state_dict_serialize(e.data(), e.size(), &p, &n), FG_OK) << fg_last_error();
  std::vector<uint8_t> r(p, p + n);
  free(p);
  return r;
}

fg_status load(const std::vector<uint8_t> &bytes, std::vector<fg_state_dict_dest> &d,
               const fg_state_dict_load_opts *o = nullptr, bool *loaded = nullptr) {
  return fg_state_dict_load_bytes(bytes.data(), bytes.size(), "sd", d.data(), d.size(), o, loaded);
}

bool says(const char *what) { return std::string(fg_last_error()).find(what) != std::string::npos; }

TEST(StateDict, FrameIsFucinasBytes) {
  fgt::FucinaModel m;
  auto e = m.entries();
  EXPECT_EQ(serialize(e), fgt::read_file(kGolden));
  fgt::TempDir d;
  ASSERT_EQ(fg_state_dict_save(d.file("m.safetensors").c_str(), e.data(), e.size()), FG_OK) << fg_last_error();
  EXPECT_EQ(fgt::read_file(d.file("m.safetensors")), fgt::read_file(kGolden));
  fg_st_file *f = nullptr;
  ASSERT_EQ(fg_st_open(kGolden.c_str(), FG_MAP_READ, &f), FG_OK);
  EXPECT_FALSE(fg_st_has_metadata(f));
  fg_st_close(f);
}

TEST(StateDict, LoadsFucinasFileStrict) {
  fgt::FucinaDests d;
  auto dests = d.dests();
  std::reverse(dests.begin(), dests.end());  // any order
  bool loaded[6] = {};
  ASSERT_EQ(fg_state_dict_load_file(kGolden.c_str(), dests.data(), dests.size(), nullptr, loaded), FG_OK)
      << fg_last_error();
  EXPECT_TRUE(d.equals(fgt::FucinaModel()));
  for (bool b : loaded) EXPECT_TRUE(b);
}

TEST(StateDict, WriterRefusesBadEntriesBeforeWriting) {
  fgt::FucinaModel m;
  uint64_t sh[1] = {2};
  double f64[2] = {1, 2};
  struct {
    fg_state_dict_entry bad;
    fg_status want;
    const char *says;
  } cases[] = {
      {{"", FG_F32, 1, m.sh_s, m.s, 4}, FG_ERR_INVALID_ARG, "empty name"},
      {{"bad\xff", FG_F32, 1, m.sh_s, m.s, 4}, FG_ERR_INVALID_ARG, "not UTF-8"},
      {{"bad\xc3", FG_F32, 1, m.sh_s, m.s, 4}, FG_ERR_INVALID_ARG, "not UTF-8"},
      {{"__metadata__", FG_F32, 1, m.sh_s, m.s, 4}, FG_ERR_INVALID_ARG, "__metadata__"},
      {{"d", FG_F64, 1, sh, f64, 16}, FG_ERR_INVALID_ARG, "expected F32, F16, BF16 or I64"},
      {{"q", FG_Q4_0, 1, sh, f64, 16}, FG_ERR_INVALID_ARG, "expected F32, F16, BF16 or I64"},
      {{"n", FG_F32, 1, m.sh_s, m.s, 8}, FG_ERR_INVALID_ARG, "nbytes 8; expected 4"},
      {{"embed", FG_F32, 1, m.sh_s, m.s, 4}, FG_ERR_DUPLICATE, "\"embed\""},
  };
  fgt::TempDir d;
  for (auto &c : cases) {
    auto e = m.entries();
    e.push_back(c.bad);
    uint8_t *p = reinterpret_cast<uint8_t *>(1);
    size_t n = 0;
    EXPECT_EQ(fg_state_dict_serialize(e.data(), e.size(), &p, &n), c.want) << c.says;
    EXPECT_TRUE(says(c.says)) << fg_last_error();
    EXPECT_EQ(fg_state_dict_save(d.file("x").c_str(), e.data(), e.size()), c.want);
    EXPECT_NE(access(d.file("x").c_str(), F_OK), 0) << "nothing is written";
  }
}

TEST(StateDict, FramesFollowOneAnotherOnAStream) {
  fgt::FucinaModel m;
  auto e = m.entries();
  FILE *f = tmpfile();
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(fg_state_dict_write_frame(f, e.data(), e.size()), FG_OK);
  ASSERT_EQ(fg_state_dict_write_frame(f, e.data(), 2), FG_OK);
  rewind(f);
  for (size_t want : {size_t(6), size_t(2)}) {
    fg_st_file *st = nullptr;
    ASSERT_EQ(fg_st_read_frame(f, "stream", &st), FG_OK) << fg_last_error();
    fgt::FucinaDests d;
    auto dests = d.dests();
    dests.resize(want);
    EXPECT_EQ(fg_state_dict_load(st, dests.data(), dests.size(), nullptr, nullptr), FG_OK) << fg_last_error();
    EXPECT_EQ(memcmp(d.m.w, m.w, sizeof m.w), 0);
    fg_st_close(st);
  }
  fclose(f);
}

TEST(StateDict, StrictLoadRefusesMismatchesAndChangesNothing) {
  fgt::FucinaModel m;
  auto bytes = serialize(m.entries());
  {  // a destination of another dtype; the stream's other tensors all match
    fgt::FucinaDests d;
    auto dests = d.dests();
    dests[5].dtype = FG_F16;  // positions: I64 in the stream
    dests[5].nbytes = 8;
    EXPECT_EQ(load(bytes, dests), FG_ERR_BAD_DTYPE);
    EXPECT_TRUE(says("\"positions\"") && says("dtype i64; expected f16")) << fg_last_error();
    EXPECT_TRUE(d.untouched());
  }
  {  // another shape with the same byte count
    fgt::FucinaDests d;
    auto dests = d.dests();
    uint64_t sh[2] = {2, 3};
    dests[1].shape = sh;  // embed is [3, 2]
    EXPECT_EQ(load(bytes, dests), FG_ERR_BAD_SHAPE);
    EXPECT_TRUE(says("\"embed\"") && says("shape [3, 2]; expected [2, 3]")) << fg_last_error();
    EXPECT_TRUE(d.untouched());
  }
  {  // a stream tensor without a destination
    fgt::FucinaDests d;
    auto dests = d.dests();
    dests.erase(dests.begin() + 3);  // norm.weight
    EXPECT_EQ(load(bytes, dests), FG_ERR_NOT_FOUND);
    EXPECT_TRUE(says("\"norm.weight\" has no destination")) << fg_last_error();
    EXPECT_TRUE(d.untouched());
  }
  {  // a destination missing from the stream
    fgt::FucinaDests d;
    auto dests = d.dests();
    float extra[2] = {7, 7};
    uint64_t sh[1] = {2};
    dests.push_back({"extra", FG_F32, 1, sh, extra, sizeof extra});
    EXPECT_EQ(load(bytes, dests), FG_ERR_NOT_FOUND);
    EXPECT_TRUE(says("destination \"extra\" is missing")) << fg_last_error();
    EXPECT_TRUE(d.untouched());
    EXPECT_EQ(extra[0], 7.0f);
  }
  {  // two destinations of one name
    fgt::FucinaDests d;
    auto dests = d.dests();
    dests[2].name = "embed";
    EXPECT_EQ(load(bytes, dests), FG_ERR_DUPLICATE);
    EXPECT_TRUE(d.untouched());
  }
}

TEST(StateDict, NonStrictSkipsUnknownAndKeepsMissing) {
  fgt::FucinaModel m;
  auto bytes = serialize(m.entries());
  fgt::FucinaDests d;
  auto dests = d.dests();
  dests.erase(dests.begin());  // layers.0.weight: in the stream, no destination
  float extra[2] = {7, 7};
  uint64_t sh[1] = {2};
  dests.push_back({"extra", FG_F32, 1, sh, extra, sizeof extra});
  fg_state_dict_load_opts o = {};
  o.non_strict = true;
  bool loaded[6];
  ASSERT_EQ(load(bytes, dests, &o, loaded), FG_OK) << fg_last_error();
  for (int i = 0; i < 5; i++) EXPECT_TRUE(loaded[i]) << i;
  EXPECT_FALSE(loaded[5]);
  EXPECT_EQ(extra[0], 7.0f);
  EXPECT_EQ(memcmp(d.m.e, m.e, sizeof m.e), 0);
  EXPECT_EQ(memcmp(d.m.pos, m.pos, sizeof m.pos), 0);
  EXPECT_EQ(memcmp(d.m.w, fgt::FucinaDests().m.w, sizeof m.w), 0) << "no destination, no write";
  // Non-strict still refuses a mismatch, and still changes nothing.
  fgt::FucinaDests d2;
  auto dests2 = d2.dests();
  dests2[4].dtype = FG_BF16;  // head.bias is F16
  EXPECT_EQ(load(bytes, dests2, &o), FG_ERR_BAD_DTYPE);
  EXPECT_TRUE(d2.untouched());
}

TEST(StateDict, AliasesLoadRenamedEntries) {
  fgt::FucinaModel m;
  auto bytes = serialize(m.entries());
  fgt::FucinaDests d;
  auto dests = d.dests();
  dests[0].name = "blocks.0.weight";
  dests[3].name = "final_norm.weight";
  fg_state_dict_alias al[] = {{"layers.0.weight", "blocks.0.weight"},
                              {"norm.weight", "final_norm.weight"},
                              {"layers.0.weight", "embed"}};  // first match wins
  fg_state_dict_load_opts o = {false, al, 3};
  ASSERT_EQ(load(bytes, dests, &o), FG_OK) << fg_last_error();
  EXPECT_TRUE(d.equals(m));
  // An alias onto a name the stream also has: two tensors for one destination.
  fgt::FucinaDests d2;
  auto dests2 = d2.dests();
  fg_state_dict_alias clash[] = {{"layers.0.weight", "embed"}};
  fg_state_dict_load_opts o2 = {true, clash, 1};
  EXPECT_EQ(load(bytes, dests2, &o2), FG_ERR_DUPLICATE);
  EXPECT_TRUE(says("both load into \"embed\"")) << fg_last_error();
  EXPECT_TRUE(d2.untouched());
  // An alias to a destination that does not exist is a caller error.
  fg_state_dict_alias nowhere[] = {{"embed", "nowhere"}};
  fg_state_dict_load_opts o3 = {true, nowhere, 1};
  EXPECT_EQ(load(bytes, dests2, &o3), FG_ERR_INVALID_ARG);
  EXPECT_TRUE(d2.untouched());
}

TEST(StateDict, DamagedStreamsAreErrorsThatChangeNothing) {
  fgt::FucinaModel m;
  auto good = serialize(m.entries());
  for (size_t cut : {size_t(0), size_t(7), size_t(8), size_t(100), good.size() - 1}) {
    std::vector<uint8_t> b(good.begin(), good.begin() + cut);
    fgt::FucinaDests d;
    auto dests = d.dests();
    EXPECT_NE(load(b, dests), FG_OK) << cut;
    EXPECT_TRUE(d.untouched()) << cut;
  }
  auto frame = [](const std::string &h, size_t data) {
    std::vector<uint8_t> b(8 + h.size() + data, 0);
    uint64_t n = h.size();
    memcpy(b.data(), &n, 8);
    memcpy(b.data() + 8, h.data(), h.size());
    return b;
  };
  uint64_t sh[1] = {1};
  float x = 5;
  std::vector<fg_state_dict_dest> one = {{"a", FG_F32, 1, sh, &x, 4}};
  EXPECT_EQ(load(frame("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8), one),
            FG_ERR_DUPLICATE);
  EXPECT_EQ(load(frame("{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4), one),
            FG_ERR_HEADER_NOT_UTF8);
  EXPECT_EQ(load(frame("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4), one),
            FG_ERR_INVALID_JSON);
  EXPECT_EQ(x, 5.0f);
  // A dtype state dicts do not carry is a mismatch for the destination of its name.
  EXPECT_EQ(load(frame("{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8), one),
            FG_ERR_BAD_DTYPE);
  EXPECT_EQ(x, 5.0f);
  // A name holding a NUL matches no destination (strict: an error naming it).
  EXPECT_EQ(load(frame("{\"a\\u0000\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4), one),
            FG_ERR_NOT_FOUND);
  EXPECT_EQ(x, 5.0f);
}

}  // namespace
