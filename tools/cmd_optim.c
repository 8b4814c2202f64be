/* forgia optim: replays a recorded trajectory: parameters from a safetensors file, the
 * gradient of step j named "<tensor>@<K+j-1>" in another, N steps of a configured optimizer
 * (or set, with clipping and a schedule), the parameters written back in their own dtype. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "forgia/lr_schedule.h"
#include "forgia/optimset.h"
#include "util_args.h"
#include "util_file.h"
#include "util_optim_config.h"
#include "util_report.h"
#include "util_output.h"
#include "util_signal.h"
#include "util_threads.h"

const char fg_cmd_optim_summary[] = "replay optimizer steps from recorded gradients (safetensors in, out)";

static const char synopsis[] =
    "forgia optim --config CONFIG.json --params P.safetensors --grads G.safetensors --steps N --out OUT.safetensors "
    "[--first-grad K] [--state-in FILE] [--state-out FILE] [--device D] [--threads N]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "Registers the parameters of P, runs N optimizer steps in which step j uses the gradients\n"
          "named <tensor>@<K+j-1> in G (K defaults to 1; a parameter without one that step is\n"
          "skipped, as torch skips a None gradient), and writes the parameters, in their own dtype\n"
          "and under their names in P, to OUT (atomically). --state-in loads an optimizer's (or\n"
          "set's) saved state before the first step; --state-out writes the exact bytes its save-state\n"
          "writes after the last (atomically), so N steps equal N/2 with --state-out, then N/2 with\n"
          "--state-in, OUT as P and --first-grad N/2+1.\n"
          "Every recorded step must give at least one parameter its gradient, and every tensor of G\n"
          "must be named <tensor of P>@<step>: a step without any, or a name that is not a gradient\n"
          "of P, is an error before any step runs. OUT and --state-out must differ from each other\n"
          "and from every input (exit 2 before any work). On success one line says what was done.\n"
          "  --threads N  CPU worker threads (the bits do not depend on it)\n\n"
          "CONFIG.json is one optimizer or a set:\n"
          "  {\"optimizer\": \"sgd|adam|adamw\", \"lr\": ..., \"weight_decay\": ..., \"momentum\": ...,\n"
          "   \"dampening\": ..., \"nesterov\": true, \"beta1\": ..., \"beta2\": ..., \"eps\": ...,\n"
          "   \"state_dtype\": \"f32|bf16\", \"second_moment_dtype\": \"f32|bf16\",\n"
          "   \"params\": [\"w\", {\"tensor\": \"b\", \"name\": null}]}\n"
          "  {\"optimizer\": \"muon\", lr, momentum, nesterov, ns_steps, weight_decay,\n"
          "   \"scale\": \"spectral|match_rms_adamw\", state_dtype, \"fallback\": {lr, beta1, beta2, eps,\n"
          "   weight_decay, state_dtype, second_moment_dtype}, params, \"fallback_params\": [...]}\n"
          "  {\"optimizer\": \"apollo|apollo-mini\", lr, beta1, beta2, eps, weight_decay, rank,\n"
          "   update_proj_gap, \"scale\": X, \"scale_type\": \"channel|tensor\", correct_bias, scale_front,\n"
          "   disable_norm_growth_limiter, seed, params, fallback_params}\n"
          "  {\"set\": [member, ...], \"clip_grad_norm\": X,\n"
          "   \"schedule\": {\"kind\": \"warmup_cosine|warmup_linear|constant\", \"total_steps\": T,\n"
          "                \"warmup_steps\": W, \"min_factor\": F}}\n"
          "A params entry is a tensor of P registered under its own name, or under \"name\" (null:\n"
          "param<i>). Without \"params\", a single optimizer takes every tensor of P in file order.\n"
          "Omitted fields take Fucina's defaults; an unknown field is an error. clip_grad_norm and\n"
          "schedule may also sit beside a single optimizer. The schedule is keyed by the recorded\n"
          "step: its factor at K+j-2 (0-based) scales every member's lr before step j; clipping runs\n"
          "before each step. fallback_params are registered after params. A seed above 2^53 is\n"
          "given as a decimal string.\n",
          synopsis);
}

typedef struct reg {
  const fg_ckpt_tensor *src; /* in P */
  fg_tensor *t;
} reg;

