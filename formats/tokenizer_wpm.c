/* WordPiece as llama.cpp runs a GGUF "bert" vocabulary (formats/tokenizer_internal.h): the text
 * lower-cased and stripped of accents (NFD, combining marks dropped) where the vocabulary's
 * normalizer says so, control characters dropped, cut at whitespace, every
 * punctuation mark, ASCII symbol and CJK ideograph a word of its own; each word, with U+2581
 * before it (the converter stores word-initial pieces so and continuation pieces bare),
 * matched greedily longest first from the left. A word with a character no piece covers is
 * the unknown token, whole. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "formats/tokenizer_internal.h"

/* CJK ideographs, as BERT's _is_chinese_char lists them. */
static bool is_cjk(utf8proc_int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static bool is_space(utf8proc_int32_t c) {
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85) return true;
  const utf8proc_category_t k = utf8proc_category(c);
  return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

static bool is_punct(utf8proc_int32_t c) {
  const utf8proc_category_t k = utf8proc_category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

static bool is_symbol(utf8proc_int32_t c) {
  const utf8proc_category_t k = utf8proc_category(c);
  return k >= UTF8PROC_CATEGORY_SM && k <= UTF8PROC_CATEGORY_SO;
}

/* One word's pieces, or the unknown token. */
static fg_status word(const fg_tokenizer *t, const char *w, size_t n, fg_tok_ids *out) {
  if (!n) return FG_OK;
  char *buf = malloc(n + 3);
  if (!buf) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  memcpy(buf, "\xe2\x96\x81", 3);
  memcpy(buf + 3, w, n);
  const size_t m = n + 3, start = out->n;
  fg_status s = FG_OK;
  bool whole = true;
  for (size_t i = 0; i < m && s == FG_OK;) {
    size_t j = m - i < t->max_token_len ? m : i + t->max_token_len;
    int32_t id = -1;
    for (; j > i; j--)
      if ((id = fg_tokenizer_index(t, buf + i, j - i)) >= 0) break;
    if (id < 0) {
      whole = false;
      break;
    }
    s = fg_tok_ids_push(out, id);
    i = j;
  }
  free(buf);
  if (s != FG_OK) return s;
  if (!whole) {
    out->n = start;
    if (t->unk < 0) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: a word has no pieces and the vocabulary no unknown token");
    return fg_tok_ids_push(out, t->unk);
  }
  return FG_OK;
}

fg_status fg_tok_wpm_fragment(const fg_tokenizer *t, const char *s, size_t n, fg_tok_ids *out) {
  utf8proc_uint8_t *nfd = NULL;
  const utf8proc_ssize_t k =
      utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &nfd,
                   UTF8PROC_STABLE | (t->strip_accents ? UTF8PROC_DECOMPOSE : 0));
  /* invalid UTF-8: the bytes as they are, each a replacement character llama.cpp drops */
  if (k < 0) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: WordPiece text is not valid UTF-8");
  char *w = malloc((size_t)k * 2 + 8);
  if (!w) {
    free(nfd);
    return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  }
  size_t wl = 0;
  fg_status st = FG_OK;
  for (utf8proc_ssize_t i = 0; i < k && st == FG_OK;) {
    utf8proc_int32_t c;
    const utf8proc_ssize_t l = utf8proc_iterate(nfd + i, k - i, &c);
    i += l > 0 ? l : 1;
    if (l <= 0) continue;
    if (is_space(c)) {
      st = word(t, w, wl, out);
      wl = 0;
      continue;
    }
    if (c == 0 || c == 0xFFFD || utf8proc_category(c) == UTF8PROC_CATEGORY_CC) continue;
    if (t->strip_accents && utf8proc_category(c) == UTF8PROC_CATEGORY_MN) continue;
    utf8proc_uint8_t enc[4];
    const utf8proc_ssize_t el = utf8proc_encode_char(t->lowercase ? utf8proc_tolower(c) : c, enc);
    if (is_punct(c) || (c < 0x7F && is_symbol(c)) || is_cjk(c)) {
      if ((st = word(t, w, wl, out)) == FG_OK) st = word(t, (const char *)enc, (size_t)el, out);
      wl = 0;
    } else {
      memcpy(w + wl, enc, (size_t)el);
      wl += (size_t)el;
    }
  }
  if (st == FG_OK) st = word(t, w, wl, out);
  free(w);
  free(nfd);
  return st;
}
