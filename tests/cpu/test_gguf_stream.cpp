// GGUF from a pipe (fg_gguf_stream): the header read with buffered reads, tensors delivered
// in file order in bounded chunks, unwanted ones read through. Every KV and tensor is
// compared with the mapping reader (fg_gguf_open_bytes) on the same bytes; the writer end
// of the pipe is a thread writing in pieces of assorted sizes, or `cat` through popen. A
// stream cut at every byte fails with FG_ERR_TRUNCATED naming that offset, and malformed
// headers give the mapping parser's statuses.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <map>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "forgia/gguf_stream.h"
#include "gguf_test_util.h"
#include "load_test_util.h"

namespace {

using gg::Bytes;

// Writes bytes into a pipe from a thread, piece bytes at a time; read_fd is the other end.
struct Feeder {
  int read_fd = -1;
  std::thread th;
  Feeder(const Bytes &b, size_t piece) {
    int fds[2];
    EXPECT_EQ(0, pipe(fds));
    read_fd = fds[0];
    int w = fds[1];
    th = std::thread([w, &b, piece] {
      size_t at = 0;
      while (at < b.size()) {
        size_t k = b.size() - at < piece ? b.size() - at : piece;
        ssize_t n = write(w, b.data() + at, k);
        if (n <= 0) break;  // the reader stopped early and closed its end
        at += (size_t)n;
      }
      close(w);
    });
  }
  ~Feeder() {
    close(read_fd);  // before joining: a writer blocked on a full pipe then gets EPIPE
    th.join();
  }
};

struct Got {
  std::vector<std::string> order;
  std::map<std::string, Bytes> data;
  size_t calls = 0, max_len = 0;
  bool contiguous = true;
};

fg_status collect(const fg_gguf_tensor *t, uint64_t off, const void *bytes, size_t len, void *user) {
  Got *g = static_cast<Got *>(user);
  std::string n(t->name);
  if (off == 0) g->order.push_back(n);
  Bytes &d = g->data[n];
  if (d.size() != off) g->contiguous = false;
  d.insert(d.end(), (const uint8_t *)bytes, (const uint8_t *)bytes + len);
  g->calls++;
  if (len > g->max_len) g->max_len = len;
  return FG_OK;
}

// A model-shaped GGUF: KVs of every wire type (a 3000-entry token list among them) and the
// loader fixtures' tensors (f32, f16, bf16, i32, q8_0, q4_K).
Bytes model_gguf(uint32_t alignment = 0) {
  fg_gguf_writer *w = nullptr;
  EXPECT_EQ(FG_OK, fg_gguf_writer_create(&w));
  if (alignment) {
    EXPECT_EQ(FG_OK, fg_gguf_writer_set_u32(w, "general.alignment", alignment));
  }
  EXPECT_EQ(FG_OK, fg_gguf_writer_set_str(w, "general.architecture", "llama", 5));
  EXPECT_EQ(FG_OK, fg_gguf_writer_set_u32(w, "llama.block_count", 30));
  EXPECT_EQ(FG_OK, fg_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f));
  EXPECT_EQ(FG_OK, fg_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true));
  EXPECT_EQ(FG_OK, fg_gguf_writer_set_i64(w, "x.i64", -5));
  EXPECT_EQ(FG_OK, fg_gguf_writer_set_f64(w, "x.f64", 0.25));
  std::vector<std::string> toks;
  std::vector<const char *> ptrs;
  std::vector<float> scores;
  for (int i = 0; i < 3000; i++) {
    toks.push_back("tok" + std::to_string(i * 7919 % 100003));
    scores.push_back(-(float)i);
  }
  for (auto &s : toks) ptrs.push_back(s.c_str());
  EXPECT_EQ(FG_OK, fg_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", ptrs.data(), nullptr, ptrs.size()));
  EXPECT_EQ(FG_OK, fg_gguf_writer_set_array(w, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, scores.data(), scores.size()));
  EXPECT_EQ(FG_OK, fg_gguf_writer_set_array(w, "x.empty", FG_GGUF_INT32, nullptr, 0));
  // the writer borrows tensor bytes until it finishes
  const std::vector<ldt::Tensor> ts = ldt::model_tensors(true);
  for (const ldt::Tensor &t : ts) {
    uint64_t ne[4];
    for (size_t d = 0; d < t.shape.size(); d++) ne[d] = t.shape[t.shape.size() - 1 - d];
    EXPECT_EQ(FG_OK, fg_gguf_writer_add_tensor(w, t.name.c_str(), t.dtype, (uint32_t)t.shape.size(), ne,
                                               t.bytes.data(), t.bytes.size()))
        << fg_last_error();
  }
  void *out = nullptr;
  size_t len = 0;
  EXPECT_EQ(FG_OK, fg_gguf_writer_finish_mem(w, &out, &len)) << fg_last_error();
  Bytes b((uint8_t *)out, (uint8_t *)out + len);
  free(out);
  fg_gguf_writer_free(w);
  return b;
}

