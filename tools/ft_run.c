/* forgia finetune's training run (tools/ft_run.h).
 *
 * A step: zero the adapters' gradients; for each of accum micro-batches, the next batch
 * sequences of the data cursor through fg_lm_adapters_grad with the loss scale
 * 1 / (targets x accum) (each micro-batch's mean, averaged); clip; the schedule's factor; the
 * optimizer's step. Everything the next step depends on (adapters, optimizer state, the
 * cursor, the step) is what a checkpoint holds, and the dropout masks follow from (seed,
 * micro-batch), so a resumed run continues with the same bits. */
#include "ft_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "forgia/ckpt_dir.h"
#include "forgia/optimset.h"
#include "forgia/state_dict.h"
#include "forgia/comm.h"
#include "forgia/rng.h"
#include "forgia/trainer_state.h"
#include "util_progress.h"
#include "util_report.h"
#include "util_signal.h"

/* Sub-stream key of the run's seed. */
#define FT_KEY_DROPOUT 0x44524f504f5554ull /* each micro-batch's dropout masks */

typedef struct run {
  const char *cmd;
  fg_lm *lm;
  const ft_data *data;
  const ft_opts *o;
  fg_lm_adapters *ad;      /* LoRA, or */
  fg_lm_full *full;        /* every weight (--full) */
  fg_tensor **ps;          /* what trains, in gradient order */
  size_t nps;
  fg_optim *opt, *opt_vec; /* the matrices' optimizer; the vectors' (param groups), or NULL */
  fg_optimset *set;
  ft_cursor cur;
  fg_comm *comm;
  int rank, size;
  size_t G;               /* sequences (groups) per step: batch x accum */
  size_t *gidx;           /* the step's examples, in order */
  double *gnll;           /* each group's NLL sum (every rank's, after the gather) */
  size_t n_params;        /* the adapters' floats, A then B of each slot */
  float *parts, *sum;     /* this rank's groups' gradients; their all-rank sum */
  FILE *metrics;
} run;

static int fail(const run *r, const char *what) {
  fg_cli_report(r->cmd, what);
  return 1;
}

/* The adapters as state-dict entries (host copies in bufs, freed by the caller). */
static fg_status adapter_entries(const fg_lm_adapters *ad, fg_state_dict_entry *e, float **bufs,
                                 char (*names)[FG_LORA_NAME_MAX]) {
  const fg_lora_slot *slots = NULL;
  const size_t n = fg_lm_adapters_slots(ad, &slots);
  fg_status st = FG_OK;
  for (size_t i = 0; i < n && !st; i++) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "layers.%u.%s", (unsigned)slots[i].layer, fg_lora_target_name(slots[i].target));
    st = fg_lora_names(prefix, names[2 * i], names[2 * i + 1]);
    const fg_tensor *t[2] = {slots[i].lora->a, slots[i].lora->b};
    for (int k = 0; k < 2 && !st; k++) {
      float **b = &bufs[2 * i + (size_t)k];
      *b = malloc((size_t)t[k]->nbytes);
      if (!*b) st = fg_fail(FG_ERR_NOMEM, "out of memory");
      if (!st) st = fg_tensor_download(t[k], *b, (size_t)t[k]->nbytes, NULL);
      e[2 * i + (size_t)k] = (fg_state_dict_entry){names[2 * i + (size_t)k], FG_F32, t[k]->ndim, t[k]->shape, *b,
                                                   t[k]->nbytes};
    }
  }
  return st;
}

fg_status ft_ckpt_save(const fg_lm_adapters *ad, const char *dir, const void *optimizer, size_t optimizer_len,
                       const fg_trainer_state *ts) {
  const size_t n = 2 * fg_lm_adapters_slots(ad, NULL);
  fg_state_dict_entry *e = calloc(n, sizeof *e);
  float **bufs = calloc(n, sizeof *bufs);
  char(*names)[FG_LORA_NAME_MAX] = calloc(n, sizeof *names);
  fg_status st = (!e || !bufs || !names) ? fg_fail(FG_ERR_NOMEM, "out of memory") : FG_OK;
  if (!st) st = adapter_entries(ad, e, bufs, names);
  if (!st) st = fg_ckpt_dir_save(dir, FG_CKPT_DIR_ADAPTERS, e, n, optimizer, optimizer_len, ts);
  for (size_t i = 0; bufs && i < n; i++) free(bufs[i]);
  free(bufs);
  free(names);
  free(e);
  return st;
}

