/* The two-spirals classifier (train_spirals.h): data, model, forward and backward passes,
 * the training loop, checkpoints and the inference twin. */
#include "train_spirals.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/ckpt_dir.h"
#include "forgia/gemm.h"
#include "forgia/ops.h"
#include "forgia/rng.h"
#include "forgia/state_dict.h"
#include "forgia/trainer_state.h"
#include "train_spirals_net.h"
#include "util_signal.h"

#define N_POINTS SPIRALS_POINTS
#define H SPIRALS_HIDDEN
#define N_PARAMS 6

/* Sub-stream seeds: fg_rng_at(seed, k) for k = these (data, then one per parameter). */
#define SEED_DATA 0
#define SEED_PARAM0 1

static const char *const param_names[N_PARAMS] = {"fc1.weight", "fc1.bias", "fc2.weight",
                                                  "fc2.bias",   "fc3.weight", "fc3.bias"};
/* torch's Linear layout: weight [out, in], bias [out]. */
static const uint64_t param_shapes[N_PARAMS][2] = {{H, 2}, {H, 0}, {H, H}, {H, 0}, {2, H}, {2, 0}};
static const uint64_t param_fan_in[N_PARAMS] = {2, 2, H, H, H, H};

typedef struct mlp {
  fg_tensor *p[N_PARAMS]; /* in param_names' order */
} mlp;

/* The data and the activations, on the device. */
typedef struct work {
  fg_device *dev;
  fg_tensor *x, *ones, *h1, *h2, *logits, *dlogits, *d2, *d1;
  int32_t labels[N_POINTS];
  float host_logits[N_POINTS * 2], host_dlogits[N_POINTS * 2];
} work;

bool spirals_parse_optim(const char *name, fg_optim_kind *out) {
  for (int k = FG_OPTIM_SGD; k <= FG_OPTIM_APOLLO_MINI; k++) {
    const char *n = fg_optim_kind_name((fg_optim_kind)k);
    if (n && strcmp(n, name) == 0) {
      *out = (fg_optim_kind)k;
      return true;
    }
  }
  return false;
}

static fg_status new_tensor(fg_device *dev, const char *name, uint64_t rows, uint64_t cols, fg_tensor **out) {
  const uint64_t shape[2] = {rows, cols};
  return fg_tensor_create(dev, name, FG_F32, cols ? 2 : 1, shape, out);
}

/* The data (train_spirals_net.h), uploaded with the ones column of the bias GEMMs. */
static fg_status make_data(work *w, uint64_t seed) {
  float xy[2 * N_POINTS];
  fg_status s = spirals_make_data(seed, xy, w->labels);
  if (s) return s;
  float ones[N_POINTS];
  for (int i = 0; i < N_POINTS; i++) ones[i] = 1.0f;
  s = fg_tensor_upload(w->x, xy, sizeof xy, NULL);
  return s ? s : fg_tensor_upload(w->ones, ones, sizeof ones, NULL);
}

static void work_free(work *w) {
  fg_tensor *t[] = {w->x, w->ones, w->h1, w->h2, w->logits, w->dlogits, w->d2, w->d1};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) fg_tensor_free(t[i]);
}

static fg_status work_init(work *w, fg_device *dev, uint64_t seed) {
  memset(w, 0, sizeof *w);
  w->dev = dev;
  fg_status s = new_tensor(dev, "x", N_POINTS, 2, &w->x);
  if (!s) s = new_tensor(dev, "ones", N_POINTS, 0, &w->ones);
  if (!s) s = new_tensor(dev, "h1", N_POINTS, H, &w->h1);
  if (!s) s = new_tensor(dev, "h2", N_POINTS, H, &w->h2);
  if (!s) s = new_tensor(dev, "logits", N_POINTS, 2, &w->logits);
  if (!s) s = new_tensor(dev, "dlogits", N_POINTS, 2, &w->dlogits);
  if (!s) s = new_tensor(dev, "d2", N_POINTS, H, &w->d2);
  if (!s) s = new_tensor(dev, "d1", N_POINTS, H, &w->d1);
  if (!s) s = make_data(w, seed);
  if (s) work_free(w);
  return s;
}

static void mlp_free(mlp *m) {
  for (int i = 0; i < N_PARAMS; i++) fg_tensor_free(m->p[i]);
  memset(m, 0, sizeof *m);
}

