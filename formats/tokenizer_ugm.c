/* Unigram as llama.cpp runs a GGUF whose tokenizer.ggml.model is "t5" (T5, XLM-R and the
 * embedding models built on them):
 *   - normalization: at each position, a user-defined token is kept as it is; else the longest
 *     match in the file's precompiled_charsmap (SentencePiece's normalization rules: a
 *     double-array trie whose leaves index NUL-terminated replacements) is replaced; else the
 *     UTF-8 character stays (an invalid byte becomes U+FFFD). Spaces then become U+2581:
 *     with remove_extra_whitespaces, runs of spaces collapse to one U+2581 before each word
 *     (none at the end); with add_space_prefix, one U+2581 opens the text.
 *   - Viterbi: the best-scoring cut into normal, user-defined (score 0) and unused tokens, one
 *     UTF-8 character at a time; a character no token starts gets the unknown token at the
 *     lowest normal score minus 10, and consecutive unknowns are one.
 * The charsmap is read with bounds checks at every step, so a damaged one fails the encode
 * with an error rather than reading outside it. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_internal.h"

struct fg_tok_ugm {
  uint32_t *xcda; /* the trie's packed nodes */
  size_t xcda_n;
  char *repl; /* the replacements, each NUL-terminated */
  size_t repl_n;
  double unk_score;
  bool prepend, merge_spaces, has_user_defined;
};

void fg_tok_ugm_free(struct fg_tok_ugm *u) {
  if (!u) return;
  free(u->xcda);
  free(u->repl);
  free(u);
}

fg_status fg_tok_ugm_new(const fg_tokenizer *t, const uint8_t *charsmap, size_t n, bool add_space_prefix,
                         bool remove_extra_ws, struct fg_tok_ugm **out) {
  if (t->unk < 0) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: a Unigram vocabulary needs an unknown token");
  struct fg_tok_ugm *u = calloc(1, sizeof *u);
  if (!u) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  u->prepend = add_space_prefix;
  u->merge_spaces = remove_extra_ws;
  if (n) {
    if (n < 4) {
      fg_tok_ugm_free(u);
      return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: precompiled_charsmap of %zu bytes has no size header", n);
    }
    const uint32_t blob = (uint32_t)charsmap[0] | (uint32_t)charsmap[1] << 8 | (uint32_t)charsmap[2] << 16 |
                          (uint32_t)charsmap[3] << 24;
    if ((uint64_t)blob + 4 >= n) {
      fg_tok_ugm_free(u);
      return fg_fail(FG_ERR_INVALID_ARG,
                     "tokenizer: precompiled_charsmap announces a %u-byte trie but holds %zu bytes in all", blob, n);
    }
    u->xcda_n = blob / 4;
    u->repl_n = n - 4 - blob;
    u->xcda = malloc((u->xcda_n ? u->xcda_n : 1) * sizeof *u->xcda);
    u->repl = malloc(u->repl_n);
    if (!u->xcda || !u->repl) {
      fg_tok_ugm_free(u);
      return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for the precompiled_charsmap");
    }
    for (size_t i = 0; i < u->xcda_n; i++) {
      const uint8_t *p = charsmap + 4 + 4 * i;
      u->xcda[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    }
    memcpy(u->repl, charsmap + 4 + blob, u->repl_n);
  }
  double min_score = FLT_MAX;
  for (size_t i = 0; i < t->n; i++) {
    if (t->type[i] == FG_TOK_TYPE_NORMAL && t->scores[i] < min_score) min_score = t->scores[i];
    if (t->type[i] == FG_TOK_TYPE_USER_DEFINED) u->has_user_defined = true;
  }
  u->unk_score = min_score - 10.0;
  *out = u;
  return FG_OK;
}

/* ---- normalization ------------------------------------------------------------------------- */

/* A node of the XOR-compressed double array: BASE in bits 10-30 (shifted left by 8 when bit
 * 9 is set), LCHECK in bits 0-7 (bit 31 kept so a value node never passes a label check),
 * the leaf flag in bit 8, a leaf's value in bits 0-30. */
static bool node(const struct fg_tok_ugm *u, size_t i, uint32_t *v) {
  if (i >= u->xcda_n) return false;
  *v = u->xcda[i];
  return true;
}
static uint32_t base_of(uint32_t v) { return (v >> 10) << ((v & (1u << 9)) >> 6); }

typedef struct piece {
  const char *p;
  size_t n, consumed;
} piece;

static size_t char_len(const unsigned char *p, size_t left) {
  static const unsigned char by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  size_t l = by_high_nibble[p[0] >> 4];
  return l < left ? l : left;
}

static fg_status prefix(const fg_tokenizer *t, const struct fg_tok_ugm *u, const char *s, size_t n, size_t off,
                        piece *out) {
  if (u->has_user_defined) {
    size_t l = n - off < t->max_token_len ? n - off : t->max_token_len;
    for (; l > 0; l--) {
      int32_t id = fg_tokenizer_index(t, s + off, l);
      if (id >= 0 && t->type[id] == FG_TOK_TYPE_USER_DEFINED) {
        *out = (piece){s + off, l, l};
        return FG_OK;
      }
    }
  }
  size_t best_len = 0;
  uint32_t best_val = 0, v;
  if (u->xcda_n) {
    if (!node(u, 0, &v)) goto bad;
    size_t at = base_of(v);
    for (size_t p = off; p < n; p++) {
      const unsigned char c = (unsigned char)s[p];
      if (!c) break;
      at ^= c;
      if (!node(u, at, &v)) goto bad;
      if ((v & ((1u << 31) | 0xffu)) != c) break;
      const bool leaf = (v >> 8) & 1;
      at ^= base_of(v);
      if (leaf) {
        if (!node(u, at, &v)) goto bad;
        best_len = p - off + 1;
        best_val = v & ((1u << 31) - 1);
      }
    }
  }
  if (best_len) {
    if (best_val >= u->repl_n) goto bad;
    const char *r = u->repl + best_val;
    const char *z = memchr(r, 0, u->repl_n - best_val);
    if (!z) goto bad;
    *out = (piece){r, (size_t)(z - r), best_len};
    return FG_OK;
  }
  uint32_t cp;
  size_t l = fg_tok_utf8_get((const unsigned char *)s + off, n - off, &cp);
  *out = l ? (piece){s + off, l, l} : (piece){"\xef\xbf\xbd", 3, 1};
  return FG_OK;
bad:
  return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: the precompiled_charsmap points outside itself");
}

typedef struct buf {
  char *p;
  size_t n, cap;
} buf;

static bool put(buf *b, const char *s, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + n) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) return false;
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  return true;
}

