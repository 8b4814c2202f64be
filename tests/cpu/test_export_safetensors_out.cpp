// The output's name chooses its format: *.safetensors writes one safetensors file, a folder
// with --shard-size a sharded one (transformers' layout), *.gguf GGUF, anything else is
// refused (exit 2, one line, nothing written, the input unchanged). GGUF -> safetensors
// dequantizes: every tensor read back with forgia's reader holds the codecs' decoding of
// the source bit for bit (narrowed with the codecs for f16/bf16), under the GGUF's names,
// shapes reversed from ne. A cancelled run leaves nothing behind.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include "export_fixtures.h"
#include "testutil.h"

namespace {

std::string cli() { return FORGIA_CLI; }

// A GGUF holding block, float and integer tensors, and scalar and array metadata.
std::vector<fgx::Tensor> gguf_tensors() {
  return {fgx::make("token_embd.weight", FG_Q6_K, {4, 256}, 1), fgx::make("blk.0.attn_norm.weight", FG_F32, {256}, 2),
          fgx::make("blk.0.attn_q.weight", FG_Q4_K, {8, 256}, 3), fgx::make("blk.0.ffn_up.weight", FG_Q8_0, {3, 64}, 4),
          fgx::make("blk.0.ffn_down.weight", FG_F16, {64, 3}, 5), fgx::make("blk.0.idx", FG_I32, {5}, 6)};
}

void write_model(const std::string &path) {
  fgx::write_gguf(
      path,
      [](fg_gguf_writer *w) {
        fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
        fg_gguf_writer_set_u32(w, "llama.block_count", 1);
        fg_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.5f);
        fg_gguf_writer_set_bool(w, "general.tied", true);
        const char *toks[] = {"a", "b"};
        fg_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", toks, nullptr, 2);
      },
      gguf_tensors());
}

// What the export must hold for t as dst: the codecs' decoding, narrowed by the codecs.
std::vector<uint8_t> expected(const fgx::Tensor &t, fg_dtype dst) {
  if (t.dtype == FG_I32 || (t.dtype == dst)) return t.data;
  if (t.dtype == FG_F32 && t.shape.size() < 2) return t.data;  // not a matrix: kept
  const std::vector<float> f = fgx::decode(t.dtype, t.data, t.rows(), t.row());
  if (dst == FG_F32) {
    std::vector<uint8_t> b(f.size() * 4);
    std::memcpy(b.data(), f.data(), b.size());
    return b;
  }
  return fgx::encode(dst, f, t.rows(), t.row());
}

void check_file(const std::string &path, fg_dtype dst) {
  fg_st_file *f = nullptr;
  ASSERT_EQ(fg_st_open(path.c_str(), FG_MAP_READ, &f), FG_OK) << fg_last_error();
  const auto ts = gguf_tensors();
  EXPECT_EQ(fg_st_count(f), ts.size());
  for (const fgx::Tensor &t : ts) {
    SCOPED_TRACE(t.name);
    const fg_st_tensor *x = fg_st_find(f, t.name.c_str());
    ASSERT_NE(x, nullptr);
    ASSERT_EQ(x->ndim, (int)t.shape.size());
    for (size_t d = 0; d < t.shape.size(); d++) EXPECT_EQ(x->shape[d], t.shape[d]);
    const std::vector<uint8_t> want = expected(t, dst);
    ASSERT_EQ(x->nbytes, want.size());
    EXPECT_EQ(0, std::memcmp(x->data, want.data(), want.size()));
    const fg_dtype got_type = t.dtype == FG_I32 ? FG_I32 : (t.dtype == FG_F32 && t.shape.size() < 2) ? FG_F32 : dst;
    EXPECT_EQ(x->dtype, got_type);
  }
  EXPECT_STREQ(fg_st_metadata_find(f, "format"), "pt");
  EXPECT_STREQ(fg_st_metadata_find(f, "general.architecture"), "llama");
  EXPECT_STREQ(fg_st_metadata_find(f, "llama.block_count"), "1");
  EXPECT_STREQ(fg_st_metadata_find(f, "llama.rope.freq_base"), "10000.5");
  EXPECT_STREQ(fg_st_metadata_find(f, "general.tied"), "true");
  EXPECT_EQ(fg_st_metadata_find(f, "tokenizer.ggml.tokens"), nullptr);  // arrays are dropped
  fg_st_close(f);
}