fg_status ft_weights_save(fg_tensor *const *ps, size_t n, const char *dir, const void *ob, size_t olen,
                          const fg_trainer_state *ts) {
  fg_state_dict_entry *e = calloc(n, sizeof *e);
  void **bufs = calloc(n, sizeof *bufs);
  fg_status st = (!e || !bufs) ? fg_fail(FG_ERR_NOMEM, "out of memory") : FG_OK;
  for (size_t i = 0; i < n && !st; i++) {
    const fg_tensor *t = ps[i];
    /* a CPU tensor's data is host memory already: written from where it lies */
    const bool host = fg_device_kind_of(t->dev) == FG_DEVICE_CPU;
    bufs[i] = host ? NULL : malloc(t->nbytes ? (size_t)t->nbytes : 1);
    if (!host && !bufs[i]) st = fg_fail(FG_ERR_NOMEM, "out of memory for %s", t->name);
    if (!st && !host) st = fg_tensor_download(t, bufs[i], (size_t)t->nbytes, NULL);
    e[i] = (fg_state_dict_entry){t->name, t->dtype, t->ndim, t->shape, host ? t->data : bufs[i], t->nbytes};
  }
  if (!st) st = fg_ckpt_dir_save(dir, FG_CKPT_DIR_MODEL, e, n, ob, olen, ts);
  for (size_t i = 0; bufs && i < n; i++) free(bufs[i]);
  free(bufs);
  free(e);
  return st;
}

fg_status ft_weights_load(fg_tensor *const *ps, size_t n, const fg_ckpt_dir *d) {
  fg_state_dict_dest *dst = calloc(n, sizeof *dst);
  void **bufs = calloc(n, sizeof *bufs);
  fg_status st = (!dst || !bufs) ? fg_fail(FG_ERR_NOMEM, "out of memory") : FG_OK;
  for (size_t i = 0; i < n && !st; i++) {
    const fg_tensor *t = ps[i];
    bufs[i] = malloc(t->nbytes ? (size_t)t->nbytes : 1);
    if (!bufs[i]) st = fg_fail(FG_ERR_NOMEM, "out of memory for %s", t->name);
    dst[i] = (fg_state_dict_dest){t->name, t->dtype, t->ndim, t->shape, bufs[i], t->nbytes};
  }
  if (!st) st = fg_ckpt_dir_load_weights(d, FG_CKPT_DIR_MODEL, dst, n, NULL, NULL);
  /* every tensor read before any is written: a bad file leaves the model as it was */
  for (size_t i = 0; i < n && !st; i++) st = fg_tensor_upload(ps[i], bufs[i], (size_t)ps[i]->nbytes, NULL);
  for (size_t i = 0; bufs && i < n; i++) free(bufs[i]);
  free(bufs);
  free(dst);
  return st;
}

static fg_status save(const run *r, const char *dir, uint64_t step) {
  const ft_opts *o = r->o;
  uint8_t *ob = NULL;
  size_t olen = 0;
  fg_status st = r->opt_vec ? fg_optimset_save_state(r->set, &ob, &olen) : fg_optim_save_state(r->opt, &ob, &olen);
  if (!st) {
    fg_trainer_state ts;
    fg_trainer_state_init(&ts);
    ts.step = step * o->accum;
    ts.seed = o->ad.seed;
    if (!o->full) {
      FG_TRAINER_STATE_SET(ts, lora_rank, o->ad.lora.rank);
      FG_TRAINER_STATE_SET(ts, lora_alpha, o->ad.lora.alpha);
      FG_TRAINER_STATE_SET(ts, lora_dropout_p, o->ad.lora.dropout_p);
    }
    FG_TRAINER_STATE_SET(ts, learning_rate, o->lr);
    FG_TRAINER_STATE_SET(ts, accum_steps, o->accum);
    FG_TRAINER_STATE_SET(ts, data_seed, r->cur.seed);
    FG_TRAINER_STATE_SET(ts, data_epoch, r->cur.epoch);
    FG_TRAINER_STATE_SET(ts, data_index, r->cur.index);
    st = o->full ? ft_weights_save(r->ps, r->nps, dir, ob, olen, &ts) : ft_ckpt_save(r->ad, dir, ob, olen, &ts);
  }
  free(ob);
  return st;
}

