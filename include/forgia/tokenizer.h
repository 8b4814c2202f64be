/* Tokenizers: text to the token ids a model was trained on, and back.
 *
 * Vocabulary kinds behind one encode/decode API (and, from a tokenizer.json, WordPiece,
 * Unigram and WordLevel models: see fg_tokenizer_from_hf_dir):
 *   - byte-level BPE (the GPT-2 shape: token strings by id written through the GPT-2 byte
 *     map, and a ranked merge list, best first), with a pre-tokenizer (a regex kind);
 *   - SentencePiece style (pieces with a score each, merged greedily by score, spaces as
 *     U+2581 "▁", byte fallback through the <0xXX> pieces).
 * The tokenizer never opens a file: the vocabulary is passed in (fg_tok_vocab), and
 * fg_tokenizer_from_vocab copies what it needs, so the caller's arrays may go away afterwards.
 * The sources that do read files (a Hugging Face directory, a GGUF's metadata) are the
 * fg_tokenizer_from_* functions at the end.
 *
 * Tokens the vocabulary names as added (special or not) are matched whole in the text,
 * leftmost-longest, before pre-tokenization: "<think>" is one id, never "<th" "ink" ">".
 *
 * Thread safety: a built fg_tokenizer is immutable; encode and decode may run on any
 * number of threads at once. A stream belongs to one thread at a time. */
#ifndef FORGIA_TOKENIZER_H
#define FORGIA_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/gguf.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_tok_model {
  FG_TOK_BPE = 1, /* byte-level BPE: GGUF tokenizer.ggml.model "gpt2" */
  FG_TOK_SPM = 2, /* SentencePiece style: GGUF tokenizer.ggml.model "llama" */
  FG_TOK_WPM = 3, /* WordPiece as llama.cpp runs GGUF tokenizer.ggml.model "bert": word-initial
                     pieces stored with a leading U+2581, continuations bare; or a tokenizer.json
                     WordPiece model (continuations with their prefix, "##") */
  FG_TOK_UNIGRAM = 4,   /* a tokenizer.json Unigram model (pieces with log-probabilities) */
  FG_TOK_WORDLEVEL = 5, /* a tokenizer.json WordLevel model (whole words or unk) */
} fg_tok_model;

/* GGUF token types (llama.cpp's numbering), used when token_type is given. */
enum {
  FG_TOK_TYPE_NORMAL = 1,
  FG_TOK_TYPE_UNKNOWN = 2,
  FG_TOK_TYPE_CONTROL = 3,
  FG_TOK_TYPE_USER_DEFINED = 4,
  FG_TOK_TYPE_UNUSED = 5,
  FG_TOK_TYPE_BYTE = 6,
  /* forgia's own: a normal piece that merging never produces (SPM vocabularies read from a
   * Hugging Face BPE file, where no merge makes it). */
  FG_TOK_TYPE_NOT_MERGED = 7,
};

/* SPM with add_space_prefix: where the dummy-prefix space goes. */
typedef enum fg_tok_prefix {
  FG_TOK_PREFIX_TEXT = 0,    /* once, before the whole text (SentencePiece; a GGUF) */
  FG_TOK_PREFIX_SEGMENT = 1, /* before every run of text between added tokens (Hugging Face's
                                Prepend normalizer: Llama 2's legacy tokenizer.json) */
  FG_TOK_PREFIX_FIRST = 2,   /* before the run at the start of the text only, unless it starts
                                with a space (Hugging Face's Metaspace, prepend_scheme "first") */
  FG_TOK_PREFIX_EACH = 3,    /* before every run that does not start with a space (Metaspace,
                                prepend_scheme "always") */
} fg_tok_prefix;

