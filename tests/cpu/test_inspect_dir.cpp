// forgia inspect DIR on training checkpoint directories: Fucina's committed checkpoint and
// every Fucina optimizer frame shown as the frame parser reads them (kind, version, step,
// slots, Muon's embedded AdamW, APOLLO's fallback, a set's members), u64 values exact in
// --json, and damaged or uncommitted directories refused with one line, never a crash.
#include <gtest/gtest.h>

#include <cjson/cJSON.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "fucina_ckpt_fixture.h"
#include "testutil.h"

namespace {

const std::string kGolden = std::string(FORGIA_TEST_DATA) + "/golden/";

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " inspect " + args; }

int lines(const std::string &s) { return (int)std::count(s.begin(), s.end(), '\n'); }

// A copy of Fucina's committed checkpoint, optionally with a frame as optimizer.fucina.
std::string make_dir(const fgt::TempDir &d, const std::string &name, const std::string &frame) {
  const std::string dir = d.file(name);
  EXPECT_EQ(0, fgt::run("mkdir -p '" + dir + "' && cp '" + kGolden + "fucina_ckpt/'* '" + dir + "/'"));
  if (!frame.empty()) {
    auto b = fgt::read_file(kGolden + "fucina_frames/" + frame + ".bin");
    EXPECT_FALSE(b.empty()) << frame;
    fgt::write_file(dir + "/optimizer.fucina", b.data(), b.size());
  }
  return dir;
}

struct Json {
  cJSON *root = nullptr;
  explicit Json(const std::string &text) : root(cJSON_Parse(text.c_str())) {}
  ~Json() { cJSON_Delete(root); }
};

cJSON *at(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

const char *dtype_name(fg_oframe_dtype d) { return d == FG_OFRAME_DTYPE_BF16 ? "bf16" : "f32"; }

// The JSON slot list equals the parsed records, field by field.
void expect_slots(const cJSON *arr, const fg_oframe_slot *s, size_t n, bool steps) {
  ASSERT_TRUE(cJSON_IsArray(arr));
  ASSERT_EQ((int)n, cJSON_GetArraySize(arr));
  for (size_t i = 0; i < n; i++) {
    const cJSON *o = cJSON_GetArrayItem(arr, (int)i);
    EXPECT_STREQ(s[i].name, at(o, "name")->valuestring);
    const cJSON *sh = at(o, "shape");
    EXPECT_EQ((double)s[i].rows, cJSON_GetArrayItem(sh, 0)->valuedouble);
    EXPECT_EQ((double)s[i].cols, cJSON_GetArrayItem(sh, 1)->valuedouble);
    if (steps) {
      EXPECT_EQ((double)s[i].step, at(o, "step")->valuedouble) << s[i].name;
    } else {
      EXPECT_EQ(nullptr, at(o, "step"));
    }
    const cJSON *dt = at(o, "state_dtypes");
    ASSERT_EQ(s[i].n_bufs, cJSON_GetArraySize(dt));
    for (int k = 0; k < s[i].n_bufs; k++) EXPECT_STREQ(dtype_name(s[i].bufs[k].dtype), cJSON_GetArrayItem(dt, k)->valuestring);
    if (at(o, "master")) {
      EXPECT_EQ(s[i].has_master, cJSON_IsTrue(at(o, "master")));
    }
  }
}

void expect_frame(const cJSON *j, const fg_oframe *f) {
  static const char *const kinds[] = {"adamw", "adam", "sgd", "muon", "apollo", "set", "tensors"};
  ASSERT_NE(nullptr, j);
  EXPECT_STREQ(kinds[f->kind], at(j, "kind")->valuestring);
  EXPECT_EQ(f->version, at(j, "version")->valueint);
  if (f->kind == FG_OFRAME_KIND_SET) {
    const cJSON *m = at(j, "members");
    ASSERT_EQ((int)f->n_members, cJSON_GetArraySize(m));
    for (size_t i = 0; i < f->n_members; i++) expect_frame(cJSON_GetArrayItem(m, (int)i), &f->members[i]);
    return;
  }
  if (f->kind == FG_OFRAME_KIND_TENSORS) {
    EXPECT_EQ((int)f->n_tensors, cJSON_GetArraySize(at(j, "tensors")));
    return;
  }
  expect_slots(at(j, "slots"), f->slots, f->n_slots, f->kind != FG_OFRAME_KIND_MUON);
  if (f->kind == FG_OFRAME_KIND_APOLLO) {
    expect_slots(at(j, "fallback"), f->fallback, f->n_fallback, true);
    EXPECT_EQ((double)f->apollo.rank, at(at(j, "config"), "rank")->valuedouble);
  }
  if (f->kind == FG_OFRAME_KIND_MUON) {
    EXPECT_EQ((int)f->muon.ns_steps, at(at(j, "config"), "ns_steps")->valueint);
    expect_frame(at(j, "embedded"), f->embedded);
  }
  if (f->kind != FG_OFRAME_KIND_MUON) {
    uint64_t mx = 0;
    for (size_t i = 0; i < f->n_slots; i++) mx = std::max(mx, f->slots[i].step);
    for (size_t i = 0; i < f->n_fallback; i++) mx = std::max(mx, f->fallback[i].step);
    EXPECT_EQ((double)mx, at(j, "step")->valuedouble);
  }
}

}  // namespace

