// forgia inspect on the files a user points at besides models: a lone optimizer.fucina and
// trainer_state.json (shown as inside their checkpoint directory), Hugging Face
// tokenizer.json and config.json, other JSON, imatrices (legacy .dat and GGUF); anything else,
// and every damaged one of these, is one error line. Also: shapes labelled and shown in GGUF
// ne order with --ne, and --json --full of a safetensors file of many tensors held to the
// memory of the readable summary (the tensors are streamed).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "gguf_test_util.h"
#include "testutil.h"

namespace {

const std::string kData = std::string(FORGIA_TEST_DATA) + "/";

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " inspect " + args; }
std::string q(const std::string &p) { return "'" + p + "'"; }

int lines(const std::string &s) { return (int)std::count(s.begin(), s.end(), '\n'); }

bool has(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

struct Json {
  cJSON *root = nullptr;
  explicit Json(const std::string &text) : root(cJSON_Parse(text.c_str())) {}
  ~Json() { cJSON_Delete(root); }
};

cJSON *at(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
std::string str(const cJSON *o, const char *k) {
  const cJSON *v = at(o, k);
  return cJSON_IsString(v) ? v->valuestring : "<absent>";
}
double num(const cJSON *o, const char *k) {
  const cJSON *v = at(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

void put(const std::string &path, const std::string &bytes) { fgt::write_file(path, bytes.data(), bytes.size()); }

// The one error line `forgia inspect: PATH: PROBLEM`, exit 1, nothing on stdout.
std::string expect_error(const std::string &path, const std::string &extra = "") {
  std::string out, err;
  EXPECT_EQ(1, fgt::run(cli(q(path) + extra), &out, &err)) << path << "\n" << out;
  EXPECT_EQ(1, lines(err)) << err;
  EXPECT_EQ(0u, err.rfind("forgia inspect: " + path + ": ", 0)) << err;
  EXPECT_EQ("", out);
  return err;
}

// A checkpoint directory the library wrote: a live SGD with momentum after 5 steps over two
// parameters. Returns the directory; *olen the optimizer file's length.
std::string library_checkpoint(const fgt::TempDir &d, size_t *olen) {
  fg_device *cpu = nullptr;
  EXPECT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_SGD);
  c.momentum = 0.9f;
  fg_optim *o = nullptr;
  EXPECT_EQ(FG_OK, fg_optim_create(cpu, &c, &o)) << fg_last_error();
  const uint64_t shape_w[2] = {3, 4}, shape_b[1] = {4};
  fg_tensor *w = nullptr, *b = nullptr;
  EXPECT_EQ(FG_OK, fg_tensor_create(cpu, "w", FG_F32, 2, shape_w, &w));
  EXPECT_EQ(FG_OK, fg_tensor_create(cpu, "b", FG_F32, 1, shape_b, &b));
  EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(w));
  EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(b));
  for (int i = 0; i < 12; i++) w->grad[i] = 0.125f * (float)(i - 6);
  for (int i = 0; i < 4; i++) b->grad[i] = 0.5f;
  EXPECT_EQ(FG_OK, fg_optim_add(o, w, "layer.w"));
  EXPECT_EQ(FG_OK, fg_optim_add(o, b, "layer.b"));
  for (int s = 0; s < 5; s++) EXPECT_EQ(FG_OK, fg_optim_step(o, nullptr));
  uint8_t *ob = nullptr;
  EXPECT_EQ(FG_OK, fg_optim_save_state(o, &ob, olen));
  fg_state_dict_entry e[2] = {{"layer.w", FG_F32, 2, shape_w, w->data, w->nbytes},
                              {"layer.b", FG_F32, 1, shape_b, b->data, b->nbytes}};
  fg_trainer_state ts;
  fg_trainer_state_init(&ts);
  ts.step = 5;
  ts.seed = 18446744073709551615ull;
  FG_TRAINER_STATE_SET(ts, learning_rate, 0.01);
  const std::string dir = d.file("ck");
  EXPECT_EQ(FG_OK, fg_ckpt_dir_save(dir.c_str(), FG_CKPT_DIR_MODEL, e, 2, ob, *olen, &ts)) << fg_last_error();
  free(ob);
  fg_optim_free(o);
  fg_tensor_free(w);
  fg_tensor_free(b);
  fg_device_close(cpu);
  return dir;
}

// ---------------------------------------------------------------- optimizer frame, state

TEST(InspectFiles, LoneOptimizerFrameAndTrainerStateAsInTheirDirectory) {
  fgt::TempDir d;
  size_t olen = 0;
  const std::string dir = library_checkpoint(d, &olen), opt = dir + "/optimizer.fucina",
                    state = dir + "/trainer_state.json";
  std::vector<uint8_t> bytes = fgt::read_file(opt);
  ASSERT_EQ(olen, bytes.size());
  fg_oframe *f = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_frame_parse(bytes.data(), bytes.size(), &f)) << fg_last_error();
  ASSERT_EQ(FG_OFRAME_KIND_SGD, f->kind);
  ASSERT_EQ(2u, f->n_slots);
  const std::string magic = fg_optim_frame_describe(f->kind)->magics[f->version];

  std::string out, err, dout;
  ASSERT_EQ(0, fgt::run(cli(q(opt)), &out, &err)) << err;
  EXPECT_EQ("", err);
  EXPECT_EQ(0u, out.rfind(opt + ": optimizer frame (Fucina saveState), " + std::to_string(olen) + " bytes\n", 0)) << out;
  EXPECT_TRUE(has(out, "sgd " + magic + " (v" + std::to_string(f->version) + "), momentum 0.899999976")) << out;
  EXPECT_TRUE(has(out, "2 slots, step 5\n")) << out;
  for (size_t i = 0; i < f->n_slots; i++)
    EXPECT_TRUE(has(out, std::string(f->slots[i].name) + " ")) << f->slots[i].name << "\n" << out;
  // the frame's lines are the ones the directory view prints
  ASSERT_EQ(0, fgt::run(cli(q(dir)), &dout, &err)) << err;
  const std::string frame_lines = out.substr(out.find('\n') + 1);
  EXPECT_TRUE(has(dout, "optimizer.fucina: " + std::to_string(olen) + " bytes\n" + frame_lines)) << dout << out;

  ASSERT_EQ(0, fgt::run(cli(q(opt) + " --json"), &out, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli(q(dir) + " --json"), &dout, &err)) << err;
  Json j(out), jd(dout);
  ASSERT_NE(nullptr, j.root) << out;
  ASSERT_NE(nullptr, jd.root) << dout;
  EXPECT_EQ("optimizer_frame", str(j.root, "format"));
  EXPECT_EQ(opt, str(j.root, "path"));
  EXPECT_EQ((double)olen, num(j.root, "bytes"));
  const cJSON *frame = at(j.root, "frame");
  EXPECT_EQ("sgd", str(frame, "kind"));
  EXPECT_EQ(magic, str(frame, "magic"));
  EXPECT_EQ(5, num(frame, "step"));
  EXPECT_EQ(2, cJSON_GetArraySize(at(frame, "slots")));
  EXPECT_EQ(f->slots[0].name, str(cJSON_GetArrayItem(at(frame, "slots"), 0), "name"));
  EXPECT_TRUE(cJSON_Compare(frame, at(at(jd.root, "optimizer"), "frame"), true)) << out << dout;
  fg_optim_frame_free(f);

  // trainer_state.json alone: the same fields, u64 exact
  ASSERT_EQ(0, fgt::run(cli(q(state)), &out, &err)) << err;
  EXPECT_EQ(0u, out.rfind(state + ": trainer state (fucina.training_checkpoint v1)\n", 0)) << out;
  EXPECT_TRUE(has(out, "  step                         5\n")) << out;
  EXPECT_TRUE(has(out, "  seed                         18446744073709551615\n")) << out;
  EXPECT_TRUE(has(out, "  learning_rate                0.01\n")) << out;
  EXPECT_TRUE(has(dout, "\"seed\":\t18446744073709551615"));
  ASSERT_EQ(0, fgt::run(cli(q(state) + " --json"), &out, &err)) << err;
  EXPECT_TRUE(has(out, "\"seed\":\t18446744073709551615")) << out;
  Json js(out);
  ASSERT_NE(nullptr, js.root) << out;
  EXPECT_EQ("trainer_state", str(js.root, "format"));
  EXPECT_TRUE(cJSON_Compare(at(js.root, "trainer_state"), at(jd.root, "trainer_state"), true)) << out;

  // the same text under another name is still a trainer state (its "format" says so)
  std::vector<uint8_t> ts = fgt::read_file(state);
  fgt::write_file(d.file("saved.json"), ts.data(), ts.size());
  ASSERT_EQ(0, fgt::run(cli(q(d.file("saved.json"))), &out, &err)) << err;
  EXPECT_TRUE(has(out, ": trainer state (fucina.training_checkpoint v1)\n")) << out;
}

