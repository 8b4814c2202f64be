// llama-quantize's own runs (tests/data/golden/llama_quant, recipe in
// tests/data/llama_quant_gen): for 7 models (Llama with GQA, tied Llama, 8-expert Llama,
// Qwen2 with 384-wide rows, Gemma 3, Qwen3-MoE with 16 experts, a tiny Llama) and 75 cases
// (every mixture without and with an importance matrix, --pure, --output-tensor-type,
// --token-embedding-type, --tensor-type, --leave-output-tensor), the type of every output
// tensor, general.file_type, and the cases llama-quantize refuses. forgia's plan must agree
// on every one. Each model is rebuilt from its .shapes.txt as a GGUF with a sparse data
// section (the types do not depend on the values); an imatrix case gets a matrix without
// entries for these tensors, which is what the rules look at (whether one is given).
// tiny_llama's whole files, values included, are also compared: its source and matrix are
// committed and tiny_llama.sha256.txt has llama-quantize's output for every case that ran.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/ckpt.h"
#include "forgia/export.h"
#include "forgia/imatrix.h"
#include "gguf_test_util.h"
#include "testutil.h"

namespace {

const std::string dir_ = std::string(FORGIA_TEST_DATA) + "/golden/llama_quant/";

std::vector<std::string> split(const std::string &s, char c) {
  std::vector<std::string> v;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, c)) v.push_back(cur);
  return v;
}

struct Case {
  std::string name, mixture, output_type, embd_type;
  bool imatrix = false, pure = false, leave_output = false;
  std::vector<std::pair<std::string, std::string>> tensor_types;
};

std::vector<Case> read_cases() {
  std::ifstream f(dir_ + "cases.txt");
  std::vector<Case> v;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto cols = split(line, '\t');
    Case c;
    c.name = cols[0];
    auto a = split(cols[1], ' ');
    for (size_t i = 0; i < a.size(); i++) {
      if (a[i] == "--imatrix") c.imatrix = true, i++;
      else if (a[i] == "--pure") c.pure = true;
      else if (a[i] == "--leave-output-tensor") c.leave_output = true;
      else if (a[i] == "--output-tensor-type") c.output_type = a[++i];
      else if (a[i] == "--token-embedding-type") c.embd_type = a[++i];
      else if (a[i] == "--tensor-type") {
        const std::string r = a[++i];
        c.tensor_types.push_back({r.substr(0, r.find('=')), r.substr(r.find('=') + 1)});
      }
    }
    c.mixture = a[a.size() - 2];  // ... MODEL out.gguf MIXTURE NTHREAD
    v.push_back(c);
  }
  return v;
}

struct Expect {
  std::map<std::string, std::string> types;
  uint32_t file_type = 0;
  std::string error;
};

std::map<std::string, Expect> read_table(const std::string &model) {
  std::ifstream f(dir_ + model + ".txt");
  std::map<std::string, Expect> m;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto c = split(line, '\t');
    if (c[1] == "general.file_type") m[c[0]].file_type = (uint32_t)std::stoul(c[2]);
    else if (c[1] == "error") m[c[0]].error = c[2];
    else m[c[0]].types[c[1]] = c[2];
  }
  return m;
}

fg_dtype by_name(const std::string &n) {
  fg_dtype t = FG_F32;
  EXPECT_EQ(fg_dtype_from_name(n.c_str(), &t), FG_OK) << n;
  return t;
}

