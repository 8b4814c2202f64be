/* CONFIG.json for forgia optim: one optimizer {"optimizer": ..., fields, "params": [...]}
 * or a set {"set": [member, ...]}; "clip_grad_norm" and "schedule" at the top. Every key is
 * checked, so a misspelt field is an error rather than a silent default. */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_optim_config.h"

typedef struct {
  char *why;
  size_t len;
} err;

static bool fail(err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->why, e->len, fmt, ap);
  va_end(ap);
  return false;
}

static bool num(const cJSON *v, double *out) {
  if (!cJSON_IsNumber(v)) return false;
  *out = v->valuedouble;
  return true;
}

static bool state_dtype(const cJSON *v, fg_dtype *out) {
  if (!cJSON_IsString(v)) return false;
  if (strcmp(v->valuestring, "f32") == 0) *out = FG_F32;
  else if (strcmp(v->valuestring, "bf16") == 0) *out = FG_BF16;
  else return false;
  return true;
}

static bool parse_params(const cJSON *arr, optim_cli_member *m, err *e) {
  if (!cJSON_IsArray(arr)) return fail(e, "\"params\" must be an array");
  const int n = cJSON_GetArraySize(arr);
  m->params = calloc(n > 0 ? (size_t)n : 1, sizeof *m->params);
  if (!m->params) return fail(e, "out of memory");
  for (int i = 0; i < n; i++) {
    const cJSON *it = cJSON_GetArrayItem(arr, i);
    optim_cli_param *p = &m->params[m->nparams];
    if (cJSON_IsString(it)) {
      p->tensor = strdup(it->valuestring);
      p->name = strdup(it->valuestring);
    } else if (cJSON_IsObject(it)) {
      const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "tensor"), *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
      for (const cJSON *k = it->child; k; k = k->next)
        if (strcmp(k->string, "tensor") && strcmp(k->string, "name")) return fail(e, "params[%d]: unknown key \"%s\"", i, k->string);
      if (!cJSON_IsString(t)) return fail(e, "params[%d]: \"tensor\" must be a string", i);
      if (nm && !cJSON_IsNull(nm) && !cJSON_IsString(nm)) return fail(e, "params[%d]: \"name\" must be a string or null", i);
      p->tensor = strdup(t->valuestring);
      p->name = cJSON_IsString(nm) ? strdup(nm->valuestring) : NULL;
    } else {
      return fail(e, "params[%d]: expected a tensor name or {\"tensor\": ..., \"name\": ...}", i);
    }
    m->nparams++;
  }
  return true;
}

static bool parse_member(const cJSON *o, optim_cli_member *m, bool top, err *e) {
  if (!cJSON_IsObject(o)) return fail(e, "an optimizer must be a JSON object");
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "optimizer");
  if (!cJSON_IsString(kind)) return fail(e, "\"optimizer\" must be a string: sgd, adam or adamw");
  const char *k = kind->valuestring;
  if (strcmp(k, "sgd") == 0) m->c = fg_optim_defaults(FG_OPTIM_SGD);
  else if (strcmp(k, "adam") == 0) m->c = fg_optim_defaults(FG_OPTIM_ADAM);
  else if (strcmp(k, "adamw") == 0) m->c = fg_optim_defaults(FG_OPTIM_ADAMW);
  else return fail(e, "\"optimizer\": \"%s\" is not one this build has (sgd, adam, adamw)", k);
  m->all_params = true;
  for (const cJSON *it = o->child; it; it = it->next) {
    const char *key = it->string;
    double d = 0;
    float *f = NULL;
    if (strcmp(key, "optimizer") == 0) continue;
    if (top && (strcmp(key, "clip_grad_norm") == 0 || strcmp(key, "schedule") == 0)) continue;
    if (strcmp(key, "params") == 0) {
      m->all_params = false;
      if (!parse_params(it, m, e)) return false;
      continue;
    }
    if (strcmp(key, "nesterov") == 0) {
      if (!cJSON_IsBool(it)) return fail(e, "\"nesterov\" must be true or false");
      m->c.nesterov = cJSON_IsTrue(it);
      continue;
    }
    if (strcmp(key, "state_dtype") == 0 || strcmp(key, "second_moment_dtype") == 0) {
      fg_dtype *dt = key[0] == 's' && key[1] == 't' ? &m->c.state_dtype : &m->c.second_moment_dtype;
      if (!state_dtype(it, dt)) return fail(e, "\"%s\" must be \"f32\" or \"bf16\"", key);
      continue;
    }
    if (strcmp(key, "lr") == 0) f = &m->c.lr;
    else if (strcmp(key, "weight_decay") == 0) f = &m->c.weight_decay;
    else if (strcmp(key, "momentum") == 0) f = &m->c.momentum;
    else if (strcmp(key, "dampening") == 0) f = &m->c.dampening;
    else if (strcmp(key, "beta1") == 0) f = &m->c.beta1;
    else if (strcmp(key, "beta2") == 0) f = &m->c.beta2;
    else if (strcmp(key, "eps") == 0) f = &m->c.eps;
    else return fail(e, "%s: unknown field \"%s\"", k, key);
    if (!num(it, &d)) return fail(e, "%s: \"%s\" must be a number", k, key);
    *f = (float)d; /* Fucina keeps its config in f32 */
  }
  return true;
}

