/* forgia es: evolution strategies. `spirals` trains the two-spirals MLP from scratch with no
 * backward pass (es_spirals.h), `replay` reproduces a trajectory from recorded rewards
 * (es_replay.h). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_replay.h"
#include "es_spirals.h"
#include "forgia/forgia.h"
#include "util_args.h"
#include "util_file.h"
#include "util_output.h"
#include "util_report.h"
#include "util_signal.h"
#include "util_threads.h"

const char fg_cmd_es_summary[] = "evolution strategies: train two-spirals without gradients, replay recorded rewards";

static const char synopsis[] = "forgia es spirals [options] | forgia es replay [options]";
static const char spirals_synopsis[] =
    "forgia es spirals [--device D] [--population N] [--target ACC] [--ternary] [--save DIR] [--save-every K] "
    "[--force] [--resume DIR] [--iterations N] [--seed S] [--threads N]";
static const char replay_synopsis[] =
    "forgia es replay --config CONFIG.json --params P.safetensors --rewards R.json --out OUT.safetensors [--in-place] "
    "[--device D] [--threads N]";

static void spirals_text(FILE *f) {
  fprintf(f,
          "Trains the MLP of `forgia train spirals` (2 -> %d -> %d -> 2, ReLU, %d points, the same data\n"
          "and initial weights from the seed) from scratch by evolution strategies: no backward pass.\n"
          "Every iteration each member of the population (antithetic pairs) is written into a\n"
          "worker's replica, scored by a forward pass (reward: minus the mean cross-entropy), and\n"
          "the update moves the parameters by the z-scored rewards times the regenerated noise.\n"
          "Self-verifying: exit status 1 when the final accuracy is below the target.\n"
          "  --population N  members per iteration, even (default %d)\n"
          "  --iterations N  train up to iteration N (default %d, %d with --ternary); a resumed run\n"
          "                  continues to N\n"
          "  --target ACC    the accuracy to reach, 0..1 (default %.2f)\n"
          "  --ternary       fc2 is a ternary genome (TQ2_0: trits times a fixed scale) trained by\n"
          "                  trit flips and the vote-and-threshold update\n"
          "  --seed S        data, initial weights and noise (default %d)\n"
          "  --threads N     worker threads (default: the cores, shared among MPI ranks); the\n"
          "                  result does not depend on it\n"
          "  --save DIR      write a checkpoint directory at the end (model.safetensors,\n"
          "                  trainer_state.json with the ES state); a committed checkpoint already\n"
          "                  there is replaced only with --force, or when --resume names DIR\n"
          "  --save-every K  also every K iterations into DIR (needs --save)\n"
          "  --force         replace the checkpoint in DIR\n"
          "  --resume DIR    continue from it (same --population and --ternary; the seed is the\n"
          "                  checkpoint's): K iterations, a save, a resume to N give the bits of N\n"
          "Under mpirun (`mpirun -np 2 forgia es spirals`) each rank evaluates its share of the\n"
          "population and every rank applies the same update: the result is a single process's.\n"
          "Only rank 0 prints and saves. It prints the final accuracy and an FNV-1a hash of the\n"
          "trained parameters' bytes. SIGINT or SIGTERM stops every rank after the same whole\n"
          "iteration, which --save DIR still saves (a second signal cancels that save); the exit\n"
          "status is then 130 or 143.\n",
          ES_SPIRALS_HIDDEN, ES_SPIRALS_HIDDEN, 200, ES_SPIRALS_DEFAULT_POPULATION,
          ES_SPIRALS_DEFAULT_ITERATIONS, ES_SPIRALS_DEFAULT_ITERATIONS_TERNARY, (double)ES_SPIRALS_DEFAULT_TARGET, ES_SPIRALS_DEFAULT_SEED);
}

static void replay_text(FILE *f) {
  fprintf(f,
          "Registers the tensors of P named by the config's \"params\" list, in that order (f32, f16\n"
          "or bf16), captures them as the anchor when anchor decay is on, then applies one ES update\n"
          "per reward vector of R and writes the parameters, under their names and in their dtypes,\n"
          "to OUT (atomically). The noise is regenerated from the seed, so this reproduces any run of\n"
          "the same config and initial parameters, Fucina's included, from its recorded rewards.\n"
          "  --in-place  before each update, perturb and restore every member in order, as a run\n"
          "              that evaluated its members in place did (a regenerating restore leaves a\n"
          "              rounding the rewards do not record); without it the run is taken to have\n"
          "              used replicas (fg_es_materialize) or snapshot restores\n"
          "  --device D  where the parameters live (default cpu); the bits are the same\n"
          "  --threads N CPU worker threads (the bits do not depend on it)\n"
          "OUT must not be an input (exit 2 before any work).\n\n"
          "CONFIG.json, the seed's field and enum names; absent fields take the defaults:\n"
          "  {\"sigma\": 0.001, \"alpha\": (absent: sigma/2), \"population\": 30, \"antithetic\": false,\n"
          "   \"noise\": \"iid|correlated\", \"restore_mode\": \"regenerate|snapshot\",\n"
          "   \"reward_norm\": \"z_score|centered_ranks|none\", \"anchor_decay\": \"none|l1|l2\",\n"
          "   \"anchor_lambda\": X, \"cache_streams\": false, \"ternary_flip_rate\": 0.001,\n"
          "   \"ternary_update_fraction\": 0.005, \"ternary_update_decay\": 0, \"seed\": 42,\n"
          "   \"params\": [\"name\", ...]}\n"
          "The seed is read exactly from its digits (any u64), or from a decimal string.\n"
          "R.json: [[r_0, ..., r_{population-1}], ...], one array per iteration, finite numbers.\n");
}

static void spirals_usage(FILE *f) {
  fprintf(f, "usage: %s\n\n", spirals_synopsis);
  spirals_text(f);
}

static void replay_usage(FILE *f) {
  fprintf(f, "usage: %s\n\n", replay_synopsis);
  replay_text(f);
}

/* `forgia help es`: one usage line per task, then each task's text under its name. */
static void usage(FILE *f) {
  fprintf(f, "usage: %s\n       %s\n\nforgia es spirals:\n", spirals_synopsis, replay_synopsis);
  spirals_text(f);
  fputs("\nforgia es replay:\n", f);
  replay_text(f);
}


