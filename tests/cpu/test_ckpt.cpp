// fg_ckpt: one opener for GGUF files, split GGUF models, safetensors files, indexes and
// Hugging Face folders. Every kind opens with the right tensors, offsets and bytes; the
// format is told by content; malformed files, files of neither format and FIFOs (as the
// path, a split part or a shard) fail with a clear status instead of blocking.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "export_fixtures.h"
#include "forgia/ckpt.h"
#include "forgia/load.h"
#include "forgia/device.h"

namespace {

using fgx::Tensor;

std::string tail(const std::string &path) { return path.substr(path.rfind('/') + 1); }

// The tensor as opened matches what was written: name, dtype, shape, ne, sizes, and the
// bytes both through data and at (file, offset) in the file on disk.
void expect_tensor(const fg_ckpt *c, const fg_ckpt_tensor *t, const Tensor &want, size_t file) {
  SCOPED_TRACE(want.name);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::string(t->name, t->name_len), want.name);
  EXPECT_EQ(t->name[t->name_len], '\0');
  EXPECT_EQ(t->dtype, want.dtype);
  ASSERT_EQ(t->ndim, (int)want.shape.size());
  uint64_t numel = 1;
  for (int d = 0; d < t->ndim; d++) {
    EXPECT_EQ(t->shape[d], want.shape[(size_t)d]);
    numel *= want.shape[(size_t)d];
  }
  if (t->ndim == 0) {
    EXPECT_EQ(t->shape, nullptr);
  }
  EXPECT_EQ(t->numel, numel);
  if (t->ndim <= 4) {
    for (int d = 0; d < 4; d++) EXPECT_EQ(t->ne[d], d < t->ndim ? want.shape[want.shape.size() - 1 - (size_t)d] : 1u) << d;
  } else {
    for (int d = 0; d < 4; d++) EXPECT_EQ(t->ne[d], 0u) << d;
  }
  EXPECT_EQ(t->nbytes, want.data.size());
  EXPECT_EQ(t->file, file);
  const fg_ckpt_file *f = fg_ckpt_file_at(c, t->file);
  ASSERT_NE(f, nullptr);
  ASSERT_LE(t->offset + t->nbytes, f->size);
  if (t->nbytes == 0) {
    EXPECT_EQ(t->data, nullptr);
    return;
  }
  EXPECT_EQ(t->data, f->data + t->offset);
  EXPECT_TRUE(std::vector<uint8_t>(t->data, t->data + t->nbytes) == want.data);
  std::vector<uint8_t> disk = fgt::read_file(f->path);
  ASSERT_EQ(disk.size(), f->size);
  EXPECT_TRUE(std::vector<uint8_t>(disk.begin() + (long)t->offset, disk.begin() + (long)(t->offset + t->nbytes)) ==
              want.data);
}

void write_bytes(const std::string &path, const std::string &b) { fgt::write_file(path, b.data(), b.size()); }

void copy_file(const std::string &from, const std::string &to) {
  std::vector<uint8_t> b = fgt::read_file(from);
  fgt::write_file(to, b.data(), b.size());
}

// Writes prefix-0000k-of-0000n.gguf like gguf-split, parts[k] holding its tensors.
void write_split(const std::string &prefix, const std::vector<std::vector<Tensor>> &parts) {
  int total = 0;
  for (auto &p : parts) total += (int)p.size();
  for (size_t i = 0; i < parts.size(); i++) {
    char suffix[64];
    snprintf(suffix, sizeof suffix, "-%05zu-of-%05zu.gguf", i + 1, parts.size());
    fgx::write_gguf(prefix + suffix, [&](fg_gguf_writer *w) {
      if (i == 0) fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
      fg_gguf_writer_set_u16(w, "split.no", (uint16_t)i);
      fg_gguf_writer_set_u16(w, "split.count", (uint16_t)parts.size());
      fg_gguf_writer_set_i32(w, "split.tensors.count", total);
    }, parts[i]);
  }
}

struct Opened {
  fg_status status;
  std::string error;
  bool blocked = false;
};