// The model from its .shapes.txt, data section sparse.
void write_model(const std::string &model, const std::string &path) {
  std::ifstream f(dir_ + model + ".shapes.txt");
  std::vector<std::vector<std::string>> kvs, ts;
  std::string line;
  while (std::getline(f, line)) {
    auto c = split(line, '\t');
    if (c[0] == "kv") kvs.push_back(c);
    if (c[0] == "tensor") ts.push_back(c);
  }
  gg::Builder b;
  b.header(ts.size(), kvs.size());
  for (auto &k : kvs) {
    if (k[2] == "str") b.key(k[1], FG_GGUF_STRING).str(k[3]);
    else if (k[2] == "u32") b.key(k[1], FG_GGUF_UINT32).u32((uint32_t)std::stoul(k[3]));
    else if (k[2] == "f32") b.key(k[1], FG_GGUF_FLOAT32).f32(std::stof(k[3]));
    else ADD_FAILURE() << "kv type " << k[2];
  }
  uint64_t off = 0;
  for (auto &t : ts) {
    std::vector<uint64_t> ne;
    uint64_t n = 1;
    for (auto &d : split(t[3], ',')) ne.push_back(std::stoull(d)), n *= ne.back();
    const fg_dtype dt = by_name(t[2]);
    b.tinfo(t[1], ne, (uint32_t)fg_dtype_ggml_code(dt), off);
    uint64_t bytes = 0;
    EXPECT_EQ(fg_dtype_nbytes(dt, n, &bytes), FG_OK);
    off = gg::pad(off + bytes, 32);
  }
  b.pad_to(32);
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, b.b.data(), b.size()), (ssize_t)b.size());
  ASSERT_EQ(ftruncate(fd, (off_t)(b.size() + off)), 0);
  close(fd);
}

// An importance matrix with one entry that names no tensor of these models.
fg_imatrix *empty_imatrix() {
  gg::Builder b;
  b.header(2, 3);
  b.key("imatrix.datasets", FG_GGUF_ARRAY).u32(FG_GGUF_STRING).u64(1).str("none");
  b.key("imatrix.chunk_count", FG_GGUF_UINT32).u32(1);
  b.key("imatrix.chunk_size", FG_GGUF_UINT32).u32(512);
  b.tinfo("unused.weight.in_sum2", {4, 1}, 0, 0);
  b.tinfo("unused.weight.counts", {1, 1}, 0, 32);
  b.pad_to(32);
  const float sums[8] = {1, 2, 3, 4, 0, 0, 0, 0}, count[1] = {1};
  b.raw(sums, sizeof sums).raw(count, sizeof count);
  fg_imatrix *m = nullptr;
  EXPECT_EQ(fg_imatrix_open_bytes(b.b.data(), b.size(), "empty", &m), FG_OK) << fg_last_error();
  return m;
}

struct Options {
  fg_export_options o{};
  std::vector<fg_export_tensor_rule> rules;
  Options(const Case &c, const fg_imatrix *im) {
    EXPECT_EQ(fg_export_target_parse(c.mixture.c_str(), &o.dtype), FG_OK) << fg_last_error();
    EXPECT_EQ(o.dtype.mode, FG_EXPORT_MODE_MIXTURE) << c.mixture;
    o.pure = c.pure;
    o.leave_output = c.leave_output;
    if (!c.output_type.empty()) o.output_type = {FG_EXPORT_MODE_DTYPE, by_name(c.output_type), 0};
    if (!c.embd_type.empty()) o.token_embd_type = {FG_EXPORT_MODE_DTYPE, by_name(c.embd_type), 0};
    for (auto &r : c.tensor_types) rules.push_back({r.first.c_str(), by_name(r.second)});
    o.tensor_types = rules.data();
    o.n_tensor_types = rules.size();
    o.imatrix = c.imatrix ? im : nullptr;
  }
};

const char *const models[] = {"llama_gqa", "llama_tied", "llama_moe8", "qwen2", "gemma3", "qwen3moe", "tiny_llama"};

