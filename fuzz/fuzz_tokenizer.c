/* libFuzzer target for the tokenizer: a vocabulary made from the input, then the rest of the
 * input encoded, decoded and stream-decoded with it.
 *
 * Input: byte 0 picks the kind (SentencePiece or byte-level BPE with one of the
 * pre-tokenizers) and options; up to the first "\0\0", '\0'-separated entries are tokens
 * ("M" + "LEFT RIGHT": a merge; "A" + text: an added token; "S": SentencePiece byte pieces);
 * after it, the text. A byte-level vocabulary always holds the 256 byte tokens, so encoding
 * must succeed and decode must give the text back exactly; the stream must give what
 * decode gives. Vocabularies the builder refuses are fine, crashes and leaks are not.
 *
 *   ./fuzz_tokenizer -max_total_time=60 corpus
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/tokenizer.h"

#define MAX_ENTRIES 512

/* The second eight are llama.cpp's regex sequences (falcon, deepseek-*) and names onto kinds;
 * the input's length picks the half, so a seed's first byte keeps its meaning. */
static const char *pre_names[] = {"gpt2",      "smollm",         "llama3",       "qwen2",     "qwen35", "llama-bpe",
                                  "gpt-2",     "bogus",          "falcon",       "deepseek-coder", "deepseek-llm",
                                  "starcoder", "mpt",            "refact",       "command-r", "smollm"};

/* The GPT-2 byte map, written here independently of the library's: printable Latin-1 bytes
 * stand for themselves, the rest take U+0100 onwards in byte order. */
static size_t byte_token(int b, char *o) {
  int self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  unsigned cp = (unsigned)b;
  if (!self) {
    cp = 256;
    for (int c = 0; c < b; c++) cp += !((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
  }
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  o[0] = (char)(0xC0 | (cp >> 6));
  o[1] = (char)(0x80 | (cp & 0x3F));
  return 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0];
  const char *p = (const char *)data + 1;
  size_t n = size - 1;
  const char *sep = NULL;
  for (size_t i = 0; i + 1 < n; i++)
    if (p[i] == 0 && p[i + 1] == 0) {
      sep = p + i;
      break;
    }
  size_t head = sep ? (size_t)(sep - p) : n;
  const char *text = sep ? sep + 2 : p + n;
  size_t text_len = (size_t)(p + n - text);

  static char byte_tok[256][3];
  static const char *tokens[256 + MAX_ENTRIES + 256];
  static size_t lens[256 + MAX_ENTRIES + 256];
  static const char *merges[MAX_ENTRIES];
  static size_t merge_lens[MAX_ENTRIES];
  static int32_t added[MAX_ENTRIES];
  static float scores[256 + MAX_ENTRIES + 256];
  static char spm_bytes[256][7];
  bool spm = (mode & 7) == 7;
  size_t nt = 0, nm = 0, na = 0;
  bool byte_pieces = false;
  if (!spm)
    for (int b = 0; b < 256; b++) {
      tokens[nt] = byte_tok[b];
      lens[nt++] = byte_token(b, byte_tok[b]);
    }
  for (size_t i = 0; i < head && nt < 256 + MAX_ENTRIES;) {
    const char *e = p + i;
    const char *z = memchr(e, 0, head - i);
    size_t l = z ? (size_t)(z - e) : head - i;
    if (l && e[0] == 'M' && nm < MAX_ENTRIES) {
      merges[nm] = e + 1;
      merge_lens[nm++] = l - 1;
    } else if (l == 1 && e[0] == 'S') {
      byte_pieces = true;
    } else {
      bool add = l && e[0] == 'A' && na < MAX_ENTRIES;
      if (add) added[na++] = (int32_t)nt;
      tokens[nt] = add ? e + 1 : e;
      lens[nt++] = add ? l - 1 : l;
    }
    i += l + 1;
  }
  if (spm && byte_pieces)
    for (int b = 0; b < 256; b++) {
      static const char hex[] = "0123456789ABCDEF";
      memcpy(spm_bytes[b], "<0x", 3);
      spm_bytes[b][3] = hex[b >> 4];
      spm_bytes[b][4] = hex[b & 15];
      spm_bytes[b][5] = '>';
      tokens[nt] = spm_bytes[b];
      lens[nt++] = 6;
    }
  for (size_t i = 0; i < nt; i++) scores[i] = -(float)((i * 2654435761u) % 1000);
  fg_tok_vocab v = fg_tok_vocab_init(spm ? FG_TOK_SPM : FG_TOK_BPE);
  v.n_tokens = nt;
  v.tokens = tokens;
  v.token_lens = lens;
  v.scores = scores;
  v.n_merges = spm ? 0 : nm;
  v.merges = merges;
  v.merge_lens = merge_lens;
  v.n_added = na;
  v.added = added;
  v.pre = pre_names[(mode & 7) | ((size & 1) << 3)];
  v.ignore_merges = mode & 8;
  v.add_space_prefix = mode & 16;
  v.unk_id = spm && nt && (mode & 32) ? 0 : -1;
  v.normalize_nfc = !spm && (mode & 128);
  /* SPM: the BPE-only bits 8 and 128 pick where the dummy prefix goes (FG_TOK_PREFIX_*). */
  if (spm) v.prefix_at = (fg_tok_prefix)(((mode >> 3) & 1) | ((mode >> 6) & 2));
  fg_tokenizer *t = NULL;
  if (fg_tokenizer_from_vocab(&v, &t) != FG_OK) return 0;
  int32_t *ids = NULL;
  size_t n_ids = 0;
  if (fg_tokenizer_encode(t, text, text_len, mode & 64, &ids, &n_ids) == FG_OK) {
    char *dec = NULL;
    size_t dl = 0;
    if (fg_tokenizer_decode(t, ids, n_ids, &dec, &dl) != FG_OK) __builtin_trap();
    /* Byte-level BPE gives every byte back (a BOS, when asked for, has none to give; NFC
     * gives the composed text). */
    if (!spm && !(mode & 64) && !(mode & 128) && (dl != text_len || memcmp(dec, text, dl) != 0)) __builtin_trap();
    fg_tok_stream *s = NULL;
    if (fg_tok_stream_create(t, &s) != FG_OK) __builtin_trap();
    size_t at = 0;
    for (size_t i = 0; i < n_ids; i++) {
      const char *b;
      size_t l;
      if (fg_tok_stream_push(s, ids[i], &b, &l) != FG_OK || at + l > dl || memcmp(dec + at, b, l) != 0)
        __builtin_trap();
      at += l;
    }
    const char *b;
    size_t l;
    fg_tok_stream_finish(s, &b, &l);
    if (at + l != dl || memcmp(dec + at, b, l) != 0) __builtin_trap();
    fg_tok_stream_free(s);
    fg_tokenizer_free_text(dec);
    fg_tokenizer_free_ids(ids);
  } else if (!spm) {
    __builtin_trap(); /* every byte has a token */
  }
  fg_tokenizer_close(t);
  return 0;
}
