/* forgia es-finetune: LoRA adapters on a frozen language model, or every weight of a dense one,
 * trained by evolution strategies (no gradients): each iteration, every member of the
 * population perturbs the parameters, scores the iteration's batch (tools/es_reward.h), and
 * the parameters move along the reward-weighted noise (forgia/es.h). Under mpirun the ranks share
 * the population (fg_es_step_comm): the bits of one process. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "forgia/ckpt_dir.h"
#include "forgia/comm.h"
#include "forgia/es.h"
#include "forgia/lm_adapters.h"
#include "forgia/lm_full.h"
#include "es_reward.h"
#include "ft_data.h"
#include "ft_run.h"
#include "util_args.h"
#include "util_chat.h"
#include "util_lm.h"
#include "util_output.h"
#include "util_progress.h"
#include "util_report.h"
#include "util_signal.h"

const char fg_cmd_es_finetune_summary[] = "train LoRA adapters or all weights by evolution strategies (no gradients)";

static const char synopsis[] =
    "forgia es-finetune MODEL --data F [--format text|jsonl|chat] [--template NAME] [--reward nll|acc|rule] "
    "[--max-new N] [--format-prefix S] [--format-suffix S] [--mode lora|full] [--lora-rank R] [--lora-alpha A] [--targets LIST] [--population N] [--sigma S] [--alpha A] "
    "[--antithetic] [--iterations N] [--batch B] [--ctx N] [--seed S] [--shuffle] [--save DIR] [--force] "
    "[--resume DIR] [--metrics M.jsonl] [--quiet] [--device D] [--gemm exact|fast] [--threads N]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "The gradient-free twin of `forgia finetune`: LoRA adapters (A from the seed, B zero) on the\n"
          "chosen projections of MODEL, or every weight of an f32/f16/bf16 MODEL, trained by evolution\n"
          "strategies. Each iteration takes the next --batch sequences of the data (formats as in\n"
          "finetune), evaluates every member of the population (parameters + sigma * noise) on them,\n"
          "and moves the parameters by alpha / N times the noise weighted by the members' z-scored\n"
          "rewards.\n"
          "  --reward R       nll (default): minus the mean NLL of the targets (unbounded); acc: the\n"
          "                   fraction of targets that are their logits' argmax + 0.1 exp(-mean NLL);\n"
          "                   rule: greedy generations from each example's prompt (the tokens before\n"
          "                   its first target, at most --max-new N tokens, default 20): the unigram F1\n"
          "                   of their words against the targets', + 0.1 when a generation starts with\n"
          "                   --format-prefix S and ends with --format-suffix S (when given)\n"
          "  --mode M         lora (default): the adapters, on any base; full: every weight (embedding,\n"
          "                   projections, norms) of an f32/f16/bf16 model, saved as model.safetensors\n"
          "                   (forgia export --weights puts them back into the GGUF)\n"
          "  --population N   members (default 16); --sigma S (0.01); --alpha A (sigma / 2);\n"
          "                   --antithetic: mirrored pairs (N even)\n"
          "  --iterations N   (default 50); --batch B sequences per iteration (default 1)\n"
          "  --lora-rank R (8), --lora-alpha A (16), --targets LIST (default all), --ctx N (512),\n"
          "  --seed S (42), --shuffle, --save DIR, --force, --resume DIR, --metrics M (a JSON line per\n"
          "                   iteration: iteration, reward mean/max, seconds), as in finetune\n"
          "  --gemm exact|fast (default fast): the projections' arithmetic; exact gives the same bits on\n"
          "                   every device and thread count; --device D, --threads N as in eval\n"
          "Under mpirun the ranks share each iteration's population; rank 0 writes.\n",
          synopsis);
}

int fg_cmd_es_finetune(int argc, char **argv) {
  const char *path = NULL, *data = NULL, *format = NULL, *tmpl = NULL, *reward = NULL, *mode = NULL, *rank = NULL,
             *lalpha = NULL, *targets = NULL, *pop = NULL, *sigma = NULL, *alpha = NULL, *iters = NULL,
             *batch = NULL, *ctx = NULL, *seed = NULL, *save = NULL, *resume = NULL, *metrics = NULL, *device = NULL,
             *gemm = NULL, *threads = NULL, *max_new = NULL, *prefix = NULL, *suffix = NULL;
  bool antithetic = false, shuffle = false, force = false, quiet = false;
  const fg_cli_opt opts[] = {
      {"--data", &data, NULL},         {"--format", &format, NULL},    {"--template", &tmpl, NULL},
      {"--reward", &reward, NULL},     {"--mode", &mode, NULL},        {"--lora-rank", &rank, NULL},
      {"--lora-alpha", &lalpha, NULL}, {"--targets", &targets, NULL},  {"--population", &pop, NULL},
      {"--sigma", &sigma, NULL},       {"--alpha", &alpha, NULL},      {"--antithetic", NULL, &antithetic},
      {"--iterations", &iters, NULL},  {"--batch", &batch, NULL},      {"--ctx", &ctx, NULL},
      {"--seed", &seed, NULL},         {"--shuffle", NULL, &shuffle},  {"--save", &save, NULL},
      {"--force", NULL, &force},       {"--resume", &resume, NULL},    {"--metrics", &metrics, NULL},
      {"--quiet", NULL, &quiet},       {"--device", &device, NULL},    {"--gemm", &gemm, NULL},
      {"--threads", &threads, NULL},   {"--max-new", &max_new, NULL},  {"--format-prefix", &prefix, NULL},
      {"--format-suffix", &suffix, NULL}};
  static const char *const pos_names[] = {"MODEL"};
  const fg_cli_spec spec = {"es-finetune", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, &path, 1, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  const char *cmd = "es-finetune";
  fg_lm_adapters_config ac = {.targets = FG_LM_ADAPTERS_ALL, .lora = {.rank = 8, .alpha = 16.0f}, .seed = 42};
  fg_es_config ec = fg_es_defaults();
  ec.sigma = 0.01f;
  ec.population = 16;
  ft_format fmt = FT_TEXT;
  uint64_t n_ctx = 512, n_iter = 50, n_batch = 1, v = 0;
  if (!data) return fg_cli_usage_error(&spec, "--data", "missing: the training data");
  if (format && !ft_format_parse(format, &fmt)) return fg_cli_usage_error(&spec, "--format", "'%s': expected text, jsonl or chat", format);
  if (tmpl && fmt != FT_CHAT) return fg_cli_usage_error(&spec, "--template", "goes with --format chat");
  es_reward_kind rk = ES_REWARD_NLL;
  if (reward && !es_reward_parse(reward, &rk))
    return fg_cli_usage_error(&spec, "--reward", "'%s': expected nll, acc or rule", reward);
  uint64_t n_new = 20;
  if (max_new && (!fg_cli_parse_u64(max_new, 10, &n_new) || !n_new || n_new > 65536))
    return fg_cli_usage_error(&spec, "--max-new", "'%s': expected 1..65536 tokens", max_new);
  if ((max_new || prefix || suffix) && rk != ES_REWARD_RULE)
    return fg_cli_usage_error(&spec, max_new ? "--max-new" : prefix ? "--format-prefix" : "--format-suffix",
                              "goes with --reward rule");
  bool full = false;
  if (mode && strcmp(mode, "lora") && !(full = !strcmp(mode, "full")))
    return fg_cli_usage_error(&spec, "--mode", "'%s': expected lora or full", mode);
  if (full && (rank || lalpha || targets))
    return fg_cli_usage_error(&spec, "--mode", "full evolves the weights themselves: not with --lora-* or --targets");
  if (rank && (!fg_cli_parse_u64(rank, 10, &v) || v < 1 || v > 65536))
    return fg_cli_usage_error(&spec, "--lora-rank", "'%s': expected 1..65536", rank);
  if (rank) ac.lora.rank = (uint32_t)v;
  char *end = NULL;
  if (lalpha && ((ac.lora.alpha = strtof(lalpha, &end)), end == lalpha || *end || !isfinite(ac.lora.alpha)))
    return fg_cli_usage_error(&spec, "--lora-alpha", "'%s': expected a finite number", lalpha);
  if (targets && !ft_targets_parse(targets, &ac.targets))
    return fg_cli_usage_error(&spec, "--targets", "'%s': expected a comma list of q, k, v, o, gate, up, down", targets);
  if (pop && (!fg_cli_parse_u64(pop, 10, &ec.population) || ec.population < 2))
    return fg_cli_usage_error(&spec, "--population", "'%s': expected 2 or more", pop);
  if (sigma && ((ec.sigma = strtof(sigma, &end)), end == sigma || *end || !(ec.sigma > 0.0f) || !isfinite(ec.sigma)))
    return fg_cli_usage_error(&spec, "--sigma", "'%s': expected a positive number", sigma);
  if (alpha && ((ec.alpha = strtof(alpha, &end)), end == alpha || *end || !(ec.alpha > 0.0f) || !isfinite(ec.alpha)))
    return fg_cli_usage_error(&spec, "--alpha", "'%s': expected a positive number", alpha);
  ec.has_alpha = alpha != NULL;
  ec.antithetic = antithetic;
  if (antithetic && ec.population % 2) return fg_cli_usage_error(&spec, "--antithetic", "needs an even --population");
  if (iters && !fg_cli_parse_u64(iters, 10, &n_iter)) return fg_cli_usage_error(&spec, "--iterations", "'%s': expected a count", iters);
  if (batch && (!fg_cli_parse_u64(batch, 10, &n_batch) || !n_batch || n_batch > 65536))
    return fg_cli_usage_error(&spec, "--batch", "'%s': expected 1..65536", batch);
  if (ctx && (!fg_cli_parse_u64(ctx, 10, &n_ctx) || n_ctx < 2 || n_ctx > ((uint64_t)1 << 20)))
    return fg_cli_usage_error(&spec, "--ctx", "'%s': expected 2..1048576 tokens", ctx);
  if (seed && !fg_cli_parse_u64(seed, 0, &ac.seed)) return fg_cli_usage_error(&spec, "--seed", "'%s': expected an integer", seed);
  if (force && !save) return fg_cli_usage_error(&spec, "--force", "needs --save DIR");
  fg_gemm_mode gm = FG_GEMM_FAST;
  if ((rc = fg_cli_lm_parse(&spec, gemm, threads, &gm)) != FG_CLI_GO) return rc;
  if (save && (rc = fg_cli_save_dir_check(cmd, save, NULL, 0, force, resume)) != 0) return rc;
  uint64_t data_seed = ac.seed;
  if (resume) {
    fg_ckpt_dir *d = NULL;
    if (fg_ckpt_dir_open(resume, &d)) return fg_cli_report(cmd, resume), 1;
    const fg_trainer_state *ts = fg_ckpt_dir_trainer_state(d);
    ac.seed = ts->seed;
    if (ts->lora_rank.set) ac.lora.rank = (uint32_t)ts->lora_rank.v;
    if (ts->lora_alpha.set) ac.lora.alpha = (float)ts->lora_alpha.v;
    data_seed = ts->data_seed.set ? ts->data_seed.v : ts->seed;
    /* a checkpoint of every weight resumes as --mode full */
    if ((fg_ckpt_dir_weights_present(d) & FG_CKPT_DIR_MODEL) && !(fg_ckpt_dir_weights_present(d) & FG_CKPT_DIR_ADAPTERS))
      full = true;
    fg_ckpt_dir_close(d);
  }
  ec.seed = ac.seed;
  fg_cli_lm m;
  if ((rc = fg_cli_lm_open(&spec, path, device, gemm, threads, &m)) != FG_CLI_GO) return rc;
  rc = 0;
  ac.mode = m.mode;
  const fg_tokenizer *tok = fg_lm_tokenizer(m.lm);
  fg_cli_chat pick = {0};
  ft_data train = {0};
  fg_lm_adapters *ad = NULL;
  fg_lm_full *fw = NULL;
  fg_es *es = NULL;
  fg_comm *comm = NULL;
  FILE *mf = NULL;
  es_ctx ctxs = {.lm = m.lm, .data = &train, .kind = rk, .n_batch = (size_t)n_batch, .max_new = (size_t)n_new,
                 .prefix = prefix, .suffix = suffix};
  size_t *bidx = calloc((size_t)n_batch, sizeof *bidx);
  ft_cursor cur = {0};
  uint64_t it = 0;
  if (!bidx) rc = (fg_cli_fail(cmd, NULL, "out of memory"), 1);
  if (!rc && !tok) rc = (fg_cli_fail(cmd, path, "the checkpoint has no tokenizer"), 1);
  if (!rc && fmt == FT_CHAT && fg_cli_chat_pick(cmd, path, tmpl, &pick)) rc = 1;
  if (!rc) rc = ft_data_load(cmd, data, fmt, tok, &pick, (size_t)n_ctx, &train);
  if (!rc && n_batch > train.n)
    rc = (fg_cli_fail(cmd, data, "--batch %llu is more than its %zu sequences", (unsigned long long)n_batch, train.n), 1);
  if (!rc) {
    cur = (ft_cursor){.seed = data_seed, .n = train.n, .shuffle = shuffle};
    cur.order = malloc(train.n * sizeof *cur.order);
    if (!cur.order) rc = (fg_cli_fail(cmd, NULL, "out of memory"), 1);
    else ft_cursor_order(&cur);
  }
  size_t max_n = 0;
  for (size_t i = 0; !rc && i < train.n; i++)
    if (train.ex[i].n > max_n) max_n = train.ex[i].n;
  if (!rc && rk != ES_REWARD_NLL &&
      fg_lm_cache_create(m.lm, 1, max_n + (rk == ES_REWARD_RULE ? (size_t)n_new : 0), &ctxs.cache))
    rc = (fg_cli_report(cmd, NULL), 1);
  if (!rc && (fg_comm_open(FG_COMM_AUTO, &comm) || fg_es_create(&ec, &es) ||
              (full ? fg_lm_full_create(m.lm, 0, &fw) : fg_lm_adapters_create(m.lm, &ac, &ad))))
    rc = (fg_cli_report(cmd, full ? path : NULL), 1);
  const fg_lora_slot *slots = NULL;
  const size_t nslots = rc || full ? 0 : fg_lm_adapters_slots(ad, &slots);
  fg_tensor *const *fps = NULL;
  const size_t nfull = rc || !full ? 0 : fg_lm_full_params(fw, &fps, NULL);
  for (size_t i = 0; !rc && i < nfull; i++)
    if (fg_es_add(es, fps[i], fps[i]->name)) rc = (fg_cli_report(cmd, NULL), 1);
  for (size_t i = 0; !rc && i < nslots; i++) {
    char a[FG_LORA_NAME_MAX], b[FG_LORA_NAME_MAX], prefix[64];
    snprintf(prefix, sizeof prefix, "layers.%u.%s", (unsigned)slots[i].layer, fg_lora_target_name(slots[i].target));
    if (fg_lora_names(prefix, a, b) || fg_es_add(es, slots[i].lora->a, a) || fg_es_add(es, slots[i].lora->b, b))
      rc = (fg_cli_report(cmd, NULL), 1);
  }
  if (!rc && resume) {
    fg_ckpt_dir *d = NULL;
    fg_status st = fg_ckpt_dir_open(resume, &d);
    const fg_trainer_state *ts = st ? NULL : fg_ckpt_dir_trainer_state(d);
    if (!st && !(fg_ckpt_dir_weights_present(d) & (full ? FG_CKPT_DIR_MODEL : FG_CKPT_DIR_ADAPTERS)))
      st = fg_fail(FG_ERR_NOT_FOUND, "no %s (not a --mode %s checkpoint)",
                   full ? FG_CKPT_DIR_MODEL_FILE : FG_CKPT_DIR_ADAPTERS_FILE, full ? "full" : "lora");
    if (!st)
      st = full ? ft_weights_load(fps, nfull, d) : fg_lm_adapters_load(ad, fg_ckpt_dir_weights_path(d, FG_CKPT_DIR_ADAPTERS));
    if (!st) st = fg_es_from_trainer_state(es, ts);
    if (!st && ts->data_epoch.set && ts->data_index.set && ts->data_index.v < cur.n) {
      cur.epoch = ts->data_epoch.v;
      ft_cursor_order(&cur);
      cur.index = ts->data_index.v;
    }
    if (!st) it = ts->es_iteration.set ? ts->es_iteration.v : 0;
    fg_ckpt_dir_close(d);
    if (st) rc = (fg_cli_report(cmd, resume), 1);
  }
  const bool lead = !comm || fg_comm_rank(comm) == 0;
  if (!rc && lead && metrics && !(mf = fopen(metrics, resume ? "a" : "w")))
    rc = (fg_cli_fail(cmd, metrics, "cannot open for writing"), 1);
  char what[96];
  if (full) snprintf(what, sizeof what, "%zu weights (%.1f M parameters)", nfull, rc ? 0.0 : (double)fg_es_element_count(es) / 1e6);
  else snprintf(what, sizeof what, "%zu adapters of rank %u", nslots, (unsigned)ac.lora.rank);
  if (!rc && !quiet && lead)
    fprintf(stderr, "%s: %s, population %llu x %d rank(s), sigma %g, reward %s, %zu sequences (%zu targets), "
            "iterations %llu..%llu\n", cmd, what, (unsigned long long)ec.population, fg_comm_size(comm),
            (double)ec.sigma, es_reward_name(rk), train.n, train.targets, (unsigned long long)it,
            (unsigned long long)n_iter);
  fg_cli_progress p;
  fg_cli_progress_init(&p, quiet || !lead, "iterations", n_iter > it ? n_iter - it : 0, 0);
  const uint64_t it0 = it;
  float first_mean = NAN, last_mean = NAN;
  if (!rc) {
    fg_cli_signals_catch();
    if (ad) fg_lm_adapters_attach(ad, true);
  }
  while (!rc && it < n_iter) {
    for (size_t i = 0; i < n_batch; i++) bidx[i] = ft_cursor_next(&cur);
    ctxs.batch = bidx;
    fg_es_stats stats;
    const double t0 = fg_clock_seconds();
    if (fg_es_step_comm(es, comm, es_member_reward, &ctxs, &stats)) {
      fg_cli_progress_clear(&p);
      rc = (fg_cli_report(cmd, NULL), 1);
      break;
    }
    it++;
    if (it == it0 + 1) first_mean = (float)stats.mean_reward;
    last_mean = (float)stats.mean_reward;
    if (mf) {
      fprintf(mf, "{\"iteration\": %llu, \"reward_mean\": %.9g, \"reward_max\": %.9g, \"seconds\": %.6f}\n",
              (unsigned long long)it, (double)stats.mean_reward, (double)stats.max_reward, fg_clock_seconds() - t0);
      fflush(mf);
    }
    char detail[96];
    snprintf(detail, sizeof detail, "reward mean %.4f, max %.4f", (double)stats.mean_reward, (double)stats.max_reward);
    fg_cli_progress_update(&p, it - it0, 0, NULL, 0, detail);
    if (fg_cli_signal_caught()) break;
  }
  fg_cli_progress_clear(&p);
  if (ad) fg_lm_adapters_attach(ad, false);
  if (!rc && save && lead) {
    fg_trainer_state ts;
    fg_trainer_state_init(&ts);
    ts.seed = ac.seed;
    ts.step = it;
    if (!full) {
      FG_TRAINER_STATE_SET(ts, lora_rank, ac.lora.rank);
      FG_TRAINER_STATE_SET(ts, lora_alpha, ac.lora.alpha);
    }
    FG_TRAINER_STATE_SET(ts, data_seed, cur.seed);
    FG_TRAINER_STATE_SET(ts, data_epoch, cur.epoch);
    FG_TRAINER_STATE_SET(ts, data_index, cur.index);
    if (fg_es_to_trainer_state(es, &ts) ||
        (full ? ft_weights_save(fps, nfull, save, NULL, 0, &ts) : ft_ckpt_save(ad, save, NULL, 0, &ts)))
      rc = (fg_cli_report(cmd, save), 1);
  }
  if (!rc && lead)
    printf("es-finetune: iterations %llu..%llu, mean reward %.4f -> %.4f%s%s\n", (unsigned long long)it0,
           (unsigned long long)it, (double)first_mean, (double)last_mean, save ? ", saved in " : "", save ? save : "");
  if (!rc && fg_cli_signal_caught()) rc = fg_cli_signal_caught() == SIGTERM ? 143 : 130;
  if (mf && fclose(mf) && !rc) rc = (fg_cli_fail(cmd, metrics, "write failed"), 1);
  fg_es_free(es);
  fg_lm_adapters_free(ad);
  fg_lm_full_free(fw);
  fg_lm_cache_free(ctxs.cache);
  fg_comm_close(comm);
  free(cur.order);
  free(bidx);
  ft_data_free(&train);
  fg_cli_chat_free(&pick);
  fg_cli_lm_close(&m);
  return rc;
}
