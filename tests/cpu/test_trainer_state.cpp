// trainer_state.json: byte-identical to what Fucina writes (goldens made by Fucina's own
// saveTrainerState, tests/data/fucina_gen/ckpt_gen.zig), u64 exact through the reader, and
// clear errors for malformed text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "forgia/trainer_state.h"
#include "fucina_ckpt_fixture.h"
#include "testutil.h"

namespace {

std::string golden(const std::string &rel) {
  auto b = fgt::read_file(std::string(FORGIA_TEST_DATA) + "/golden/" + rel);
  return std::string(b.begin(), b.end());
}

std::string text_of(const fg_trainer_state &s) {
  char *t = nullptr;
  size_t n = 0;
  EXPECT_EQ(fg_trainer_state_format(&s, &t, &n), FG_OK) << fg_last_error();
  std::string r(t, n);
  EXPECT_EQ(strlen(t), n);
  free(t);
  return r;
}

fg_status parse(const std::string &text, fg_trainer_state *s) {
  return fg_trainer_state_parse(text.data(), text.size(), "t.json", s);
}

// The inputs of ckpt_gen.zig, state by state (the first is fgt::fucina_trainer_state()).
fg_trainer_state full_state() { return fgt::fucina_trainer_state(); }

fg_trainer_state extra_state(int i) {
  fg_trainer_state s;
  fg_trainer_state_init(&s);
  switch (i) {
    case 0:
      s.step = 12, s.seed = 34;
      FG_TRAINER_STATE_SET(s, lora_rank, 8);
      FG_TRAINER_STATE_SET(s, learning_rate, 1e-3);
      FG_TRAINER_STATE_SET(s, es_iteration, 17);
      break;
    case 1:
      s.step = 0, s.seed = UINT64_MAX;
      break;
    case 2:
      s.step = 9007199254740993ull, s.seed = 1;
      FG_TRAINER_STATE_SET(s, lora_alpha, 1e21);
      FG_TRAINER_STATE_SET(s, lora_dropout_p, 5e-324);
      FG_TRAINER_STATE_SET(s, learning_rate, 0.1);
      FG_TRAINER_STATE_SET(s, es_sigma, 1e-10);
      FG_TRAINER_STATE_SET(s, es_alpha, 123456.789);
      FG_TRAINER_STATE_SET(s, es_anchor_lambda, -0.0);
      FG_TRAINER_STATE_SET(s, es_ternary_flip_rate, 2.5e-8f);
      FG_TRAINER_STATE_SET(s, es_ternary_update_fraction, 1.7976931348623157e308);
      FG_TRAINER_STATE_SET(s, es_ternary_update_decay, 0.30000000000000004);
      FG_TRAINER_STATE_SET(s, es_iteration, 0);
      break;
    default:
      s.step = 3, s.seed = 7;
      FG_TRAINER_STATE_SET(s, learning_rate, NAN);
      FG_TRAINER_STATE_SET(s, es_sigma, INFINITY);
      FG_TRAINER_STATE_SET(s, es_alpha, -INFINITY);
      FG_TRAINER_STATE_SET(s, lora_alpha, 1.17549435e-38f);  // FLT_MIN, widened
      break;
  }
  return s;
}

void expect_same(const fg_trainer_state &a, const fg_trainer_state &b) {
  EXPECT_EQ(a.version, b.version);
  for (size_t i = 0;; i++) {
    const char *na, *nb;
    char ka, kb;
    bool sa, sb;
    uint64_t ua = 0, ub = 0;
    double fa = 0, fb = 0;
    bool more = fg_trainer_state_field(&a, i, &na, &ka, &sa, &ua, &fa);
    ASSERT_EQ(more, fg_trainer_state_field(&b, i, &nb, &kb, &sb, &ub, &fb));
    if (!more) break;
    EXPECT_EQ(sa, sb) << na;
    if (!sa) continue;
    if (ka == 'u') EXPECT_EQ(ua, ub) << na;
    else EXPECT_EQ(0, memcmp(&fa, &fb, sizeof fa)) << na << ": " << fa << " vs " << fb;
  }
}

TEST(TrainerState, FucinaPinnedString) {
  fg_trainer_state s = extra_state(0);
  EXPECT_EQ(text_of(s),
            "{\n  \"format\": \"fucina.training_checkpoint\",\n  \"version\": 1,\n  \"step\": 12,\n  \"seed\": 34,\n"
            "  \"lora_rank\": 8,\n  \"learning_rate\": 0.001,\n  \"es_iteration\": 17\n}\n");
}

TEST(TrainerState, ByteIdenticalToFucinaGoldens) {
  EXPECT_EQ(text_of(full_state()), golden("fucina_ckpt/trainer_state.json"));
  for (int i = 0; i < 4; i++)
    EXPECT_EQ(text_of(extra_state(i)), golden("fucina_trainer_states/s" + std::to_string(i) + "/trainer_state.json"))
        << "state " << i;
}

TEST(TrainerState, ReadsFucinaFilesExactly) {
  fg_trainer_state s;
  ASSERT_EQ(fg_trainer_state_load((std::string(FORGIA_TEST_DATA) + "/golden/fucina_ckpt/trainer_state.json").c_str(),
                                  &s),
            FG_OK)
      << fg_last_error();
  expect_same(s, full_state());
  EXPECT_EQ(s.seed, 0xDEADBEEFCAFEF00Dull);          // above 2^63
  EXPECT_EQ(s.data_seed.v, (1ull << 53) + 1);        // not representable as a double
  for (int i = 0; i < 3; i++) {  // state 3 holds nan/inf, which no JSON reader takes
    std::string t = golden("fucina_trainer_states/s" + std::to_string(i) + "/trainer_state.json");
    ASSERT_EQ(parse(t, &s), FG_OK) << i << ": " << fg_last_error();
    expect_same(s, extra_state(i));
  }
  EXPECT_EQ(parse(golden("fucina_trainer_states/s3/trainer_state.json"), &s), FG_ERR_INVALID_JSON);
}

TEST(TrainerState, ShortestRoundTripDoubles) {
  struct {
    double v;
    const char *text;
  } cases[] = {{0.001, "0.001"},       {16, "16"},  {-0.0, "-0"}, {0, "0"}, {1.5e-7, "0.00000015"},
               {(double)0.1f, "0.10000000149011612"}, {123.25, "123.25"}, {-2.5, "-2.5"}, {1e23, "100000000000000000000000"},
               {5e-324, nullptr}};
  char buf[FG_F64_TEXT_MAX];
  for (auto &c : cases) {
    size_t n = fg_trainer_state_f64_text(c.v, buf);
    EXPECT_EQ(n, strlen(buf));
    if (c.text) {
      EXPECT_STREQ(buf, c.text);
    }
    EXPECT_EQ(strtod(buf, nullptr), c.v) << buf;
  }
  // Every finite double reads back bit for bit from its text, which has no exponent.
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 20000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    double v;
    memcpy(&v, &x, sizeof v);
    if (!std::isfinite(v)) continue;
    fg_trainer_state_f64_text(v, buf);
    double back = strtod(buf, nullptr);
    ASSERT_EQ(memcmp(&v, &back, sizeof v), 0) << buf;
    ASSERT_EQ(strchr(buf, 'e'), nullptr) << buf;
  }
}