static bool parse_schedule(const cJSON *o, optim_cli_config *c, err *e) {
  if (!cJSON_IsObject(o)) return fail(e, "\"schedule\" must be an object");
  c->has_schedule = true;
  c->schedule.kind = FG_LR_CONSTANT;
  for (const cJSON *it = o->child; it; it = it->next) {
    double d = 0;
    if (strcmp(it->string, "kind") == 0) {
      const char *v = cJSON_IsString(it) ? it->valuestring : "";
      if (strcmp(v, "constant") == 0) c->schedule.kind = FG_LR_CONSTANT;
      else if (strcmp(v, "warmup_cosine") == 0) c->schedule.kind = FG_LR_WARMUP_COSINE;
      else if (strcmp(v, "warmup_linear") == 0) c->schedule.kind = FG_LR_WARMUP_LINEAR;
      else return fail(e, "schedule: \"kind\" must be constant, warmup_cosine or warmup_linear");
    } else if (strcmp(it->string, "total_steps") == 0 || strcmp(it->string, "warmup_steps") == 0) {
      if (!num(it, &d) || d < 0 || d != (double)(uint64_t)d) return fail(e, "schedule: \"%s\" must be a whole number", it->string);
      *(it->string[0] == 't' ? &c->schedule.total_steps : &c->schedule.warmup_steps) = (uint64_t)d;
    } else if (strcmp(it->string, "min_factor") == 0) {
      if (!num(it, &c->schedule.min_factor)) return fail(e, "schedule: \"min_factor\" must be a number");
    } else {
      return fail(e, "schedule: unknown field \"%s\"", it->string);
    }
  }
  return true;
}

bool optim_cli_config_parse(const char *text, optim_cli_config *out, char *why, size_t why_len) {
  err e = {why, why_len};
  memset(out, 0, sizeof *out);
  cJSON *root = cJSON_Parse(text);
  if (!root) return fail(&e, "not JSON (near byte %td)", cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - text : 0);
  bool ok = cJSON_IsObject(root) || fail(&e, "the configuration must be a JSON object");
  const cJSON *set = ok ? cJSON_GetObjectItemCaseSensitive(root, "set") : NULL;
  if (ok && set) {
    ok = (cJSON_IsArray(set) && cJSON_GetArraySize(set) > 0) || fail(&e, "\"set\" must be a non-empty array");
    for (const cJSON *k = root->child; ok && k; k = k->next)
      if (strcmp(k->string, "set") && strcmp(k->string, "clip_grad_norm") && strcmp(k->string, "schedule"))
        ok = fail(&e, "unknown top-level field \"%s\" beside \"set\"", k->string);
    const int n = ok ? cJSON_GetArraySize(set) : 0;
    out->m = ok ? calloc((size_t)n, sizeof *out->m) : NULL;
    if (ok && !out->m) ok = fail(&e, "out of memory");
    for (int i = 0; ok && i < n; i++) {
      ok = parse_member(cJSON_GetArrayItem(set, i), &out->m[i], false, &e);
      out->n = (size_t)i + 1;
      if (ok && out->m[i].all_params) ok = fail(&e, "set member %d: \"params\" is required in a set", i);
    }
  } else if (ok) {
    out->m = calloc(1, sizeof *out->m);
    ok = out->m || fail(&e, "out of memory");
    if (ok) out->n = 1, ok = parse_member(root, &out->m[0], true, &e);
  }
  const cJSON *clip = ok ? cJSON_GetObjectItemCaseSensitive(root, "clip_grad_norm") : NULL;
  if (ok && clip) {
    double d = 0;
    ok = (num(clip, &d) && d > 0) || fail(&e, "\"clip_grad_norm\" must be a number > 0");
    out->clip = (float)d;
  }
  const cJSON *sch = ok ? cJSON_GetObjectItemCaseSensitive(root, "schedule") : NULL;
  if (ok && sch) ok = parse_schedule(sch, out, &e);
  cJSON_Delete(root);
  if (!ok) optim_cli_config_free(out);
  return ok;
}

void optim_cli_config_free(optim_cli_config *c) {
  for (size_t i = 0; i < c->n; i++) {
    for (size_t j = 0; j < c->m[i].nparams; j++) {
      free(c->m[i].params[j].tensor);
      free(c->m[i].params[j].name);
    }
    free(c->m[i].params);
  }
  free(c->m);
  memset(c, 0, sizeof *c);
}
