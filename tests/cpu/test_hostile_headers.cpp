// Hostile headers cost work linear in their size. Names built to collide under the unkeyed
// FNV-1a the name tables used before (131,072 of them sharing the hash's low 20 bits, all in
// one probe chain of any table up to 2^20 slots: about 8.6e9 probes) cost a few probes each
// in the keyed table; the JSON tape of a header holds at most one node per 5 bytes whatever
// numbers, arrays and nesting it carries. The bounds are on counted work, never on time.
// (Peak memory of the same inputs at 100 MB: tests/slow/test_hostile_rss.cpp.)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "formats/gguf_internal.h"
#include "formats/safetensors_internal.h"
}
#include "forgia/gguf.h"
#include "forgia/safetensors.h"
#include "testutil.h"

namespace {

// Distinct names whose FNV-1a 64 hashes (offset basis `basis`) agree in their low 20 bits.
// The low bits of FNV-1a depend only on the low bits of the state, and xor with a byte then
// multiplication by the (odd, so invertible) prime can be run backwards: from the target,
// three steps back over a 62-letter alphabet give a table of the states that three letters
// lead to it. Each name is PREFIX "t<i>_" (plus a letter and a number when needed) and the
// letters its state calls for.
class Colliding {
 public:
  static constexpr uint64_t kPrime = 0x100000001b3ull;
  static constexpr int kBits = 20;
  static constexpr uint64_t kMask = (1ull << kBits) - 1;

  Colliding(uint64_t basis, uint64_t target) : basis_(basis), target_(target & kMask), tail_(kMask + 1, 0) {
    uint64_t inv = kPrime;  // Newton's iteration for the inverse mod 2^64
    for (int i = 0; i < 6; i++) inv *= 2 - kPrime * inv;
    for (char c3 : alpha()) {
      const uint64_t s3 = ((target_ * inv) & kMask) ^ (uint8_t)c3;
      for (char c2 : alpha()) {
        const uint64_t s2 = ((s3 * inv) & kMask) ^ (uint8_t)c2;
        for (char c1 : alpha()) {
          const uint64_t s1 = ((s2 * inv) & kMask) ^ (uint8_t)c1;
          tail_[s1] = (uint32_t)(uint8_t)c1 | (uint32_t)(uint8_t)c2 << 8 | (uint32_t)(uint8_t)c3 << 16;
        }
      }
    }
  }

  uint64_t fnv(const std::string &s) const {
    uint64_t h = basis_;
    for (unsigned char c : s) h = (h ^ c) * kPrime;
    return h;
  }

  std::string name(const std::string &prefix, size_t i) const {
    for (size_t v = 0;; v++) {
      std::string p =
          prefix + "t" + std::to_string(i) + "_" + (v ? std::string(1, alpha()[v % 62]) + std::to_string(v / 62) : "");
      const uint32_t t = tail_[fnv(p) & kMask];
      if (t) return p + (char)(t & 0xff) + (char)(t >> 8 & 0xff) + (char)(t >> 16);
    }
  }

  uint64_t target() const { return target_; }

