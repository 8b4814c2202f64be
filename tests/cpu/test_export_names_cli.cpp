// The two spellings of an export type through the CLI (forgia help export): --dtype takes a
// single type's name in any case as that single type and any other llama-quantize name as
// the mixture; the positional TYPE reads every name as llama-quantize does (Q4_K is Q4_K_M,
// Q8_0 and F16 are mixtures), with its trailing thread count. A mixture over a safetensors
// source is a usage error saying what to give instead. --dry-run's totals line names the
// target it planned.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "export_fixtures.h"
#include "testutil.h"

namespace {

const std::string model = std::string(FORGIA_TEST_DATA) + "/golden/llama_bytes/model.gguf";

struct Names : ::testing::Test {
  fgt::TempDir dir;
  std::string out, err;
  int run(const std::string &args) { return fgt::run(std::string(FORGIA_CLI) + " export " + args, &out, &err); }
  // The dry-run plan of args, as its totals line names it: "single type T", "llama-quantize
  // mixture M", or "" (verbatim).
  std::string plan_of(const std::string &args) {
    SCOPED_TRACE(args);
    EXPECT_EQ(run(args + " --dry-run"), 0) << err;
    const size_t at = out.find("\nplan: ");
    if (at == std::string::npos) return "no plan: " + out;
    const size_t semi = out.find("; ", at), end = out.find('\n', at + 1);
    return semi < end ? out.substr(semi + 2, end - semi - 2) : "";
  }
  void expect_usage(const std::string &args, const std::string &says) {
    SCOPED_TRACE(args);
    const auto before = fgx::list_dir(dir.path);
    EXPECT_EQ(run(args), 2) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find(says), std::string::npos) << err;
    EXPECT_EQ(fgx::list_dir(dir.path), before);
  }
};

TEST_F(Names, DtypeTakesASingleTypeInAnyCaseAndOtherNamesAsMixtures) {
  const std::string base = "--from-gguf " + model + " --dtype ";
  for (const char *n : {"q4_k", "Q4_K", "q4_K", "Q4_k"}) EXPECT_EQ(plan_of(base + n), "single type q4_K") << n;
  for (const char *n : {"Q8_0", "q8_0"}) EXPECT_EQ(plan_of(base + n), "single type q8_0") << n;
  EXPECT_EQ(plan_of(base + "F16"), "single type f16");
  EXPECT_EQ(plan_of(base + "IQ4_NL"), "single type iq4_nl");
  for (const char *n : {"Q4_K_M", "q4_k_m", "Q4_k_M"}) EXPECT_EQ(plan_of(base + n), "llama-quantize mixture Q4_K_M") << n;
  EXPECT_EQ(plan_of(base + "q3_k_s"), "llama-quantize mixture Q3_K_S");
  EXPECT_EQ(plan_of(base + "iq2_xs"), "llama-quantize mixture IQ2_XS");  // no single-type iq2_xs export
  EXPECT_EQ(plan_of(base + "mxfp4_moe"), "llama-quantize mixture MXFP4_MOE");
  expect_usage(base + "q4_k_x --out " + dir.file("o.gguf"), "unknown target 'q4_k_x'");
}

TEST_F(Names, PositionalTypeFollowsLlamaQuantize) {
  const std::string o = dir.file("o.gguf");
  for (const char *n : {"Q4_K", "q4_k", "q4_K", "Q4_K_M", "15"})
    EXPECT_EQ(plan_of(model + " " + o + " " + n), "llama-quantize mixture Q4_K_M") << n;
  for (const char *n : {"Q8_0", "q8_0"}) EXPECT_EQ(plan_of(model + " " + o + " " + n), "llama-quantize mixture Q8_0") << n;
  EXPECT_EQ(plan_of(model + " " + o + " f16"), "llama-quantize mixture F16");
  EXPECT_EQ(plan_of(model + " " + o + " Q3_K"), "llama-quantize mixture Q3_K_M");
  EXPECT_EQ(plan_of(model + " " + o + " q5_k"), "llama-quantize mixture Q5_K_M");
  EXPECT_EQ(plan_of(model + " " + o + " Q4_K 3"), "llama-quantize mixture Q4_K_M");  // NTHREADS
  EXPECT_EQ(plan_of(model + " " + o + " COPY"), "");
  EXPECT_NE(out.find("(verbatim)"), std::string::npos) << out;
  expect_usage(model + " " + o + " nvfp4", "give --dtype nvfp4");
  expect_usage(model + " " + o + " Q4_K 0", "NTHREADS");
  expect_usage(model + " " + o + " Q4_K 2x", "expected a thread count");
  expect_usage(model + " " + o + " Q4_K 2 --threads 2", "given twice");
  expect_usage(model + " " + o + " Q4_K --dtype q4_K", "given twice");
  expect_usage("--from-gguf " + model + " --out " + o + " --dtype q8_0 --threads -1", "--threads");
}

