/* forgia finetune's data (internal to the CLI): plain text cut into windows, JSONL texts, and
 * chat JSONL rendered by the checkpoint's template with the loss on the assistant's tokens. */
#ifndef FORGIA_TOOLS_FT_DATA_H
#define FORGIA_TOOLS_FT_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/tokenizer.h"
#include "util_chat.h"

typedef enum ft_format { FT_TEXT = 0, FT_JSONL = 1, FT_CHAT = 2 } ft_format;

/* One training sequence: its tokens and which of them are targets (never the first). */
typedef struct ft_example {
  int32_t *ids;
  uint8_t *predict;
  size_t n;
} ft_example;

typedef struct ft_data {
  ft_example *ex;
  size_t n;
  size_t tokens, targets;   /* over every example */
} ft_data;

/* --targets: a comma list of q, k, v, o, gate, up, down as bits (1u << fg_lora_target);
 * false for an unknown or empty name. */
bool ft_targets_parse(const char *s, uint32_t *out);

/* "text", "jsonl" or "chat". */
bool ft_format_parse(const char *name, ft_format *out);
const char *ft_format_name(ft_format f);

/* Reads path as fmt and tokenizes it (chat: rendered with pick; NULL otherwise).
 *   text:  the whole file, BOS first where the vocabulary adds one, cut into consecutive
 *          windows of ctx tokens (the last, shorter one kept when it has a target);
 *   jsonl: one {"text": ...} per line, each cut the same way;
 *   chat:  one {"messages": [...]} per line, the rendered conversation truncated to ctx
 *          tokens, targets the tokens of the assistants' turns (their text and end marks).
 * Every token of text and jsonl windows but the first is a target. Errors name the file and
 * the line. 0, or 1 after reporting as cmd. */
int ft_data_load(const char *cmd, const char *path, ft_format fmt, const fg_tokenizer *tok, const fg_cli_chat *pick,
                 size_t ctx, ft_data *out);
void ft_data_free(ft_data *d);

/* The data cursor: position (epoch, index) in the epoch's order of the examples, the file's
 * order or, with shuffle, a Fisher-Yates permutation keyed by (seed, epoch). The three numbers
 * are trainer_state.json's data_seed, data_epoch and data_index. */
typedef struct ft_cursor {
  uint64_t seed, epoch, index;
  uint32_t *order;  /* n entries, the caller's allocation */
  size_t n;
  bool shuffle;
} ft_cursor;

/* Fills order for the cursor's epoch. */
void ft_cursor_order(ft_cursor *c);
/* The next example, moving to the next epoch (and its order) at the end of one. */
size_t ft_cursor_next(ft_cursor *c);

#endif
