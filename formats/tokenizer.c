/* The tokenizer: building it from a vocabulary, the added-token split, the encode driver,
 * decode and the streaming decode. The merge loops are tokenizer_bpe.c and tokenizer_spm.c,
 * the pre-tokenizers tokenizer_pre.c. */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "core/text.h"
#include "formats/tokenizer_hf_internal.h"

fg_tok_vocab fg_tok_vocab_init(fg_tok_model model) {
  fg_tok_vocab v;
  memset(&v, 0, sizeof v);
  v.model = model;
  v.bos_id = v.eos_id = v.unk_id = v.sep_id = -1;
  return v;
}

fg_status fg_tok_ids_push(fg_tok_ids *a, int32_t id) {
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 64;
    int32_t *v = realloc(a->v, cap * sizeof *v);
    if (!v) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for %zu ids", cap);
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = id;
  return FG_OK;
}

static fg_name name_at(const void *ctx, uint64_t i) {
  const fg_tokenizer *t = ctx;
  fg_name n = {fg_tok_text(t, (int32_t)i), fg_tok_len(t, (int32_t)i)};
  return n;
}

int32_t fg_tokenizer_index(const fg_tokenizer *t, const char *text, size_t len) {
  if (!t || (!text && len)) return -1;
  int64_t i = fg_name_table_find(&t->tab, text ? text : "", len, name_at, t);
  return (int32_t)i;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

const fg_tok_merge_slot *fg_tok_merge_lookup(const fg_tok_merge_slot *m, uint64_t cap, int32_t left, int32_t right) {
  if (!cap) return NULL;
  uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
  for (uint64_t h = mix64(key) & (cap - 1);; h = (h + 1) & (cap - 1)) {
    const fg_tok_merge_slot *s = &m[h];
    if (s->key == key) return s;
    if (s->key == 0) return NULL;
  }
}

const fg_tok_merge_slot *fg_tok_merge_find(const fg_tokenizer *t, int32_t left, int32_t right) {
  return fg_tok_merge_lookup(t->merges, t->merge_cap, left, right);
}

void fg_tok_merge_put(fg_tok_merge_slot *m, uint64_t cap, int32_t left, int32_t right, uint32_t rank, int32_t id) {
  uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
  for (uint64_t h = mix64(key) & (cap - 1);; h = (h + 1) & (cap - 1)) {
    fg_tok_merge_slot *s = &m[h];
    if (s->key == key) return;
    if (s->key == 0) {
      s->key = key;
      s->rank = rank;
      s->id = id;
      return;
    }
  }
}

static size_t text_len(const char *const *a, const size_t *lens, size_t i) {
  return lens ? lens[i] : strlen(a[i]);
}

static bool is_byte_piece(const char *s, size_t n, int *byte) {
  static const char hex[] = "0123456789ABCDEF";
  if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return false;
  const char *h = strchr(hex, s[3]), *l = strchr(hex, s[4]);
  if (!h || !l || !s[3] || !s[4]) return false;
  *byte = (int)((h - hex) * 16 + (l - hex));
  return true;
}

static fg_status build_merges(fg_tokenizer *t, const fg_tok_vocab *v) {
  if (!v->n_merges) return FG_OK;
  if (!v->merges) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: %zu merges announced but no merge array", v->n_merges);
  uint64_t cap = 16;
  while (cap < 2 * (uint64_t)v->n_merges) cap *= 2;
  t->merges = calloc(cap, sizeof *t->merges);
  if (!t->merges) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for %zu merges", v->n_merges);
  t->merge_cap = cap;
  char *joined = malloc(t->max_token_len + 1);
  if (!joined) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  fg_status st = FG_OK;
  for (size_t r = 0; r < v->n_merges && st == FG_OK; r++) {
    const char *m = v->merges[r];
    size_t n = v->merge_lens ? v->merge_lens[r] : (m ? strlen(m) : 0);
    const char *sp = m ? memchr(m, ' ', n) : NULL;
    if (!sp || sp == m || sp + 1 == m + n) {
      st = fg_fail(FG_ERR_INVALID_ARG, "tokenizer: merge %zu \"%.*s\" is not \"LEFT RIGHT\"", r, (int)(m ? n : 0),
                   m ? m : "");
      break;
    }
    size_t ln = (size_t)(sp - m), rn = n - ln - 1;
    int32_t a = fg_tokenizer_index(t, m, ln), b = fg_tokenizer_index(t, sp + 1, rn);
    if (a < 0 || b < 0) {
      st = fg_fail(FG_ERR_INVALID_ARG, "tokenizer: merge %zu \"%.*s\": \"%.*s\" is not a token", r, (int)n, m,
                   a < 0 ? (int)ln : (int)rn, a < 0 ? m : sp + 1);
      break;
    }
    int32_t c = -1;
    if (ln + rn <= t->max_token_len) {
      memcpy(joined, m, ln);
      memcpy(joined + ln, sp + 1, rn);
      c = fg_tokenizer_index(t, joined, ln + rn);
    }
    if (c < 0) {
      st = fg_fail(FG_ERR_INVALID_ARG, "tokenizer: merge %zu \"%.*s\" makes \"%.*s%.*s\", which is not a token", r,
                   (int)n, m, (int)ln, m, (int)rn, sp + 1);
      break;
    }
    fg_tok_merge_put(t->merges, t->merge_cap, a, b, (uint32_t)r, c);
  }
  free(joined);
  return st;
}

/* Added tokens bucketed by first byte, longest first, so that the first hit at a position is
 * the longest there. */
static int cmp_added(const void *x, const void *y, void *ctx) {
  const fg_tokenizer *t = ctx;
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  unsigned char fa = (unsigned char)fg_tok_text(t, a)[0], fb = (unsigned char)fg_tok_text(t, b)[0];
  if (fa != fb) return fa < fb ? -1 : 1;
  size_t la = fg_tok_len(t, a), lb = fg_tok_len(t, b);
  if (la != lb) return la > lb ? -1 : 1;
  return a < b ? -1 : a > b;
}

static fg_status build_added(fg_tokenizer *t) {
  size_t k = 0;
  for (size_t i = 0; i < t->n; i++) k += t->is_added[i] && fg_tok_len(t, (int32_t)i) > 0;
  t->added_sorted = malloc((k ? k : 1) * sizeof(int32_t));
  if (!t->added_sorted) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  k = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->is_added[i] && fg_tok_len(t, (int32_t)i) > 0) t->added_sorted[k++] = (int32_t)i;
  /* Counting sort by first byte, then insertion sort by length within each bucket (C11's
   * qsort takes no context, and buckets are small). */
  uint32_t cnt[257] = {0};
  for (size_t i = 0; i < k; i++) cnt[(unsigned char)fg_tok_text(t, t->added_sorted[i])[0] + 1]++;
  for (int b = 0; b < 256; b++) cnt[b + 1] += cnt[b];
  memcpy(t->added_start, cnt, sizeof cnt);
  int32_t *tmp = malloc((k ? k : 1) * sizeof *tmp);
  if (!tmp) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  for (size_t i = 0; i < k; i++) tmp[cnt[(unsigned char)fg_tok_text(t, t->added_sorted[i])[0]]++] = t->added_sorted[i];
  for (int b = 0; b < 256; b++) {
    uint32_t lo = t->added_start[b], hi = t->added_start[b + 1];
    for (uint32_t i = lo + 1; i < hi; i++) {
      int32_t x = tmp[i];
      uint32_t j = i;
      while (j > lo && cmp_added(&x, &tmp[j - 1], t) < 0) {
        tmp[j] = tmp[j - 1];
        j--;
      }
      tmp[j] = x;
    }
  }
  free(t->added_sorted);
  t->added_sorted = tmp;
  return FG_OK;
}

