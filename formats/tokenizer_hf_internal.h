/* The general tokenizer.json pipeline (formats/tokenizer_hf_*.c), for the files that are none
 * of the shapes formats/tokenizer_hf.c runs on its fast paths: normalizers, pre-tokenizers,
 * a model (BPE, WordPiece, Unigram or WordLevel), a post-processor and decoders, each read
 * from the file as Hugging Face's `tokenizers` documents them. Internal.
 *
 * Every step is built once and never changed afterwards: encodes on several threads share it
 * (regex match data is made per call). */
#ifndef FORGIA_FORMATS_TOKENIZER_HF_INTERNAL_H
#define FORGIA_FORMATS_TOKENIZER_HF_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/tokenizer_internal.h"

struct cJSON;

/* A list of strings in one growing buffer: the pieces of a pre-tokenizer, or the token texts
 * a decoder rewrites. first: the piece begins at the start of the text (Metaspace's "first"). */
typedef struct fg_hf_words {
  char *buf;
  size_t len, cap;
  struct fg_hf_word {
    size_t off, n;
    bool first;
  } *w;
  size_t nw, capw;
} fg_hf_words;
/* One more zeroed element of size bytes at the end of the list *v (n used, cap allocated):
 * the steps' component lists, read from the file one by one. */
fg_status fg_hf_list_push(void **v, size_t *n, size_t *cap, size_t size, void **slot);
fg_status fg_hf_words_push(fg_hf_words *ws, const char *s, size_t n, bool first);
/* Appends bytes to the last word (which must exist). */
fg_status fg_hf_words_extend(fg_hf_words *ws, const char *s, size_t n);
void fg_hf_words_clear(fg_hf_words *ws);
void fg_hf_words_free(fg_hf_words *ws);
static inline const char *fg_hf_word(const fg_hf_words *ws, size_t i) { return ws->buf + ws->w[i].off; }

/* A compiled regex (UTF, invalid UTF-8 never matching) and its error message on failure. */
fg_status fg_hf_regex(const char *file, const char *where, const char *re, pcre2_code **out);
/* The pattern field of Split / Replace: {"String": s} (matched literally) or {"Regex": r}. */
typedef struct fg_hf_pattern {
  pcre2_code *re; /* NULL for a literal */
  char *lit;
  size_t lit_n;
} fg_hf_pattern;
fg_status fg_hf_pattern_read(const char *file, const char *where, const struct cJSON *o, fg_hf_pattern *p);
void fg_hf_pattern_free(fg_hf_pattern *p);
/* The next match at or after pos: [*a, *b); false when none. md: the caller's match data. */
bool fg_hf_pattern_next(const fg_hf_pattern *p, pcre2_match_data *md, const char *s, size_t n, size_t pos, size_t *a,
                        size_t *b);

/* Unicode classes as `tokenizers` tests them (tokenizer_hf_util.c, tokenizer_hf_unicode.c). */
bool fg_hf_is_whitespace(uint32_t c);                /* White_Space */
bool fg_hf_is_punct(uint32_t c);                     /* ASCII punctuation or a P* category */
bool fg_hf_is_control(uint32_t c);                   /* Cc, Cf, Co but tab, LF, CR (clean_text) */
bool fg_hf_is_mark(uint32_t c, bool nonspacing_only); /* M* (StripAccents), or Mn alone (BERT) */
uint32_t fg_hf_lower(uint32_t c);                     /* Rust's one-character lowercase */
bool fg_hf_form_keeps(uint32_t c, bool compat);       /* a code point NF(K)D leaves alone there */

typedef struct fg_hf_norm fg_hf_norm;
typedef struct fg_hf_pre fg_hf_pre;
typedef struct fg_hf_dec fg_hf_dec;

/* Normalizers (tokenizer_hf_norm.c): a Sequence is read flat, in order. */
fg_status fg_hf_norm_read(const char *file, const struct cJSON *o, fg_hf_norm **out, size_t *n);
void fg_hf_norm_free(fg_hf_norm *v, size_t n);
/* *out malloc'd (NUL-terminated). Text that is not valid UTF-8 is carried through unchanged
 * by the steps that need code points. */
fg_status fg_hf_normalize(const fg_hf_norm *v, size_t n, const char *s, size_t len, char **out, size_t *out_n);

/* Pre-tokenizers (tokenizer_hf_pretok.c): ws holds the pieces, rewritten in place. */
fg_status fg_hf_pre_read(const char *file, const struct cJSON *o, fg_hf_pre **out, size_t *n);
void fg_hf_pre_free(fg_hf_pre *v, size_t n);
fg_status fg_hf_pretokenize(const fg_hf_pre *v, size_t n, fg_hf_words *ws);

