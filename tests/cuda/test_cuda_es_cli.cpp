// forgia es on a GPU: every kernel of the ES spirals example (exact GEMM, the op layer, the
// TQ2_0 decode, the ES perturbations, trit flips and updates) gives the CPU's bits, so a run
// on cuda:0 prints the CPU's final line and parameter hash and saves the CPU's bytes, for
// the float net and the ternary genome; and a replay on the GPU writes the CPU's bytes.
#include <gtest/gtest.h>

#include <string>

#include "forgia/forgia.h"
#include "testutil.h"

namespace {

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " " + args; }

std::string line_of(const std::string &out, const char *prefix) {
  const size_t p = out.find(prefix);
  if (p == std::string::npos) return "";
  return out.substr(p, out.find('\n', p) - p);
}

TEST(CudaEsCli, SpiralsOnTheGpuAreTheCpusBits) {
  FGT_REQUIRE_CUDA();
  fgt::TempDir d;
  for (const std::string mode : {"", "--ternary "}) {
    SCOPED_TRACE(mode);
    const std::string args = "es spirals " + mode + "--iterations 30 --target 0 --seed 4 --threads 3 --save ";
    const std::string c = d.file("cpu" + std::to_string(mode.size())), g = d.file("gpu" + std::to_string(mode.size()));
    std::string cpu, gpu, err;
    ASSERT_EQ(0, fgt::run(cli(args + c + " --device cpu"), &cpu, &err)) << err;
    ASSERT_EQ(0, fgt::run(cli(args + g + " --device cuda:0"), &gpu, &err)) << err;
    EXPECT_NE(std::string::npos, gpu.find("on cuda:0")) << gpu;
    ASSERT_NE("", line_of(cpu, "params: fnv1a64 "));
    EXPECT_EQ(line_of(cpu, "final: "), line_of(gpu, "final: "));
    EXPECT_EQ(line_of(cpu, "params: fnv1a64 "), line_of(gpu, "params: fnv1a64 "));
    const auto a = fgt::read_file(c + "/model.safetensors"), b = fgt::read_file(g + "/model.safetensors");
    EXPECT_FALSE(a.empty());
    EXPECT_TRUE(a == b) << "model.safetensors differs between cpu and cuda:0";
  }
}

TEST(CudaEsCli, ReplayOnTheGpuWritesTheCpusBytes) {
  FGT_REQUIRE_CUDA();
  fgt::TempDir d;
  const uint64_t shape[1] = {3000};
  const auto v = fgt::gaussian(3000, 9, 0.5f);
  const fg_st_write_tensor t[1] = {{"w", FG_F32, 1, shape, v.data(), 12000}};
  ASSERT_EQ(FG_OK, fg_st_save(d.file("p.safetensors").c_str(), t, 1, nullptr, 0)) << fg_last_error();
  const std::string cfg = "{\"sigma\": 0.02, \"population\": 4, \"antithetic\": true, \"anchor_decay\": \"l2\", "
                          "\"anchor_lambda\": 0.3, \"reward_norm\": \"centered_ranks\", \"params\": [\"w\"]}";
  const std::string rw = "[[0.5, -1, 2, 0.25], [1, 1, -3, 0]]";
  fgt::write_file(d.file("c.json"), cfg.data(), cfg.size());
  fgt::write_file(d.file("r.json"), rw.data(), rw.size());
  const std::string base = "es replay --config " + d.file("c.json") + " --params " + d.file("p.safetensors") +
                           " --rewards " + d.file("r.json") + " --in-place --out ";
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli(base + d.file("cpu.safetensors") + " --device cpu"), &out, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli(base + d.file("gpu.safetensors") + " --device cuda:0"), &out, &err)) << err;
  const auto a = fgt::read_file(d.file("cpu.safetensors")), b = fgt::read_file(d.file("gpu.safetensors"));
  EXPECT_FALSE(a.empty());
  EXPECT_TRUE(a == b);
}

}  // namespace
