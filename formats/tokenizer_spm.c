/* SentencePiece-style merging of one normalized fragment (spaces already U+2581).
 *
 * SentencePiece's BPE: the fragment starts as one symbol per UTF-8 character; of all
 * adjacent pairs whose joined text is a piece, the one with the highest score is merged,
 * the leftmost among equal scores, until none is left. A final symbol that is not a piece
 * becomes its bytes' <0xXX> pieces (byte fallback), or the unknown piece without them.
 * Pieces SentencePiece never builds by merging (control, unknown and byte pieces) are not
 * merge targets here either. */
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_internal.h"

typedef struct spm_ent {
  float score;
  uint32_t pos;
  uint32_t len; /* bytes of the joined text when pushed; a change means a side was merged */
} spm_ent;

static bool ent_better(spm_ent a, spm_ent b) { return a.score != b.score ? a.score > b.score : a.pos < b.pos; }

static void heap_push(spm_ent *h, size_t *n, spm_ent e) {
  size_t i = (*n)++;
  while (i && ent_better(e, h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = e;
}

static spm_ent heap_pop(spm_ent *h, size_t *n) {
  spm_ent top = h[0], e = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && ent_better(h[c + 1], h[c])) c++;
    if (!ent_better(h[c], e)) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = e;
  return top;
}

static bool mergeable(const fg_tokenizer *t, int32_t id) {
  if (id < 0) return false;
  int32_t ty = t->type[id];
  return ty != FG_TOK_TYPE_CONTROL && ty != FG_TOK_TYPE_UNKNOWN && ty != FG_TOK_TYPE_BYTE &&
         ty != FG_TOK_TYPE_NOT_MERGED;
}

typedef struct spm_work {
  const char *s;
  uint32_t *start, *len;
  int32_t *next, *prev;
  spm_ent *h;
  size_t hn;
} spm_work;

static void push_pair(const fg_tokenizer *t, spm_work *w, int32_t l, int32_t r) {
  uint32_t n = w->len[l] + w->len[r];
  int32_t id = fg_tokenizer_index(t, w->s + w->start[l], n);
  if (id >= 0 && mergeable(t, id)) heap_push(w->h, &w->hn, (spm_ent){t->scores[id], (uint32_t)l, n});
}

fg_status fg_tok_spm_fragment(const fg_tokenizer *t, const char *frag, size_t len, fg_tok_ids *out) {
  if (!len) return FG_OK;
  if (len > UINT32_MAX / 2) return fg_fail(FG_ERR_RANGE, "tokenizer: a fragment of %zu bytes is too long", len);
  spm_work w = {frag, malloc(len * sizeof(uint32_t)), malloc(len * sizeof(uint32_t)), malloc(len * sizeof(int32_t)),
                malloc(len * sizeof(int32_t)), malloc((3 * len + 1) * sizeof(spm_ent)), 0};
  fg_status s = FG_OK;
  if (!w.start || !w.len || !w.next || !w.prev || !w.h) {
    s = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for a fragment of %zu bytes", len);
    goto done;
  }
  size_t nsym = 0;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t l = fg_tok_utf8_get((const unsigned char *)frag + i, len - i, &cp);
    if (!l) l = 1; /* an invalid byte is a symbol of its own, left to byte fallback */
    w.start[nsym] = (uint32_t)i;
    w.len[nsym] = (uint32_t)l;
    w.prev[nsym] = (int32_t)nsym - 1;
    w.next[nsym] = (int32_t)nsym + 1;
    nsym++;
    i += l;
  }
  w.next[nsym - 1] = -1;
  for (size_t i = 0; i + 1 < nsym; i++) push_pair(t, &w, (int32_t)i, (int32_t)i + 1);
  while (w.hn) {
    spm_ent e = heap_pop(w.h, &w.hn);
    int32_t r = w.next[e.pos];
    if (w.len[e.pos] == 0 || r < 0 || w.len[e.pos] + w.len[r] != e.len) continue; /* stale */
    w.len[e.pos] = e.len;
    w.len[r] = 0;
    w.next[e.pos] = w.next[r];
    if (w.next[r] >= 0) w.prev[w.next[r]] = (int32_t)e.pos;
    if (w.prev[e.pos] >= 0) push_pair(t, &w, w.prev[e.pos], (int32_t)e.pos);
    if (w.next[e.pos] >= 0) push_pair(t, &w, (int32_t)e.pos, w.next[e.pos]);
  }
  for (int32_t i = 0; i >= 0 && s == FG_OK; i = w.next[i]) {
    int32_t id = fg_tokenizer_index(t, frag + w.start[i], w.len[i]);
    if (id >= 0 && t->type[id] != FG_TOK_TYPE_UNKNOWN) {
      s = fg_tok_ids_push(out, id);
      continue;
    }
    for (uint32_t k = 0; k < w.len[i] && s == FG_OK; k++) {
      unsigned char b = (unsigned char)frag[w.start[i] + k];
      int32_t bid = t->byte_ids[b] >= 0 ? t->byte_ids[b] : t->unk;
      if (bid < 0) {
        s = fg_fail(FG_ERR_INVALID_ARG, "tokenizer: \"%.*s\" is no piece, and the vocabulary has neither <0x%02X> nor unk",
                    (int)w.len[i], frag + w.start[i], b);
        break;
      }
      /* Without byte pieces the whole symbol is one unknown, as in SentencePiece. */
      s = fg_tok_ids_push(out, bid);
      if (t->byte_ids[b] < 0) break;
    }
  }
done:
  free(w.start);
  free(w.len);
  free(w.next);
  free(w.prev);
  free(w.h);
  return s;
}
