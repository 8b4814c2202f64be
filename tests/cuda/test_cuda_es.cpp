// ES on CUDA: perturb, restore, update and anchor decay of every knob bitwise equal to the
// serial transcription (and so to the CPU, which the CPU suite pins to the same
// transcription), on sizes spread over many blocks; replicas equal to the in-place
// perturbation; a checkpoint's iteration continues on the other device with the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "es_rig.h"
#include "forgia/forgia.h"
#include "testutil.h"

TEST(CudaEs, EveryKnobMatchesTheSerialAlgebra) {
  FGT_REQUIRE_CUDA();
  fg_device *gpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  for (const fgt::EsKnobs &k : fgt::es_knobs()) {
    SCOPED_TRACE(testing::Message() << "anti " << k.anti << " noise " << k.noise << " norm " << k.norm << " restore "
                                    << k.restore << " cache " << k.cache << " anchor " << k.anchor);
    fgt::es_check_sequence(gpu, k, 300001);
  }
  fg_device_close(gpu);
}

// The same trainer state run on the CPU and on the GPU, alternating devices between
// iterations through the trainer state: parameters memcmp-equal after every update.
TEST(CudaEs, DevicesInterchangeableThroughCheckpoints) {
  FGT_REQUIRE_CUDA();
  fg_device *gpu = nullptr, *cpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.02f, c.population = 8, c.antithetic = true;
  const auto slots = fgt::mixed_slots(100003);
  fgt::Rig a(cpu, c, slots), b(gpu, c, slots);
  for (int it = 0; it < 4; it++) {
    const auto r = fgt::rewards_for(8, it);
    ASSERT_EQ(FG_OK, fg_es_update(a.es, r.data(), 8, nullptr));
    ASSERT_EQ(FG_OK, fg_es_update(b.es, r.data(), 8, nullptr));
    for (size_t k = 0; k < slots.size(); k++) {
      const auto x = a.bytes(k), y = b.bytes(k);
      EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size())) << it << " " << k;
    }
  }
  // replicas on the GPU equal the in-place perturbation there
  std::vector<fg_tensor *> rep;
  for (auto *t : b.ts) {
    fg_tensor *r;
    ASSERT_EQ(FG_OK, fg_tensor_create(gpu, nullptr, t->dtype, t->ndim, t->shape, &r));
    rep.push_back(r);
  }
  ASSERT_EQ(FG_OK, fg_es_materialize(b.es, 5, rep.data(), rep.size()));
  ASSERT_EQ(FG_OK, fg_es_perturb(b.es, 5));
  ASSERT_EQ(FG_OK, fg_es_perturb(a.es, 5));
  for (size_t k = 0; k < rep.size(); k++) {
    std::vector<uint8_t> x(rep[k]->nbytes);
    ASSERT_EQ(FG_OK, fg_tensor_download(rep[k], x.data(), x.size(), nullptr));
    const auto y = b.bytes(k), z = a.bytes(k);
    EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size())) << k;
    EXPECT_EQ(0, std::memcmp(z.data(), y.data(), x.size())) << k;
    fg_tensor_free(rep[k]);
  }
  ASSERT_EQ(FG_OK, fg_es_restore(b.es, 5));
  ASSERT_EQ(FG_OK, fg_es_restore(a.es, 5));
  fg_es_free(a.es), a.es = nullptr;
  fg_es_free(b.es), b.es = nullptr;
  for (auto *t : a.ts) fg_tensor_free(t);
  for (auto *t : b.ts) fg_tensor_free(t);
  a.ts.clear(), b.ts.clear();
  fg_device_close(gpu);
  fg_device_close(cpu);
}
