/* forgia train: the training examples. One task so far, `spirals` (train_spirals.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "train_spirals.h"
#include "util_args.h"
#include "util_output.h"
#include "util_report.h"
#include "util_signal.h"
#include "util_threads.h"

const char fg_cmd_train_summary[] = "train the two-spirals MLP example (GEMM + ops + an optimizer), save and resume";

static const char synopsis[] =
    "forgia train spirals [--optim sgd|adam|adamw|muon|apollo|apollo-mini] [--steps N] [--device D] [--seed S] "
    "[--save DIR] [--save-every K] [--force] [--resume DIR] [--threads N]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "Trains an MLP 2 -> %d -> %d -> 2 (ReLU) to separate two interleaved spirals (%d points),\n"
          "full batch, from scratch: forward and backward passes over the library's exact GEMM and\n"
          "op layer, the update by the chosen optimizer (default adamw). The data and the initial\n"
          "weights follow from the seed (default %d), so a run is the same bits every time and on\n"
          "every device.\n"
          "  --steps N       train up to step N (default %d); a resumed run continues to N\n"
          "  --save DIR      write a checkpoint directory at the end: model.safetensors (the\n"
          "                  state dict), optimizer.fucina (the optimizer's state), trainer_state.json;\n"
          "                  a committed checkpoint already there is replaced only with --force, or\n"
          "                  when --resume names DIR (exit 2 before any work otherwise)\n"
          "  --save-every K  also every K steps into DIR (needs --save)\n"
          "  --force         replace the checkpoint in DIR\n"
          "  --threads N     CPU threads (the problem is small: one by default; the bits do not\n"
          "                  depend on it)\n"
          "  --resume DIR    continue from a checkpoint written by --save (with the same --optim);\n"
          "                  the seed is the checkpoint's. N/2 steps, a save, a resume and N/2 more\n"
          "                  steps give the same bytes as N steps.\n"
          "At the end it prints the loss and accuracy, and checks the inference twin: a constant\n"
          "MLP built fresh that loads the state dict by name must predict the same classes.\n"
          "Exit status 1 when the twin disagrees. SIGINT or SIGTERM stops it after the step in\n"
          "progress, which --save DIR still saves (a second signal cancels that save); the exit\n"
          "status is then 130 or 143.\n",
          synopsis, SPIRALS_HIDDEN, SPIRALS_HIDDEN, 2 * SPIRALS_POINTS_PER_CLASS, SPIRALS_DEFAULT_SEED,
          SPIRALS_DEFAULT_STEPS);
}


int fg_cmd_train(int argc, char **argv) {
  const char *task = NULL, *optim = NULL, *steps = NULL, *device = NULL, *seed = NULL, *save = NULL, *every = NULL,
             *resume = NULL, *threads = NULL;
  bool force = false;
  const fg_cli_opt opts[] = {{"--optim", &optim, NULL},   {"--steps", &steps, NULL}, {"--device", &device, NULL},
                             {"--seed", &seed, NULL},     {"--save", &save, NULL},   {"--save-every", &every, NULL},
                             {"--resume", &resume, NULL}, {"--force", NULL, &force}, {"--threads", &threads, NULL}};
  static const char *const pos_names[] = {"TASK"};
  const fg_cli_spec spec = {"train", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, &task, 1, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  if (strcmp(task, "spirals") != 0) return fg_cli_usage_error(&spec, task, "unknown task (the one task is spirals)");
  spirals_opts o = {.kind = FG_OPTIM_ADAMW, .steps = SPIRALS_DEFAULT_STEPS, .seed = SPIRALS_DEFAULT_SEED};
  if (optim && !spirals_parse_optim(optim, &o.kind))
    return fg_cli_usage_error(&spec, "--optim", "'%s' is not sgd, adam, adamw, muon, apollo or apollo-mini", optim);
  if (steps && !fg_cli_parse_u64(steps, 0, &o.steps))
    return fg_cli_usage_error(&spec, "--steps", "'%s' is not a non-negative integer", steps);
  if (seed && !fg_cli_parse_u64(seed, 0, &o.seed))
    return fg_cli_usage_error(&spec, "--seed", "'%s' is not an integer in 0..2^64-1", seed);
  if (seed && resume) return fg_cli_usage_error(&spec, "--seed", "a resumed run takes the checkpoint's seed");
  if (every && (!fg_cli_parse_u64(every, 0, &o.save_every) || o.save_every == 0))
    return fg_cli_usage_error(&spec, "--save-every", "'%s' is not a positive integer", every);
  if (every && !save) return fg_cli_usage_error(&spec, "--save-every", "needs --save DIR");
  if (force && !save) return fg_cli_usage_error(&spec, "--force", "needs --save DIR");
  unsigned nthreads = 0;
  if ((rc = fg_cli_threads(&spec, threads, &nthreads)) != FG_CLI_GO) return rc;
  o.threads = nthreads;
  if (save && (rc = fg_cli_save_dir_check("train", save, NULL, 0, force, resume)) != 0) return rc;
  o.save_dir = save;
  o.resume_dir = resume;
  fg_device *dev = NULL;
  if (fg_device_open(device ? device : "auto", &dev)) return fg_cli_usage_error(&spec, "--device", "%s", fg_last_error());
  fg_cli_signals_catch();
  spirals_result r;
  fg_status s = spirals_train(dev, &o, &r);
  fg_device_close(dev);
  if (s && fg_cli_signal_caught()) return fg_cli_interrupted("train", save);
  if (!s && r.interrupted) {
    fg_cli_fail("train", NULL, "interrupted by %s after step %llu%s%s", fg_cli_signal_name(),
                (unsigned long long)r.step, save ? ", saved in " : " (nothing saved: no --save)", save ? save : "");
    return fg_cli_signal_caught() == SIGTERM ? 143 : 130;
  }
  if (s) {
    fg_cli_report("train", resume && !save ? resume : NULL);
    return 1;
  }
  if (r.twin_equal != r.total) {
    fg_cli_fail("train", NULL, "the inference twin predicts %u of %u points differently", r.total - r.twin_equal,
                r.total);
    return 1;
  }
  return 0;
}
