// Where an export may write: never onto or into its own inputs (every split part, shard,
// the index, config.json, the input folder), never over what is not a regular file, through
// a symbolic link to the file it names, keeping the mode; checked before any work; and a
// cancelled run leaves the old output and no temporary file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "export_fixtures.h"
#include "forgia/cancel.h"

namespace {

using fgx::Tensor;

std::vector<Tensor> tensors() {
  return {fgx::make("a.weight", FG_F32, {4, 64}, 1), fgx::make("b.weight", FG_F32, {4, 64}, 2),
          fgx::make("c.bias", FG_F32, {64}, 3)};
}

// A sharded Hugging Face folder (3 shards, index, config.json).
void write_hf_folder(const std::string &dir) {
  std::vector<Tensor> ts = tensors();
  std::vector<fg_st_write_tensor> wt;
  for (const Tensor &t : ts)
    wt.push_back({t.name.c_str(), t.dtype, (int)t.shape.size(), t.shape.data(), t.data.data(), (uint64_t)t.data.size()});
  size_t n = 0;
  ASSERT_EQ(fg_st_save_sharded(dir.c_str(), wt.data(), wt.size(), nullptr, 0, 1024, &n), FG_OK) << fg_last_error();
  ASSERT_EQ(n, 3u);
  const char cfg[] = "{\"model_type\": \"llama\", \"hidden_size\": 64}\n";
  fgt::write_file(dir + "/config.json", cfg, sizeof cfg - 1);
}

// prefix-0000k-of-00003.gguf, one tensor a part, as gguf-split writes them.
void write_split(const std::string &prefix) {
  std::vector<Tensor> ts = tensors();
  for (int i = 0; i < 3; i++) {
    fg_gguf_writer *w = nullptr;
    ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
    if (i == 0) {
      ASSERT_EQ(fg_gguf_writer_set_str(w, "general.architecture", "llama", 5), FG_OK);
    }
    ASSERT_EQ(fg_gguf_writer_set_u16(w, "split.no", (uint16_t)i), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_u16(w, "split.count", 3), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_i32(w, "split.tensors.count", 3), FG_OK);
    std::vector<uint64_t> ne = ts[i].ne();
    ASSERT_EQ(fg_gguf_writer_add_tensor(w, ts[i].name.c_str(), ts[i].dtype, (int)ne.size(), ne.data(),
                                        ts[i].data.data(), ts[i].data.size()),
              FG_OK);
    char suffix[64];
    snprintf(suffix, sizeof suffix, "-%05d-of-00003.gguf", i + 1);
    ASSERT_EQ(fg_gguf_writer_finish(w, (prefix + suffix).c_str()), FG_OK) << fg_last_error();
    fg_gguf_writer_free(w);
  }
}

bool mentions(const std::string &msg, const std::string &what) { return msg.find(what) != std::string::npos; }

// An opened checkpoint with its plan, freed in order.
struct Source {
  fg_ckpt *c = nullptr;
  fg_export_plan *p = nullptr;
  explicit Source(const std::string &path, const fg_export_options &o = fg_export_options{}) {
    EXPECT_EQ(fg_ckpt_open(path.c_str(), &c), FG_OK) << fg_last_error();
    if (c) {
      EXPECT_EQ(fg_export_plan_create(c, &o, &p), FG_OK) << fg_last_error();
    }
  }
  ~Source() {
    fg_export_plan_free(p);
    fg_ckpt_close(c);
  }
};

int progress_calls;
bool count_progress(const fg_export_progress *, void *) {
  progress_calls++;
  return true;
}

// Refused by the check and by the run (before any progress), naming both paths, with what
// out names (when it exists) and the folder's entries unchanged.
void expect_refused(Source &s, const std::string &out, const std::string &input, const std::string &dir) {
  std::vector<std::string> before = fgx::list_dir(dir);
  struct stat st;
  const bool exists = stat(out.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  std::vector<uint8_t> bytes = exists ? fgt::read_file(out) : std::vector<uint8_t>{};
  EXPECT_EQ(fg_export_check_output(s.c, out.c_str()), FG_ERR_INVALID_ARG) << out;
  std::string msg = fg_last_error();
  EXPECT_TRUE(mentions(msg, out)) << msg;
  EXPECT_TRUE(mentions(msg, input)) << msg;
  progress_calls = 0;
  EXPECT_EQ(fg_export_run(s.p, out.c_str(), count_progress, nullptr), FG_ERR_INVALID_ARG) << out;
  EXPECT_EQ(std::string(fg_last_error()), msg);
  EXPECT_EQ(progress_calls, 0);
  EXPECT_EQ(fgx::list_dir(dir), before);
  if (exists) {
    EXPECT_TRUE(fgt::read_file(out) == bytes) << out;
  }
  EXPECT_EQ(stat(out.c_str(), &st) == 0, exists) << out;
}

TEST(ExportOutput, RefusesEveryFileOfAShardedFolder) {
  fgt::TempDir d;
  write_hf_folder(d.path);
  std::string shard = d.file("model-00002-of-00003.safetensors"), index = d.file("model.safetensors.index.json");
  std::string cfg = d.file("config.json");
  {
    // Opened as a folder: nothing inside it, at any depth, and not the folder itself.
    Source s(d.path);
    ASSERT_NE(s.p, nullptr);
    expect_refused(s, shard, d.path, d.path);
    expect_refused(s, index, d.path, d.path);
    expect_refused(s, cfg, d.path, d.path);
    expect_refused(s, d.file("new.gguf"), d.path, d.path);
    ASSERT_EQ(mkdir(d.file("sub").c_str(), 0700), 0);
    expect_refused(s, d.file("sub/new.gguf"), d.path, d.path);
    ASSERT_EQ(rmdir(d.file("sub").c_str()), 0);
    EXPECT_EQ(fg_export_check_output(s.c, d.path.c_str()), FG_ERR_INVALID_ARG);
  }
  {
    // Opened through the index: each shard, the index and config.json by identity; a new
    // file beside them is not an input.
    Source s(index);
    ASSERT_NE(s.p, nullptr);
    expect_refused(s, shard, shard, d.path);
    expect_refused(s, d.file("model-00001-of-00003.safetensors"), d.file("model-00001-of-00003.safetensors"), d.path);
    expect_refused(s, index, index, d.path);
    expect_refused(s, cfg, cfg, d.path);
    EXPECT_EQ(fg_export_check_output(s.c, d.file("beside.gguf").c_str()), FG_OK) << fg_last_error();
  }
}

TEST(ExportOutput, RefusesAnInputReachedThroughLinksOrAnotherPath) {
  fgt::TempDir d, elsewhere;
  write_hf_folder(d.file("m"));  // fg_st_save_sharded creates the folder
  std::string m = d.file("m");
  ASSERT_EQ(symlink((m + "/model-00003-of-00003.safetensors").c_str(), elsewhere.file("to-shard").c_str()), 0);
  ASSERT_EQ(symlink(m.c_str(), elsewhere.file("to-folder").c_str()), 0);
  Source s(m);
  ASSERT_NE(s.p, nullptr);
  expect_refused(s, elsewhere.file("to-shard"), m, m);
  expect_refused(s, elsewhere.file("to-folder/x.gguf"), m, m);
  expect_refused(s, d.file("m/../m/./x.gguf"), m, m);
  // A hard link to a shard is the same file.
  ASSERT_EQ(link((m + "/model-00001-of-00003.safetensors").c_str(), elsewhere.file("hard").c_str()), 0);
  Source t(m + "/model.safetensors.index.json");
  ASSERT_NE(t.p, nullptr);
  expect_refused(t, elsewhere.file("hard"), m + "/model-00001-of-00003.safetensors", elsewhere.path);
  // Beside the folder is fine.
  EXPECT_EQ(fg_export_check_output(s.c, d.file("out.gguf").c_str()), FG_OK) << fg_last_error();
}

TEST(ExportOutput, RefusesEveryPartOfASplitModelAndASingleFile) {
  fgt::TempDir d;
  std::string prefix = d.file("model");
  write_split(prefix);
  Source s(prefix + "-00001-of-00003.gguf");
  ASSERT_NE(s.p, nullptr);
  ASSERT_EQ(fg_ckpt_file_count(s.c), 3u);
  for (int i = 1; i <= 3; i++) {
    char part[64];
    snprintf(part, sizeof part, "-%05d-of-00003.gguf", i);
    expect_refused(s, prefix + part, prefix + part, d.path);
  }
  std::string one = d.file("one.safetensors");
  fgx::write_safetensors(one, tensors());
  Source t(one);
  ASSERT_NE(t.p, nullptr);
  expect_refused(t, one, one, d.path);
  EXPECT_EQ(fg_export_check_output(t.c, d.file("one.gguf").c_str()), FG_OK) << fg_last_error();
}

TEST(ExportOutput, RefusesWhatIsNotARegularFileBeforeAnyWork) {
  fgt::TempDir d, out;
  std::string in = d.file("in.gguf");
  fgx::write_gguf(in, nullptr, tensors());
  Source s(in);
  ASSERT_NE(s.p, nullptr);
  std::string fifo = out.file("fifo"), sub = out.file("sub"), dangling = out.file("dangling");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(mkdir(sub.c_str(), 0700), 0);
  ASSERT_EQ(symlink("nowhere", dangling.c_str()), 0);
  for (const std::string &p : {std::string("/dev/null"), fifo, sub, dangling, out.file("newdir/")}) {
    EXPECT_EQ(fg_export_check_output(s.c, p.c_str()), FG_ERR_INVALID_ARG) << p;
    EXPECT_EQ(fg_export_check_output(nullptr, p.c_str()), FG_ERR_INVALID_ARG) << p;
    progress_calls = 0;
    EXPECT_EQ(fg_export_run(s.p, p.c_str(), count_progress, nullptr), FG_ERR_INVALID_ARG) << p;
    EXPECT_TRUE(mentions(fg_last_error(), p)) << fg_last_error();
    EXPECT_EQ(progress_calls, 0);
  }
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(fgx::list_dir(out.path), (std::vector<std::string>{"dangling", "fifo", "sub"}));
  EXPECT_EQ(fgx::list_dir(sub), std::vector<std::string>{});
  // A folder that does not exist, or a file where the folder should be.
  for (const std::string &p : {out.file("none/x.gguf"), in + "/x.gguf"}) {
    EXPECT_EQ(fg_export_run(s.p, p.c_str(), count_progress, nullptr), FG_ERR_IO) << p;
    EXPECT_TRUE(mentions(fg_last_error(), p)) << fg_last_error();
  }
  EXPECT_EQ(fg_export_check_output(s.c, nullptr), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_export_check_output(s.c, ""), FG_ERR_INVALID_ARG);
}

TEST(ExportOutput, ThroughASymlinkKeepingTheModeAndALongName) {
  fgt::TempDir d, out;
  std::string in = d.file("in.gguf");
  fgx::write_gguf(in, nullptr, tensors());
  Source s(in);
  ASSERT_NE(s.p, nullptr);
  std::string real = out.file("real.gguf"), link = out.file("link.gguf");
  fgt::write_file(real, "old", 3);
  ASSERT_EQ(chmod(real.c_str(), 0640), 0);
  ASSERT_EQ(symlink("real.gguf", link.c_str()), 0);
  ASSERT_EQ(fg_export_run(s.p, link.c_str(), nullptr, nullptr), FG_OK) << fg_last_error();
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(stat(real.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_TRUE(fgt::read_file(real) == fgt::read_file(in));  // a verbatim export of a GGUF is the same bytes
  // A 250-byte file name (NAME_MAX is 255): the temporary name must still fit.
  std::string longname = out.file(std::string(245, 'n') + ".gguf");
  ASSERT_EQ(fg_export_run(s.p, longname.c_str(), nullptr, nullptr), FG_OK) << fg_last_error();
  EXPECT_TRUE(fgt::read_file(longname) == fgt::read_file(in));
  EXPECT_EQ(fgx::list_dir(out.path), (std::vector<std::string>{"link.gguf", std::string(245, 'n') + ".gguf", "real.gguf"}));
}

struct CancelAt {
  int calls = 0, stop_at = 0;
};
bool cancel_progress(const fg_export_progress *, void *u) {
  CancelAt *c = static_cast<CancelAt *>(u);
  return ++c->calls < c->stop_at;
}
bool cancel_hook(void *u) { return cancel_progress(nullptr, u) == false; }

TEST(ExportOutput, CancelledRunKeepsTheOldOutputAndNoTemporary) {
  fgt::TempDir d, out;
  std::string in = d.file("in.gguf"), dst = out.file("out.gguf");
  fgx::write_gguf(in, nullptr, tensors());
  fg_export_options o = fgx::opts("q8_0");
  o.chunk_bytes = 64 * 4;  // a row a chunk: many progress calls
  Source s(in, o);
  ASSERT_NE(s.p, nullptr);
  fgt::write_file(dst, "old", 3);
  for (int stop_at : {1, 3, 6}) {
    CancelAt c{0, stop_at};
    EXPECT_EQ(fg_export_run(s.p, dst.c_str(), cancel_progress, &c), FG_ERR_STATE);
    EXPECT_EQ(c.calls, stop_at);
    EXPECT_TRUE(mentions(fg_last_error(), "cancel")) << fg_last_error();
    EXPECT_EQ(fgx::list_dir(out.path), std::vector<std::string>{"out.gguf"});
    EXPECT_EQ(fgt::read_file(dst), std::vector<uint8_t>({'o', 'l', 'd'}));
  }
  // The thread's hook (what a SIGINT handler's flag reaches), at begin and mid-run.
  for (int stop_at : {1, 2}) {
    CancelAt c{0, stop_at};
    fg_cancel_set(cancel_hook, &c);
    fg_status st = fg_export_run(s.p, dst.c_str(), nullptr, nullptr);
    fg_cancel_set(nullptr, nullptr);
    EXPECT_EQ(st, FG_ERR_STATE);
    EXPECT_EQ(c.calls, stop_at);
    EXPECT_EQ(fgx::list_dir(out.path), std::vector<std::string>{"out.gguf"});
    EXPECT_EQ(fgt::read_file(dst), std::vector<uint8_t>({'o', 'l', 'd'}));
  }
  ASSERT_EQ(fg_export_run(s.p, dst.c_str(), nullptr, nullptr), FG_OK) << fg_last_error();
  EXPECT_EQ(fgx::list_dir(out.path), std::vector<std::string>{"out.gguf"});
  EXPECT_GT(fgt::read_file(dst).size(), 3u);
}

TEST(ExportOutput, SafetensorsSaveIsCancelledByTheHook) {
  fgt::TempDir d;
  std::string p = d.file("model.safetensors");
  fgx::write_safetensors(p, tensors());
  std::vector<uint8_t> before = fgt::read_file(p);
  CancelAt c{0, 2};  // begin passes, the first write stops
  fg_cancel_set(cancel_hook, &c);
  std::vector<Tensor> ts = {fgx::make("x.weight", FG_F32, {2, 8}, 9)};
  fg_st_write_tensor w = {ts[0].name.c_str(), ts[0].dtype, 2, ts[0].shape.data(), ts[0].data.data(),
                          (uint64_t)ts[0].data.size()};
  fg_status st = fg_st_save(p.c_str(), &w, 1, nullptr, 0);
  fg_cancel_set(nullptr, nullptr);
  EXPECT_EQ(st, FG_ERR_STATE);
  EXPECT_EQ(c.calls, 2);
  EXPECT_EQ(fgx::list_dir(d.path), std::vector<std::string>{"model.safetensors"});
  EXPECT_TRUE(fgt::read_file(p) == before);
}

}  // namespace