/* The parameters, zero-filled; with grads, each with its f32 gradient; with seed, filled as
 * torch initialises a Linear (weight and bias uniform in +-1/sqrt(fan_in), which is the
 * library's Kaiming-uniform), each from its own stream. */
static fg_status mlp_init(mlp *m, fg_device *dev, bool grads, const uint64_t *seed) {
  memset(m, 0, sizeof *m);
  fg_status s = FG_OK;
  for (int i = 0; i < N_PARAMS && !s; i++) {
    s = new_tensor(dev, param_names[i], param_shapes[i][0], param_shapes[i][1], &m->p[i]);
    if (!s && grads) s = fg_tensor_grad_alloc(m->p[i]);
    if (!s && seed) {
      const fg_rng_spec r = {.kind = FG_RNG_KAIMING, .seed = fg_rng_at(*seed, SEED_PARAM0 + (uint64_t)i),
                             .fan_in = param_fan_in[i]};
      s = fg_rng_fill_tensor(m->p[i], &r, NULL);
    }
  }
  if (s) mlp_free(m);
  return s;
}

static fg_status gemm(work *w, bool ta, bool tb, size_t m, size_t n, size_t k, const void *a, size_t lda,
                      const void *b, size_t ldb, float beta, float *c, size_t ldc) {
  return fg_gemm(w->dev, FG_GEMM_EXACT, ta, tb, m, n, k, 1.0f, a, FG_F32, lda, b, FG_F32, ldb, beta, c, ldc, NULL);
}

static fg_status op2(work *w, fg_op_kind op, void *s0, const void *s1, size_t n) {
  fg_op_args a;
  memset(&a, 0, sizeof a);
  a.ptr[0] = s0;
  a.ptr[1] = (void *)s1;
  a.dtype[0] = a.dtype[1] = FG_F32;
  a.n = n;
  fg_op_params p;
  memset(&p, 0, sizeof p);
  return fg_op_run(w->dev, op, &p, &a, 1, NULL);
}

static fg_status linear(work *w, const fg_tensor *in, size_t in_f, const fg_tensor *wt, const fg_tensor *b,
                        fg_tensor *out, size_t out_f, bool relu) {
  return spirals_linear(w->dev, NULL, in->data, in_f, wt->data, b->data, w->ones->data, out->data, out_f, relu);
}

static fg_status forward(work *w, const mlp *m) {
  fg_status s = linear(w, w->x, 2, m->p[0], m->p[1], w->h1, H, true);
  if (!s) s = linear(w, w->h1, H, m->p[2], m->p[3], w->h2, H, true);
  if (!s) s = linear(w, w->h2, H, m->p[4], m->p[5], w->logits, 2, false);
  if (!s) s = fg_tensor_download(w->logits, w->host_logits, sizeof w->host_logits, NULL);
  return s;
}

/* The loss, the accuracy and the logits' gradient, on the host (train_spirals_net.h). */
static void loss_host(work *w, double *loss, uint32_t *correct) {
  spirals_loss(w->host_logits, w->labels, loss, correct, w->host_dlogits);
}

/* The gradients of the mean loss, written (beta 0) into every parameter's grad. */
static fg_status backward(work *w, mlp *m) {
  fg_status s = fg_tensor_upload(w->dlogits, w->host_dlogits, sizeof w->host_dlogits, NULL);
  float *const dl = w->dlogits->data, *const h1 = w->h1->data, *const h2 = w->h2->data;
  float *const d2 = w->d2->data, *const d1 = w->d1->data;
  /* layer 3: dW3 = dL^T H2, db3 = 1^T dL, dH2 = dL W3 (then through the ReLU) */
  if (!s) s = gemm(w, true, false, 2, H, N_POINTS, dl, 2, h2, H, 0.0f, m->p[4]->grad, H);
  if (!s) s = gemm(w, true, false, 1, 2, N_POINTS, w->ones->data, 1, dl, 2, 0.0f, m->p[5]->grad, 2);
  if (!s) s = gemm(w, false, false, N_POINTS, H, 2, dl, 2, m->p[4]->data, H, 0.0f, d2, H);
  if (!s) s = op2(w, FG_OP_RELU_BACKWARD, d2, h2, N_POINTS * H);
  /* layer 2 */
  if (!s) s = gemm(w, true, false, H, H, N_POINTS, d2, H, h1, H, 0.0f, m->p[2]->grad, H);
  if (!s) s = gemm(w, true, false, 1, H, N_POINTS, w->ones->data, 1, d2, H, 0.0f, m->p[3]->grad, H);
  if (!s) s = gemm(w, false, false, N_POINTS, H, H, d2, H, m->p[2]->data, H, 0.0f, d1, H);
  if (!s) s = op2(w, FG_OP_RELU_BACKWARD, d1, h1, N_POINTS * H);
  /* layer 1 (no input gradient needed) */
  if (!s) s = gemm(w, true, false, H, 2, N_POINTS, d1, H, w->x->data, 2, 0.0f, m->p[0]->grad, 2);
  if (!s) s = gemm(w, true, false, 1, H, N_POINTS, w->ones->data, 1, d1, H, 0.0f, m->p[1]->grad, H);
  return s;
}