struct StOut : ::testing::Test {
  fgt::TempDir dir;
  std::string in, out, err;
  void SetUp() override {
    in = dir.file("m.gguf");
    write_model(in);
  }
  int run(const std::string &args) { return fgt::run(cli() + " export " + args, &out, &err); }
  // exit 2, one line saying says, nothing new in the folder, the input unchanged
  void expect_refused(const std::string &args, const std::string &says, int code = 2) {
    SCOPED_TRACE(args);
    const auto before = fgx::list_dir(dir.path);
    const std::vector<uint8_t> bytes = fgt::read_file(in);
    EXPECT_EQ(run(args), code) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find(says), std::string::npos) << err;
    EXPECT_EQ(fgx::list_dir(dir.path), before);
    EXPECT_EQ(fgt::read_file(in), bytes);
  }
};

TEST_F(StOut, GgufDequantizesIntoSafetensorsBitForBit) {
  for (const char *dt : {"f32", "f16", "bf16"}) {
    const std::string o = dir.file(std::string("m_") + dt + ".safetensors");
    ASSERT_EQ(run(in + " " + o + " --dtype " + dt), 0) << err;
    const fg_dtype d = std::string(dt) == "f32" ? FG_F32 : std::string(dt) == "f16" ? FG_F16 : FG_BF16;
    check_file(o, d);
  }
  // the positional F32 names the float type here (no GGUF rules can apply to safetensors)
  const std::string o = dir.file("pos.safetensors");
  ASSERT_EQ(run(in + " " + o + " F32"), 0) << err;
  EXPECT_EQ(fgt::read_file(o), fgt::read_file(dir.file("m_f32.safetensors")));
}

TEST_F(StOut, WhatSafetensorsCannotHoldIsRefused) {
  const std::string o = dir.file("o.safetensors");
  expect_refused("--from-gguf " + in + " --out " + o + " --dtype q8_0", "a safetensors output holds dense types");
  expect_refused(in + " " + o + " Q8_0", "Q8_0 is a llama-quantize mixture");
  expect_refused(in + " " + o + " --dtype Q4_K_M", "Q4_K_M is a llama-quantize mixture");
  expect_refused(in + " " + o + " --dtype f16 --experts-dtype q4_K", "--experts-dtype");
  // verbatim keeps the block types, which safetensors has no tag for: named, after opening
  expect_refused(in + " " + o, "tensor 'token_embd.weight' would stay q6_K", 1);
}

TEST_F(StOut, TheOutputNameChoosesTheFormat) {
  expect_refused(in + " " + dir.file("o.bin") + " --dtype f16", "the output's name chooses its format");
  expect_refused(in + " " + dir.file("o") + " --dtype f16", "the output's name chooses its format");
  expect_refused(in + " " + dir.path + " --dtype f16", "the output's name chooses its format");
  expect_refused(in + " " + dir.file("o.gguf") + " --dtype f16 --shard-size 1MB", "names a GGUF file");
  expect_refused(in + " " + dir.file("o.safetensors") + " --dtype f16 --shard-size 1MB", "one safetensors file");
  expect_refused(in + " " + dir.file("shards") + " --dtype f16 --shard-size 0", "expected a size above 0");
  expect_refused(in + " " + dir.file("shards") + " --dtype f16 --shard-size 2XB", "expected a size above 0");
  ASSERT_EQ(run(in + " " + dir.file("o.gguf") + " --dtype f16"), 0) << err;
  fg_gguf_file *g = nullptr;
  EXPECT_EQ(fg_gguf_open(dir.file("o.gguf").c_str(), FG_MAP_READ, &g), FG_OK) << fg_last_error();
  fg_gguf_close(g);
}