TEST(InspectDir, FucinaCheckpointShowsEveryFieldExactly) {
  std::string out, err;
  const std::string dir = kGolden + "fucina_ckpt";
  ASSERT_EQ(0, fgt::run(cli("'" + dir + "' --json"), &out, &err)) << err;
  // u64 above 2^53 printed as their exact digits (a double would round them)
  EXPECT_NE(std::string::npos, out.find("\"seed\":\t16045690984503111693")) << out;
  EXPECT_NE(std::string::npos, out.find("\"data_seed\":\t9007199254740993")) << out;
  EXPECT_NE(std::string::npos, out.find("\"lora_dropout_p\":\t0.05000000074505806")) << out;
  Json j(out);
  ASSERT_NE(nullptr, j.root);
  EXPECT_TRUE(cJSON_IsTrue(at(j.root, "committed")));
  EXPECT_TRUE(cJSON_IsNull(at(j.root, "optimizer")));
  // every set field of the trainer state, in Fucina's order
  const fg_trainer_state want = fgt::fucina_trainer_state();
  const cJSON *ts = at(j.root, "trainer_state");
  const cJSON *item = ts->child;
  EXPECT_STREQ("format", item->string);
  item = item->next;
  const char *name;
  char kind;
  bool set;
  uint64_t u;
  double f;
  for (size_t i = 0; fg_trainer_state_field(&want, i, &name, &kind, &set, &u, &f); i++) {
    if (!set) continue;
    ASSERT_NE(nullptr, item) << name;
    EXPECT_STREQ(name, item->string);
    if (kind == 'f') {
      EXPECT_EQ(f, item->valuedouble) << name;
    } else if (u < (1ull << 53)) {
      EXPECT_EQ((double)u, item->valuedouble) << name;
    }
    item = item->next;
  }
  EXPECT_EQ(nullptr, item);
  // the model's tensors: names, dtypes, shapes as the fixture wrote them
  fgt::FucinaModel m;
  const auto entries = m.entries();
  const cJSON *tensors = at(at(j.root, "model"), "tensors");
  ASSERT_EQ((int)entries.size(), cJSON_GetArraySize(tensors));
  for (const auto &e : entries) {
    const cJSON *t = nullptr;
    for (int i = 0; i < cJSON_GetArraySize(tensors); i++)
      if (!strcmp(at(cJSON_GetArrayItem(tensors, i), "name")->valuestring, e.name)) t = cJSON_GetArrayItem(tensors, i);
    ASSERT_NE(nullptr, t) << e.name;
    EXPECT_STREQ(fg_dtype_info(e.dtype)->st_tag, at(t, "dtype")->valuestring);
    ASSERT_EQ(e.ndim, cJSON_GetArraySize(at(t, "shape")));
    for (int d = 0; d < e.ndim; d++) EXPECT_EQ((double)e.shape[d], cJSON_GetArrayItem(at(t, "shape"), d)->valuedouble);
  }
  ASSERT_EQ(0, fgt::run(cli("'" + dir + "'"), &out, &err)) << err;
  EXPECT_NE(std::string::npos, out.find("training checkpoint, committed")) << out;
  EXPECT_NE(std::string::npos, out.find("16045690984503111693")) << out;
  EXPECT_NE(std::string::npos, out.find("optimizer.fucina: none")) << out;
}