// The stream's metadata and directory equal the mapping reader's.
void expect_same_header(const fg_gguf_stream *s, const fg_gguf_file *f) {
  const fg_gguf_file *m = fg_gguf_stream_metadata(s);
  ASSERT_NE(nullptr, m);
  EXPECT_EQ(fg_gguf_version(f), fg_gguf_stream_version(s));
  EXPECT_EQ(fg_gguf_alignment(f), fg_gguf_stream_alignment(s));
  EXPECT_EQ(fg_gguf_data_offset(f, 0), fg_gguf_stream_data_offset(s));
  ASSERT_EQ(fg_gguf_kv_count(f), fg_gguf_kv_count(m));
  for (size_t i = 0; i < fg_gguf_kv_count(f); i++) {
    const uint8_t *a, *b;
    uint64_t la, lb;
    ASSERT_EQ(FG_OK, fg_gguf_kv_raw(f, i, &a, &la));
    ASSERT_EQ(FG_OK, fg_gguf_kv_raw(m, i, &b, &lb));
    ASSERT_EQ(la, lb) << "KV " << i;
    EXPECT_EQ(0, memcmp(a, b, la)) << "KV " << i;
  }
  EXPECT_EQ(0u, fg_gguf_tensor_count(m));
  ASSERT_EQ(fg_gguf_tensor_count(f), fg_gguf_stream_tensor_count(s));
  for (size_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *a = fg_gguf_tensor_at(f, i), *b = fg_gguf_stream_tensor_at(s, i);
    EXPECT_STREQ(a->name, b->name);
    EXPECT_EQ(a->dtype, b->dtype);
    EXPECT_EQ(a->ndim, b->ndim);
    EXPECT_EQ(0, memcmp(a->ne, b->ne, sizeof a->ne));
    EXPECT_EQ(0, memcmp(a->shape, b->shape, sizeof a->shape));
    EXPECT_EQ(a->offset, b->offset);
    EXPECT_EQ(a->nbytes, b->nbytes);
    EXPECT_EQ(nullptr, b->data);
  }
  EXPECT_EQ(nullptr, fg_gguf_stream_tensor_at(s, fg_gguf_tensor_count(f)));
}

class GgufStream : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }
};

