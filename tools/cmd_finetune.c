/* forgia finetune: LoRA adapters trained on a frozen language model (GGUF or HF folder), or
 * every weight of a dense one (--full). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/ckpt_dir.h"
#include "forgia/comm.h"
#include "forgia/trainer_state.h"
#include "ft_data.h"
#include "ft_run.h"
#include "util_args.h"
#include "util_chat.h"
#include "util_lm.h"
#include "util_output.h"
#include "util_progress.h"
#include "util_report.h"
#include "util_signal.h"

const char fg_cmd_finetune_summary[] = "train LoRA adapters on a language model, or all its weights (text, JSONL or chat data)";

static const char synopsis[] =
    "forgia finetune MODEL --data F [--format text|jsonl|chat] [--template NAME] [--lora-rank R] [--lora-alpha A] "
    "[--lora-dropout P] [--targets LIST] [--full [--freeze LIST]] [--weight-decay X] [--optim sgd|adam|adamw|muon|apollo|apollo-mini] [--lr X] "
    "[--schedule constant|cosine|linear] [--warmup N] [--clip X] [--steps N | --epochs E] [--batch B] [--ctx N] "
    "[--accum K] [--seed S] [--shuffle] [--save DIR] [--save-every K] [--force] [--resume DIR] [--eval-file F] "
    "[--eval-every K] [--metrics M.jsonl] [--quiet] [--device D] [--mode exact|fast] [--threads N]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "Trains LoRA adapters (y = x W^T + alpha/rank * x A^T B^T, A from the seed, B zero) on the\n"
          "chosen projections of every layer of MODEL, a GGUF file or a Hugging Face folder of a llama,\n"
          "qwen2, qwen3 or gemma3 model, kept frozen in the dtype its file holds (quantized included).\n"
          "The loss of a step is the mean next-token cross-entropy over the targets of its batch.\n"
          "  --data F          training data; --format (default text):\n"
          "                      text   the file, tokenized as one text, cut into consecutive windows of\n"
          "                             --ctx tokens (the last, shorter one kept)\n"
          "                      jsonl  one {\"text\": ...} per line, each cut the same way\n"
          "                      chat   one {\"messages\": [{\"role\", \"content\"}, ...]} per line, rendered\n"
          "                             by the model's chat template (--template as in generate); the loss\n"
          "                             is on the assistants' tokens only\n"
          "  --lora-rank R     adapter rank (default 8); --lora-alpha A (default 16); --lora-dropout P (0)\n"
          "  --targets LIST    projections with adapters, from q,k,v,o,gate,up,down (default all)\n"
          "  --full            train every weight instead (an f32, f16 or bf16 model: `forgia export\n"
          "                    --dtype f32` makes one of a quantized file); 16-bit weights step through\n"
          "                    f32 masters the optimizer keeps. --freeze LIST leaves out weight kinds\n"
          "                    (token_embd, output, output_norm, attn_norm, attn_q, attn_k, attn_v,\n"
          "                    attn_output, attn_q.bias, ..., ffn_gate, ffn_up, ffn_down, or norms)\n"
          "  --weight-decay X  the optimizer's decay (adamw default 0.01); with --full, SGD, Adam and\n"
          "                    AdamW keep norms and biases in a second param group without decay\n"
          "  --optim O         default adamw; --lr X (default 1e-4); --clip X: gradient-norm clipping\n"
          "  --schedule S      constant (default), cosine or linear decay to 0, after --warmup N steps\n"
          "  --steps N         optimizer steps (default 100); or --epochs E: E passes over the data\n"
          "  --batch B         sequences per micro-batch (default 1); --accum K micro-batches per step\n"
          "  --ctx N           tokens per sequence (default 512)\n"
          "  --seed S          adapters, dropout and data order (default 42); --shuffle: a new order\n"
          "                    each epoch (default: the file's order)\n"
          "  --save DIR        a checkpoint directory at the end: adapters.safetensors (layers.<i>.\n"
          "                    <target>.lora_a/lora_b) or, with --full, model.safetensors (the\n"
          "                    weights under the model file's names), optimizer.fucina, trainer_state.json (seed, LoRA\n"
          "                    shape, data cursor); --steps 0 writes the initial adapters. A committed\n"
          "                    checkpoint is replaced only with --force or when --resume names DIR\n"
          "  --save-every K    also every K steps (needs --save)\n"
          "  --resume DIR      continue a run saved by --save with the same options: its adapters,\n"
          "                    optimizer state, data cursor, seed and LoRA shape; the result is the\n"
          "                    bytes of one uninterrupted run\n"
          "  --eval-file F     a text scored (mean NLL, windows of --ctx) every --eval-every K steps\n"
          "                    (default: at the end)\n"
          "  --metrics M       one JSON line per step: {\"step\", \"loss\", \"tokens\", \"lr\", \"seconds\"\n"
          "                    [, \"eval_loss\"]}\n"
          "  --device D, --mode exact|fast (default fast), --threads N: as in eval; exact mode gives\n"
          "                    the same bits on every device and thread count\n"
          "Under mpirun (-np N, N dividing --batch x --accum) the ranks share each step's sequences\n"
          "and sum their gradients in sequence order: the bytes of one process; rank 0 writes.\n"
          "The adapters serve through `forgia eval|generate|chat MODEL --adapters DIR`, or merged by\n"
          "`forgia export --from-gguf MODEL --adapters DIR --alpha A --out MERGED.gguf`; --full\n"
          "weights by `forgia export --from-gguf MODEL --weights DIR --out TRAINED.gguf`. SIGINT or\n"
          "SIGTERM stops after the step in progress, which --save still saves (exit 130 or 143).\n",
          synopsis);
}

static bool parse_f(const char *s, double lo, double hi, float *out) {
  char *end = NULL;
  const double v = s ? strtod(s, &end) : NAN;
  if (!s || end == s || *end || !isfinite(v) || v < lo || v > hi) return false;
  *out = (float)v;
  return true;
}

static bool parse_schedule(const char *s, fg_lr_kind *k) {
  if (!strcmp(s, "constant")) *k = FG_LR_CONSTANT;
  else if (!strcmp(s, "cosine")) *k = FG_LR_WARMUP_COSINE;
  else if (!strcmp(s, "linear")) *k = FG_LR_WARMUP_LINEAR;
  else return false;
  return true;
}

/* --freeze: weight kind names (fg_lm_weight_kind_name) and "norms", comma separated. */
static bool parse_freeze(const char *list, uint32_t *out) {
  uint32_t bits = 0;
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, ',');
    const size_t n = e ? (size_t)(e - p) : strlen(p);
    bool ok = false;
    if (n == 5 && !strncmp(p, "norms", 5)) {
      const fg_lm_weight norms[] = {FG_LM_W_OUT_NORM, FG_LM_W_ATTN_NORM, FG_LM_W_Q_NORM, FG_LM_W_K_NORM,
                                    FG_LM_W_POST_ATTN_NORM, FG_LM_W_FFN_NORM, FG_LM_W_POST_FFN_NORM};
      for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) bits |= FG_LM_FULL_FREEZE(norms[i]);
      ok = true;
    }
    for (int k = 0; k < FG_LM_W_COUNT && !ok; k++) {
      const char *name = fg_lm_weight_kind_name((fg_lm_weight)k);
      if (strlen(name) == n && !strncmp(p, name, n)) {
        bits |= FG_LM_FULL_FREEZE(k);
        ok = true;
      }
    }
    if (!ok) return false;
    p += n;
    if (*p == ',' && !*++p) return false;
  }
  *out = bits;
  return bits != 0;
}

