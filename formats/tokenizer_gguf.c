/* The tokenizer a GGUF carries: its tokenizer.ggml.* fields, surfaced unchanged, and the
 * tokenizer built from them. Only metadata is read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_internal.h"

static fg_status get_str(const fg_gguf_file *f, const char *key, bool *has, fg_gguf_str *out) {
  fg_status s = fg_gguf_get_str(f, key, out);
  *has = s == FG_OK;
  if (s == FG_ERR_NOT_FOUND) {
    fg_clear_error();
    return FG_OK;
  }
  return s ? fg_fail(s, "%s: %s is not a string", fg_gguf_path(f), key) : FG_OK;
}

static fg_status get_arr(const fg_gguf_file *f, const char *key, fg_gguf_type want, bool *has, fg_gguf_array *out) {
  fg_status s = fg_gguf_get_array(f, key, out);
  *has = s == FG_OK;
  if (s == FG_ERR_NOT_FOUND) {
    fg_clear_error();
    memset(out, 0, sizeof *out);
    return FG_OK;
  }
  if (s) return fg_fail(s, "%s: %s is not an array", fg_gguf_path(f), key);
  /* Token types are INT32 in llama.cpp's files; other integer widths read the same. */
  bool ok = out->elem_type == want || (want == FG_GGUF_INT32 && out->elem_type != FG_GGUF_STRING &&
                                       out->elem_type != FG_GGUF_FLOAT32 && out->elem_type != FG_GGUF_FLOAT64 &&
                                       out->elem_type != FG_GGUF_BOOL);
  if (!ok)
    return fg_fail(FG_ERR_TYPE, "%s: %s is an array of %s, expected %s", fg_gguf_path(f), key,
                   fg_gguf_type_name(out->elem_type), fg_gguf_type_name(want));
  return FG_OK;
}

static fg_status get_uint(const fg_gguf_file *f, const char *key, bool *has, uint64_t *out) {
  fg_status s = fg_gguf_get_uint(f, key, out);
  *has = s == FG_OK;
  if (s == FG_ERR_NOT_FOUND) {
    fg_clear_error();
    return FG_OK;
  }
  return s ? fg_fail(s, "%s: %s is not an unsigned integer", fg_gguf_path(f), key) : FG_OK;
}

static fg_status get_bool(const fg_gguf_file *f, const char *key, bool *has, bool *out) {
  fg_status s = fg_gguf_get_bool(f, key, out);
  *has = s == FG_OK;
  if (s == FG_ERR_NOT_FOUND) {
    fg_clear_error();
    return FG_OK;
  }
  return s ? fg_fail(s, "%s: %s is not a bool", fg_gguf_path(f), key) : FG_OK;
}

fg_status fg_gguf_tokenizer_fields(const fg_gguf_file *f, fg_gguf_tok_fields *o) {
  if (!f || !o) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_tokenizer_fields: NULL argument");
  fg_gguf_tok_fields r;
  memset(&r, 0, sizeof r);
  fg_status s;
  if ((s = get_str(f, "tokenizer.ggml.model", &r.has_model, &r.model)) ||
      (s = get_str(f, "tokenizer.ggml.pre", &r.has_pre, &r.pre)) ||
      (s = get_arr(f, "tokenizer.ggml.tokens", FG_GGUF_STRING, &r.has_tokens, &r.tokens)) ||
      (s = get_arr(f, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, &r.has_scores, &r.scores)) ||
      (s = get_arr(f, "tokenizer.ggml.merges", FG_GGUF_STRING, &r.has_merges, &r.merges)) ||
      (s = get_arr(f, "tokenizer.ggml.token_type", FG_GGUF_INT32, &r.has_token_type, &r.token_type)) ||
      (s = get_uint(f, "tokenizer.ggml.bos_token_id", &r.has_bos, &r.bos)) ||
      (s = get_uint(f, "tokenizer.ggml.eos_token_id", &r.has_eos, &r.eos)) ||
      (s = get_uint(f, "tokenizer.ggml.unknown_token_id", &r.has_unk, &r.unk)) ||
      (s = get_bool(f, "tokenizer.ggml.add_bos_token", &r.has_add_bos, &r.add_bos)) ||
      (s = get_bool(f, "tokenizer.ggml.add_space_prefix", &r.has_add_space_prefix, &r.add_space_prefix)))
    return s;
  *o = r;
  return FG_OK;
}