 private:
  static const std::string &alpha() {
    static const std::string a = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    return a;
  }
  uint64_t basis_, target_;
  std::vector<uint32_t> tail_;
};

constexpr size_t kNames = 131072;
// Expected probes per insert at load <= 1/2 are about 2.5 for the search and 1.5 for the
// placement; a chain shared by every name would take kNames / 2 per insert.
constexpr uint64_t kProbesPerName = 8;

std::vector<std::string> colliding_names(uint64_t basis, const char *prefix) {
  Colliding c(basis, 0x5a5a5);
  std::vector<std::string> v;
  v.reserve(kNames);
  for (size_t i = 0; i < kNames; i++) {
    v.push_back(c.name(prefix, i));
    // the generator's own check: the old table would have put them all in one chain
    EXPECT_EQ(c.fnv(v.back()) & Colliding::kMask, c.target());
    if (::testing::Test::HasFailure()) break;
  }
  return v;
}

TEST(HostileHeaders, CollidingSafetensorsNamesCostBoundedProbes) {
  // the safetensors table hashed with FNV-1a under a mistyped offset basis (a digit short)
  const std::vector<std::string> names = colliding_names(1469598103934665603ull, "");
  ASSERT_EQ(names.size(), kNames);
  std::string h = "{";
  for (size_t i = 0; i < names.size(); i++)
    h += (i ? ",\"" : "\"") + names[i] + "\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}";
  h += "}";
  std::vector<uint8_t> file(8 + h.size());
  const uint64_t n = h.size();
  for (int i = 0; i < 8; i++) file[i] = (uint8_t)(n >> (8 * i));
  std::memcpy(file.data() + 8, h.data(), h.size());
  fg_st_file *f = nullptr;
  ASSERT_EQ(fg_st_parse(file.data(), file.size(), "colliding", &f), FG_OK) << fg_last_error();
  ASSERT_EQ(fg_st_count(f), kNames);
  const uint64_t probes = f->names.probes;
  std::printf("safetensors: %llu probes for %zu names\n", (unsigned long long)probes, kNames);
  EXPECT_LE(probes, kProbesPerName * kNames);
  for (size_t i = 0; i < names.size(); i += 997) ASSERT_NE(fg_st_find(f, names[i].c_str()), nullptr) << names[i];
  fg_st_close(f);
}

TEST(HostileHeaders, CollidingGgufKeysAndNamesCostBoundedProbes) {
  // the GGUF tables hashed with FNV-1a under its proper offset basis
  const std::vector<std::string> keys = colliding_names(0xcbf29ce484222325ull, "k.");
  const std::vector<std::string> names = colliding_names(0xcbf29ce484222325ull, "w.");
  ASSERT_EQ(keys.size(), kNames);
  ASSERT_EQ(names.size(), kNames);
  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
  const float one = 1.0f;
  const uint64_t ne[1] = {1};
  for (size_t i = 0; i < kNames; i++) {
    ASSERT_EQ(fg_gguf_writer_set_u8(w, keys[i].c_str(), (uint8_t)i), FG_OK) << fg_last_error();
    ASSERT_EQ(fg_gguf_writer_add_tensor(w, names[i].c_str(), FG_F32, 1, ne, &one, 4), FG_OK) << fg_last_error();
  }
  void *bytes = nullptr;
  size_t len = 0;
  ASSERT_EQ(fg_gguf_writer_finish_mem(w, &bytes, &len), FG_OK) << fg_last_error();
  fg_gguf_writer_free(w);
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(bytes, len, &f), FG_OK) << fg_last_error();
  ASSERT_EQ(fg_gguf_kv_count(f), kNames);
  ASSERT_EQ(fg_gguf_tensor_count(f), kNames);
  std::printf("gguf: %llu probes for %zu keys, %llu for %zu tensor names\n",
              (unsigned long long)f->kv_index.probes, kNames, (unsigned long long)f->tensor_index.probes, kNames);
  EXPECT_LE(f->kv_index.probes, kProbesPerName * kNames);
  EXPECT_LE(f->tensor_index.probes, kProbesPerName * kNames);
  for (size_t i = 0; i < kNames; i += 997) {
    ASSERT_EQ(fg_gguf_key_index(f, keys[i].c_str()), (int64_t)i);
    ASSERT_NE(fg_gguf_find_tensor(f, names[i].c_str()), nullptr);
  }
  fg_gguf_close(f);
  free(bytes);
}

// ---- the JSON tape ----

std::string fill(const std::string &head, const std::string &unit, const std::string &tail, size_t n) {
  std::string s = head;
  while (s.size() + unit.size() + tail.size() <= n) s += unit;
  if (!unit.empty() && unit.back() == ',') s.pop_back();
  return s + tail;
}

size_t tape_nodes(const std::string &text, int depth = 2) {
  st_json j;
  EXPECT_EQ(st_json_parse_depth(text.data(), text.size(), "t", 0, depth, &j), FG_OK) << fg_last_error();
  const size_t n = j.nnodes;
  st_json_free(&j);
  return n;
}