/* Adapters, optimizer state and cursor from a checkpoint written by save(). */
static fg_status resume(run *r, uint64_t *step) {
  fg_ckpt_dir *d = NULL;
  fg_status st = fg_ckpt_dir_open(r->o->resume_dir, &d);
  if (st) return st;
  const fg_trainer_state *ts = fg_ckpt_dir_trainer_state(d);
  const uint8_t *ob = NULL;
  size_t olen = 0;
  const unsigned want = r->o->full ? FG_CKPT_DIR_MODEL : FG_CKPT_DIR_ADAPTERS;
  if (!(fg_ckpt_dir_weights_present(d) & want))
    st = fg_fail(FG_ERR_NOT_FOUND, "no %s (not a %s fine-tuning checkpoint)",
                 r->o->full ? FG_CKPT_DIR_MODEL_FILE : FG_CKPT_DIR_ADAPTERS_FILE, r->o->full ? "--full" : "LoRA");
  if (!st) st = r->o->full ? ft_weights_load(r->ps, r->nps, d) : fg_lm_adapters_load(r->ad, fg_ckpt_dir_weights_path(d, FG_CKPT_DIR_ADAPTERS));
  if (!st) st = fg_ckpt_dir_optimizer(d, &ob, &olen);
  /* the optimizer after the weights: its f32 masters of 16-bit weights win */
  if (!st) st = r->opt_vec ? fg_optimset_load_state(r->set, ob, olen) : fg_optim_load_state(r->opt, ob, olen);
  if (!st && (ts->data_epoch.set && ts->data_index.set)) {
    if (ts->data_index.v >= r->cur.n) {
      st = fg_fail(FG_ERR_RANGE, "data_index %llu is past the %zu sequences of the data", (unsigned long long)ts->data_index.v,
                   r->cur.n);
    } else {
      r->cur.epoch = ts->data_epoch.v;
      ft_cursor_order(&r->cur);
      r->cur.index = ts->data_index.v;
    }
  }
  if (!st) *step = ts->step / r->o->accum;
  if (st) fg_fail_prefix(st, "%s: ", r->o->resume_dir);
  fg_ckpt_dir_close(d);
  return st;
}

static fg_optim_config optim_config(const ft_opts *o) {
  fg_optim_config c = fg_optim_defaults(o->optim);
  c.lr = o->lr;
  if (o->weight_decay >= 0.0f) c.weight_decay = o->weight_decay;
  if (o->optim == FG_OPTIM_APOLLO || o->optim == FG_OPTIM_APOLLO_MINI) {
    c.seed = o->ad.seed;
    if (!o->full && c.rank > o->ad.lora.rank) c.rank = o->ad.lora.rank; /* no larger than an adapter's smaller side */
  }
  if (o->optim == FG_OPTIM_MUON) c.fallback.lr = o->lr;
  return c;
}

/* Mean NLL of the eval data under the adapted model. */
static fg_status eval_loss(run *r, double *out) {
  const ft_data *e = r->o->eval;
  double sum = 0.0;
  size_t count = 0;
  fg_status st = FG_OK;
  if (r->ad) fg_lm_adapters_attach(r->ad, true);
  for (size_t i = 0; i < e->n && !st; i++) {
    double *nll = malloc(e->ex[i].n * sizeof *nll);
    if (!nll) st = fg_fail(FG_ERR_NOMEM, "out of memory");
    if (!st) st = fg_lm_nll(r->lm, e->ex[i].ids, e->ex[i].n, 0, nll);
    for (size_t j = 0; !st && j + 1 < e->ex[i].n; j++) sum += nll[j];
    count += e->ex[i].n - 1;
    free(nll);
  }
  if (r->ad) fg_lm_adapters_attach(r->ad, false);
  *out = count ? sum / (double)count : NAN;
  return st;
}

