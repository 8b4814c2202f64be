/* WordPiece as llama.cpp runs a GGUF "bert" vocabulary (formats/tokenizer_internal.h): the text
 * lower-cased and stripped of accents (each code point its decomposition's first, marks dropped) where the vocabulary's
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

/* llama.cpp's "NFD" maps each code point to one: the first of its full canonical
 * decomposition (é -> e, a Hangul syllable -> its leading consonant), so the marks and
 * trailing jamo a real NFD would add never appear. */
static utf8proc_int32_t nfd_first(utf8proc_int32_t c) {
  utf8proc_int32_t d[32];
  int last = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(c, d, 32, UTF8PROC_DECOMPOSE, &last);
  return n > 0 ? d[0] : c;
}

fg_status fg_tok_wpm_fragment(const fg_tokenizer *t, const char *s, size_t n, fg_tok_ids *out) {
  char *w = malloc(n * 2 + 8); /* a lower-cased code point is at most one byte longer */
  if (!w) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  size_t wl = 0;
  fg_status st = FG_OK;
  for (size_t i = 0; i < n && st == FG_OK;) {
    utf8proc_int32_t c;
    const utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
    i += l > 0 ? (size_t)l : 1;
    if (l <= 0) continue; /* invalid UTF-8: a replacement character, which llama.cpp drops */
    if (t->strip_accents) c = nfd_first(c);
    if (is_space(c)) {
      st = word(t, w, wl, out);
      wl = 0;
      continue;
    }
    /* llama.cpp drops \p{C} but for unassigned code points, and with the accents every \p{M} */
    const utf8proc_category_t k = utf8proc_category(c);
    if (c == 0 || c == 0xFFFD || (k >= UTF8PROC_CATEGORY_CC && k <= UTF8PROC_CATEGORY_CO)) continue;
    if (t->strip_accents && k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME) continue;
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
  return st;
}
