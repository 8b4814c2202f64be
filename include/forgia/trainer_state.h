/* trainer_state.json: the small JSON record a training checkpoint directory commits last
 * (forgia/ckpt_dir.h), in Fucina's exact text (src/training_checkpoint.zig, TrainerState).
 *
 *   fg_trainer_state s;
 *   fg_trainer_state_init(&s);
 *   s.step = 1200; s.seed = 0xDEADBEEFCAFEF00D;
 *   FG_TRAINER_STATE_SET(s, learning_rate, 3e-4f);    // an f32 is widened, as Fucina does
 *   char *text; size_t len;
 *   fg_trainer_state_format(&s, &text, &len);
 *
 * Writing: "{\n", then two-space-indented `"key": value` lines joined by ",\n": "format":
 * "fucina.training_checkpoint", "version", "step", "seed", then every set optional field in
 * the struct's order, then "\n}\n". Integers are exact decimal u64; a double is the
 * shortest decimal that reads back to the same double, never with an exponent (1e-3 is
 * 0.001, 1e21 is 1000000000000000000000, 16 is 16, -0.0 is -0); NaN and infinities are
 * written as Fucina writes them (nan, inf, -inf), which no JSON reader (this one included)
 * accepts.
 *
 * Reading: any JSON object (strict JSON, UTF-8); unknown keys are ignored, a key given
 * twice is FG_ERR_DUPLICATE. "format" must be that string (FG_ERR_BAD_MAGIC), "version"
 * must be 1 (FG_ERR_BAD_VERSION), "step" and "seed" are required (FG_ERR_NOT_FOUND). A u64
 * field takes a JSON integer literal in 0..2^64-1 read from its text, so every u64
 * survives; a double field takes any JSON number. Anything else is FG_ERR_TYPE naming the
 * key, what was expected and what was found; text that is not a JSON object is
 * FG_ERR_INVALID_JSON (FG_ERR_HEADER_NOT_UTF8 when it is not UTF-8); a text over 16 MiB
 * (Fucina's are under 2 KB) is FG_ERR_RANGE, refused before it is read.
 *
 * Thread safety: no shared state. */
#ifndef FORGIA_TRAINER_STATE_H
#define FORGIA_TRAINER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_TRAINER_STATE_FORMAT "fucina.training_checkpoint"
#define FG_TRAINER_STATE_FILE "trainer_state.json"

/* An optional field: written and read only when set. */
typedef struct fg_opt_u64 {
  bool set;
  uint64_t v;
} fg_opt_u64;
typedef struct fg_opt_f64 {
  bool set;
  double v;
} fg_opt_f64;

/* Fucina's fields, in its order (which is the order they are written in). */
typedef struct fg_trainer_state {
  uint32_t version;                 /* 1 */
  uint64_t step;                    /* micro-batches done; a multiple of accum_steps */
  uint64_t seed;
  fg_opt_u64 lora_rank;
  fg_opt_f64 lora_alpha;
  fg_opt_f64 lora_dropout_p;
  fg_opt_f64 learning_rate;
  fg_opt_u64 accum_steps;           /* gradient-accumulation window */
  fg_opt_u64 data_seed;             /* data-loader position: (seed, epoch, index) */
  fg_opt_u64 data_epoch;
  fg_opt_u64 data_index;
  fg_opt_f64 es_sigma;              /* evolution strategies (no optimizer file) */
  fg_opt_f64 es_alpha;
  fg_opt_u64 es_population;
  fg_opt_u64 es_noise;              /* 0 = iid, 1 = correlated */
  fg_opt_u64 es_antithetic;         /* 1 = mirrored pairs, 0 or absent = independent */
  fg_opt_u64 es_anchor_decay;       /* 0 = none, 1 = l1, 2 = l2 */
  fg_opt_f64 es_anchor_lambda;
  fg_opt_f64 es_ternary_flip_rate;
  fg_opt_f64 es_ternary_update_fraction;
  fg_opt_f64 es_ternary_update_decay;
  fg_opt_u64 es_iteration;
} fg_trainer_state;

/* Sets an optional field: FG_TRAINER_STATE_SET(s, es_sigma, 0.001f). */
#define FG_TRAINER_STATE_SET(s, field, value) ((s).field.set = true, (s).field.v = (value))

/* version 1, step and seed 0, every optional field unset. */
FG_API void fg_trainer_state_init(fg_trainer_state *s);

/* The fields by name, in the written order, for printing them generically: kind 'u'
 * (u64; version, step and seed included) or 'f' (double). *set is false for an unset
 * optional field. False past the last field. */
FG_API bool fg_trainer_state_field(const fg_trainer_state *s, size_t i, const char **name, char *kind, bool *set,
                                   uint64_t *u, double *f);

/* Fucina's text (malloc'd, NUL-terminated; *len excludes the NUL). */
FG_API fg_status fg_trainer_state_format(const fg_trainer_state *s, char **out, size_t *len);
/* Parses text[0..len). source names it in messages (NULL: "trainer_state.json"). */
FG_API fg_status fg_trainer_state_parse(const char *text, size_t len, const char *source,
                                        fg_trainer_state *out);
/* The text as a file, written atomically; and the file read back. */
FG_API fg_status fg_trainer_state_save(const char *path, const fg_trainer_state *s);
FG_API fg_status fg_trainer_state_load(const char *path, fg_trainer_state *out);

/* The shortest decimal that reads back to v, without an exponent, as Fucina writes
 * doubles; buf needs FG_F64_TEXT_MAX bytes. Returns the length. */
#define FG_F64_TEXT_MAX 352
FG_API size_t fg_trainer_state_f64_text(double v, char *buf);

#ifdef __cplusplus
}
#endif
#endif