TEST(HostileHeaders, TapeHoldsAtMostOneNodePerFiveBytes) {
  const size_t n = 1 << 20;
  struct Case {
    const char *what;
    std::string text;
    size_t at_most;  // besides n / 5 + 1
  } cases[] = {
      {"numbers in a shape", fill(R"({"t":{"dtype":"U8","data_offsets":[0,1],"shape":[)", "1,", "]}}", n), 6},
      {"numbers in an unknown field", fill(R"({"t":{"dtype":"U8","junk":[)", "0,", "]}}", n), 4},
      {"empty arrays", fill(R"({"t":{"junk":[)", "[],", "]}}", n), 3},
      {"objects in an array", fill(R"({"t":{"junk":[)", R"({"a":0},)", "]}}", n), 3},
      {"deep members", fill(R"({"t":{"junk":{)", R"("a":{"b":0},)", "}}}", n), 3},
      {"a root array", fill("[", "0,", "]", n), 1},
      {"members", fill(R"({"t":{)", R"("":0,)", "}}", n), n / 5 + 1},
      {"metadata", fill(R"({"__metadata__":{)", R"("":"",)", "}}", n), n / 5 + 1},
      {"tensors", fill("{", R"("":{},)", "}", n), n / 5 + 1},
  };
  for (const Case &c : cases) {
    const size_t nodes = tape_nodes(c.text);
    EXPECT_LE(nodes, c.text.size() / 5 + 1) << c.what;
    EXPECT_LE(nodes, c.at_most) << c.what;
  }
  // config.json is read whole (every object on the tape): still one node per member
  EXPECT_LE(tape_nodes(fill("{", R"("a":{"b":{}},)", "}", n), 1000), n / 5 + 1);
}

// The arrays left in the text are walked by st_iter: elements, kinds and lengths.
TEST(HostileHeaders, ArraysAreWalkedInTheText) {
  const std::string text = R"({"a":[ 12 , "x\u0000y\ud83d\ude00" ,true,null,false,[1,[2]],{"k":"]"},-0.5e3 ]})";
  st_json j;
  ASSERT_EQ(st_json_parse(text.data(), text.size(), "t", 0, &j), FG_OK) << fg_last_error();
  ASSERT_EQ(j.nnodes, 2u);
  const st_node *a = st_first(&j.nodes[0]);
  ASSERT_EQ(a->kind, ST_ARR);
  ASSERT_EQ(a->len, 8u);
  st_iter it;
  st_node e;
  st_iter_init(&it, &j, a);
  const int kinds[] = {ST_NUM, ST_STR, ST_TRUE, ST_NULL, ST_FALSE, ST_ARR, ST_OBJ, ST_NUM};
  for (int k = 0; k < 8; k++) {
    ASSERT_TRUE(st_iter_next(&it, &e)) << k;
    EXPECT_EQ(e.kind, kinds[k]) << k;
    const std::string v(st_str(&j, &e), e.kind == ST_NUM || e.kind == ST_STR ? e.len : 0);
    if (k == 0) {
      EXPECT_EQ(v, "12");
    } else if (k == 1) {
      EXPECT_EQ(v, std::string("x\0y\xf0\x9f\x98\x80", 7));
    } else if (k == 7) {
      EXPECT_EQ(v, "-0.5e3");
    }
  }
  EXPECT_FALSE(st_iter_next(&it, &e));
  st_json_free(&j);
}

// A refused text keeps the reference check's offsets, however much came before the error.
TEST(HostileHeaders, RefusedTextsKeepTheirOffsets) {
  struct Case {
    std::string text;
    size_t at;
  } cases[] = {
      {R"({"a":[1,2,3,]})", 12},
      {fill(R"({"a":[)", "0,", ",]}", 100000), 0},  // filled in below
      {R"({"a":{"b":[1]} "c":1})", 15},
      {fill("{", R"("a":[0,0,0],)", R"(,"b" 1})", 100000), 0},
      {fill("[", "[0,0],", "] x", 100000), 0},
  };
  for (Case &c : cases) {
    if (!c.at) {  // the first byte that cannot continue the text
      const size_t x = c.text.rfind(" x");
      c.at = x != std::string::npos ? x + 1 : c.text.find(",]") != std::string::npos ? c.text.find(",]") + 1
                                                                                    : c.text.rfind(" 1") + 1;
    }
    st_json j;
    ASSERT_EQ(st_json_parse(c.text.data(), c.text.size(), "t", 8, &j), FG_ERR_INVALID_JSON);
    const std::string m = fg_last_error();
    EXPECT_NE(m.find("at byte " + std::to_string(8 + c.at)), std::string::npos) << m << " (text of " << c.text.size()
                                                                              << " bytes)";
  }
}

}  // namespace
