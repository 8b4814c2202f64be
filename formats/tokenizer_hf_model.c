/* The models of a tokenizer.json, one pre-tokenized word at a time: BPE (any characters, not
 * only the byte map; continuing_subword_prefix, end_of_word_suffix, byte_fallback, unk with
 * fuse_unk, ignore_merges), WordPiece (greedy longest match, continuations with their prefix,
 * the whole word unknown when a part has no piece) and WordLevel (the word or unk). Unigram is
 * tokenizer_unigram.c. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_hf_internal.h"

static const fg_tok_merge_slot *find(const fg_tok_hf *h, int32_t l, int32_t r) {
  return fg_tok_merge_lookup(h->merges, h->merge_cap, l, r);
}

/* A merge's halves: "a b", or [a, b] in newer files. */
static bool halves(const cJSON *e, const char **a, size_t *an, const char **b, size_t *bn) {
  if (cJSON_IsString(e)) {
    const char *sp = strchr(e->valuestring, ' ');
    if (!sp) return false;
    *a = e->valuestring, *an = (size_t)(sp - e->valuestring), *b = sp + 1, *bn = strlen(sp + 1);
    return true;
  }
  if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(e->child) && cJSON_IsString(e->child->next)) {
    *a = e->child->valuestring, *an = strlen(*a), *b = e->child->next->valuestring, *bn = strlen(*b);
    return true;
  }
  return false;
}

fg_status fg_hf_build_merges(const char *file, fg_tokenizer *t, const cJSON *merges) {
  fg_tok_hf *h = t->hf;
  size_t n = (size_t)cJSON_GetArraySize(merges);
  uint64_t cap = 16;
  while (cap < 2 * (uint64_t)n) cap *= 2;
  if (!(h->merges = calloc(cap, sizeof *h->merges))) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", file);
  h->merge_cap = cap;
  char *j = NULL;
  fg_status st = FG_OK;
  size_t r = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, merges) {
    const char *a, *b;
    size_t an, bn;
    if (!halves(e, &a, &an, &b, &bn)) {
      st = fg_fail(FG_ERR_INVALID_ARG, "%s: model.merges[%zu] is neither \"a b\" nor [a, b]", file, r);
      break;
    }
    int32_t l = fg_tokenizer_index(t, a, an), rr = fg_tokenizer_index(t, b, bn);
    /* The right half's continuation prefix does not repeat inside the joined token. */
    const char *bb = b;
    size_t bbn = bn;
    if (h->prefix_n && bn >= h->prefix_n && memcmp(b, h->prefix, h->prefix_n) == 0) bb += h->prefix_n, bbn -= h->prefix_n;
    char *q = realloc(j, an + bbn + 1);
    if (!q) {
      st = fg_fail(FG_ERR_NOMEM, "%s: out of memory", file);
      break;
    }
    j = q;
    memcpy(j, a, an);
    memcpy(j + an, bb, bbn);
    int32_t m = fg_tokenizer_index(t, j, an + bbn);
    if (l < 0 || rr < 0 || m < 0) {
      st = fg_fail(FG_ERR_INVALID_ARG, "%s: model.merges[%zu] (\"%.*s\", \"%.*s\"): %s is not a token", file, r, (int)an,
                   a, (int)bn, b, l < 0 ? "the left half" : rr < 0 ? "the right half" : "their join");
      break;
    }
    fg_tok_merge_put(h->merges, cap, l, rr, (uint32_t)r, m); /* the better rank came first and stays */
    r++;
  }
  free(j);
  return st;
}

/* The id of w (with pre before it and suf after), or -1. */
static int32_t lookup(const fg_tokenizer *t, const char *pre, size_t pn, const char *w, size_t n, const char *suf,
                      size_t sn, char **scratch, size_t *cap) {
  if (!pn && !sn) return fg_tokenizer_index(t, w, n);
  if (pn + n + sn > *cap) {
    char *q = realloc(*scratch, pn + n + sn);
    if (!q) return -2;
    *scratch = q;
    *cap = pn + n + sn;
  }
  memcpy(*scratch, pre, pn);
  memcpy(*scratch + pn, w, n);
  memcpy(*scratch + pn + n, suf, sn);
  return fg_tokenizer_index(t, *scratch, pn + n + sn);
}

static size_t char_len(const char *s, size_t n) {
  size_t l = 1;
  while (l < n && ((unsigned char)s[l] & 0xC0) == 0x80) l++;
  return l;
}

