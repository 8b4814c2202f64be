// forgia optim replays a trajectory from safetensors files: the torch cases give the same
// bits as the library (and so torch's values within its ulps), sets with a clip and a
// schedule equal the library's set, and bad configurations or gradients change nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/lr_schedule.h"
#include "forgia/optimset.h"
#include "optim_cases.h"
#include "testutil.h"

namespace {

// P (p0, p1 as the case builds them) and G (p<j>@<k>, absent on skipped steps).
void write_inputs(const fgt::OptimCase &oc, const std::string &p, const std::string &g) {
  std::vector<std::vector<uint8_t>> pv;
  std::vector<fg_st_write_tensor> pw;
  std::vector<std::string> names;
  const fg_dtype pd = oc.p16;
  for (size_t j = 0; j < 2; j++) {
    const auto &sh = fgt::optim_shapes()[j];
    const size_t n = j == 0 ? 7 : 20;
    std::vector<float> v = fgt::golden_stream(100 + j, n, 2.0f);
    std::vector<uint8_t> b(n * (pd == FG_F32 ? 4 : 2));
    for (size_t i = 0; i < n; i++) {
      if (pd == FG_F32) {
        std::memcpy(&b[i * 4], &v[i], 4);
      } else {
        uint16_t h = pd == FG_F16 ? fg_f32_to_f16(v[i]) : fg_f32_to_bf16(v[i]);
        std::memcpy(&b[i * 2], &h, 2);
      }
    }
    pv.push_back(b);
    pw.push_back({j == 0 ? "p0" : "p1", pd, (int)sh.size(), sh.data(), nullptr, b.size()});
  }
  for (size_t j = 0; j < 2; j++) pw[j].data = pv[j].data();
  ASSERT_EQ(FG_OK, fg_st_save(p.c_str(), pw.data(), pw.size(), nullptr, 0)) << fg_last_error();
  std::vector<std::vector<float>> gv;
  std::vector<fg_st_write_tensor> gw;
  for (int k = 1; k <= oc.steps; k++)
    for (size_t j = 0; j < 2; j++) {
      if (j == 1 && std::find(oc.skip.begin(), oc.skip.end(), k) != oc.skip.end()) continue;
      names.push_back("p" + std::to_string(j) + "@" + std::to_string(k));
      gv.push_back(fgt::golden_stream(1000 * (j + 1) + (uint64_t)k, j == 0 ? 7 : 20, 2.0f));
    }
  for (size_t i = 0; i < gv.size(); i++) {
    const bool p0 = names[i][1] == '0';
    const auto &sh = fgt::optim_shapes()[p0 ? 0 : 1];
    gw.push_back({names[i].c_str(), FG_F32, (int)sh.size(), sh.data(), gv[i].data(), gv[i].size() * 4});
  }
  ASSERT_EQ(FG_OK, fg_st_save(g.c_str(), gw.data(), gw.size(), nullptr, 0)) << fg_last_error();
}

std::string config_of(const fgt::OptimCase &oc) {
  const fg_optim_config &c = oc.c;
  char buf[1024];
  const char *kind = fg_optim_kind_name(c.kind);
  snprintf(buf, sizeof buf,
           "{\"optimizer\": \"%s\", \"lr\": %.9g, \"weight_decay\": %.9g, \"momentum\": %.9g, \"dampening\": %.9g, "
           "\"nesterov\": %s, \"beta1\": %.9g, \"beta2\": %.9g, \"eps\": %.9g, %s"
           "\"params\": [\"p0\", {\"tensor\": \"p1\", \"name\": null}]}",
           kind, c.lr, c.weight_decay, c.momentum, c.dampening, c.nesterov ? "true" : "false", c.beta1, c.beta2, c.eps,
           oc.clip > 0 ? (std::string("\"clip_grad_norm\": ") + std::to_string(oc.clip) + ", ").c_str() : "");
  return buf;
}

std::vector<std::vector<uint8_t>> read_out(const std::string &path) {
  fg_ckpt *c = nullptr;
  EXPECT_EQ(FG_OK, fg_ckpt_open(path.c_str(), &c)) << fg_last_error();
  std::vector<std::vector<uint8_t>> out;
  for (const char *n : {"p0", "p1"}) {
    const fg_ckpt_tensor *t = c ? fg_ckpt_find(c, n) : nullptr;
    EXPECT_NE(nullptr, t) << n;
    if (t) out.emplace_back(t->data, t->data + t->nbytes);
  }
  fg_ckpt_close(c);
  return out;
}

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " optim --device cpu " + args; }

}  // namespace

