/* Unigram (a tokenizer.json "Unigram" model: pieces with log-probabilities): the segmentation
 * of a word with the highest total score (Viterbi over every piece that starts at every
 * character). A character no one-character piece covers may be the unknown token, scored
 * 10 below the lowest piece, as `tokenizers` scores it; a run of unknowns is one unknown, and
 * with byte_fallback an unknown becomes its <0xXX> pieces when they all exist. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_hf_internal.h"

/* An entry per distinct byte string that is a piece or a prefix of one: its FNV-1a hash, its
 * length, a piece it begins (whose text holds the bytes, for the compare) and the piece it is,
 * or -1. The hash is extended one byte at a time as the Viterbi extends a piece, so a lookup
 * costs no rehash of the bytes before it. */
struct fg_hf_uni_slot {
  uint64_t h;
  uint32_t len;
  int32_t of, piece;
};

#define FNV_START 0xcbf29ce484222325ull
static uint64_t fnv_step(uint64_t h, unsigned char c) { return (h ^ c) * 0x100000001b3ull; }

static struct fg_hf_uni_slot *uni_find(const fg_tokenizer *t, const fg_tok_hf *h, uint64_t hash, const char *s,
                                       size_t len) {
  for (uint64_t i = hash & (h->uni_cap - 1);; i = (i + 1) & (h->uni_cap - 1)) {
    struct fg_hf_uni_slot *e = &h->uni[i];
    if (e->of < 0) return e; /* the empty slot where it would go */
    if (e->h == hash && e->len == len && memcmp(fg_tok_text(t, e->of), s, len) == 0) return e;
  }
}

fg_status fg_hf_unigram_index(const fg_tokenizer *t, fg_tok_hf *h, size_t n_pieces) {
  uint64_t total = 0;
  for (size_t i = 0; i < n_pieces; i++) total += fg_tok_len(t, (int32_t)i);
  uint64_t cap = 16;
  while (cap < 2 * total + 2) cap *= 2;
  if (cap > SIZE_MAX / sizeof *h->uni || !(h->uni = malloc(cap * sizeof *h->uni)))
    return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for the Unigram table of %zu pieces", n_pieces);
  h->uni_cap = cap;
  for (uint64_t i = 0; i < cap; i++) h->uni[i].of = -1;
  for (size_t id = 0; id < n_pieces; id++) {
    const char *p = fg_tok_text(t, (int32_t)id);
    const size_t n = fg_tok_len(t, (int32_t)id);
    uint64_t hash = FNV_START;
    for (size_t l = 1; l <= n; l++) {
      hash = fnv_step(hash, (unsigned char)p[l - 1]);
      struct fg_hf_uni_slot *e = uni_find(t, h, hash, p, l);
      if (e->of < 0) *e = (struct fg_hf_uni_slot){hash, (uint32_t)l, (int32_t)id, -1};
      if (l == n && e->piece < 0) e->piece = (int32_t)id; /* the first of equal pieces, as the index */
    }
  }
  return FG_OK;
}

fg_status fg_hf_unigram_word(const fg_tokenizer *t, const char *w, size_t n, fg_tok_ids *out) {
  const fg_tok_hf *h = t->hf;
  /* best[i]: the best score of w[0, i) at a character boundary; from[i], id[i]: its last piece. */
  double *best = malloc((n + 1) * sizeof *best);
  size_t *from = malloc((n + 1) * sizeof *from);
  int32_t *id = malloc((n + 1) * sizeof *id);
  fg_status st = FG_OK;
  if (!best || !from || !id) {
    st = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    goto done;
  }
  for (size_t i = 0; i <= n; i++) best[i] = -DBL_MAX, from[i] = SIZE_MAX, id[i] = -1;
  best[0] = 0;
  for (size_t i = 0; i < n;) {
    size_t cl = 1;
    while (i + cl < n && ((unsigned char)w[i + cl] & 0xC0) == 0x80) cl++;
    if (from[i] != SIZE_MAX || i == 0) {
      bool single = false;
      /* Every piece starting here, at character ends: extended byte by byte until no piece
       * goes on. */
      uint64_t hash = FNV_START;
      for (size_t j = i + 1; j <= n && j - i <= h->max_piece; j++) {
        hash = fnv_step(hash, (unsigned char)w[j - 1]);
        const struct fg_hf_uni_slot *e = uni_find(t, h, hash, w + i, j - i);
        if (e->of < 0) break;
        if (j < n && ((unsigned char)w[j] & 0xC0) == 0x80) continue;
        int32_t p = e->piece;
        if (p < 0 || t->is_added[p]) continue;
        if (j == i + cl) single = true;
        double s = best[i] + h->scores[p];
        if (s > best[j]) best[j] = s, from[j] = i, id[j] = p;
      }
      if (!single) {
        double s = best[i] + h->unk_score;
        if (s > best[i + cl]) best[i + cl] = s, from[i + cl] = i, id[i + cl] = -1;
      }
    }
    i += cl;
  }
  /* Walk back, then emit forwards; unknown runs fused. */
  size_t k = 0, *path = malloc((n + 1) * sizeof *path);
  if (!path) {
    st = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    goto done;
  }
  for (size_t j = n; j > 0; j = from[j]) path[k++] = j;
  for (size_t q = k; q > 0 && !st;) {
    size_t end = path[--q], start = from[end];
    if (id[end] >= 0) {
      st = fg_tok_ids_push(out, id[end]);
      continue;
    }
    while (q > 0 && id[path[q - 1]] < 0) end = path[--q];
    bool bytes = h->byte_fallback;
    for (size_t b = start; bytes && b < end; b++) bytes = h->byte_ids[(unsigned char)w[b]] >= 0;
    if (bytes) {
      for (size_t b = start; b < end && !st; b++) st = fg_tok_ids_push(out, h->byte_ids[(unsigned char)w[b]]);
    } else if (h->unk >= 0) {
      st = fg_tok_ids_push(out, h->unk);
    } else {
      st = fg_fail(FG_ERR_INVALID_ARG, "tokenizer: Unigram text \"%.*s\" has no piece and the model has no unk_id",
                   (int)(end - start), w + start);
    }
  }
  free(path);
done:
  free(best);
  free(from);
  free(id);
  return st;
}