// fg_ckpt_open on another thread; a call still running after 10 s has blocked: the FIFOs
// get a writer so that the thread can finish, and the test fails.
Opened open_guarded(const std::string &path, const std::vector<std::string> &fifos) {
  auto fut = std::async(std::launch::async, [path] {
    fg_ckpt *c = nullptr;
    fg_status s = fg_ckpt_open(path.c_str(), &c);
    Opened r{s, fg_last_error()};
    if (s) {
      EXPECT_EQ(c, nullptr);
    }
    fg_ckpt_close(c);
    return r;
  });
  bool blocked = fut.wait_for(std::chrono::seconds(10)) != std::future_status::ready;
  while (blocked && fut.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    for (const std::string &f : fifos) {
      int fd = open(f.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) close(fd);
    }
  }
  Opened r = fut.get();
  r.blocked = blocked;
  return r;
}

std::vector<Tensor> gguf_tensors() {
  return {fgx::make("token_embd.weight", FG_F16, {5, 64}, 1), fgx::make("blk.0.attn_q.weight", FG_Q8_0, {3, 64}, 2),
          fgx::make("blk.0.attn_norm.weight", FG_F32, {64}, 3), fgx::make("blk.0.ffn_up_exps.weight", FG_F32, {2, 3, 32}, 4),
          fgx::make("output.weight", FG_Q4_K, {2, 256}, 5)};
}

TEST(Ckpt, GgufFile) {
  fgt::TempDir dir;
  std::string path = dir.file("m.gguf");
  std::vector<Tensor> ts = gguf_tensors();
  fgx::write_gguf(path, [](fg_gguf_writer *w) { fg_gguf_writer_set_u32(w, "general.alignment", 64); }, ts);
  fg_ckpt *c = nullptr;
  ASSERT_EQ(fg_ckpt_open(path.c_str(), &c), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_ckpt_format_of(c), FG_CKPT_GGUF);
  EXPECT_STREQ(fg_ckpt_format_name(fg_ckpt_format_of(c)), "gguf");
  EXPECT_EQ(fg_ckpt_path(c), path);
  EXPECT_EQ(fg_ckpt_safetensors(c), nullptr);
  const fg_gguf_file *g = fg_ckpt_gguf(c);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(fg_gguf_alignment(g), 64u);
  ASSERT_EQ(fg_ckpt_file_count(c), 1u);
  const fg_ckpt_file *f = fg_ckpt_file_at(c, 0);
  EXPECT_EQ(std::string(f->path), path);
  EXPECT_EQ(f->size, fgt::read_file(path).size());
  EXPECT_EQ(f->data, fg_mapping_data(f->map));
  EXPECT_EQ(fg_ckpt_file_at(c, 1), nullptr);
  ASSERT_EQ(fg_ckpt_count(c), ts.size());
  for (size_t i = 0; i < ts.size(); i++) {
    const fg_ckpt_tensor *t = fg_ckpt_tensor_at(c, i);
    expect_tensor(c, t, ts[i], 0);
    EXPECT_EQ(t, fg_ckpt_tensor_at(c, 0) + i);
    const fg_gguf_tensor *gt = fg_gguf_tensor_at(g, i);
    EXPECT_EQ(t->offset, fg_gguf_data_offset(g, 0) + gt->offset);
    EXPECT_EQ(t->offset % 64, 0u);
    EXPECT_EQ(fg_ckpt_find(c, ts[i].name.c_str()), t);
    const fg_ckpt_tensor *got = nullptr;
    EXPECT_EQ(fg_ckpt_get(c, ts[i].name.c_str(), &got), FG_OK);
    EXPECT_EQ(got, t);
  }
  EXPECT_EQ(fg_ckpt_tensor_at(c, ts.size()), nullptr);
  EXPECT_EQ(fg_ckpt_find(c, "nope"), nullptr);
  EXPECT_EQ(fg_ckpt_find_n(c, "output.weightX", 13), fg_ckpt_find(c, "output.weight"));
  const fg_ckpt_tensor *got = nullptr;
  EXPECT_EQ(fg_ckpt_get(c, "nope", &got), FG_ERR_NOT_FOUND);
  EXPECT_NE(std::string(fg_last_error()).find("nope"), std::string::npos);
  EXPECT_NE(std::string(fg_last_error()).find(path), std::string::npos);

  // A retained mapping keeps the data alive after close.
  const fg_ckpt_tensor *out = fg_ckpt_find(c, "output.weight");
  uint64_t off = out->offset, n = out->nbytes;
  fg_mapping *m = fg_ckpt_retain_mapping(c, 0);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(fg_ckpt_retain_mapping(c, 1), nullptr);
  fg_ckpt_close(c);
  EXPECT_TRUE(std::vector<uint8_t>(fg_mapping_data(m) + off, fg_mapping_data(m) + off + n) == ts.back().data);
  fg_mapping_release(m);
  fg_ckpt_close(nullptr);
}

