/* The ES two-spirals example (es_spirals.h): model, replicas, member evaluation, the
 * training loop, checkpoints. */
#include "es_spirals.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forgia/ckpt_dir.h"
#include "forgia/elem/es_trits.h"
#include "forgia/elem/half.h"
#include "forgia/es.h"
#include "forgia/registry.h"
#include "forgia/rng.h"
#include "train_spirals_net.h"
#include "util_signal.h"

#define H ES_SPIRALS_HIDDEN
#define N SPIRALS_POINTS
#define N_PARAMS 6
#define FC2 2 /* the layer that becomes a ternary genome under --ternary */
#define GENOME_ELEMS ((uint64_t)H * H)
#define SEED_PARAM0 1 /* parameter i's initial values come from fg_rng_at(seed, SEED_PARAM0 + i) */

/* The names, layout and initialisation of `forgia train spirals`, so that a checkpoint's
 * model.safetensors reads the same way for both examples. */
static const char *const param_names[N_PARAMS] = {"fc1.weight", "fc1.bias", "fc2.weight",
                                                  "fc2.bias",   "fc3.weight", "fc3.bias"};
static const uint64_t param_shapes[N_PARAMS][2] = {{H, 2}, {H, 0}, {H, H}, {H, 0}, {2, H}, {2, 0}};
static const uint64_t param_fan_in[N_PARAMS] = {2, 2, H, H, H, H};

/* Settings that train this net from scratch in a few hundred iterations at a population of
 * 64 (sigma and alpha; found by a sweep over seeds), and for the genome the ternary knobs
 * (8 flips per member and 8 moves per update on its 4096 trits). The genome's block scale d is fixed: uniform
 * trits have E[t^2] = 2/3, so d = 1/sqrt(fan_in * 2/3) preserves the activations' variance;
 * three times that (Fucina's es_ternary_spirals default) lets one flip move enough of the
 * function to leave the early plateau. */
#define FLOAT_SIGMA 0.1f
#define FLOAT_ALPHA 0.3f
#define TERNARY_SIGMA 0.1f
#define TERNARY_ALPHA 0.2f
#define TERNARY_FLIP_RATE 0.002f
#define TERNARY_UPDATE_FRACTION 0.002f
#define TERNARY_D_SCALE 3.0f

typedef struct model {
  fg_tensor *p[N_PARAMS]; /* in param_names' order; under ternary p[FC2] holds the decoded genome */
  fg_tensor *genome;      /* ternary: TQ2_0, GENOME_ELEMS codes of fc2.weight; else NULL */
} model;

typedef struct worker {
  fg_stream *s; /* its own: the CPU's exact GEMM works in the stream's scratch */
  model m;      /* the replica a member is materialized into */
  fg_tensor *h1, *h2, *logits;
  float host_logits[2 * N];
} worker;

typedef struct shared {
  fg_device *dev;
  fg_es *es;
  bool ternary;
  fg_tensor *x, *ones;
  int32_t labels[N];
  worker *w;
  size_t nworkers;
  uint64_t first, count; /* this rank's share of the population */
} shared;

static float ternary_d(void) {
  /* Rounded to f16 once: the value the blocks carry is the value the decoder multiplies by. */
  const float d = TERNARY_D_SCALE / sqrtf((float)H * 2.0f / 3.0f);
  return fg_f16_to_f32(fg_f32_to_f16(d));
}

static fg_status new_tensor(fg_device *dev, const char *name, uint64_t rows, uint64_t cols, fg_tensor **out) {
  const uint64_t shape[2] = {rows, cols};
  return fg_tensor_create(dev, name, FG_F32, cols ? 2 : 1, shape, out);
}

static void model_free(model *m) {
  for (int i = 0; i < N_PARAMS; i++) fg_tensor_free(m->p[i]);
  fg_tensor_free(m->genome);
  memset(m, 0, sizeof *m);
}

/* Packs trits t[e] in {-1, 0, 1} into TQ2_0 blocks of scale d. */
static void pack_trits(const int8_t *t, uint64_t n, float d, uint8_t *blocks) {
  const uint16_t dh = fg_f32_to_f16(d);
  memset(blocks, 0, (size_t)(n / FG_TRIT_BLOCK_ELEMS * FG_TRIT_BLOCK_BYTES));
  for (uint64_t b = 0; b < n / FG_TRIT_BLOCK_ELEMS; b++) {
    blocks[b * FG_TRIT_BLOCK_BYTES + 64] = (uint8_t)(dh & 0xffu);
    blocks[b * FG_TRIT_BLOCK_BYTES + 65] = (uint8_t)(dh >> 8);
  }
  for (uint64_t e = 0; e < n; e++) fg_trit_set(blocks, e, (uint8_t)(t[e] + 1));
}

