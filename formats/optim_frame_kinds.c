/* The frame kinds of Fucina's saveState format, one row each (forgia/optim_frame.h): magics,
 * header fields, slot records and the two rules a row cannot say as data (a buffer's length
 * when it is not rows * cols, and SGD's nesterov rule). Adding a frame kind is a row here,
 * its config struct in fg_oframe and its entry in fg_oframe_kind. */
#include <stddef.h>
#include <stdio.h>

#include "formats/optim_frame_internal.h"

#define OFF(x) offsetof(fg_oframe, x)

/* Fucina allocates no SGD buffer when momentum == 0 (either zero's sign). */
static bool sgd_buf_count(const fg_oframe *f, bool fallback, const fg_oframe_slot *s, int b, uint64_t *count) {
  (void)fallback, (void)b;
  if ((f->sgd.momentum_bits & 0x7fffffffu) == 0) return *count = 0, true;
  return !__builtin_mul_overflow(s->rows, s->cols, count);
}

static bool sgd_header_rule(const fg_oframe *f, bool writing, char *why, size_t len) {
  const fg_oframe_sgd_config *c = &f->sgd;
  if (!c->nesterov || ((c->momentum_bits & 0x7fffffffu) != 0 && (c->dampening_bits & 0x7fffffffu) == 0)) return true;
  if (writing)
    snprintf(why, len, "nesterov with momentum bits %08x and dampening bits %08x (needs momentum != 0 and "
             "dampening == 0)", c->momentum_bits, c->dampening_bits);
  else
    snprintf(why, len, "nesterov with momentum bits %08x, dampening bits %08x: expected momentum != 0 and "
             "dampening == 0", c->momentum_bits, c->dampening_bits);
  return false;
}

/* APOLLO's projected moments: rows x rank when tall (rows >= cols), rank x cols when wide;
 * the fallback's are rows * cols. */
static bool apollo_buf_count(const fg_oframe *f, bool fallback, const fg_oframe_slot *s, int b, uint64_t *count) {
  (void)b;
  uint64_t n;
  if (__builtin_mul_overflow(s->rows, s->cols, &n)) return false;
  if (fallback) return *count = n, true;
  return !__builtin_mul_overflow(s->rows >= s->cols ? s->rows : s->cols, f->apollo.rank, count);
}

static const fg_oframe_field SGD_HEADER[] = {
    {"momentum", "momentum", FG_OFRAME_FIELD_F32, OFF(sgd.momentum_bits), {NULL, NULL}, NULL},
    {"dampening", "dampening", FG_OFRAME_FIELD_F32, OFF(sgd.dampening_bits), {NULL, NULL}, NULL},
    {"nesterov", "nesterov", FG_OFRAME_FIELD_BOOL, OFF(sgd.nesterov), {NULL, NULL}, ", nesterov"},
};

static const fg_oframe_field MUON_HEADER[] = {
    {"scale", "scale", FG_OFRAME_FIELD_ENUM, OFF(muon.scale), {"spectral", "match_rms_adamw"}, ""},
    {"nesterov", "nesterov", FG_OFRAME_FIELD_BOOL, OFF(muon.nesterov), {NULL, NULL}, ", nesterov"},
    {"ns_steps", "ns_steps", FG_OFRAME_FIELD_U32, OFF(muon.ns_steps), {NULL, NULL}, NULL},
};

static const fg_oframe_field APOLLO_HEADER[] = {
    {"rank", "rank", FG_OFRAME_FIELD_U64, OFF(apollo.rank), {NULL, NULL}, NULL},
    {"update_proj_gap", "update_proj_gap", FG_OFRAME_FIELD_U64, OFF(apollo.update_proj_gap), {NULL, NULL}, NULL},
    {"scale", "scale", FG_OFRAME_FIELD_F32, OFF(apollo.scale_bits), {NULL, NULL}, NULL},
    {"scale_type", "scale_type", FG_OFRAME_FIELD_ENUM, OFF(apollo.scale_type), {"channel", "tensor"}, " scaling"},
    {"correct_bias", "correct_bias", FG_OFRAME_FIELD_BOOL, OFF(apollo.correct_bias), {NULL, NULL}, ", bias correction"},
    {"scale_front", "scale_front", FG_OFRAME_FIELD_BOOL, OFF(apollo.scale_front), {NULL, NULL}, ", scale front"},
    {"disable_limiter", "disable_norm_growth_limiter", FG_OFRAME_FIELD_BOOL, OFF(apollo.disable_limiter),
     {NULL, NULL}, ", no limiter"},
};