TEST(Ckpt, SplitGgufOpensEveryPart) {
  fgt::TempDir dir;
  std::vector<Tensor> ts = gguf_tensors();
  std::vector<std::vector<Tensor>> parts = {{ts[0], ts[1]}, {ts[2]}, {ts[3], ts[4]}};
  std::string prefix = dir.file("model");
  write_split(prefix, parts);
  fg_ckpt *c = nullptr;
  ASSERT_EQ(fg_ckpt_open((prefix + "-00001-of-00003.gguf").c_str(), &c), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_ckpt_format_of(c), FG_CKPT_GGUF);
  ASSERT_EQ(fg_ckpt_file_count(c), 3u);
  for (size_t p = 0; p < 3; p++) {
    char name[64];
    snprintf(name, sizeof name, "model-%05zu-of-00003.gguf", p + 1);
    EXPECT_EQ(tail(fg_ckpt_file_at(c, p)->path), name);
  }
  ASSERT_EQ(fg_ckpt_count(c), ts.size());
  size_t k = 0;
  for (size_t p = 0; p < parts.size(); p++)
    for (const Tensor &t : parts[p]) expect_tensor(c, fg_ckpt_tensor_at(c, k++), t, p);
  EXPECT_EQ(fg_ckpt_find(c, "output.weight")->file, 2u);
  fg_mapping *m = fg_ckpt_retain_mapping(c, 2);
  EXPECT_EQ(m, fg_ckpt_file_at(c, 2)->map);
  fg_mapping_release(m);
  fg_ckpt_close(c);

  // Part 2 alone is a fraction of the model: refused, naming part 1.
  std::string p2 = prefix + "-00002-of-00003.gguf";
  EXPECT_EQ(fg_ckpt_open(p2.c_str(), &c), FG_ERR_INVALID_ARG);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(std::string(fg_last_error()),
            p2 + ": part 2 of a 3-part split; open " + prefix + "-00001-of-00003.gguf, which opens every part");

  // A missing part fails the open.
  ASSERT_EQ(unlink((prefix + "-00003-of-00003.gguf").c_str()), 0);
  EXPECT_EQ(fg_ckpt_open((prefix + "-00001-of-00003.gguf").c_str(), &c), FG_ERR_NOT_FOUND);
  EXPECT_EQ(c, nullptr);
}

