// fg_convert dequantizes block types on a device with the same floats as the row codec.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/quant.h"
#include "testutil.h"

TEST(DeviceDequant, CpuDeviceMatchesRowDecoder) {
  fg_device *d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d));
  int tested = 0;
  for (int v = 0; v < FG_GGML_TYPE_COUNT; v++) {
    if (!fg_dtype_valid(v) || !fg_dtype_info((fg_dtype)v)->is_quant) continue;
    fg_dtype t = (fg_dtype)v;
    if (!fg_quant_can_encode(t) || !fg_quant_can_decode(t)) continue;
    const int64_t rows = 8, n = 1024;
    std::vector<float> x = fgt::gaussian(rows * n, 40 + v, 2.0f);
    uint64_t rb;
    ASSERT_EQ(FG_OK, fg_dtype_nbytes(t, n, &rb));
    std::vector<uint8_t> q(rb * rows);
    ASSERT_EQ(FG_OK, fg_quant_encode_rows(t, x.data(), rows, n, q.data(), q.size())) << fg_dtype_name(t);
    std::vector<float> ref(rows * n), got(rows * n);
    ASSERT_EQ(FG_OK, fg_quant_decode_rows(t, q.data(), q.size(), ref.data(), rows, n));
    ASSERT_EQ(FG_OK, fg_convert(d, got.data(), FG_F32, q.data(), t, got.size(), nullptr)) << fg_last_error();
    EXPECT_EQ(0, std::memcmp(ref.data(), got.data(), got.size() * 4)) << fg_dtype_name(t);
    tested++;
  }
  EXPECT_GE(tested, 15);
  std::vector<float> out(64);
  std::vector<uint8_t> q(64);
  EXPECT_EQ(FG_ERR_BAD_ROW, fg_convert(d, out.data(), FG_F32, q.data(), FG_Q4_0, 33, nullptr));
  EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_convert(d, q.data(), FG_Q4_0, out.data(), FG_F32, 32, nullptr));
  fg_device_close(d);
}
