// Peak memory of `forgia export`: a model several times larger than the export's working
// set is transcoded with RSS bounded by the chunk buffers, not by the model. The model is
// generated with the streaming writer (so the generator is bounded too) and its size can be
// raised with FORGIA_EXPORT_SLOW_MIB (default 1024).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../cpu/export_fixtures.h"

namespace {

// Parses "peak RSS 12.3 MiB" from the CLI's summary into bytes.
double peak_rss_bytes(const std::string &out) {
  size_t p = out.find("peak RSS ");
  if (p == std::string::npos) return -1;
  double v = 0;
  char unit[8] = "";
  if (std::sscanf(out.c_str() + p + 9, "%lf %7s", &v, unit) != 2) return -1;
  std::string u = unit;
  double m = u == "KiB" ? 1024.0 : u == "MiB" ? 1048576.0 : u == "GiB" ? 1073741824.0 : 1.0;
  return v * m;
}

TEST(ExportMemory, LargeModelStaysBounded) {
  const char *env = std::getenv("FORGIA_EXPORT_SLOW_MIB");
  const uint64_t mib = env ? std::strtoull(env, nullptr, 10) : 1024;
  const uint64_t rows = 1024, cols = 4096;                      // 16 MiB of f32 per tensor
  const uint64_t ntensors = mib / 16 ? mib / 16 : 1;
  fgt::TempDir dir;
  std::string in = dir.file("big.gguf"), out = dir.file("big_q8.gguf");

  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
  fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
  uint64_t ne[2] = {cols, rows};
  std::vector<std::string> names;
  for (uint64_t i = 0; i < ntensors; i++) {
    names.push_back("blk." + std::to_string(i) + ".ffn_up.weight");
    ASSERT_EQ(fg_gguf_writer_declare_tensor(w, names.back().c_str(), FG_F32, 2, ne), FG_OK);
  }
  ASSERT_EQ(fg_gguf_writer_begin(w, in.c_str()), FG_OK) << fg_last_error();
  std::vector<float> row_block = fgt::gaussian(rows * cols, 42);
  for (uint64_t i = 0; i < ntensors; i++) {
    row_block[0] = (float)i;  // tensors differ
    ASSERT_EQ(fg_gguf_writer_write_data(w, row_block.data(), row_block.size() * 4), FG_OK) << fg_last_error();
  }
  ASSERT_EQ(fg_gguf_writer_commit(w), FG_OK) << fg_last_error();
  fg_gguf_writer_free(w);
  row_block.clear();
  row_block.shrink_to_fit();

  std::string so, se;
  std::string cmd = std::string(FORGIA_CLI) + " export --from-gguf " + in + " --out " + out + " --dtype q8_0 --chunk-mib 16";
  ASSERT_EQ(fgt::run(cmd, &so, &se), 0) << se;
  double rss = peak_rss_bytes(so);
  double model = (double)ntensors * rows * cols * 4;
  size_t last = so.rfind("wrote");
  std::printf("model %.0f MiB -> %s", model / 1048576.0, last == std::string::npos ? so.c_str() : so.c_str() + last);
  ASSERT_GT(rss, 0) << so;
  // Working set: 16 MiB f32 chunk + its q8_0 encoding + up to 16 MiB of source pages in
  // flight + the process itself; far below the model.
  EXPECT_LT(rss, 160.0 * 1048576.0) << so;
  EXPECT_LT(rss, model / 4) << so;

  fg_gguf_file *g = nullptr;
  ASSERT_EQ(fg_gguf_open(out.c_str(), FG_MAP_MMAP, &g), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_gguf_tensor_count(g), ntensors);
  EXPECT_EQ(fg_gguf_tensor_at(g, ntensors - 1)->dtype, FG_Q8_0);
  fg_gguf_close(g);
}

}  // namespace