TEST_F(GgufStream, MatchesTheMappedReader) {
  for (uint32_t align : {0u, 64u, 1u}) {
    Bytes b = model_gguf(align);
    fg_gguf_file *f = nullptr;
    ASSERT_EQ(FG_OK, fg_gguf_open_bytes(b.data(), b.size(), &f)) << fg_last_error();
    const fg_gguf_tensor *lastt = fg_gguf_tensor_at(f, fg_gguf_tensor_count(f) - 1);
    for (size_t piece : {(size_t)1, (size_t)7, (size_t)4096, (size_t)1 << 20}) {
      for (size_t chunk : {(size_t)977, (size_t)65536, (size_t)0}) {
        // a write per byte is slow: once is enough to show that any split of the input works
        if (piece == 1 && (align != 0 || chunk != 977)) continue;
        SCOPED_TRACE("align " + std::to_string(align) + " piece " + std::to_string(piece) + " chunk " +
                     std::to_string(chunk));
        Feeder fd(b, piece);
        fg_gguf_stream_options o = {chunk, 0};
        fg_gguf_stream *s = nullptr;
        ASSERT_EQ(FG_OK, fg_gguf_stream_open_fd(fd.read_fd, "pipe", &o, &s)) << fg_last_error();
        expect_same_header(s, f);
        Got g;
        ASSERT_EQ(FG_OK, fg_gguf_stream_read(s, nullptr, collect, &g)) << fg_last_error();
        EXPECT_TRUE(g.contiguous);
        EXPECT_LE(g.max_len, chunk ? chunk : FG_GGUF_STREAM_DEFAULT_CHUNK);
        ASSERT_EQ(fg_gguf_tensor_count(f), g.order.size());
        for (size_t i = 0; i < fg_gguf_tensor_count(f); i++) {
          const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
          EXPECT_EQ(t->name, g.order[i]);
          const Bytes &d = g.data[t->name];
          ASSERT_EQ(t->nbytes, d.size()) << t->name;
          EXPECT_EQ(0, memcmp(t->data, d.data(), d.size())) << t->name;
        }
        // Stopped at the end of the last tensor's bytes: its trailing padding is not read.
        EXPECT_EQ(fg_gguf_data_offset(f, 0) + lastt->offset + lastt->nbytes, fg_gguf_stream_position(s));
        EXPECT_EQ(FG_ERR_STATE, fg_gguf_stream_read(s, nullptr, collect, &g));
        fg_gguf_stream_close(s);
      }
    }
    fg_gguf_close(f);
  }
}

bool odd_ones(const fg_gguf_tensor *t, void *user) {
  auto *seen = static_cast<std::vector<std::string> *>(user);
  seen->push_back(t->name);
  return seen->size() % 2 == 0 && seen->size() < 7;
}

TEST_F(GgufStream, SkipsUnwantedAndStopsAfterTheLastWanted) {
  Bytes b = model_gguf();
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_open_bytes(b.data(), b.size(), &f));
  ASSERT_GE(fg_gguf_tensor_count(f), 8u);
  Feeder fd(b, 333);
  fg_gguf_stream_options o = {1000, 0};
  fg_gguf_stream *s = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_stream_open_fd(fd.read_fd, "pipe", &o, &s)) << fg_last_error();
  struct Both {
    std::vector<std::string> seen;
    Got got;
  } both;
  auto want = [](const fg_gguf_tensor *t, void *u) { return odd_ones(t, &static_cast<Both *>(u)->seen); };
  auto chunk = [](const fg_gguf_tensor *t, uint64_t off, const void *p, size_t n, void *u) {
    return collect(t, off, p, n, &static_cast<Both *>(u)->got);
  };
  ASSERT_EQ(FG_OK, fg_gguf_stream_read(s, want, chunk, &both)) << fg_last_error();
  // want saw every tensor, in file order, before any bytes were delivered
  ASSERT_EQ(fg_gguf_tensor_count(f), both.seen.size());
  std::vector<std::string> expect_order;
  for (size_t i = 1; i < 6; i += 2) expect_order.push_back(fg_gguf_tensor_at(f, i)->name);
  EXPECT_EQ(expect_order, both.got.order);
  for (const std::string &n : expect_order) {
    const fg_gguf_tensor *t = fg_gguf_find_tensor(f, n.c_str());
    ASSERT_EQ(t->nbytes, both.got.data[n].size());
    EXPECT_EQ(0, memcmp(t->data, both.got.data[n].data(), t->nbytes)) << n;
  }
  const fg_gguf_tensor *t5 = fg_gguf_tensor_at(f, 5);
  EXPECT_EQ(fg_gguf_data_offset(f, 0) + t5->offset + t5->nbytes, fg_gguf_stream_position(s));
  fg_gguf_stream_close(s);

  // Nothing wanted: nothing past the header is read.
  Feeder fd2(b, 4096);
  ASSERT_EQ(FG_OK, fg_gguf_stream_open_fd(fd2.read_fd, "pipe", nullptr, &s));
  uint64_t header_end = fg_gguf_stream_position(s);
  EXPECT_LT(header_end, fg_gguf_stream_data_offset(s) + 1);
  Got none;
  auto no = [](const fg_gguf_tensor *, void *) { return false; };
  ASSERT_EQ(FG_OK, fg_gguf_stream_read(s, no, collect, &none));
  EXPECT_EQ(0u, none.calls);
  EXPECT_EQ(header_end, fg_gguf_stream_position(s));
  fg_gguf_stream_close(s);
  fg_gguf_close(f);
}

