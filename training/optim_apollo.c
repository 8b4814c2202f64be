/* APOLLO and APOLLO-Mini: the state and the registration of parameters (the main low-rank
 * path for 2-D parameters, the legacy-HF AdamW fallback for the rest), as Fucina's Apollo. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "training/optim_apollo_internal.h"

fg_status fg_apollo_create(fg_optim *o) {
  struct fg_apollo_state *a = calloc(1, sizeof *a);
  if (!a) return fg_fail(FG_ERR_NOMEM, "apollo: out of memory");
  fg_status s = fg_device_mem_alloc(o->dev, 2 * sizeof(double), (void **)&a->scalars);
  if (s) {
    free(a);
    return s;
  }
  o->apollo = a;
  return FG_OK;
}

static void fg_apollo_main_release(fg_device *dev, fg_apollo_main *m) {
  fg_device_mem_free(dev, m->proj);
  fg_device_mem_free(dev, m->scaling);
  fg_device_mem_free(dev, m->prev_norm);
}

void fg_apollo_free(fg_optim *o) {
  struct fg_apollo_state *a = o->apollo;
  if (!a) return;
  for (size_t i = 0; i < o->n; i++) fg_apollo_main_release(o->dev, &a->mains[i]);
  for (size_t i = 0; i < a->nfb; i++) {
    fg_device_mem_free(o->dev, a->fb[i].master);
    fg_device_mem_free(o->dev, a->fb[i].m);
    fg_device_mem_free(o->dev, a->fb[i].v);
    free(a->fb[i].name);
  }
  fg_device_mem_free(o->dev, a->r);
  fg_device_mem_free(o->dev, a->u);
  fg_device_mem_free(o->dev, a->scalars);
  free(a->mains);
  free(a->fb);
  free(a);
  o->apollo = NULL;
}

/* n zero f32 values on dev (at least one byte allocated). */
static fg_status fg_apollo_zeros(fg_device *dev, size_t n, float **out) {
  fg_status s = fg_device_mem_alloc(dev, n ? n * sizeof(float) : 1, (void **)out);
  if (s == FG_OK) s = fg_device_memset(dev, *out, 0, n * sizeof(float));
  return s;
}

/* Scratch of at least n floats (grown, never shrunk). */
static fg_status fg_apollo_scratch(fg_device *dev, float **buf, size_t *cap, size_t n) {
  if (n <= *cap) return FG_OK;
  float *nb = NULL;
  fg_status s = fg_device_mem_alloc(dev, n * sizeof(float), (void **)&nb);
  if (s) return s;
  fg_device_mem_free(dev, *buf);
  *buf = nb;
  *cap = n;
  return FG_OK;
}

/* The low-rank path's buffers for a rows x cols parameter. */
static fg_status fg_apollo_main_init(fg_optim *o, const fg_tensor *t, fg_optim_slot *sl, fg_apollo_main *m) {
  const fg_optim_config *c = &o->c;
  const char *k = fg_optim_kind_name(c->kind);
  m->rows = (size_t)t->shape[0];
  m->cols = (size_t)t->shape[1];
  m->tall = m->rows >= m->cols;
  const size_t ch = m->tall ? m->rows : m->cols, other = m->tall ? m->cols : m->rows;
  /* len_c = ch * rank is the largest buffer (other <= ch), in bytes. */
  if (c->rank > SIZE_MAX / sizeof(float) / (ch ? ch : 1))
    return fg_fail(FG_ERR_OVERFLOW, "%s: rank %llu x %zu overflows", k, (unsigned long long)c->rank, ch);
  m->len_c = ch * (size_t)c->rank;
  m->seed = c->seed + (uint64_t)(o->n + 1);
  m->proj_chunk = UINT64_MAX;
  fg_status s = fg_apollo_zeros(o->dev, m->len_c, (float **)&sl->m);
  if (s == FG_OK) s = fg_apollo_zeros(o->dev, m->len_c, (float **)&sl->v);
  if (s == FG_OK) s = fg_apollo_zeros(o->dev, (size_t)c->rank * other, &m->proj);
  if (s == FG_OK) s = fg_apollo_zeros(o->dev, c->scale_type == FG_APOLLO_TENSOR ? 1 : ch, &m->scaling);
  if (s == FG_OK) s = fg_apollo_zeros(o->dev, 1, &m->prev_norm);
  if (s == FG_OK) {
    const float none = -1.0f;
    s = fg_device_copy(o->dev, m->prev_norm, &none, sizeof none, FG_COPY_H2D);
  }
  struct fg_apollo_state *a = o->apollo;
  if (s == FG_OK) s = fg_apollo_scratch(o->dev, &a->r, &a->r_cap, m->len_c);
  if (s == FG_OK) s = fg_apollo_scratch(o->dev, &a->u, &a->u_cap, (size_t)t->numel);
  return s;
}