// Every Fucina frame of the golden set (every kind and version, Adam's FZAD included) alone.
TEST(InspectFiles, EveryGoldenFrameAlone) {
  int seen = 0;
  const std::string dir = kData + "golden/fucina_frames/";
  std::vector<std::string> names;
  DIR *dd = opendir(dir.c_str());
  ASSERT_NE(nullptr, dd) << dir;
  for (struct dirent *e; (e = readdir(dd));)
    if (std::string(e->d_name).size() > 4 && std::string(e->d_name).rfind(".bin") == std::string(e->d_name).size() - 4)
      names.push_back(e->d_name);
  closedir(dd);
  for (const std::string &name : names) {
    const std::string p = dir + name;
    std::vector<uint8_t> b = fgt::read_file(p);
    ASSERT_FALSE(b.empty()) << p;
    seen++;
    fg_oframe *f = nullptr;
    ASSERT_EQ(FG_OK, fg_optim_frame_parse(b.data(), b.size(), &f)) << p << ": " << fg_last_error();
    const fg_oframe_kind_desc *desc = fg_optim_frame_describe(f->kind);
    std::string out, err;
    ASSERT_EQ(0, fgt::run(cli(q(p) + " --json"), &out, &err)) << p << "\n" << err;
    Json j(out);
    ASSERT_NE(nullptr, j.root) << out;
    EXPECT_EQ(desc->name, str(at(j.root, "frame"), "kind")) << p;
    EXPECT_EQ(desc->magics[f->version], str(at(j.root, "frame"), "magic")) << p;
    EXPECT_EQ(f->version, num(at(j.root, "frame"), "version")) << p;
    ASSERT_EQ(0, fgt::run(cli(q(p)), &out, &err)) << p << "\n" << err;
    EXPECT_TRUE(has(out, std::string(desc->name) + " " + desc->magics[f->version] + " (v")) << out;
    fg_optim_frame_free(f);
  }
  EXPECT_GE(seen, 20);
}

