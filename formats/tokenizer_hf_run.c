/* Running the general tokenizer.json pipeline, as `tokenizers` orders it:
 *   1. added tokens that are not "normalized" are found in the raw text (leftmost, longest
 *      first; single_word ones only between non-word characters; lstrip / rstrip take the
 *      whitespace before / after them);
 *   2. each run between them is normalized, and the "normalized" added tokens found in that;
 *   3. each remaining run is pre-tokenized (the piece at the very start of the text is
 *      Metaspace's "first") and every piece goes through the model;
 *   4. with special tokens asked for, the post-processor's single template wraps the ids.
 * Decode: the token texts through the decoders, joined (with spaces when there is no
 * decoder, as `tokenizers` joins them). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "formats/tokenizer_hf_internal.h"

static bool word_char(const char *s, size_t n, size_t at, bool before) {
  size_t i = at;
  if (before) {
    if (!at) return false;
    i = at - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
  } else if (at >= n) {
    return false;
  }
  uint32_t c;
  if (!fg_tok_utf8_get((const unsigned char *)s + i, n - i, &c)) return false;
  if (c == '_') return true;
  utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
  return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) || (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

static bool space_at(const char *s, size_t n, size_t i, size_t *l) {
  uint32_t c;
  *l = fg_tok_utf8_get((const unsigned char *)s + i, n - i, &c);
  return *l && fg_hf_is_whitespace(c);
}

/* The next added token of the class (normalized or not) in s from pos: its index in h->added
 * and the span it takes, [*a, *b); -1 when none. */
static long next_added(const fg_tok_hf *h, bool normalized, const char *s, size_t n, size_t pos, size_t *a, size_t *b) {
  for (size_t i = pos; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    for (uint32_t k = h->added_start[c]; k < h->added_start[c + 1]; k++) {
      const fg_hf_added *x = &h->added[k];
      if (x->normalized != normalized || x->n > n - i || memcmp(s + i, x->text, x->n) != 0) continue;
      if (x->single_word && (word_char(s, n, i, true) || word_char(s, n, i + x->n, false))) continue;
      size_t lo = i, hi = i + x->n, l;
      if (x->lstrip)
        while (lo > pos) {
          size_t p = lo - 1;
          while (p > pos && ((unsigned char)s[p] & 0xC0) == 0x80) p--;
          if (!space_at(s, n, p, &l) || p + l != lo) break;
          lo = p;
        }
      if (x->rstrip)
        while (hi < n && space_at(s, n, hi, &l)) hi += l;
      *a = lo;
      *b = hi;
      return (long)k;
    }
  }
  return -1;
}

static fg_status words_out(const fg_tokenizer *t, const char *s, size_t n, bool first, fg_hf_words *ws,
                           fg_tok_ids *out) {
  if (!n) return FG_OK;
  const fg_tok_hf *h = t->hf;
  fg_hf_words_clear(ws);
  fg_status st = fg_hf_words_push(ws, s, n, first);
  if (!st) st = fg_hf_pretokenize(h->pre, h->n_pre, ws);
  for (size_t i = 0; i < ws->nw && !st; i++) st = fg_hf_model_word(t, fg_hf_word(ws, i), ws->w[i].n, out);
  return st;
}

/* One run of raw text between added tokens. */
static fg_status run(const fg_tokenizer *t, const char *s, size_t n, bool first, fg_hf_words *ws, fg_tok_ids *out) {
  if (!n) return FG_OK;
  const fg_tok_hf *h = t->hf;
  char *norm = NULL;
  size_t nn = 0;
  fg_status st = fg_hf_normalize(h->norm, h->n_norm, s, n, &norm, &nn);
  size_t pos = 0;
  while (!st) {
    size_t a = nn, b = nn;
    long k = next_added(h, true, norm, nn, pos, &a, &b);
    st = words_out(t, norm + pos, a - pos, first && pos == 0, ws, out);
    if (st || k < 0) break;
    st = fg_tok_ids_push(out, h->added[k].id);
    pos = b;
  }
  free(norm);
  return st;
}

