// forgia inspect on GGUF files whose bytes JSON cannot carry as they are (keys that are not
// UTF-8 or hold NUL, -0.0, UINT64 >= 2^63, empty and non-UTF-8 tensor names, n_dims 0): the
// --json output must parse with Python's json.loads and keep every value exact. Also:
// `forgia help export` names every target fg_export_target_parse accepts.
#include <gtest/gtest.h>

#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "forgia/export.h"
#include "gguf_test_util.h"
#include "testutil.h"

using gg::Builder;

namespace {

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " " + args; }

std::string python() { return access(FORGIA_PYTHON, X_OK) == 0 ? FORGIA_PYTHON : "python3"; }

// What json.loads makes of an inspect --json output, one line per entry (gguf_interop.py json).
std::string json_lines(const std::string &json_path) {
  std::string out, err;
  std::string cmd = python() + " " FORGIA_TEST_DATA "/gguf_interop.py json " + json_path;
  EXPECT_EQ(fgt::run(cmd, &out, &err), 0) << cmd << "\n" << err;
  return out;
}

gg::Bytes awkward_file() {
  Builder b;
  b.header(2, 15);
  b.key("k.\xff\xfe", FG_GGUF_UINT8).u8(1);               // not UTF-8
  b.key(std::string("k.nul\0x", 7), FG_GGUF_UINT8).u8(2);  // a NUL inside
  b.key("k.del\x7f", FG_GGUF_UINT8).u8(3);
  b.key("k\"q\\", FG_GGUF_STRING).str("v\n");
  b.key("\xc3\xa9.ok", FG_GGUF_UINT8).u8(4);               // valid UTF-8 stays as it is
  b.key("f32.neg0", FG_GGUF_FLOAT32).f32(-0.0f);
  b.key("f64.neg0", FG_GGUF_FLOAT64).f64(-0.0);
  b.key("f64.big", FG_GGUF_FLOAT64).f64(1e300);
  b.key("f64.pos0", FG_GGUF_FLOAT64).f64(0.0);
  b.key("u64.max", FG_GGUF_UINT64).u64(UINT64_MAX);
  b.key("u64.2pow63", FG_GGUF_UINT64).u64(1ull << 63);
  b.key("i64.min", FG_GGUF_INT64).u64((uint64_t)INT64_MIN);
  b.key("arr.u64", FG_GGUF_ARRAY).u32(FG_GGUF_UINT64).u64(3).u64(1).u64(1ull << 63).u64(UINT64_MAX);
  b.key("arr.f32", FG_GGUF_ARRAY).u32(FG_GGUF_FLOAT32).u64(2).f32(-0.0f).f32(2.5f);
  b.key("arr.str", FG_GGUF_ARRAY).u32(FG_GGUF_STRING).u64(2).str("\xff").str(std::string("\0", 1));
  b.tinfo("", {}, FG_F32, 0);      // empty name, n_dims 0
  b.tinfo("w\xff", {2}, FG_F32, 32);
  b.pad_to(32);
  b.b.resize(b.size() + 64, 0);
  return b.b;
}

TEST(InspectCli, JsonParsesAndKeepsEveryValueExact) {
  fgt::TempDir dir;
  gg::Bytes bytes = awkward_file();
  std::string p = dir.file("awkward.gguf");
  fgt::write_file(p, bytes.data(), bytes.size());
  std::string out, err;
  ASSERT_EQ(fgt::run(cli("inspect " + p + " --json --full > " + dir.file("o.json")), &out, &err), 0) << err;
  std::vector<uint8_t> raw = fgt::read_file(dir.file("o.json"));
  std::string text(raw.begin(), raw.end());
  EXPECT_EQ(text.find('\xff'), std::string::npos);  // no raw invalid byte leaks out
  EXPECT_NE(text.find("\"k.\xef\xbf\xbd\xef\xbf\xbd\":"), std::string::npos) << text;  // U+FFFD twice
  EXPECT_NE(text.find("\"k.nul\\u0000x\":"), std::string::npos) << text;
  EXPECT_NE(text.find("\"value\":\t-0.0\n"), std::string::npos) << text;
  const std::string want =
      "meta \"k.\\ufffd\\ufffd\" UINT8 1\n"
      "meta \"k.nul\\u0000x\" UINT8 2\n"
      "meta \"k.del\\u007f\" UINT8 3\n"
      "meta \"k\\\"q\\\\\" STRING \"v\\n\"\n"
      "meta \"\\u00e9.ok\" UINT8 4\n"
      "meta \"f32.neg0\" FLOAT32 -0.0\n"
      "meta \"f64.neg0\" FLOAT64 -0.0\n"
      "meta \"f64.big\" FLOAT64 1e+300\n"
      "meta \"f64.pos0\" FLOAT64 0\n"
      "meta \"u64.max\" UINT64 18446744073709551615\n"
      "meta \"u64.2pow63\" UINT64 9223372036854775808\n"
      "meta \"i64.min\" INT64 -9223372036854775808\n"
      "meta \"arr.u64\" ARRAY [1, 9223372036854775808, 18446744073709551615]\n"
      "meta \"arr.f32\" ARRAY [-0.0, 2.5]\n"
      "meta \"arr.str\" ARRAY [\"\\ufffd\", \"\\u0000\"]\n"
      "tensor \"\" f32 [] 4\n"
      "tensor \"w\\ufffd\" f32 [2] 8\n";
  EXPECT_EQ(json_lines(dir.file("o.json")), want);

  // a summarised array (no --full) and an empty metadata object stay valid JSON too
  ASSERT_EQ(fgt::run(cli("inspect " + p + " --json > " + dir.file("s.json")), &out, &err), 0) << err;
  EXPECT_NE(json_lines(dir.file("s.json")).find("meta \"u64.max\" UINT64 18446744073709551615\n"), std::string::npos);
  Builder e;
  e.header(0, 0).pad_to(32);
  fgt::write_file(dir.file("empty.gguf"), e.b.data(), e.size());
  ASSERT_EQ(fgt::run(cli("inspect " + dir.file("empty.gguf") + " --json > " + dir.file("e.json")), &out, &err), 0)
      << err;
  EXPECT_EQ(json_lines(dir.file("e.json")), "\n");
}