TEST(InspectFiles, DamagedFramesAndStatesAreOneLine) {
  fgt::TempDir d;
  size_t olen = 0;
  const std::string dir = library_checkpoint(d, &olen);
  std::vector<uint8_t> bytes = fgt::read_file(dir + "/optimizer.fucina");
  ASSERT_GT(bytes.size(), 40u);
  // cut in the middle of the slots
  const std::string cut = d.file("cut.fucina");
  fgt::write_file(cut, bytes.data(), bytes.size() / 2);
  std::string err = expect_error(cut);
  EXPECT_TRUE(has(err, "remain")) << err;
  expect_error(cut, " --json");
  // bytes after the frame
  std::vector<uint8_t> more = bytes;
  more.push_back(0);
  fgt::write_file(d.file("more.fucina"), more.data(), more.size());
  expect_error(d.file("more.fucina"));
  // a known family with an unknown version digit, and four bytes of magic alone
  std::vector<uint8_t> v9 = bytes;
  v9[3] = '9';
  fgt::write_file(d.file("v9.fucina"), v9.data(), v9.size());
  expect_error(d.file("v9.fucina"));
  put(d.file("magic.fucina"), std::string((const char *)bytes.data(), 4));
  expect_error(d.file("magic.fucina"));

  // trainer_state.json: not an object, empty, missing fields, not JSON
  put(d.file("trainer_state.json"), "[1, 2]\n");
  expect_error(d.file("trainer_state.json"));
  put(d.file("trainer_state.json"), "{\"format\": \"fucina.training_checkpoint\", \"version\": 1}");
  err = expect_error(d.file("trainer_state.json"));
  EXPECT_TRUE(has(err, "step")) << err;
  put(d.file("trainer_state.json"), "{\"format\": \"fucina.training_checkpoint\", \"step\": ");
  expect_error(d.file("trainer_state.json"), " --json");
  put(d.file("trainer_state.json"), "");
  err = expect_error(d.file("trainer_state.json"));
  EXPECT_TRUE(has(err, "empty file (0 bytes)")) << err;
}

// ---------------------------------------------------------------- JSON

