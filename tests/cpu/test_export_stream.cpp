// The export's data path with many pieces per chunk and several threads
// (formats/export_stream.c): the same bytes whatever the thread count and chunk size, the
// codecs' bytes per tensor, the lowest failing row named whichever thread fails first, and
// a truncated source or a cancel in the middle of a chunk leaves no file behind.
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "export_fixtures.h"
#include "forgia/cancel.h"

namespace {

using fgx::Tensor;

// OpenMP's thread count for the calling thread, for one scope: what the export reads.
struct Threads {
  int old;
  explicit Threads(int n) : old(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(old); }
};

// Rows of 1024 f32 are 4 KiB: a piece (256 KiB of f32) is 64 of them, so a tensor of 700
// rows is 11 pieces, and with 1 MiB chunks 3 chunks of 4, 4 and 3 pieces.
std::vector<Tensor> model() {
  return {fgx::make("token_embd.weight", FG_F16, {700, 1024}, 1),
          fgx::make("blk.0.attn_norm.weight", FG_F32, {1024}, 2),
          fgx::make("blk.0.ffn_down.weight", FG_BF16, {300, 3072}, 3),
          fgx::make("blk.0.attn_q.weight", FG_F32, {513, 512}, 4),
          // 2-D but a norm: copied, 1.25 MiB, two copy pieces
          fgx::make("blk.0.ffn_norm.weight", FG_F16, {640, 1024}, 5)};
}

bool transcoded(const Tensor &t) { return t.shape.size() >= 2 && t.name.find("norm") == std::string::npos; }

std::vector<uint8_t> tensor_bytes(const std::string &path, const std::string &name) {
  fg_gguf_file *f = nullptr;
  EXPECT_EQ(fg_gguf_open(path.c_str(), FG_MAP_READ, &f), FG_OK) << fg_last_error();
  if (!f) return {};
  const fg_gguf_tensor *t = fg_gguf_find_tensor(f, name.c_str());
  EXPECT_NE(t, nullptr) << name;
  std::vector<uint8_t> out;
  if (t) out.assign(t->data, t->data + t->nbytes);
  fg_gguf_close(f);
  return out;
}

class ExportStream : public ::testing::Test {
 protected:
  fgt::TempDir dir;
  std::vector<Tensor> src = model();
  std::string in = dir.file("in.gguf");
  void SetUp() override { fgx::write_gguf(in, nullptr, src); }
};

TEST_F(ExportStream, ThreadsAndChunksDoNotChangeBytes) {
  for (const char *dtype : {"q8_0", "q4_K", "f32", "f16"}) {
    SCOPED_TRACE(dtype);
    const fg_dtype dst = fgx::target(dtype).dtype;
    std::string ref = dir.file(std::string("ref-") + dtype + ".gguf");
    {
      Threads one(1);
      ASSERT_EQ(fgx::export_file(in, true, fgx::opts(dtype), ref), FG_OK) << fg_last_error();
    }
    for (const Tensor &t : src) {
      std::vector<uint8_t> want = transcoded(t) && t.dtype != dst ? fgx::transcode(t, dst) : t.data;
      std::vector<uint8_t> got = tensor_bytes(ref, t.name);
      ASSERT_EQ(got.size(), want.size()) << t.name;
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size())) << t.name;
    }
    std::vector<uint8_t> ref_bytes = fgt::read_file(ref);
    for (int threads : {2, 4}) {
      for (uint64_t chunk : {(uint64_t)0, (uint64_t)1 << 20, (uint64_t)777777}) {
        SCOPED_TRACE(std::to_string(threads) + " threads, chunk " + std::to_string(chunk));
        fg_export_options o = fgx::opts(dtype);
        o.chunk_bytes = chunk;
        std::string out = dir.file("out.gguf");
        Threads n(threads);
        ASSERT_EQ(fgx::export_file(in, true, o, out), FG_OK) << fg_last_error();
        std::vector<uint8_t> got = fgt::read_file(out);
        ASSERT_EQ(got.size(), ref_bytes.size());
        EXPECT_EQ(0, std::memcmp(got.data(), ref_bytes.data(), got.size()));
      }
    }
  }
}