// A part or shard given alone never passes for the model: fg_ckpt_open, and so the loader,
// refuse it with a message naming what to open; renamed parts are known by their keys.
TEST(Ckpt, LonePartsAreRefused) {
  fgt::TempDir dir;
  std::vector<Tensor> ts = gguf_tensors();
  std::string prefix = dir.file("m");
  write_split(prefix, {{ts[0], ts[1]}, {ts[2]}, {ts[3], ts[4]}});
  std::string r3 = dir.file("copy.gguf");
  copy_file(prefix + "-00003-of-00003.gguf", r3);
  fg_device *dev = nullptr;
  ASSERT_EQ(fg_device_open("cpu", &dev), FG_OK);
  for (const std::string &p : {prefix + "-00002-of-00003.gguf", r3}) {
    SCOPED_TRACE(p);
    fg_ckpt *c = nullptr;
    EXPECT_EQ(fg_ckpt_open(p.c_str(), &c), FG_ERR_INVALID_ARG);
    EXPECT_EQ(c, nullptr);
    std::string e = fg_last_error();
    EXPECT_EQ(e.rfind(p + ": part ", 0), 0u) << e;
    EXPECT_NE(e.find("-00001-of-00003.gguf"), std::string::npos) << e;
    fg_model *m = nullptr;
    EXPECT_EQ(fg_model_create(p.c_str(), dev, nullptr, &m), FG_ERR_INVALID_ARG);
    EXPECT_EQ(m, nullptr);
  }

  // Safetensors: a shard listed by the index beside it.
  fgt::TempDir hf;
  std::vector<fg_st_write_tensor> wt;
  std::vector<Tensor> st = {fgx::make("a.weight", FG_F32, {2, 8}, 1), fgx::make("b.weight", FG_F32, {2, 8}, 2)};
  for (const Tensor &t : st)
    wt.push_back({t.name.c_str(), t.dtype, (int)t.shape.size(), t.shape.data(), t.data.data(), (uint64_t)t.data.size()});
  size_t n = 0;
  ASSERT_EQ(fg_st_save_sharded(hf.path.c_str(), wt.data(), wt.size(), nullptr, 0, 64, &n), FG_OK);
  ASSERT_EQ(n, 2u);
  std::string shard1 = hf.file("model-00001-of-00002.safetensors");
  fg_ckpt *c = nullptr;
  EXPECT_EQ(fg_ckpt_open(shard1.c_str(), &c), FG_ERR_INVALID_ARG);
  EXPECT_EQ(std::string(fg_last_error()), shard1 + ": a shard of the checkpoint indexed by " + hf.file(FG_ST_INDEX_NAME) +
                                              "; open that index or the folder " + hf.path + ", which opens every shard");
  fg_model *m = nullptr;
  EXPECT_EQ(fg_model_create(shard1.c_str(), dev, nullptr, &m), FG_ERR_INVALID_ARG);
  // The index and the folder open both shards.
  for (const std::string &p : {hf.path, hf.file(FG_ST_INDEX_NAME)}) {
    ASSERT_EQ(fg_ckpt_open(p.c_str(), &c), FG_OK) << fg_last_error();
    EXPECT_EQ(fg_ckpt_count(c), 2u);
    fg_ckpt_close(c);
  }

  // Renamed shards, and an index of another name: it is the weight_map that tells.
  fgt::TempDir renamed;
  std::string idx = R"({"metadata": {}, "weight_map": {"a.weight": "first.safetensors", "b.weight": "second.safetensors"}})";
  write_bytes(renamed.file("weights.safetensors.index.json"), idx);
  copy_file(shard1, renamed.file("first.safetensors"));
  copy_file(hf.file("model-00002-of-00002.safetensors"), renamed.file("second.safetensors"));
  copy_file(shard1, renamed.file("unrelated.safetensors"));
  EXPECT_EQ(fg_ckpt_open(renamed.file("second.safetensors").c_str(), &c), FG_ERR_INVALID_ARG);
  EXPECT_NE(std::string(fg_last_error()).find("indexed by " + renamed.file("weights.safetensors.index.json")),
            std::string::npos)
      << fg_last_error();
  // a file the index does not list is a model of its own
  ASSERT_EQ(fg_ckpt_open(renamed.file("unrelated.safetensors").c_str(), &c), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_ckpt_count(c), 1u);
  fg_ckpt_close(c);

  // An index that cannot be read still claims the shards named for its set.
  write_bytes(hf.file(FG_ST_INDEX_NAME), "{not json");
  EXPECT_EQ(fg_ckpt_open(shard1.c_str(), &c), FG_ERR_INVALID_ARG) << fg_last_error();
  // A shard with no index beside it cannot be told from a model: it opens.
  ASSERT_EQ(unlink(hf.file(FG_ST_INDEX_NAME).c_str()), 0);
  ASSERT_EQ(fg_ckpt_open(shard1.c_str(), &c), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_ckpt_count(c), 1u);
  fg_ckpt_close(c);
  // A FIFO named like an index is skipped without blocking.
  ASSERT_EQ(mkfifo(hf.file(FG_ST_INDEX_NAME).c_str(), 0600), 0);
  ASSERT_EQ(fg_ckpt_open(shard1.c_str(), &c), FG_OK) << fg_last_error();
  fg_ckpt_close(c);
  fg_device_close(dev);
}