// Zig's {d} of 3000 doubles of every magnitude and widened f32s, printed by the generator.
TEST(TrainerState, DoublesAsZigPrintsThem) {
  std::string all = golden("fucina_f64_text.txt");
  size_t lines = 0, at = 0;
  char buf[FG_F64_TEXT_MAX];
  while (at < all.size()) {
    size_t eol = all.find('\n', at);
    ASSERT_NE(eol, std::string::npos);
    std::string line = all.substr(at, eol - at);
    at = eol + 1;
    uint64_t bits = strtoull(line.substr(0, 16).c_str(), nullptr, 16);
    double v;
    memcpy(&v, &bits, sizeof v);
    fg_trainer_state_f64_text(v, buf);
    ASSERT_EQ(std::string(buf), line.substr(17)) << line.substr(0, 16);
    lines++;
  }
  EXPECT_EQ(lines, 3000u);
}

TEST(TrainerState, RoundTripsAndIgnoresUnknownKeys) {
  fg_trainer_state s = full_state(), r;
  ASSERT_EQ(parse(text_of(s), &r), FG_OK) << fg_last_error();
  expect_same(r, s);
  // Any object: unknown keys of any type, any key order, whitespace.
  std::string t =
      "{\"extra\": {\"nested\": [1, {\"x\": null}]}, \"seed\": 18446744073709551615, \"step\":9007199254740993,"
      "\"version\":1,\"lora_alpha\":2,\"learning_rate\":1E-3, \"format\":\"fucina.training_checkpoint\", \"z\":\"\"}";
  ASSERT_EQ(parse(t, &r), FG_OK) << fg_last_error();
  EXPECT_EQ(r.seed, UINT64_MAX);
  EXPECT_EQ(r.step, 9007199254740993ull);
  EXPECT_TRUE(r.lora_alpha.set);
  EXPECT_EQ(r.lora_alpha.v, 2.0);
  EXPECT_EQ(r.learning_rate.v, 1e-3);
  EXPECT_FALSE(r.lora_rank.set);
  EXPECT_FALSE(r.es_iteration.set);
}

TEST(TrainerState, SavesAtomicallyAndLoads) {
  fgt::TempDir d;
  std::string p = d.file("trainer_state.json");
  fg_trainer_state s = full_state(), r;
  ASSERT_EQ(fg_trainer_state_save(p.c_str(), &s), FG_OK) << fg_last_error();
  auto b = fgt::read_file(p);
  EXPECT_EQ(std::string(b.begin(), b.end()), golden("fucina_ckpt/trainer_state.json"));
  ASSERT_EQ(fg_trainer_state_load(p.c_str(), &r), FG_OK);
  expect_same(r, s);
  EXPECT_EQ(fg_trainer_state_load(d.file("absent.json").c_str(), &r), FG_ERR_NOT_FOUND);
}