TEST_F(StOut, ShardedFolderInTransformersLayout) {
  const std::string o = dir.file("shards");
  // the tensors' f32 sizes: 4096, 1024, 8192, 768, 768, 20 bytes: three shards of <= 9000
  ASSERT_EQ(run(in + " " + o + "/ --dtype f32 --shard-size 9000"), 0) << err;
  const auto names = fgx::list_dir(o);
  EXPECT_EQ(names, (std::vector<std::string>{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                             "model-00003-of-00003.safetensors", "model.safetensors.index.json"}));
  std::ifstream f(o + "/model.safetensors.index.json");
  std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(text.find("\"total_size\": 14868"), std::string::npos) << text;
  EXPECT_NE(text.find("\"blk.0.attn_q.weight\": \"model-00002-of-00003.safetensors\""), std::string::npos) << text;
  // forgia's own reader takes the folder as one checkpoint with the same values
  fg_ckpt *c = nullptr;
  ASSERT_EQ(fg_ckpt_open(o.c_str(), &c), FG_OK) << fg_last_error();
  for (const fgx::Tensor &t : gguf_tensors()) {
    const fg_ckpt_tensor *x = fg_ckpt_find(c, t.name.c_str());
    ASSERT_NE(x, nullptr) << t.name;
    const std::vector<uint8_t> want = expected(t, FG_F32);
    ASSERT_EQ(x->nbytes, want.size()) << t.name;
    EXPECT_EQ(0, std::memcmp(x->data, want.data(), want.size())) << t.name;
  }
  fg_ckpt_close(c);
  // one shard is model.safetensors alone; an empty folder may receive it; a full one not
  const std::string one = dir.file("one");
  ASSERT_EQ(0, fgt::run("mkdir '" + one + "'"));
  ASSERT_EQ(run(in + " " + one + " --dtype f16 --shard-size 2GB"), 0) << err;
  EXPECT_EQ(fgx::list_dir(one), (std::vector<std::string>{"model.safetensors"}));
  expect_refused(in + " " + one + " --dtype f16 --shard-size 2GB", "not empty");
}

TEST_F(StOut, SafetensorsFolderSourceKeepsConfigAndLongNames) {
  const std::string src = dir.file("hf");
  ASSERT_EQ(0, fgt::run("mkdir '" + src + "'"));
  const std::string long_name = "model.vision_tower.vision_model.encoder.layers.0.self_attn.k_proj.weight";
  fgx::write_safetensors(src + "/model.safetensors", {fgx::make(long_name, FG_F32, {4, 8}, 1),
                                                      fgx::make("model.norm.weight", FG_F32, {8}, 2)});
  const std::string config = "{\"model_type\": \"bert\", \"hidden_size\": 8}\n";
  fgt::write_file(src + "/config.json", config.data(), config.size());
  const std::string o = dir.file("out");
  ASSERT_EQ(run(src + " " + o + " --dtype bf16 --shard-size 100"), 0) << err;
  std::ifstream f(o + "/config.json");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(f)), {}), config);
  fg_ckpt *c = nullptr;
  ASSERT_EQ(fg_ckpt_open(o.c_str(), &c), FG_OK) << fg_last_error();
  const fg_ckpt_tensor *x = fg_ckpt_find(c, long_name.c_str());
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->dtype, FG_BF16);
  fg_ckpt_close(c);
  // the issue's own example: a Hugging Face folder to one f16 safetensors file
  ASSERT_EQ(run(src + " " + dir.file("out.safetensors") + " f16"), 0) << err;
  fg_st_file *sf = nullptr;
  ASSERT_EQ(fg_st_open(dir.file("out.safetensors").c_str(), FG_MAP_READ, &sf), FG_OK) << fg_last_error();
  ASSERT_NE(fg_st_find(sf, long_name.c_str()), nullptr);
  EXPECT_EQ(fg_st_find(sf, long_name.c_str())->dtype, FG_F16);
  EXPECT_EQ(fg_st_find(sf, "model.norm.weight")->dtype, FG_F32);  // not a matrix: kept
  fg_st_close(sf);
  // the output may not be, or be inside, the input folder
  const std::vector<uint8_t> before = fgt::read_file(src + "/model.safetensors");
  EXPECT_EQ(run(src + " " + src + "/x --dtype f16 --shard-size 1MB"), 2) << err;
  EXPECT_NE(err.find("inside"), std::string::npos) << err;
  EXPECT_EQ(run(src + " " + src + "/model.safetensors --dtype f16"), 2) << err;
  EXPECT_EQ(fgt::read_file(src + "/model.safetensors"), before);
  // a mixture over this source says what to give instead
  EXPECT_EQ(run(src + " " + dir.file("q.gguf") + " Q8_0"), 2) << err;
  EXPECT_NE(err.find("give --dtype q8_0"), std::string::npos) << err;
}

