/* forgia inspect: optimizer frames (forgia/optim_frame.h) and trainer states
 * (forgia/trainer_state.h) shown readably or as JSON, for a checkpoint directory and for a
 * lone optimizer.fucina or trainer_state.json alike. */
#include "inspect_frame.h"

#include <stdio.h>
#include <string.h>

#include "util_json.h"
#include "util_text.h"

/* Readable output lists at most this many slots per list without --full. */
#define LIST_LIMIT 64

/* A frame's row (forgia/optim_frame.h): its name, magics, slot layout and header fields.
 * Parsed frames always have one. */
static const fg_oframe_kind_desc *desc(const fg_oframe *f) { return fg_optim_frame_describe(f->kind); }

static const char *magic(const fg_oframe *f) {
  const char *m = f->version >= 0 && f->version < 6 ? desc(f)->magics[f->version] : NULL;
  return m ? m : "?";
}

/* Whether the slots of a list carry a step on the wire (Muon's main slots do not). */
static bool has_step(const fg_oframe *f, bool fallback) { return desc(f)->n_bufs && (fallback || desc(f)->step); }

static uint64_t max_step(const fg_oframe *f) {
  uint64_t m = 0;
  for (size_t i = 0; i < f->n_slots; i++) m = f->slots[i].step > m ? f->slots[i].step : m;
  for (size_t i = 0; i < f->n_fallback; i++) m = f->fallback[i].step > m ? f->fallback[i].step : m;
  return m;
}

static float f32_of(uint32_t bits) {
  float x;
  memcpy(&x, &bits, 4);
  return x;
}

/* Header field h of f, widened. */
static uint64_t field_value(const fg_oframe *f, const fg_oframe_field *h) {
  const char *p = (const char *)f + h->offset;
  switch (h->type) {
    case FG_OFRAME_FIELD_BOOL:
    case FG_OFRAME_FIELD_ENUM: return *(const uint8_t *)p;
    case FG_OFRAME_FIELD_F32:
    case FG_OFRAME_FIELD_U32: return *(const uint32_t *)p;
    case FG_OFRAME_FIELD_U64: return *(const uint64_t *)p;
  }
  return 0;
}

/* An ENUM field's name for value v (a parsed frame holds 0 or 1). */
static const char *enum_name(const fg_oframe_field *h, uint64_t v) { return h->names[v ? 1 : 0]; }

static const char *state_dtype(fg_oframe_dtype d) { return d == FG_OFRAME_DTYPE_BF16 ? "bf16" : "f32"; }

static cJSON *slot_json(const fg_oframe *f, const fg_oframe_slot *s, bool fallback) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "name", fg_cli_json_bytes(s->name, s->name_len));
  cJSON *sh = cJSON_AddArrayToObject(o, "shape");
  cJSON_AddItemToArray(sh, fg_cli_json_u64(s->rows));
  cJSON_AddItemToArray(sh, fg_cli_json_u64(s->cols));
  if (has_step(f, fallback)) cJSON_AddItemToObject(o, "step", fg_cli_json_u64(s->step));
  if (desc(f)->main_extras && !fallback) {
    cJSON_AddItemToObject(o, "seed", fg_cli_json_u64(s->seed));
    if (s->prev_norm_bits == 0xffffffffu) cJSON_AddNullToObject(o, "prev_norm");
    else cJSON_AddItemToObject(o, "prev_norm", fg_cli_json_f64(f32_of(s->prev_norm_bits)));
  }
  cJSON *dt = cJSON_AddArrayToObject(o, "state_dtypes");
  for (int k = 0; k < s->n_bufs && k < 2; k++) cJSON_AddItemToArray(dt, cJSON_CreateString(state_dtype(s->bufs[k].dtype)));
  if (f->version == 5) cJSON_AddBoolToObject(o, "master", s->has_master);
  return o;
}

cJSON *fg_cli_frame_json(const fg_oframe *f) {
  cJSON *o = cJSON_CreateObject();
  const fg_oframe_kind_desc *d = desc(f);
  cJSON_AddStringToObject(o, "kind", d->name);
  cJSON_AddStringToObject(o, "magic", magic(f));
  cJSON_AddNumberToObject(o, "version", f->version);
  cJSON *c = d->n_header ? cJSON_AddObjectToObject(o, "config") : NULL;
  for (size_t i = 0; i < d->n_header; i++) {
    const fg_oframe_field *h = &d->header[i];
    const uint64_t v = field_value(f, h);
    switch (h->type) {
      case FG_OFRAME_FIELD_BOOL: cJSON_AddBoolToObject(c, h->key, v != 0); break;
      case FG_OFRAME_FIELD_ENUM: cJSON_AddStringToObject(c, h->key, enum_name(h, v)); break;
      case FG_OFRAME_FIELD_F32: cJSON_AddItemToObject(c, h->key, fg_cli_json_f64(f32_of((uint32_t)v))); break;
      case FG_OFRAME_FIELD_U32: cJSON_AddNumberToObject(c, h->key, (double)v); break;
      case FG_OFRAME_FIELD_U64: cJSON_AddItemToObject(c, h->key, fg_cli_json_u64(v)); break;
    }
  }
  if (f->kind == FG_OFRAME_KIND_SET) {
    cJSON *m = cJSON_AddArrayToObject(o, "members");
    for (size_t i = 0; i < f->n_members; i++) cJSON_AddItemToArray(m, fg_cli_frame_json(&f->members[i]));
    return o;
  }
  if (f->kind == FG_OFRAME_KIND_TENSORS) {
    cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
    for (size_t i = 0; i < f->n_tensors; i++) {
      cJSON *t = cJSON_CreateObject(), *sh = cJSON_AddArrayToObject(t, "shape");
      for (uint32_t d = 0; d < f->tensors[i].rank; d++) cJSON_AddItemToArray(sh, fg_cli_json_u64(f->tensors[i].dims[d]));
      cJSON_AddItemToArray(ts, t);
    }
    return o;
  }
  if (has_step(f, false)) cJSON_AddItemToObject(o, "step", fg_cli_json_u64(max_step(f)));
  cJSON *sl = cJSON_AddArrayToObject(o, "slots");
  for (size_t i = 0; i < f->n_slots; i++) cJSON_AddItemToArray(sl, slot_json(f, &f->slots[i], false));
  if (d->fallback_list) {
    cJSON *fb = cJSON_AddArrayToObject(o, "fallback");
    for (size_t i = 0; i < f->n_fallback; i++) cJSON_AddItemToArray(fb, slot_json(f, &f->fallback[i], true));
  }
  if (f->embedded) cJSON_AddItemToObject(o, "embedded", fg_cli_frame_json(f->embedded));
  return o;
}