TEST(InspectFiles, HuggingFaceTokenizersNamedWithTheirCounts) {
  int seen = 0;
  for (const char *name : {"gpt2", "llama3", "smollm", "hf_spm_metaspace", "qwen2", "qwen35"}) {
    const std::string p = kData + "tok/" + name + "/tokenizer.json";
    std::vector<uint8_t> raw = fgt::read_file(p);
    if (raw.empty()) continue;
    seen++;
    // the counts, from the file itself
    Json t(std::string(raw.begin(), raw.end()));
    ASSERT_NE(nullptr, t.root) << p;
    const cJSON *model = at(t.root, "model"), *added = at(t.root, "added_tokens");
    const int nv = cJSON_GetArraySize(at(model, "vocab")), nm = cJSON_GetArraySize(at(model, "merges")),
              na = cJSON_GetArraySize(added);
    int ns = 0;
    for (const cJSON *a = added ? added->child : nullptr; a; a = a->next) ns += cJSON_IsTrue(at(a, "special"));
    ASSERT_GT(nv, 0) << p;
    std::string out, err;
    ASSERT_EQ(0, fgt::run(cli(q(p)), &out, &err)) << err;
    EXPECT_EQ("", err);
    const std::string head = p + ": Hugging Face tokenizer.json: model " + str(model, "type") + ", " +
                             std::to_string(nv) + " vocab entries, " + std::to_string(nm) + " merges, " +
                             std::to_string(na) + " added tokens (" + std::to_string(ns) + " special)\n";
    EXPECT_EQ(0u, out.rfind(head, 0)) << out;
    if (na) {
      EXPECT_TRUE(has(out, std::string(" ") + str(added->child, "content"))) << out;
    }
    ASSERT_EQ(0, fgt::run(cli(q(p) + " --json"), &out, &err)) << err;
    Json j(out);
    ASSERT_NE(nullptr, j.root) << out;
    EXPECT_EQ("hf_tokenizer", str(j.root, "format"));
    EXPECT_EQ(str(model, "type"), str(j.root, "model"));
    EXPECT_EQ(nv, num(j.root, "vocab"));
    EXPECT_EQ(nm, num(j.root, "merges"));
    ASSERT_EQ(na, cJSON_GetArraySize(at(j.root, "added_tokens")));
    for (int i = 0; i < na; i++) {
      const cJSON *a = cJSON_GetArrayItem(added, i), *b = cJSON_GetArrayItem(at(j.root, "added_tokens"), i);
      EXPECT_EQ(num(a, "id"), num(b, "id"));
      EXPECT_EQ(str(a, "content"), str(b, "content"));
    }
  }
  EXPECT_GE(seen, 3);
}