/* Per optimizer, settings that train this small net in a few hundred steps. */
static fg_optim_config optim_config(fg_optim_kind kind, uint64_t seed) {
  fg_optim_config c = fg_optim_defaults(kind);
  switch (kind) {
    case FG_OPTIM_SGD:
      c.lr = 0.1f;
      c.momentum = 0.9f;
      break;
    case FG_OPTIM_ADAM:
    case FG_OPTIM_ADAMW:
      c.lr = 0.01f;
      break;
    case FG_OPTIM_MUON:
      c.lr = 0.02f;
      c.fallback.lr = 0.01f;
      break;
    case FG_OPTIM_APOLLO:
      c.lr = 0.01f;
      c.rank = 2; /* no larger than the smallest matrix side (fc1, fc3) */
      c.seed = seed;
      break;
    case FG_OPTIM_APOLLO_MINI:
      c.lr = 0.01f;
      c.seed = seed;
      break;
  }
  return c;
}

/* The parameters on the host as a state dict (host[i] owns the bytes). */
static fg_status download_params(const mlp *m, float *host[N_PARAMS], fg_state_dict_entry e[N_PARAMS]) {
  for (int i = 0; i < N_PARAMS; i++) {
    const fg_tensor *t = m->p[i];
    host[i] = malloc((size_t)t->nbytes);
    if (!host[i]) return fg_fail(FG_ERR_NOMEM, "spirals: out of memory");
    fg_status s = fg_tensor_download(t, host[i], (size_t)t->nbytes, NULL);
    if (s) return s;
    e[i] = (fg_state_dict_entry){param_names[i], FG_F32, t->ndim, t->shape, host[i], t->nbytes};
  }
  return FG_OK;
}

static fg_status save(const char *dir, const mlp *m, fg_optim *opt, uint64_t step, uint64_t seed, float lr) {
  float *host[N_PARAMS] = {0};
  fg_state_dict_entry e[N_PARAMS];
  uint8_t *ob = NULL;
  size_t olen = 0;
  fg_status s = download_params(m, host, e);
  if (!s) s = fg_optim_save_state(opt, &ob, &olen);
  if (!s) {
    fg_trainer_state ts;
    fg_trainer_state_init(&ts);
    ts.step = step;
    ts.seed = seed;
    FG_TRAINER_STATE_SET(ts, learning_rate, lr);
    FG_TRAINER_STATE_SET(ts, accum_steps, 1);
    s = fg_ckpt_dir_save(dir, FG_CKPT_DIR_MODEL, e, N_PARAMS, ob, olen, &ts);
  }
  free(ob);
  for (int i = 0; i < N_PARAMS; i++) free(host[i]);
  return s;
}

/* Host destinations for the parameters, listed in reverse order: loading matches by name. */
static fg_status load_params(const fg_ckpt_dir *d, mlp *m) {
  float *host[N_PARAMS] = {0};
  fg_state_dict_dest dst[N_PARAMS];
  fg_status s = FG_OK;
  for (int i = 0; i < N_PARAMS && !s; i++) {
    const fg_tensor *t = m->p[N_PARAMS - 1 - i];
    host[i] = malloc((size_t)t->nbytes);
    if (!host[i]) s = fg_fail(FG_ERR_NOMEM, "spirals: out of memory");
    dst[i] = (fg_state_dict_dest){param_names[N_PARAMS - 1 - i], FG_F32, t->ndim, t->shape, host[i], t->nbytes};
  }
  if (!s) s = fg_ckpt_dir_load_weights(d, FG_CKPT_DIR_MODEL, dst, N_PARAMS, NULL, NULL);
  for (int i = 0; i < N_PARAMS && !s; i++) {
    fg_tensor *t = m->p[N_PARAMS - 1 - i];
    s = fg_tensor_upload(t, host[i], (size_t)t->nbytes, NULL);
  }
  for (int i = 0; i < N_PARAMS; i++) free(host[i]);
  return s;
}

