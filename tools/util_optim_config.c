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

/* Sets the field named key of the list fields (n; offsets into base) from v; false with the
 * reason (unknown: *known false). */
static bool set_field(void *base, const fg_optim_field *fields, size_t n, const char *where, const cJSON *v,
                      bool *known, err *e) {
  const char *key = v->string;
  *known = false;
  for (size_t i = 0; i < n; i++) {
    const fg_optim_field *f = &fields[i];
    if (strcmp(f->name, key)) continue;
    *known = true;
    void *p = (char *)base + f->offset;
    double d = 0;
    uint64_t u = 0;
    switch (f->type) {
      case FG_OPTIM_FIELD_F32:
        if (!num(v, &d)) return fail(e, "%s: \"%s\" must be a number", where, key);
        *(float *)p = (float)d; /* Fucina keeps its config in f32 */
        return true;
      case FG_OPTIM_FIELD_BOOL:
        if (!cJSON_IsBool(v)) return fail(e, "%s: \"%s\" must be true or false", where, key);
        *(bool *)p = cJSON_IsTrue(v);
        return true;
      case FG_OPTIM_FIELD_DTYPE:
        if (!state_dtype(v, (fg_dtype *)p)) return fail(e, "%s: \"%s\" must be \"f32\" or \"bf16\"", where, key);
        return true;
      case FG_OPTIM_FIELD_U32:
        if (!whole(v, UINT32_MAX, &u)) return fail(e, "%s: \"%s\" must be a whole number below 2^32", where, key);
        *(uint32_t *)p = (uint32_t)u;
        return true;
      case FG_OPTIM_FIELD_U64:
        if (!whole(v, UINT64_MAX, &u))
          return fail(e, "%s: \"%s\" must be a whole number (above 2^53: a decimal string)", where, key);
        *(uint64_t *)p = u;
        return true;
      case FG_OPTIM_FIELD_ENUM: { /* an int-sized C enum, 0 or 1 by name */
        const char *s = cJSON_IsString(v) ? v->valuestring : "";
        for (int k = 0; k < 2; k++)
          if (strcmp(s, f->names[k]) == 0) return *(int *)p = k, true;
        return fail(e, "%s: \"%s\" must be \"%s\" or \"%s\"", where, key, f->names[0], f->names[1]);
      }
    }
  }
  return fail(e, "%s: unknown field \"%s\"", where, key);
}

/* The kinds this build has, from their descriptors: "a, b or c" (last "or") or "a, b, c". */
static void kind_list(char *out, size_t len, bool or_last) {
  size_t n = 0, at = 0;
  while (fg_optim_kind_describe((fg_optim_kind)n)) n++;
  out[0] = '\0';
  for (size_t i = 0; i < n && at < len; i++) {
    const char *sep = i == 0 ? "" : (or_last && i + 1 == n) ? " or " : ", ";
    at += (size_t)snprintf(out + at, len - at, "%s%s", sep, fg_optim_kind_describe((fg_optim_kind)i)->name);
  }
}

static bool parse_member(const cJSON *o, optim_cli_member *m, bool top, err *e) {
  if (!cJSON_IsObject(o)) return fail(e, "an optimizer must be a JSON object");
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "optimizer");
  char kinds[256];
  kind_list(kinds, sizeof kinds, true);
  if (!cJSON_IsString(kind)) return fail(e, "\"optimizer\" must be a string: %s", kinds);
  const char *k = kind->valuestring;
  const fg_optim_kind_desc *d = NULL;
  for (int i = 0; fg_optim_kind_describe((fg_optim_kind)i) && !d; i++)
    if (strcmp(k, fg_optim_kind_describe((fg_optim_kind)i)->name) == 0) d = fg_optim_kind_describe((fg_optim_kind)i);
  if (!d) {
    kind_list(kinds, sizeof kinds, false);
    return fail(e, "\"optimizer\": \"%s\" is not one this build has (%s)", k, kinds);
  }
  m->c = fg_optim_defaults(d->kind);
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
    if (d->has_fallback && strcmp(key, "fallback_params") == 0) {
      params = true;
      if (!parse_params(it, key, &m->fallback_params, &m->nfallback, e)) return false;
      continue;
    }
    if (d->fallback_fields && strcmp(key, "fallback") == 0) {
      if (!cJSON_IsObject(it)) return fail(e, "%s: \"fallback\" must be an object of AdamW fields", k);
      char where[64];
      snprintf(where, sizeof where, "%s fallback", k);
      for (const cJSON *f = it->child; f; f = f->next)
        if (!set_field(&m->c.fallback, d->fallback_fields, d->n_fallback_fields, where, f, &known, e)) return false;
      continue;
    }
    if (!set_field(&m->c, d->fields, d->n_fields, k, it, &known, e)) return false;
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