TEST(InspectFiles, ConfigAndOtherJson) {
  fgt::TempDir d;
  const std::string cfg = d.file("config.json");
  put(cfg, "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"hidden_size\": 576,\n  \"model_type\": \"llama\",\n"
           "  \"rms_norm_eps\": 1e-05,\n  \"rope_scaling\": null,\n  \"tie_word_embeddings\": true,\n"
           "  \"torch_dtype\": \"bfloat16\",\n  \"sub\": {\"a\": 1, \"b\": [1, 2, 3]}\n}\n");
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli(q(cfg)), &out, &err)) << err;
  EXPECT_EQ(0u, out.rfind(cfg + ": Hugging Face model config: model_type llama, architectures LlamaForCausalLM, 8 keys\n",
                          0))
      << out;
  EXPECT_TRUE(has(out, "  hidden_size                  576\n")) << out;
  EXPECT_TRUE(has(out, "  rms_norm_eps                 0.00001\n")) << out;
  EXPECT_TRUE(has(out, "  sub                          {2 keys}\n")) << out;
  EXPECT_TRUE(has(out, "  rope_scaling                 null\n")) << out;
  ASSERT_EQ(0, fgt::run(cli(q(cfg) + " --json"), &out, &err)) << err;
  Json j(out);
  ASSERT_NE(nullptr, j.root) << out;
  EXPECT_EQ("hf_config", str(j.root, "format"));
  EXPECT_EQ("llama", str(j.root, "model_type"));
  EXPECT_EQ(8, cJSON_GetArraySize(at(j.root, "keys")));
  EXPECT_EQ("LlamaForCausalLM", std::string(cJSON_GetArrayItem(at(j.root, "architectures"), 0)->valuestring));

  // any other JSON: its top level
  const std::string other = d.file("notes.txt");
  put(other, "  {\"a\": \"x\\u001b[31m\", \"b\": 2}");
  ASSERT_EQ(0, fgt::run(cli(q(other)), &out, &err)) << err;
  EXPECT_EQ(other + ": JSON object, 2 keys\n  a                            x\\x1b[31m\n"
                    "  b                            2\n",
            out);
  ASSERT_EQ(0, fgt::run(cli(q(other) + " --json"), &out, &err)) << err;
  Json jo(out);
  ASSERT_NE(nullptr, jo.root) << out;
  EXPECT_EQ("json", str(jo.root, "format"));
  EXPECT_EQ("object", str(jo.root, "type"));
  EXPECT_EQ(2, num(jo.root, "length"));
  const std::string arr = d.file("list.json");
  put(arr, "[{\"x\": 1}, 2, 3]");
  ASSERT_EQ(0, fgt::run(cli(q(arr)), &out, &err)) << err;
  EXPECT_EQ(arr + ": JSON array, 3 elements (the first one object)\n", out);
  ASSERT_EQ(0, fgt::run(cli(q(arr) + " --json"), &out, &err)) << err;
  Json ja(out);
  ASSERT_NE(nullptr, ja.root) << out;
  EXPECT_EQ("array", str(ja.root, "type"));
  EXPECT_EQ(3, num(ja.root, "length"));

  // what the names promise, and text that is not JSON after all
  put(d.file("tokenizer.json"), "[1, 2, 3]");
  EXPECT_TRUE(has(expect_error(d.file("tokenizer.json")), "not a Hugging Face tokenizer.json")) << err;
  put(d.file("tokenizer.json"), "{\"version\": \"1.0\"}");
  expect_error(d.file("tokenizer.json"), " --json");
  put(cfg, "[\"llama\"]");
  EXPECT_TRUE(has(expect_error(cfg), "not a Hugging Face config.json")) << err;
  put(d.file("cut.json"), "{\"model\": {\"vocab\": {\"a\": 0, ");
  EXPECT_TRUE(has(expect_error(d.file("cut.json")), "not valid JSON (at byte ")) << err;
  put(d.file("two.json"), "{} {}");
  EXPECT_TRUE(has(expect_error(d.file("two.json")), "text after the value")) << err;
  put(d.file("empty.json"), "");
  EXPECT_TRUE(has(expect_error(d.file("empty.json")), "empty file (0 bytes)"));
  put(d.file("blank.json"), "  \n");
  expect_error(d.file("blank.json"));

  // the tree a summary parses is bounded: nesting as cJSON reads it, values counted first
  // (brackets and commas inside strings are text)
  put(d.file("d1000.json"), std::string(1000, '[') + std::string(1000, ']'));
  ASSERT_EQ(0, fgt::run(cli(q(d.file("d1000.json"))), &out, &err)) << err;
  put(d.file("d1001.json"), std::string(1001, '[') + std::string(1001, ']'));
  EXPECT_TRUE(has(expect_error(d.file("d1001.json")), "JSON nested 1001 levels deep, more than the 1000"));
  put(d.file("s.json"), "[\"[[[,,,\\\"{{\", 1]");
  ASSERT_EQ(0, fgt::run(cli(q(d.file("s.json"))), &out, &err)) << err;
  EXPECT_EQ(d.file("s.json") + ": JSON array, 2 elements (the first one string)\n", out);
  std::string wide = "[";
  for (int i = 0; i < (8 << 20); i++) wide += "0,";
  wide += "0]";
  put(d.file("huge.json"), "{");
  ASSERT_EQ(0, truncate(d.file("huge.json").c_str(), 300 << 20));  // sparse: nothing is written
  EXPECT_TRUE(has(expect_error(d.file("huge.json")), "a JSON text of 314572800 bytes, more than the 268435456"));
  put(d.file("wide.json"), wide);
  EXPECT_TRUE(has(expect_error(d.file("wide.json")), "a JSON text of up to 8388610 values, more than the 8388608"));
}

// ---------------------------------------------------------------- imatrix

struct Dat {
  std::string b;
  void i32(int32_t v) { b.append((const char *)&v, 4); }
  void entry(const std::string &name, int32_t ncall, const std::vector<float> &v) {
    i32((int32_t)name.size());
    b += name;
    i32(ncall);
    i32((int32_t)v.size());
    b.append((const char *)v.data(), v.size() * 4);
  }
};

