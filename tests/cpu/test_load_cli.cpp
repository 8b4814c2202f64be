// forgia load: summary lines, --only, --dtype, --ring, --bench, and the exit codes (2 for
// usage errors with usage on stderr, 1 with one line on stderr for a failed load).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "load_test_util.h"

namespace {

std::string cli() { return std::string(FORGIA_CLI) + " load "; }

int count_lines(const std::string &s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(LoadCli, LoadsAndReports) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts = ldt::model_tensors(true);
  ldt::write_gguf(dir.file("m.gguf"), ts);
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli() + dir.file("m.gguf") + " --device cpu", &out, &err)) << err;
  EXPECT_NE(std::string::npos, out.find("source: " + dir.file("m.gguf") + " (gguf, 1 file)")) << out;
  EXPECT_NE(std::string::npos, out.find("load: " + std::to_string(ts.size()) + " tensors (0 skipped)")) << out;
  EXPECT_NE(std::string::npos, out.find("GB/s")) << out;
  EXPECT_EQ("", err);  // not a terminal: no progress bar

  ASSERT_EQ(0, fgt::run(cli() + dir.file("m.gguf") + " --device cpu --only '^blk\\.0\\.' --list", &out, &err)) << err;
  EXPECT_NE(std::string::npos, out.find("load: 3 tensors (" + std::to_string(ts.size() - 3) + " skipped)")) << out;
  EXPECT_NE(std::string::npos, out.find("blk.0.attn_q.weight")) << out;
  EXPECT_EQ(std::string::npos, out.find("token_ids")) << out;

  ASSERT_EQ(0, fgt::run(cli() + dir.file("m.gguf") + " --device cpu --dtype f32 --ring 2,64K --list", &out, &err))
      << err;
  EXPECT_NE(std::string::npos, out.find("blk.1.q8.weight")) << out;
  EXPECT_EQ(std::string::npos, out.find("q8_0")) << out;  // dequantized
  EXPECT_EQ(std::string::npos, out.find("f16 ")) << out;  // widened
}

TEST(LoadCli, BenchPrintsLimitsAndRatios) {
  fgt::TempDir dir;
  ldt::write_st(dir.file("m.safetensors"), ldt::model_tensors(false));
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli() + dir.file("m.safetensors") + " --device cpu --bench", &out, &err)) << err;
  EXPECT_NE(std::string::npos, out.find("bench: page-cache read()")) << out;
  EXPECT_NE(std::string::npos, out.find("bench: memcpy")) << out;
  EXPECT_NE(std::string::npos, out.find("ratio")) << out;
}

TEST(LoadCli, ExitCodes) {
  fgt::TempDir dir;
  ldt::write_st(dir.file("m.safetensors"), ldt::model_tensors(false));
  std::string p = dir.file("m.safetensors"), out, err;
  EXPECT_EQ(2, fgt::run(cli() + p + " --frobnicate", &out, &err));
  EXPECT_NE(std::string::npos, err.find("usage: forgia load")) << err;
  EXPECT_EQ(2, fgt::run(cli(), &out, &err));
  EXPECT_NE(std::string::npos, err.find("usage")) << err;
  EXPECT_EQ(2, fgt::run(cli() + p + " --dtype f8", &out, &err));
  EXPECT_EQ(2, fgt::run(cli() + p + " --ring 4", &out, &err));
  EXPECT_EQ(2, fgt::run(cli() + p + " --ring 0,16M", &out, &err));
  EXPECT_EQ(2, fgt::run(cli() + p + " --only '('", &out, &err));
  EXPECT_EQ(0, fgt::run(cli() + "--help", &out, &err));
  EXPECT_NE(std::string::npos, out.find("--bench")) << out;
  // failures: one line on stderr, exit 1
  EXPECT_EQ(1, fgt::run(cli() + dir.file("absent.gguf") + " --device cpu", &out, &err));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("absent.gguf")) << err;
  // a ring below its minimum and a bad device name are bad usage, refused before any work
  EXPECT_EQ(2, fgt::run(cli() + p + " --device cpu --ring 2,1K", &out, &err));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_EQ(2, fgt::run(cli() + p + " --device nonsense", &out, &err));
  EXPECT_EQ(1, count_lines(err)) << err;
}

