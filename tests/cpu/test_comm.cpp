// Communicators (forgia/comm.h) in one process: the share arithmetic, AUTO's choice, the
// single backend's collectives as copies, bad arguments, and fg_es_step_comm over a single
// communicator giving fg_es_step's bits (the MPI runs are tests/mpi/es_mpi_check.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../mpi/es_rig.h"
#include "../mpi/rank_values.h"
#include "forgia/comm.h"
#include "forgia/es.h"

namespace {

// Sets an environment variable for one scope and puts the old value back.
class EnvVar {
 public:
  EnvVar(const char *name, const char *value) : name_(name) {
    const char *old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~EnvVar() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char *name_;
  bool had_ = false;
  std::string old_;
};

// No launcher variable at all (the test may itself run under one).
struct NoLauncher {
  EnvVar a{"OMPI_COMM_WORLD_SIZE", nullptr}, b{"PMI_SIZE", nullptr}, c{"PMIX_SIZE", nullptr},
      d{"MV2_COMM_WORLD_SIZE", nullptr};
};

struct Single {
  fg_comm *c = nullptr;
  Single() { EXPECT_EQ(FG_OK, fg_comm_open(FG_COMM_SINGLE, &c)) << fg_last_error(); }
  ~Single() { fg_comm_close(c); }
};

}  // namespace

TEST(Comm, KindNames) {
  EXPECT_STREQ("auto", fg_comm_kind_name(FG_COMM_AUTO));
  EXPECT_STREQ("single", fg_comm_kind_name(FG_COMM_SINGLE));
  EXPECT_STREQ("mpi", fg_comm_kind_name(FG_COMM_MPI));
  EXPECT_STREQ("nccl", fg_comm_kind_name(FG_COMM_NCCL));
  EXPECT_EQ(nullptr, fg_comm_kind_name(static_cast<fg_comm_kind>(7)));
  EXPECT_TRUE(fg_comm_available(FG_COMM_AUTO));
  EXPECT_TRUE(fg_comm_available(FG_COMM_SINGLE));
  EXPECT_FALSE(fg_comm_available(static_cast<fg_comm_kind>(7)));
  // NCCL is built only with the CUDA backend.
  if (!fg_build_has_cuda()) {
    EXPECT_FALSE(fg_comm_available(FG_COMM_NCCL));
  }
}

TEST(Comm, ShareUneven) {
  const uint64_t want[3][2] = {{0, 2}, {2, 2}, {4, 1}};
  for (int r = 0; r < 3; r++) {
    uint64_t first = 99, count = 99;
    fg_comm_share(5, r, 3, &first, &count);
    EXPECT_EQ(want[r][0], first) << "rank " << r;
    EXPECT_EQ(want[r][1], count) << "rank " << r;
  }
}

// Every (n, size): the shares tile [0, n) in rank order, and differ by at most one, the
// larger ones first.
TEST(Comm, ShareTiles) {
  for (uint64_t n : {0ull, 1ull, 2ull, 5ull, 6ull, 7ull, 31ull, 1000ull}) {
    for (int size = 1; size <= 9; size++) {
      uint64_t next = 0, prev = UINT64_MAX;
      for (int r = 0; r < size; r++) {
        uint64_t first, count;
        fg_comm_share(n, r, size, &first, &count);
        EXPECT_EQ(next, first) << "n " << n << " size " << size << " rank " << r;
        EXPECT_LE(count, prev);
        EXPECT_LE(count, n / size + 1);
        EXPECT_GE(count, n / size);
        next = first + count;
        prev = count;
      }
      EXPECT_EQ(n, next) << "n " << n << " size " << size;
    }
  }
}

TEST(Comm, ShareHugeAndBad) {
  // n near the top of u64 must not overflow.
  const uint64_t n = UINT64_MAX;
  uint64_t first, count, total = 0;
  for (int r = 0; r < 7; r++) {
    fg_comm_share(n, r, 7, &first, &count);
    EXPECT_EQ(total, first);
    total += count;
  }
  EXPECT_EQ(n, total);
  // Outside the communicator: nothing.
  for (auto rs : {std::pair<int, int>{3, 3}, {-1, 3}, {0, 0}, {0, -2}}) {
    first = count = 77;
    fg_comm_share(10, rs.first, rs.second, &first, &count);
    EXPECT_EQ(0u, first);
    EXPECT_EQ(0u, count);
  }
  fg_comm_share(10, 0, 3, nullptr, &count);  // either output may be NULL
  EXPECT_EQ(4u, count);
  fg_comm_share(10, 2, 3, &first, nullptr);
  EXPECT_EQ(7u, first);
}

TEST(Comm, SingleBasics) {
  Single s;
  ASSERT_NE(nullptr, s.c);
  EXPECT_EQ(FG_COMM_SINGLE, fg_comm_kind_of(s.c));
  EXPECT_EQ(0, fg_comm_rank(s.c));
  EXPECT_EQ(1, fg_comm_size(s.c));
  EXPECT_EQ(FG_OK, fg_comm_barrier(s.c));
  fg_comm_close(nullptr);
  EXPECT_EQ(-1, fg_comm_rank(nullptr));
  EXPECT_EQ(0, fg_comm_size(nullptr));
}

TEST(Comm, AutoWithoutLauncherIsSingle) {
  NoLauncher none;
  for (const char *v : {static_cast<const char *>(nullptr), "1", "", "two", "-4", "3x"}) {
    EnvVar e("OMPI_COMM_WORLD_SIZE", v);
    fg_comm *c = nullptr;
    ASSERT_EQ(FG_OK, fg_comm_open(FG_COMM_AUTO, &c)) << (v ? v : "(unset)") << ": " << fg_last_error();
    EXPECT_EQ(FG_COMM_SINGLE, fg_comm_kind_of(c)) << (v ? v : "(unset)");
    fg_comm_close(c);
  }
}

// Started with several ranks by a launcher but built without MPI: refused, naming the
// variable, rather than every rank running the whole job alone.
TEST(Comm, AutoUnderLauncherWithoutMpi) {
  if (fg_comm_available(FG_COMM_MPI)) GTEST_SKIP() << "this build has MPI: AUTO would start it (tests/mpi covers that)";
  NoLauncher none;
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    EnvVar e(var, "2");
    fg_comm *c = reinterpret_cast<fg_comm *>(1);
    EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_comm_open(FG_COMM_AUTO, &c));
    EXPECT_EQ(nullptr, c);
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), var)) << fg_last_error();
  }
}

