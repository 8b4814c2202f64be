#include "testutil.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "forgia/device.h"

namespace fgt {

TempDir::TempDir() {
  std::string tmpl = std::string(FORGIA_BINARY_DIR) + "/tmp-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  path = buf.data();
}

TempDir::~TempDir() {
  std::string cmd = "rm -rf '" + path + "'";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", path.c_str());
}

static std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

int run(const std::string &cmd, std::string *out, std::string *err) {
  TempDir d;
  std::string full = "(" + cmd + ") >'" + d.file("o") + "' 2>'" + d.file("e") + "'";
  int st = std::system(full.c_str());
  if (out) *out = slurp(d.file("o"));
  if (err) *err = slurp(d.file("e"));
  if (st == -1) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::vector<uint8_t> read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write_file(const std::string &path, const void *data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char *>(data), static_cast<std::streamsize>(n));
}

CudaState cuda_state(std::string *why) {
  fg_device *d = nullptr;
  const fg_status s = fg_device_open("cuda", &d);
  if (s == FG_OK) {
    fg_device_close(d);
    return CudaState::present;
  }
  if (why) *why = std::string(fg_status_name(s)) + ": " + fg_last_error();
  if (s != FG_ERR_NO_DEVICE) return CudaState::broken;
  // The GPU run (scripts/gpu-run.sh) sets this: there a missing device is a failure.
  const char *req = std::getenv("FORGIA_TEST_REQUIRE_CUDA");
  if (req && *req && std::string(req) != "0") {
    if (why) *why = "FORGIA_TEST_REQUIRE_CUDA is set but " + *why;
    return CudaState::broken;
  }
  return CudaState::absent;
}

bool have_cuda() { return cuda_state(nullptr) == CudaState::present; }

std::vector<float> gaussian(size_t n, uint64_t seed, float scale) {
  std::vector<float> v(n);
  uint64_t s = seed;
  auto next = [&s]() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (size_t i = 0; i < n; i++) {
    double u1 = ((next() >> 11) + 1.0) * 0x1.0p-53, u2 = (next() >> 11) * 0x1.0p-53;
    v[i] = (float)(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2)) * scale;
  }
  return v;
}

std::string sha256_file(const std::string &path) {
  std::string out;
  if (run("sha256sum '" + path + "'", &out) != 0 || out.size() < 64) return "";
  return out.substr(0, 64);
}

}  // namespace fgt