TEST(Ckpt, SafetensorsFile) {
  fgt::TempDir dir;
  std::string path = dir.file("model.safetensors");
  Tensor scalar{"scale", FG_F32, {}, std::vector<uint8_t>{0, 0, 0x80, 0x3f}};
  Tensor empty{"empty", FG_BF16, {0, 4}, {}};
  Tensor five = fgx::make("five.d", FG_F32, {1, 2, 1, 3, 4}, 7);
  std::vector<Tensor> ts = {fgx::make("model.embed_tokens.weight", FG_BF16, {8, 16}, 1), scalar, empty, five,
                            fgx::make("model.layers.0.mlp.up_proj.weight", FG_F16, {2, 3, 16}, 2)};
  fgx::write_safetensors(path, ts);
  fg_ckpt *c = nullptr;
  ASSERT_EQ(fg_ckpt_open(path.c_str(), &c), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_ckpt_format_of(c), FG_CKPT_SAFETENSORS);
  EXPECT_STREQ(fg_ckpt_format_name(fg_ckpt_format_of(c)), "safetensors");
  EXPECT_EQ(fg_ckpt_gguf(c), nullptr);
  const fg_st_dir *d = fg_ckpt_safetensors(c);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(fg_ckpt_file_count(c), 1u);
  EXPECT_EQ(std::string(fg_ckpt_file_at(c, 0)->path), path);
  const fg_st_file *sf = fg_st_dir_shard(d, 0);
  EXPECT_STREQ(fg_st_metadata_find(sf, "format"), "pt");
  ASSERT_EQ(fg_ckpt_count(c), ts.size());
  for (const Tensor &t : ts) {
    const fg_ckpt_tensor *x = fg_ckpt_find(c, t.name.c_str());
    expect_tensor(c, x, t, 0);
    EXPECT_EQ(x->offset, fg_st_data_start(sf) + fg_st_find(sf, t.name.c_str())->begin);
  }
  // File order is the header's.
  for (size_t i = 0; i < ts.size(); i++) EXPECT_EQ(fg_ckpt_tensor_at(c, i)->name, fg_st_tensor_at(sf, i)->name);
  EXPECT_EQ(fg_ckpt_find(c, "scale")->numel, 1u);
  EXPECT_EQ(fg_ckpt_find(c, "empty")->numel, 0u);
  fg_ckpt_close(c);
}

TEST(Ckpt, ShardedFolderAndIndex) {
  fgt::TempDir dir;
  std::vector<Tensor> ts;
  for (int i = 0; i < 6; i++) ts.push_back(fgx::make("layers." + std::to_string(i) + ".weight", FG_F32, {4, 32}, (uint64_t)i));
  std::vector<fg_st_write_tensor> wt;
  for (const Tensor &t : ts)
    wt.push_back({t.name.c_str(), t.dtype, (int)t.shape.size(), t.shape.data(), t.data.data(), (uint64_t)t.data.size()});
  size_t nshards = 0;
  ASSERT_EQ(fg_st_save_sharded(dir.path.c_str(), wt.data(), wt.size(), nullptr, 0, 2 * 512, &nshards), FG_OK)
      << fg_last_error();
  ASSERT_EQ(nshards, 3u);
  std::string cfg = R"({"hidden_size": 32})";
  write_bytes(dir.file("config.json"), cfg);
  for (const std::string &path : {dir.path, dir.file(FG_ST_INDEX_NAME)}) {
    SCOPED_TRACE(path);
    fg_ckpt *c = nullptr;
    ASSERT_EQ(fg_ckpt_open(path.c_str(), &c), FG_OK) << fg_last_error();
    EXPECT_EQ(fg_ckpt_format_of(c), FG_CKPT_SAFETENSORS);
    const fg_st_dir *d = fg_ckpt_safetensors(c);
    ASSERT_NE(d, nullptr);
    EXPECT_TRUE(fg_st_dir_is_sharded(d));
    int64_t hidden = 0;
    EXPECT_EQ(fg_st_dir_config_int(d, "hidden_size", &hidden), FG_OK);
    EXPECT_EQ(hidden, 32);
    ASSERT_EQ(fg_ckpt_file_count(c), 3u);
    for (size_t s = 0; s < 3; s++) EXPECT_EQ(tail(fg_ckpt_file_at(c, s)->path), fg_st_dir_shard_name(d, s));
    ASSERT_EQ(fg_ckpt_count(c), ts.size());
    for (size_t i = 0; i < ts.size(); i++) {
      size_t shard = 99;
      ASSERT_NE(fg_st_dir_find(d, ts[i].name.c_str(), &shard), nullptr);
      EXPECT_EQ(shard, i / 2);
      expect_tensor(c, fg_ckpt_find(c, ts[i].name.c_str()), ts[i], shard);
    }
    fg_ckpt_close(c);
  }
}

