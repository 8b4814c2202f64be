/* libFuzzer target for the optimizer frame reader (forgia/optim_frame.h): any bytes either
 * parse or fail with a status and no output; a parsed frame is walked (every buffer and
 * master read end to end), re-serialized to exactly the input bytes, matched against its
 * own slot list, and its header checked against itself. Seeds:
 * tests/data/golden/fucina_frames (the frames Fucina's optimizers wrote). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/optim_frame.h"

static uint8_t sink;

static void touch(const uint8_t *p, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) sink ^= p[i];
}

static void walk_slots(const fg_oframe *f, bool fallback) {
  const fg_oframe_slot *slots = fallback ? f->fallback : f->slots;
  size_t n = fallback ? f->n_fallback : f->n_slots;
  fg_oframe_expect *e = calloc(n ? n : 1, sizeof *e);
  size_t *map = calloc(n ? n : 1, sizeof *map);
  if (!e || !map) abort();
  for (size_t i = 0; i < n; i++) {
    const fg_oframe_slot *s = &slots[i];
    if (strlen(s->name) != s->name_len) abort();
    for (int b = 0; b < s->n_bufs; b++) touch(s->bufs[b].data, s->bufs[b].count * (s->bufs[b].dtype ? 2 : 4));
    if (s->has_master) touch(s->master, s->rows * s->cols * 4);
    e[i] = (fg_oframe_expect){s->name, s->name_len, s->rows, s->cols, {s->bufs[0].dtype, s->bufs[1].dtype},
                              s->has_master};
  }
  if (fg_optim_frame_match(f, fallback, e, n, map) != FG_OK) abort();
  for (size_t i = 0; i < n; i++)
    if (map[i] != i) abort();
  free(map);
  free(e);
}

static void walk(const fg_oframe *f) {
  if (fg_optim_frame_check_header(f, f) != FG_OK) abort();
  if (fg_optim_frame_bufs_per_slot(f->kind) > 0) {
    walk_slots(f, false);
    if (f->kind == FG_OFRAME_KIND_APOLLO) walk_slots(f, true);
  }
  if (f->embedded) walk(f->embedded);
  for (size_t i = 0; i < f->n_members; i++) walk(&f->members[i]);
  for (size_t i = 0; i < f->n_tensors; i++) touch(f->tensors[i].data, f->tensors[i].count * 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fg_oframe *f = (fg_oframe *)1;
  if (fg_optim_frame_parse(data, size, &f) != FG_OK) {
    if (f != NULL) abort();
    return 0;
  }
  walk(f);
  /* The parsed versions are kept, so the writer must give back exactly the input. */
  uint8_t *out = NULL;
  size_t len = 0;
  if (fg_optim_frame_serialize(f, &out, &len) != FG_OK) abort();
  if (len != size || memcmp(out, data, size) != 0) abort();
  free(out);
  fg_optim_frame_free(f);
  return 0;
}
