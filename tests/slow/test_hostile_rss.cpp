// Peak memory of `forgia inspect` on hostile headers of 100 MB stays a small multiple of the
// header: numbers (a shape of 50 million dims, a huge array in an unknown field), arrays,
// members and __metadata__ keys by the million, a refused text, GGUF KVs, tensor infos and
// string arrays by the million.
// (Before the JSON tape was made compact, a safetensors header of numbers took 20 bytes per
// header byte.) The CLI runs in a child; wait4 reports its peak RSS. The files are written
// in pieces so that this process stays small: its size at fork is part of the child's peak,
// which the constant allows for. Under a sanitizer the peak is not meaningful and only the
// exit codes are checked. Bounds on work (names built to collide, nodes per byte) are in
// tests/cpu/test_hostile_headers.cpp.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "testutil.h"

namespace {

constexpr uint64_t kHeader = 100000000;  // FG_ST_MAX_HEADER_SIZE
constexpr uint64_t kSlackKb = 64 * 1024; // the CLI's own size and this process's at fork

struct Peak {
  int code;
  long kb;
  std::string err;
};

Peak inspect(const std::string &path, const fgt::TempDir &dir) {
  const std::string errf = dir.file("stderr.txt");
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open("/dev/null", O_WRONLY), err = open(errf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    execl(FORGIA_CLI, "forgia", "inspect", path.c_str(), (char *)nullptr);
    _exit(127);
  }
  int st = 0;
  struct rusage ru {};
  EXPECT_EQ(wait4(pid, &st, 0, &ru), pid);
  const std::vector<uint8_t> e = fgt::read_file(errf);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), ru.ru_maxrss, std::string(e.begin(), e.end())};
}

// Writes a file in pieces.
struct Out {
  FILE *f;
  explicit Out(const std::string &path) : f(fopen(path.c_str(), "wb")) { EXPECT_NE(f, nullptr) << path; }
  ~Out() {
    if (f) {
      EXPECT_EQ(fclose(f), 0);
    }
  }
  void put(const std::string &s) { ASSERT_EQ(fwrite(s.data(), 1, s.size(), f), s.size()); }
  void u64(uint64_t v) { put(std::string((const char *)&v, 8)); }
  void u32(uint32_t v) { put(std::string((const char *)&v, 4)); }
  void repeat(const std::string &unit, uint64_t k) {
    std::string chunk;
    for (uint64_t i = 0; i < 65536 / unit.size() + 1; i++) chunk += unit;
    const uint64_t per = chunk.size() / unit.size();
    for (; k >= per; k -= per) put(chunk);
    for (; k; k--) put(unit);
  }
};

// A safetensors file whose header is head + unit x k + tail (about kHeader bytes) and data.
void safetensors(const std::string &path, const std::string &head, const std::string &unit, const std::string &tail,
                 const std::string &data) {
  const uint64_t k = (kHeader - head.size() - tail.size()) / unit.size();
  Out o(path);
  o.u64(head.size() + k * unit.size() + tail.size());
  o.put(head);
  o.repeat(unit, k);
  o.put(tail);
  o.put(data);
}

void expect_peak(const std::string &what, const std::string &path, int code, uint64_t header, double k,
                 const fgt::TempDir &dir) {
  const Peak p = inspect(path, dir);
  EXPECT_EQ(p.code, code) << what << ": " << p.err;
  const double ratio = (double)p.kb * 1024 / (double)header;
  std::printf("%-40s exit %d, peak %6ld MiB = %5.2f x the %llu-byte header (bound %.0f x + 64 MiB)\n", what.c_str(),
              p.code, p.kb / 1024, ratio, (unsigned long long)header, k);
  if (!FGT_SANITIZED) {
    EXPECT_LE((uint64_t)p.kb, (uint64_t)(k * (double)header / 1024) + kSlackKb) << what << ": " << p.err;
  }
  unlink(path.c_str());
}

// Safetensors headers: at most 10 bytes of memory per header byte (the mapping and its copy
// take 2, the tape 24 bytes per member of 5 or more, the tables and shapes what they hold).
constexpr double kSafetensors = 10;