TEST(Ckpt, ContentDecidesTheFormat) {
  fgt::TempDir dir;
  std::vector<Tensor> ts = {fgx::make("a.weight", FG_F32, {2, 8}, 1)};
  // GGUF bytes under a safetensors name, safetensors bytes under GGUF and neutral names.
  std::string g = dir.file("looks.safetensors");
  fgx::write_gguf(g, nullptr, ts);
  std::string s1 = dir.file("looks.gguf"), s2 = dir.file("weights.bin");
  fgx::write_safetensors(s1, ts);
  fgx::write_safetensors(s2, ts);
  struct {
    std::string path;
    fg_ckpt_format want;
  } cases[] = {{g, FG_CKPT_GGUF}, {s1, FG_CKPT_SAFETENSORS}, {s2, FG_CKPT_SAFETENSORS}};
  for (auto &k : cases) {
    fg_ckpt *c = nullptr;
    ASSERT_EQ(fg_ckpt_open(k.path.c_str(), &c), FG_OK) << k.path << ": " << fg_last_error();
    EXPECT_EQ(fg_ckpt_format_of(c), k.want) << k.path;
    ASSERT_EQ(fg_ckpt_count(c), 1u);
    expect_tensor(c, fg_ckpt_tensor_at(c, 0), ts[0], 0);
    fg_ckpt_close(c);
  }
}

