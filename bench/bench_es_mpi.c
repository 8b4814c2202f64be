/* Distributed ES scaling: steps per second of fg_es_step_comm on N ranks, one thread each
 * (--threads T for more), against the same bench on one rank:
 *
 *   mpirun -np 1 build/bench/bench_es_mpi                    # prints es_step_comm_1ranks S1
 *   mpirun -np 2 build/bench/bench_es_mpi --baseline S1      # 2 ranks; ratio = speed-up over S1
 *
 * (Open MPI binds each rank to a core; as root it needs --allow-run-as-root.) The 1-rank
 * figure comes from its own run because a rank waiting for rank 0 spins in MPI and would slow
 * a baseline measured beside it. On one rank the bench also times fg_es_step, the
 * single-process driver, as the limit of the communicator path (its overhead).
 *
 * One f32 parameter of --elems elements (default 1M), population --population (32), snapshot
 * restore (--regenerate: regenerate restore, where every rank also applies and removes the
 * other ranks' members, see training/es_comm.c), and an evaluator standing in for a model's
 * forward pass: --passes (8) sweeps over the parameters per member. elements/s counts
 * members x elements evaluated per second. Only the evaluation is divided among ranks:
 * every rank regenerates the whole population's noise for the update, so the speed-up stays
 * below N (Amdahl). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

typedef struct {
  fg_tensor *t;
  int passes;
  fg_es *es;
  fg_comm *comm; /* NULL: fg_es_step */
  fg_status st;
} run_ctx;

/* A stand-in for a forward pass: passes sweeps of a few flops per parameter. */
static fg_status eval(void *ctx, uint64_t member, float *reward) {
  (void)member;
  const run_ctx *c = ctx;
  const float *x = c->t->data;
  const long n = (long)c->t->numel;
  double s = 0;
  for (int p = 0; p < c->passes; p++) {
    const float shift = 0.01f * (float)p;
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (long i = 0; i < n; i++) {
      const float d = x[i] - shift;
      s += (double)(d * d * 0.5f + d);
    }
  }
  *reward = (float)(-s / (double)n);
  return FG_OK;
}

static void run_step(void *p) {
  run_ctx *c = p;
  if (c->st) return;
  c->st = c->comm ? fg_es_step_comm(c->es, c->comm, eval, c, NULL) : fg_es_step(c->es, eval, c, NULL);
}

static void die(int rank, const char *what) {
  fprintf(stderr, "bench_es_mpi (rank %d): %s: %s\n", rank, what, fg_last_error());
  exit(1);
}

static fg_es *make_trainer(fg_device *cpu, uint64_t elems, uint64_t population, bool regenerate, fg_tensor **t) {
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.01f;
  c.population = population;
  c.restore_mode = regenerate ? FG_ES_RESTORE_REGENERATE : FG_ES_RESTORE_SNAPSHOT;
  c.seed = 7;
  fg_es *es = NULL;
  const uint64_t shape[1] = {elems};
  if (fg_tensor_create(cpu, "theta", FG_F32, 1, shape, t) != FG_OK) return NULL;
  float *x = (*t)->data;
  for (uint64_t i = 0; i < elems; i++) x[i] = (float)(i % 1000) * 1e-3f - 0.5f;
  if (fg_es_create(&c, &es) != FG_OK) return NULL;
  if (fg_es_add(es, *t, NULL) != FG_OK) {
    fg_es_free(es);
    return NULL;
  }
  return es;
}

int main(int argc, char **argv) {
  uint64_t elems = 1u << 20, population = 32;
  int passes = 8;
  bool regenerate = false;
  double baseline = 0;
  /* The harness reads --reps, --warmup, --threads (flag-value pairs); the rest is ours. */
  char *hargv[16] = {argv[0]};
  int hargc = 1;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--elems") == 0) elems = strtoull(argv[++i], NULL, 10);
    else if (i + 1 < argc && strcmp(argv[i], "--population") == 0) population = strtoull(argv[++i], NULL, 10);
    else if (i + 1 < argc && strcmp(argv[i], "--passes") == 0) passes = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--baseline") == 0) baseline = strtod(argv[++i], NULL);
    else if (strcmp(argv[i], "--regenerate") == 0) regenerate = true;
    else if (hargc < 15) hargv[hargc++] = argv[i];
  }
  fg_bench b = fg_bench_begin("es_mpi", 0, hargc, hargv);
  bool reps_given = false;
  for (int i = 1; i < hargc; i++) reps_given |= strcmp(hargv[i], "--reps") == 0;
  if (!reps_given) b.reps = 5; /* whole ES steps: fewer repetitions than the harness's default */
  b.warmup = 1;
  omp_set_num_threads(b.threads > 0 ? b.threads : 1);

  fg_comm *comm = NULL;
  if (fg_comm_open(FG_COMM_AUTO, &comm) != FG_OK) die(0, "the communicator");
  const int rank = fg_comm_rank(comm), size = fg_comm_size(comm);
  fg_device *cpu = NULL;
  if (fg_device_open("cpu", &cpu) != FG_OK) die(rank, "fg_device_open");
  const double member_elems = (double)population * (double)elems;

  /* One rank: fg_es_step, the driver without a communicator, as the limit. */
  double t1 = 0;
  if (size == 1) {
    fg_tensor *t = NULL;
    run_ctx c = {.passes = passes};
    c.es = make_trainer(cpu, elems, population, regenerate, &t);
    if (!c.es) die(rank, "the one-process trainer");
    c.t = t;
    t1 = fg_bench_time(&b, run_step, &c);
    if (c.st) die(rank, "fg_es_step");
    fg_es_free(c.es);
    fg_tensor_free(t);
  }

  fg_tensor *t = NULL;
  run_ctx c = {.passes = passes, .comm = comm};
  c.es = make_trainer(cpu, elems, population, regenerate, &t);
  if (!c.es) die(rank, "the distributed trainer");
  c.t = t;
  if (fg_comm_barrier(comm) != FG_OK) die(rank, "fg_comm_barrier");
  const double tn = fg_bench_time(&b, run_step, &c);
  if (c.st) die(rank, "fg_es_step_comm");

  if (rank == 0) {
    char fig[64];
    const double limit = size == 1 ? 1.0 / t1 : baseline;
    const char *limit_name = size == 1 ? "es_step_1proc" : baseline > 0 ? "es_step_comm_1ranks" : "none";
    snprintf(fig, sizeof fig, "es_step_comm_%dranks_steps_per_s", size);
    fg_bench_report(&b, fig, 1.0 / tn, "steps/s", limit_name, limit);
    snprintf(fig, sizeof fig, "es_step_comm_%dranks_elems_per_s", size);
    fg_bench_report(&b, fig, member_elems / tn, "elements/s", limit_name, limit * member_elems);
    printf("# es_mpi: %llu elements, population %llu, %d eval passes, %s restore, %d rank(s) x %d thread(s): %.3f steps/s, "
           "%.4g elements/s",
           (unsigned long long)elems, (unsigned long long)population, passes, regenerate ? "regenerate" : "snapshot", size,
           b.threads > 0 ? b.threads : 1, 1.0 / tn, member_elems / tn);
    if (limit > 0) printf(", %.2fx %s (%.3f steps/s)", 1.0 / (tn * limit), limit_name, limit);
    printf("\n");
  }
  fg_es_free(c.es);
  fg_tensor_free(t);
  fg_device_close(cpu);
  fg_comm_close(comm);
  return 0;
}
