/* `forgia es replay` (es_replay.h): config and rewards parsing, the replay itself. */
#include "es_replay.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/ckpt.h"
#include "forgia/es.h"
#include "forgia/tensor_ckpt.h"

static bool say(char *why, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static bool say(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
  return false;
}

/* ---- the raw text of a top-level value (cJSON keeps numbers as doubles, which lose the
 * low bits of a u64 seed above 2^53; the digits are read from the text instead) ---- */

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

/* p at a '"': the byte after the closing quote. */
static const char *skip_string(const char *p) {
  for (p++; *p && *p != '"'; p++)
    if (*p == '\\' && p[1]) p++;
  return *p ? p + 1 : p;
}

/* p at a value: the byte after it (the text was validated by cJSON first). */
static const char *skip_value(const char *p) {
  if (*p == '"') return skip_string(p);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (*p) {
      if (*p == '"') {
        p = skip_string(p);
        continue;
      }
      if (*p == '{' || *p == '[') depth++;
      if (*p == '}' || *p == ']') {
        if (--depth == 0) return p + 1;
      }
      p++;
    }
    return p;
  }
  while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') p++;
  return p;
}

/* The first top-level member whose key is spelled key without escapes. */
static bool raw_value(const char *text, const char *key, const char **start, size_t *len) {
  const size_t kl = strlen(key);
  const char *p = skip_ws(text);
  if (*p != '{') return false;
  p = skip_ws(p + 1);
  while (*p == '"') {
    const char *k = p + 1, *ke = skip_string(p);
    const bool match = (size_t)(ke - 1 - k) == kl && memcmp(k, key, kl) == 0;
    p = skip_ws(ke);
    if (*p != ':') return false;
    p = skip_ws(p + 1);
    const char *v = p;
    p = skip_value(p);
    if (match) {
      *start = v;
      *len = (size_t)(p - v);
      return true;
    }
    p = skip_ws(p);
    if (*p != ',') return false;
    p = skip_ws(p + 1);
  }
  return false;
}