TEST(OptimCli, ReplaysEveryTorchCaseWithTheLibrarysBits) {
  fgt::TempDir d;
  fg_device *cpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  for (const auto &oc : fgt::optim_cases()) {
    SCOPED_TRACE(oc.line);
    write_inputs(oc, d.file("p.safetensors"), d.file("g.safetensors"));
    const std::string cfg = config_of(oc);
    fgt::write_file(d.file("c.json"), cfg.data(), cfg.size());
    std::string err;
    ASSERT_EQ(0, fgt::run(cli("--config " + d.file("c.json") + " --params " + d.file("p.safetensors") + " --grads " +
                              d.file("g.safetensors") + " --steps " + std::to_string(oc.steps) + " --out " +
                              d.file("o.safetensors")),
                          nullptr, &err))
        << err;
    EXPECT_EQ(fgt::optim_replay(cpu, oc), read_out(d.file("o.safetensors")));
  }
  fg_device_close(cpu);
}

// A set with a global clip and a warmup-cosine schedule, against the same calls made
// through the library, and --first-grad picking a later window of G.
TEST(OptimCli, SetWithClipAndScheduleEqualsTheLibrary) {
  fgt::TempDir d;
  fgt::OptimCase oc = fgt::optim_cases()[4];
  write_inputs(oc, d.file("p.safetensors"), d.file("g.safetensors"));
  const std::string cfg =
      "{\"set\": [{\"optimizer\": \"adamw\", \"lr\": 0.01, \"params\": [\"p0\"]},"
      " {\"optimizer\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9, \"state_dtype\": \"bf16\", \"params\": [\"p1\"]}],"
      " \"clip_grad_norm\": 0.75,"
      " \"schedule\": {\"kind\": \"warmup_cosine\", \"total_steps\": 20, \"warmup_steps\": 4, \"min_factor\": 0.1}}";
  fgt::write_file(d.file("c.json"), cfg.data(), cfg.size());
  std::string err;
  ASSERT_EQ(0, fgt::run(cli("--config " + d.file("c.json") + " --params " + d.file("p.safetensors") + " --grads " +
                            d.file("g.safetensors") + " --steps 20 --first-grad 3 --out " + d.file("o.safetensors")),
                        nullptr, &err))
      << err;
  fg_device *cpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  fg_optim_config ca = fg_optim_defaults(FG_OPTIM_ADAMW), cb = fg_optim_defaults(FG_OPTIM_SGD);
  ca.lr = 0.01f, cb.lr = 0.05f, cb.momentum = 0.9f, cb.state_dtype = FG_BF16;
  fg_optim *a = nullptr, *b = nullptr;
  fg_optimset *set = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_create(cpu, &ca, &a));
  ASSERT_EQ(FG_OK, fg_optim_create(cpu, &cb, &b));
  ASSERT_EQ(FG_OK, fg_optimset_create(&set));
  std::vector<fg_tensor *> ts;
  for (size_t j = 0; j < 2; j++) {
    const auto &sh = fgt::optim_shapes()[j];
    fg_tensor *t = nullptr;
    ASSERT_EQ(FG_OK, fg_tensor_create(cpu, nullptr, FG_F32, (int)sh.size(), sh.data(), &t));
    std::vector<float> v = fgt::golden_stream(100 + j, t->numel, 2.0f);
    ASSERT_EQ(FG_OK, fg_tensor_upload(t, v.data(), t->nbytes, nullptr));
    ASSERT_EQ(FG_OK, fg_optim_add(j == 0 ? a : b, t, nullptr));
    ts.push_back(t);
  }
  ASSERT_EQ(FG_OK, fg_optimset_add(set, a));
  ASSERT_EQ(FG_OK, fg_optimset_add(set, b));
  const fg_lr_schedule sch = {FG_LR_WARMUP_COSINE, 20, 4, 0.1};
  for (int s = 0; s < 20; s++) {
    for (size_t j = 0; j < 2; j++) {
      const int k = 3 + s;
      fg_tensor *t = ts[j];
      if (j == 1 && std::find(oc.skip.begin(), oc.skip.end(), k) != oc.skip.end()) {
        fg_device_mem_free(cpu, t->grad);
        t->grad = nullptr;
        continue;
      }
      ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(t));
      std::vector<float> g = fgt::golden_stream(1000 * (j + 1) + (uint64_t)k, t->numel, 2.0f);
      std::memcpy(t->grad, g.data(), t->nbytes);
    }
    // The schedule is keyed by the recorded step (gradient index 3 + s, 0-based 2 + s).
    ASSERT_EQ(FG_OK, fg_optimset_apply_lr_factor(set, fg_lr_factor(&sch, (uint64_t)(2 + s))));
    ASSERT_EQ(FG_OK, fg_optimset_clip_grad_norm(set, 0.75f, nullptr, nullptr));
    ASSERT_EQ(FG_OK, fg_optimset_step(set, nullptr));
  }
  const auto got = read_out(d.file("o.safetensors"));
  ASSERT_EQ(2u, got.size());
  for (size_t j = 0; j < 2; j++) EXPECT_EQ(0, std::memcmp(got[j].data(), ts[j]->data, ts[j]->nbytes)) << j;
  fg_optimset_free(set);
  fg_optim_free(a);
  fg_optim_free(b);
  for (fg_tensor *t : ts) fg_tensor_free(t);
  fg_device_close(cpu);
}