/* Uniform random trits from the parameter's stream: floor of uniform [0, 3), minus one. */
static fg_status init_genome(fg_tensor *g, uint64_t seed) {
  float u[GENOME_ELEMS];
  int8_t t[GENOME_ELEMS];
  uint8_t blocks[GENOME_ELEMS / FG_TRIT_BLOCK_ELEMS * FG_TRIT_BLOCK_BYTES];
  const fg_rng_spec r = {.kind = FG_RNG_UNIFORM, .seed = fg_rng_at(seed, SEED_PARAM0 + FC2), .lo = 0.0f, .hi = 3.0f};
  fg_status s = fg_rng_fill_host(&r, u, GENOME_ELEMS);
  if (s) return s;
  for (uint64_t e = 0; e < GENOME_ELEMS; e++) t[e] = (int8_t)((u[e] < 1.0f ? 0 : u[e] < 2.0f ? 1 : 2) - 1);
  pack_trits(t, GENOME_ELEMS, ternary_d(), blocks);
  return fg_tensor_upload(g, blocks, sizeof blocks, NULL);
}

/* The genome back from its decoded values (a resumed checkpoint's fc2.weight), which must be
 * -d, 0 or +d exactly: anything else is not a genome this example wrote. */
static fg_status repack_genome(model *m, const char *source) {
  float v[GENOME_ELEMS];
  int8_t t[GENOME_ELEMS];
  uint8_t blocks[GENOME_ELEMS / FG_TRIT_BLOCK_ELEMS * FG_TRIT_BLOCK_BYTES];
  fg_status s = fg_tensor_download(m->p[FC2], v, sizeof v, NULL);
  if (s) return s;
  const float d = ternary_d();
  for (uint64_t e = 0; e < GENOME_ELEMS; e++) {
    if (v[e] == d) t[e] = 1;
    else if (v[e] == -d) t[e] = -1;
    else if (v[e] == 0.0f) t[e] = 0;
    else
      return fg_fail(FG_ERR_INVALID_ARG,
                     "%s: fc2.weight[%llu] is %.9g, not a trit times the genome scale %.9g (not a --ternary "
                     "checkpoint?)",
                     source, (unsigned long long)e, v[e], d);
  }
  pack_trits(t, GENOME_ELEMS, d, blocks);
  return fg_tensor_upload(m->genome, blocks, sizeof blocks, NULL);
}

/* The parameters, zero-filled; with seed, initialised as `forgia train spirals` does (each
 * from its own stream: Kaiming-uniform, torch's Linear init) and the genome as uniform trits. */
static fg_status model_init(model *m, fg_device *dev, bool ternary, const uint64_t *seed) {
  memset(m, 0, sizeof *m);
  fg_status s = FG_OK;
  for (int i = 0; i < N_PARAMS && !s; i++) {
    s = new_tensor(dev, param_names[i], param_shapes[i][0], param_shapes[i][1], &m->p[i]);
    if (!s && seed && !(ternary && i == FC2)) {
      const fg_rng_spec r = {.kind = FG_RNG_KAIMING, .seed = fg_rng_at(*seed, SEED_PARAM0 + (uint64_t)i),
                             .fan_in = param_fan_in[i]};
      s = fg_rng_fill_tensor(m->p[i], &r, NULL);
    }
  }
  if (!s && ternary) {
    const uint64_t n = GENOME_ELEMS;
    s = fg_tensor_create(dev, "fc2.weight.trits", FG_TQ2_0, 1, &n, &m->genome);
    if (!s && seed) s = init_genome(m->genome, *seed);
  }
  if (s) model_free(m);
  return s;
}

/* The float tensors that are ES slots, in registration order. */
static size_t float_slots(const model *m, bool ternary, fg_tensor **out) {
  size_t n = 0;
  for (int i = 0; i < N_PARAMS; i++)
    if (!(ternary && i == FC2)) out[n++] = m->p[i];
  return n;
}

static void worker_free(worker *w) {
  model_free(&w->m);
  fg_tensor_free(w->h1);
  fg_tensor_free(w->h2);
  fg_tensor_free(w->logits);
  fg_stream_free(w->s);
  memset(w, 0, sizeof *w);
}

