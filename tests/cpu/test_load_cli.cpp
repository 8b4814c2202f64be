// forgia load: summary lines, --only, --dtype, --ring, --bench, and the exit codes (2 for
// usage errors with usage on stderr, 1 with one line on stderr for a failed load).
#include <gtest/gtest.h>

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
  EXPECT_EQ(1, fgt::run(cli() + p + " --device cpu --ring 2,1K", &out, &err));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_EQ(1, fgt::run(cli() + p + " --device nonsense", &out, &err));
  EXPECT_EQ(1, count_lines(err)) << err;
}

}  // namespace