typedef struct job {
  optim_cli_config cfg;
  fg_device *dev;
  fg_ckpt *p, *g;
  fg_optim **opt;
  fg_optimset *set;
  reg *regs;
  size_t nregs;
  uint64_t steps, first;
  const char *out, *state_in, *state_out;
} job;

/* The gradient of src at step index k (1-based in G's names), or NULL when G has none. */
static const fg_ckpt_tensor *grad_of(const job *j, const reg *r, uint64_t k) {
  char name[4096];
  int w = snprintf(name, sizeof name, "%s@%llu", r->src->name, (unsigned long long)k);
  if (w < 0 || (size_t)w >= sizeof name) return NULL;
  return fg_ckpt_find(j->g, name);
}

/* Whether name is "<a tensor of P>@<digits>". */
static bool names_a_gradient(const job *j, const char *name) {
  const char *at = strrchr(name, '@');
  if (!at || !at[1] || strspn(at + 1, "0123456789") != strlen(at + 1)) return false;
  return fg_ckpt_find_n(j->p, name, (size_t)(at - name)) != NULL;
}

/* Everything G supplies is checked before the first step, so a bad file changes nothing:
 * every tensor of G is some parameter's gradient (a typo would otherwise be skipped in
 * silence), and every step gives at least one registered parameter its gradient. */
static fg_status check_grads(const job *j) {
  for (size_t i = 0; i < fg_ckpt_count(j->g); i++) {
    const char *name = fg_ckpt_tensor_at(j->g, i)->name;
    if (names_a_gradient(j, name)) continue;
    /* the likely slip, a parameter's own name, gets its spelling as a gradient */
    const char *example = fg_ckpt_find(j->p, name) ? name : j->nregs ? j->regs[0].src->name : NULL;
    return fg_fail(FG_ERR_NOT_FOUND, "%s: tensor '%s' is not the gradient of a tensor of %s (expected <tensor>@<step>%s%s%s)",
                   fg_ckpt_path(j->g), name, fg_ckpt_path(j->p), example ? ", e.g. '" : "", example ? example : "",
                   example ? "@1'" : "");
  }
  uint64_t empty = UINT64_MAX; /* the first step without any gradient (reported after the sizes) */
  for (uint64_t s = 0; s < j->steps; s++) {
    size_t found = 0;
    for (size_t i = 0; i < j->nregs; i++) {
      const fg_ckpt_tensor *g = grad_of(j, &j->regs[i], j->first + s);
      if (!g) continue;
      found++;
      if (g->dtype != FG_F32)
        return fg_fail(FG_ERR_TYPE, "%s: gradient '%s' is %s, expected f32", fg_ckpt_path(j->g), g->name,
                       fg_dtype_name(g->dtype));
      if (g->numel != j->regs[i].t->numel)
        return fg_fail(FG_ERR_BAD_SHAPE, "%s: gradient '%s' has %llu elements, its parameter %llu", fg_ckpt_path(j->g),
                       g->name, (unsigned long long)g->numel, (unsigned long long)j->regs[i].t->numel);
    }
    if (!found && j->nregs && empty == UINT64_MAX) empty = s;
  }
  if (empty != UINT64_MAX)
    return fg_fail(FG_ERR_NOT_FOUND, "%s: no gradient for step %llu of --steps %llu (no '%s@%llu', nor any other "
                   "registered parameter's)", fg_ckpt_path(j->g), (unsigned long long)(empty + 1),
                   (unsigned long long)j->steps, j->regs[0].src->name, (unsigned long long)(j->first + empty));
  return FG_OK;
}