// Cancelling (what SIGINT does through the progress callback) leaves no file and no
// temporary file or folder, for one file and for a folder.
TEST_F(StOut, CancelledRunsLeaveNothing) {
  fg_ckpt *src = nullptr;
  ASSERT_EQ(fg_ckpt_open(in.c_str(), &src), FG_OK) << fg_last_error();
  for (uint64_t shard : {0ull, 5000ull}) {
    fg_export_options o{};
    o.dtype = fgx::target("f32");
    o.format = FG_EXPORT_FORMAT_SAFETENSORS;
    o.shard_bytes = shard;
    fg_export_plan *p = nullptr;
    ASSERT_EQ(fg_export_plan_create(src, &o, &p), FG_OK) << fg_last_error();
    const auto before = fgx::list_dir(dir.path);
    int calls = 0;
    auto stop = [](const fg_export_progress *, void *u) { return ++*(int *)u < 3; };
    EXPECT_EQ(fg_export_run(p, dir.file(shard ? "d" : "c.safetensors").c_str(), stop, &calls), FG_ERR_STATE);
    EXPECT_EQ(fgx::list_dir(dir.path), before) << shard;
    fg_export_plan_free(p);
  }
  fg_ckpt_close(src);
}

// SIGINT in the middle of a safetensors write (one file, or a folder): exit 130, nothing left
// in the output's folder, neither the output nor a temporary file or folder.
void interrupt(const std::vector<std::string> &out_args, const std::string &out_name) {
  fgt::TempDir dir;
  const std::string src = dir.file("big.safetensors"), outdir = dir.file("out"), errp = dir.file("err.txt");
  std::vector<uint8_t> zeros(96u << 20);
  const uint64_t shape[2] = {(uint64_t)(zeros.size() / 4 / 4096), 4096};
  fg_st_write_tensor t = {"w.weight", FG_F32, 2, shape, zeros.data(), zeros.size()};
  ASSERT_EQ(fg_st_save(src.c_str(), &t, 1, nullptr, 0), FG_OK) << fg_last_error();
  ASSERT_EQ(0, fgt::run("mkdir '" + outdir + "'"));
  std::vector<std::string> args = {"export", src, outdir + "/" + out_name, "--dtype", "bf16", "--threads", "1",
                                   "--chunk-mib", "1"};
  args.insert(args.end(), out_args.begin(), out_args.end());
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(errp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), nul = open("/dev/null", O_WRONLY);
    if (fd < 0 || nul < 0) _exit(127);
    dup2(nul, 1);
    dup2(fd, 2);
    std::vector<char *> argv = {const_cast<char *>(FORGIA_CLI)};
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(FORGIA_CLI, argv.data());
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  int st = 0;
  bool started = false;  // its temporary file or folder is there
  for (int i = 0; i < 120000 && !started; i++) {
    if (waitpid(pid, &st, WNOHANG) == pid) break;
    started = !fgx::list_dir(outdir).empty();
    if (!started) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  if (!started) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    FAIL() << "the export ended or never began writing";
  }
  ASSERT_EQ(kill(pid, SIGINT), 0);
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  const std::vector<uint8_t> e = fgt::read_file(errp);
  const std::string err(e.begin(), e.end());
  ASSERT_TRUE(WIFEXITED(st)) << err;
  EXPECT_EQ(WEXITSTATUS(st), 130) << err;
  const auto left = fgx::list_dir(outdir);
  EXPECT_TRUE(left.empty()) << left.front();
  EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
}

TEST(StOutSignal, SigintLeavesNoFile) { interrupt({}, "o.safetensors"); }
TEST(StOutSignal, SigintLeavesNoFolder) { interrupt({"--shard-size", "8MB"}, "shards"); }

}  // namespace