static fg_status check_id(const char *what, int32_t id, size_t n) {
  if (id < -1 || (id >= 0 && (size_t)id >= n))
    return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: %s id %d outside the vocabulary of %zu tokens", what, (int)id, n);
  return FG_OK;
}

static fg_status build(fg_tokenizer *t, const fg_tok_vocab *v) {
  fg_status s;
  if (v->model != FG_TOK_BPE && v->model != FG_TOK_SPM && v->model != FG_TOK_WPM)
    return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: model %d is none of FG_TOK_BPE, FG_TOK_SPM and FG_TOK_WPM",
                   (int)v->model);
  if (!v->n_tokens || !v->tokens) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: the vocabulary has no tokens");
  if (v->n_tokens > INT32_MAX) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: %zu tokens, more than ids hold", v->n_tokens);
  if (v->model == FG_TOK_SPM && !v->scores)
    return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: a SentencePiece vocabulary needs a score per token");
  if ((s = check_id("bos", v->bos_id, v->n_tokens)) || (s = check_id("eos", v->eos_id, v->n_tokens)) ||
      (s = check_id("unk", v->unk_id, v->n_tokens)) || (s = check_id("sep", v->sep_id, v->n_tokens)))
    return s;
  t->model = v->model;
  t->n = v->n_tokens;
  t->bos = v->bos_id;
  t->eos = v->eos_id;
  t->unk = v->unk_id;
  t->sep = v->sep_id;
  t->lowercase = v->lowercase;
  t->strip_accents = v->strip_accents;
  t->add_bos = v->add_bos;
  t->ignore_merges = v->ignore_merges;
  t->normalize_nfc = v->normalize_nfc;
  t->add_space_prefix = v->add_space_prefix;
  t->prefix_at = v->prefix_at;
  if (v->prefix_at < FG_TOK_PREFIX_TEXT || v->prefix_at > FG_TOK_PREFIX_EACH)
    return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: prefix_at %d is none of FG_TOK_PREFIX_*", (int)v->prefix_at);
  if (v->model == FG_TOK_BPE) {
    if ((s = fg_tok_pre_kind_of(v->pre, &t->pre_kind)) != FG_OK) return s;
    if ((s = fg_tok_pre_new(t->pre_kind, &t->pre)) != FG_OK) return s;
  }
  size_t total = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (!v->tokens[i]) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: token %zu is NULL", i);
    size_t n = text_len(v->tokens, v->token_lens, i);
    if (n > t->max_token_len) t->max_token_len = n;
    total += n + 1;
  }
  t->blob = malloc(total);
  t->off = malloc((t->n + 1) * sizeof *t->off);
  t->type = malloc(t->n * sizeof *t->type);
  t->is_added = calloc(t->n, sizeof *t->is_added);
  t->is_special = calloc(t->n, sizeof *t->is_special);
  if (v->model == FG_TOK_SPM) t->scores = malloc(t->n * sizeof *t->scores);
  if (v->rstrip) t->rstrip = malloc(t->n * sizeof *t->rstrip);
  if (!t->blob || !t->off || !t->type || !t->is_added || !t->is_special || (v->model == FG_TOK_SPM && !t->scores) ||
      (v->rstrip && !t->rstrip))
    return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for %zu tokens", t->n);
  if (v->rstrip) memcpy(t->rstrip, v->rstrip, t->n * sizeof *t->rstrip);
  size_t o = 0;
  for (size_t i = 0; i < t->n; i++) {
    size_t n = text_len(v->tokens, v->token_lens, i);
    t->off[i] = o;
    memcpy(t->blob + o, v->tokens[i], n);
    t->blob[o + n] = 0;
    o += n + 1;
  }
  t->off[t->n] = o;
  for (int b = 0; b < 256; b++) t->byte_ids[b] = -1;
  for (size_t i = 0; i < t->n; i++) {
    int byte;
    int32_t ty = v->token_type ? v->token_type[i] : FG_TOK_TYPE_NORMAL;
    if (ty < FG_TOK_TYPE_NORMAL || ty > FG_TOK_TYPE_NOT_MERGED)
      return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: token %zu \"%s\" has type %d, outside 1..7", i,
                     fg_tok_text(t, (int32_t)i), (int)ty);
    /* Without types, a SentencePiece <0xXX> piece is the byte it names. */
    if (!v->token_type && v->model == FG_TOK_SPM &&
        is_byte_piece(fg_tok_text(t, (int32_t)i), fg_tok_len(t, (int32_t)i), &byte))
      ty = FG_TOK_TYPE_BYTE;
    t->type[i] = ty;
    if (ty == FG_TOK_TYPE_CONTROL || ty == FG_TOK_TYPE_USER_DEFINED) t->is_added[i] = true;
    t->is_special[i] = v->special ? v->special[i] : ty == FG_TOK_TYPE_CONTROL || ty == FG_TOK_TYPE_UNKNOWN;
    if (v->model == FG_TOK_SPM) {
      t->scores[i] = v->scores[i];
      if (ty == FG_TOK_TYPE_BYTE) {
        if (!is_byte_piece(fg_tok_text(t, (int32_t)i), fg_tok_len(t, (int32_t)i), &byte))
          return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: byte token %zu is \"%s\", not <0xXX>", i,
                         fg_tok_text(t, (int32_t)i));
        if (t->byte_ids[byte] < 0) t->byte_ids[byte] = (int32_t)i;
      }
    }
  }
  if ((s = fg_name_table_reset(&t->tab, t->n)) != FG_OK) return s;
  for (size_t i = 0; i < t->n; i++) {
    int64_t dup;
    if ((s = fg_name_table_insert(&t->tab, fg_tok_text(t, (int32_t)i), fg_tok_len(t, (int32_t)i), i, name_at, t, &dup)))
      return s;
    if (dup >= 0)
      return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: token %zu \"%s\" repeats token %lld", i,
                     fg_tok_text(t, (int32_t)i), (long long)dup);
  }
  if (v->model == FG_TOK_BPE) {
    for (int b = 0; b < 256; b++) {
      char u[4];
      size_t n = fg_utf8_put(fg_tok_byte_cp((uint8_t)b), u);
      t->byte_ids[b] = fg_tokenizer_index(t, u, n);
    }
    if ((s = build_merges(t, v)) != FG_OK) return s;
  }
  for (size_t i = 0; i < v->n_added; i++) {
    if (!v->added) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: %zu added tokens announced but no array", v->n_added);
    if (v->added[i] < 0 || (size_t)v->added[i] >= t->n)
      return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: added token %zu has id %d, outside the vocabulary of %zu", i,
                     (int)v->added[i], t->n);
    t->is_added[v->added[i]] = true;
  }
  return build_added(t);
}