static fg_status add_param(job *j, fg_optim *o, const char *tensor, const char *name, bool fallback) {
  const fg_ckpt_tensor *ct = fg_ckpt_find(j->p, tensor);
  if (!ct) return fg_fail(FG_ERR_NOT_FOUND, "%s: no tensor '%s'", fg_ckpt_path(j->p), tensor);
  for (size_t i = 0; i < j->nregs; i++)
    if (j->regs[i].src == ct) return fg_fail(FG_ERR_DUPLICATE, "tensor '%s' is registered twice (it would step twice)", tensor);
  fg_tensor *t = NULL;
  fg_status s = fg_tensor_load_ckpt(j->dev, j->p, ct, ct->dtype, &t);
  if (s == FG_OK) s = fallback ? fg_optim_add_fallback(o, t, name) : fg_optim_add(o, t, name);
  if (s) {
    fg_tensor_free(t);
    return s;
  }
  j->regs[j->nregs++] = (reg){ct, t};
  return FG_OK;
}

static fg_status setup(job *j) {
  size_t cap = 0;
  for (size_t m = 0; m < j->cfg.n; m++)
    cap += j->cfg.m[m].all_params ? fg_ckpt_count(j->p) : j->cfg.m[m].nparams + j->cfg.m[m].nfallback;
  j->regs = calloc(cap ? cap : 1, sizeof *j->regs);
  j->opt = calloc(j->cfg.n, sizeof *j->opt);
  fg_status s = j->regs && j->opt ? fg_optimset_create(&j->set) : fg_fail(FG_ERR_NOMEM, "optim: out of memory");
  for (size_t m = 0; m < j->cfg.n && s == FG_OK; m++) {
    const optim_cli_member *mb = &j->cfg.m[m];
    s = fg_optim_create(j->dev, &mb->c, &j->opt[m]);
    if (mb->all_params)
      for (size_t i = 0; i < fg_ckpt_count(j->p) && s == FG_OK; i++) {
        const fg_ckpt_tensor *ct = fg_ckpt_tensor_at(j->p, i);
        s = add_param(j, j->opt[m], ct->name, ct->name, false);
      }
    for (size_t i = 0; i < mb->nparams && s == FG_OK; i++)
      s = add_param(j, j->opt[m], mb->params[i].tensor, mb->params[i].name, false);
    for (size_t i = 0; i < mb->nfallback && s == FG_OK; i++)
      s = add_param(j, j->opt[m], mb->fallback_params[i].tensor, mb->fallback_params[i].name, true);
    if (s == FG_OK) s = fg_optimset_add(j->set, j->opt[m]);
  }
  return s == FG_OK ? check_grads(j) : s;
}

/* The state goes to the set when the config is one, else to the single optimizer, so that
 * the bytes are what that object's save-state writes. */
static fg_status load_state(job *j) {
  uint8_t *b = NULL;
  size_t n = 0;
  fg_status s = fg_cli_read_file(j->state_in, 0, &b, &n);
  if (s == FG_OK)
    s = j->cfg.is_set ? fg_optimset_load_state(j->set, b, n) : fg_optim_load_state(j->opt[0], b, n);
  free(b);
  return s ? fg_fail_prefix(s, "%s: ", j->state_in) : FG_OK;
}

static fg_status save_state(job *j) {
  uint8_t *b = NULL;
  size_t n = 0;
  fg_status s = j->cfg.is_set ? fg_optimset_save_state(j->set, &b, &n) : fg_optim_save_state(j->opt[0], &b, &n);
  if (s == FG_OK) s = fg_output_write(j->state_out, b, n);
  free(b);
  return s;
}