TEST(TrainerState, MalformedInputsAreClearErrors) {
  const std::string head = "{\"format\":\"fucina.training_checkpoint\",\"version\":1,\"step\":1,\"seed\":2";
  struct {
    std::string text;
    fg_status want;
    const char *says;
  } cases[] = {
      {"", FG_ERR_INVALID_JSON, ""},
      {"[]", FG_ERR_INVALID_JSON, "object"},
      {"{\"format\":", FG_ERR_INVALID_JSON, ""},
      {head + ",}", FG_ERR_INVALID_JSON, ""},
      {head + "}\n{}", FG_ERR_INVALID_JSON, ""},
      {"{\"version\":1,\"step\":1,\"seed\":2}", FG_ERR_BAD_MAGIC, "format"},
      {"{\"format\":\"fucina.other\",\"version\":1,\"step\":1,\"seed\":2}", FG_ERR_BAD_MAGIC, "format"},
      {"{\"format\":7,\"version\":1,\"step\":1,\"seed\":2}", FG_ERR_BAD_MAGIC, "a number"},
      {"{\"format\":\"fucina.training_checkpoint\",\"version\":2,\"step\":1,\"seed\":2}", FG_ERR_BAD_VERSION, "2"},
      {"{\"format\":\"fucina.training_checkpoint\",\"step\":1,\"seed\":2}", FG_ERR_NOT_FOUND, "version"},
      {"{\"format\":\"fucina.training_checkpoint\",\"version\":1,\"seed\":2}", FG_ERR_NOT_FOUND, "step"},
      {"{\"format\":\"fucina.training_checkpoint\",\"version\":1,\"step\":1}", FG_ERR_NOT_FOUND, "seed"},
      {"{\"format\":\"fucina.training_checkpoint\",\"version\":1,\"step\":\"1\",\"seed\":2}", FG_ERR_TYPE,
       "\"step\": expected an integer"},
      {"{\"format\":\"fucina.training_checkpoint\",\"version\":1,\"step\":1,\"seed\":-2}", FG_ERR_TYPE, "found -2"},
      {"{\"format\":\"fucina.training_checkpoint\",\"version\":1,\"step\":1,\"seed\":18446744073709551616}",
       FG_ERR_TYPE, "18446744073709551616"},
      {head + ",\"lora_rank\":1.5}", FG_ERR_TYPE, "lora_rank"},
      {head + ",\"lora_rank\":1e3}", FG_ERR_TYPE, "lora_rank"},
      {head + ",\"lora_rank\":null}", FG_ERR_TYPE, "found null"},
      {head + ",\"learning_rate\":\"0.1\"}", FG_ERR_TYPE, "\"learning_rate\": expected a number, found a string"},
      {head + ",\"learning_rate\":true}", FG_ERR_TYPE, "found true"},
      {head + ",\"es_sigma\":[0.1]}", FG_ERR_TYPE, "found an array"},
      {head + ",\"step\":3}", FG_ERR_DUPLICATE, "step"},
      {head + ",\"learning_rate\":NaN}", FG_ERR_INVALID_JSON, ""},
      {"{}", FG_ERR_BAD_MAGIC, "missing"},
      {head + ",\"deep\":" + std::string(100000, '[') + std::string(100000, ']') + "}", FG_ERR_INVALID_JSON, ""},
      {std::string("{\"format\":\"fucina.training_checkpoint") + '\0' + "\",\"version\":1,\"step\":1,\"seed\":2}",
       FG_ERR_INVALID_JSON, ""},
      {"{\"format\":\"fucina.training_checkpoint\xff\",\"version\":1,\"step\":1,\"seed\":2}", FG_ERR_HEADER_NOT_UTF8,
       ""},
  };
  for (auto &c : cases) {
    fg_trainer_state s;
    fg_trainer_state_init(&s);
    s.step = 77;
    fg_status st = parse(c.text, &s);
    EXPECT_EQ(st, c.want) << c.text << " -> " << fg_status_name(st) << ": " << fg_last_error();
    EXPECT_NE(std::string(fg_last_error()).find(c.says), std::string::npos) << c.text << ": " << fg_last_error();
    EXPECT_EQ(s.step, 77u) << "a failed parse leaves the output alone";
  }
  // Zig reads "-0" as the integer 0, and so does this reader.
  fg_trainer_state s;
  ASSERT_EQ(parse(head + ",\"es_iteration\":-0}", &s), FG_OK) << fg_last_error();
  EXPECT_TRUE(s.es_iteration.set);
  EXPECT_EQ(s.es_iteration.v, 0u);
}

}  // namespace