static bool parse_optim(const char *name, fg_optim_kind *out) {
  for (int k = FG_OPTIM_SGD; k <= FG_OPTIM_APOLLO_MINI; k++) {
    const char *n = fg_optim_kind_name((fg_optim_kind)k);
    if (n && !strcmp(n, name)) {
      *out = (fg_optim_kind)k;
      return true;
    }
  }
  return false;
}

int fg_cmd_finetune(int argc, char **argv) {
  const char *path = NULL, *data = NULL, *format = NULL, *tmpl = NULL, *rank = NULL, *alpha = NULL, *dropout = NULL,
             *targets = NULL, *optim = NULL, *lr = NULL, *schedule = NULL, *warmup = NULL, *clip = NULL, *steps = NULL,
             *epochs = NULL, *batch = NULL, *ctx = NULL, *accum = NULL, *seed = NULL, *save = NULL, *every = NULL,
             *resume = NULL, *eval_file = NULL, *eval_every = NULL, *metrics = NULL, *device = NULL, *mode = NULL,
             *threads = NULL, *freeze = NULL, *wd = NULL;
  bool shuffle = false, force = false, quiet = false, full = false;
  const fg_cli_opt opts[] = {
      {"--data", &data, NULL},         {"--format", &format, NULL},       {"--template", &tmpl, NULL},
      {"--lora-rank", &rank, NULL},    {"--lora-alpha", &alpha, NULL},    {"--lora-dropout", &dropout, NULL},
      {"--targets", &targets, NULL},   {"--optim", &optim, NULL},         {"--lr", &lr, NULL},
      {"--schedule", &schedule, NULL}, {"--warmup", &warmup, NULL},       {"--clip", &clip, NULL},
      {"--steps", &steps, NULL},       {"--epochs", &epochs, NULL},       {"--batch", &batch, NULL},
      {"--ctx", &ctx, NULL},           {"--accum", &accum, NULL},         {"--seed", &seed, NULL},
      {"--shuffle", NULL, &shuffle},   {"--save", &save, NULL},           {"--save-every", &every, NULL},
      {"--force", NULL, &force},       {"--resume", &resume, NULL},       {"--eval-file", &eval_file, NULL},
      {"--eval-every", &eval_every, NULL}, {"--metrics", &metrics, NULL}, {"--quiet", NULL, &quiet},
      {"--device", &device, NULL},     {"--mode", &mode, NULL},           {"--threads", &threads, NULL},
      {"--full", NULL, &full},         {"--freeze", &freeze, NULL},       {"--weight-decay", &wd, NULL}};
  static const char *const pos_names[] = {"MODEL"};
  const fg_cli_spec spec = {"finetune", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, &path, 1, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  const char *cmd = "finetune";
  ft_opts o = {.ad = {.targets = FG_LM_ADAPTERS_ALL, .lora = {.rank = 8, .alpha = 16.0f, .dropout_p = 0.0f}, .seed = 42},
               .optim = FG_OPTIM_ADAMW, .lr = 1e-4f, .steps = 100, .batch = 1, .accum = 1, .quiet = quiet,
               .full = full, .weight_decay = -1.0f, .shuffle = shuffle};
  ft_format fmt = FT_TEXT;
  uint64_t n_ctx = 512, v = 0, n_epochs = 0;
  if (!data) return fg_cli_usage_error(&spec, "--data", "missing: the training data");
  if (format && !ft_format_parse(format, &fmt)) return fg_cli_usage_error(&spec, "--format", "'%s': expected text, jsonl or chat", format);
  if (tmpl && fmt != FT_CHAT) return fg_cli_usage_error(&spec, "--template", "goes with --format chat");
  if (rank && (!fg_cli_parse_u64(rank, 10, &v) || v < 1 || v > 65536))
    return fg_cli_usage_error(&spec, "--lora-rank", "'%s': expected 1..65536", rank);
  if (rank) o.ad.lora.rank = (uint32_t)v;
  if (alpha && !parse_f(alpha, -1e30, 1e30, &o.ad.lora.alpha))
    return fg_cli_usage_error(&spec, "--lora-alpha", "'%s': expected a finite number", alpha);
  if (dropout && (!parse_f(dropout, 0.0, 1.0, &o.ad.lora.dropout_p) || o.ad.lora.dropout_p >= 1.0f))
    return fg_cli_usage_error(&spec, "--lora-dropout", "'%s': expected 0 <= p < 1", dropout);
  if (targets && !ft_targets_parse(targets, &o.ad.targets))
    return fg_cli_usage_error(&spec, "--targets", "'%s': expected a comma list of q, k, v, o, gate, up, down", targets);
  if (full && (rank || alpha || dropout || targets))
    return fg_cli_usage_error(&spec, "--full", "trains the weights themselves: not with --lora-* or --targets");
  if (freeze && !full) return fg_cli_usage_error(&spec, "--freeze", "goes with --full");
  if (freeze && !parse_freeze(freeze, &o.frozen))
    return fg_cli_usage_error(&spec, "--freeze", "'%s': expected a comma list of weight kinds (token_embd, output, "
                              "attn_q, ffn_down, norms, ...)", freeze);
  if (wd && (!parse_f(wd, 0.0, 1e6, &o.weight_decay)))
    return fg_cli_usage_error(&spec, "--weight-decay", "'%s': expected a number >= 0", wd);
  if (optim && !parse_optim(optim, &o.optim))
    return fg_cli_usage_error(&spec, "--optim", "'%s' is not sgd, adam, adamw, muon, apollo or apollo-mini", optim);
  if (lr && (!parse_f(lr, 0.0, 1e6, &o.lr) || !(o.lr > 0.0f)))
    return fg_cli_usage_error(&spec, "--lr", "'%s': expected a positive number", lr);
  o.schedule.kind = FG_LR_CONSTANT;
  if (schedule && !parse_schedule(schedule, &o.schedule.kind))
    return fg_cli_usage_error(&spec, "--schedule", "'%s': expected constant, cosine or linear", schedule);
  if (warmup && !fg_cli_parse_u64(warmup, 10, &o.schedule.warmup_steps))
    return fg_cli_usage_error(&spec, "--warmup", "'%s': expected a step count", warmup);
  if (warmup && o.schedule.kind == FG_LR_CONSTANT)
    return fg_cli_usage_error(&spec, "--warmup", "goes with --schedule cosine or linear");
  if (clip && (!parse_f(clip, 0.0, 1e30, &o.clip) || !(o.clip > 0.0f)))
    return fg_cli_usage_error(&spec, "--clip", "'%s': expected a positive norm", clip);
  if (steps && epochs) return fg_cli_usage_error(&spec, "--epochs", "give --steps or --epochs, not both");
  if (steps && !fg_cli_parse_u64(steps, 10, &o.steps))
    return fg_cli_usage_error(&spec, "--steps", "'%s': expected a step count", steps);
  if (epochs && (!fg_cli_parse_u64(epochs, 10, &n_epochs) || !n_epochs))
    return fg_cli_usage_error(&spec, "--epochs", "'%s': expected a positive count", epochs);
  if (batch && (!fg_cli_parse_u64(batch, 10, &o.batch) || !o.batch || o.batch > 65536))
    return fg_cli_usage_error(&spec, "--batch", "'%s': expected 1..65536", batch);
  if (accum && (!fg_cli_parse_u64(accum, 10, &o.accum) || !o.accum || o.accum > 65536))
    return fg_cli_usage_error(&spec, "--accum", "'%s': expected 1..65536", accum);
  if (ctx && (!fg_cli_parse_u64(ctx, 10, &n_ctx) || n_ctx < 2 || n_ctx > ((uint64_t)1 << 20)))
    return fg_cli_usage_error(&spec, "--ctx", "'%s': expected 2..1048576 tokens", ctx);
  if (seed && !fg_cli_parse_u64(seed, 0, &o.ad.seed))
    return fg_cli_usage_error(&spec, "--seed", "'%s': expected an integer in 0..2^64-1", seed);
  if (every && (!fg_cli_parse_u64(every, 10, &o.save_every) || !o.save_every))
    return fg_cli_usage_error(&spec, "--save-every", "'%s': expected a positive step count", every);
  if (every && !save) return fg_cli_usage_error(&spec, "--save-every", "needs --save DIR");
  if (force && !save) return fg_cli_usage_error(&spec, "--force", "needs --save DIR");
  if (eval_every && (!fg_cli_parse_u64(eval_every, 10, &o.eval_every) || !o.eval_every))
    return fg_cli_usage_error(&spec, "--eval-every", "'%s': expected a positive step count", eval_every);
  if (eval_every && !eval_file) return fg_cli_usage_error(&spec, "--eval-every", "needs --eval-file F");
  fg_gemm_mode gm = FG_GEMM_FAST;
  if ((rc = fg_cli_lm_parse(&spec, mode, threads, &gm)) != FG_CLI_GO) return rc;
  if (save && (rc = fg_cli_save_dir_check(cmd, save, NULL, 0, force, resume)) != 0) return rc;
  /* A resumed run takes the checkpoint's seed, LoRA shape and accumulation. */
  if (resume) {
    fg_ckpt_dir *d = NULL;
    if (fg_ckpt_dir_open(resume, &d)) return fg_cli_report(cmd, resume), 1;
    const fg_trainer_state *ts = fg_ckpt_dir_trainer_state(d);
    o.ad.seed = ts->seed;
    if (ts->lora_rank.set) o.ad.lora.rank = (uint32_t)ts->lora_rank.v;
    if (ts->lora_alpha.set) o.ad.lora.alpha = (float)ts->lora_alpha.v;
    if (ts->lora_dropout_p.set) o.ad.lora.dropout_p = (float)ts->lora_dropout_p.v;
    if (ts->accum_steps.set && ts->accum_steps.v) o.accum = ts->accum_steps.v;
    /* a checkpoint of every weight resumes as --full */
    if ((fg_ckpt_dir_weights_present(d) & FG_CKPT_DIR_MODEL) && !(fg_ckpt_dir_weights_present(d) & FG_CKPT_DIR_ADAPTERS))
      o.full = true;
    o.data_seed = ts->data_seed.set ? ts->data_seed.v : ts->seed;
    fg_ckpt_dir_close(d);
  } else {
    o.data_seed = o.ad.seed;
  }
  fg_cli_lm m;
  if ((rc = fg_cli_lm_open(&spec, path, device, mode, threads, &m)) != FG_CLI_GO) return rc;
  rc = 0;
  o.ad.mode = m.mode;
  const fg_tokenizer *tok = fg_lm_tokenizer(m.lm);
  fg_cli_chat pick = {0};
  ft_data train = {0}, evald = {0};
  if (!tok) {
    fg_cli_fail(cmd, path, "the checkpoint has no tokenizer");
    rc = 1;
  }
  if (!rc && fmt == FT_CHAT && fg_cli_chat_pick(cmd, path, tmpl, &pick)) rc = 1;
  if (!rc) rc = ft_data_load(cmd, data, fmt, tok, &pick, (size_t)n_ctx, &train);
  if (!rc && eval_file && (rc = ft_data_load(cmd, eval_file, FT_TEXT, tok, NULL, (size_t)n_ctx, &evald)) == 0) {
    o.eval = &evald;
    if (!o.eval_every) o.eval_every = UINT64_MAX; /* at the end only */
  }
  if (!rc && o.batch > train.n) {
    fg_cli_fail(cmd, data, "--batch %llu is more than its %zu sequences", (unsigned long long)o.batch, train.n);
    rc = 1;
  }
  if (!rc && n_epochs) o.steps = (n_epochs * train.n + o.batch * o.accum - 1) / (o.batch * o.accum);
  o.schedule.total_steps = o.steps;
  o.save_dir = save;
  o.resume_dir = resume;
  o.metrics = metrics;
  ft_result r;
  fg_comm *comm = NULL;
  if (!rc && fg_comm_open(FG_COMM_AUTO, &comm)) rc = (fg_cli_report(cmd, NULL), 1);
  if (!rc && (o.batch * o.accum) % (uint64_t)fg_comm_size(comm)) {
    fg_cli_fail(cmd, NULL, "%d ranks do not divide a step's %llu sequences (--batch x --accum): the gradient's "
                "sum would depend on the rank count", fg_comm_size(comm), (unsigned long long)(o.batch * o.accum));
    rc = 1;
  }
  const bool lead = !comm || fg_comm_rank(comm) == 0;
  o.comm = comm;
  if (!rc) {
    fg_cli_signals_catch();
    rc = ft_run(cmd, m.lm, &train, &o, &r);
  }
  fg_comm_close(comm);
  if (!rc && lead) {
    printf("finetune: steps %llu..%llu, loss %.4f -> %.4f, %.1f tokens/s, peak RSS %.0f MiB%s%s\n",
           (unsigned long long)r.first_step, (unsigned long long)r.step, r.first_loss, r.last_loss, r.tokens_per_s,
           (double)fg_cli_peak_rss() / 1048576.0, save ? ", saved in " : "", save ? save : "");
    if (r.interrupted) {
      fg_cli_fail(cmd, NULL, "interrupted by %s after step %llu%s", fg_cli_signal_name(), (unsigned long long)r.step,
                  save ? " (saved)" : " (nothing saved: no --save)");
      rc = fg_cli_signal_caught() == SIGTERM ? 143 : 130;
    }
  }
  ft_data_free(&train);
  ft_data_free(&evald);
  fg_cli_chat_free(&pick);
  fg_cli_lm_close(&m);
  return rc;
}