static bool str_is(fg_gguf_str s, const char *lit) { return s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0; }

static fg_status strings_of(const fg_gguf_file *f, const char *key, const fg_gguf_array *a, const char ***ptrs,
                            size_t **lens) {
  *ptrs = malloc((a->len ? a->len : 1) * sizeof **ptrs);
  *lens = malloc((a->len ? a->len : 1) * sizeof **lens);
  if (!*ptrs || !*lens) return fg_fail(FG_ERR_NOMEM, "%s: out of memory for %s", fg_gguf_path(f), key);
  for (uint64_t j = 0; j < a->len; j++) {
    fg_gguf_str s;
    fg_status st = fg_gguf_array_str(a, j, &s);
    if (st) return fg_fail_prefix(st, "%s: %s[%llu]: ", fg_gguf_path(f), key, (unsigned long long)j);
    (*ptrs)[j] = s.ptr;
    (*lens)[j] = s.len;
  }
  return FG_OK;
}

static fg_status id_field(const fg_gguf_file *f, const char *key, bool has, uint64_t v, uint64_t n, int32_t *out) {
  *out = -1;
  if (!has) return FG_OK;
  if (v >= n)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %s is %llu, outside the %llu tokens", fg_gguf_path(f), key,
                   (unsigned long long)v, (unsigned long long)n);
  *out = (int32_t)v;
  return FG_OK;
}

/* Unigram's flags as llama.cpp reads them: add_space_prefix and remove_extra_whitespaces off
 * unless the file turns them on; EOS after an encode with the specials unless
 * add_eos_token is false, BOS before it only when add_bos_token is true. */
static fg_status ugm_setup(const fg_gguf_file *f, const fg_gguf_tok_fields *g, fg_tokenizer *t) {
  const char *path = fg_gguf_path(f);
  bool has_rx = false, rx = false, has_eos = false, add_eos = true, has_cm = false;
  fg_gguf_array cm;
  fg_status s;
  if ((s = get_bool(f, "tokenizer.ggml.remove_extra_whitespaces", &has_rx, &rx)) ||
      (s = get_bool(f, "tokenizer.ggml.add_eos_token", &has_eos, &add_eos)) ||
      (s = get_arr(f, "tokenizer.ggml.precompiled_charsmap", FG_GGUF_UINT8, &has_cm, &cm)))
    return s;
  if (has_cm && cm.elem_type != FG_GGUF_UINT8 && cm.elem_type != FG_GGUF_INT8)
    return fg_fail(FG_ERR_TYPE, "%s: tokenizer.ggml.precompiled_charsmap is an array of %s, expected uint8 or int8",
                   path, fg_gguf_type_name(cm.elem_type));
  const bool prefix = g->has_add_space_prefix && g->add_space_prefix;
  if ((s = fg_tok_ugm_new(t, has_cm ? cm.data : NULL, has_cm ? (size_t)cm.len : 0, prefix, rx, &t->ugm)))
    return fg_fail_prefix(s, "%s: ", path);
  t->add_space_prefix = prefix; /* detokenize drops the first token's space */
  t->prefix_at = FG_TOK_PREFIX_SEGMENT;
  const bool add_bos = g->has_add_bos && g->add_bos;
  t->ugm_eos = add_eos ? t->eos : -1;
  t->ugm_no_bos = !add_bos;
  t->add_bos = add_bos || (add_eos && t->eos >= 0);
  return FG_OK;
}