TEST_F(GgufStream, FromCatThroughPopen) {
  Bytes b = model_gguf();
  fgt::TempDir dir;
  std::string p = dir.file("m.gguf");
  fgt::write_file(p, b.data(), b.size());
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_open(p.c_str(), FG_MAP_MMAP, &f));
  FILE *cat = popen(("cat '" + p + "'").c_str(), "r");
  ASSERT_NE(nullptr, cat);
  fg_gguf_stream *s = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_stream_open_fd(fileno(cat), "cat", nullptr, &s)) << fg_last_error();
  expect_same_header(s, f);
  Got g;
  ASSERT_EQ(FG_OK, fg_gguf_stream_read(s, nullptr, collect, &g)) << fg_last_error();
  for (size_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    ASSERT_EQ(t->nbytes, g.data[t->name].size());
    EXPECT_EQ(0, memcmp(t->data, g.data[t->name].data(), t->nbytes)) << t->name;
  }
  fg_gguf_stream_close(s);
  pclose(cat);
  fg_gguf_close(f);
}

// A small file cut at every byte: the header fails to open, or the read fails, with
// FG_ERR_TRUNCATED naming the offset where the input ended; the whole file reads.
TEST_F(GgufStream, CutAtEveryByteIsTruncatedAtThatOffset) {
  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_writer_create(&w));
  ASSERT_EQ(FG_OK, fg_gguf_writer_set_str(w, "general.name", "tiny", 4));
  const char *toks[] = {"a", "bc", ""};
  ASSERT_EQ(FG_OK, fg_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", toks, nullptr, 3));
  ASSERT_EQ(FG_OK, fg_gguf_writer_set_u16(w, "x.u16", 7));
  std::vector<float> v = fgt::gaussian(64, 3);
  const uint64_t ne_a[] = {5}, ne_b[] = {32, 2};
  ASSERT_EQ(FG_OK, fg_gguf_writer_add_tensor(w, "a", FG_F32, 1, ne_a, v.data(), 20));
  ASSERT_EQ(FG_OK, fg_gguf_writer_add_tensor(w, "b", FG_F32, 2, ne_b, v.data(), 256));
  void *out = nullptr;
  size_t len = 0;
  ASSERT_EQ(FG_OK, fg_gguf_writer_finish_mem(w, &out, &len));
  Bytes b((uint8_t *)out, (uint8_t *)out + len);
  free(out);
  fg_gguf_writer_free(w);
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_open_bytes(b.data(), b.size(), &f));
  const fg_gguf_tensor *tb = fg_gguf_tensor_at(f, 1);
  const uint64_t end = fg_gguf_data_offset(f, 0) + tb->offset + tb->nbytes;
  fg_gguf_close(f);
  for (size_t cut = 0; cut <= b.size(); cut++) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    Bytes part(b.begin(), b.begin() + (long)cut);
    Feeder fd(part, 5);
    fg_gguf_stream_options o = {16, 0};
    fg_gguf_stream *s = nullptr;
    fg_status st = fg_gguf_stream_open_fd(fd.read_fd, "cut", &o, &s);
    if (st == FG_OK) {
      Got g;
      st = fg_gguf_stream_read(s, nullptr, collect, &g);
      fg_gguf_stream_close(s);
    }
    if (cut >= end) {
      EXPECT_EQ(FG_OK, st) << fg_last_error();
      continue;
    }
    ASSERT_EQ(FG_ERR_TRUNCATED, st) << fg_last_error();
    std::string msg = fg_last_error();
    EXPECT_EQ(0u, msg.find("cut: the input ends at offset " + std::to_string(cut) + " inside ")) << msg;
  }
}