void expect_imatrix(const std::string &p, const char *container) {
  fg_imatrix *m = nullptr;
  ASSERT_EQ(FG_OK, fg_imatrix_open(p.c_str(), &m)) << fg_last_error();
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli(q(p)), &out, &err)) << err;
  std::string head = p + ": imatrix (" + (std::string(container) == "gguf" ? "GGUF" : "legacy .dat") + "), " +
                     std::to_string(fg_imatrix_count(m)) + " entries";
  EXPECT_EQ(0u, out.rfind(head, 0)) << out;
  if (fg_imatrix_chunk_count(m)) {
    EXPECT_TRUE(has(out, ", " + std::to_string(fg_imatrix_chunk_count(m)) + " chunks")) << out;
  }
  for (size_t i = 0; i < fg_imatrix_dataset_count(m); i++) EXPECT_TRUE(has(out, fg_imatrix_dataset(m, i))) << out;
  ASSERT_EQ(0, fgt::run(cli(q(p) + " --json"), &out, &err)) << err;
  Json j(out);
  ASSERT_NE(nullptr, j.root) << out;
  EXPECT_EQ("imatrix", str(j.root, "format"));
  EXPECT_EQ(container, str(j.root, "container"));
  EXPECT_EQ((double)fg_imatrix_chunk_count(m), num(j.root, "chunk_count"));
  EXPECT_EQ((double)fg_imatrix_chunk_size(m), num(j.root, "chunk_size"));
  const cJSON *es = at(j.root, "entries");
  ASSERT_EQ((int)fg_imatrix_count(m), cJSON_GetArraySize(es));
  for (size_t i = 0; i < fg_imatrix_count(m); i++) {
    fg_imatrix_entry e;
    ASSERT_EQ(FG_OK, fg_imatrix_entry_at(m, i, &e));
    const cJSON *o = cJSON_GetArrayItem(es, (int)i);
    EXPECT_EQ(e.name, str(o, "name"));
    EXPECT_EQ((double)e.n_values, num(o, "values"));
    EXPECT_EQ((double)e.n_counts, num(o, "experts"));
  }
  fg_imatrix_close(m);
}

TEST(InspectFiles, Imatrices) {
  fgt::TempDir d;
  Dat dat;
  dat.i32(2);
  dat.entry("blk.0.attn_k.weight", 4, {8.0f, 2.0f, 1.0f, 3.0f});
  dat.entry("blk.0.attn_q.weight", 4, {1.0f, 2.0f});
  dat.i32(7);
  dat.i32(9);
  dat.b += "wiki.text";
  const std::string p = d.file("imatrix.dat");
  put(p, dat.b);
  expect_imatrix(p, "dat");
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli(q(p)), &out, &err)) << err;
  EXPECT_EQ(p + ": imatrix (legacy .dat), 2 entries, 7 chunks\ndatasets: wiki.text\n"
                "entries (name, values, experts):\n"
                "  blk.0.attn_k.weight                               4  1\n"
                "  blk.0.attn_q.weight                               2  1\n",
            out);
  expect_imatrix(kData + "golden/weighted/imatrix.gguf", "gguf");
  expect_imatrix(kData + "golden/weighted/imatrix.dat", "dat");

  // damaged: cut inside the second entry's values, and a GGUF imatrix without its counts
  put(d.file("cut.dat"), dat.b.substr(0, 4 + 4 + 19 + 8 + 16 + 4 + 19 + 8 + 2));
  err = expect_error(d.file("cut.dat"));
  EXPECT_TRUE(has(err, ": imatrix: entry 1 'blk.0.attn_q.weight'")) << err;
  expect_error(d.file("cut.dat"), " --json");
  gg::Builder g;
  g.header(1, 3);
  g.key("imatrix.datasets", FG_GGUF_ARRAY).u32(FG_GGUF_STRING).u64(1).str("d.txt");
  g.key("imatrix.chunk_count", FG_GGUF_UINT32).u32(3);
  g.key("imatrix.chunk_size", FG_GGUF_UINT32).u32(512);
  g.tinfo("blk.0.attn_q.weight.in_sum2", {4, 1}, FG_F32, 0);
  g.pad_to(32);
  g.b.resize(g.size() + 16, 0);
  const std::string gp = d.file("nocounts.gguf");
  fgt::write_file(gp, g.b.data(), g.size());
  err = expect_error(gp);
  EXPECT_TRUE(has(err, ": imatrix: ")) << err;
  EXPECT_TRUE(has(err, "no .counts tensor")) << err;
}

// ---------------------------------------------------------------- none of them