TEST(ExportLlamaQuant, TypesOfEveryCaseEqualLlamaQuantize) {
  fgt::TempDir dir;
  const std::vector<Case> cases = read_cases();
  ASSERT_EQ(cases.size(), 75u);
  fg_imatrix *im = empty_imatrix();
  size_t compared = 0, refused = 0;
  for (const char *model : models) {
    const std::string path = dir.file(std::string(model) + ".gguf");
    write_model(model, path);
    const auto table = read_table(model);
    fg_ckpt *src = nullptr;
    ASSERT_EQ(fg_ckpt_open(path.c_str(), &src), FG_OK) << fg_last_error();
    for (const Case &c : cases) {
      SCOPED_TRACE(std::string(model) + " " + c.name);
      ASSERT_TRUE(table.count(c.name));
      const Expect &e = table.at(c.name);
      Options opt(c, im);
      fg_export_plan *p = nullptr;
      const fg_status st = fg_export_plan_create(src, &opt.o, &p);
      if (!e.error.empty()) {
        // llama-quantize stopped: no fallback (the plan refuses), or an importance matrix
        // is missing for a tensor (the plan is made and refuses to run), or it aborted
        EXPECT_TRUE(st != FG_OK || fg_export_plan_ready(p) == FG_ERR_UNSUPPORTED) << e.error;
        if (e.error.find("no tensor type fallback") != std::string::npos) {
          EXPECT_EQ(st, FG_ERR_UNSUPPORTED);
        }
        if (e.error.find("requires an imatrix") != std::string::npos) {
          ASSERT_EQ(st, FG_OK) << fg_last_error();
          const std::string off = e.error.substr(e.error.find("tensor ") + 7);
          EXPECT_NE(std::string(fg_last_error()).find("'" + off.substr(0, off.find(' ')) + "'"), std::string::npos)
              << fg_last_error();
        }
        refused++;
        fg_export_plan_free(p);
        continue;
      }
      ASSERT_EQ(st, FG_OK) << fg_last_error();
      ASSERT_EQ(fg_export_plan_count(p), e.types.size());
      for (size_t i = 0; i < fg_export_plan_count(p); i++) {
        const fg_export_tensor *t = fg_export_plan_tensor(p, i);
        ASSERT_TRUE(e.types.count(t->name)) << t->name;
        EXPECT_EQ(fg_dtype_name(t->dst_dtype), e.types.at(t->name)) << t->name;
        compared++;
      }
      uint32_t ft = 0;
      EXPECT_TRUE(fg_export_plan_file_type(p, &ft));
      EXPECT_EQ(ft, e.file_type);
      fg_export_plan_free(p);
    }
    fg_ckpt_close(src);
  }
  fg_imatrix_close(im);
  EXPECT_GT(compared, 60000u);
  EXPECT_GE(refused, 20u);
}

// The tiny model's whole files: every case llama-quantize ran gives the same bytes here.
TEST(ExportLlamaQuant, TinyLlamaFilesEqualLlamaQuantize) {
  fgt::TempDir dir;
  std::map<std::string, std::pair<std::string, std::string>> want;  // case -> size, sha256
  std::ifstream f(dir_ + "tiny_llama.sha256.txt");
  std::string line;
  while (std::getline(f, line)) {
    auto c = split(line, '\t');
    if (c.size() >= 5 && c[1] == "@file" && c[0][0] != '#') want[c[0]] = {c[3], c[4]};
  }
  ASSERT_GE(want.size(), 60u);
  fg_ckpt *src = nullptr;
  ASSERT_EQ(fg_ckpt_open((dir_ + "tiny_llama.gguf").c_str(), &src), FG_OK) << fg_last_error();
  fg_imatrix *im = nullptr;
  ASSERT_EQ(fg_imatrix_open((dir_ + "tiny_llama.imatrix.gguf").c_str(), &im), FG_OK) << fg_last_error();
  size_t n = 0;
  for (const Case &c : read_cases()) {
    if (!want.count(c.name)) continue;
    SCOPED_TRACE(c.name);
    Options opt(c, im);
    opt.o.imatrix_label = "tiny_llama.imatrix.gguf";  // the name llama-quantize was given
    fg_export_plan *p = nullptr;
    ASSERT_EQ(fg_export_plan_create(src, &opt.o, &p), FG_OK) << fg_last_error();
    const std::string out = dir.file("out.gguf");
    ASSERT_EQ(fg_export_run(p, out.c_str(), nullptr, nullptr), FG_OK) << fg_last_error();
    struct stat st;
    ASSERT_EQ(stat(out.c_str(), &st), 0);
    EXPECT_EQ(std::to_string(st.st_size), want[c.name].first);
    EXPECT_EQ(fgt::sha256_file(out), want[c.name].second);
    fg_export_plan_free(p);
    n++;
  }
  EXPECT_EQ(n, want.size());
  fg_imatrix_close(im);
  fg_ckpt_close(src);
}

}  // namespace