static fg_status worker_init(worker *w, fg_device *dev, bool ternary) {
  memset(w, 0, sizeof *w);
  fg_status s = fg_stream_create(dev, &w->s);
  if (!s) s = model_init(&w->m, dev, ternary, NULL);
  if (!s) s = new_tensor(dev, "h1", N, H, &w->h1);
  if (!s) s = new_tensor(dev, "h2", N, H, &w->h2);
  if (!s) s = new_tensor(dev, "logits", N, 2, &w->logits);
  if (s) worker_free(w);
  return s;
}

/* The logits of model m on worker w's buffers and stream, into w->host_logits. */
static fg_status forward(const shared *sh, worker *w, const model *m) {
  fg_device *dev = sh->dev;
  fg_stream *st = w->s;
  const float *x = sh->x->data, *ones = sh->ones->data;
  fg_status s = FG_OK;
  if (m->genome) s = fg_convert(dev, m->p[FC2]->data, FG_F32, m->genome->data, FG_TQ2_0, GENOME_ELEMS, st);
  if (!s) s = spirals_linear(dev, st, x, 2, m->p[0]->data, m->p[1]->data, ones, w->h1->data, H, true);
  if (!s) s = spirals_linear(dev, st, w->h1->data, H, m->p[2]->data, m->p[3]->data, ones, w->h2->data, H, true);
  if (!s) s = spirals_linear(dev, st, w->h2->data, H, m->p[4]->data, m->p[5]->data, ones, w->logits->data, 2, false);
  if (!s) s = fg_tensor_download(w->logits, w->host_logits, sizeof w->host_logits, st);
  if (!s) s = fg_stream_sync(st);
  return s;
}

/* One member's reward on one worker: its parameters written into the worker's replica, a
 * forward pass, minus the mean cross-entropy. Members outside this rank's share are another
 * rank's: their slot is left at 0 and overwritten by the all-gather. */
static fg_status eval_member(void *ctx, size_t wi, uint64_t member, float *reward) {
  shared *sh = ctx;
  if (member < sh->first || member >= sh->first + sh->count) {
    *reward = 0.0f;
    return FG_OK;
  }
  /* A worker thread's own OpenMP setting: the forward is far too small to fan out again. */
  omp_set_num_threads(1);
  worker *w = &sh->w[wi];
  fg_tensor *dst[N_PARAMS];
  const size_t n = float_slots(&w->m, sh->ternary, dst);
  fg_status s = fg_es_materialize(sh->es, member, dst, n);
  if (!s && sh->ternary) s = fg_es_materialize_ternary(sh->es, member, &w->m.genome, 1);
  if (!s) s = forward(sh, w, &w->m);
  if (s) return s;
  double ce;
  uint32_t correct;
  spirals_loss(w->host_logits, sh->labels, &ce, &correct, NULL);
  *reward = (float)-ce;
  return FG_OK;
}

/* The trained model's loss and accuracy, on worker 0's buffers (no member is in flight). */
static fg_status score(shared *sh, const model *m, double *ce, uint32_t *correct) {
  fg_status s = forward(sh, &sh->w[0], m);
  if (!s) spirals_loss(sh->w[0].host_logits, sh->labels, ce, correct, NULL);
  return s;
}

/* FNV-1a 64 over the bytes of the slots, float ones in order, then the genome. */
static fg_status param_hash(const model *m, bool ternary, uint64_t *out) {
  fg_tensor *t[N_PARAMS + 1];
  size_t n = float_slots(m, ternary, t);
  if (m->genome) t[n++] = m->genome;
  uint64_t h = 0xcbf29ce484222325ull;
  uint8_t buf[H * H * sizeof(float)];
  for (size_t i = 0; i < n; i++) {
    fg_status s = fg_tensor_download(t[i], buf, (size_t)t[i]->nbytes, NULL);
    if (s) return s;
    for (uint64_t k = 0; k < t[i]->nbytes; k++) h = (h ^ buf[k]) * 0x100000001b3ull;
  }
  *out = h;
  return FG_OK;
}

/* The all-gather of rewards across ranks. */
typedef struct gather {
  fg_comm *comm;
  int ranks;
  uint64_t *counts; /* per rank: its share of the population */
  uint64_t *ones;   /* per rank: 1 */
  float *all;       /* max(population, ranks) values */
} gather;