#define N(a) (sizeof a / sizeof a[0])

static const of_kind KINDS[] = {
    [FG_OFRAME_KIND_ADAMW] = {{FG_OFRAME_KIND_ADAMW, "adamw", "AdamW", {[3] = "FZA3", "FZA4", "FZA5"}, "FZA3/4/5", 2,
                               {"m", "v"}, true, false, false, false, false, NULL, 0, NULL},
                              NULL, NULL},
    [FG_OFRAME_KIND_ADAM] = {{FG_OFRAME_KIND_ADAM, "adam", "Adam", {[3] = "FZAD", "FZD4", "FZD5"}, "FZAD/FZD4/5", 2,
                              {"m", "v"}, true, false, false, false, false, NULL, 0, NULL},
                             NULL, NULL},
    [FG_OFRAME_KIND_SGD] = {{FG_OFRAME_KIND_SGD, "sgd", "SGD", {[3] = "FZS3", "FZS4", "FZS5"}, "FZS3/4/5", 1,
                             {"buf", ""}, true, false, false, false, false,
                             "the SGD header (momentum, dampening, nesterov)", N(SGD_HEADER), SGD_HEADER},
                            sgd_buf_count, sgd_header_rule},
    [FG_OFRAME_KIND_MUON] = {{FG_OFRAME_KIND_MUON, "muon", "Muon", {[3] = "FZM3", "FZM4", "FZM5"}, "FZM3/4/5", 1,
                              {"momentum", ""}, false, false, false, true, false,
                              "the Muon header (scale, nesterov, ns_steps)", N(MUON_HEADER), MUON_HEADER},
                             NULL, NULL},
    [FG_OFRAME_KIND_APOLLO] = {{FG_OFRAME_KIND_APOLLO, "apollo", "APOLLO", {[3] = "FZP3", [5] = "FZP5"}, "FZP3/5", 2,
                                {"m", "v"}, true, true, true, false, true, "the APOLLO header", N(APOLLO_HEADER),
                                APOLLO_HEADER},
                               apollo_buf_count, NULL},
    [FG_OFRAME_KIND_SET] = {{FG_OFRAME_KIND_SET, "set", "optimizer set", {[3] = "FZO3"}, "FZO3", 0, {"", ""}, false,
                             false, false, false, false, NULL, 0, NULL},
                            NULL, NULL},
    [FG_OFRAME_KIND_TENSORS] = {{FG_OFRAME_KIND_TENSORS, "tensors", "tensor list", {[1] = "FZT1"}, "FZT1", 0, {"", ""},
                                 false, false, false, false, false, NULL, 0, NULL},
                                NULL, NULL},
};

const of_kind *of_kind_of(fg_oframe_kind kind) { return (unsigned)kind < N(KINDS) ? &KINDS[kind] : NULL; }

size_t of_kind_count(void) { return N(KINDS); }

const fg_oframe_kind_desc *fg_optim_frame_describe(fg_oframe_kind kind) {
  const of_kind *k = of_kind_of(kind);
  return k ? &k->d : NULL;
}

unsigned of_field_bytes(const fg_oframe_field *h) {
  switch (h->type) {
    case FG_OFRAME_FIELD_BOOL:
    case FG_OFRAME_FIELD_ENUM: return 1;
    case FG_OFRAME_FIELD_F32:
    case FG_OFRAME_FIELD_U32: return 4;
    case FG_OFRAME_FIELD_U64: return 8;
  }
  return 0;
}

uint64_t of_field_get(const fg_oframe *f, const fg_oframe_field *h) {
  const char *p = (const char *)f + h->offset;
  switch (of_field_bytes(h)) {
    case 1: return *(const uint8_t *)p;
    case 4: return *(const uint32_t *)p;
    default: return *(const uint64_t *)p;
  }
}

void of_field_set(fg_oframe *f, const fg_oframe_field *h, uint64_t v) {
  char *p = (char *)f + h->offset;
  switch (of_field_bytes(h)) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 4: *(uint32_t *)p = (uint32_t)v; break;
    default: *(uint64_t *)p = v; break;
  }
}
