/* The evolution-strategies example of `forgia es spirals`: the two-spirals MLP of
 * `forgia train spirals` (2 -> 64 -> 64 -> 2, ReLU, the same data and initial weights from
 * the seed) trained from scratch with no backward pass: each iteration every member of the
 * population is written into a worker's replica (fg_es_materialize), scored by a forward
 * pass (reward = minus the mean cross-entropy), and fg_es_update moves the parameters. With
 * `ternary` the hidden layer fc2 is a packed TQ2_0 genome (trits times a fixed block scale)
 * trained by trit flips and the vote-and-threshold update, the other layers by gaussian ES.
 *
 * Under MPI (a communicator of more than one rank) each rank evaluates its contiguous share
 * of the population, the rewards are all-gathered in member order, and every rank applies
 * the same update, so every rank holds the bits a single process computes. Rewards, and so
 * the whole run, do not depend on the worker count either. */
#ifndef FORGIA_TOOLS_ES_SPIRALS_H
#define FORGIA_TOOLS_ES_SPIRALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/forgia.h"

#define ES_SPIRALS_HIDDEN 64
#define ES_SPIRALS_DEFAULT_POPULATION 64
#define ES_SPIRALS_DEFAULT_ITERATIONS 500
#define ES_SPIRALS_DEFAULT_ITERATIONS_TERNARY 800 /* trit search is slower */
#define ES_SPIRALS_DEFAULT_TARGET 0.90f
#define ES_SPIRALS_DEFAULT_SEED 1

typedef struct es_spirals_opts {
  uint64_t population;    /* even, >= 2 (antithetic pairs) */
  uint64_t iterations;    /* the iteration to train to (a resumed run continues up to it) */
  uint64_t seed;          /* ignored when resuming: the checkpoint's seed is used */
  bool ternary;
  size_t threads;         /* worker threads for the members (0: one per core, shared by ranks) */
  const char *save_dir;   /* NULL: no checkpoint at the end */
  uint64_t save_every;    /* also save every this many iterations (0: only at the end) */
  const char *resume_dir; /* NULL: from scratch */
  bool quiet;             /* no progress lines */
} es_spirals_opts;

typedef struct es_spirals_result {
  uint64_t first_iteration, iteration;
  double ce;               /* mean cross-entropy after the last update */
  uint32_t correct, total; /* predictions after the last update */
  uint64_t param_hash;     /* FNV-1a 64 of the trained parameters' bytes, in slot order */
  bool interrupted;        /* SIGINT/SIGTERM (util_signal.h) stopped it after a whole iteration */
} es_spirals_result;

/* Trains (or resumes) on dev; comm NULL or of one rank: a single process. Progress goes to
 * stdout on rank 0 unless quiet; only rank 0 saves. A signal caught by util_signal.h (on any
 * rank) stops every rank after the same whole iteration, which is then saved like the end
 * of the run (r->interrupted). FG_OK with *r filled, or a status with fg_last_error() set. */
fg_status es_spirals_run(fg_device *dev, fg_comm *comm, const es_spirals_opts *o, es_spirals_result *r);

#endif