/* Decimal digits only, at most 2^64 - 1. */
static bool digits_u64(const char *s, size_t n, uint64_t *out) {
  if (n == 0 || n > 20) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    const uint64_t d = (uint64_t)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

/* An integer field: a JSON integer (its exact digits) or a decimal string. */
static bool get_u64(const char *text, const cJSON *item, const char *key, uint64_t *out, char *why, size_t wn) {
  if (cJSON_IsString(item)) {
    if (!digits_u64(item->valuestring, strlen(item->valuestring), out))
      return say(why, wn, "%s: \"%s\" is not a decimal integer in 0..2^64-1", key, item->valuestring);
    return true;
  }
  const char *raw;
  size_t rl;
  if (!cJSON_IsNumber(item) || !raw_value(text, key, &raw, &rl))
    return say(why, wn, "%s: expected a non-negative integer", key);
  if (!digits_u64(raw, rl, out))
    return say(why, wn, "%s: %.*s is not an integer in 0..2^64-1 (no sign, fraction or exponent)", key, (int)rl, raw);
  return true;
}

static bool get_f32(const cJSON *item, const char *key, float *out, char *why, size_t wn) {
  if (!cJSON_IsNumber(item)) return say(why, wn, "%s: expected a number", key);
  const float f = (float)item->valuedouble;
  if (!isfinite(f)) return say(why, wn, "%s: %g is not a finite f32", key, item->valuedouble);
  *out = f;
  return true;
}

static bool get_bool(const cJSON *item, const char *key, bool *out, char *why, size_t wn) {
  if (!cJSON_IsBool(item)) return say(why, wn, "%s: expected true or false", key);
  *out = cJSON_IsTrue(item);
  return true;
}

/* An enum by its seed name through the library's parser (whose message names the text). */
#define GET_ENUM(item, key, parse, out)                                                                     \
  do {                                                                                                      \
    if (!cJSON_IsString(item)) return say(why, wn, "%s: expected a string (%s)", key, names_of_##parse);    \
    if (parse((item)->valuestring, out))                                                                    \
      return say(why, wn, "%s: unknown name \"%s\" (expected %s)", key, (item)->valuestring, names_of_##parse); \
  } while (0)

static const char names_of_fg_es_noise_parse[] = "iid or correlated";
static const char names_of_fg_es_restore_mode_parse[] = "regenerate or snapshot";
static const char names_of_fg_es_reward_norm_parse[] = "z_score, centered_ranks or none";
static const char names_of_fg_es_anchor_decay_parse[] = "none, l1 or l2";

static bool parse_fields(const char *text, const cJSON *root, es_replay_config *o, char *why, size_t wn) {
  fg_es_config *c = &o->c;
  bool has_params = false;
  for (const cJSON *it = root->child; it; it = it->next) {
    const char *k = it->string;
    for (const cJSON *j = root->child; j != it; j = j->next)
      if (strcmp(j->string, k) == 0) return say(why, wn, "%s: given twice", k);
    if (strcmp(k, "sigma") == 0) {
      if (!get_f32(it, k, &c->sigma, why, wn)) return false;
    } else if (strcmp(k, "alpha") == 0) {
      if (!get_f32(it, k, &c->alpha, why, wn)) return false;
      c->has_alpha = true;
    } else if (strcmp(k, "population") == 0) {
      if (!get_u64(text, it, k, &c->population, why, wn)) return false;
    } else if (strcmp(k, "antithetic") == 0) {
      if (!get_bool(it, k, &c->antithetic, why, wn)) return false;
    } else if (strcmp(k, "noise") == 0) {
      GET_ENUM(it, k, fg_es_noise_parse, &c->noise);
    } else if (strcmp(k, "restore_mode") == 0) {
      GET_ENUM(it, k, fg_es_restore_mode_parse, &c->restore_mode);
    } else if (strcmp(k, "reward_norm") == 0) {
      GET_ENUM(it, k, fg_es_reward_norm_parse, &c->reward_norm);
    } else if (strcmp(k, "anchor_decay") == 0) {
      GET_ENUM(it, k, fg_es_anchor_decay_parse, &c->anchor_decay);
    } else if (strcmp(k, "anchor_lambda") == 0) {
      if (!get_f32(it, k, &c->anchor_lambda, why, wn)) return false;
    } else if (strcmp(k, "cache_streams") == 0) {
      if (!get_bool(it, k, &c->cache_streams, why, wn)) return false;
    } else if (strcmp(k, "ternary_flip_rate") == 0) {
      if (!get_f32(it, k, &c->ternary_flip_rate, why, wn)) return false;
    } else if (strcmp(k, "ternary_update_fraction") == 0) {
      if (!get_f32(it, k, &c->ternary_update_fraction, why, wn)) return false;
    } else if (strcmp(k, "ternary_update_decay") == 0) {
      if (!get_f32(it, k, &c->ternary_update_decay, why, wn)) return false;
    } else if (strcmp(k, "seed") == 0) {
      if (!get_u64(text, it, k, &c->seed, why, wn)) return false;
    } else if (strcmp(k, "params") == 0) {
      const int n = cJSON_GetArraySize(it);
      if (!cJSON_IsArray(it) || n == 0) return say(why, wn, "params: expected a non-empty list of tensor names");
      o->params = calloc((size_t)n, sizeof *o->params);
      if (!o->params) return say(why, wn, "out of memory");
      for (const cJSON *e = it->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0])
          return say(why, wn, "params[%zu]: expected a tensor name (a non-empty string)", o->nparams);
        for (size_t q = 0; q < o->nparams; q++)
          if (strcmp(o->params[q], e->valuestring) == 0)
            return say(why, wn, "params[%zu]: '%s' is listed twice (it would be perturbed twice)", o->nparams,
                       e->valuestring);
        o->params[o->nparams] = strdup(e->valuestring);
        if (!o->params[o->nparams]) return say(why, wn, "out of memory");
        o->nparams++;
      }
      has_params = true;
    } else {
      return say(why, wn,
                 "%s: unknown field (known: sigma, alpha, population, antithetic, noise, restore_mode, reward_norm, "
                 "anchor_decay, anchor_lambda, cache_streams, ternary_flip_rate, ternary_update_fraction, "
                 "ternary_update_decay, seed, params)",
                 k);
    }
  }
  if (!has_params) return say(why, wn, "params: missing (the tensor names of P, in registration order)");
  if (fg_es_config_check(c)) return say(why, wn, "%s", fg_last_error());
  return true;
}

bool es_replay_config_parse(const char *text, es_replay_config *out, char *why, size_t why_len) {
  memset(out, 0, sizeof *out);
  out->c = fg_es_defaults();
  cJSON *root = cJSON_Parse(text);
  if (!root) return say(why, why_len, "not valid JSON (near byte %zu)", (size_t)(cJSON_GetErrorPtr() - text));
  bool ok = cJSON_IsObject(root) ? parse_fields(text, root, out, why, why_len)
                                 : say(why, why_len, "expected a JSON object of ES settings");
  cJSON_Delete(root);
  if (!ok) es_replay_config_free(out);
  return ok;
}

void es_replay_config_free(es_replay_config *c) {
  for (size_t i = 0; c->params && i < c->nparams; i++) free(c->params[i]);
  free(c->params);
  c->params = NULL;
  c->nparams = 0;
}

fg_status es_replay_rewards_parse(const char *text, const char *source, uint64_t population, float **out,
                                  size_t *iterations) {
  *out = NULL;
  *iterations = 0;
  cJSON *root = cJSON_Parse(text);
  if (!root)
    return fg_fail(FG_ERR_INVALID_JSON, "%s: not valid JSON (near byte %zu)", source,
                   (size_t)(cJSON_GetErrorPtr() - text));
  fg_status s = FG_OK;
  const int n = cJSON_GetArraySize(root);
  float *r = NULL;
  if (!cJSON_IsArray(root))
    s = fg_fail(FG_ERR_INVALID_ARG, "%s: expected an array of reward vectors (one per iteration)", source);
  else if (n > 0 && !(r = malloc((size_t)n * (size_t)population * sizeof *r)))
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", source);
  size_t i = 0;
  for (const cJSON *v = root->child; v && !s; v = v->next, i++) {
    if (!cJSON_IsArray(v)) {
      s = fg_fail(FG_ERR_INVALID_ARG, "%s: iteration %zu: expected an array of %llu rewards (the population)", source, i,
                  (unsigned long long)population);
      break;
    }
    if ((uint64_t)cJSON_GetArraySize(v) != population) {
      s = fg_fail(FG_ERR_INVALID_ARG, "%s: iteration %zu has %d rewards, the population is %llu", source, i,
                  cJSON_GetArraySize(v), (unsigned long long)population);
      break;
    }
    size_t m = 0;
    for (const cJSON *e = v->child; e && !s; e = e->next, m++) {
      if (!cJSON_IsNumber(e)) {
        s = fg_fail(FG_ERR_INVALID_ARG, "%s: iteration %zu, member %zu: expected a number", source, i, m);
        break;
      }
      const float f = (float)e->valuedouble;
      if (!isfinite(f))
        s = fg_fail(FG_ERR_NONFINITE, "%s: iteration %zu, member %zu: reward %g is not a finite f32", source, i, m,
                    e->valuedouble);
      else
        r[i * population + m] = f;
    }
  }
  cJSON_Delete(root);
  if (s) {
    free(r);
    return s;
  }
  *out = r;
  *iterations = (size_t)n;
  return FG_OK;
}

static fg_status write_out(const char *path, fg_tensor *const *t, const char *const *names, size_t n) {
  fg_st_write_tensor *w = calloc(n, sizeof *w);
  void **host = calloc(n, sizeof *host);
  fg_status s = w && host ? FG_OK : fg_fail(FG_ERR_NOMEM, "es replay: out of memory");
  for (size_t i = 0; i < n && !s; i++) {
    host[i] = malloc(t[i]->nbytes ? (size_t)t[i]->nbytes : 1);
    s = host[i] ? fg_tensor_download(t[i], host[i], (size_t)t[i]->nbytes, NULL)
                : fg_fail(FG_ERR_NOMEM, "es replay: out of memory");
    w[i] = (fg_st_write_tensor){names[i], t[i]->dtype, t[i]->ndim, t[i]->shape, host[i], t[i]->nbytes};
  }
  if (!s) s = fg_st_save(path, w, n, NULL, 0);
  for (size_t i = 0; host && i < n; i++) free(host[i]);
  free(host);
  free(w);
  return s;
}

fg_status es_replay_run(fg_device *dev, const es_replay_config *c, const char *params_path, const float *rewards,
                        size_t iterations, bool in_place, const char *rewards_source, const char *out_path) {
  fg_ckpt *p = NULL;
  fg_es *es = NULL;
  fg_tensor **t = calloc(c->nparams, sizeof *t);
  if (!t) return fg_fail(FG_ERR_NOMEM, "es replay: out of memory");
  fg_status s = fg_ckpt_open(params_path, &p);
  if (!s) s = fg_es_create(&c->c, &es);
  for (size_t i = 0; i < c->nparams && !s; i++) {
    const fg_ckpt_tensor *ct = fg_ckpt_find(p, c->params[i]);
    if (!ct) {
      s = fg_fail(FG_ERR_NOT_FOUND, "%s: no tensor '%s' (params[%zu] of the config)", params_path, c->params[i], i);
      break;
    }
    s = fg_tensor_load_ckpt(dev, p, ct, ct->dtype, &t[i]);
    if (!s) s = fg_es_add(es, t[i], c->params[i]);
    if (s) fg_fail_prefix(s, "%s: tensor '%s': ", params_path, c->params[i]);
  }
  if (!s && c->c.anchor_decay != FG_ES_ANCHOR_NONE) s = fg_es_capture_anchor(es);
  const uint64_t pop = c->c.population;
  for (size_t k = 0; k < iterations && !s; k++) {
    for (uint64_t m = 0; in_place && m < pop && !s; m++) {
      s = fg_es_perturb(es, m);
      if (!s) s = fg_es_restore(es, m);
    }
    if (!s) s = fg_es_update(es, rewards + k * pop, (size_t)pop, NULL);
    if (s) fg_fail_prefix(s, "%s: iteration %zu: ", rewards_source, k);
  }
  if (!s) s = write_out(out_path, t, (const char *const *)c->params, c->nparams);
  fg_es_free(es);
  for (size_t i = 0; i < c->nparams; i++) fg_tensor_free(t[i]);
  free(t);
  fg_ckpt_close(p);
  return s;
}
