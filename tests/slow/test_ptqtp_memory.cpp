// Peak memory of `forgia export --ptqtp`: a model many times larger than the export's
// working set (one source tensor's f32 values plus its planes) quantizes with a peak RSS
// bounded by that working set and the process itself, not by the model; an expert stack
// adds its held planes 1..K-1 and no more. The model is written with the streaming writer
// (the generator is bounded too); FORGIA_PTQTP_SLOW_MIB sets its f16 size (default 256).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/gguf.h"
#include "testutil.h"

namespace {

// "<what>: ... (N bytes)" from the CLI's summary.
double figure(const std::string &out, const std::string &what) {
  size_t p = out.find(what);
  if (p == std::string::npos) return -1;
  p = out.find('(', p + what.size());
  return p == std::string::npos ? -1 : std::strtod(out.c_str() + p + 1, nullptr);
}

// A GGUF of n f16 tensors of rows x cols (2-D) or one stack of n experts, written streaming.
void write_model(const std::string &path, uint64_t n, uint64_t rows, uint64_t cols, bool stack) {
  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_writer_create(&w));
  fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
  if (stack) {
    const uint64_t ne[3] = {cols, rows, n};
    ASSERT_EQ(FG_OK, fg_gguf_writer_declare_tensor(w, "blk.0.ffn_up_exps.weight", FG_F16, 3, ne));
  } else {
    const uint64_t ne[2] = {cols, rows};
    for (uint64_t i = 0; i < n; i++) {
      const std::string name = "blk." + std::to_string(i) + ".ffn_up.weight";
      ASSERT_EQ(FG_OK, fg_gguf_writer_declare_tensor(w, name.c_str(), FG_F16, 2, ne));
    }
  }
  ASSERT_EQ(FG_OK, fg_gguf_writer_begin(w, path.c_str())) << fg_last_error();
  const std::vector<float> g = fgt::gaussian(rows * cols, 42, 0.02f);
  std::vector<uint16_t> h(g.size());
  for (size_t i = 0; i < g.size(); i++) h[i] = fg_f32_to_f16(g[i]);
  for (uint64_t i = 0; i < n; i++) {
    h[0] = fg_f32_to_f16((float)i * 1e-3f);  // tensors differ
    ASSERT_EQ(FG_OK, fg_gguf_writer_write_data(w, h.data(), h.size() * 2)) << fg_last_error();
  }
  ASSERT_EQ(FG_OK, fg_gguf_writer_commit(w)) << fg_last_error();
  fg_gguf_writer_free(w);
}

struct Figures {
  double rss, workset, planned;
};

Figures export_ptqtp(const std::string &in, const std::string &out, int k) {
  std::string so, se;
  const std::string cmd = std::string(FORGIA_CLI) + " export --from-gguf " + in + " --out " + out +
                          " --ptqtp=" + std::to_string(k);
  EXPECT_EQ(0, fgt::run(cmd, &so, &se)) << se;
  const size_t last = so.rfind("exported");
  std::printf("%s", last == std::string::npos ? so.c_str() : so.c_str() + last);
  return {figure(so, "peak RSS"), figure(so, "peak tensor working set"), figure(so, "peak working set (planned)")};
}

TEST(PtqtpMemory, LargeModelStaysBoundedByOneTensor) {
  const char *env = std::getenv("FORGIA_PTQTP_SLOW_MIB");
  const uint64_t mib = env ? std::strtoull(env, nullptr, 10) : 256;
  const uint64_t rows = 1024, cols = 1024;  // 2 MiB of f16, 4 MiB of f32 per tensor
  const uint64_t n = mib / 2 ? mib / 2 : 1;
  fgt::TempDir dir;
  // the process alone: the same export of a one-tensor model
  write_model(dir.file("small.gguf"), 1, rows, cols, false);
  const Figures small = export_ptqtp(dir.file("small.gguf"), dir.file("small_o.gguf"), 2);
  write_model(dir.file("big.gguf"), n, rows, cols, false);
  const Figures big = export_ptqtp(dir.file("big.gguf"), dir.file("big_o.gguf"), 2);
  const double model = (double)n * rows * cols * 2;
  ASSERT_GT(big.rss, 0);
  ASSERT_GT(big.workset, 0);
  EXPECT_LE(big.workset, big.planned);
  EXPECT_EQ(small.workset, big.workset);  // one tensor's, whatever the model
  // one tensor's working set over the process's own footprint, with slack for the allocator
  // and the source pages in flight, and far below the model
  EXPECT_LT(big.rss, small.rss + big.workset + 16.0 * 1048576) << "model " << model / 1048576 << " MiB";
  if (mib >= 128) {  // below that the process itself is a large share
    EXPECT_LT(big.rss, model / 4);
  }
  fg_gguf_file *g = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_open(dir.file("big_o.gguf").c_str(), FG_MAP_MMAP, &g)) << fg_last_error();
  EXPECT_EQ(2 * n, fg_gguf_tensor_count(g));
  fg_gguf_close(g);

  // an expert stack of the same bytes: one expert's values and plane 0 plus the held plane 1
  write_model(dir.file("moe.gguf"), n, rows, cols, true);
  const Figures moe = export_ptqtp(dir.file("moe.gguf"), dir.file("moe_o.gguf"), 2);
  const double held = (double)n * rows * (cols / 256) * 66;
  EXPECT_LE(moe.workset, moe.planned);
  EXPECT_GE(moe.workset, held);
  EXPECT_LT(moe.rss, small.rss + moe.workset + 16.0 * 1048576);
  if (mib >= 128) {
    EXPECT_LT(moe.rss, model / 2);
  }
}

}  // namespace
