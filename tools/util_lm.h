/* CLI helper for the language-model commands (eval, generate, chat): the device, mode and
 * thread options, opening the model, and the generation loop they share. */
#ifndef FORGIA_TOOLS_UTIL_LM_H
#define FORGIA_TOOLS_UTIL_LM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/lm.h"
#include "forgia/sample.h"
#include "util_args.h"

typedef struct fg_cli_lm {
  fg_device *dev;
  fg_lm *lm;
  fg_gemm_mode mode;
  double load_seconds;
} fg_cli_lm;

/* Checks --mode and --threads (NULL: fast, the cores) and sets the thread count: FG_CLI_GO or
 * 2 after a usage error. fg_cli_lm_open does it too; commands that read input first call it
 * before, so bad usage is reported before a missing file. */
int fg_cli_lm_parse(const fg_cli_spec *s, const char *mode, const char *threads, fg_gemm_mode *out);
/* Parses --device/--mode/--threads values (NULL: defaults auto, fast, the cores), opens the
 * device and the model. FG_CLI_GO, 2 after a usage error, 1 after reporting a failure. */
int fg_cli_lm_open(const fg_cli_spec *s, const char *path, const char *device, const char *mode, const char *threads,
                   fg_cli_lm *out);
void fg_cli_lm_close(fg_cli_lm *c);
const char *fg_cli_lm_mode_name(fg_gemm_mode m);

/* Whether id ends a generation: the vocabulary's EOS, or an end-of-turn token of the chat
 * formats forgia renders (<|im_end|>, <end_of_turn>, <|eot_id|>, <|endoftext|>, <|end|>). */
bool fg_cli_lm_is_stop(const fg_tokenizer *t, int32_t id);

/* Called with each generated id; return false to stop. */
typedef bool (*fg_cli_lm_token_fn)(int32_t id, void *user);

typedef struct fg_cli_gen_stats {
  size_t prompt_tokens, generated;
  double prompt_seconds, gen_seconds;
  bool stopped;                /* ended on a stop token (which was passed to fn) */
} fg_cli_gen_stats;

/* Feeds ids[0..n) to sequence 0 of cache (after what it holds), then samples up to max_new
 * tokens, feeding each back; step counts draws from step0 (so a chat's turns continue one
 * stream). Stops after a stop token, when fn returns false, or when the cache is full. */
fg_status fg_cli_lm_generate(fg_lm *lm, fg_lm_cache *cache, const int32_t *ids, size_t n, size_t max_new,
                             const fg_sample_params *sp, uint64_t step0, fg_cli_lm_token_fn fn, void *user,
                             fg_cli_gen_stats *stats);

/* Parses "ID ID ..." (spaces or commas) into ids below n_vocab; 0 or 2 after a usage error. */
int fg_cli_lm_parse_ids(const fg_cli_spec *s, const char *what, const char *text, size_t n_vocab, int32_t **ids,
                        size_t *n);

#endif