TEST(Comm, OpenBadArgs) {
  fg_comm *c = reinterpret_cast<fg_comm *>(1);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_open(FG_COMM_SINGLE, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_open(static_cast<fg_comm_kind>(9), &c));
  EXPECT_EQ(nullptr, c);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_open(FG_COMM_NCCL, &c));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "fg_comm_open_nccl")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_open_nccl(nullptr, &c));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_open_nccl(nullptr, nullptr));
  if (!fg_comm_available(FG_COMM_MPI)) {
    EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_comm_open(FG_COMM_MPI, &c));
    EXPECT_EQ(nullptr, c);
  }
  if (!fg_comm_available(FG_COMM_NCCL)) {
    fg_device *cpu = nullptr;
    ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
    EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_comm_open_nccl(cpu, &c));
    fg_device_close(cpu);
  }
}

TEST(Comm, SingleAllgatherCopies) {
  Single s;
  const float mine[4] = {1.5f, -0.0f, NAN, 3e-40f};  // a subnormal and a NaN travel as bits
  float all[4] = {};
  const uint64_t counts[1] = {4};
  ASSERT_EQ(FG_OK, fg_comm_allgather_f32(s.c, mine, counts, all)) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(mine, all, sizeof all));
  // In place: mine at this rank's place in all.
  float buf[3] = {7, 8, 9};
  const uint64_t three[1] = {3};
  ASSERT_EQ(FG_OK, fg_comm_allgather_f32(s.c, buf, three, buf));
  EXPECT_EQ(8.0f, buf[1]);
  // Nothing to gather: NULL buffers are fine.
  const uint64_t zero[1] = {0};
  EXPECT_EQ(FG_OK, fg_comm_allgather_f32(s.c, nullptr, zero, nullptr));
}