static void print_slots(const fg_oframe *f, const fg_oframe_slot *s, size_t n, bool fallback, int ind, bool full) {
  for (size_t i = 0; i < n; i++) {
    if (!full && i == LIST_LIMIT) {
      printf("%*s... %zu more (--full lists them)\n", ind, "", n - i);
      break;
    }
    printf("%*s", ind, "");
    fg_cli_put_escaped(stdout, s[i].name, s[i].name_len, 32);
    printf(" [%llu, %llu]", (unsigned long long)s[i].rows, (unsigned long long)s[i].cols);
    if (has_step(f, fallback)) printf("  step %llu", (unsigned long long)s[i].step);
    if (desc(f)->main_extras && !fallback) printf("  seed %llu", (unsigned long long)s[i].seed);
    printf("  state");
    for (int k = 0; k < s[i].n_bufs && k < 2; k++) printf("%s %s", k ? "," : "", state_dtype(s[i].bufs[k].dtype));
    if (s[i].has_master) printf("  + f32 master");
    printf("\n");
  }
}

void fg_cli_frame_print(const fg_oframe *f, int ind, bool full) {
  const fg_oframe_kind_desc *d = desc(f);
  printf("%*s%s %s (v%d)", ind, "", d->name, magic(f), f->version);
  if (f->kind == FG_OFRAME_KIND_SET) {
    printf(", %zu members\n", f->n_members);
    for (size_t i = 0; i < f->n_members; i++) {
      printf("%*smember %zu:\n", ind + 2, "", i);
      fg_cli_frame_print(&f->members[i], ind + 4, full);
    }
    return;
  }
  if (f->kind == FG_OFRAME_KIND_TENSORS) {
    printf(", %zu tensors\n", f->n_tensors);
    return;
  }
  /* The header: its values in wire order, then its flags. */
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < d->n_header; i++) {
      const fg_oframe_field *h = &d->header[i];
      const uint64_t v = field_value(f, h);
      if ((h->type == FG_OFRAME_FIELD_BOOL) != (pass == 1)) continue;
      switch (h->type) {
        case FG_OFRAME_FIELD_BOOL: printf("%s", v ? h->text : ""); break;
        case FG_OFRAME_FIELD_ENUM: printf(", %s%s", enum_name(h, v), h->text); break;
        case FG_OFRAME_FIELD_F32: printf(", %s %.9g", h->key, f32_of((uint32_t)v)); break;
        case FG_OFRAME_FIELD_U32:
        case FG_OFRAME_FIELD_U64: printf(", %s %llu", h->key, (unsigned long long)v); break;
      }
    }
  printf(", %zu slots", f->n_slots);
  if (has_step(f, false)) printf(", step %llu", (unsigned long long)max_step(f));
  printf("\n");
  print_slots(f, f->slots, f->n_slots, false, ind + 2, full);
  if (d->fallback_list) {
    printf("%*sfallback (AdamW rule): %zu slots%s\n", ind + 2, "", f->n_fallback, f->n_fallback ? ":" : "");
    print_slots(f, f->fallback, f->n_fallback, true, ind + 4, full);
  }
  if (f->embedded) {
    printf("%*sembedded AdamW (fallback):\n", ind + 2, "");
    fg_cli_frame_print(f->embedded, ind + 4, full);
  }
}

/* ---------------------------------------------------------------- trainer state */

static cJSON *f64_raw(double v) {
  char buf[FG_F64_TEXT_MAX];
  fg_trainer_state_f64_text(v, buf);
  return cJSON_CreateRaw(buf);
}

cJSON *fg_cli_trainer_state_json(const fg_trainer_state *s) {
  cJSON *ts = cJSON_CreateObject();
  cJSON_AddStringToObject(ts, "format", FG_TRAINER_STATE_FORMAT);
  const char *name;
  char kind;
  bool set;
  uint64_t u;
  double d;
  for (size_t i = 0; fg_trainer_state_field(s, i, &name, &kind, &set, &u, &d); i++)
    if (set) cJSON_AddItemToObject(ts, name, kind == 'u' ? fg_cli_json_u64(u) : f64_raw(d));
  return ts;
}

void fg_cli_trainer_state_print(const fg_trainer_state *s) {
  const char *name;
  char kind;
  bool set;
  uint64_t u;
  double d;
  char buf[FG_F64_TEXT_MAX];
  for (size_t i = 0; fg_trainer_state_field(s, i, &name, &kind, &set, &u, &d); i++) {
    if (!set) continue;
    if (kind == 'u') printf("  %-28s %llu\n", name, (unsigned long long)u);
    else {
      fg_trainer_state_f64_text(d, buf);
      printf("  %-28s %s\n", name, buf);
    }
  }
}