// A file that is neither GGUF nor safetensors: one line on stderr, as `inspect` prints it.
TEST(LoadCli, NeitherFormatIsOneClearLine) {
  fgt::TempDir dir;
  std::string p = dir.file("notes.bin");
  const char junk[] = "hello, this is not a checkpoint at all";
  fgt::write_file(p, junk, sizeof junk - 1);
  std::string out, err, ierr;
  EXPECT_EQ(1, fgt::run(cli() + p + " --device cpu", &out, &err));
  EXPECT_EQ("", out);
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_EQ(0u, err.find("forgia load: " + p + ": ")) << err;
  EXPECT_NE(std::string::npos, err.find("neither GGUF")) << err;
  EXPECT_NE(std::string::npos, err.find("68 65 6c 6c")) << err;  // the first bytes, "hell"
  EXPECT_EQ(std::string::npos, err.find("()")) << err;
  EXPECT_EQ(std::string::npos, err.find(p, err.find(p) + 1)) << err;  // the path once
  EXPECT_EQ(1, fgt::run(std::string(FORGIA_CLI) + " inspect " + p, &out, &ierr));
  // inspect reads more kinds than models: its line names them, with the same first bytes
  EXPECT_EQ(0u, ierr.find("forgia inspect: " + p + ": 38 bytes starting 68 65 6c 6c ")) << ierr;
}

uint64_t field(const std::string &line, const std::string &after_number) {
  size_t e = line.find(after_number);
  EXPECT_NE(std::string::npos, e) << line;
  if (e == std::string::npos) return ~0ull;
  size_t b = line.rfind(' ', e - 1);
  return std::stoull(line.substr(b + 1, e - b - 1));
}

std::string load_line(const std::string &out) {
  size_t a = out.find("\nload: ");
  EXPECT_NE(std::string::npos, a) << out;
  if (a == std::string::npos) return "";
  return out.substr(a + 1, out.find('\n', a + 1) - a - 1);
}

// --lazy borrows kept tensors without reading them: no bandwidth is reported for them.
TEST(LoadCli, LazyReportsNoBandwidthForBytesNotRead) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts = {ldt::make_float("a.f32", FG_F32, {64, 64}, 1),
                                 ldt::make_float("b.f16", FG_F16, {32, 32}, 2)};
  std::string p = dir.file("m.safetensors");
  ldt::write_st(p, ts);
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli() + p + " --device cpu --lazy", &out, &err)) << err;
  std::string line = load_line(out);
  EXPECT_EQ(0u, field(line, " bytes read")) << line;
  EXPECT_EQ(64u * 64 * 4 + 32 * 32 * 2, field(line, " borrowed unread")) << line;
  EXPECT_EQ(std::string::npos, line.find("GB/s")) << line;
  EXPECT_NE(std::string::npos, line.find("no bandwidth")) << line;

  // converting the f16 tensor reads it; only those bytes count
  ASSERT_EQ(0, fgt::run(cli() + p + " --device cpu --lazy --dtype f32", &out, &err)) << err;
  line = load_line(out);
  EXPECT_EQ(32u * 32 * 2, field(line, " bytes read")) << line;
  EXPECT_EQ(64u * 64 * 4, field(line, " borrowed unread")) << line;
  EXPECT_NE(std::string::npos, line.find("GB/s")) << line;

  // without --lazy every byte is read (borrowed tensors are populated)
  ASSERT_EQ(0, fgt::run(cli() + p + " --device cpu", &out, &err)) << err;
  line = load_line(out);
  EXPECT_EQ(64u * 64 * 4 + 32 * 32 * 2, field(line, " bytes read")) << line;
  EXPECT_NE(std::string::npos, line.find("GB/s")) << line;

  ASSERT_EQ(0, fgt::run(cli() + p + " --device cpu --lazy --bench", &out, &err)) << err;
  EXPECT_NE(std::string::npos, out.find("no ratios")) << out;
  EXPECT_EQ(std::string::npos, out.find("ratio ")) << out;
}

}  // namespace