TEST(Comm, SingleAllgatherBadArgs) {
  Single s;
  float mine[4] = {1, 2, 3, 4}, all[8] = {};
  const uint64_t counts[1] = {4};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allgather_f32(nullptr, mine, counts, all));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allgather_f32(s.c, mine, nullptr, all));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allgather_f32(s.c, nullptr, counts, all));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allgather_f32(s.c, mine, counts, nullptr));
  // mine overlapping all anywhere but at its own place.
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allgather_f32(s.c, all + 1, counts, all));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "overlaps")) << fg_last_error();
  const uint64_t huge[1] = {UINT64_MAX / 2};
  EXPECT_EQ(FG_ERR_OVERFLOW, fg_comm_allgather_f32(s.c, mine, huge, all));
  EXPECT_EQ(0, std::memcmp(all, std::vector<float>(8, 0.0f).data(), sizeof all));  // refused calls wrote nothing
}

TEST(Comm, SingleAllreduceIsIdentity) {
  Single s;
  std::vector<float> buf = {1.0f, -0.0f, 1e30f, -3e-41f, INFINITY};
  uint32_t nan = 0x7fc01234u;  // a NaN payload survives
  float f;
  std::memcpy(&f, &nan, 4);
  buf.push_back(f);
  const std::vector<float> before = buf;
  ASSERT_EQ(FG_OK, fg_comm_allreduce_sum_f32(s.c, buf.data(), buf.size()));
  EXPECT_EQ(0, std::memcmp(before.data(), buf.data(), buf.size() * sizeof(float)));
  EXPECT_EQ(FG_OK, fg_comm_allreduce_sum_f32(s.c, nullptr, 0));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allreduce_sum_f32(s.c, nullptr, 3));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allreduce_sum_f32(nullptr, buf.data(), 3));
  EXPECT_EQ(FG_ERR_OVERFLOW, fg_comm_allreduce_sum_f32(s.c, buf.data(), SIZE_MAX / 2));
}

// Six gradient groups in one process: the group-ordered sum (((g0 + g1) + g2) + ...), the
// bits 2 and 3 ranks holding 3 and 2 groups each give (tests/mpi/es_mpi_check.cpp).
TEST(Comm, SingleAllreduceParts) {
  Single s;
  const size_t n = 1001, groups = 6;
  std::vector<float> parts(groups * n), out(n, -1.0f);
  for (size_t g = 0; g < groups; g++)
    for (size_t i = 0; i < n; i++) parts[g * n + i] = rank_value(static_cast<int>(g), i);
  ASSERT_EQ(FG_OK, fg_comm_allreduce_parts_f32(s.c, parts.data(), groups, n, out.data())) << fg_last_error();
  size_t bad = 0, order_matters = 0;
  for (size_t i = 0; i < n; i++) {
    const float want = rank_ordered_sum(static_cast<int>(groups), i);
    bad += std::memcmp(&want, &out[i], sizeof want) != 0;
    // The data tells orders apart: pairs first, then the pairs, differs somewhere.
    const float pairs = ((parts[i] + parts[n + i]) + (parts[2 * n + i] + parts[3 * n + i])) + (parts[4 * n + i] + parts[5 * n + i]);
    order_matters += std::memcmp(&want, &pairs, sizeof want) != 0;
  }
  EXPECT_EQ(0u, bad);
  EXPECT_GT(order_matters, 0u);
  // One part: a copy, or nothing in place.
  std::vector<float> one(parts.begin(), parts.begin() + n), copy(n);
  ASSERT_EQ(FG_OK, fg_comm_allreduce_parts_f32(s.c, one.data(), 1, n, copy.data()));
  EXPECT_EQ(one, copy);
  ASSERT_EQ(FG_OK, fg_comm_allreduce_parts_f32(s.c, one.data(), 1, n, one.data()));
  EXPECT_EQ(copy, one);
}

TEST(Comm, AllreducePartsBadArgs) {
  Single s;
  std::vector<float> parts(12, 1.0f), out(4);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allreduce_parts_f32(nullptr, parts.data(), 3, 4, out.data()));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allreduce_parts_f32(s.c, parts.data(), 0, 4, out.data()));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allreduce_parts_f32(s.c, nullptr, 3, 4, out.data()));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allreduce_parts_f32(s.c, parts.data(), 3, 4, nullptr));
  // In place only for one part: out on the second part overlaps.
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allreduce_parts_f32(s.c, parts.data(), 3, 4, parts.data() + 4));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "overlaps")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_allreduce_parts_f32(s.c, parts.data(), 3, 4, parts.data()));
  EXPECT_EQ(FG_ERR_OVERFLOW, fg_comm_allreduce_parts_f32(s.c, parts.data(), SIZE_MAX / 8, 4, out.data()));
  EXPECT_EQ(FG_OK, fg_comm_allreduce_parts_f32(s.c, nullptr, 3, 0, nullptr));
  EXPECT_EQ(std::vector<float>(4, 0.0f), out);  // refused calls wrote nothing
}