static fg_status wordpiece(const fg_tokenizer *t, const char *w, size_t n, fg_tok_ids *out) {
  const fg_tok_hf *h = t->hf;
  size_t chars = 0;
  for (size_t i = 0; i < n; i += char_len(w + i, n - i)) chars++;
  char *scratch = NULL;
  size_t cap = 0, start = out->n;
  fg_status st = FG_OK;
  bool whole = chars <= h->max_chars;
  for (size_t i = 0; whole && i < n && !st;) {
    int32_t id = -1;
    size_t j = n;
    while (j > i) {
      id = lookup(t, h->prefix, i ? h->prefix_n : 0, w + i, j - i, "", 0, &scratch, &cap);
      if (id != -1) break;
      do j--; while (j > i && ((unsigned char)w[j] & 0xC0) == 0x80);
    }
    if (id == -2) st = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    else if (id < 0) whole = false;
    else st = fg_tok_ids_push(out, id), i = j;
  }
  free(scratch);
  if (st || whole) return st;
  out->n = start;
  if (h->unk < 0) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: a WordPiece word has no pieces and there is no unk_token");
  return fg_tok_ids_push(out, h->unk);
}

/* One BPE word: its characters as symbols (an unknown one as its <0xXX> bytes or unk), then
 * the best-ranked adjacent pair merged, leftmost among equals, until none merges. */
static fg_status bpe(const fg_tokenizer *t, const char *w, size_t n, fg_tok_ids *out) {
  const fg_tok_hf *h = t->hf;
  if (h->ignore_merges) {
    int32_t id = fg_tokenizer_index(t, w, n);
    if (id >= 0) return fg_tok_ids_push(out, id);
  }
  fg_tok_ids sym = {0};
  char *scratch = NULL;
  size_t cap = 0;
  fg_status st = FG_OK;
  bool last_unk = false;
  for (size_t i = 0; i < n && !st;) {
    size_t l = char_len(w + i, n - i);
    bool end = i + l == n;
    int32_t id = lookup(t, h->prefix, i ? h->prefix_n : 0, w + i, l, h->suffix, end ? h->suffix_n : 0, &scratch, &cap);
    if (id == -2) {
      st = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
      break;
    }
    bool bytes = id < 0 && h->byte_fallback;
    for (size_t k = i; bytes && k < i + l; k++) bytes = h->byte_ids[(unsigned char)w[k]] >= 0;
    if (id >= 0) {
      st = fg_tok_ids_push(&sym, id), last_unk = false;
    } else if (bytes) {
      for (size_t k = i; k < i + l && !st; k++) st = fg_tok_ids_push(&sym, h->byte_ids[(unsigned char)w[k]]);
      last_unk = false;
    } else if (h->unk >= 0) {
      if (!(h->fuse_unk && last_unk)) st = fg_tok_ids_push(&sym, h->unk);
      last_unk = true;
    } /* else: no way to say it; `tokenizers` drops it too */
    i += l;
  }
  free(scratch);
  /* rank[k]: the merge rank of (sym[k], sym[k+1]), UINT32_MAX for none. */
  uint32_t *rank = st || sym.n < 2 ? NULL : malloc(sym.n * sizeof *rank);
  if (!st && sym.n >= 2 && !rank) st = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  if (rank) {
    size_t m = sym.n;
    for (size_t k = 0; k + 1 < m; k++) {
      const fg_tok_merge_slot *s = find(h, sym.v[k], sym.v[k + 1]);
      rank[k] = s ? s->rank : UINT32_MAX;
    }
    for (;;) {
      size_t best = SIZE_MAX;
      for (size_t k = 0; k + 1 < m; k++)
        if (rank[k] != UINT32_MAX && (best == SIZE_MAX || rank[k] < rank[best])) best = k;
      if (best == SIZE_MAX) break;
      sym.v[best] = find(h, sym.v[best], sym.v[best + 1])->id;
      memmove(sym.v + best + 1, sym.v + best + 2, (m - best - 2) * sizeof *sym.v);
      if (m >= best + 3) memmove(rank + best + 1, rank + best + 2, (m - best - 3) * sizeof *rank);
      m--;
      for (size_t k = best ? best - 1 : 0; k <= best && k + 1 < m; k++) {
        const fg_tok_merge_slot *s = find(h, sym.v[k], sym.v[k + 1]);
        rank[k] = s ? s->rank : UINT32_MAX;
      }
    }
    sym.n = m;
    free(rank);
  }
  for (size_t k = 0; k < sym.n && !st; k++) st = fg_tok_ids_push(out, sym.v[k]);
  free(sym.v);
  return st;
}

fg_status fg_hf_model_word(const fg_tokenizer *t, const char *w, size_t n, fg_tok_ids *out) {
  if (!n) return FG_OK;
  const fg_tok_hf *h = t->hf;
  switch (h->model) {
  case FG_HF_BPE: return bpe(t, w, n, out);
  case FG_HF_WORDPIECE: return wordpiece(t, w, n, out);
  case FG_HF_UNIGRAM: return fg_hf_unigram_word(t, w, n, out);
  case FG_HF_WORDLEVEL: {
    int32_t id = fg_tokenizer_index(t, w, n);
    if (id < 0) id = h->unk;
    if (id < 0)
      return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: WordLevel word \"%.*s\" is not in the vocabulary and there is no "
                                         "unk_token",
                     (int)(n > 64 ? 64 : n), w);
    return fg_tok_ids_push(out, id);
  }
  }
  return FG_OK;
}