fg_status fg_apollo_add(fg_optim *o, fg_tensor *t, const char *name, bool fallback) {
  struct fg_apollo_state *a = o->apollo;
  const char *k = fg_optim_kind_name(o->c.kind);
  const bool main = !fallback && t->ndim == 2;
  char auto_name[32];
  if (!name) {
    snprintf(auto_name, sizeof auto_name, "param%zu", main ? o->n : a->nfb);
    name = auto_name;
  }
  fg_status st = fg_optim_check_param(o, t, name, main);
  if (st) return st;
  for (size_t i = 0; i < a->nfb; i++) {
    if (a->fb[i].t == t)
      return fg_fail(FG_ERR_DUPLICATE, "%s: parameter '%s' is already registered as fallback '%s'", k, name, a->fb[i].name);
    if (!main && strcmp(a->fb[i].name, name) == 0)
      return fg_fail(FG_ERR_DUPLICATE, "%s: the fallback name '%s' is taken", k, name);
  }
  /* Room first, so that nothing below fails after the state exists. */
  if (main && o->n == o->cap) {
    const size_t cap = o->cap ? o->cap * 2 : 16;
    fg_optim_slot *sl = realloc(o->slots, cap * sizeof *sl);
    if (!sl) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", k);
    o->slots = sl;
    o->cap = cap;
  }
  if (main && o->n >= a->mains_cap) {
    const size_t cap = o->cap;
    fg_apollo_main *ms = realloc(a->mains, cap * sizeof *ms);
    if (!ms) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", k);
    a->mains = ms;
    a->mains_cap = cap;
  }
  if (!main && a->nfb == a->fb_cap) {
    const size_t cap = a->fb_cap ? a->fb_cap * 2 : 16;
    fg_optim_slot *fb = realloc(a->fb, cap * sizeof *fb);
    if (!fb) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", k);
    a->fb = fb;
    a->fb_cap = cap;
  }
  fg_status s = fg_optim_reserve(o, o->n + a->nfb + 1);
  if (s) return s;
  fg_optim_slot sl;
  fg_apollo_main m;
  memset(&sl, 0, sizeof sl);
  memset(&m, 0, sizeof m);
  sl.t = t;
  sl.name = strdup(name);
  const size_t n = (size_t)t->numel;
  s = sl.name ? FG_OK : fg_fail(FG_ERR_NOMEM, "%s: out of memory", k);
  if (s == FG_OK && t->dtype != FG_F32) { /* the master starts as the parameter's values, widened */
    s = fg_device_mem_alloc(o->dev, n ? n * sizeof(float) : 1, (void **)&sl.master);
    if (s == FG_OK && n) s = fg_convert(o->dev, sl.master, FG_F32, t->data, t->dtype, n, NULL);
  }
  if (s == FG_OK && main) s = fg_apollo_main_init(o, t, &sl, &m);
  if (s == FG_OK && !main) s = fg_apollo_zeros(o->dev, n, (float **)&sl.m);
  if (s == FG_OK && !main) s = fg_apollo_zeros(o->dev, n, (float **)&sl.v);
  if (s) {
    fg_apollo_main_release(o->dev, &m);
    fg_device_mem_free(o->dev, sl.master);
    fg_device_mem_free(o->dev, sl.m);
    fg_device_mem_free(o->dev, sl.v);
    free(sl.name);
    return fg_fail_prefix(s, "%s: adding '%s': ", k, name);
  }
  if (main) {
    a->mains[o->n] = m;
    o->slots[o->n++] = sl;
  } else {
    a->fb[a->nfb++] = sl;
  }
  return FG_OK;
}