/* One iteration: this rank's members over the workers, the rewards gathered in member order
 * (every rank's status first, so that a failure on one rank stops all of them instead of
 * leaving the others waiting in the gather), then the update every rank applies alike. */
static fg_status iterate(shared *sh, gather *g, float *rewards, bool *stop) {
  const uint64_t pop = fg_es_config_of(sh->es)->population;
  fg_status s = fg_es_evaluate_members(sh->es, eval_member, sh, rewards, (size_t)pop, sh->nworkers);
  *stop = false;
  if (g->ranks > 1) {
    /* a status, or -1 for a signal pending on that rank: all stop after the same update */
    const float mine = s ? (float)s : fg_cli_signal_caught() ? -1.0f : 0.0f;
    fg_status c = fg_comm_allgather_f32(g->comm, &mine, g->ones, g->all);
    if (c) return c;
    for (int r = 0; r < g->ranks; r++) {
      if (g->all[r] > 0.0f && !s) return fg_fail(FG_ERR_STATE, "es spirals: rank %d failed to evaluate its members", r);
      if (g->all[r] < 0.0f) *stop = true;
    }
    if (s) return s;
    c = fg_comm_allgather_f32(g->comm, rewards + sh->first, g->counts, g->all);
    if (c) return c;
    memcpy(rewards, g->all, (size_t)pop * sizeof *rewards);
  }
  if (s) return s;
  s = fg_es_update(sh->es, rewards, (size_t)pop, NULL);
  if (g->ranks <= 1) *stop = fg_cli_signal_caught() != 0;
  return s;
}

static fg_es_config es_config(const es_spirals_opts *o, uint64_t seed) {
  fg_es_config c = fg_es_defaults();
  c.sigma = o->ternary ? TERNARY_SIGMA : FLOAT_SIGMA;
  c.has_alpha = true;
  c.alpha = o->ternary ? TERNARY_ALPHA : FLOAT_ALPHA;
  c.population = o->population;
  c.antithetic = true; /* mirrored sampling: pairs (+eps, -eps) halve the update's variance */
  c.reward_norm = FG_ES_REWARD_Z_SCORE;
  c.ternary_flip_rate = TERNARY_FLIP_RATE;
  c.ternary_update_fraction = TERNARY_UPDATE_FRACTION;
  c.seed = seed;
  return c;
}

/* model.safetensors (every layer as f32: the genome decoded, which a resume packs back
 * losslessly) and trainer_state.json with the ES fields. */
static fg_status save(const char *dir, shared *sh, model *m, const fg_registry *reg) {
  fg_status s = FG_OK;
  if (m->genome) s = fg_convert(sh->dev, m->p[FC2]->data, FG_F32, m->genome->data, FG_TQ2_0, GENOME_ELEMS, NULL);
  fg_registry_snapshot snap;
  memset(&snap, 0, sizeof snap);
  if (!s) s = fg_registry_snapshot_take(reg, false, &snap);
  fg_trainer_state ts;
  fg_trainer_state_init(&ts);
  if (!s) s = fg_es_to_trainer_state(sh->es, &ts);
  if (!s) {
    ts.step = fg_es_iteration(sh->es);
    s = fg_ckpt_dir_save(dir, FG_CKPT_DIR_MODEL, snap.entries, snap.n, NULL, 0, &ts);
  }
  fg_registry_snapshot_free(&snap);
  return s;
}

/* The checkpoint's weights into the registered tensors (and the genome), then its ES state:
 * fg_es_from_trainer_state checks sigma, alpha, population and the noise knobs against this
 * run's and sets the iteration. */