/* A vocabulary, borrowed for the duration of fg_tokenizer_from_vocab only. */
typedef struct fg_tok_vocab {
  fg_tok_model model;
  size_t n_tokens;
  const char *const *tokens;     /* token text by id (BPE: byte-mapped, as in the files) */
  const size_t *token_lens;      /* byte lengths; NULL: each token is NUL-terminated */
  const float *scores;           /* SPM: one per token (required); BPE: ignored */
  const int32_t *token_type;     /* FG_TOK_TYPE_* per token, or NULL (all normal) */
  size_t n_merges;               /* BPE: merges "LEFT RIGHT", best (lowest rank) first */
  const char *const *merges;
  const size_t *merge_lens;      /* NULL: NUL-terminated */
  size_t n_added;                /* ids matched whole in the text before pre-tokenization; */
  const int32_t *added;          /* tokens of type CONTROL or USER_DEFINED are added too */
  const char *pre;               /* BPE pre-tokenizer: a kind name or a GGUF .pre string */
  bool ignore_merges;            /* BPE: a piece that is itself a token is that token */
  bool normalize_nfc;            /* BPE: the text between added tokens is put in Unicode NFC first
                                    (tokenizer.json's "NFC" normalizer, Qwen 2); text that is not
                                    valid UTF-8 is taken as it is */
  bool add_space_prefix;         /* SPM: a space before the text (SentencePiece's dummy prefix) */
  fg_tok_prefix prefix_at;       /* SPM: where that space goes (FG_TOK_PREFIX_TEXT by default); with
                                    another value, added tokens are matched in the raw text and each
                                    run between them is normalized on its own, as Hugging Face does */
  int32_t bos_id, eos_id, unk_id; /* -1: none */
  bool add_bos;                  /* the default for fg_tokenizer_encode's add_bos */
  const bool *special;           /* per token: special, left out where a decode skips them
                                    (Hugging Face: the added tokens marked "special"); NULL:
                                    the tokens of type CONTROL or UNKNOWN, llama.cpp's rule */
  const bool *rstrip;            /* per token, or NULL (none): an added token that takes the
                                    whitespace after it in the text (llama.cpp's RSTRIP, Hugging
                                    Face's rstrip) */
  int32_t sep_id;                /* WordPiece: closes an encode that adds the BOS (BERT's [SEP], as
                                    llama.cpp adds it); -1: none */
  bool lowercase, strip_accents; /* WordPiece: lower-case the text; put it in NFD and drop its
                                    combining marks (GGUF tokenizer.ggml.normalizer.*) */
} fg_tok_vocab;

/* A vocabulary with every field at its neutral value (ids -1, flags false, no arrays). */
FG_API fg_tok_vocab fg_tok_vocab_init(fg_tok_model model);

typedef struct fg_tokenizer fg_tokenizer;

/* Builds a tokenizer. FG_ERR_INVALID_ARG with a message naming the token, merge or name
 * at fault: a merge whose halves or joined text are not tokens, an id out of range, a
 * duplicate token, an unknown pre-tokenizer name, an SPM vocabulary without scores. */
FG_API fg_status fg_tokenizer_from_vocab(const fg_tok_vocab *v, fg_tokenizer **out);
FG_API void fg_tokenizer_close(fg_tokenizer *t); /* NULL-safe */

FG_API fg_tok_model fg_tokenizer_model(const fg_tokenizer *t);
FG_API size_t fg_tokenizer_n_tokens(const fg_tokenizer *t);
FG_API int32_t fg_tokenizer_bos(const fg_tokenizer *t); /* -1 when none */
FG_API int32_t fg_tokenizer_eos(const fg_tokenizer *t);
FG_API bool fg_tokenizer_add_bos(const fg_tokenizer *t); /* the vocabulary's default */
/* The pre-tokenizer kind's canonical name ("gpt2", "smollm", "llama3", "qwen2", "qwen35"),
 * or "" for SPM. */
FG_API const char *fg_tokenizer_pre(const fg_tokenizer *t);
/* Id of a token's text (as stored, byte-mapped for BPE), or -1. */
FG_API int32_t fg_tokenizer_index(const fg_tokenizer *t, const char *text, size_t len);

/* Encodes len bytes of text (any bytes: invalid UTF-8 is carried through byte fallback or
 * the byte map). *ids is malloc'd (free with fg_tokenizer_free_ids), *n_ids its length;
 * with add_bos and a BOS id, that id comes first. FG_ERR_INVALID_ARG for a byte the
 * vocabulary cannot express (an SPM vocabulary without byte pieces nor unk). */
FG_API fg_status fg_tokenizer_encode(const fg_tokenizer *t, const char *text, size_t len, bool add_bos,
                                     int32_t **ids, size_t *n_ids);
FG_API void fg_tokenizer_free_ids(int32_t *ids);

/* Decodes a whole id list into malloc'd bytes (NUL-terminated; *len excludes the NUL; free
 * with fg_tokenizer_free_text). Added tokens give their text; SPM drops the dummy-prefix
 * space at the start. FG_ERR_RANGE naming an id outside the vocabulary. */
FG_API fg_status fg_tokenizer_decode(const fg_tokenizer *t, const int32_t *ids, size_t n_ids, char **text,
                                     size_t *len);
