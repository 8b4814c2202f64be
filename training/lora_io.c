/* LoRA names: optimizer registration, registry rows and the adapters.safetensors set
 * (layers.<i>.<target>.lora_{a,b}, Fucina's checkpoint schema). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/lora.h"

static const char *const fg_lora_targets[FG_LORA_TARGET_COUNT] = {"q", "k", "v", "o", "gate", "up", "down"};

const char *fg_lora_target_name(fg_lora_target t) {
  return (unsigned)t < FG_LORA_TARGET_COUNT ? fg_lora_targets[t] : NULL;
}

fg_status fg_lora_names(const char *prefix, char a[FG_LORA_NAME_MAX], char b[FG_LORA_NAME_MAX]) {
  if (!prefix || !a || !b) return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_names: NULL argument");
  if (!prefix[0]) return fg_fail(FG_ERR_INVALID_ARG, "lora: empty name prefix");
  if (strlen(prefix) + sizeof ".lora_a" > FG_LORA_NAME_MAX)
    return fg_fail(FG_ERR_INVALID_ARG, "lora: name prefix '%.40s...' longer than %d bytes", prefix,
                   FG_LORA_NAME_MAX - (int)sizeof ".lora_a");
  snprintf(a, FG_LORA_NAME_MAX, "%s.lora_a", prefix);
  snprintf(b, FG_LORA_NAME_MAX, "%s.lora_b", prefix);
  return FG_OK;
}

fg_status fg_lora_register(fg_lora *l, fg_optim *o, const char *prefix) {
  char n[2][FG_LORA_NAME_MAX];
  fg_registry_entry rows[2];
  fg_status st = fg_lora_registry_entries(l, prefix, n, rows);
  if (st) return st;
  if (!o) return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_register: NULL optimizer");
  /* the registry checks both rows against the optimizer before adding either */
  fg_registry *r = NULL;
  if (!(st = fg_registry_create(rows, 2, &r))) st = fg_registry_add_to_optim(r, o);
  fg_registry_free(r);
  return st;
}

fg_status fg_lora_registry_entries(fg_lora *l, const char *prefix, char names[2][FG_LORA_NAME_MAX],
                                   fg_registry_entry rows[2]) {
  if (!l || !names || !rows) return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_registry_entries: NULL argument");
  fg_status st = fg_lora_names(prefix, names[0], names[1]);
  if (st) return st;
  rows[0] = (fg_registry_entry){names[0], l->a, true};
  rows[1] = (fg_registry_entry){names[1], l->b, true};
  return FG_OK;
}

/* A registry over the set (2 rows per slot; the names live in *names). */
static fg_status set_registry(const fg_lora_slot *set, size_t n, fg_registry **out, char (**names)[FG_LORA_NAME_MAX]) {
  *out = NULL;
  *names = NULL;
  if (!set && n) return fg_fail(FG_ERR_INVALID_ARG, "lora: NULL adapter set");
  if (n == 0) return fg_fail(FG_ERR_INVALID_ARG, "lora: an empty adapter set");
  if (n > SIZE_MAX / (2 * FG_LORA_NAME_MAX)) return fg_fail(FG_ERR_OVERFLOW, "lora: %zu adapters", n);
  char(*nm)[FG_LORA_NAME_MAX] = calloc(2 * n, FG_LORA_NAME_MAX);
  fg_registry_entry *rows = calloc(2 * n, sizeof *rows);
  fg_status st = !nm || !rows ? fg_fail(FG_ERR_NOMEM, "lora: out of memory") : FG_OK;
  for (size_t i = 0; !st && i < n; i++) {
    const char *t = fg_lora_target_name(set[i].target);
    if (!t)
      st = fg_fail(FG_ERR_INVALID_ARG, "lora: adapter %zu has an unknown target %d", i, (int)set[i].target);
    else if (!set[i].lora)
      st = fg_fail(FG_ERR_INVALID_ARG, "lora: adapter %zu (layers.%u.%s) is NULL", i, set[i].layer, t);
    char prefix[64];
    if (!st) snprintf(prefix, sizeof prefix, "layers.%u.%s", set[i].layer, t);
    if (!st) st = fg_lora_registry_entries(set[i].lora, prefix, &nm[2 * i], &rows[2 * i]);
  }
  if (!st) st = fg_registry_create(rows, 2 * n, out);
  free(rows);
  if (st) {
    free(nm);
    return st;
  }
  *names = nm;
  return FG_OK;
}

/* The set's registry (nm holds its names), saved to or loaded from path. */
static fg_status lora_file(const char *path, const fg_lora_slot *set, size_t n, bool load) {
  fg_registry *r;
  char(*nm)[FG_LORA_NAME_MAX];
  fg_status st = set_registry(set, n, &r, &nm);
  if (!st) st = load ? fg_registry_load_file(r, path, NULL, NULL) : fg_registry_save(r, path);
  fg_registry_free(r);
  free(nm);
  return st;
}

fg_status fg_lora_save(const char *path, const fg_lora_slot *set, size_t n) {
  if (!path) return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_save: NULL path");
  return lora_file(path, set, n, false);
}

fg_status fg_lora_load(const char *path, const fg_lora_slot *set, size_t n) {
  if (!path) return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_load: NULL path");
  return lora_file(path, set, n, true);
}