static fg_status resume(const fg_ckpt_dir *d, shared *sh, model *m, const fg_registry *reg) {
  const char *dir = fg_ckpt_dir_path(d);
  const fg_trainer_state *ts = fg_ckpt_dir_trainer_state(d);
  if (ts->es_ternary_flip_rate.set != sh->ternary)
    return fg_fail(FG_ERR_FRAME_CONFIG_MISMATCH, "%s: the checkpoint was trained %s, this run %s --ternary", dir,
                   ts->es_ternary_flip_rate.set ? "as a ternary genome" : "in float", sh->ternary ? "with" : "without");
  const char *path = fg_ckpt_dir_weights_path(d, FG_CKPT_DIR_MODEL);
  if (!path) return fg_fail(FG_ERR_NOT_FOUND, "%s: no model.safetensors", dir);
  fg_status s = fg_registry_load_file(reg, path, NULL, NULL);
  if (!s && m->genome) s = repack_genome(m, path);
  if (!s) s = fg_es_from_trainer_state(sh->es, ts);
  if (s) fg_fail_prefix(s, "%s: ", dir);
  return s;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static fg_status run(fg_device *dev, fg_comm *comm, const es_spirals_opts *o, es_spirals_result *r);

/* The main thread's OpenMP team is pinned to one thread for the run, as in train_spirals.c:
 * every kernel here is a few thousand elements, and the workers are the parallelism. */
fg_status es_spirals_run(fg_device *dev, fg_comm *comm, const es_spirals_opts *o, es_spirals_result *r) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  fg_status s = run(dev, comm, o, r);
  omp_set_num_threads(threads);
  return s;
}