fg_status fg_tokenizer_from_vocab(const fg_tok_vocab *v, fg_tokenizer **out) {
  if (!v || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_tokenizer_from_vocab: NULL argument");
  fg_tokenizer *t = calloc(1, sizeof *t);
  if (!t) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  fg_status s = build(t, v);
  if (s != FG_OK) {
    fg_tokenizer_close(t);
    return s;
  }
  *out = t;
  return FG_OK;
}

void fg_tokenizer_close(fg_tokenizer *t) {
  if (!t) return;
  fg_tok_pre_free(t->pre);
  fg_tok_ugm_free(t->ugm);
  fg_tok_hf_free(t->hf);
  fg_name_table_free(&t->tab);
  free(t->blob);
  free(t->off);
  free(t->type);
  free(t->scores);
  free(t->is_added);
  free(t->is_special);
  free(t->rstrip);
  free(t->merges);
  free(t->added_sorted);
  free(t);
}

fg_tok_model fg_tokenizer_model(const fg_tokenizer *t) { return t->model; }
size_t fg_tokenizer_n_tokens(const fg_tokenizer *t) { return t->n; }
int32_t fg_tokenizer_bos(const fg_tokenizer *t) { return t->bos; }
int32_t fg_tokenizer_eos(const fg_tokenizer *t) { return t->eos; }
bool fg_tokenizer_add_bos(const fg_tokenizer *t) { return t->add_bos; }
const char *fg_tokenizer_pre(const fg_tokenizer *t) { return fg_tok_pre_kind_name(t->pre_kind); }

/* The leftmost-longest added token at or after pos: its id and start, or -1. */
static int32_t next_added(const fg_tokenizer *t, const char *s, size_t n, size_t pos, size_t *at) {
  for (size_t i = pos; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    for (uint32_t k = t->added_start[c]; k < t->added_start[c + 1]; k++) {
      int32_t id = t->added_sorted[k];
      size_t l = fg_tok_len(t, id);
      if (l <= n - i && memcmp(s + i, fg_tok_text(t, id), l) == 0) {
        *at = i;
        return id;
      }
    }
  }
  return -1;
}

typedef struct bpe_ctx {
  const fg_tokenizer *t;
  fg_tok_ids *ids;
  fg_status st;
} bpe_ctx;

static int bpe_piece_cb(void *ctx, const char *piece, size_t len) {
  bpe_ctx *c = ctx;
  c->st = fg_tok_bpe_piece(c->t, piece, len, c->ids);
  return c->st != FG_OK;
}

static fg_status encode_text(const fg_tokenizer *t, const char *s, size_t n, fg_tok_ids *ids) {
  if (!n) return FG_OK;
  if (t->spm_bpe) return fg_tok_gemma4_fragment(t, s, n, ids);
  if (t->ugm) return fg_tok_ugm_fragment(t, s, n, ids);
  if (t->model == FG_TOK_SPM) return fg_tok_spm_fragment(t, s, n, ids);
  if (t->model == FG_TOK_WPM) return fg_tok_wpm_fragment(t, s, n, ids);
  bpe_ctx c = {t, ids, FG_OK};
  utf8proc_uint8_t *nfc = NULL;
  if (t->normalize_nfc) {
    /* A negative length is utf8proc's error: invalid UTF-8 (or no memory) leaves the text as
     * it is, which for valid text is what a Python str could never be anyway. */
    utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &nfc,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (k >= 0) {
      s = (const char *)nfc;
      n = (size_t)k;
    } else {
      nfc = NULL;
    }
  }
  int r = fg_tok_pre_split(t->pre, s, n, bpe_piece_cb, &c);
  free(nfc);
  if (r < 0) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  return c.st;
}

/* SentencePiece's normalisation: the dummy-prefix space (when prefix), then every ' ' as U+2581. */
static fg_status spm_normalize(bool prefix, const char *s, size_t n, char **out, size_t *out_n) {
  size_t spaces = prefix ? 1 : 0;
  for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
  char *o = malloc(n + 2 * spaces + 1);
  if (!o) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", n);
  size_t k = 0;
  for (size_t i = 0; i < n + (prefix ? 1 : 0); i++) {
    char c = prefix ? (i == 0 ? ' ' : s[i - 1]) : s[i];
    if (c == ' ') {
      memcpy(o + k, "\xE2\x96\x81", 3);
      k += 3;
    } else {
      o[k++] = c;
    }
  }
  *out = o;
  *out_n = k;
  return FG_OK;
}

fg_status fg_tokenizer_encode(const fg_tokenizer *t, const char *text, size_t len, bool add_bos, int32_t **ids,
                              size_t *n_ids) {
  if (!t || (!text && len) || !ids || !n_ids) return fg_fail(FG_ERR_INVALID_ARG, "fg_tokenizer_encode: NULL argument");
  fg_tok_ids out = {0};
  fg_status s = FG_OK;
  if (t->hf) {
    s = fg_tok_hf_encode(t, text ? text : "", len, add_bos, &out);
  } else if (add_bos && t->bos >= 0 && !t->ugm_no_bos) {
    s = fg_tok_ids_push(&out, t->bos);
  }
  const char *src = text ? text : "";
  char *norm = NULL;
  size_t n = len;
  /* An empty text stays empty: SentencePiece adds no dummy prefix to nothing. */
  /* SentencePiece (and a GGUF) normalizes the whole text, then finds added tokens in it;
   * Hugging Face finds them in the raw text and normalizes each run between them. */
  bool per_run = t->model == FG_TOK_SPM && !t->ugm && t->prefix_at != FG_TOK_PREFIX_TEXT;
  if (t->hf) n = 0; /* done above */
  if (s == FG_OK && !t->hf && t->model == FG_TOK_SPM && !t->ugm && len && !per_run) {
    s = spm_normalize(t->add_space_prefix, src, len, &norm, &n);
    src = norm;
  }
  size_t pos = 0;
  while (s == FG_OK && pos < n) {
    size_t at = n;
    int32_t id = next_added(t, src, n, pos, &at);
    if (per_run && at > pos) {
      char *run = NULL;
      size_t rn = 0;
      /* Prepend puts "▁" before every run; Metaspace only where the run does not start with
       * a space already, and with "first" only on the run at the start of the text. */
      bool prefix = t->add_space_prefix &&
                    (t->prefix_at == FG_TOK_PREFIX_SEGMENT ||
                     (src[pos] != ' ' && (t->prefix_at == FG_TOK_PREFIX_EACH || pos == 0)));
      s = spm_normalize(prefix, src + pos, at - pos, &run, &rn);
      if (s == FG_OK) s = encode_text(t, run, rn, &out);
      free(run);
    } else if (!per_run) {
      s = encode_text(t, src + pos, at - pos, &out);
    }
    if (s != FG_OK || id < 0) break;
    s = fg_tok_ids_push(&out, id);
    pos = at + fg_tok_len(t, id);
    /* llama.cpp's RSTRIP: the token swallows the ASCII whitespace after it */
    if (t->rstrip && t->rstrip[id])
      while (pos < n && (src[pos] == ' ' || (src[pos] >= '\t' && src[pos] <= '\r'))) pos++;
  }
  free(norm);
  if (s == FG_OK && add_bos && !t->hf && t->model == FG_TOK_WPM && t->sep >= 0) s = fg_tok_ids_push(&out, t->sep);
  if (s == FG_OK && add_bos && t->ugm && t->ugm_eos >= 0) s = fg_tok_ids_push(&out, t->ugm_eos);
  if (s != FG_OK) {
    free(out.v);
    return s;
  }
  if (!out.v && !(out.v = malloc(sizeof(int32_t)))) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  *ids = out.v;
  *n_ids = out.n;
  return FG_OK;
}

void fg_tokenizer_free_ids(int32_t *ids) { free(ids); }
void fg_tokenizer_free_text(char *text) { free(text); }

bool fg_tokenizer_is_special(const fg_tokenizer *t, int32_t id) {
  return t && id >= 0 && (size_t)id < t->n && t->is_special[id];
}

/* The bytes of one token into buf (at most fg_tok_len bytes). first: the token opens the
 * text, where SentencePiece drops its dummy-prefix space. */
static size_t token_bytes(const fg_tokenizer *t, int32_t id, bool first, char *buf) {
  const unsigned char *s = (const unsigned char *)fg_tok_text(t, id);
  size_t n = fg_tok_len(t, id), k = 0;
  if (t->is_added[id]) {
    memcpy(buf, s, n);
    return n;
  }
  if (t->model == FG_TOK_SPM || t->model == FG_TOK_WPM || t->spm_bpe) {
    int byte;
    if (t->type[id] == FG_TOK_TYPE_BYTE && is_byte_piece((const char *)s, n, &byte)) {
      buf[0] = (char)byte;
      return 1;
    }
    for (size_t i = 0; i < n;) {
      if (n - i >= 3 && s[i] == 0xE2 && s[i + 1] == 0x96 && s[i + 2] == 0x81) {
        buf[k++] = ' ';
        i += 3;
      } else {
        buf[k++] = (char)s[i++];
      }
    }
    if (first && t->add_space_prefix && k && buf[0] == ' ') {
      memmove(buf, buf + 1, k - 1);
      k--;
    }
    return k;
  }
  /* Byte-level: every code point of the map is one byte; one outside it is kept as UTF-8. */
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t l = fg_tok_utf8_get(s + i, n - i, &cp);
    int b = l ? fg_tok_cp_byte(cp) : -1;
    if (b >= 0) {
      buf[k++] = (char)b;
    } else {
      if (!l) l = 1;
      memcpy(buf + k, s + i, l);
      k += l;
    }
    i += l;
  }
  return k;
}