TEST(InspectDir, EveryFucinaFrameAsTheParserReadsIt) {
  fgt::TempDir d;
  for (const char *fr : {"adamw_v3", "adamw_v4", "adamw_v5", "adam_v3", "adam_v4", "adam_v5", "sgd_plain_v3",
                         "sgd_plain_v5", "sgd_momentum_v3", "sgd_momentum_v5", "sgd_nesterov_v4", "muon_v3", "muon_v4",
                         "muon_v5", "apollo_v3", "apollo_v5", "apollo_mini_v3", "set_v3", "tensors"}) {
    SCOPED_TRACE(fr);
    const std::string dir = make_dir(d, fr, fr);
    std::string out, err;
    ASSERT_EQ(0, fgt::run(cli("'" + dir + "' --json"), &out, &err)) << err;
    Json j(out);
    ASSERT_NE(nullptr, j.root);
    auto bytes = fgt::read_file(dir + "/optimizer.fucina");
    fg_oframe *f = nullptr;
    ASSERT_EQ(FG_OK, fg_optim_frame_parse(bytes.data(), bytes.size(), &f)) << fg_last_error();
    const cJSON *o = at(j.root, "optimizer");
    EXPECT_EQ((double)bytes.size(), at(o, "bytes")->valuedouble);
    expect_frame(at(o, "frame"), f);
    char magic[5] = {0};
    std::memcpy(magic, bytes.data(), 4);
    EXPECT_STREQ(magic, at(at(o, "frame"), "magic")->valuestring);
    fg_optim_frame_free(f);
    // the readable form names the same frame
    ASSERT_EQ(0, fgt::run(cli("'" + dir + "'"), &out, &err)) << err;
    EXPECT_NE(std::string::npos, out.find(std::string(" ") + magic + " (v")) << out;
    const std::string name = fr;
    if (name.rfind("muon", 0) == 0) {
      EXPECT_NE(std::string::npos, out.find("embedded AdamW")) << out;
    }
    if (name.rfind("apollo", 0) == 0) {
      EXPECT_NE(std::string::npos, out.find("fallback (AdamW rule)")) << out;
    }
    if (name == "set_v3") {
      EXPECT_NE(std::string::npos, out.find("member 2:")) << out;
    }
  }
}

// A directory written through the library: a live AdamW with bf16 moments saved after 3
// steps, inspected as what it is.
TEST(InspectDir, ADirectoryTheLibraryWrote) {
  fgt::TempDir d;
  fg_device *cpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_ADAMW);
  c.state_dtype = FG_BF16;
  fg_optim *o = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_create(cpu, &c, &o));
  const uint64_t shape[2] = {3, 4};
  fg_tensor *t = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu, "w", FG_F32, 2, shape, &t));
  ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(t));
  for (int i = 0; i < 12; i++) t->grad[i] = 0.25f * (float)(i - 5);
  ASSERT_EQ(FG_OK, fg_optim_add(o, t, "layer.w"));
  for (int s = 0; s < 3; s++) ASSERT_EQ(FG_OK, fg_optim_step(o, nullptr));
  uint8_t *ob = nullptr;
  size_t olen = 0;
  ASSERT_EQ(FG_OK, fg_optim_save_state(o, &ob, &olen));
  fg_state_dict_entry e = {"layer.w", FG_F32, 2, shape, t->data, t->nbytes};
  fg_trainer_state ts;
  fg_trainer_state_init(&ts);
  ts.step = 3;
  ts.seed = 18446744073709551615ull;
  const std::string dir = d.file("ck");
  ASSERT_EQ(FG_OK, fg_ckpt_dir_save(dir.c_str(), FG_CKPT_DIR_ADAPTERS, &e, 1, ob, olen, &ts)) << fg_last_error();
  free(ob);
  fg_optim_free(o);
  fg_tensor_free(t);
  fg_device_close(cpu);
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli("'" + dir + "'"), &out, &err)) << err;
  EXPECT_NE(std::string::npos, out.find("adapters.safetensors: 1 tensors")) << out;
  EXPECT_NE(std::string::npos, out.find("adamw FZA4 (v4), 1 slots, step 3")) << out;
  EXPECT_NE(std::string::npos, out.find("state bf16, f32")) << out;
  ASSERT_EQ(0, fgt::run(cli("'" + dir + "' --json"), &out, &err)) << err;
  EXPECT_NE(std::string::npos, out.find("\"seed\":\t18446744073709551615")) << out;
  Json j(out);
  ASSERT_NE(nullptr, j.root);
  EXPECT_EQ(nullptr, at(j.root, "model"));
  EXPECT_STREQ("layer.w", at(cJSON_GetArrayItem(at(at(j.root, "adapters"), "tensors"), 0), "name")->valuestring);
}

