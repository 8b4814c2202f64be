/* CONFIG.json for forgia optim: one optimizer {"optimizer": ..., fields, "params": [...]}
 * or a set {"set": [member, ...]}; "clip_grad_norm" and "schedule" at the top. Every key is
 * checked, so a misspelt field is an error rather than a silent default. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

static bool parse_params(const cJSON *arr, const char *key, optim_cli_param **out, size_t *count, err *e) {
  if (!cJSON_IsArray(arr)) return fail(e, "\"%s\" must be an array", key);
  const int n = cJSON_GetArraySize(arr);
  *out = calloc(n > 0 ? (size_t)n : 1, sizeof **out);
  if (!*out) return fail(e, "out of memory");
  for (int i = 0; i < n; i++) {
    const cJSON *it = cJSON_GetArrayItem(arr, i);
    optim_cli_param *p = &(*out)[*count];
    if (cJSON_IsString(it)) {
      p->tensor = strdup(it->valuestring);
      p->name = strdup(it->valuestring);
    } else if (cJSON_IsObject(it)) {
      const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "tensor"), *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
      for (const cJSON *k = it->child; k; k = k->next)
        if (strcmp(k->string, "tensor") && strcmp(k->string, "name")) return fail(e, "%s[%d]: unknown key \"%s\"", key, i, k->string);
      if (!cJSON_IsString(t)) return fail(e, "%s[%d]: \"tensor\" must be a string", key, i);
      if (nm && !cJSON_IsNull(nm) && !cJSON_IsString(nm)) return fail(e, "%s[%d]: \"name\" must be a string or null", key, i);
      p->tensor = strdup(t->valuestring);
      p->name = cJSON_IsString(nm) ? strdup(nm->valuestring) : NULL;
    } else {
      return fail(e, "%s[%d]: expected a tensor name or {\"tensor\": ..., \"name\": ...}", key, i);
    }
    (*count)++;
  }
  return true;
}

/* Which kinds take a field. SGD, Adam and AdamW share one lenient set (a config written for
 * one of them runs under another); Muon and APOLLO take exactly their own fields. */
enum { K_ELEM = 1, K_MUON = 2, K_APOLLO = 4, K_FALLBACK = 8 };

static unsigned kind_bit(fg_optim_kind k) {
  return k == FG_OPTIM_MUON ? K_MUON : (k == FG_OPTIM_APOLLO || k == FG_OPTIM_APOLLO_MINI) ? K_APOLLO : K_ELEM;
}

typedef enum { F_F32, F_BOOL, F_DTYPE, F_U32, F_U64, F_MUON_SCALE, F_SCALE_TYPE } ftype;

typedef struct {
  const char *name;
  unsigned kinds;
  ftype type;
  size_t off; /* in fg_optim_config, or in fg_optim_fallback_config for K_FALLBACK */
} field;

#define C(f) offsetof(fg_optim_config, f)
#define FB(f) offsetof(fg_optim_fallback_config, f)
static const field FIELDS[] = {
    {"lr", K_ELEM | K_MUON | K_APOLLO, F_F32, C(lr)},
    {"weight_decay", K_ELEM | K_MUON | K_APOLLO, F_F32, C(weight_decay)},
    {"momentum", K_ELEM | K_MUON, F_F32, C(momentum)},
    {"dampening", K_ELEM, F_F32, C(dampening)},
    {"nesterov", K_ELEM | K_MUON, F_BOOL, C(nesterov)},
    {"beta1", K_ELEM | K_APOLLO, F_F32, C(beta1)},
    {"beta2", K_ELEM | K_APOLLO, F_F32, C(beta2)},
    {"eps", K_ELEM | K_APOLLO, F_F32, C(eps)},
    {"state_dtype", K_ELEM | K_MUON, F_DTYPE, C(state_dtype)},
    {"second_moment_dtype", K_ELEM, F_DTYPE, C(second_moment_dtype)},
    {"ns_steps", K_MUON, F_U32, C(ns_steps)},
    {"scale", K_MUON, F_MUON_SCALE, C(muon_scale)},
    {"scale", K_APOLLO, F_F32, C(apollo_scale)},
    {"rank", K_APOLLO, F_U64, C(rank)},
    {"update_proj_gap", K_APOLLO, F_U64, C(update_proj_gap)},
    {"scale_type", K_APOLLO, F_SCALE_TYPE, C(scale_type)},
    {"correct_bias", K_APOLLO, F_BOOL, C(correct_bias)},
    {"scale_front", K_APOLLO, F_BOOL, C(scale_front)},
    {"disable_norm_growth_limiter", K_APOLLO, F_BOOL, C(disable_norm_growth_limiter)},
    {"seed", K_APOLLO, F_U64, C(seed)},
    {"lr", K_FALLBACK, F_F32, FB(lr)},
    {"beta1", K_FALLBACK, F_F32, FB(beta1)},
    {"beta2", K_FALLBACK, F_F32, FB(beta2)},
    {"eps", K_FALLBACK, F_F32, FB(eps)},
    {"weight_decay", K_FALLBACK, F_F32, FB(weight_decay)},
    {"state_dtype", K_FALLBACK, F_DTYPE, FB(state_dtype)},
    {"second_moment_dtype", K_FALLBACK, F_DTYPE, FB(second_moment_dtype)},
};
#undef C
#undef FB

/* A whole number in [0, max]: a JSON integer up to 2^53 (exact in a double), or a string of
 * decimal digits for the full u64 range (a seed above 2^53 would not survive a double). */