/* Whether the dummy-prefix space may still be dropped after this token: SentencePiece drops it
 * from the first piece after leading added tokens (a BOS); Hugging Face's Strip decoder only
 * from the very start of the decoded text. */
static bool keeps_first(const fg_tokenizer *t, int32_t id) {
  return t->is_added[id] && t->prefix_at == FG_TOK_PREFIX_TEXT;
}

fg_status fg_tokenizer_decode(const fg_tokenizer *t, const int32_t *ids, size_t n_ids, char **text, size_t *len) {
  if (!t || (!ids && n_ids) || !text || !len) return fg_fail(FG_ERR_INVALID_ARG, "fg_tokenizer_decode: NULL argument");
  size_t total = 1;
  for (size_t i = 0; i < n_ids; i++) {
    if (ids[i] < 0 || (size_t)ids[i] >= t->n)
      return fg_fail(FG_ERR_RANGE, "tokenizer: id %d at position %zu is outside the vocabulary of %zu tokens",
                     (int)ids[i], i, t->n);
    total += fg_tok_len(t, ids[i]);
  }
  if (t->hf) return fg_tok_hf_decode(t, ids, n_ids, text, len);
  char *o = malloc(total);
  if (!o) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", total);
  size_t k = 0;
  bool first = true;
  for (size_t i = 0; i < n_ids; i++) {
    k += token_bytes(t, ids[i], first, o + k);
    if (!keeps_first(t, ids[i])) first = false;
  }
  if (t->clean_spaces) k = fg_tok_clean_spaces(o, k);
  o[k] = 0;
  *text = o;
  *len = k;
  return FG_OK;
}