TEST(InspectCli, SummaryPrintsLargeIntegersExactly) {
  fgt::TempDir dir;
  gg::Bytes bytes = awkward_file();
  std::string p = dir.file("awkward.gguf");
  fgt::write_file(p, bytes.data(), bytes.size());
  std::string out, err;
  ASSERT_EQ(fgt::run(cli("inspect " + p + " --full"), &out, &err), 0) << err;
  EXPECT_NE(out.find(" 18446744073709551615\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" 9223372036854775808\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" -9223372036854775808\n"), std::string::npos) << out;
  EXPECT_NE(out.find("2 tensors"), std::string::npos) << out;
}

// Every target the parser accepts is in `forgia help export`, and every name listed there
// parses (or is a target this build has no encoder for).
TEST(InspectCli, SafetensorsMetadataWithNulBytesIsShownWhole) {
  // Keys "a\0b" and "a\0c" are distinct; the summary shows each whole, the NUL escaped.
  fgt::TempDir dir;
  std::string h = R"({"__metadata__":{"a\u0000b":"x\u0000y","a\u0000c":"z"},)"
                  R"("t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  while ((8 + h.size()) % 8) h += ' ';
  uint64_t n = h.size();
  std::string bytes(reinterpret_cast<const char *>(&n), 8);
  bytes += h;
  bytes += '\x07';
  std::string p = dir.file("m.safetensors");
  fgt::write_file(p, bytes.data(), bytes.size());
  std::string out, err;
  ASSERT_EQ(fgt::run(cli("inspect " + p), &out, &err), 0) << err;
  size_t k1 = out.find("  a\\x00b "), k2 = out.find("  a\\x00c ");
  ASSERT_NE(k1, std::string::npos) << out;
  ASSERT_NE(k2, std::string::npos) << out;
  EXPECT_EQ(out.substr(out.find_first_not_of(' ', k1 + 8), 6), "x\\x00y") << out;
  EXPECT_EQ(out.substr(out.find_first_not_of(' ', k2 + 8), 1), "z") << out;
  EXPECT_EQ(out.find('\0'), std::string::npos);
}

TEST(HelpExport, ListsEveryAcceptedTarget) {
  std::string out, err;
  ASSERT_EQ(fgt::run(cli("help export"), &out, &err), 0) << err;
  size_t a = out.find("MODE:"), z = out.find("--dtype", a);
  ASSERT_NE(a, std::string::npos) << out;
  ASSERT_NE(z, std::string::npos) << out;
  std::string modes = out.substr(a + 5, z - a - 5);
  std::istringstream words(modes);
  std::vector<std::string> listed;
  for (std::string w; words >> w;) {
    while (!w.empty() && (w.back() == ';' || w.back() == ':' || w.back() == ',')) w.pop_back();
    if (w == "|" || w == "(default)") continue;
    if (w[0] == '(') break;  // the closing remark on aliases
    // the names: verbatim, and words with a digit or an underscore (the prose has neither)
    if (w == "verbatim" || w.find_first_of("0123456789_") != std::string::npos) listed.push_back(w);
  }
  ASSERT_GE(listed.size(), 50u) << modes;
  for (const std::string &w : listed) {
    fg_export_target t;
    fg_status s = fg_export_target_parse(w.c_str(), &t);
    EXPECT_TRUE(s == FG_OK || std::string(fg_last_error()).find("no " + w + " encoder") != std::string::npos)
        << w << ": " << fg_last_error();
  }
  auto is_listed = [&](const std::string &name) {
    for (const std::string &w : listed)
      if (w == name) return true;
    return false;
  };
  EXPECT_TRUE(is_listed("verbatim"));
  int accepted = 0;
  for (int d = 0; d < 128; d++) {
    const char *name = fg_dtype_name((fg_dtype)d);
    if (!name || !*name) continue;
    fg_export_target t;
    if (fg_export_target_parse(name, &t) != FG_OK) continue;
    accepted++;
    EXPECT_TRUE(is_listed(name)) << name << " is accepted but missing from `forgia help export`:\n" << out;
  }
  EXPECT_GE(accepted, 20);
  EXPECT_TRUE(is_listed("nvfp4"));
  // every llama-quantize mixture is listed and parses as one
  for (const char *m : {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L",
                        "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0",
                        "MXFP4_MOE", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M",
                        "IQ1_S", "IQ1_M", "F16", "BF16", "F32"}) {
    EXPECT_TRUE(is_listed(m)) << m;
    fg_export_target t;
    ASSERT_EQ(fg_export_target_parse(m, &t), FG_OK) << m << ": " << fg_last_error();
    EXPECT_EQ(t.mode, FG_EXPORT_MODE_MIXTURE) << m;
  }
}

}  // namespace