TEST(OptimCli, BadInputIsRefusedAndWritesNothing) {
  fgt::TempDir d;
  fgt::OptimCase oc = fgt::optim_cases()[0];
  write_inputs(oc, d.file("p.safetensors"), d.file("g.safetensors"));
  const std::string base = " --params " + d.file("p.safetensors") + " --grads " + d.file("g.safetensors") +
                           " --steps 3 --out " + d.file("o.safetensors");
  auto run_with = [&](const std::string &cfg, std::string *err) {
    fgt::write_file(d.file("c.json"), cfg.data(), cfg.size());
    return fgt::run(cli("--config " + d.file("c.json") + base), nullptr, err);
  };
  std::string err;
  EXPECT_EQ(2, run_with("{\"optimizer\": \"adamw\", \"lr\": 0.1, \"betta1\": 0.9}", &err));
  EXPECT_NE(std::string::npos, err.find("unknown field \"betta1\"")) << err;
  EXPECT_EQ(2, run_with("{\"optimizer\": \"lion\"}", &err));
  EXPECT_EQ(2, run_with("{\"optimizer\": \"sgd\", \"nesterov\": true}", &err));  // torch's nesterov rule
  EXPECT_NE(std::string::npos, err.find("nesterov")) << err;
  EXPECT_EQ(2, run_with("[1, 2]", &err));
  EXPECT_EQ(1, run_with("{\"optimizer\": \"sgd\", \"params\": [\"nope\"]}", &err));
  EXPECT_NE(std::string::npos, err.find("no tensor 'nope'")) << err;
  EXPECT_EQ(1, run_with("{\"set\": [{\"optimizer\": \"sgd\", \"params\": [\"p0\"]}, {\"optimizer\": \"sgd\", \"params\": [\"p0\"]}]}", &err));
  EXPECT_NE(std::string::npos, err.find("registered twice")) << err;
  // A gradient of the wrong size is found before the first step.
  std::vector<float> bad(3, 1.0f);
  const uint64_t sh[1] = {3};
  fg_st_write_tensor w = {"p0@2", FG_F32, 1, sh, bad.data(), 12};
  ASSERT_EQ(FG_OK, fg_st_save(d.file("g.safetensors").c_str(), &w, 1, nullptr, 0));
  EXPECT_EQ(1, run_with("{\"optimizer\": \"sgd\"}", &err));
  EXPECT_NE(std::string::npos, err.find("p0@2")) << err;
  EXPECT_TRUE(fgt::read_file(d.file("o.safetensors")).empty());
}