static bool whole(const cJSON *v, uint64_t max, uint64_t *out) {
  if (cJSON_IsString(v)) {
    const char *s = v->valuestring;
    if (!*s || *s == '-' || *s == '+' || *s == ' ') return false;
    char *end;
    errno = 0;
    unsigned long long u = strtoull(s, &end, 10);
    if (errno || *end || u > max) return false;
    *out = u;
    return true;
  }
  if (!cJSON_IsNumber(v)) return false;
  const double d = v->valuedouble;
  if (!(d >= 0) || d > 9007199254740992.0 || d != (double)(uint64_t)d || (uint64_t)d > max) return false;
  *out = (uint64_t)d;
  return true;
}

/* Sets the field of `want` kinds named key from v; false with the reason (unknown: *known
 * false). */
static bool set_field(void *base, unsigned want, const char *where, const cJSON *v, bool *known, err *e) {
  const char *key = v->string;
  *known = false;
  for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++) {
    const field *f = &FIELDS[i];
    if (!(f->kinds & want) || strcmp(f->name, key)) continue;
    *known = true;
    void *p = (char *)base + f->off;
    double d = 0;
    uint64_t u = 0;
    switch (f->type) {
      case F_F32:
        if (!num(v, &d)) return fail(e, "%s: \"%s\" must be a number", where, key);
        *(float *)p = (float)d; /* Fucina keeps its config in f32 */
        return true;
      case F_BOOL:
        if (!cJSON_IsBool(v)) return fail(e, "%s: \"%s\" must be true or false", where, key);
        *(bool *)p = cJSON_IsTrue(v);
        return true;
      case F_DTYPE:
        if (!state_dtype(v, (fg_dtype *)p)) return fail(e, "%s: \"%s\" must be \"f32\" or \"bf16\"", where, key);
        return true;
      case F_U32:
        if (!whole(v, UINT32_MAX, &u)) return fail(e, "%s: \"%s\" must be a whole number below 2^32", where, key);
        *(uint32_t *)p = (uint32_t)u;
        return true;
      case F_U64:
        if (!whole(v, UINT64_MAX, &u))
          return fail(e, "%s: \"%s\" must be a whole number (above 2^53: a decimal string)", where, key);
        *(uint64_t *)p = u;
        return true;
      case F_MUON_SCALE: {
        const char *s = cJSON_IsString(v) ? v->valuestring : "";
        if (strcmp(s, "spectral") == 0) *(fg_muon_scale *)p = FG_MUON_SPECTRAL;
        else if (strcmp(s, "match_rms_adamw") == 0) *(fg_muon_scale *)p = FG_MUON_MATCH_RMS_ADAMW;
        else return fail(e, "%s: \"scale\" must be \"spectral\" or \"match_rms_adamw\"", where);
        return true;
      }
      case F_SCALE_TYPE: {
        const char *s = cJSON_IsString(v) ? v->valuestring : "";
        if (strcmp(s, "channel") == 0) *(fg_apollo_scale_type *)p = FG_APOLLO_CHANNEL;
        else if (strcmp(s, "tensor") == 0) *(fg_apollo_scale_type *)p = FG_APOLLO_TENSOR;
        else return fail(e, "%s: \"scale_type\" must be \"channel\" or \"tensor\"", where);
        return true;
      }
    }
  }
  return fail(e, "%s: unknown field \"%s\"", where, key);
}

static bool parse_member(const cJSON *o, optim_cli_member *m, bool top, err *e) {
  if (!cJSON_IsObject(o)) return fail(e, "an optimizer must be a JSON object");
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "optimizer");
  if (!cJSON_IsString(kind)) return fail(e, "\"optimizer\" must be a string: sgd, adam, adamw, muon, apollo or apollo-mini");
  const char *k = kind->valuestring;
  static const fg_optim_kind KINDS[] = {FG_OPTIM_SGD, FG_OPTIM_ADAM, FG_OPTIM_ADAMW, FG_OPTIM_MUON, FG_OPTIM_APOLLO,
                                        FG_OPTIM_APOLLO_MINI};
  bool found = false;
  for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0] && !found; i++)
    if (strcmp(k, fg_optim_kind_name(KINDS[i])) == 0) m->c = fg_optim_defaults(KINDS[i]), found = true;
  if (!found) return fail(e, "\"optimizer\": \"%s\" is not one this build has (sgd, adam, adamw, muon, apollo, apollo-mini)", k);
  const unsigned bit = kind_bit(m->c.kind);
  bool params = false;
  for (const cJSON *it = o->child; it; it = it->next) {
    const char *key = it->string;
    bool known;
    if (strcmp(key, "optimizer") == 0) continue;
    if (top && (strcmp(key, "clip_grad_norm") == 0 || strcmp(key, "schedule") == 0)) continue;
    if (strcmp(key, "params") == 0) {
      params = true;
      if (!parse_params(it, key, &m->params, &m->nparams, e)) return false;
      continue;
    }
    if (bit != K_ELEM && strcmp(key, "fallback_params") == 0) {
      params = true;
      if (!parse_params(it, key, &m->fallback_params, &m->nfallback, e)) return false;
      continue;
    }
    if (bit == K_MUON && strcmp(key, "fallback") == 0) {
      if (!cJSON_IsObject(it)) return fail(e, "muon: \"fallback\" must be an object of AdamW fields");
      for (const cJSON *f = it->child; f; f = f->next)
        if (!set_field(&m->c.fallback, K_FALLBACK, "muon fallback", f, &known, e)) return false;
      continue;
    }
    if (!set_field(&m->c, bit, k, it, &known, e)) return false;
  }
  m->all_params = !params;
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
    out->is_set = true;
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
    for (size_t j = 0; j < c->m[i].nfallback; j++) {
      free(c->m[i].fallback_params[j].tensor);
      free(c->m[i].fallback_params[j].name);
    }
    free(c->m[i].fallback_params);
  }
  free(c->m);
  memset(c, 0, sizeof *c);
}