struct fg_tok_stream {
  const fg_tokenizer *t;
  char *buf;   /* held bytes, then the newest token's */
  size_t held; /* bytes of an incomplete character carried from the last push */
  char out[4]; /* what finish hands back */
  bool first;
  fg_hf_stream hf; /* a tokenizer.json pipeline's (tokenizer_hf_run.c) */
};

fg_status fg_tok_stream_create(const fg_tokenizer *t, fg_tok_stream **out) {
  if (!t || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_tok_stream_create: NULL argument");
  fg_tok_stream *s = calloc(1, sizeof *s);
  if (s) s->buf = malloc(t->max_token_len + 8);
  if (!s || !s->buf) {
    free(s);
    return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  }
  s->t = t;
  s->first = true;
  *out = s;
  return FG_OK;
}

/* Bytes at the end of b[0, n) that begin a character still missing continuation bytes. */
static size_t incomplete_tail(const unsigned char *b, size_t n) {
  for (size_t back = 1; back <= 3 && back <= n; back++) {
    unsigned char c = b[n - back];
    if ((c & 0xC0) == 0x80) continue; /* a continuation byte: look further back */
    size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

fg_status fg_tok_stream_push(fg_tok_stream *s, int32_t id, const char **bytes, size_t *len) {
  if (!s || !bytes || !len) return fg_fail(FG_ERR_INVALID_ARG, "fg_tok_stream_push: NULL argument");
  const fg_tokenizer *t = s->t;
  if (id < 0 || (size_t)id >= t->n)
    return fg_fail(FG_ERR_RANGE, "tokenizer: id %d is outside the vocabulary of %zu tokens", (int)id, t->n);
  if (t->hf) return fg_hf_stream_push(t, &s->hf, id, bytes, len);
  memcpy(s->buf, s->out, s->held); /* the incomplete character carried from the last push */
  size_t n = s->held + token_bytes(t, id, s->first, s->buf + s->held);
  if (!keeps_first(t, id)) s->first = false;
  size_t keep = incomplete_tail((const unsigned char *)s->buf, n);
  memcpy(s->out, s->buf + n - keep, keep);
  s->held = keep;
  *bytes = s->buf;
  *len = n - keep;
  return FG_OK;
}

void fg_tok_stream_finish(fg_tok_stream *s, const char **bytes, size_t *len) {
  if (s->t->hf) {
    fg_hf_stream_finish(&s->hf, bytes, len);
    return;
  }
  *bytes = s->out;
  *len = s->held;
  s->held = 0;
  s->first = true;
}

void fg_tok_stream_free(fg_tok_stream *s) {
  if (!s) return;
  free(s->buf);
  fg_hf_stream_free(&s->hf);
  free(s);
}