TEST(InspectDir, DamagedOrUncommittedDirectoriesAreRefusedWithOneLine) {
  fgt::TempDir d;
  std::string out, err;
  // optimizer.fucina cut short, empty, with trailing bytes, or not a frame at all
  auto frame = fgt::read_file(kGolden + "fucina_frames/muon_v5.bin");
  const std::vector<std::vector<uint8_t>> bad = {
      std::vector<uint8_t>(frame.begin(), frame.begin() + 100), {}, [&] {
        auto v = frame;
        v.push_back(0);
        return v;
      }(),
      {'X', 'X', 'X', 'X', 1, 2, 3}};
  for (size_t i = 0; i < bad.size(); i++) {
    SCOPED_TRACE(i);
    const std::string dir = make_dir(d, "bad" + std::to_string(i), "");
    fgt::write_file(dir + "/optimizer.fucina", bad[i].data(), bad[i].size());
    for (const char *mode : {"", " --json"}) {
      EXPECT_EQ(1, fgt::run(cli("'" + dir + "'" + mode), &out, &err));
      EXPECT_EQ("", out);
      EXPECT_EQ(1, lines(err)) << err;
      EXPECT_NE(std::string::npos, err.find("optimizer.fucina: ")) << err;
    }
  }
  // trainer_state.json that is not JSON, or not Fucina's record
  for (const std::string &text : {std::string("{\"format\": \"fucina.training_checkpoint\", \"version\": 1, \"step\": "),
                                  std::string("{\"format\": \"other\", \"version\": 1, \"step\": 1, \"seed\": 2}"),
                                  std::string("{\"format\": \"fucina.training_checkpoint\", \"version\": 1, \"step\": -1, \"seed\": 2}"),
                                  std::string("[]")}) {
    const std::string dir = make_dir(d, "json", "adamw_v3");
    fgt::write_file(dir + "/trainer_state.json", text.data(), text.size());
    EXPECT_EQ(1, fgt::run(cli("'" + dir + "'"), &out, &err)) << text;
    EXPECT_EQ("", out);
    EXPECT_EQ(1, lines(err)) << err;
    EXPECT_NE(std::string::npos, err.find("trainer_state.json")) << err;
  }
  // no sentinel: what is there is shown, then "not committed" and exit status 1
  const std::string dir = make_dir(d, "uncommitted", "sgd_momentum_v5");
  ASSERT_EQ(0, std::remove((dir + "/trainer_state.json").c_str()));
  EXPECT_EQ(1, fgt::run(cli("'" + dir + "'"), &out, &err));
  EXPECT_NE(std::string::npos, out.find("NOT committed")) << out;
  EXPECT_NE(std::string::npos, out.find("sgd FZS5 (v5)")) << out;
  EXPECT_EQ(1, lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("not committed")) << err;
  EXPECT_EQ(1, fgt::run(cli("'" + dir + "' --json"), &out, &err));
  Json j(out);
  ASSERT_NE(nullptr, j.root) << out;
  EXPECT_TRUE(cJSON_IsFalse(at(j.root, "committed")));
  EXPECT_TRUE(cJSON_IsNull(at(j.root, "trainer_state")));
  // a damaged weights file
  const std::string dir2 = make_dir(d, "weights", "adamw_v3");
  fgt::write_file(dir2 + "/model.safetensors", "garbage!", 8);
  EXPECT_EQ(1, fgt::run(cli("'" + dir2 + "'"), &out, &err));
  EXPECT_EQ(1, lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("model.safetensors")) << err;
}