/* The trainables' gradients to or from one buffer of n_params floats (r->ps order). */
static fg_status grads_copy(run *r, float *buf, bool out) {
  fg_device *dev = fg_lm_device(r->lm);
  size_t off = 0;
  fg_status st = FG_OK;
  for (size_t i = 0; i < r->nps && !st; i++) {
    const fg_tensor *t = r->ps[i];
    const size_t bytes = (size_t)t->numel * sizeof(float);
    st = out ? fg_device_copy(dev, buf + off, t->grad, bytes, FG_COPY_D2H)
             : fg_device_copy(dev, t->grad, buf + off, bytes, FG_COPY_H2D);
    off += (size_t)t->numel;
  }
  return st;
}

/* Every rank learns whether any failed, and the first failure's message. */
static fg_status agree(run *r, fg_status mine) {
  float *all = malloc((size_t)r->size * sizeof *all);
  uint64_t *ones = malloc((size_t)r->size * sizeof *ones);
  if (!all || !ones) {
    free(all);
    free(ones);
    return mine ? mine : fg_fail(FG_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < r->size; i++) ones[i] = 1;
  const float word = (float)mine;
  fg_status st = fg_comm_allgather_f32(r->comm, &word, ones, all);
  int failed = -1;
  for (int i = 0; !st && i < r->size && failed < 0; i++)
    if (all[i] != 0.0f) failed = i;
  if (!st && failed >= 0) {
    char msg[512] = {0};
    if (r->rank == failed) snprintf(msg, sizeof msg, "%s", fg_last_error());
    st = fg_comm_broadcast(r->comm, msg, sizeof msg, failed);
    msg[sizeof msg - 1] = '\0';
    if (mine) st = r->rank == failed ? fg_fail(mine, "%s", msg) : mine;
    else if (!st) st = fg_fail(FG_ERR_STATE, "rank %d failed: %s", failed, msg);
  }
  free(all);
  free(ones);
  return st ? st : mine;
}

/* One optimizer step. Its batch x accum sequences are groups in order; each rank computes its
 * contiguous share, each group's gradient (of its micro-batch's mean NLL / accum) in its own
 * buffer, and fg_comm_allreduce_parts_f32 adds them in group order: the same bits for one
 * process and for any rank count that divides the groups. *loss is the mean of the
 * micro-batches' mean NLLs, *tokens the step's tokens. */
static fg_status step_once(run *r, uint64_t step, double *loss, size_t *tokens) {
  const ft_opts *o = r->o;
  const size_t B = (size_t)o->batch, K = (size_t)o->accum, G = r->G;
  *tokens = 0;
  for (size_t g = 0; g < G; g++) {
    r->gidx[g] = ft_cursor_next(&r->cur);
    *tokens += r->data->ex[r->gidx[g]].n;
  }
  uint64_t first = 0, count = 0;
  fg_comm_share(G, r->rank, r->size, &first, &count);
  fg_status st = FG_OK;
  for (uint64_t g = first; g < first + count && !st; g++) {
    size_t targets = 0;
    for (size_t b = 0; b < B; b++) {
      const ft_example *e = &r->data->ex[r->gidx[(g / B) * B + b]];
      for (size_t j = 1; j < e->n; j++) targets += e->predict[j];
    }
    const ft_example *e = &r->data->ex[r->gidx[g]];
    const size_t len = e->n;
    const fg_lm_train_batch tb = {.n_seq = 1, .len = &len, .ids = e->ids, .predict = e->predict};
    const uint64_t dseed = fg_rng_at(o->ad.seed ^ FT_KEY_DROPOUT, step * G + g);
    size_t np = 0;
    st = r->opt_vec ? fg_optimset_zero_grad(r->set, NULL) : fg_optim_zero_grad(r->opt, NULL);
    r->gnll[g] = 0.0;
    const float scale = (float)(1.0 / ((double)targets * (double)K));
    /* a sequence without targets adds nothing (its micro-batch has some) */
    if (!st && fg_lm_train_batch_targets(&tb))
      st = r->full ? fg_lm_full_grad(r->full, &tb, scale, &r->gnll[g], &np)
                   : fg_lm_adapters_grad(r->ad, &tb, scale, o->ad.lora.dropout_p > 0.0f ? &dseed : NULL, &r->gnll[g],
                                         &np);
    if (st) break;
    if (r->size == 1 && G == 1) continue; /* the gradient is the sum already */
    /* One process keeps a running sum, the parts all-reduce's left fold from the first part on,
     * so memory holds one gradient rather than one per group, with the same bits. */
    if (r->size == 1 && g > first) {
      st = grads_copy(r, r->parts, true);
      for (size_t i = 0; !st && i < r->n_params; i++) r->sum[i] = r->sum[i] + r->parts[i];
    } else {
      st = grads_copy(r, r->size == 1 ? r->sum : r->parts + (g - first) * r->n_params, true);
    }
  }
  if (r->size > 1) st = agree(r, st);
  if (!st && r->size > 1) st = fg_comm_allreduce_parts_f32(r->comm, r->parts, (size_t)count, r->n_params, r->sum);
  if (!st && (r->size > 1 || G > 1)) st = grads_copy(r, r->sum, false);
  if (!st && r->size > 1) {
    /* every group's NLL (f64 bits, moved as two f32 words each) to every rank */
    uint64_t *counts = malloc((size_t)r->size * sizeof *counts);
    if (!counts) return fg_fail(FG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < r->size; i++) {
      fg_comm_share(G, i, r->size, NULL, &counts[i]);
      counts[i] *= 2;
    }
    st = fg_comm_allgather_f32(r->comm, (const float *)(r->gnll + first), counts, (float *)r->gnll);
    free(counts);
  }
  *loss = 0.0;
  for (size_t k = 0; k < K && !st; k++) {
    double nll = 0.0;
    size_t targets = 0;
    for (size_t b = 0; b < B; b++) {
      const ft_example *e = &r->data->ex[r->gidx[k * B + b]];
      nll += r->gnll[k * B + b];
      for (size_t j = 1; j < e->n; j++) targets += e->predict[j];
    }
    *loss += nll / (double)targets / (double)K;
  }
  float norm = 0.0f;
  /* one optimizer: its own calls, so its checkpoint is the single frame Fucina's finetune
   * writes; param groups: the set's (one global norm for clipping) */
  const double f = fg_lr_factor(&o->schedule, step);
  if (r->opt_vec) {
    if (!st && o->clip > 0.0f) st = fg_optimset_clip_grad_norm(r->set, o->clip, &norm, NULL);
    if (!st) st = fg_optimset_apply_lr_factor(r->set, f);
    if (!st) st = fg_optimset_step(r->set, NULL);
  } else {
    if (!st && o->clip > 0.0f) st = fg_optim_clip_grad_norm(r->opt, o->clip, &norm, NULL);
    if (!st) st = fg_optim_apply_lr_factor(r->opt, f);
    if (!st) st = fg_optim_step(r->opt, NULL);
  }
  return st;
}

static int train(run *r, ft_result *res) {
  const ft_opts *o = r->o;
  uint64_t step = 0;
  if (o->resume_dir && resume(r, &step)) return fail(r, NULL);
  if (step > o->steps) {
    fg_cli_fail(r->cmd, o->resume_dir, "the checkpoint is at step %llu, past --steps %llu", (unsigned long long)step,
                (unsigned long long)o->steps);
    return 1;
  }
  res->first_step = step;
  const fg_lm_config *cf = fg_lm_get_config(r->lm);
  if (!o->quiet && r->rank == 0 && o->full) {
    size_t floats = 0;
    for (size_t i = 0; i < r->nps; i++) floats += (size_t)r->ps[i]->numel;
    fprintf(stderr, "%s: %s, %zu layers; full fine-tuning of %zu weights (%.1f M parameters, %s); %s lr %g; %zu "
            "sequences (%zu tokens, %zu targets); steps %llu..%llu, batch %llu x accum %llu\n",
            r->cmd, cf->arch_name, cf->n_layer, r->nps, (double)floats / 1e6, fg_dtype_name(r->ps[r->nps - 1]->dtype),
            fg_optim_kind_name(o->optim), (double)o->lr, r->data->n, r->data->tokens, r->data->targets,
            (unsigned long long)step, (unsigned long long)o->steps, (unsigned long long)o->batch,
            (unsigned long long)o->accum);
  } else if (!o->quiet && r->rank == 0)
    fprintf(stderr, "%s: %s, %zu layers; %zu adapters of rank %u (alpha %g, dropout %g); %s lr %g; %zu sequences "
            "(%zu tokens, %zu targets); steps %llu..%llu, batch %llu x accum %llu\n",
            r->cmd, cf->arch_name, cf->n_layer, fg_lm_adapters_slots(r->ad, NULL), (unsigned)o->ad.lora.rank,
            (double)o->ad.lora.alpha, (double)o->ad.lora.dropout_p, fg_optim_kind_name(o->optim), (double)o->lr,
            r->data->n, r->data->tokens, r->data->targets, (unsigned long long)step, (unsigned long long)o->steps,
            (unsigned long long)o->batch, (unsigned long long)o->accum);
  fg_cli_progress p;
  fg_cli_progress_init(&p, o->quiet || r->rank != 0, "steps", o->steps - step, 0);
  const double t0 = fg_clock_seconds();
  size_t tokens_run = 0;
  const uint64_t first = step;
  while (step < o->steps) {
    double loss = 0.0;
    size_t tokens = 0;
    const double ts = fg_clock_seconds();
    if (step_once(r, step, &loss, &tokens)) {
      fg_cli_progress_clear(&p);
      return fail(r, NULL);
    }
    const double lr = (double)fg_optim_lr(r->opt) * fg_lr_factor(&o->schedule, step);
    step++;
    tokens_run += tokens;
    if (step == first + 1) res->first_loss = loss;
    res->last_loss = loss;
    double ev = NAN;
    if (r->rank == 0 && o->eval && o->eval_every && (step % o->eval_every == 0 || step == o->steps) && eval_loss(r, &ev)) {
      fg_cli_progress_clear(&p);
      return fail(r, NULL);
    }
    if (r->metrics) {
      fprintf(r->metrics, "{\"step\": %llu, \"loss\": %.17g, \"tokens\": %zu, \"lr\": %.9g, \"seconds\": %.6f",
              (unsigned long long)step, loss, tokens, lr, fg_clock_seconds() - ts);
      if (!isnan(ev)) fprintf(r->metrics, ", \"eval_loss\": %.17g", ev);
      fprintf(r->metrics, "}\n");
      fflush(r->metrics);
    }
    const double el = fg_clock_seconds() - t0;
    char detail[160], evs[48] = "";
    const double eta = el / (double)(step - first) * (double)(o->steps - step);
    if (!isnan(ev)) snprintf(evs, sizeof evs, ", eval %.4f", ev);
    snprintf(detail, sizeof detail, "loss %.4f%s, %.0f tok/s, ETA %.0f s", loss, evs,
             el > 0 ? (double)tokens_run / el : 0.0, eta);
    fg_cli_progress_update(&p, step - first, 0, NULL, 0, detail);
    if (fg_cli_signal_caught()) {
      res->interrupted = true;
      break;
    }
    if (r->rank == 0 && o->save_dir && o->save_every && step % o->save_every == 0 && step != o->steps &&
        save(r, o->save_dir, step)) {
      fg_cli_progress_clear(&p);
      return fail(r, o->save_dir);
    }
  }
  fg_cli_progress_clear(&p);
  const double el = fg_clock_seconds() - t0;
  res->step = step;
  res->tokens_per_s = el > 0 ? (double)tokens_run / el : 0.0;
  if (res->interrupted) fg_cli_signals_grace();
  if (r->rank == 0 && o->save_dir && save(r, o->save_dir, step)) return fail(r, o->save_dir);
  return 0;
}

/* r->ps: the adapters' A and B slot by slot, or the model's weights; nonzero: out of memory. */
static int trainables(run *r) {
  if (r->full) {
    fg_tensor *const *ps = NULL;
    r->nps = fg_lm_full_params(r->full, &ps, NULL);
    r->ps = malloc(r->nps * sizeof *r->ps);
    if (r->ps) memcpy(r->ps, ps, r->nps * sizeof *r->ps);
    return !r->ps;
  }
  const fg_lora_slot *slots = NULL;
  const size_t n = fg_lm_adapters_slots(r->ad, &slots);
  r->nps = 2 * n;
  r->ps = malloc((r->nps ? r->nps : 1) * sizeof *r->ps);
  for (size_t i = 0; r->ps && i < n; i++) {
    r->ps[2 * i] = slots[i].lora->a;
    r->ps[2 * i + 1] = slots[i].lora->b;
  }
  return !r->ps;
}

/* The optimizer, and for --full with SGD, Adam or AdamW a second param group: norms and
 * biases without weight decay (Muon and APOLLO route vectors to their AdamW themselves). */
static fg_status optimizers(run *r) {
  const ft_opts *o = r->o;
  const fg_optim_config c = optim_config(o);
  fg_device *dev = fg_lm_device(r->lm);
  fg_status st = fg_optim_create(dev, &c, &r->opt);
  const bool groups = o->full && (o->optim == FG_OPTIM_SGD || o->optim == FG_OPTIM_ADAM || o->optim == FG_OPTIM_ADAMW);
  if (!st && groups) {
    fg_optim_config cv = c;
    cv.weight_decay = 0.0f;
    st = fg_optim_create(dev, &cv, &r->opt_vec);
  }
  if (!st) st = o->full ? fg_lm_full_register(r->full, r->opt, r->opt_vec) : fg_lm_adapters_register(r->ad, r->opt);
  if (!st && r->opt_vec) st = fg_optimset_create(&r->set);
  if (!st && r->opt_vec) st = fg_optimset_add(r->set, r->opt);
  if (!st && r->opt_vec) st = fg_optimset_add(r->set, r->opt_vec);
  return st;
}

int ft_run(const char *cmd, fg_lm *lm, const ft_data *data, const ft_opts *o, ft_result *res) {
  memset(res, 0, sizeof *res);
  res->first_loss = res->last_loss = NAN;
  run r = {.cmd = cmd, .lm = lm, .data = data, .o = o, .comm = o->comm};
  r.rank = fg_comm_rank(o->comm);
  r.size = fg_comm_size(o->comm);
  r.G = (size_t)(o->batch * o->accum);
  r.cur = (ft_cursor){.seed = o->data_seed, .n = data->n, .shuffle = o->shuffle};
  r.cur.order = malloc(data->n * sizeof *r.cur.order);
  r.gidx = malloc(r.G * sizeof *r.gidx);
  r.gnll = calloc(r.G, sizeof *r.gnll);
  int rc = 0;
  if (!r.cur.order || !r.gidx || !r.gnll) rc = (fg_cli_fail(cmd, NULL, "out of memory"), 1);
  if (!rc) ft_cursor_order(&r.cur);
  if (!rc && (o->full ? fg_lm_full_create(lm, o->frozen, &r.full) : fg_lm_adapters_create(lm, &o->ad, &r.ad)))
    rc = fail(&r, NULL);
  if (!rc && trainables(&r)) rc = (fg_cli_fail(cmd, NULL, "out of memory"), 1);
  if (!rc) {
    for (size_t i = 0; i < r.nps; i++) r.n_params += (size_t)r.ps[i]->numel;
    uint64_t count = 0;
    fg_comm_share(r.G, r.rank, r.size, NULL, &count);
    /* one process: a running sum and one group's gradient (none for one group); else one
     * gradient per group */
    const bool one = r.size == 1 && r.G == 1;
    r.parts = malloc((one ? 0 : r.size == 1 || !count ? 1 : count) * r.n_params * sizeof(float) + 1);
    r.sum = malloc((one ? 0 : r.n_params) * sizeof(float) + 1);
    if (!r.parts || !r.sum) rc = (fg_cli_fail(cmd, NULL, "out of memory for %zu gradients of %zu floats",
                                              (size_t)count + 1, r.n_params), 1);
  }
  if (!rc && optimizers(&r)) rc = fail(&r, NULL);
  if (!rc && r.rank == 0 && o->metrics && !(r.metrics = fopen(o->metrics, o->resume_dir ? "a" : "w")))
    rc = (fg_cli_fail(cmd, o->metrics, "cannot open for writing"), 1);
  if (!rc) rc = train(&r, res);
  if (r.metrics && fclose(r.metrics) && !rc) rc = (fg_cli_fail(cmd, o->metrics, "write failed"), 1);
  fg_optimset_free(r.set);
  fg_optim_free(r.opt);
  fg_optim_free(r.opt_vec);
  fg_lm_adapters_free(r.ad);
  fg_lm_full_free(r.full);
  free(r.ps);
  free(r.cur.order);
  free(r.gidx);
  free(r.gnll);
  free(r.parts);
  free(r.sum);
  return rc;
}
