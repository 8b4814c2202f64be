/* The tokenizer's private state, shared by formats/tokenizer*.c. Internal. */
#ifndef FORGIA_FORMATS_TOKENIZER_INTERNAL_H
#define FORGIA_FORMATS_TOKENIZER_INTERNAL_H

#include <stdint.h>

#include "core/name_table.h"
#include "forgia/tokenizer.h"

typedef enum fg_tok_pre_kind {
  FG_PRE_NONE = 0,
  FG_PRE_GPT2,
  FG_PRE_SMOLLM,
  FG_PRE_LLAMA3,
  FG_PRE_QWEN2,
  FG_PRE_QWEN35,
  FG_PRE_FALCON,
  FG_PRE_DEEPSEEK_CODER,
  FG_PRE_DEEPSEEK_LLM,
  FG_PRE_DEFAULT, /* llama.cpp's, for a GGUF that names none */
  FG_PRE_GEMMA4,  /* newline runs apart from the rest (the text is not byte-mapped) */
} fg_tok_pre_kind;

/* A compiled pre-tokenizer (tokenizer_pre.c). Immutable once built: encodes on several
 * threads share it, each with its own match data. */
typedef struct fg_tok_pre fg_tok_pre;
fg_status fg_tok_pre_kind_of(const char *name, fg_tok_pre_kind *kind);
const char *fg_tok_pre_kind_name(fg_tok_pre_kind kind);
fg_status fg_tok_pre_new(fg_tok_pre_kind kind, fg_tok_pre **out);
void fg_tok_pre_free(fg_tok_pre *p);
/* Calls fn for every piece, in order; returns fn's first nonzero value, or a negative
 * FG_ERR_NOMEM when match data cannot be had. */
int fg_tok_pre_split(const fg_tok_pre *p, const char *text, size_t len, fg_tok_piece_fn fn, void *ctx);

/* A (left id, right id) -> (rank, merged id) table, open addressing. */
typedef struct fg_tok_merge_slot {
  uint64_t key; /* ((uint64_t)left << 32 | right) + 1; 0 = empty */
  uint32_t rank;
  int32_t id;
} fg_tok_merge_slot;

struct fg_tokenizer {
  fg_tok_model model;
  fg_tok_pre_kind pre_kind;
  fg_tok_pre *pre;
  size_t n;
  char *blob;       /* all token texts, each followed by a NUL */
  size_t *off;      /* n + 1 offsets into blob (token i: blob + off[i], off[i+1]-off[i]-1 bytes) */
  int32_t *type;    /* FG_TOK_TYPE_* */
  float *scores;    /* SPM */
  bool *is_added;   /* matched whole in text, and decoded as its raw text */
  bool *is_special; /* left out by a decode that skips special tokens */
  bool *rstrip;     /* added tokens that take the whitespace after them; NULL: none */
  fg_name_table tab;
  fg_tok_merge_slot *merges;
  uint64_t merge_cap; /* power of two */
  /* Added tokens by first byte, longest first within a bucket. */
  int32_t *added_sorted;
  uint32_t added_start[257];
  size_t max_token_len;
  int32_t byte_ids[256]; /* BPE: the token of one byte's mapped char; SPM: <0xXX>; -1 none */
  bool ignore_merges, add_space_prefix, add_bos, normalize_nfc, lowercase, strip_accents;
  fg_tok_prefix prefix_at;
  /* llama.cpp's rules for a GGUF (tokenizer_gguf_rules.c): decode takes the space out before
   * ?!., and some apostrophes (clean_up_tokenization_spaces); a byte whose mapped character
   * is no token is dropped from the ids instead of failing the encode. */
  bool clean_spaces, drop_unknown_bytes;
  /* Gemma 4 (tokenizer_gemma4.c): BPE over the UTF-8 characters themselves, every ' ' as
   * U+2581, bytes without a token as <0xXX> pieces; decoded as SentencePiece pieces are. */
  bool spm_bpe;
  /* Unigram ("t5", tokenizer_ugm.c): its normalizer and Viterbi; an encode with the specials
   * puts ugm_eos last (-1: none) and a BOS first unless ugm_no_bos. */
  struct fg_tok_ugm *ugm;
  int32_t ugm_eos;
  bool ugm_no_bos;
  int32_t bos, eos, unk, sep;
  struct fg_tok_hf *hf; /* a general tokenizer.json pipeline (tokenizer_hf_internal.h), or NULL */
};

static inline const char *fg_tok_text(const fg_tokenizer *t, int32_t id) { return t->blob + t->off[id]; }
static inline size_t fg_tok_len(const fg_tokenizer *t, int32_t id) { return t->off[id + 1] - t->off[id] - 1; }