static fg_status run_steps(job *j) {
  for (uint64_t s = 0; s < j->steps; s++) {
    if (fg_cli_signal_caught()) return FG_OK;
    for (size_t i = 0; i < j->nregs; i++) {
      fg_tensor *t = j->regs[i].t;
      const fg_ckpt_tensor *g = grad_of(j, &j->regs[i], j->first + s);
      if (!g) { /* no gradient this step: the parameter is skipped */
        fg_device_mem_free(t->dev, t->grad);
        t->grad = NULL;
        continue;
      }
      fg_tensor *gt = NULL;
      fg_status st = fg_tensor_grad_alloc(t);
      if (st == FG_OK) st = fg_tensor_load_ckpt(j->dev, j->g, g, FG_F32, &gt);
      if (st == FG_OK) st = fg_device_copy(j->dev, t->grad, gt->data, (size_t)gt->nbytes, FG_COPY_D2D);
      fg_tensor_free(gt);
      if (st) return st;
    }
    fg_status st = FG_OK;
    /* Keyed by the recorded step, so a run split with --state-out/--state-in and
     * --first-grad follows one schedule. */
    if (j->cfg.has_schedule) st = fg_optimset_apply_lr_factor(j->set, fg_lr_factor(&j->cfg.schedule, j->first - 1 + s));
    if (st == FG_OK && j->cfg.clip > 0) st = fg_optimset_clip_grad_norm(j->set, j->cfg.clip, NULL, NULL);
    if (st == FG_OK) st = fg_optimset_step(j->set, NULL);
    if (st) return fg_fail_prefix(st, "step %llu: ", (unsigned long long)(s + 1));
  }
  return FG_OK;
}

static fg_status write_out(job *j) {
  fg_st_write_tensor *w = calloc(j->nregs ? j->nregs : 1, sizeof *w);
  void **host = calloc(j->nregs ? j->nregs : 1, sizeof *host);
  fg_status s = w && host ? FG_OK : fg_fail(FG_ERR_NOMEM, "optim: out of memory");
  for (size_t i = 0; i < j->nregs && s == FG_OK; i++) {
    const fg_tensor *t = j->regs[i].t;
    host[i] = malloc(t->nbytes ? (size_t)t->nbytes : 1);
    s = host[i] ? fg_tensor_download(t, host[i], (size_t)t->nbytes, NULL) : fg_fail(FG_ERR_NOMEM, "optim: out of memory");
    w[i] = (fg_st_write_tensor){j->regs[i].src->name, t->dtype, t->ndim, t->shape, host[i], t->nbytes};
  }
  if (s == FG_OK) s = fg_st_save(j->out, w, j->nregs, NULL, 0);
  for (size_t i = 0; host && i < j->nregs; i++) free(host[i]);
  free(host);
  free(w);
  return s;
}

static void job_free(job *j) {
  fg_optimset_free(j->set);
  for (size_t m = 0; j->opt && m < j->cfg.n; m++) fg_optim_free(j->opt[m]);
  free(j->opt);
  for (size_t i = 0; i < j->nregs; i++) fg_tensor_free(j->regs[i].t);
  free(j->regs);
  fg_ckpt_close(j->p);
  fg_ckpt_close(j->g);
  fg_device_close(j->dev);
  optim_cli_config_free(&j->cfg);
}


