/* Byte-level BPE: the GPT-2 byte map and the merge loop of one pre-tokenized piece.
 *
 * The loop is the reference's: every adjacent pair with a merge goes into a min-heap keyed
 * by (rank, position); the best is merged, its neighbours' new pairs pushed, and stale
 * entries (a side already merged away) skipped when popped. That merges the lowest-rank
 * pair first, leftmost among equals, until no pair has a merge, in O(n log n) for a piece
 * of n bytes, so a long run of unusual bytes costs no quadratic time. */
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "formats/tokenizer_internal.h"

/* Printable Latin-1 bytes stand for themselves; the other 68 take 256, 257, ... in byte
 * order, so that no byte becomes a space or a control character inside token text. */
static bool byte_is_self(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

uint32_t fg_tok_byte_cp(uint8_t b) {
  if (byte_is_self(b)) return b;
  uint32_t k = 0;
  for (unsigned c = 0; c < b; c++) k += !byte_is_self(c);
  return 256 + k;
}

int fg_tok_cp_byte(uint32_t cp) {
  if (cp < 256) return byte_is_self(cp) ? (int)cp : -1;
  if (cp >= 256 + 68) return -1;
  uint32_t k = 256;
  for (unsigned c = 0; c < 256; c++)
    if (!byte_is_self(c) && k++ == cp) return (int)c;
  return -1;
}

size_t fg_tok_utf8_get(const unsigned char *s, size_t n, uint32_t *cp) {
  if (!n) return 0;
  unsigned char c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t l;
  uint32_t v, min;
  if ((c & 0xE0) == 0xC0) l = 2, v = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0) l = 3, v = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0) l = 4, v = c & 0x07, min = 0x10000;
  else return 0;
  if (l > n) return 0;
  for (size_t i = 1; i < l; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (s[i] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return l;
}

typedef struct heap_ent {
  uint32_t rank;
  uint32_t pos;
  int32_t id; /* the merged token the pair made when pushed */
} heap_ent;

static bool ent_less(heap_ent a, heap_ent b) { return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos; }

static void heap_push(heap_ent *h, size_t *n, heap_ent e) {
  size_t i = (*n)++;
  while (i && ent_less(e, h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = e;
}

static heap_ent heap_pop(heap_ent *h, size_t *n) {
  heap_ent top = h[0], e = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && ent_less(h[c + 1], h[c])) c++;
    if (!ent_less(h[c], e)) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = e;
  return top;
}

/* A symbol that is a byte with no token (see drop_unknown_bytes): never merged, never output.
 * -1 marks a symbol merged away. */
#define UNKNOWN_BYTE (-2)

static void push_pair(const fg_tokenizer *t, heap_ent *h, size_t *hn, const int32_t *sym, uint32_t pos,
                      int32_t right) {
  if (sym[pos] < 0 || sym[right] < 0) return;
  const fg_tok_merge_slot *m = fg_tok_merge_find(t, sym[pos], sym[right]);
  if (m) heap_push(h, hn, (heap_ent){m->rank, pos, m->id});
}

fg_status fg_tok_bpe_merge(const fg_tokenizer *t, int32_t *sym, int32_t *next, size_t len) {
  if (!len) return FG_OK;
  if (len > UINT32_MAX / 4) return fg_fail(FG_ERR_RANGE, "tokenizer: a piece of %zu symbols is too long", len);
  int32_t *prev = malloc(len * sizeof *prev);
  heap_ent *h = malloc((3 * len + 1) * sizeof *h);
  if (!prev || !h) {
    free(prev);
    free(h);
    return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for a piece of %zu symbols", len);
  }
  for (size_t i = 0; i < len; i++) {
    next[i] = i + 1 < len ? (int32_t)(i + 1) : -1;
    prev[i] = (int32_t)i - 1;
  }
  /* The heap never holds more than the initial pairs plus two per merge: under 3 len. */
  size_t hn = 0;
  for (size_t i = 0; i + 1 < len; i++) push_pair(t, h, &hn, sym, (uint32_t)i, (int32_t)(i + 1));
  while (hn) {
    heap_ent e = heap_pop(h, &hn);
    int32_t r = next[e.pos];
    if (sym[e.pos] < 0 || r < 0 || sym[r] < 0) continue; /* merged away, or nothing to merge with */
    const fg_tok_merge_slot *m = fg_tok_merge_find(t, sym[e.pos], sym[r]);
    if (!m || m->id != e.id) continue; /* a side changed since the entry was pushed */
    sym[e.pos] = e.id;
    sym[r] = -1;
    next[e.pos] = next[r];
    if (next[r] >= 0) prev[next[r]] = (int32_t)e.pos;
    if (prev[e.pos] >= 0) push_pair(t, h, &hn, sym, (uint32_t)prev[e.pos], (int32_t)e.pos);
    if (next[e.pos] >= 0) push_pair(t, h, &hn, sym, e.pos, next[e.pos]);
  }
  free(prev);
  free(h);
  return FG_OK;
}

fg_status fg_tok_bpe_piece(const fg_tokenizer *t, const char *piece, size_t len, fg_tok_ids *out) {
  const unsigned char *p = (const unsigned char *)piece;
  if (!len) return FG_OK;
  if (t->ignore_merges && len <= t->max_token_len) {
    /* The piece as token text (each byte mapped) may be a token itself. */
    char small[256];
    char *mapped = len * 2 <= sizeof small ? small : malloc(len * 2);
    if (!mapped) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < len; i++) k += fg_utf8_put(fg_tok_byte_cp(p[i]), mapped + k);
    int32_t id = fg_tokenizer_index(t, mapped, k);
    if (mapped != small) free(mapped);
    if (id >= 0) return fg_tok_ids_push(out, id);
  }
  int32_t *sym = malloc(len * sizeof *sym);
  int32_t *next = malloc(len * sizeof *next);
  fg_status s = FG_OK;
  if (!sym || !next) {
    s = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for a piece of %zu bytes", len);
    goto done;
  }
  for (size_t i = 0; i < len; i++) {
    sym[i] = t->byte_ids[p[i]];
    /* llama.cpp keeps such a byte in place, where it parts its neighbours, and leaves it out of
     * the ids */
    if (sym[i] < 0 && t->drop_unknown_bytes) sym[i] = UNKNOWN_BYTE;
    if (sym[i] == -1) {
      s = fg_fail(FG_ERR_INVALID_ARG, "tokenizer: byte 0x%02X has no token in this byte-level vocabulary", p[i]);
      goto done;
    }
  }
  if ((s = fg_tok_bpe_merge(t, sym, next, len))) goto done;
  for (int32_t i = 0; i >= 0 && s == FG_OK; i = next[i])
    if (sym[i] != UNKNOWN_BYTE) s = fg_tok_ids_push(out, sym[i]);
done:
  free(sym);
  free(next);
  return s;
}