/* The inference twin: a constant MLP (no gradients, no optimizer) built fresh, its weights
 * loaded by name from the state dict's bytes (the saved file's, when there is one), run on
 * the same data; it must predict what the trained model predicts. */
static fg_status twin_check(work *w, const mlp *m, const char *saved_dir, spirals_result *r) {
  float trained[N_POINTS * 2];
  memcpy(trained, w->host_logits, sizeof trained);
  float *host[N_PARAMS] = {0};
  fg_state_dict_entry e[N_PARAMS];
  uint8_t *bytes = NULL;
  size_t len = 0;
  mlp twin;
  fg_status s = mlp_init(&twin, w->dev, false, NULL);
  if (s) return s;
  fg_ckpt_dir *d = NULL;
  if (saved_dir) {
    s = fg_ckpt_dir_open(saved_dir, &d);
    if (!s) s = load_params(d, &twin);
    fg_ckpt_dir_close(d);
  } else {
    s = download_params(m, host, e);
    if (!s) s = fg_state_dict_serialize(e, N_PARAMS, &bytes, &len);
    float *tw[N_PARAMS] = {0};
    fg_state_dict_dest dst[N_PARAMS];
    for (int i = 0; i < N_PARAMS && !s; i++) {
      const int j = N_PARAMS - 1 - i;
      tw[i] = malloc((size_t)twin.p[j]->nbytes);
      if (!tw[i]) s = fg_fail(FG_ERR_NOMEM, "spirals: out of memory");
      dst[i] = (fg_state_dict_dest){param_names[j], FG_F32, twin.p[j]->ndim, twin.p[j]->shape, tw[i],
                                    twin.p[j]->nbytes};
    }
    if (!s) s = fg_state_dict_load_bytes(bytes, len, "trained model", dst, N_PARAMS, NULL, NULL);
    for (int i = 0; i < N_PARAMS && !s; i++) {
      const int j = N_PARAMS - 1 - i;
      s = fg_tensor_upload(twin.p[j], tw[i], (size_t)twin.p[j]->nbytes, NULL);
    }
    for (int i = 0; i < N_PARAMS; i++) free(tw[i]);
  }
  if (!s) s = forward(w, &twin);
  if (!s) {
    r->twin_equal = 0;
    for (int i = 0; i < N_POINTS; i++) {
      const int a = trained[2 * i + 1] > trained[2 * i], b = w->host_logits[2 * i + 1] > w->host_logits[2 * i];
      r->twin_equal += a == b;
    }
    r->twin_bits_equal = memcmp(trained, w->host_logits, sizeof trained) == 0;
  }
  free(bytes);
  for (int i = 0; i < N_PARAMS; i++) free(host[i]);
  mlp_free(&twin);
  return s;
}

/* Resume: the checkpoint's trainer state, weights and optimizer state (after the optimizer
 * has its parameters, so the frame is matched by name against them). */
static fg_status resume(const char *dir, mlp *m, fg_optim *opt, fg_trainer_state *ts) {
  fg_ckpt_dir *d = NULL;
  fg_status s = fg_ckpt_dir_open(dir, &d);
  if (s) return s;
  *ts = *fg_ckpt_dir_trainer_state(d);
  const uint8_t *ob = NULL;
  size_t olen = 0;
  s = load_params(d, m);
  if (!s) s = fg_ckpt_dir_optimizer(d, &ob, &olen);
  if (!s) s = fg_optim_load_state(opt, ob, olen);
  if (s) fg_fail_prefix(s, "%s: ", dir);
  fg_ckpt_dir_close(d);
  return s;
}

/* The seed a checkpoint was trained with (the data and the initial weights follow from it). */
static fg_status checkpoint_seed(const char *dir, uint64_t *seed) {
  fg_ckpt_dir *d = NULL;
  fg_status s = fg_ckpt_dir_open(dir, &d);
  if (s) return s;
  *seed = fg_ckpt_dir_trainer_state(d)->seed;
  fg_ckpt_dir_close(d);
  return FG_OK;
}

static fg_status train(fg_device *dev, const spirals_opts *o, spirals_result *r);