// The output's bytes do not depend on the thread count, through either spelling.
TEST_F(Names, ThreadsDoNotChangeTheBytes) {
  const std::string a = dir.file("a.gguf"), b = dir.file("b.gguf"), c = dir.file("c.gguf");
  ASSERT_EQ(run("--from-gguf " + model + " --out " + a + " --dtype q8_0 --threads 1"), 0) << err;
  ASSERT_EQ(run("--from-gguf " + model + " --out " + b + " --dtype q8_0 --threads 3 --chunk-mib 1"), 0) << err;
  ASSERT_EQ(run(model + " " + c + " Q4_K_M 2"), 0) << err;
  EXPECT_EQ(fgt::read_file(a), fgt::read_file(b));
  const std::string d = dir.file("d.gguf");
  ASSERT_EQ(run("--from-gguf " + model + " --out " + d + " --dtype Q4_K_M --threads 1"), 0) << err;
  EXPECT_EQ(fgt::read_file(c), fgt::read_file(d));
}

// A mixture reads GGUF metadata and tensor names: over safetensors it is refused before any
// work, in one line that names the --dtype spelling of its default type.
TEST_F(Names, MixtureOverSafetensorsSaysWhatToDo) {
  const std::string st = dir.file("m.safetensors");
  fgx::write_safetensors(st, {fgx::make("layers.0.mlp.weight", FG_F32, {8, 64}, 1),
                              fgx::make("layers.0.norm.weight", FG_F32, {64}, 2)});
  const std::vector<uint8_t> before = fgt::read_file(st);
  expect_usage(st + " " + dir.file("m.gguf") + " Q8_0", "give --dtype q8_0 for the single type");
  expect_usage("--from-safetensors " + st + " --out " + dir.file("m.gguf") + " --dtype Q4_K_M",
               "give --dtype q4_K for the single type");
  EXPECT_EQ(fgt::read_file(st), before);
  ASSERT_EQ(run(st + " " + dir.file("m.gguf") + " --dtype q8_0"), 0) << err;
  // F32, F16 and BF16 are one float type for every tensor: over safetensors, that type
  EXPECT_EQ(plan_of(st + " " + dir.file("f.gguf") + " F16"), "single type f16");
  EXPECT_EQ(plan_of("--from-safetensors " + st + " --dtype bf16"), "single type bf16");
}

// The library's parser behind both spellings.
TEST(NamesLib, ParseAs) {
  fg_export_target t{};
  ASSERT_EQ(fg_export_target_parse_as("q4_k", FG_EXPORT_SPELLING_DTYPE, &t), FG_OK) << fg_last_error();
  EXPECT_EQ(t.mode, FG_EXPORT_MODE_DTYPE);
  EXPECT_EQ(t.dtype, FG_Q4_K);
  ASSERT_EQ(fg_export_target_parse_as("q4_k", FG_EXPORT_SPELLING_LLAMA, &t), FG_OK) << fg_last_error();
  EXPECT_EQ(t.mode, FG_EXPORT_MODE_MIXTURE);
  EXPECT_EQ(t.ftype, 15u);
  ASSERT_EQ(fg_export_target_parse_as("mxfp4", FG_EXPORT_SPELLING_LLAMA, &t), FG_OK);
  EXPECT_STREQ(fg_export_mixture_name(t.ftype), "MXFP4_MOE");
  ASSERT_EQ(fg_export_target_parse_as("7", FG_EXPORT_SPELLING_LLAMA, &t), FG_OK);
  EXPECT_STREQ(fg_export_mixture_name(t.ftype), "Q8_0");
  ASSERT_EQ(fg_export_target_parse_as("copy", FG_EXPORT_SPELLING_LLAMA, &t), FG_OK);
  EXPECT_EQ(t.mode, FG_EXPORT_MODE_VERBATIM);
  EXPECT_EQ(fg_export_target_parse_as("copy", FG_EXPORT_SPELLING_DTYPE, &t), FG_ERR_UNSUPPORTED);
  EXPECT_EQ(fg_export_target_parse_as("7", FG_EXPORT_SPELLING_DTYPE, &t), FG_ERR_UNSUPPORTED);
  EXPECT_EQ(fg_export_target_parse_as("9999", FG_EXPORT_SPELLING_LLAMA, &t), FG_ERR_UNSUPPORTED);
  EXPECT_EQ(fg_export_target_parse_as("nvfp4", FG_EXPORT_SPELLING_LLAMA, &t), FG_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(fg_last_error()).find("--dtype nvfp4"), std::string::npos) << fg_last_error();
  EXPECT_EQ(fg_export_target_parse_as("q4_k", (fg_export_spelling)0, &t), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_export_target_parse_as(nullptr, FG_EXPORT_SPELLING_DTYPE, &t), FG_ERR_INVALID_ARG);
}

}  // namespace