int fg_cmd_optim(int argc, char **argv) {
  const char *config = NULL, *params = NULL, *grads = NULL, *steps = NULL, *out = NULL, *first = NULL,
             *device = NULL, *state_in = NULL, *state_out = NULL, *threads = NULL;
  const fg_cli_opt opts[] = {{"--config", &config, NULL}, {"--params", &params, NULL},    {"--grads", &grads, NULL},
                             {"--steps", &steps, NULL},   {"--out", &out, NULL},          {"--first-grad", &first, NULL},
                             {"--device", &device, NULL}, {"--state-in", &state_in, NULL},
                             {"--state-out", &state_out, NULL}, {"--threads", &threads, NULL}};
  const fg_cli_spec spec = {"optim", synopsis, usage, opts, sizeof opts / sizeof opts[0], NULL, NULL, 0, 0, 0};
  int prc = fg_cli_parse(&spec, argc, argv);
  if (prc != FG_CLI_GO) return prc;
  const char *missing = !config ? "--config" : !params ? "--params" : !grads ? "--grads" : !steps ? "--steps" : !out ? "--out" : NULL;
  if (missing) return fg_cli_usage_error(&spec, missing, "missing");
  if ((prc = fg_cli_threads(&spec, threads, NULL)) != FG_CLI_GO) return prc;
  /* where the results go is checked before anything is read: no output may be an input */
  const char *inputs[] = {config, params, grads, state_in};
  const size_t n_in = sizeof inputs / sizeof inputs[0];
  if ((prc = fg_cli_output_check("optim", out, inputs, n_in)) != 0) return prc;
  if (state_out && ((prc = fg_cli_output_check("optim", state_out, inputs, n_in)) != 0 ||
                    (prc = fg_cli_outputs_differ("optim", "--out", out, "--state-out", state_out)) != 0))
    return prc;
  job j;
  memset(&j, 0, sizeof j);
  j.out = out;
  j.state_in = state_in;
  j.state_out = state_out;
  j.first = 1;
  if (!fg_cli_parse_u64(steps, 10, &j.steps)) return fg_cli_usage_error(&spec, "--steps", "'%s' is not a decimal integer", steps);
  if (first && (!fg_cli_parse_u64(first, 10, &j.first) || j.first + j.steps < j.first))
    return fg_cli_usage_error(&spec, "--first-grad", "'%s' is not a decimal integer (with --steps, below 2^64)", first);
  /* A configuration over 64 MiB is not one. */
  uint8_t *raw = NULL;
  size_t raw_len = 0;
  if (fg_cli_read_file(config, (size_t)64 << 20, &raw, &raw_len)) {
    fg_cli_report("optim", config);
    return 1;
  }
  char *text = (char *)raw;
  char why[512];
  bool ok = optim_cli_config_parse(text, &j.cfg, why, sizeof why);
  free(text);
  if (!ok) return fg_cli_usage_error(&spec, config, "%s", why);
  for (size_t m = 0; m < j.cfg.n; m++)
    if (fg_optim_config_check(&j.cfg.m[m].c)) {
      int rc = fg_cli_usage_error(&spec, config, "%s", fg_last_error());
      optim_cli_config_free(&j.cfg);
      return rc;
    }
  fg_status s = fg_device_open(device ? device : "auto", &j.dev);
  if (s) {
    int rc = fg_cli_usage_error(&spec, "--device", "%s", fg_last_error());
    job_free(&j);
    return rc;
  }
  fg_cli_signals_catch();
  s = fg_ckpt_open(params, &j.p);
  if (s == FG_OK) s = fg_ckpt_open(grads, &j.g);
  if (s == FG_OK) s = setup(&j);
  if (s == FG_OK && state_in) s = load_state(&j);
  if (s == FG_OK) s = run_steps(&j);
  int rc = 0;
  if (fg_cli_signal_caught()) {
    rc = fg_cli_interrupted("optim", NULL);
  } else {
    if (s == FG_OK) s = write_out(&j);
    if (s == FG_OK && state_out) s = save_state(&j);
    if (s && fg_cli_signal_caught()) {
      rc = fg_cli_interrupted("optim", out); /* the write was cancelled: nothing replaced */
    } else if (s) {
      fg_cli_report("optim", NULL);
      rc = 1;
    } else {
      char range[64] = "";
      if (j.steps)
        snprintf(range, sizeof range, " (gradients @%llu..@%llu)", (unsigned long long)j.first,
                 (unsigned long long)(j.first + j.steps - 1));
      printf("optim: %llu step%s%s over %zu tensor%s on %s: wrote %s%s%s\n", (unsigned long long)j.steps,
             j.steps == 1 ? "" : "s", range, j.nregs, j.nregs == 1 ? "" : "s", fg_device_spec(j.dev), out,
             state_out ? " and the state to " : "", state_out ? state_out : "");
    }
  }
  job_free(&j);
  return rc;
}