fg_status fg_tok_hf_encode(const fg_tokenizer *t, const char *text, size_t len, bool add_special, fg_tok_ids *out) {
  const fg_tok_hf *h = t->hf;
  fg_tok_ids body = {0};
  fg_hf_words ws = {0};
  fg_status st = FG_OK;
  size_t pos = 0;
  while (!st) {
    size_t a = len, b = len;
    long k = next_added(h, false, text, len, pos, &a, &b);
    st = run(t, text + pos, a - pos, pos == 0, &ws, &body);
    if (st || k < 0) break;
    st = fg_tok_ids_push(&body, h->added[k].id);
    pos = b;
  }
  fg_hf_words_free(&ws);
  if (!add_special || !h->n_post) {
    for (size_t i = 0; i < body.n && !st; i++) st = fg_tok_ids_push(out, body.v[i]);
  } else {
    for (size_t i = 0; i < h->n_post && !st; i++)
      if (h->post[i] >= 0) st = fg_tok_ids_push(out, h->post[i]);
      else
        for (size_t j = 0; j < body.n && !st; j++) st = fg_tok_ids_push(out, body.v[j]);
  }
  free(body.v);
  return st;
}

fg_status fg_tok_hf_decode(const fg_tokenizer *t, const int32_t *ids, size_t n_ids, char **text, size_t *len) {
  const fg_tok_hf *h = t->hf;
  fg_hf_words ws = {0};
  fg_status st = FG_OK;
  for (size_t i = 0; i < n_ids && !st; i++) st = fg_hf_words_push(&ws, fg_tok_text(t, ids[i]), fg_tok_len(t, ids[i]), !i);
  if (!st && h->n_dec) st = fg_hf_decode_words(h->dec, h->n_dec, &ws);
  size_t total = 1;
  for (size_t i = 0; i < ws.nw; i++) total += ws.w[i].n + 1;
  char *o = st ? NULL : malloc(total);
  if (!st && !o) st = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", total);
  if (!st) {
    size_t k = 0;
    for (size_t i = 0; i < ws.nw; i++) {
      if (i && !h->n_dec) o[k++] = ' ';
      memcpy(o + k, fg_hf_word(&ws, i), ws.w[i].n);
      k += ws.w[i].n;
    }
    o[k] = 0;
    *text = o;
    *len = k;
  }
  fg_hf_words_free(&ws);
  return st;
}

/* Bytes at the end of b[0, n) that begin a UTF-8 character still missing continuation bytes. */
static size_t open_tail(const unsigned char *b, size_t n) {
  for (size_t back = 1; back <= 3 && back <= n; back++) {
    unsigned char c = b[n - back];
    if ((c & 0xC0) == 0x80) continue;
    size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

static bool byte_piece(const fg_tokenizer *t, int32_t id) {
  return fg_tok_len(t, id) == 6 && memcmp(fg_tok_text(t, id), "<0x", 3) == 0;
}

fg_status fg_hf_stream_push(const fg_tokenizer *t, fg_hf_stream *s, int32_t id, const char **bytes, size_t *len) {
  char *d = NULL;
  size_t dn = 0;
  fg_status st = fg_tok_ids_push(&s->hist, id);
  if (st) return st;
  if ((st = fg_tok_hf_decode(t, s->hist.v, s->hist.n, &d, &dn))) {
    s->hist.n--;
    return st;
  }
  free(s->dec);
  s->dec = d;
  s->dec_n = dn;
  size_t from = s->emitted < dn ? s->emitted : dn;
  size_t keep = open_tail((const unsigned char *)d + from, dn - from);
  /* ByteFallback reads a run of <0xXX> tokens whole (U+FFFD for each byte when the run is not
   * UTF-8), so a trailing run may still change: its text waits for another token or the end. */
  size_t r = 0;
  while (r < s->hist.n && byte_piece(t, s->hist.v[s->hist.n - 1 - r])) r++;
  if (r) {
    char *p = NULL;
    size_t pn = 0;
    if ((st = fg_tok_hf_decode(t, s->hist.v, s->hist.n - r, &p, &pn))) return st;
    free(p);
    size_t stable = pn < dn ? pn : dn;
    keep = stable > from ? dn - stable : dn - from;
  }
  *bytes = d + from;
  *len = dn - from - keep;
  s->emitted = from + *len;
  return FG_OK;
}

void fg_hf_stream_finish(fg_hf_stream *s, const char **bytes, size_t *len) {
  size_t from = s->emitted < s->dec_n ? s->emitted : s->dec_n;
  *bytes = s->dec ? s->dec + from : "";
  *len = s->dec_n - from;
  s->hist.n = s->emitted = s->dec_n = 0;
}

void fg_hf_stream_free(fg_hf_stream *s) {
  free(s->hist.v);
  free(s->dec);
}
