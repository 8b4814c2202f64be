/* Gemma 4's tokenizer as llama.cpp runs a GGUF whose tokenizer.ggml.model is "gemma4": a BPE
 * in SentencePiece's clothes. Each run of text between added tokens has every ' ' written as
 * U+2581; it is cut into runs of newlines and runs of everything else (no word-level split:
 * merges cross spaces); a newline run that is a token is that token; the rest is merged by
 * rank from its UTF-8 characters (not from GPT-2-mapped bytes). A character no token spells
 * stays a symbol of its own that never merges and comes out as its bytes' <0xXX> pieces (a
 * byte with no such piece is left out, as llama.cpp leaves it). Decode is SentencePiece's:
 * U+2581 back to ' ', <0xXX> pieces to their byte (formats/tokenizer.c). */
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_internal.h"

/* The length of the UTF-8 sequence a lead byte announces, as llama.cpp reads it (a stray
 * continuation byte is one byte); capped by what is left. */
static size_t char_len(const unsigned char *p, size_t left) {
  static const unsigned char by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  size_t l = by_high_nibble[p[0] >> 4];
  return l < left ? l : left;
}

/* One run of the cut: its characters merged, then out. */
static fg_status run(const fg_tokenizer *t, const char *s, size_t n, fg_tok_ids *out) {
  if (n && s[0] == '\n') { /* a newline run: whole when it is a token */
    int32_t id = fg_tokenizer_index(t, s, n);
    if (id >= 0) return fg_tok_ids_push(out, id);
  }
  int32_t *sym = malloc(n * sizeof *sym), *next = malloc(n * sizeof *next);
  uint32_t *at = malloc(n * sizeof *at);
  fg_status st = FG_OK;
  if (!sym || !next || !at) {
    st = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for a run of %zu bytes", n);
    goto done;
  }
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    size_t l = char_len((const unsigned char *)s + i, n - i);
    int32_t id = fg_tokenizer_index(t, s + i, l);
    at[m] = (uint32_t)i;
    sym[m++] = id >= 0 ? id : -2; /* -2: spelled out in bytes below */
    i += l;
  }
  if ((st = fg_tok_bpe_merge(t, sym, next, m))) goto done;
  for (int32_t i = 0; i >= 0 && st == FG_OK; i = next[i]) {
    if (sym[i] >= 0) {
      st = fg_tok_ids_push(out, sym[i]);
      continue;
    }
    size_t end = next[i] >= 0 ? at[next[i]] : n;
    for (size_t b = at[i]; b < end && st == FG_OK; b++) {
      int32_t id = t->byte_ids[(unsigned char)s[b]];
      if (id >= 0) st = fg_tok_ids_push(out, id);
    }
  }
done:
  free(sym);
  free(next);
  free(at);
  return st;
}

fg_status fg_tok_gemma4_fragment(const fg_tokenizer *t, const char *s, size_t n, fg_tok_ids *out) {
  size_t spaces = 0;
  for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
  char *e = malloc(n + 2 * spaces + 1);
  if (!e) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", n);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == ' ') {
      memcpy(e + k, "\xe2\x96\x81", 3);
      k += 3;
    } else {
      e[k++] = s[i];
    }
  }
  fg_status st = FG_OK;
  for (size_t i = 0; i < k && st == FG_OK;) {
    const bool nl = e[i] == '\n';
    size_t j = i;
    while (j < k && (e[j] == '\n') == nl) j++;
    st = run(t, e + i, j - i, out);
    i = j;
  }
  free(e);
  return st;
}