TEST(HostileRss, SafetensorsHeaders) {
  fgt::TempDir dir;
  const std::string f = dir.file("h.safetensors");
  safetensors(f, R"({"t":{"dtype":"U8","data_offsets":[0,2],"shape":[)", "1,", "1]}}", std::string(2, '\0'));
  expect_peak("a shape of 50M dims (refused: size)", f, 1, kHeader, kSafetensors, dir);
  safetensors(f, R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"junk":[)", "0,", "0]}}", std::string(1, 0));
  expect_peak("50M numbers in an unknown field", f, 0, kHeader, kSafetensors, dir);
  safetensors(f, R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"junk":[)", "[],", "[]]}}", std::string(1, 0));
  expect_peak("33M empty arrays in an unknown field", f, 0, kHeader, kSafetensors, dir);
  safetensors(f, R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1])", R"(,"":0)", "}}", std::string(1, 0));
  expect_peak("16M unknown members in a tensor", f, 0, kHeader, kSafetensors, dir);
  safetensors(f, R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"junk":[)", "0,", "]}}", std::string(1, 0));
  expect_peak("50M numbers, then a trailing comma", f, 1, kHeader, kSafetensors, dir);
  {  // distinct __metadata__ keys by the million; the last value is not a string
    uint64_t n = 0, size = std::strlen(R"({"__metadata__":{)") + std::strlen(R"("z":0}})");
    char e[32];
    while (size + 32 < kHeader) size += (uint64_t)snprintf(e, sizeof e, "\"%llx\":\"\",", (unsigned long long)n++);
    Out o(f);
    o.u64(size);
    o.put(R"({"__metadata__":{)");
    std::string chunk;
    for (uint64_t i = 0; i < n; i++) {
      snprintf(e, sizeof e, "\"%llx\":\"\",", (unsigned long long)i);
      chunk += e;
      if (chunk.size() > 65536) {
        o.put(chunk);
        chunk.clear();
      }
    }
    o.put(chunk + R"("z":0}})");
  }
  expect_peak("9M metadata keys (refused: last value)", f, 1, kHeader, kSafetensors, dir);
}

// GGUF: KVs and string arrays within the same bound; tensor infos cost more, as each is a
// public fg_gguf_tensor of 176 bytes (a 64-byte name buffer) plus the checkpoint's 112-byte
// record, for 24 to 30 bytes on the wire.
constexpr double kGgufTensors = 16;

void gguf_records(const std::string &path, uint64_t n_tensors, uint64_t n_kv,
                  const std::function<std::string(uint64_t)> &record, uint64_t count) {
  Out o(path);
  o.put("GGUF");
  o.u32(3);
  o.u64(n_tensors);
  o.u64(n_kv);
  std::string chunk;
  for (uint64_t i = 0; i < count; i++) {
    chunk += record(i);
    if (chunk.size() > 65536) {
      o.put(chunk);
      chunk.clear();
    }
  }
  o.put(chunk);
}

std::string le64(uint64_t v) { return std::string((const char *)&v, 8); }
std::string le32(uint32_t v) { return std::string((const char *)&v, 4); }
std::string hexname(uint64_t i) {
  char b[24];
  return std::string(b, (size_t)snprintf(b, sizeof b, "%llx", (unsigned long long)i));
}

TEST(HostileRss, GgufHeaders) {
  fgt::TempDir dir;
  const std::string f = dir.file("h.gguf");
  auto kv = [](uint64_t i) {
    const std::string k = hexname(i);
    return le64(k.size()) + k + le32(0) + std::string(1, '\0');
  };
  uint64_t n = 0, size = 0;
  while (size < kHeader) size += kv(n++).size();
  gguf_records(f, 0, n, kv, n);
  expect_peak("5M KVs", f, 0, size, kSafetensors, dir);

  // tensor infos: n_dims 0 (one f32), offsets 32 apart; the data section follows
  auto ti = [](uint64_t i) {
    const std::string k = hexname(i);
    return le64(k.size()) + k + le32(0) + le32(0) + le64(32 * i);
  };
  n = size = 0;
  while (size < kHeader) size += ti(n++).size();
  const uint64_t hdr = 24 + size, pad = (32 - hdr % 32) % 32;
  gguf_records(f, n, 0, ti, n);
  {  // padding and n x 32 data bytes
    FILE *a = fopen(f.c_str(), "ab");
    ASSERT_NE(a, nullptr);
    std::string z(pad, '\0');
    fwrite(z.data(), 1, z.size(), a);
    ASSERT_EQ(ftruncate(fileno(a), (off_t)(hdr + pad + 32 * n)), 0);
    fclose(a);
  }
  expect_peak("3M tensor infos", f, 0, hdr, kGgufTensors, dir);

  // one array of 12.5M empty strings (offsets table: 8 bytes per 8-byte element)
  const uint64_t cnt = kHeader / 8;
  {
    Out o(f);
    o.put("GGUF");
    o.u32(3);
    o.u64(0);
    o.u64(1);
    o.put(le64(1) + "a" + le32(9) + le32(8) + le64(cnt));
    o.repeat(std::string(8, '\0'), cnt);
  }
  expect_peak("12.5M strings in one array", f, 0, kHeader, kSafetensors, dir);
}

}  // namespace