/* Decoders (tokenizer_hf_decode.c): ws holds token texts, rewritten in place. */
fg_status fg_hf_dec_read(const char *file, const struct cJSON *o, fg_hf_dec **out, size_t *n);
void fg_hf_dec_free(fg_hf_dec *v, size_t n);
fg_status fg_hf_decode_words(const fg_hf_dec *v, size_t n, fg_hf_words *ws);

typedef enum fg_hf_model_kind { FG_HF_BPE, FG_HF_WORDPIECE, FG_HF_UNIGRAM, FG_HF_WORDLEVEL } fg_hf_model_kind;

/* An added token as `tokenizers` matches it. */
typedef struct fg_hf_added {
  int32_t id;
  bool lstrip, rstrip, single_word, normalized, special;
  char *text; /* normalized tokens: their content normalized, as it is matched */
  size_t n;
} fg_hf_added;

struct fg_tok_hf {
  fg_hf_norm *norm;
  size_t n_norm;
  fg_hf_pre *pre;
  size_t n_pre;
  fg_hf_dec *dec;
  size_t n_dec;
  fg_hf_model_kind model;
  int32_t unk;
  char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix ("" when none) */
  size_t prefix_n, suffix_n, max_chars;
  bool byte_fallback, fuse_unk, ignore_merges;
  fg_tok_merge_slot *merges; /* BPE: (left, right) -> (rank, merged) */
  uint64_t merge_cap;
  double *scores; /* Unigram */
  double unk_score;
  size_t max_piece;          /* Unigram: longest piece in bytes */
  struct fg_hf_uni_slot *uni; /* Unigram: every piece and every prefix of one (tokenizer_unigram.c) */
  uint64_t uni_cap;           /* power of two */
  int32_t byte_ids[256];     /* <0xXX> pieces, -1 none */
  fg_hf_added *added;        /* by first byte, longest first within a byte */
  size_t n_added;
  uint32_t added_start[257]; /* added[added_start[b], added_start[b+1]): those starting with byte b */
  int32_t *post;             /* the single template; -1 marks the text's ids */
  size_t n_post;
};
typedef struct fg_tok_hf fg_tok_hf;

void fg_tok_hf_free(fg_tok_hf *h);
/* The model's ids for one pre-tokenized piece (tokenizer_hf_model.c, tokenizer_unigram.c). */
fg_status fg_hf_model_word(const fg_tokenizer *t, const char *w, size_t n, fg_tok_ids *out);
fg_status fg_hf_unigram_word(const fg_tokenizer *t, const char *w, size_t n, fg_tok_ids *out);
/* Unigram's lookup table, built once the vocabulary is: the Viterbi extends a piece byte by
 * byte and stops where no piece goes on. */
fg_status fg_hf_unigram_index(const fg_tokenizer *t, fg_tok_hf *h, size_t n_pieces);
/* Reads model (vocab, merges, options) into h and the token texts; tokenizer_hf_model.c. */
fg_status fg_hf_build(const char *file, const struct cJSON *root, const struct cJSON *cfg, fg_tokenizer **out);
fg_status fg_hf_build_merges(const char *file, fg_tokenizer *t, const struct cJSON *merges);
fg_status fg_hf_post_read(const char *file, const fg_tokenizer *t, const struct cJSON *o, fg_tok_hf *h);

/* tokenizer.c's side: a tokenizer over a plain vocabulary that the pipeline drives. */
fg_status fg_tok_hf_encode(const fg_tokenizer *t, const char *text, size_t len, bool add_special, fg_tok_ids *out);
fg_status fg_tok_hf_decode(const fg_tokenizer *t, const int32_t *ids, size_t n_ids, char **text, size_t *len);

/* Streaming decode: a pipeline's decoders look at neighbouring tokens (WordPiece's spaces,
 * Metaspace's first token, ByteFallback's byte runs), so the stream decodes every id so far
 * and hands on what is new and can no longer change. */
typedef struct fg_hf_stream {
  fg_tok_ids hist;
  char *dec;
  size_t dec_n, emitted;
} fg_hf_stream;
fg_status fg_hf_stream_push(const fg_tokenizer *t, fg_hf_stream *s, int32_t id, const char **bytes, size_t *len);
void fg_hf_stream_finish(fg_hf_stream *s, const char **bytes, size_t *len);
void fg_hf_stream_free(fg_hf_stream *s);

#endif