static int spirals(int argc, char **argv) {
  const char *device = NULL, *population = NULL, *target = NULL, *save = NULL, *resume = NULL, *iterations = NULL,
             *seed = NULL, *threads = NULL, *every = NULL;
  bool ternary = false, force = false;
  const fg_cli_opt opts[] = {{"--device", &device, NULL},         {"--population", &population, NULL},
                             {"--target", &target, NULL},         {"--ternary", NULL, &ternary},
                             {"--save", &save, NULL},             {"--resume", &resume, NULL},
                             {"--iterations", &iterations, NULL}, {"--seed", &seed, NULL},
                             {"--threads", &threads, NULL},       {"--save-every", &every, NULL},
                             {"--force", NULL, &force}};
  const fg_cli_spec spec = {"es", spirals_synopsis, spirals_usage, opts, sizeof opts / sizeof opts[0], NULL, NULL, 0, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  es_spirals_opts o = {.population = ES_SPIRALS_DEFAULT_POPULATION,
                       .iterations = ternary ? ES_SPIRALS_DEFAULT_ITERATIONS_TERNARY : ES_SPIRALS_DEFAULT_ITERATIONS,
                       .seed = ES_SPIRALS_DEFAULT_SEED,
                       .ternary = ternary,
                       .save_dir = save,
                       .resume_dir = resume};
  double tgt = ES_SPIRALS_DEFAULT_TARGET;
  uint64_t nthreads = 0;
  if (population && (!fg_cli_parse_u64(population, 10, &o.population) || o.population < 2 || o.population % 2))
    return fg_cli_usage_error(&spec, "--population", "'%s' is not an even integer >= 2 (antithetic pairs)", population);
  if (iterations && !fg_cli_parse_u64(iterations, 10, &o.iterations))
    return fg_cli_usage_error(&spec, "--iterations", "'%s' is not a non-negative integer", iterations);
  if (seed && !fg_cli_parse_u64(seed, 10, &o.seed))
    return fg_cli_usage_error(&spec, "--seed", "'%s' is not an integer in 0..2^64-1", seed);
  if (seed && resume) return fg_cli_usage_error(&spec, "--seed", "a resumed run takes the checkpoint's seed");
  if (threads && (!fg_cli_parse_u64(threads, 10, &nthreads) || nthreads == 0 || nthreads > 64))
    return fg_cli_usage_error(&spec, "--threads", "'%s' is not an integer in 1..64", threads);
  o.threads = (size_t)nthreads;
  if (target) {
    char *end;
    errno = 0;
    tgt = strtod(target, &end);
    if (errno || *end || !(tgt >= 0.0 && tgt <= 1.0))
      return fg_cli_usage_error(&spec, "--target", "'%s' is not an accuracy in 0..1", target);
  }
  if (every && (!fg_cli_parse_u64(every, 10, &o.save_every) || o.save_every == 0))
    return fg_cli_usage_error(&spec, "--save-every", "'%s' is not a positive integer", every);
  if (every && !save) return fg_cli_usage_error(&spec, "--save-every", "needs --save DIR");
  if (force && !save) return fg_cli_usage_error(&spec, "--force", "needs --save DIR");
  if (save && (rc = fg_cli_save_dir_check("es", save, NULL, 0, force, resume)) != 0) return rc;
  fg_device *dev = NULL;
  if (fg_device_open(device ? device : "auto", &dev)) return fg_cli_usage_error(&spec, "--device", "%s", fg_last_error());
  fg_cli_signals_catch();
  fg_comm *comm = NULL;
  if (fg_comm_open(FG_COMM_AUTO, &comm)) {
    fg_cli_report("es", NULL);
    fg_device_close(dev);
    return 1;
  }
  es_spirals_result r;
  fg_status s = es_spirals_run(dev, comm, &o, &r);
  const bool lead = fg_comm_rank(comm) == 0;
  fg_comm_close(comm);
  fg_device_close(dev);
  if (s) {
    if (fg_cli_signal_caught()) return fg_cli_interrupted("es", NULL);
    fg_cli_report("es", resume && !save ? resume : NULL);
    return 1;
  }
  if (r.interrupted) {
    /* a rank that saw no signal of its own stopped with the one that did */
    if (lead)
      fg_cli_fail("es", NULL, "interrupted by %s after iteration %llu%s%s", fg_cli_signal_name(),
                (unsigned long long)r.iteration, save ? ", saved in " : " (nothing saved: no --save)", save ? save : "");
    return fg_cli_signal_caught() == SIGTERM ? 143 : 130;
  }
  const double acc = r.correct / (double)r.total;
  if (acc < tgt) {
    if (lead) {
      printf("FAIL: accuracy %.3f is below the target %.3f\n", acc, tgt);
      fg_cli_fail("es", NULL, "accuracy %.3f is below the target %.3f", acc, tgt);
    }
    return 1;
  }
  if (lead) printf("PASS: gradient-free training from scratch reached accuracy %.3f (target %.3f)\n", acc, tgt);
  return 0;
}

static int replay(int argc, char **argv) {
  const char *config = NULL, *params = NULL, *rewards = NULL, *out = NULL, *device = NULL, *threads = NULL;
  bool in_place = false;
  const fg_cli_opt opts[] = {{"--config", &config, NULL}, {"--params", &params, NULL}, {"--rewards", &rewards, NULL},
                             {"--out", &out, NULL},       {"--device", &device, NULL}, {"--in-place", NULL, &in_place},
                             {"--threads", &threads, NULL}};
  const fg_cli_spec spec = {"es", replay_synopsis, replay_usage, opts, sizeof opts / sizeof opts[0], NULL, NULL, 0, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  const char *missing = !config ? "--config" : !params ? "--params" : !rewards ? "--rewards" : !out ? "--out" : NULL;
  if (missing) return fg_cli_usage_error(&spec, missing, "missing");
  if ((rc = fg_cli_threads(&spec, threads, NULL)) != FG_CLI_GO) return rc;
  const char *inputs[] = {config, params, rewards};
  if ((rc = fg_cli_output_check("es", out, inputs, sizeof inputs / sizeof inputs[0])) != 0) return rc;
  /* A configuration over 64 MiB or a reward log over 1 GiB is not one. */
  uint8_t *text = NULL;
  size_t len = 0;
  if (fg_cli_read_file(config, (size_t)64 << 20, &text, &len)) {
    fg_cli_report("es", config);
    return 1;
  }
  es_replay_config c;
  char why[1024];
  const bool ok = es_replay_config_parse((const char *)text, &c, why, sizeof why);
  free(text);
  if (!ok) {
    fg_cli_fail("es", config, "%s", why);
    return 1;
  }
  float *r = NULL;
  size_t iters = 0;
  fg_status s = fg_cli_read_file(rewards, (size_t)1 << 30, &text, &len);
  if (!s) {
    s = es_replay_rewards_parse((const char *)text, rewards, c.c.population, &r, &iters);
    free(text);
  }
  if (s) {
    fg_cli_report("es", rewards);
    es_replay_config_free(&c);
    return 1;
  }
  fg_device *dev = NULL;
  if (fg_device_open(device ? device : "cpu", &dev)) {
    rc = fg_cli_usage_error(&spec, "--device", "%s", fg_last_error());
    free(r);
    es_replay_config_free(&c);
    return rc;
  }
  char spec_name[32];
  snprintf(spec_name, sizeof spec_name, "%s", fg_device_spec(dev));
  fg_cli_signals_catch();
  s = es_replay_run(dev, &c, params, r, iters, in_place, rewards, out);
  const size_t ntensors = c.nparams;
  const uint64_t pop = c.c.population;
  fg_device_close(dev);
  free(r);
  es_replay_config_free(&c);
  if (s && fg_cli_signal_caught()) return fg_cli_interrupted("es", out);
  if (s) {
    fg_cli_report("es", NULL);
    return 1;
  }
  printf("replayed %zu iteration%s of population %llu over %zu tensor%s on %s: wrote %s\n", iters,
         iters == 1 ? "" : "s", (unsigned long long)pop, ntensors, ntensors == 1 ? "" : "s", spec_name, out);
  return 0;
}

int fg_cmd_es(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "spirals") == 0) return spirals(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "replay") == 0) return replay(argc - 1, argv + 1);
  const fg_cli_spec spec = {"es", synopsis, usage, NULL, 0, NULL, NULL, 0, 0, 0};
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    return 0;
  }
  if (argc < 2) return fg_cli_usage_error(&spec, "TASK", "missing (spirals or replay)");
  return fg_cli_usage_error(&spec, argv[1], "unknown task (spirals or replay)");
}