TEST(InspectFiles, AnythingElseSaysWhatItLooksLike) {
  fgt::TempDir d;
  put(d.file("three"), "abc");
  EXPECT_EQ("forgia inspect: " + d.file("three") +
                ": 3 bytes starting 61 62 63 (\"abc\"): not a GGUF, safetensors, optimizer frame, imatrix or JSON "
                "file\n",
            expect_error(d.file("three")));
  put(d.file("empty"), "");
  EXPECT_EQ("forgia inspect: " + d.file("empty") +
                ": empty file (0 bytes): not a GGUF, safetensors, optimizer frame, imatrix or JSON file\n",
            expect_error(d.file("empty"), " --json"));
  std::string junk(1000, '\xff');
  junk[0] = '\x1b';
  put(d.file("junk.bin"), junk);
  EXPECT_TRUE(has(expect_error(d.file("junk.bin")), "1000 bytes starting 1b ff ff ff ff ff ff ff (\"\\x1b\\xff"));
  // a tokenizer.json as the checkpoint reader saw it ("header length 8028074745930326651")
  // is a JSON file now; a file named .safetensors keeps that reader's own complaint
  put(d.file("x.safetensors"), "{\"a\": 1}");
  std::string err = expect_error(d.file("x.safetensors"));
  EXPECT_FALSE(has(err, "not a GGUF, safetensors, optimizer frame")) << err;
}

// ---------------------------------------------------------------- shape order

TEST(InspectFiles, ShapesLabelledAndInGgufOrderWithNe) {
  fgt::TempDir d;
  const std::string p = d.file("m.safetensors");
  std::vector<float> v(5 * 3 * 2, 1.0f);
  const uint64_t s3[3] = {5, 3, 2}, s1[1] = {7};
  fg_st_write_tensor ts[] = {{"emb", FG_F32, 3, s3, v.data(), 5 * 3 * 2 * 4}, {"b", FG_F32, 1, s1, v.data(), 28}};
  ASSERT_EQ(FG_OK, fg_st_save(p.c_str(), ts, 2, nullptr, 0)) << fg_last_error();
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli(q(p) + " --full"), &out, &err)) << err;
  EXPECT_TRUE(has(out, "tensors (shape: outermost first, safetensors/numpy order; --ne for GGUF's):\n")) << out;
  EXPECT_TRUE(has(out, " [5, 3, 2]  offset")) << out;
  ASSERT_EQ(0, fgt::run(cli(q(p) + " --full --ne"), &out, &err)) << err;
  EXPECT_TRUE(has(out, "tensors (ne: innermost first, GGUF/llama.cpp order):\n")) << out;
  EXPECT_TRUE(has(out, " [2, 3, 5]  offset")) << out;
  EXPECT_FALSE(has(out, "[5, 3, 2]")) << out;
  ASSERT_EQ(0, fgt::run(cli(q(p) + " --json"), &out, &err)) << err;
  EXPECT_FALSE(has(out, "\"ne\"")) << out;  // JSON keeps its shape alone unless asked
  ASSERT_EQ(0, fgt::run(cli(q(p) + " --json --ne"), &out, &err)) << err;
  {
    Json j(out);
    ASSERT_NE(nullptr, j.root) << out;
    const cJSON *t = nullptr;
    for (const cJSON *e = at(j.root, "tensors")->child; e; e = e->next)
      if (str(e, "name") == "emb") t = e;
    ASSERT_NE(nullptr, t) << out;
    const cJSON *sh = at(t, "shape"), *ne = at(t, "ne");
    ASSERT_EQ(3, cJSON_GetArraySize(ne));
    for (int i = 0; i < 3; i++) {
      EXPECT_EQ((double)s3[i], cJSON_GetArrayItem(sh, i)->valuedouble);
      EXPECT_EQ((double)s3[2 - i], cJSON_GetArrayItem(ne, i)->valuedouble);
    }
  }

  // a GGUF file: "ne" is the file's own ne, as the parser reads it
  const std::string g = kData + "golden/llama_bytes/split/model-00001-of-00003.gguf";
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_open_auto(g.c_str(), &f)) << fg_last_error();
  ASSERT_EQ(0, fgt::run(cli(q(g) + " --json --ne"), &out, &err)) << err;
  {
    Json j(out);
    ASSERT_NE(nullptr, j.root) << out;
    const cJSON *tl = at(j.root, "tensors");
    ASSERT_EQ((int)fg_gguf_tensor_count(f), cJSON_GetArraySize(tl));
    for (size_t i = 0; i < fg_gguf_tensor_count(f); i++) {
      const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
      const cJSON *o = cJSON_GetArrayItem(tl, (int)i), *ne = at(o, "ne");
      ASSERT_EQ(t->ndim, cJSON_GetArraySize(ne)) << t->name;
      for (int k = 0; k < t->ndim; k++) EXPECT_EQ((double)t->ne[k], cJSON_GetArrayItem(ne, k)->valuedouble) << t->name;
    }
  }
  fg_gguf_close(f);

  // a checkpoint directory's weights, and the help
  size_t olen = 0;
  const std::string dir = library_checkpoint(d, &olen);
  ASSERT_EQ(0, fgt::run(cli(q(dir) + " --ne"), &out, &err)) << err;
  EXPECT_TRUE(has(out, "model.safetensors: 2 tensors (ne: innermost first")) << out;
  EXPECT_TRUE(has(out, " [4, 3]\n")) << out;
  ASSERT_EQ(0, fgt::run(cli(q(dir) + " --json --ne"), &out, &err)) << err;
  EXPECT_TRUE(has(out, "\"shape\":\t[3, 4],\n\t\t\t\t\"ne\":\t[4, 3]")) << out;
  ASSERT_EQ(0, fgt::run(std::string(FORGIA_CLI) + " help inspect", &out, &err)) << err;
  EXPECT_TRUE(has(out, "--ne")) << out;
  EXPECT_TRUE(has(out, "outermost dimension first")) << out;
  EXPECT_TRUE(has(out, "640, 262144")) << out;
}