// Malformed headers: the statuses the mapping parser gives for the same bytes.
TEST_F(GgufStream, MalformedHeadersGiveTheParsersStatuses) {
  const Bytes data(4096, 0);
  auto finish = [&](gg::Builder &g) {
    g.pad_to(32);
    g.raw(data.data(), data.size());
    return g.b;
  };
  struct Case {
    const char *name;
    Bytes b;
    fg_status want;
  };
  std::vector<Case> cases;
  {
    gg::Builder g;
    g.raw("GGUG", 4).u32(3).u64(0).u64(0);
    cases.push_back({"magic", g.b, FG_ERR_BAD_MAGIC});
  }
  {
    gg::Builder g;
    g.header(0, 0, 1);
    cases.push_back({"version 1", g.b, FG_ERR_BAD_VERSION});
  }
  {
    gg::Builder g;
    g.header(0, 1).key("a", FG_GGUF_ARRAY).u32(FG_GGUF_ARRAY).u64(1);
    cases.push_back({"array of arrays", finish(g), FG_ERR_BAD_VALUE_TYPE});
  }
  {
    gg::Builder g;
    g.header(0, 1).key("a", 13).u32(0);
    cases.push_back({"value type 13", finish(g), FG_ERR_BAD_VALUE_TYPE});
  }
  {
    gg::Builder g;
    g.header(0, 2).key("a", FG_GGUF_UINT32).u32(1).key("a", FG_GGUF_UINT32).u32(2);
    cases.push_back({"duplicate key", finish(g), FG_ERR_DUPLICATE});
  }
  {
    gg::Builder g;
    g.header(0, 1).key("general.alignment", FG_GGUF_UINT32).u32(48);
    cases.push_back({"alignment 48", finish(g), FG_ERR_BAD_ALIGNMENT});
  }
  {
    gg::Builder g;
    g.header(1, 0).tinfo(std::string(64, 'n'), {32}, FG_F32, 0);
    cases.push_back({"long name", finish(g), FG_ERR_BAD_STRING});
  }
  {
    gg::Builder g;
    g.header(2, 0).tinfo("x", {8}, FG_F32, 0).tinfo("x", {8}, FG_F32, 32);
    cases.push_back({"duplicate tensor", finish(g), FG_ERR_DUPLICATE});
  }
  {
    gg::Builder g;
    g.header(2, 0).tinfo("x", {8}, FG_F32, 0).tinfo("y", {8}, FG_F32, 64);
    cases.push_back({"offset", finish(g), FG_ERR_BAD_OFFSET});
  }
  {
    gg::Builder g;
    g.header(1, 0).tinfo("x", {8}, 4, 0);
    cases.push_back({"removed type", finish(g), FG_ERR_BAD_DTYPE});
  }
  {
    gg::Builder g;
    g.header(1, 0).tinfo("x", {48}, FG_Q8_0, 0);
    cases.push_back({"partial block", finish(g), FG_ERR_BAD_SHAPE});
  }
  {
    gg::Builder g;
    g.header(1, 0).str("x").u32(5);
    cases.push_back({"n_dims 5", finish(g), FG_ERR_BAD_SHAPE});
  }
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    fg_gguf_file *f = nullptr;
    EXPECT_EQ(c.want, fg_gguf_open_bytes(c.b.data(), c.b.size(), &f)) << fg_last_error();
    Feeder fd(c.b, 3);
    fg_gguf_stream *s = nullptr;
    EXPECT_EQ(c.want, fg_gguf_stream_open_fd(fd.read_fd, "bad", nullptr, &s)) << fg_last_error();
    EXPECT_EQ(nullptr, s);
    EXPECT_EQ(0u, std::string(fg_last_error()).find("bad: ")) << fg_last_error();
  }
}

