// forgia export with llama-quantize's flags: bad input is one line and exit status 2 (usage) or
// 1 (the model), never a file; --dry-run shows the fallback and the rule; the flags reach
// the plan (checked on the committed small Llama model of tests/data/golden/llama_bytes).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "export_fixtures.h"
#include "testutil.h"

namespace {

const std::string model = std::string(FORGIA_TEST_DATA) + "/golden/llama_bytes/model.gguf";
const std::string imatrix = std::string(FORGIA_TEST_DATA) + "/golden/llama_bytes/imatrix.gguf";
std::string cli() { return FORGIA_CLI; }

struct Cli : ::testing::Test {
  fgt::TempDir dir;
  std::string out, err;
  int run(const std::string &args) { return fgt::run(cli() + " export --from-gguf " + model + " " + args, &out, &err); }
  void expect_usage(const std::string &args, const std::string &says) {
    SCOPED_TRACE(args);
    const auto before = fgx::list_dir(dir.path);
    EXPECT_EQ(run(args + " --out " + dir.file("o.gguf")), 2) << err;
    EXPECT_NE(err.find(says), std::string::npos) << err;
    EXPECT_EQ(fgx::list_dir(dir.path), before);
  }
  void expect_fails(const std::string &args, const std::string &says) {
    SCOPED_TRACE(args);
    const auto before = fgx::list_dir(dir.path);
    EXPECT_EQ(run(args + " --out " + dir.file("o.gguf")), 1) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find(says), std::string::npos) << err;
    EXPECT_EQ(fgx::list_dir(dir.path), before);
  }
};

TEST_F(Cli, BadFlagsAreUsageErrors) {
  expect_usage("--dtype Q4_K_M --tensor-type attn_v", "PATTERN=TYPE");
  expect_usage("--dtype Q4_K_M --tensor-type =q8_0", "missing tensor name pattern");
  expect_usage("--dtype Q4_K_M --tensor-type attn_v=q9_9", "not a ggml type");
  expect_usage("--dtype Q4_K_M --tensor-type-file " + dir.file("none.txt"), "cannot open");
  expect_usage("--dtype Q4_K_M --output-tensor-type nonsense", "not a ggml type");
  expect_usage("--dtype q4_K --pure", "only with a llama-quantize mixture");
  expect_usage("--dtype Q4_K_M --experts-dtype Q4_K_M", "is a mixture");
  expect_usage("--dtype Q9_K_Z", "unknown target");
}

TEST_F(Cli, BadModelInputFailsWithOneLine) {
  expect_fails("--dtype Q4_K_M --tensor-type '(attn=q8_0'", "tensor-type pattern");
  expect_fails("--dtype IQ2_XXS", "needs an importance matrix");
  expect_fails("--dtype Q4_K_M --imatrix " + model, "imatrix");  // a model is not an importance matrix
  expect_fails("--dtype Q4_K_M --imatrix " + dir.file("none.imatrix"), "none.imatrix");
}

TEST_F(Cli, DryRunShowsFallbacksRulesAndOverrides) {
  ASSERT_EQ(run("--dtype Q4_K_M --dry-run"), 0) << err;
  EXPECT_NE(out.find("blk.0.ffn_down.weight"), std::string::npos);
  EXPECT_NE(out.find("fallback: 384 elements per row are not whole 256-element blocks of q4_K"), std::string::npos)
      << out;
  EXPECT_NE(out.find("general.file_type = 15 (Q4_K_M)"), std::string::npos) << out;
  EXPECT_NE(out.find("output: q6_K"), std::string::npos) << out;

  ASSERT_EQ(run("--dtype Q4_K_M --tensor-type 'BLK\\.0\\.attn_v=q8_0' --token-embedding-type q8_0 --dry-run"), 0) << err;
  // the pattern is lower-cased, as llama-quantize does
  EXPECT_NE(out.find("blk.0.attn_v.weight"), std::string::npos);
  const size_t v0 = out.find("blk.0.attn_v.weight");
  EXPECT_NE(out.substr(v0, out.find('\n', v0) - v0).find("f16 -> q8_0"), std::string::npos) << out;
  const size_t te = out.find("token_embd.weight");
  EXPECT_NE(out.substr(te, out.find('\n', te) - te).find("(override)"), std::string::npos) << out;

  ASSERT_EQ(run("--dtype IQ2_XXS --dry-run"), 0) << err;
  EXPECT_NE(out.find("[needs an importance matrix]"), std::string::npos) << out;
  EXPECT_NE(out.find("warning: the export would fail"), std::string::npos) << out;
  ASSERT_EQ(run("--dtype IQ2_XXS --imatrix " + imatrix + " --dry-run"), 0) << err;
  EXPECT_NE(out.find("[imatrix]"), std::string::npos) << out;
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
}

TEST_F(Cli, MixtureNeedsAGgufWithAnArchitecture) {
  // a GGUF without general.architecture: llama-quantize cannot load it, forgia says which key
  std::vector<fgx::Tensor> ts = {fgx::make("blk.0.attn_k.weight", FG_F32, {4, 256}, 1)};
  const std::string bare = dir.file("bare.gguf");
  fgx::write_gguf(bare, nullptr, ts);
  EXPECT_EQ(fgt::run(cli() + " export --from-gguf " + bare + " --dtype Q4_K_M --out " + dir.file("o.gguf"), &out, &err), 1);
  EXPECT_NE(err.find("general.architecture"), std::string::npos) << err;
  // and the single type still works there
  EXPECT_EQ(fgt::run(cli() + " export --from-gguf " + bare + " --dtype q4_K --out " + dir.file("o.gguf"), &out, &err), 0)
      << err;
}

// llama-quantize's own form, IN OUT TYPE: the same file as the flags write, byte for byte; the
// input, output or mode given both ways is a usage error that writes nothing.
TEST_F(Cli, PositionalFormIsTheFlagsForm) {
  const std::string a = dir.file("flags.gguf"), b = dir.file("positional.gguf");
  ASSERT_EQ(fgt::run(cli() + " export --from-gguf " + model + " --out " + a + " --dtype Q4_K_M", &out, &err), 0) << err;
  ASSERT_EQ(fgt::run(cli() + " export " + model + " " + b + " Q4_K_M", &out, &err), 0) << err;
  EXPECT_EQ(fgt::sha256_file(a), fgt::sha256_file(b));
  const std::string c = dir.file("positional_flag.gguf");
  ASSERT_EQ(fgt::run(cli() + " export " + model + " " + c + " --dtype Q4_K_M", &out, &err), 0) << err;
  EXPECT_EQ(fgt::sha256_file(a), fgt::sha256_file(c));
  const auto before = fgx::list_dir(dir.path);
  const std::string o = dir.file("o.gguf");
  const struct {
    std::string args, says;
  } bad[] = {
      {model + " " + o + " Q4_K_M --dtype Q8_0", "mode is given twice"},
      {model + " " + o + " --out " + o, "output is given twice"},
      {model + " --from-gguf " + model + " --out " + o, "input is given twice"},
      {model + " " + o + " Q4_K_M extra", "expected a thread count"},  // llama-quantize's NTHREADS
      {model + " " + o + " Q4_K_M 2 extra", "unexpected argument"},
      {model, "--out"},
  };
  for (const auto &k : bad) {
    SCOPED_TRACE(k.args);
    EXPECT_EQ(fgt::run(cli() + " export " + k.args, &out, &err), 2) << err;
    EXPECT_NE(err.find(k.says), std::string::npos) << err;
  }
  EXPECT_EQ(fgx::list_dir(dir.path), before);
}

}  // namespace
