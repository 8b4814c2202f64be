// llama-quantize mixtures: the per-tensor types forgia's plan chooses equal llama.cpp's own
// choices (tests/data/golden/llama_types/tables.txt, written by llama.cpp's type selection
// for 13 real model shapes: see tests/data/llama_types_gen/README.md). Each model is a GGUF
// file with the real tensor directory and metadata and a sparse data section (the plan reads
// no tensor data), so a 70B shape costs no disk.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/ckpt.h"
#include "forgia/export.h"
#include "gguf_test_util.h"
#include "testutil.h"

namespace {

struct Tensor {
  std::string name;
  uint64_t ne[4];
  bool quantized;
};

struct Mix {
  std::string name, def;
  std::map<std::string, std::string> types; // tensors not of the default type
  bool error = false;
};

struct Model {
  std::string name, arch;
  uint32_t n_layer, n_head, n_head_kv, n_expert;
  std::vector<Tensor> tensors;
  std::vector<Mix> mixes;
};

std::vector<Model> read_tables() {
  std::ifstream f(std::string(FORGIA_TEST_DATA) + "/golden/llama_types/tables.txt");
  std::vector<Model> v;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    std::string kind;
    is >> kind;
    if (kind == "model") {
      Model m;
      is >> m.name >> m.arch >> m.n_layer >> m.n_head >> m.n_head_kv >> m.n_expert;
      v.push_back(m);
    } else if (kind == "tensor") {
      Tensor t;
      std::string ne, q;
      is >> t.name >> ne >> q;
      sscanf(ne.c_str(), "%lu,%lu,%lu,%lu", &t.ne[0], &t.ne[1], &t.ne[2], &t.ne[3]);
      t.quantized = q == "q";
      v.back().tensors.push_back(t);
    } else if (kind == "mix") {
      Mix x;
      is >> x.name >> x.def;
      v.back().mixes.push_back(x);
    } else if (kind == "type") {
      std::string n, t;
      is >> n >> t;
      v.back().mixes.back().types[n] = t;
    } else if (kind == "error") {
      Mix x;
      is >> x.name;
      x.error = true;
      v.back().mixes.push_back(x);
    }
  }
  return v;
}

int ndims(const Tensor &t) {
  int n = 4;
  while (n > 1 && t.ne[n - 1] == 1) n--;
  return n;
}

// Source types as llama.cpp's converters write them: f32 vectors, f16 matrices.
fg_dtype src_type(const Tensor &t) { return ndims(t) == 1 ? FG_F32 : FG_F16; }

// Writes m as a GGUF file whose data section is a hole of the right size.
void write_sparse(const Model &m, const std::string &path) {
  gg::Builder b;
  const uint32_t n_kv = m.n_expert ? 5 : 4;
  b.header(m.tensors.size(), n_kv);
  b.key("general.architecture", FG_GGUF_STRING).str(m.arch);
  b.key(m.arch + ".block_count", FG_GGUF_UINT32).u32(m.n_layer);
  b.key(m.arch + ".attention.head_count", FG_GGUF_UINT32).u32(m.n_head);
  b.key(m.arch + ".attention.head_count_kv", FG_GGUF_UINT32).u32(m.n_head_kv);
  if (m.n_expert) b.key(m.arch + ".expert_count", FG_GGUF_UINT32).u32(m.n_expert);
  uint64_t off = 0;
  for (const Tensor &t : m.tensors) {
    std::vector<uint64_t> ne(t.ne, t.ne + ndims(t));
    b.tinfo(t.name, ne, (uint32_t)fg_dtype_ggml_code(src_type(t)), off);
    uint64_t n = 1;
    for (int d = 0; d < 4; d++) n *= t.ne[d];
    off = gg::pad(off + n * (src_type(t) == FG_F32 ? 4 : 2), 32);
  }
  b.pad_to(32);
  const uint64_t total = b.size() + off;
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, b.b.data(), b.size()), (ssize_t)b.size());
  ASSERT_EQ(ftruncate(fd, (off_t)total), 0);
  close(fd);
}

class Mixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { models = new std::vector<Model>(read_tables()); }
  static void TearDownTestSuite() { delete models; }
  static std::vector<Model> *models;
};
std::vector<Model> *Mixture::models = nullptr;

TEST_F(Mixture, TablesAreThere) {
  ASSERT_EQ(models->size(), 13u);
  for (const Model &m : *models) EXPECT_GE(m.mixes.size(), 30u) << m.name;
}

// Every model, every mixture: each tensor's type and the output order are llama.cpp's.
TEST_F(Mixture, TypesEqualLlamaCpp) {
  fgt::TempDir dir;
  size_t checked = 0;
  for (const Model &m : *models) {
    const std::string path = dir.file(m.name + ".gguf");
    write_sparse(m, path);
    fg_ckpt *src = nullptr;
    ASSERT_EQ(fg_ckpt_open(path.c_str(), &src), FG_OK) << fg_last_error();
    std::map<std::string, const Tensor *> by_name;
    for (const Tensor &t : m.tensors) by_name[t.name] = &t;
    for (const Mix &x : m.mixes) {
      SCOPED_TRACE(m.name + " " + x.name);
      fg_export_options o{};
      ASSERT_EQ(fg_export_target_parse(x.name.c_str(), &o.dtype), FG_OK) << fg_last_error();
      ASSERT_EQ(o.dtype.mode, FG_EXPORT_MODE_MIXTURE);
      fg_export_plan *p = nullptr;
      fg_status st = fg_export_plan_create(src, &o, &p);
      if (x.error) {
        EXPECT_EQ(st, FG_ERR_UNSUPPORTED);
        EXPECT_NE(std::string(fg_last_error()).find("no fallback type"), std::string::npos) << fg_last_error();
        continue;
      }
      ASSERT_EQ(st, FG_OK) << fg_last_error();
      ASSERT_EQ(fg_export_plan_count(p), m.tensors.size());
      std::string prev;
      int prev_layer = -2;
      for (size_t i = 0; i < fg_export_plan_count(p); i++) {
        const fg_export_tensor *t = fg_export_plan_tensor(p, i);
        const Tensor &g = *by_name.at(t->name);
        std::string want = fg_dtype_name(src_type(g));
        if (g.quantized) want = x.types.count(t->name) ? x.types.at(t->name) : x.def;
        EXPECT_EQ(fg_dtype_name(t->dst_dtype), want) << t->name;
        // llama.cpp's order: layer, then name
        int layer = -1;
        sscanf(t->name, "blk.%d.", &layer);
        EXPECT_TRUE(layer > prev_layer || (layer == prev_layer && prev < t->name)) << t->name;
        prev_layer = layer;
        prev = t->name;
        checked++;
      }
      uint32_t ft = 0;
      EXPECT_TRUE(fg_export_plan_file_type(p, &ft));
      EXPECT_EQ(ft, o.dtype.ftype);
      fg_export_plan_free(p);
    }
    fg_ckpt_close(src);
    unlink(path.c_str());
  }
  EXPECT_GT(checked, 100000u);
}

}  // namespace
