// Run under an MPI launcher with N ranks (argument: N). Checks, on every rank:
//  (a) the all-reduce is the rank-ordered f32 sum ((b0 + b1) + b2) + ..., bit for bit,
//      over a buffer long enough to cross the backend's chunks, with data whose sum depends
//      on the order (checked: for N >= 3 another order differs somewhere);
//      the parts form over 6 groups (a run of 6 / N per rank) gives one process's
//      group-ordered sum;
//  (b) all-gather with uneven and zero counts, in place and not, and broadcast;
//  (c) fg_es_step_comm for 5 iterations over the rig's configurations (f32/f16/bf16,
//      antithetic, correlated, centered ranks, snapshot and cached streams; population 6
//      and 8, so N = 3 shares unevenly) gives the statistics and the parameter bytes of
//      fg_es_step run by this same process alone;
//  (d) an eval error on the rank owning member 4 comes back on every rank (FG_ERR_IO there,
//      FG_ERR_STATE naming it elsewhere), nothing updates, the ranks stay identical, and
//      the next step runs.
// Prints one line per failure and, on rank 0, PASS or FAIL; exits 1 on any failure anywhere.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "es_rig.h"
#include "rank_values.h"
#include "forgia/comm.h"
#include "forgia/es.h"

namespace {

int g_rank = 0;
int g_failures = 0;

#define CHECK(cond, ...)                                    \
  do {                                                      \
    if (!(cond)) {                                          \
      std::printf("rank %d: FAIL %s:%d: ", g_rank, __FILE__, __LINE__); \
      std::printf(__VA_ARGS__);                             \
      std::printf("\n");                                    \
      std::fflush(stdout);                                  \
      g_failures++;                                         \
    }                                                       \
  } while (0)

void check_allreduce(fg_comm *c) {
  const int size = fg_comm_size(c), rank = fg_comm_rank(c);
  const size_t n = 1300001;  // more than one 4 MiB chunk for every N
  std::vector<float> buf(n), want(n);
  for (size_t i = 0; i < n; i++) buf[i] = rank_value(rank, i);
  fg_status st = fg_comm_allreduce_sum_f32(c, buf.data(), n);
  CHECK(st == FG_OK, "allreduce: %s", fg_last_error());
  size_t order_matters = 0;
  for (size_t i = 0; i < n; i++) {
    want[i] = rank_ordered_sum(size, i);
    float rev = rank_value(size - 1, i);
    for (int r = size - 2; r >= 0; r--) rev = rev + rank_value(r, i);
    if (std::memcmp(&rev, &want[i], sizeof rev) != 0) order_matters++;
  }
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < n; i++)
    if (std::memcmp(&buf[i], &want[i], sizeof(float)) != 0 && bad++ == 0) first_bad = i;
  CHECK(bad == 0, "allreduce: %zu of %zu elements differ from the rank-ordered sum (first at %zu: %.9g vs %.9g)", bad, n,
        first_bad, buf[first_bad], want[first_bad]);
  // With three ranks or more another order gives other bits somewhere, so the check above
  // does tell orders apart (with two, a + b == b + a).
  if (size >= 3) CHECK(order_matters > 0, "allreduce: the test data sums alike in every order");
  if (rank == 0) std::printf("allreduce: %zu floats x %d ranks bitwise equal to the rank-ordered sum (%zu elements differ in reverse order)\n", n, size, order_matters);
}

// Six gradient groups, a contiguous run of 6 / N per rank, each group in its own buffer: the
// all-reduce gives the group-ordered sum, the bits of one process (and of any N dividing 6).
void check_allreduce_parts(fg_comm *c) {
  const int size = fg_comm_size(c), rank = fg_comm_rank(c);
  const int groups = 6;
  if (groups % size != 0) return;
  const size_t n = 700001, mine = static_cast<size_t>(groups / size);
  std::vector<float> parts(mine * n), out(n);
  for (size_t p = 0; p < mine; p++)
    for (size_t i = 0; i < n; i++) parts[p * n + i] = rank_value(static_cast<int>(rank * mine + p), i);
  fg_status st = fg_comm_allreduce_parts_f32(c, parts.data(), mine, n, out.data());
  CHECK(st == FG_OK, "allreduce parts: %s", fg_last_error());
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const float want = rank_ordered_sum(groups, i);
    bad += std::memcmp(&want, &out[i], sizeof want) != 0;
  }
  CHECK(bad == 0, "allreduce parts: %zu of %zu elements differ from the group-ordered sum", bad, n);
  if (rank == 0)
    std::printf("allreduce parts: %d groups over %d ranks bitwise equal to one process's group-ordered sum\n", groups, size);
}