fg_status fg_tokenizer_from_gguf(const fg_gguf_file *f, fg_tokenizer **out) {
  if (!f || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_tokenizer_from_gguf: NULL argument");
  fg_gguf_tok_fields g;
  fg_status s = fg_gguf_tokenizer_fields(f, &g);
  if (s) return s;
  const char *path = fg_gguf_path(f);
  if (!g.has_model) return fg_fail(FG_ERR_NOT_FOUND, "%s: no tokenizer.ggml.model", path);
  if (!g.has_tokens) return fg_fail(FG_ERR_NOT_FOUND, "%s: no tokenizer.ggml.tokens", path);
  fg_tok_vocab v;
  const bool gemma4 = str_is(g.model, "gemma4"), t5 = str_is(g.model, "t5");
  if (str_is(g.model, "gpt2") || gemma4) {
    v = fg_tok_vocab_init(FG_TOK_BPE);
    if (!g.has_merges)
      return fg_fail(FG_ERR_NOT_FOUND, "%s: a %s tokenizer without tokenizer.ggml.merges", path, gemma4 ? "gemma4" : "gpt2");
  } else if (str_is(g.model, "llama")) {
    v = fg_tok_vocab_init(FG_TOK_SPM);
    if (!g.has_scores) return fg_fail(FG_ERR_NOT_FOUND, "%s: a llama tokenizer without tokenizer.ggml.scores", path);
    /* llama.cpp's default for SentencePiece vocabularies: the dummy prefix is on, before every
     * run of text that starts the text or follows a special token (its fragments). */
    v.add_space_prefix = g.has_add_space_prefix ? g.add_space_prefix : true;
    v.prefix_at = FG_TOK_PREFIX_SEGMENT;
  } else if (str_is(g.model, "bert")) {
    v = fg_tok_vocab_init(FG_TOK_WPM);
  } else if (t5) {
    /* Unigram: the pieces and scores of a SentencePiece vocabulary, its own normalizer
     * (tokenizer_ugm.c), so none of SentencePiece's BPE-style space handling here */
    v = fg_tok_vocab_init(FG_TOK_SPM);
    if (!g.has_scores) return fg_fail(FG_ERR_NOT_FOUND, "%s: a t5 tokenizer without tokenizer.ggml.scores", path);
    v.add_space_prefix = false;
  } else {
    return fg_fail(FG_ERR_UNSUPPORTED,
                   "%s: tokenizer.ggml.model \"%.*s\" is not supported (expected gpt2, gemma4, llama, bert or t5)", path,
                   (int)g.model.len, g.model.ptr);
  }
  uint64_t n = g.tokens.len;
  if ((g.has_scores && g.scores.len != n) || (g.has_token_type && g.token_type.len != n))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %llu tokens but %llu scores and %llu token types", path,
                   (unsigned long long)n, (unsigned long long)g.scores.len, (unsigned long long)g.token_type.len);
  const char **tok = NULL, **mer = NULL;
  size_t *tok_len = NULL, *mer_len = NULL;
  float *scores = NULL;
  int32_t *types = NULL, *added = NULL;
  bool *rstrip = NULL;
  char *pre = NULL;
  if ((s = strings_of(f, "tokenizer.ggml.tokens", &g.tokens, &tok, &tok_len))) goto done;
  if (g.has_merges && (s = strings_of(f, "tokenizer.ggml.merges", &g.merges, &mer, &mer_len))) goto done;
  if (v.model == FG_TOK_SPM) {
    if (!(scores = malloc(n * sizeof *scores))) {
      s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
      goto done;
    }
    for (uint64_t j = 0; j < n; j++) {
      double d;
      if ((s = fg_gguf_array_float(&g.scores, j, &d))) goto done;
      scores[j] = (float)d;
    }
  }
  if (!(types = malloc((n ? n : 1) * sizeof *types))) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
    goto done;
  }
  for (uint64_t j = 0; j < n; j++) {
    int64_t x = FG_TOK_TYPE_NORMAL;
    if (g.has_token_type && (s = fg_gguf_array_int(&g.token_type, j, &x))) goto done;
    types[j] = (int32_t)(x < INT32_MIN ? INT32_MIN : x > INT32_MAX ? INT32_MAX : x);
  }
  fg_tok_gguf_types(types, tok, tok_len, n);
  /* llama.cpp matches its unknown token in text too */
  if (!(added = malloc((n ? n : 1) * sizeof *added))) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
    goto done;
  }
  for (uint64_t j = 0; j < n; j++)
    if (types[j] == FG_TOK_TYPE_UNKNOWN) added[v.n_added++] = (int32_t)j;
  v.added = added;
  {
    fg_gguf_str name = {0};
    bool has_name = fg_gguf_get_str(f, "general.name", &name) == FG_OK;
    fg_clear_error();
    rstrip = fg_tok_gguf_rstrip(has_name ? name.ptr : NULL, has_name ? name.len : 0, types, tok, tok_len, n, &s);
    if (s) goto done;
    v.rstrip = rstrip;
  }
  if (v.model == FG_TOK_BPE) {
    /* no tokenizer.ggml.pre: llama.cpp's "default" pre-tokenizer (it warns that quality suffers) */
    fg_gguf_str pn = gemma4 ? (fg_gguf_str){"gemma4", 6} : g.has_pre ? g.pre : (fg_gguf_str){"default", 7};
    if (!(pre = malloc(pn.len + 1))) {
      s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
      goto done;
    }
    memcpy(pre, pn.ptr, pn.len);
    pre[pn.len] = 0;
    v.pre = pre;
    /* llama.cpp reads Llama 3 vocabularies with ignore_merges, as their tokenizer.json says. */
    v.ignore_merges = strcmp(pre, "llama-bpe") == 0 || strcmp(pre, "llama3") == 0;
  }
  v.n_tokens = n;
  v.tokens = tok;
  v.token_lens = tok_len;
  v.scores = scores;
  v.token_type = types;
  v.n_merges = g.merges.len;
  v.merges = mer;
  v.merge_lens = mer_len;
  /* llama.cpp turns BOS on for Gemma 4 whatever the file says */
  v.add_bos = gemma4 || (g.has_add_bos ? g.add_bos : fg_tok_gguf_default_bos(v.model, pre));
  if ((s = id_field(f, "tokenizer.ggml.bos_token_id", g.has_bos, g.bos, n, &v.bos_id)) ||
      (s = id_field(f, "tokenizer.ggml.eos_token_id", g.has_eos, g.eos, n, &v.eos_id)) ||
      (s = id_field(f, "tokenizer.ggml.unknown_token_id", g.has_unk, g.unk, n, &v.unk_id)))
    goto done;
  if (v.model == FG_TOK_WPM) {
    /* llama.cpp's BERT defaults: [CLS] 101 opens, [SEP] 102 closes, [UNK] 100 */
    uint64_t sep = 0;
    bool has_sep = false;
    if ((s = get_uint(f, "tokenizer.ggml.seperator_token_id", &has_sep, &sep)) ||
        (s = id_field(f, "tokenizer.ggml.seperator_token_id", has_sep, sep, n, &v.sep_id)))
      goto done;
    if (!has_sep && n > 102) v.sep_id = 102;
    /* BERT's normalizer: lower case and accents stripped unless the file says otherwise (the
     * stripping follows the lower-casing when only that is given) */
    bool has_lc = false, has_sa = false, lc = true, sa = true;
    if ((s = get_bool(f, "tokenizer.ggml.normalizer.lowercase", &has_lc, &lc)) ||
        (s = get_bool(f, "tokenizer.ggml.normalizer.strip_accents", &has_sa, &sa)))
      goto done;
    v.lowercase = lc;
    v.strip_accents = has_sa ? sa : lc;
    if (v.bos_id < 0 && n > 101) v.bos_id = 101;
    if (v.unk_id < 0 && n > 100) v.unk_id = 100;
  }
  s = fg_tokenizer_from_vocab(&v, out);
  if (s) {
    fg_fail_prefix(s, "%s: ", path);
  } else {
    (*out)->clean_spaces = fg_tok_gguf_clean_spaces(v.model, pre);
    (*out)->drop_unknown_bytes = true;
    if (t5 && (s = ugm_setup(f, &g, *out))) {
      fg_tokenizer_close(*out);
      *out = NULL;
      goto done;
    }
    if (gemma4) {
      /* its bytes are SentencePiece's <0xXX> pieces, not GPT-2-mapped characters */
      (*out)->spm_bpe = true;
      for (int b = 0; b < 256; b++) {
        char piece[7];
        snprintf(piece, sizeof piece, "<0x%02X>", b);
        (*out)->byte_ids[b] = fg_tokenizer_index(*out, piece, 6);
      }
    }
  }
done:
  free(tok);
  free(tok_len);
  free(mer);
  free(mer_len);
  free(scores);
  free(types);
  free(added);
  free(rstrip);
  free(pre);
  return s;
}