/* The whole problem is a few MFLOP a step: on the CPU, forking threads for each GEMM and op
 * costs more than it saves (and much more on a loaded machine), so it runs on one unless
 * told otherwise (--threads). The bits
 * do not depend on the thread count (exact GEMM, elementwise ops). */
fg_status spirals_train(fg_device *dev, const spirals_opts *o, spirals_result *r) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(o->threads ? (int)o->threads : 1);
  fg_status s = train(dev, o, r);
  omp_set_num_threads(threads);
  return s;
}

static fg_status train(fg_device *dev, const spirals_opts *o, spirals_result *r) {
  memset(r, 0, sizeof *r);
  r->total = N_POINTS;
  uint64_t seed = o->seed;
  fg_status s = o->resume_dir ? checkpoint_seed(o->resume_dir, &seed) : FG_OK;
  if (s) return s;
  work w;
  mlp m;
  fg_optim *opt = NULL;
  s = work_init(&w, dev, seed);
  if (s) return s;
  s = mlp_init(&m, dev, true, &seed);
  if (s) {
    work_free(&w);
    return s;
  }
  const fg_optim_config c = optim_config(o->kind, seed);
  s = fg_optim_create(dev, &c, &opt);
  for (int i = 0; i < N_PARAMS && !s; i++) s = fg_optim_add(opt, m.p[i], param_names[i]);
  uint64_t step = 0;
  if (!s && o->resume_dir) {
    fg_trainer_state ts;
    fg_trainer_state_init(&ts);
    s = resume(o->resume_dir, &m, opt, &ts);
    step = ts.step;
    if (!s && step > o->steps)
      s = fg_fail(FG_ERR_INVALID_ARG, "%s: the checkpoint is at step %llu, past --steps %llu", o->resume_dir,
                  (unsigned long long)step, (unsigned long long)o->steps);
  }
  r->first_step = step;
  if (!s && !o->quiet)
    printf("spirals: %s on %s, %d points, MLP 2-%d-%d-2 (relu), seed %llu, steps %llu..%llu\n",
           fg_optim_kind_name(o->kind), fg_device_spec(dev), N_POINTS, H, H, (unsigned long long)seed,
           (unsigned long long)step, (unsigned long long)o->steps);
  const uint64_t every = o->steps / 10 ? o->steps / 10 : 1;
  while (!s && step < o->steps) {
    double loss;
    uint32_t correct;
    s = forward(&w, &m);
    if (s) break;
    loss_host(&w, &loss, &correct);
    s = backward(&w, &m);
    if (!s) s = fg_optim_step(opt, NULL);
    if (s) break;
    step++;
    if (!o->quiet && (step % every == 0 || step == o->steps))
      printf("  step %5llu: loss %.4f, accuracy %.3f (before the step)\n", (unsigned long long)step, loss,
             correct / (double)N_POINTS);
    if (o->snapshot_dir && step == o->snapshot_step) s = save(o->snapshot_dir, &m, opt, step, seed, c.lr);
    if (!s && fg_cli_signal_caught()) {
      r->interrupted = true;
      break;
    }
    if (!s && o->save_dir && o->save_every && step % o->save_every == 0 && step != o->steps)
      s = save(o->save_dir, &m, opt, step, seed, c.lr);
  }
  /* an interrupted run is saved too (the state after a whole step is consistent); only a
   * second signal cancels this save */
  if (r->interrupted) fg_cli_signals_grace();
  if (!s && o->save_dir) s = save(o->save_dir, &m, opt, step, seed, c.lr);
  if (!s) s = forward(&w, &m);
  if (!s) {
    loss_host(&w, &r->loss, &r->correct);
    r->step = step;
    s = twin_check(&w, &m, o->save_dir, r);
  }
  if (!s && !o->quiet) {
    printf("final: step %llu, loss %.4f, accuracy %.3f (%u/%u)%s\n", (unsigned long long)r->step, r->loss,
           r->correct / (double)r->total, r->correct, r->total, r->correct * 20 >= r->total * 19 ? "" : " (below 0.95)");
    printf("inference twin (a constant MLP loaded by name from %s): %u/%u predictions equal, logits %s\n",
           o->save_dir ? "the saved model.safetensors" : "the state dict", r->twin_equal, r->total,
           r->twin_bits_equal ? "bit-identical" : "DIFFER");
    if (o->save_dir) printf("saved %s (step %llu)\n", o->save_dir, (unsigned long long)r->step);
  }
  fg_optim_free(opt);
  mlp_free(&m);
  work_free(&w);
  return s;
}