void check_allgather_broadcast(fg_comm *c) {
  const int size = fg_comm_size(c), rank = fg_comm_rank(c);
  std::vector<uint64_t> counts(size);
  uint64_t total = 0;
  for (int r = 0; r < size; r++) total += counts[r] = r == 1 ? 0 : static_cast<uint64_t>(r) + 2;
  std::vector<float> mine(counts[rank]), all(total, -1.0f), inplace(total, -1.0f);
  uint64_t off = 0;
  for (int r = 0; r < rank; r++) off += counts[r];
  for (uint64_t j = 0; j < counts[rank]; j++) inplace[off + j] = mine[j] = static_cast<float>(rank * 100 + j);
  fg_status st = fg_comm_allgather_f32(c, mine.data(), counts.data(), all.data());
  CHECK(st == FG_OK, "allgather: %s", fg_last_error());
  st = fg_comm_allgather_f32(c, inplace.data() + off, counts.data(), inplace.data());
  CHECK(st == FG_OK, "allgather in place: %s", fg_last_error());
  uint64_t k = 0;
  for (int r = 0; r < size; r++)
    for (uint64_t j = 0; j < counts[r]; j++, k++) {
      CHECK(all[k] == static_cast<float>(r * 100 + j), "allgather: value %llu is %g", (unsigned long long)k, all[k]);
      CHECK(inplace[k] == static_cast<float>(r * 100 + j), "allgather in place: value %llu is %g", (unsigned long long)k,
            inplace[k]);
    }
  char msg[32];
  std::snprintf(msg, sizeof msg, "from rank %d", rank);
  st = fg_comm_broadcast(c, msg, sizeof msg, size - 1);
  CHECK(st == FG_OK, "broadcast: %s", fg_last_error());
  char want[32];
  std::snprintf(want, sizeof want, "from rank %d", size - 1);
  CHECK(std::strcmp(msg, want) == 0, "broadcast: got '%s'", msg);
  CHECK(fg_comm_barrier(c) == FG_OK, "barrier: %s", fg_last_error());
}

// Every rank's bytes equal rank 0's.
bool same_on_every_rank(fg_comm *c, const std::vector<uint8_t> &b) {
  std::vector<uint8_t> root = b;
  if (fg_comm_broadcast(c, root.data(), root.size(), 0) != FG_OK) return false;
  float differ = root == b ? 0.0f : 1.0f;
  if (fg_comm_allreduce_sum_f32(c, &differ, 1) != FG_OK) return false;
  return differ == 0.0f;
}

void check_es(fg_comm *c) {
  const std::vector<fg_es_config> cfgs = esrig::configs();
  for (size_t k = 0; k < cfgs.size(); k++) {
    esrig::Rig dist, alone;
    fg_status st = dist.init(cfgs[k]);
    if (!st) st = alone.init(cfgs[k]);
    CHECK(st == FG_OK, "es config %zu: setup: %s", k, fg_last_error());
    if (st) return;  // the other ranks fail the same way: nobody enters a collective
    for (int it = 0; it < 5; it++) {
      fg_es_stats sd, sa;
      st = fg_es_step_comm(dist.es, c, esrig::reward, &dist, &sd);
      CHECK(st == FG_OK, "es config %zu iteration %d: fg_es_step_comm: %s", k, it, fg_last_error());
      st = fg_es_step(alone.es, esrig::reward, &alone, &sa);
      CHECK(st == FG_OK, "es config %zu iteration %d: fg_es_step: %s", k, it, fg_last_error());
      CHECK(sd.mean_reward == sa.mean_reward && sd.std_reward == sa.std_reward && sd.min_reward == sa.min_reward &&
                sd.max_reward == sa.max_reward,
            "es config %zu iteration %d: statistics differ (mean %.17g vs %.17g)", k, it, sd.mean_reward, sa.mean_reward);
    }
    const std::vector<uint8_t> bd = dist.bytes(), ba = alone.bytes();
    CHECK(bd.size() == ba.size() && std::memcmp(bd.data(), ba.data(), bd.size()) == 0,
          "es config %zu (population %llu, antithetic %d, restore %s): parameters differ from the single-process run", k,
          (unsigned long long)cfgs[k].population, (int)cfgs[k].antithetic, fg_es_restore_mode_name(cfgs[k].restore_mode));
    CHECK(fg_es_iteration(dist.es) == 5, "es config %zu: iteration %llu", k, (unsigned long long)fg_es_iteration(dist.es));
    CHECK(same_on_every_rank(c, bd), "es config %zu: the ranks' parameters differ", k);
    if (g_rank == 0)
      std::printf("es config %zu (population %llu, antithetic %d, noise %s, restore %s): %zu parameter bytes memcmp-equal to one process\n",
                  k, (unsigned long long)cfgs[k].population, (int)cfgs[k].antithetic, fg_es_noise_name(cfgs[k].noise),
                  fg_es_restore_mode_name(cfgs[k].restore_mode), bd.size());
  }
}