TEST_F(GgufStream, LimitsAndCallbackErrors) {
  Bytes b = model_gguf();
  fg_gguf_stream *s = nullptr;
  {
    // The header (a 3000-token list) is far over 1000 bytes: refused at the limit.
    Feeder fd(b, 4096);
    fg_gguf_stream_options o = {0, 1000};
    EXPECT_EQ(FG_ERR_RANGE, fg_gguf_stream_open_fd(fd.read_fd, "pipe", &o, &s));
    EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("limit of 1000 bytes")) << fg_last_error();
  }
  {
    // Counts no header within the limit could hold: refused before anything is allocated.
    gg::Builder g;
    g.header(1ull << 40, 1ull << 40);
    Feeder fd(g.b, 4096);
    EXPECT_EQ(FG_ERR_RANGE, fg_gguf_stream_open_fd(fd.read_fd, "pipe", nullptr, &s));
  }
  {
    // A string that claims 1 GiB and brings 10 bytes: truncated, held only as it arrives.
    gg::Builder g;
    g.header(0, 1).key("k", FG_GGUF_STRING).u64(1ull << 30).raw("0123456789", 10);
    Feeder fd(g.b, 4096);
    fg_gguf_stream_options o = {0, 2ull << 30};
    EXPECT_EQ(FG_ERR_TRUNCATED, fg_gguf_stream_open_fd(fd.read_fd, "pipe", &o, &s));
    EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("ends at offset " + std::to_string(g.b.size())))
        << fg_last_error();
    EXPECT_NE(std::string::npos, std::string(fg_last_error()).find(std::to_string((1ull << 30) - 10) + " missing"))
        << fg_last_error();
  }
  {
    Feeder fd(b, 4096);
    ASSERT_EQ(FG_OK, fg_gguf_stream_open_fd(fd.read_fd, "pipe", nullptr, &s));
    auto fail = [](const fg_gguf_tensor *t, uint64_t, const void *, size_t, void *) {
      return fg_fail(FG_ERR_NOMEM, "no room for %s", t->name);
    };
    EXPECT_EQ(FG_ERR_NOMEM, fg_gguf_stream_read(s, nullptr, fail, nullptr));
    std::string msg = fg_last_error();
    const fg_gguf_tensor *t0 = fg_gguf_stream_tensor_at(s, 0);
    EXPECT_EQ("pipe: tensor '" + std::string(t0->name) + "' at offset " + std::to_string(fg_gguf_stream_data_offset(s)) +
                  ": no room for " + t0->name,
              msg);
    EXPECT_EQ(FG_ERR_STATE, fg_gguf_stream_read(s, nullptr, collect, nullptr));
    fg_gguf_stream_close(s);
  }
  // A read error is FG_ERR_IO (a directory descriptor: EISDIR).
  int dfd = open(".", O_RDONLY);
  ASSERT_GE(dfd, 0);
  EXPECT_EQ(FG_ERR_IO, fg_gguf_stream_open_fd(dfd, "dir", nullptr, &s));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("dir: read at offset 0")) << fg_last_error();
  close(dfd);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_gguf_stream_open_fd(-1, "x", nullptr, &s));
  fg_gguf_stream_close(nullptr);
}

}  // namespace
