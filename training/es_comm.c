/* The distributed ES step (fg_es_step_comm): rank r evaluates its contiguous share of the
 * population, the rewards are all-gathered in member order and every rank applies the same
 * update. No parameter bytes travel: the noise is regenerated from the seed on every rank,
 * so identical rewards give identical updates.
 *
 * Collectives per step, the same on every rank whatever happens locally:
 *   1. broadcast of rank 0's (population, iteration, seed): a rank that disagrees would
 *      regenerate different noise, so it reports an error instead of evaluating;
 *   2. all-gather of one status word per rank: an error anywhere stops every rank before
 *      the update (the failing rank keeps its own status and message, the others return
 *      FG_ERR_STATE naming it), then a broadcast of the first failing rank's message;
 *   3. all-gather of the rewards, one contiguous share per rank, so member order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/comm.h"
#include "forgia/es.h"

#define FG_ES_COMM_MSG 256

/* Runs the members: this rank's share [first, first + count) perturbed, evaluated into
 * rewards[m] and restored. In regenerate mode every other member is applied and removed
 * too, without evaluation: (x + t) - t is not always x, so a single process's parameters
 * carry the rounding drift of every member in member order, and only the same sequence of
 * perturb and restore gives its bits (snapshot restore is exact: other members are
 * skipped). After an eval error the sequence still runs to its end, so every rank's
 * parameters stay identical; the first error's status is returned, its message in msg. */
static fg_status run_members(fg_es *es, uint64_t first, uint64_t count, fg_es_eval_fn eval, void *ctx, float *rewards,
                             char *msg) {
  const fg_es_config *cfg = fg_es_config_of(es);
  const bool replay = cfg->restore_mode == FG_ES_RESTORE_REGENERATE;
  const uint64_t lo = replay ? 0 : first, hi = replay ? cfg->population : first + count;
  fg_status failed = FG_OK;
  for (uint64_t m = lo; m < hi; m++) {
    const bool own = m >= first && m - first < count;
    if (failed && !replay) break;
    fg_status st = fg_es_perturb(es, m);
    fg_status est = FG_OK;
    if (!st && own && !failed) est = eval(ctx, m, &rewards[m]);
    /* Restore even when eval failed: the parameters must not stay perturbed. */
    if (!st) st = fg_es_restore(es, m);
    if (!failed && (est || st)) {
      failed = est ? est : st;
      snprintf(msg, FG_ES_COMM_MSG, "%s", fg_last_error());
    }
    if (st) break; /* the trainer itself failed: nothing more can run */
  }
  return failed;
}

/* Step 2: every rank's status, then the verdict. Statuses are small integers, exact in f32. */
static fg_status agree(fg_comm *comm, fg_status mine, float *status, uint64_t *ones) {
  const int size = fg_comm_size(comm), rank = fg_comm_rank(comm);
  for (int r = 0; r < size; r++) ones[r] = 1;
  const float word = (float)mine;
  fg_status st = fg_comm_allgather_f32(comm, &word, ones, status);
  if (st) return st;
  int failed = -1;
  for (int r = 0; r < size && failed < 0; r++)
    if (status[r] != 0.0f) failed = r;
  if (failed < 0) return FG_OK;
  /* Everyone learns the first failing rank's message; its own stays as fg_fail left it. */
  char msg[FG_ES_COMM_MSG];
  memset(msg, 0, sizeof msg);
  if (rank == failed) snprintf(msg, sizeof msg, "%s", fg_last_error());
  const fg_status bst = fg_comm_broadcast(comm, msg, sizeof msg, failed);
  if (mine) {
    if (rank == failed) fg_fail(mine, "%s", msg);
    return mine;
  }
  if (bst) return bst;
  msg[sizeof msg - 1] = '\0';
  return fg_fail(FG_ERR_STATE, "fg_es_step_comm: rank %d failed with %s (%s); no rank updated", failed,
                 fg_status_name((fg_status)(int)status[failed]), msg);
}

fg_status fg_es_step_comm(fg_es *es, fg_comm *comm, fg_es_eval_fn eval, void *ctx, fg_es_stats *stats) {
  if (!es || !comm || !eval)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_es_step_comm: NULL %s", !es ? "trainer" : !comm ? "communicator" : "evaluator");
  const int size = fg_comm_size(comm), rank = fg_comm_rank(comm);
  const fg_es_config *cfg = fg_es_config_of(es);
  const uint64_t pop = cfg->population;
  uint64_t first, count;
  fg_comm_share(pop, rank, size, &first, &count);

  /* The gather buffers come first: without them this rank cannot take part at all. */
  uint64_t *counts = malloc((size_t)size * sizeof *counts);
  float *status = malloc((size_t)size * sizeof *status);
  float *rewards = malloc((size_t)(pop ? pop : 1) * sizeof *rewards);
  if (!counts || !status || !rewards) {
    free(counts), free(status), free(rewards);
    return fg_fail(FG_ERR_NOMEM, "fg_es_step_comm: out of memory for %llu rewards on rank %d", (unsigned long long)pop, rank);
  }

  char msg[FG_ES_COMM_MSG] = "";
  /* 1. Do the ranks run the same trainer? */
  uint64_t ref[3] = {pop, fg_es_iteration(es), cfg->seed};
  fg_status st = fg_comm_broadcast(comm, ref, sizeof ref, 0);
  if (st) goto done;
  fg_status local = FG_OK;
  if (ref[0] != pop || ref[1] != fg_es_iteration(es) || ref[2] != cfg->seed)
    local = fg_fail(FG_ERR_STATE,
                    "fg_es_step_comm: rank %d has population %llu, iteration %llu, seed %llu; rank 0 has %llu, %llu, %llu",
                    rank, (unsigned long long)pop, (unsigned long long)fg_es_iteration(es),
                    (unsigned long long)cfg->seed, (unsigned long long)ref[0], (unsigned long long)ref[1],
                    (unsigned long long)ref[2]);

  /* This rank's share, written at its place in member order. */
  if (!local) {
    local = run_members(es, first, count, eval, ctx, rewards, msg);
    if (local) fg_fail(local, "%s", msg); /* the replay after the error may have overwritten it */
  }

  /* 2. Did every rank succeed? */
  st = agree(comm, local, status, counts);
  if (st) goto done;

  /* 3. Every rank's rewards, then the same update everywhere. */
  for (int r = 0; r < size; r++) fg_comm_share(pop, r, size, NULL, &counts[r]);
  st = fg_comm_allgather_f32(comm, rewards + first, counts, rewards);
  if (!st) st = fg_es_update(es, rewards, (size_t)pop, stats);
done:
  free(counts), free(status), free(rewards);
  return st;
}