static fg_status run(fg_device *dev, fg_comm *comm, const es_spirals_opts *o, es_spirals_result *r) {
  memset(r, 0, sizeof *r);
  r->total = N;
  const int rank = comm ? fg_comm_rank(comm) : 0, ranks = comm ? fg_comm_size(comm) : 1;
  const bool talk = !o->quiet && rank == 0;
  fg_ckpt_dir *ck = NULL;
  uint64_t seed = o->seed;
  fg_status s = FG_OK;
  if (o->resume_dir) {
    s = fg_ckpt_dir_open(o->resume_dir, &ck);
    if (s) return s;
    seed = fg_ckpt_dir_trainer_state(ck)->seed;
  }
  shared sh;
  memset(&sh, 0, sizeof sh);
  sh.dev = dev;
  sh.ternary = o->ternary;
  model m;
  memset(&m, 0, sizeof m);
  fg_registry *reg = NULL;
  gather g = {.comm = comm, .ranks = ranks};
  float *rewards = NULL;
  float xy[2 * N];
  const fg_es_config cfg = es_config(o, seed);

  s = spirals_make_data(seed, xy, sh.labels);
  if (!s) s = new_tensor(dev, "x", N, 2, &sh.x);
  if (!s) s = new_tensor(dev, "ones", N, 0, &sh.ones);
  if (!s) s = fg_tensor_upload(sh.x, xy, sizeof xy, NULL);
  if (!s) {
    float ones[N];
    for (int i = 0; i < N; i++) ones[i] = 1.0f;
    s = fg_tensor_upload(sh.ones, ones, sizeof ones, NULL);
  }
  if (!s) s = model_init(&m, dev, o->ternary, &seed);
  if (!s) {
    fg_registry_entry table[N_PARAMS];
    for (int i = 0; i < N_PARAMS; i++) table[i] = (fg_registry_entry){param_names[i], m.p[i], !(o->ternary && i == FC2)};
    s = fg_registry_create(table, N_PARAMS, &reg);
  }
  if (!s) s = fg_es_create(&cfg, &sh.es);
  if (!s) {
    if (o->ternary) {
      fg_tensor *t[N_PARAMS];
      const size_t n = float_slots(&m, true, t);
      for (size_t i = 0; i < n && !s; i++) s = fg_es_add(sh.es, t[i], NULL);
      if (!s) s = fg_es_add_ternary(sh.es, m.genome, "fc2.weight");
    } else {
      size_t added = 0;
      s = fg_es_add_registry(sh.es, reg, &added);
    }
  }
  if (!s && ck) s = resume(ck, &sh, &m, reg);
  uint64_t it = s ? 0 : fg_es_iteration(sh.es);
  if (!s && it > o->iterations)
    s = fg_fail(FG_ERR_INVALID_ARG, "%s: the checkpoint is at iteration %llu, past --iterations %llu", o->resume_dir,
                (unsigned long long)it, (unsigned long long)o->iterations);
  r->first_iteration = it;

  /* Workers: --threads, else this rank's share of the cores; never more than its members. */
  if (!s) {
    fg_comm_share(cfg.population, rank, ranks, &sh.first, &sh.count);
    size_t nw = o->threads;
    if (!nw) {
      const int procs = omp_get_num_procs();
      nw = procs / ranks > 0 ? (size_t)(procs / ranks) : 1;
    }
    if (nw > sh.count) nw = sh.count ? (size_t)sh.count : 1;
    sh.w = calloc(nw, sizeof *sh.w);
    rewards = calloc((size_t)cfg.population, sizeof *rewards);
    g.counts = calloc((size_t)ranks, sizeof *g.counts);
    g.ones = calloc((size_t)ranks, sizeof *g.ones);
    g.all = calloc((size_t)(cfg.population > (uint64_t)ranks ? cfg.population : (uint64_t)ranks), sizeof *g.all);
    if (!sh.w || !rewards || !g.counts || !g.ones || !g.all) s = fg_fail(FG_ERR_NOMEM, "es spirals: out of memory");
    for (size_t i = 0; i < nw && !s; i++) {
      s = worker_init(&sh.w[i], dev, o->ternary);
      if (!s) sh.nworkers = i + 1;
    }
    for (int k = 0; k < ranks && !s; k++) {
      uint64_t first;
      fg_comm_share(cfg.population, k, ranks, &first, &g.counts[k]);
      g.ones[k] = 1;
    }
  }

  double ce = 0;
  uint32_t correct = 0;
  if (!s) s = score(&sh, &m, &ce, &correct);
  if (!s && talk) {
    printf("es spirals: %s on %s, %d points, MLP 2-%d-%d-2 (relu), %llu parameters%s\n",
           o->ternary ? "ternary fc2 genome (TQ2_0)" : "float", fg_device_spec(dev), N, H, H,
           (unsigned long long)fg_es_element_count(sh.es), o->ternary ? " (fc2 as trits)" : "");
    printf("  population %llu (antithetic), sigma %g, alpha %g, z-score rewards, seed %llu, iterations %llu..%llu, "
           "%zu worker%s x %d rank%s\n",
           (unsigned long long)cfg.population, (double)cfg.sigma, (double)fg_es_alpha_value(sh.es),
           (unsigned long long)seed, (unsigned long long)it, (unsigned long long)o->iterations, sh.nworkers,
           sh.nworkers == 1 ? "" : "s", ranks, ranks == 1 ? "" : "s");
    printf("  iteration %5llu: accuracy %.3f, ce %.4f\n", (unsigned long long)it, correct / (double)N, ce);
    fflush(stdout);
  }
  const uint64_t every = o->iterations / 10 ? o->iterations / 10 : 1;
  const double t0 = now_s();
  const uint64_t it0 = it;
  while (!s && it < o->iterations) {
    bool stop;
    s = iterate(&sh, &g, rewards, &stop);
    if (s) break;
    it++;
    if (stop) {
      r->interrupted = true;
      break;
    }
    if (o->save_dir && o->save_every && it % o->save_every == 0 && it != o->iterations && rank == 0)
      s = save(o->save_dir, &sh, &m, reg);
    if (!s && talk && (it % every == 0 || it == o->iterations)) {
      s = score(&sh, &m, &ce, &correct);
      if (s) break;
      printf("  iteration %5llu: accuracy %.3f, ce %.4f\n", (unsigned long long)it, correct / (double)N, ce);
      fflush(stdout);
    }
  }
  const double secs = now_s() - t0;
  /* an interrupted run is saved too: the state after a whole iteration is consistent; only
   * a second signal cancels this save */
  if (r->interrupted) fg_cli_signals_grace();
  if (!s && o->save_dir && rank == 0) s = save(o->save_dir, &sh, &m, reg);
  if (!s) s = score(&sh, &m, &r->ce, &r->correct);
  if (!s) s = param_hash(&m, o->ternary, &r->param_hash);
  r->iteration = it;
  if (!s && talk) {
    if (it > it0)
      printf("time: %.2f s for %llu iterations (%.2f ms each)\n", secs, (unsigned long long)(it - it0),
             1e3 * secs / (double)(it - it0));
    printf("final: iteration %llu, ce %.4f, accuracy %.3f (%u/%u)\n", (unsigned long long)it, r->ce,
           r->correct / (double)N, r->correct, N);
    printf("params: fnv1a64 %016llx\n", (unsigned long long)r->param_hash);
    if (o->save_dir) printf("saved %s (iteration %llu)\n", o->save_dir, (unsigned long long)it);
  }
  for (size_t i = 0; i < sh.nworkers; i++) worker_free(&sh.w[i]);
  free(sh.w);
  free(rewards);
  free(g.counts);
  free(g.ones);
  free(g.all);
  fg_es_free(sh.es);
  fg_registry_free(reg);
  model_free(&m);
  fg_tensor_free(sh.x);
  fg_tensor_free(sh.ones);
  fg_ckpt_dir_close(ck);
  return s;
}
