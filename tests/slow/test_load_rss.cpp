// Peak host memory of a large converted CPU load: a 2 GiB f32 safetensors file (32 tensors
// of 64 MiB) narrowed to bf16 on the CPU. Beyond the model's own output, the process may
// grow by at most the ring, the largest tensor and 64 MiB: file pages are released behind
// the cursor, so the file's size does not show in the peak.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "../cpu/load_test_util.h"

namespace {

uint64_t status_kb(const char *key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(strlen(key)));
  return 0;
}

TEST(LoadRss, ConvertedLoadStaysWithinRingPlusLargestTensor) {
  const int nt = 32;
  const uint64_t per = 64ull << 20, n = per / 4;
  fgt::TempDir dir;
  std::string path = dir.file("big.safetensors");
  {  // written by hand, one tensor at a time, so that the test itself stays small
    std::string h = "{";
    for (int i = 0; i < nt; i++) {
      char e[160];
      snprintf(e, sizeof e, "%s\"t%02d\":{\"dtype\":\"F32\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}", i ? "," : "",
               i, (unsigned long long)n, (unsigned long long)(per * i), (unsigned long long)(per * (i + 1)));
      h += e;
    }
    h += "}";
    while (h.size() % 8) h += ' ';
    FILE *f = fopen(path.c_str(), "wb");
    ASSERT_NE(nullptr, f);
    uint64_t hl = h.size();
    fwrite(&hl, 8, 1, f);
    fwrite(h.data(), 1, h.size(), f);
    std::vector<float> buf(n);
    for (int i = 0; i < nt; i++) {
      for (uint64_t j = 0; j < n; j++) buf[j] = (float)((j + (uint64_t)i) % 1000) * 0.25f;
      ASSERT_EQ(n, fwrite(buf.data(), 4, n, f));
    }
    fclose(f);
  }
  fg_device *dev;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
  {  // reset the peak (Linux >= 4.0) so that writing the file does not count
    std::ofstream cr("/proc/self/clear_refs");
    cr << "5";
  }
  uint64_t base_kb = status_kb("VmRSS:");
  fg_load_options o;
  fg_load_options_init(&o);
  o.dtype = FG_LOAD_DTYPE_BF16;
  fg_model *m = ldt::load_ok(path, dev, &o);
  ASSERT_NE(nullptr, m);
  uint64_t peak_kb = status_kb("VmHWM:");
  uint64_t output = fg_model_stats(m)->bytes_owned;
  uint64_t ring = (uint64_t)FG_LOAD_RING_DEFAULT_COUNT * FG_LOAD_RING_DEFAULT_BYTES;
  uint64_t allowed = ring + per + (64ull << 20);
  uint64_t grew = peak_kb * 1024 > base_kb * 1024 + output ? peak_kb * 1024 - base_kb * 1024 - output : 0;
  std::printf("peak growth beyond the %llu MiB output: %llu MiB (allowed %llu MiB)\n",
              (unsigned long long)(output >> 20), (unsigned long long)(grew >> 20), (unsigned long long)(allowed >> 20));
  EXPECT_LT(grew, allowed) << "peak " << peak_kb << " KiB, base " << base_kb << " KiB, output " << output / 1024
                           << " KiB";
  // spot check: t05[j] = ((j + 5) % 1000) * 0.25 in bf16
  const fg_model_tensor *t = fg_model_find(m, "t05");
  ASSERT_NE(nullptr, t);
  const uint16_t *v = static_cast<const uint16_t *>(t->data);
  for (uint64_t j = 0; j < n; j += 4099) ASSERT_EQ(fg_f32_to_bf16((float)((j + 5) % 1000) * 0.25f), v[j]) << j;
  fg_model_free(m);
  fg_device_close(dev);
}

}  // namespace
