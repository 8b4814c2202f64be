// forgia export --dtype MIXTURE writes the same file as llama-quantize, byte for byte, without
// and with an importance matrix: tests/data/golden/llama_bytes/sha256.txt holds the size and
// SHA-256 of llama-quantize's output for every mixture (its recipe is
// tests/data/llama_bytes_gen/run.sh); a "refused" line is a mixture llama-quantize will not
// run without a matrix, which forgia's plan refuses too, naming the tensor.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/ckpt.h"
#include "forgia/export.h"
#include "forgia/imatrix.h"
#include "testutil.h"

namespace {

const std::string gold = std::string(FORGIA_TEST_DATA) + "/golden/llama_bytes/";

TEST(ExportLlamaBytes, EveryMixtureEqualsLlamaQuantize) {
  fgt::TempDir dir;
  fg_ckpt *src = nullptr;
  ASSERT_EQ(fg_ckpt_open((gold + "model.gguf").c_str(), &src), FG_OK) << fg_last_error();
  fg_imatrix *im = nullptr;
  ASSERT_EQ(fg_imatrix_open((gold + "imatrix.gguf").c_str(), &im), FG_OK) << fg_last_error();
  std::ifstream f(gold + "sha256.txt");
  std::string line;
  int files = 0, refusals = 0;
  struct Part {
    std::string mix, part, size, hash;
  };
  std::vector<Part> keep_split;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    std::string mix, kind, size, hash;
    is >> mix >> kind >> size >> hash;
    SCOPED_TRACE(mix + " " + kind);
    if (kind.rfind("keep-split-", 0) == 0) {
      keep_split.push_back({mix, kind.substr(11), size, hash});
      continue;
    }
    fg_export_options o{};
    ASSERT_EQ(fg_export_target_parse(mix.c_str(), &o.dtype), FG_OK) << fg_last_error();
    if (kind == "imatrix") {
      o.imatrix = im;
      o.imatrix_label = "imatrix.gguf"; // the name llama-quantize was given (run.sh runs in the folder)
    }
    fg_export_plan *p = nullptr;
    ASSERT_EQ(fg_export_plan_create(src, &o, &p), FG_OK) << fg_last_error();
    const std::string out = dir.file(mix + "_" + kind + ".gguf");
    if (size == "refused") {
      EXPECT_EQ(fg_export_plan_ready(p), FG_ERR_UNSUPPORTED);
      EXPECT_NE(std::string(fg_last_error()).find("needs an importance matrix"), std::string::npos) << fg_last_error();
      EXPECT_EQ(fg_export_run(p, out.c_str(), nullptr, nullptr), FG_ERR_UNSUPPORTED);
      struct stat st;
      EXPECT_NE(stat(out.c_str(), &st), 0);  // nothing written
      refusals++;
    } else {
      ASSERT_EQ(fg_export_run(p, out.c_str(), nullptr, nullptr), FG_OK) << fg_last_error();
      struct stat st;
      ASSERT_EQ(stat(out.c_str(), &st), 0);
      EXPECT_EQ(std::to_string(st.st_size), size);
      EXPECT_EQ(fgt::sha256_file(out), hash);
      unlink(out.c_str());
      files++;
    }
    fg_export_plan_free(p);
  }
  EXPECT_EQ(files, 59);
  EXPECT_EQ(refusals, 9);
  fg_ckpt_close(src);

  // --keep-split on a 3-part split of the same model: every part equals llama-quantize's
  ASSERT_EQ(keep_split.size(), 6u);
  ASSERT_EQ(fg_ckpt_open((gold + "split/model-00001-of-00003.gguf").c_str(), &src), FG_OK) << fg_last_error();
  for (size_t i = 0; i < keep_split.size(); i += 3) {
    const std::string &mix = keep_split[i].mix;
    SCOPED_TRACE(mix + " --keep-split");
    fg_export_options o{};
    ASSERT_EQ(fg_export_target_parse(mix.c_str(), &o.dtype), FG_OK) << fg_last_error();
    o.imatrix = im;
    o.imatrix_label = "imatrix.gguf";
    o.keep_split = true;
    fg_export_plan *p = nullptr;
    ASSERT_EQ(fg_export_plan_create(src, &o, &p), FG_OK) << fg_last_error();
    ASSERT_EQ(fg_export_plan_outputs(p), 3u);
    const std::string out = dir.file("ks_" + mix + ".gguf");
    ASSERT_EQ(fg_export_run(p, out.c_str(), nullptr, nullptr), FG_OK) << fg_last_error();
    for (size_t k = 0; k < 3; k++) {
      const Part &part = keep_split[i + k];
      EXPECT_EQ(part.mix, mix);
      char path[4096];
      ASSERT_EQ(fg_export_plan_output_path(p, out.c_str(), k, path, sizeof path), FG_OK);
      EXPECT_EQ(std::string(path), dir.file("ks_" + mix + "-0000" + part.part + "-of-00003.gguf"));
      struct stat st;
      ASSERT_EQ(stat(path, &st), 0) << path;
      EXPECT_EQ(std::to_string(st.st_size), part.size) << path;
      EXPECT_EQ(fgt::sha256_file(path), part.hash) << path;
    }
    fg_export_plan_free(p);
  }
  fg_ckpt_close(src);
  fg_imatrix_close(im);
}

}  // namespace
