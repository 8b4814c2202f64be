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

#include "forgia/ckpt.h"
#include "forgia/export.h"
#include "forgia/imatrix.h"
#include "testutil.h"

namespace {

const std::string gold = std::string(FORGIA_TEST_DATA) + "/golden/llama_bytes/";

std::string sha256(const std::string &path) {
  std::string out;
  EXPECT_EQ(fgt::run("sha256sum '" + path + "'", &out), 0);
  return out.substr(0, 64);
}

TEST(ExportLlamaBytes, EveryMixtureEqualsLlamaQuantize) {
  fgt::TempDir dir;
  fg_ckpt *src = nullptr;
  ASSERT_EQ(fg_ckpt_open((gold + "model.gguf").c_str(), &src), FG_OK) << fg_last_error();
  fg_imatrix *im = nullptr;
  ASSERT_EQ(fg_imatrix_open((gold + "imatrix.gguf").c_str(), &im), FG_OK) << fg_last_error();
  std::ifstream f(gold + "sha256.txt");
  std::string line;
  int files = 0, refusals = 0;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    std::string mix, kind, size, hash;
    is >> mix >> kind >> size >> hash;
    SCOPED_TRACE(mix + " " + kind);
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
      EXPECT_EQ(sha256(out), hash);
      unlink(out.c_str());
      files++;
    }
    fg_export_plan_free(p);
  }
  EXPECT_EQ(files, 59);
  EXPECT_EQ(refusals, 9);
  fg_imatrix_free(im);
  fg_ckpt_close(src);
}

}  // namespace