TEST(Comm, SingleBroadcast) {
  Single s;
  char msg[6] = "hello";
  EXPECT_EQ(FG_OK, fg_comm_broadcast(s.c, msg, sizeof msg, 0));
  EXPECT_STREQ("hello", msg);
  EXPECT_EQ(FG_OK, fg_comm_broadcast(s.c, nullptr, 0, 0));
  EXPECT_EQ(FG_ERR_RANGE, fg_comm_broadcast(s.c, msg, sizeof msg, 1));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "root 1")) << fg_last_error();
  EXPECT_EQ(FG_ERR_RANGE, fg_comm_broadcast(s.c, msg, sizeof msg, -1));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_broadcast(s.c, nullptr, 4, 0));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_broadcast(nullptr, msg, 4, 0));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_comm_barrier(nullptr));
}

// One process through fg_es_step_comm: the bits of fg_es_step, for every rig configuration.
TEST(CommEs, SingleStepMatchesStep) {
  Single s;
  for (const fg_es_config &c : esrig::configs()) {
    esrig::Rig a, b;
    ASSERT_EQ(FG_OK, a.init(c)) << fg_last_error();
    ASSERT_EQ(FG_OK, b.init(c)) << fg_last_error();
    for (int it = 0; it < 5; it++) {
      fg_es_stats sa, sb;
      ASSERT_EQ(FG_OK, fg_es_step(a.es, esrig::reward, &a, &sa)) << fg_last_error();
      ASSERT_EQ(FG_OK, fg_es_step_comm(b.es, s.c, esrig::reward, &b, &sb)) << fg_last_error();
      EXPECT_EQ(sa.mean_reward, sb.mean_reward);
      EXPECT_EQ(sa.std_reward, sb.std_reward);
      EXPECT_EQ(sa.min_reward, sb.min_reward);
      EXPECT_EQ(sa.max_reward, sb.max_reward);
    }
    EXPECT_EQ(5u, fg_es_iteration(b.es));
    EXPECT_EQ(a.bytes(), b.bytes()) << "population " << c.population << " antithetic " << c.antithetic;
  }
}

// An evaluator error: returned as is, the member restored, nothing updated, the iteration
// unchanged, and the next step runs normally. Snapshot restore, so that "unchanged" is
// bitwise (regeneration leaves the (x + t) - t drift of the members it ran).
TEST(CommEs, EvalErrorChangesNothing) {
  Single s;
  const fg_es_config c = esrig::configs()[3];
  ASSERT_EQ(FG_ES_RESTORE_SNAPSHOT, c.restore_mode);
  esrig::Rig r, ref;
  ASSERT_EQ(FG_OK, r.init(c)) << fg_last_error();
  ASSERT_EQ(FG_OK, ref.init(c)) << fg_last_error();
  const std::vector<uint8_t> before = r.bytes();
  r.fail_member = 3;
  EXPECT_EQ(FG_ERR_IO, fg_es_step_comm(r.es, s.c, esrig::reward, &r, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "member 3 fails")) << fg_last_error();
  EXPECT_EQ(-1, fg_es_active_member(r.es));
  EXPECT_EQ(0u, fg_es_iteration(r.es));
  EXPECT_EQ(before, r.bytes());
  r.fail_member = UINT64_MAX;
  ASSERT_EQ(FG_OK, fg_es_step_comm(r.es, s.c, esrig::reward, &r, nullptr)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_es_step(ref.es, esrig::reward, &ref, nullptr)) << fg_last_error();
  EXPECT_EQ(ref.bytes(), r.bytes());
}

TEST(CommEs, BadArgs) {
  Single s;
  esrig::Rig r;
  ASSERT_EQ(FG_OK, r.init(esrig::configs()[0])) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_es_step_comm(nullptr, s.c, esrig::reward, &r, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_es_step_comm(r.es, nullptr, esrig::reward, &r, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_es_step_comm(r.es, s.c, nullptr, &r, nullptr));
  EXPECT_EQ(0u, fg_es_iteration(r.es));
}
