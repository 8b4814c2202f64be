/* Unigram (a tokenizer.json "Unigram" model: pieces with log-probabilities): the segmentation
 * of a word with the highest total score (Viterbi over every piece that starts at every
 * character). A character no one-character piece covers may be the unknown token, scored
 * 10 below the lowest piece, as `tokenizers` scores it; a run of unknowns is one unknown, and
 * with byte_fallback an unknown becomes its <0xXX> pieces when they all exist. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_hf_internal.h"

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
      /* Every piece starting here: lengths up to the longest piece, at character ends. */
      for (size_t j = i + cl; j <= n && j - i <= h->max_piece; j++) {
        if (j < n && ((unsigned char)w[j] & 0xC0) == 0x80) continue;
        int32_t p = fg_tokenizer_index(t, w + i, j - i);
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