FG_API void fg_tokenizer_free_text(char *text);
/* Whether id is a special token (fg_tok_vocab.special): what a decode that skips special
 * tokens leaves out, as Hugging Face's skip_special_tokens and llama.cpp's detokenize with
 * special false do. Dropping those ids before fg_tokenizer_decode is that decode: the text is
 * the remaining ids' (SentencePiece's leading space is then dropped from the first of them).
 * False for an id outside the vocabulary. */
FG_API bool fg_tokenizer_is_special(const fg_tokenizer *t, int32_t id);

/* Streaming decode for generation: each pushed id gives the bytes that complete UTF-8
 * characters so far (a character split over tokens is held back until whole; bytes that
 * can never complete one are given as they are). The concatenation of every push and the
 * finish equals fg_tokenizer_decode of the same ids. */
typedef struct fg_tok_stream fg_tok_stream;
FG_API fg_status fg_tok_stream_create(const fg_tokenizer *t, fg_tok_stream **out);
/* *bytes stays valid until the next call on s. */
FG_API fg_status fg_tok_stream_push(fg_tok_stream *s, int32_t id, const char **bytes, size_t *len);
/* The bytes still held (an incomplete character at the end); the stream starts afresh. */
FG_API void fg_tok_stream_finish(fg_tok_stream *s, const char **bytes, size_t *len);
FG_API void fg_tok_stream_free(fg_tok_stream *s); /* NULL-safe */

/* Pre-tokenization alone (BPE kinds): calls fn for each piece of text, in order; the pieces
 * concatenate to the text. kind as fg_tok_vocab.pre. Stops at fn's first nonzero return. */
typedef int (*fg_tok_piece_fn)(void *ctx, const char *piece, size_t len);
FG_API fg_status fg_tok_pretokenize(const char *kind, const char *text, size_t len, fg_tok_piece_fn fn, void *ctx);

/* ---- sources ---------------------------------------------------------------------------- */

/* The tokenizer fields of a GGUF, unchanged; a field not in the file has its has_ flag false
 * (arrays then have len 0). Strings and arrays borrow from the file. */
typedef struct fg_gguf_tok_fields {
  bool has_model, has_pre, has_tokens, has_scores, has_merges, has_token_type;
  bool has_bos, has_eos, has_unk, has_add_bos, has_add_space_prefix;
  fg_gguf_str model, pre;
  fg_gguf_array tokens, scores, merges, token_type;
  uint64_t bos, eos, unk;
  bool add_bos, add_space_prefix;
} fg_gguf_tok_fields;
/* FG_ERR_TYPE naming the key when a present field has another type than the spec's. */
FG_API fg_status fg_gguf_tokenizer_fields(const fg_gguf_file *f, fg_gguf_tok_fields *out);

/* The tokenizer a GGUF carries (its metadata alone is read). FG_ERR_NOT_FOUND when a
 * required key is absent, FG_ERR_UNSUPPORTED naming a tokenizer.ggml.model or .pre this
 * library does not know. */
FG_API fg_status fg_tokenizer_from_gguf(const fg_gguf_file *f, fg_tokenizer **out);
/* From a Hugging Face directory: tokenizer.json and tokenizer_config.json when present
 * (bos/eos, add_bos_token). Byte-level BPE with a known pre-tokenizer and SentencePiece-style
 * BPE take the fast paths above; any other tokenizer.json runs the general pipeline read from
 * the file (normalizers, pre-tokenizers, a BPE / WordPiece / Unigram / WordLevel model,
 * post-processor, decoders, added tokens with lstrip / rstrip / single_word / normalized), as
 * Hugging Face `tokenizers` runs it. There, fg_tokenizer_encode's add_bos is `tokenizers`'
 * add_special_tokens (the post-processor's single template, e.g. [CLS] A [SEP]), its default
 * (fg_tokenizer_add_bos) is whether the template adds any id, fg_tokenizer_bos is the config's
 * bos_token or else the template's first id, and decode runs the file's decoders (tokens
 * joined by spaces when it has none); truncation and padding are not applied.
 * FG_ERR_UNSUPPORTED names the JSON path of a component or option that is not implemented
 * ("tokenizer.json: pre_tokenizer.pretokenizers[1].type \"Foo\" is not supported");
 * FG_ERR_INVALID_ARG the path of a malformed one. */
FG_API fg_status fg_tokenizer_from_hf_dir(const char *dir, fg_tokenizer **out);
/* PATH a .gguf file (metadata only) or a Hugging Face directory. */
FG_API fg_status fg_tokenizer_open(const char *path, fg_tokenizer **out);

#ifdef __cplusplus
}
#endif
#endif