void check_error(fg_comm *c, size_t cfg_index) {
  const int size = fg_comm_size(c), rank = fg_comm_rank(c);
  const fg_es_config cfg = esrig::configs()[cfg_index];
  esrig::Rig r;
  fg_status st = r.init(cfg);
  CHECK(st == FG_OK, "error check: setup: %s", fg_last_error());
  if (st) return;
  int owner = -1;
  for (int k = 0; k < size; k++) {
    uint64_t first, count;
    fg_comm_share(cfg.population, k, size, &first, &count);
    if (first <= 4 && 4 < first + count) owner = k;
  }
  const std::vector<uint8_t> before = r.bytes();
  r.fail_member = 4;
  st = fg_es_step_comm(r.es, c, esrig::reward, &r, nullptr);
  if (rank == owner) {
    CHECK(st == FG_ERR_IO, "error check: the failing rank returned %s", fg_status_name(st));
    CHECK(std::strstr(fg_last_error(), "member 4 fails") != nullptr, "error check: message '%s'", fg_last_error());
  } else {
    char want[32];
    std::snprintf(want, sizeof want, "rank %d failed", owner);
    CHECK(st == FG_ERR_STATE, "error check: rank %d returned %s", rank, fg_status_name(st));
    CHECK(std::strstr(fg_last_error(), want) != nullptr && std::strstr(fg_last_error(), "member 4 fails") != nullptr,
          "error check: message '%s'", fg_last_error());
  }
  CHECK(fg_es_iteration(r.es) == 0, "error check: iteration advanced to %llu", (unsigned long long)fg_es_iteration(r.es));
  CHECK(fg_es_active_member(r.es) == -1, "error check: member %lld left applied", (long long)fg_es_active_member(r.es));
  if (cfg.restore_mode == FG_ES_RESTORE_SNAPSHOT) CHECK(r.bytes() == before, "error check: parameters changed");
  CHECK(same_on_every_rank(c, r.bytes()), "error check (%s restore): the ranks' parameters differ after the error",
        fg_es_restore_mode_name(cfg.restore_mode));
  r.fail_member = UINT64_MAX;
  st = fg_es_step_comm(r.es, c, esrig::reward, &r, nullptr);
  CHECK(st == FG_OK, "error check: the next step: %s", fg_last_error());
  CHECK(same_on_every_rank(c, r.bytes()), "error check: the ranks' parameters differ after the next step");
  if (rank == 0)
    std::printf("error check (%s restore): rank %d's eval error returned on all %d ranks, nothing updated\n",
                fg_es_restore_mode_name(cfg.restore_mode), owner, size);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RANKS (run under an MPI launcher with RANKS processes)\n", argv[0]);
    return 2;
  }
  const int want_size = std::atoi(argv[1]);
  fg_comm *c = nullptr;
  if (fg_comm_open(FG_COMM_AUTO, &c) != FG_OK) {
    std::printf("FAIL: fg_comm_open: %s\n", fg_last_error());
    return 1;
  }
  g_rank = fg_comm_rank(c);
  // A launcher that started N separate single-rank jobs would pass every check trivially.
  if (fg_comm_size(c) != want_size || fg_comm_kind_of(c) != (want_size > 1 ? FG_COMM_MPI : FG_COMM_SINGLE)) {
    std::printf("rank %d: FAIL: a %s communicator of %d ranks, expected %d\n", g_rank,
                fg_comm_kind_name(fg_comm_kind_of(c)), fg_comm_size(c), want_size);
    fg_comm_close(c);
    return 1;
  }
  check_allreduce(c);
  check_allreduce_parts(c);
  check_allgather_broadcast(c);
  check_es(c);
  check_error(c, 3); /* snapshot restore */
  check_error(c, 0); /* regenerate restore */
  float total = static_cast<float>(g_failures);
  if (fg_comm_allreduce_sum_f32(c, &total, 1) != FG_OK) {
    std::printf("rank %d: FAIL: the final all-reduce: %s\n", g_rank, fg_last_error());
    total = 1;
  }
  if (g_rank == 0) std::printf("%s: %d ranks, %g failure(s)\n", total == 0 ? "PASS" : "FAIL", want_size, total);
  fg_comm_close(c);
  return total == 0 ? 0 : 1;
}