static fg_status normalize(const fg_tokenizer *t, const struct fg_tok_ugm *u, const char *s, size_t n, buf *o) {
  static const char space[] = "\xe2\x96\x81";
  bool prepended = false, in_word = false;
  for (size_t off = 0; off < n;) {
    piece pc = {NULL, 0, 0};
    fg_status st = prefix(t, u, s, n, off, &pc);
    if (st) return st;
    for (size_t i = 0; i < pc.n; i++) {
      bool ok = true;
      if (pc.p[i] != ' ') {
        if (!in_word) {
          in_word = true;
          if ((u->prepend && !prepended) || u->merge_spaces) {
            ok = put(o, space, 3);
            prepended = true;
          }
        }
        ok = ok && put(o, pc.p + i, 1);
      } else {
        in_word = false;
        if (!u->merge_spaces) ok = put(o, space, 3);
      }
      if (!ok) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    }
    off += pc.consumed;
  }
  return FG_OK;
}

/* ---- Viterbi ------------------------------------------------------------------------------- */

typedef struct best {
  int32_t id;
  size_t from;
  double score;
} best;

fg_status fg_tok_ugm_fragment(const fg_tokenizer *t, const char *s, size_t n, fg_tok_ids *out) {
  const struct fg_tok_ugm *u = t->ugm;
  buf nb = {0};
  fg_status st = normalize(t, u, s, n, &nb);
  const size_t len = nb.n;
  best *r = NULL;
  if (st || !len) goto done;
  if (!(r = malloc((len + 1) * sizeof *r))) {
    st = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", len);
    goto done;
  }
  for (size_t i = 0; i <= len; i++) r[i] = (best){t->unk, 0, -DBL_MAX};
  r[0].score = 0;
  for (size_t off = 0; off < len;) {
    const size_t cl = char_len((const unsigned char *)nb.p + off, len - off);
    const double cur = r[off].score;
    bool single = false;
    const size_t maxl = len - off < t->max_token_len ? len - off : t->max_token_len;
    for (size_t l = 1; l <= maxl; l++) {
      int32_t id = fg_tokenizer_index(t, nb.p + off, l);
      if (id < 0) continue;
      const int32_t ty = t->type[id];
      if (ty != FG_TOK_TYPE_NORMAL && ty != FG_TOK_TYPE_USER_DEFINED && ty != FG_TOK_TYPE_UNUSED) continue;
      if (l == cl) single = true;
      const double sc = cur + (ty == FG_TOK_TYPE_USER_DEFINED ? 0.0 : (double)t->scores[id]);
      if (sc > r[off + l].score) r[off + l] = (best){id, off, sc};
    }
    if (!single) {
      const double sc = cur + u->unk_score;
      if (sc > r[off + cl].score) r[off + cl] = (best){t->unk, off, sc};
    }
    off += cl;
  }
  /* back from the end; a run of unknowns is one */
  const size_t start = out->n;
  bool prev_unk = false;
  for (size_t at = len;;) {
    const bool unk = r[at].id == t->unk;
    if (!(prev_unk && unk) && (st = fg_tok_ids_push(out, r[at].id))) goto done;
    if (!r[at].from) break;
    prev_unk = unk;
    at = r[at].from;
  }
  for (size_t i = start, j = out->n - 1; i < j; i++, j--) {
    int32_t x = out->v[i];
    out->v[i] = out->v[j];
    out->v[j] = x;
  }
done:
  free(r);
  free(nb.p);
  return st;
}
