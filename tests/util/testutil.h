// Helpers shared by the tests: temporary directories, running the CLI, GPU presence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// 1 in a build under ASan or UBSan (gcc or clang), where peak-RSS bounds mean nothing.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define FGT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define FGT_SANITIZED 1
#endif
#endif
#ifndef FGT_SANITIZED
#define FGT_SANITIZED 0
#endif

namespace fgt {

// A fresh directory under the build tree, removed at destruction.
struct TempDir {
  std::string path;
  TempDir();
  ~TempDir();
  std::string file(const std::string &name) const { return path + "/" + name; }
};

// Runs a shell command; returns its exit status and fills out with stdout (stderr kept apart).
int run(const std::string &cmd, std::string *out = nullptr, std::string *err = nullptr);

std::vector<uint8_t> read_file(const std::string &path);
// SHA-256 of a file as lowercase hex (coreutils' sha256sum), "" when it cannot be read.
std::string sha256_file(const std::string &path);
void write_file(const std::string &path, const void *data, size_t n);

// Whether a CUDA device opens in this process: present; absent (FG_ERR_NO_DEVICE: no driver,
// no device or a CPU-only build); broken (any other failure, which *why names, or absent
// while the environment sets FORGIA_TEST_REQUIRE_CUDA, as the GPU run does).
enum class CudaState { present, absent, broken };
CudaState cuda_state(std::string *why);
// True when a CUDA device can be opened in this process.
bool have_cuda();

// Deterministic test values (splitmix64-based), independent of the library under test.
std::vector<float> gaussian(size_t n, uint64_t seed, float scale = 1.0f);

}  // namespace fgt

// Skips the test where no CUDA device is present; fails it where one is present but does
// not open, so a broken runtime does not read as a machine without a GPU.
#define FGT_REQUIRE_CUDA()                                                                      \
  do {                                                                                          \
    std::string fgt_why_;                                                                       \
    const fgt::CudaState fgt_cuda_ = fgt::cuda_state(&fgt_why_);                                \
    if (fgt_cuda_ == fgt::CudaState::absent) GTEST_SKIP() << "no CUDA device present: " << fgt_why_; \
    if (fgt_cuda_ == fgt::CudaState::broken) FAIL() << "the CUDA device does not open: " << fgt_why_; \
  } while (0)
