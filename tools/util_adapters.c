/* CLI helper: LoRA adapters on a running model (tools/util_adapters.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forgia/safetensors.h"
#include "forgia/trainer_state.h"
#include "util_adapters.h"
#include "util_report.h"

static fg_status hook(void *user, size_t layer, fg_lm_proj which, const float *x, size_t n_tok, size_t in, size_t out,
                      float *y, fg_stream *s) {
  (void)in, (void)out;
  const fg_cli_adapters *a = user;
  const fg_lora *l = layer < a->n_layer ? a->by[layer * FG_LM_PROJ_COUNT + which] : NULL;
  return l ? fg_lora_forward(l, NULL, x, n_tok, NULL, y, s) : FG_OK;
}

void fg_cli_adapters_free(fg_lm *lm, fg_cli_adapters *a) {
  if (lm) fg_lm_set_proj_hook(lm, NULL, NULL);
  if (a->by)
    for (size_t i = 0; i < a->n_layer * FG_LM_PROJ_COUNT; i++) fg_lora_free(a->by[i]);
  free(a->by);
  memset(a, 0, sizeof *a);
}

/* in and out of a projection of this model. */
static void proj_shape(const fg_lm_config *c, int t, uint64_t *in, uint64_t *out) {
  const uint64_t E = c->n_embd, Q = c->n_head * c->head_dim, KV = c->n_kv_head * c->head_dim, F = c->n_ff;
  const uint64_t shapes[FG_LM_PROJ_COUNT][2] = {{E, Q}, {E, KV}, {E, KV}, {Q, E}, {E, F}, {E, F}, {F, E}};
  *in = shapes[t][0];
  *out = shapes[t][1];
}

int fg_cli_adapters_attach(const fg_cli_spec *s, fg_lm *lm, const char *path, const char *alpha_text,
                           fg_cli_adapters *out) {
  memset(out, 0, sizeof *out);
  const char *cmd = s->cmd;
  char file[4200], state[4200];
  struct stat sb;
  const bool dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
  snprintf(file, sizeof file, dir ? "%s/adapters.safetensors" : "%s", path);
  snprintf(state, sizeof state, "%s/trainer_state.json", path);
  double alpha = NAN;
  if (alpha_text) {
    char *end = NULL;
    alpha = strtod(alpha_text, &end);
    if (end == alpha_text || *end || !isfinite(alpha))
      return fg_cli_usage_error(s, "--alpha", "'%s': expected a finite number", alpha_text);
  } else if (dir && stat(state, &sb) == 0) {
    fg_trainer_state ts;
    if (fg_trainer_state_load(state, &ts)) {
      fg_cli_report(cmd, state);
      return 1;
    }
    if (ts.lora_alpha.set) alpha = ts.lora_alpha.v;
  }
  if (isnan(alpha))
    return fg_cli_usage_error(s, "--adapters", "%s: no lora_alpha in a trainer_state.json beside the adapters: give --alpha",
                              path);
  const fg_lm_config *c = fg_lm_get_config(lm);
  fg_st_file *f = NULL;
  if (fg_st_open(file, FG_MAP_MMAP, &f)) {
    fg_cli_report(cmd, file);
    return 1;
  }
  out->n_layer = c->n_layer;
  out->alpha = alpha;
  out->by = calloc(c->n_layer * FG_LM_PROJ_COUNT, sizeof *out->by);
  fg_lora_slot *slots = calloc(fg_st_count(f) + 1, sizeof *slots);
  size_t n = 0;
  int rc = (!out->by || !slots) ? (fg_cli_fail(cmd, NULL, "out of memory"), 1) : 0;
  for (size_t i = 0; !rc && i < fg_st_count(f); i++) {
    const fg_st_tensor *t = fg_st_tensor_at(f, i);
    unsigned layer = 0;
    char target[16], ab = 0;
    int used = 0;
    if (sscanf(t->name, "layers.%u.%15[a-z].lora_%c%n", &layer, target, &ab, &used) != 3 || (size_t)used != t->name_len ||
        (ab != 'a' && ab != 'b')) {
      fg_cli_fail(cmd, file, "tensor '%s' is not an adapter (layers.<i>.<target>.lora_a / lora_b)", t->name);
      rc = 1;
      break;
    }
    int tg = -1;
    for (int k = 0; k < FG_LM_PROJ_COUNT; k++)
      if (!strcmp(target, fg_lora_target_name((fg_lora_target)k))) tg = k;
    if (tg < 0 || layer >= c->n_layer) {
      fg_cli_fail(cmd, file, "tensor '%s': %s", t->name,
                  tg < 0 ? "unknown target (q, k, v, o, gate, up, down)" : "layer beyond the model's");
      rc = 1;
      break;
    }
    if (ab != 'a') continue;
    uint64_t in = 0, o = 0;
    proj_shape(c, tg, &in, &o);
    if (t->ndim != 2 || t->shape[1] != in || t->shape[0] < 1 || t->shape[0] > in || t->shape[0] > o) {
      fg_cli_fail(cmd, file, "tensor '%s' must be [rank, %llu] (rank <= %llu) for this model", t->name,
                  (unsigned long long)in, (unsigned long long)(in < o ? in : o));
      rc = 1;
      break;
    }
    const fg_lora_config lc = {.rank = (uint32_t)t->shape[0], .alpha = (float)alpha, .dropout_p = 0.0f};
    fg_lora **slot = &out->by[layer * FG_LM_PROJ_COUNT + (size_t)tg];
    if (fg_lora_create(fg_lm_device(lm), in, o, &lc, 0, slot)) {
      fg_cli_report(cmd, file);
      rc = 1;
      break;
    }
    (*slot)->gemm = FG_GEMM_DEFAULT;
    slots[n++] = (fg_lora_slot){.layer = layer, .target = (fg_lora_target)tg, .lora = *slot};
  }
  fg_st_close(f);
  /* Strict: every tensor of the file is loaded into its adapter, and B must be [out, rank]. */
  if (!rc && !n) {
    fg_cli_fail(cmd, file, "holds no adapters");
    rc = 1;
  }
  if (!rc && fg_lora_load(file, slots, n)) {
    fg_cli_report(cmd, file);
    rc = 1;
  }
  free(slots);
  if (rc) {
    fg_cli_adapters_free(NULL, out);
    return rc;
  }
  out->count = n;
  fg_lm_set_proj_hook(lm, hook, out);
  return FG_CLI_GO;
}