// Non-finite values in two pieces of one chunk: the earlier piece is reported, as with one
// thread, however the threads are scheduled.
TEST_F(ExportStream, LowestFailingPieceIsReported) {
  std::vector<Tensor> ts = src;
  const uint16_t nan16 = 0x7e00;
  for (uint64_t row : {150, 400}) std::memcpy(&ts[0].data[2 * (row * 1024 + 7)], &nan16, 2);
  std::string bad = dir.file("nan.gguf"), out = dir.file("out.gguf");
  fgx::write_gguf(bad, nullptr, ts);
  std::string first;
  {
    Threads one(1);
    ASSERT_EQ(fgx::export_file(bad, true, fgx::opts("q8_0"), out), FG_ERR_NONFINITE);
    first = fg_last_error();
  }
  EXPECT_NE(first.find("token_embd.weight"), std::string::npos) << first;
  EXPECT_NE(first.find("from row 128"), std::string::npos) << first;  // the piece of rows 128..191
  EXPECT_NE(first.find(bad), std::string::npos) << first;
  Threads four(4);
  for (int rep = 0; rep < 8; rep++) {
    ASSERT_EQ(fgx::export_file(bad, true, fgx::opts("q8_0"), out), FG_ERR_NONFINITE);
    EXPECT_EQ(std::string(fg_last_error()), first);
  }
  EXPECT_EQ(fgx::list_dir(dir.path), (std::vector<std::string>{"in.gguf", "nan.gguf"}));
}

TEST_F(ExportStream, SourceTruncatedInsideAChunk) {
  fg_ckpt *s = nullptr;
  fg_export_plan *p = nullptr;
  ASSERT_EQ(fg_ckpt_open(in.c_str(), &s), FG_OK) << fg_last_error();
  fg_export_options o = fgx::opts("q8_0");
  ASSERT_EQ(fg_export_plan_create(s, &o, &p), FG_OK) << fg_last_error();
  const fg_ckpt_tensor *t = fg_ckpt_tensor_at(s, 2);  // blk.0.ffn_down.weight
  ASSERT_EQ(0, truncate(in.c_str(), (off_t)(t->offset + t->nbytes / 3)));
  Threads four(4);
  std::string out = dir.file("out.gguf");
  EXPECT_EQ(fg_export_run(p, out.c_str(), nullptr, nullptr), FG_ERR_TRUNCATED);
  std::string msg = fg_last_error();
  EXPECT_NE(msg.find(in), std::string::npos) << msg;
  EXPECT_NE(msg.find("blk.0.ffn_down.weight"), std::string::npos) << msg;
  EXPECT_EQ(fgx::list_dir(dir.path), std::vector<std::string>{"in.gguf"});
  fg_export_plan_free(p);
  fg_ckpt_close(s);
}

struct Stop {
  int calls = 0, at = 0;
};

TEST_F(ExportStream, CancelInsideAChunk) {
  std::string out = dir.file("out.gguf");
  fgt::write_file(out, "old", 3);
  fg_export_options o = fgx::opts("q8_0");
  o.chunk_bytes = 1 << 20;
  Threads four(4);
  // The thread's hook, asked before each write: writes happen while the other threads encode.
  Stop hook{0, 6};
  fg_cancel_set([](void *u) { return ++static_cast<Stop *>(u)->calls >= static_cast<Stop *>(u)->at; }, &hook);
  fg_status st = fgx::export_file(in, true, o, out);
  fg_cancel_set(nullptr, nullptr);
  EXPECT_EQ(st, FG_ERR_STATE) << fg_last_error();
  EXPECT_EQ(hook.calls, hook.at);  // asked on the calling thread only, and not after it said stop
  EXPECT_EQ(fgx::list_dir(dir.path), (std::vector<std::string>{"in.gguf", "out.gguf"}));
  EXPECT_EQ(fgt::read_file(out), std::vector<uint8_t>({'o', 'l', 'd'}));
  // The progress callback, after the second chunk of token_embd.weight.
  fg_ckpt *s = nullptr;
  fg_export_plan *p = nullptr;
  ASSERT_EQ(fg_ckpt_open(in.c_str(), &s), FG_OK);
  ASSERT_EQ(fg_export_plan_create(s, &o, &p), FG_OK);
  Stop prog{0, 2};
  auto cb = [](const fg_export_progress *pr, void *u) {
    Stop *c = static_cast<Stop *>(u);
    EXPECT_EQ(pr->tensors_done, 0u);
    EXPECT_EQ(pr->bytes_done, (uint64_t)(c->calls + 1) * 256 * 1088);  // 256 rows of 1024 q8_0 a chunk
    return ++c->calls < c->at;
  };
  EXPECT_EQ(fg_export_run(p, out.c_str(), cb, &prog), FG_ERR_STATE);
  EXPECT_EQ(prog.calls, prog.at);
  EXPECT_EQ(fgt::read_file(out), std::vector<uint8_t>({'o', 'l', 'd'}));
  EXPECT_EQ(fgx::list_dir(dir.path), (std::vector<std::string>{"in.gguf", "out.gguf"}));
  fg_export_plan_free(p);
  fg_ckpt_close(s);
}

}  // namespace