/* llama.cpp's rules for a GGUF vocabulary (tokenizer_gguf_rules.c): the tokens it treats as
 * control tokens whatever their stored type (end-of-turn, end-of-generation and fill-in-the-
 * middle markers), by their text; whether it adds a BOS when the file does not say; which
 * added tokens take the whitespace after them (Phi-3, by general.name). */
void fg_tok_gguf_types(int32_t *types, const char *const *tok, const size_t *len, size_t n);
bool fg_tok_gguf_default_bos(fg_tok_model model, const char *pre);
/* Whether llama.cpp cleans spaces in detokenize for this kind and pre-tokenizer; and the
 * cleaning itself, in place, returning the new length. */
bool fg_tok_gguf_clean_spaces(fg_tok_model model, const char *pre);
size_t fg_tok_clean_spaces(char *s, size_t n);
/* NULL with *fail FG_OK when no token strips; a calloc'd array otherwise. */
bool *fg_tok_gguf_rstrip(const char *name, size_t name_len, const int32_t *types, const char *const *tok,
                         const size_t *len, size_t n, fg_status *fail);

/* A growable id list. */
typedef struct fg_tok_ids {
  int32_t *v;
  size_t n, cap;
} fg_tok_ids;
fg_status fg_tok_ids_push(fg_tok_ids *a, int32_t id);

/* The GPT-2 byte map: byte b is written as the code point fg_tok_byte_cp(b); the inverse
 * gives -1 for a code point outside the map. */
uint32_t fg_tok_byte_cp(uint8_t b);
int fg_tok_cp_byte(uint32_t cp);
/* Reads one UTF-8 code point; returns its length, or 0 for an invalid sequence (the encoder
 * is fg_utf8_put, core/text.h). */
size_t fg_tok_utf8_get(const unsigned char *s, size_t n, uint32_t *cp);

/* A JSON file of a Hugging Face folder (tokenizer.json, tokenizer_config.json), parsed whole
 * under a size cap (tokenizer_hf.c); errors name the file and the byte near a syntax error. */
struct cJSON;
fg_status fg_tok_read_json(const char *path, struct cJSON **out);

/* Merge-table lookup: the slot for (left, right), or NULL. */
const fg_tok_merge_slot *fg_tok_merge_find(const fg_tokenizer *t, int32_t left, int32_t right);
/* The same over any table of cap slots (a power of two; a Hugging Face pipeline keeps its
 * own); put inserts unless the pair is there already (the better rank, put first, stays). */
const fg_tok_merge_slot *fg_tok_merge_lookup(const fg_tok_merge_slot *m, uint64_t cap, int32_t left, int32_t right);
void fg_tok_merge_put(fg_tok_merge_slot *m, uint64_t cap, int32_t left, int32_t right, uint32_t rank, int32_t id);

/* Encode one piece after pre-tokenization (BPE) or one normalized fragment (SPM). */
fg_status fg_tok_bpe_piece(const fg_tokenizer *t, const char *piece, size_t len, fg_tok_ids *out);
/* The merge loop over len symbols (token ids; a negative one never merges), best rank first,
 * leftmost among equals; next is filled here, and the symbols left are those reachable from
 * 0 through it. */
fg_status fg_tok_bpe_merge(const fg_tokenizer *t, int32_t *sym, int32_t *next, size_t len);
/* Gemma 4: the text between added tokens. */
fg_status fg_tok_gemma4_fragment(const fg_tokenizer *t, const char *s, size_t n, fg_tok_ids *out);
/* Unigram: built from the vocabulary's scores and types and the file's precompiled_charsmap
 * (n bytes, may be 0); the text between added tokens. */
struct fg_tok_ugm;
fg_status fg_tok_ugm_new(const fg_tokenizer *t, const uint8_t *charsmap, size_t n, bool add_space_prefix,
                         bool remove_extra_ws, struct fg_tok_ugm **out);
void fg_tok_ugm_free(struct fg_tok_ugm *u);
fg_status fg_tok_ugm_fragment(const fg_tokenizer *t, const char *s, size_t n, fg_tok_ids *out);
fg_status fg_tok_spm_fragment(const fg_tokenizer *t, const char *frag, size_t len, fg_tok_ids *out);
/* WordPiece (tokenizer_wpm.c): the text between added tokens. */
fg_status fg_tok_wpm_fragment(const fg_tokenizer *t, const char *s, size_t n, fg_tok_ids *out);

#endif