// ---------------------------------------------------------------- memory of --json --full

struct Peak {
  int code;
  long kb;
};

// Peak RSS of the CLI (wait4 of its process, stdout to out_path).
Peak run_peak(const std::vector<std::string> &args, const std::string &out_path) {
  std::vector<char *> argv;
  argv.push_back(const_cast<char *>("forgia"));
  for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    execv(FORGIA_CLI, argv.data());
    _exit(127);
  }
  int st = 0;
  struct rusage ru {};
  EXPECT_EQ(wait4(pid, &st, 0, &ru), pid);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), ru.ru_maxrss};
}

TEST(InspectFiles, JsonOfManyTensorsStaysWithinTheHeaderBound) {
  fgt::TempDir d;
  constexpr int kTensors = 200000;
  const std::string p = d.file("many.safetensors");
  {
    // tensors of one byte each, and a few of none (an empty range at the end)
    std::string h = "{";
    char buf[128];
    for (int i = 0; i < kTensors; i++) {
      const bool empty = i % 1000 == 999;
      const uint64_t at = (uint64_t)(i - i / 1000);
      snprintf(buf, sizeof buf, "%s\"t%07d\":{\"dtype\":\"U8\",\"shape\":[%d],\"data_offsets\":[%llu,%llu]}",
               i ? "," : "", i, empty ? 0 : 1, (unsigned long long)at, (unsigned long long)(at + (empty ? 0 : 1)));
      h += buf;
    }
    h += "}";
    while (h.size() % 8) h += ' ';
    const uint64_t n = h.size();
    std::string bytes((const char *)&n, 8);
    bytes += h;
    bytes.append((size_t)(kTensors - kTensors / 1000), '\x01');
    put(p, bytes);
  }
  const Peak plain = run_peak({"inspect", p}, d.file("plain.txt"));
  const Peak json = run_peak({"inspect", p, "--json", "--full"}, d.file("o.json"));
  ASSERT_EQ(0, plain.code);
  ASSERT_EQ(0, json.code);
  std::vector<uint8_t> o = fgt::read_file(d.file("o.json"));
  std::string text(o.begin(), o.end());
  {
    Json j(text);
    ASSERT_NE(nullptr, j.root) << text.substr(0, 400);
    const cJSON *tl = at(j.root, "tensors");
    ASSERT_EQ(kTensors, cJSON_GetArraySize(tl));
    const cJSON *last = cJSON_GetArrayItem(tl, kTensors - 1);
    EXPECT_EQ("t0199999", str(last, "name"));
    EXPECT_EQ(0, num(last, "nbytes"));
    EXPECT_EQ(1, num(cJSON_GetArrayItem(tl, kTensors - 2), "nbytes"));
  }
  if (FGT_SANITIZED) GTEST_SKIP() << "peak RSS is not meaningful under a sanitizer";
  // The tree of every tensor that --json used to build took three times the summary's peak.
  EXPECT_LE(json.kb, plain.kb + plain.kb / 2) << "summary " << plain.kb << " KB, --json --full " << json.kb << " KB";
}

}  // namespace