TEST(Ckpt, MalformedFilesAndNeitherFormat) {
  fgt::TempDir dir;
  std::string good = dir.file("good.gguf");
  fgx::write_gguf(good, nullptr, {fgx::make("a.weight", FG_F32, {4, 64}, 1)});
  std::vector<uint8_t> bytes = fgt::read_file(good);
  std::string trunc = dir.file("trunc.gguf");
  fgt::write_file(trunc, bytes.data(), bytes.size() - 100);
  struct {
    const char *name;
    std::string bytes;
    fg_status want;
    const char *says;
  } cases[] = {
      {"version.gguf", std::string("GGUF\x09\0\0\0", 8), FG_ERR_BAD_VERSION, ""},
      {"short.safetensors", "abc", FG_ERR_HEADER_TOO_SMALL, "8"},
      {"json.safetensors", std::string("\x01\0\0\0\0\0\0\0{", 9), FG_ERR_INVALID_JSON, ""},
      {"junk.bin", "0123456789abcdef", FG_ERR_BAD_MAGIC, "30 31 32 33"},
      {"junk.gguf", "not a model at all", FG_ERR_BAD_MAGIC, "neither GGUF"},
      {"empty.bin", "", FG_ERR_BAD_MAGIC, "empty"},
      {"two.bin", "GG", FG_ERR_BAD_MAGIC, "47 47"},
  };
  for (auto &k : cases) {
    std::string p = dir.file(k.name);
    write_bytes(p, k.bytes);
    fg_ckpt *c = reinterpret_cast<fg_ckpt *>(&k);
    EXPECT_EQ(fg_ckpt_open(p.c_str(), &c), k.want) << k.name << ": " << fg_last_error();
    EXPECT_EQ(c, nullptr);
    std::string err = fg_last_error();
    EXPECT_NE(err.find(k.name), std::string::npos) << err;
    EXPECT_NE(err.find(k.says), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  fg_ckpt *c = nullptr;
  EXPECT_EQ(fg_ckpt_open(trunc.c_str(), &c), FG_ERR_TRUNCATED) << fg_last_error();
  EXPECT_EQ(fg_ckpt_open(dir.file("absent.gguf").c_str(), &c), FG_ERR_NOT_FOUND);
  EXPECT_NE(std::string(fg_last_error()).find("absent.gguf"), std::string::npos);
  fgt::TempDir empty;
  EXPECT_EQ(fg_ckpt_open(empty.path.c_str(), &c), FG_ERR_NOT_FOUND) << fg_last_error();
  EXPECT_EQ(fg_ckpt_open(nullptr, &c), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_ckpt_open(good.c_str(), nullptr), FG_ERR_INVALID_ARG);
  EXPECT_EQ(c, nullptr);
}

TEST(Ckpt, FifoNeverBlocks) {
  fgt::TempDir dir;
  std::vector<std::string> fifos;
  auto make_fifo = [&](const std::string &p) {
    unlink(p.c_str());
    ASSERT_EQ(mkfifo(p.c_str(), 0600), 0) << p;
    fifos.push_back(p);
  };
  std::vector<Tensor> ts = {fgx::make("a.weight", FG_F32, {2, 8}, 1), fgx::make("b.weight", FG_F32, {2, 8}, 2)};

  // The path itself.
  std::string pipe = dir.file("pipe.gguf");
  make_fifo(pipe);
  // Part 2 of a split.
  write_split(dir.file("split"), {{ts[0]}, {ts[1]}});
  make_fifo(dir.file("split-00002-of-00002.gguf"));
  // A shard named by an index.
  fgt::TempDir sharded;
  std::vector<fg_st_write_tensor> wt;
  for (const Tensor &t : ts)
    wt.push_back({t.name.c_str(), t.dtype, (int)t.shape.size(), t.shape.data(), t.data.data(), (uint64_t)t.data.size()});
  size_t n = 0;
  ASSERT_EQ(fg_st_save_sharded(sharded.path.c_str(), wt.data(), wt.size(), nullptr, 0, 64, &n), FG_OK);
  ASSERT_EQ(n, 2u);
  std::string shard2 = sharded.file("model-00002-of-00002.safetensors");
  make_fifo(shard2);
  // The only *.safetensors of a folder.
  fgt::TempDir lone;
  make_fifo(lone.file("weights.safetensors"));

  struct {
    std::string open, names;
  } cases[] = {{pipe, pipe},
               {dir.file("split-00001-of-00002.gguf"), dir.file("split-00002-of-00002.gguf")},
               {sharded.path, shard2},
               {sharded.file(FG_ST_INDEX_NAME), shard2},
               {lone.path, lone.file("weights.safetensors")}};
  for (auto &k : cases) {
    Opened r = open_guarded(k.open, fifos);
    EXPECT_FALSE(r.blocked) << k.open << ": fg_ckpt_open blocked on a FIFO";
    EXPECT_EQ(r.status, FG_ERR_IO) << k.open << ": " << r.error;
    EXPECT_NE(r.error.find(k.names), std::string::npos) << r.error;
  }

  // The loader opens through fg_ckpt too.
  fg_device *dev = nullptr;
  ASSERT_EQ(fg_device_open("cpu", &dev), FG_OK);
  auto fut = std::async(std::launch::async, [&] {
    fg_model *m = nullptr;
    fg_status s = fg_model_create(pipe.c_str(), dev, nullptr, &m);
    fg_model_free(m);
    return s;
  });
  bool blocked = fut.wait_for(std::chrono::seconds(10)) != std::future_status::ready;
  while (blocked && fut.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    int fd = open(pipe.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) close(fd);
  }
  EXPECT_FALSE(blocked) << "fg_model_create blocked on a FIFO";
  EXPECT_EQ(fut.get(), FG_ERR_IO);
  fg_device_close(dev);
}

TEST(Ckpt, ConcurrentReaders) {
  fgt::TempDir dir;
  std::string path = dir.file("m.gguf");
  std::vector<Tensor> ts = gguf_tensors();
  fgx::write_gguf(path, nullptr, ts);
  fg_ckpt *c = nullptr;
  ASSERT_EQ(fg_ckpt_open(path.c_str(), &c), FG_OK) << fg_last_error();
  std::vector<int> bad(8, 0);
  std::vector<std::thread> th;
  for (int k = 0; k < 8; k++)
    th.emplace_back([&, k] {
      for (int rep = 0; rep < 200; rep++)
        for (size_t i = 0; i < ts.size(); i++) {
          const fg_ckpt_tensor *t = fg_ckpt_find(c, ts[i].name.c_str());
          if (t != fg_ckpt_tensor_at(c, i) || t->nbytes != ts[i].data.size() ||
              std::memcmp(t->data, ts[i].data.data(), t->nbytes) != 0)
            bad[(size_t)k]++;
          fg_mapping_release(fg_ckpt_retain_mapping(c, t->file));
        }
    });
  for (auto &t : th) t.join();
  for (int k = 0; k < 8; k++) EXPECT_EQ(bad[(size_t)k], 0) << k;
  fg_ckpt_close(c);
}

}  // namespace
