/* Building the general tokenizer.json pipeline: the model's vocabulary (an object of ids, or
 * Unigram's [piece, score] list) and options, added_tokens with their matching options, the
 * normalizer, pre-tokenizer, post-processor and decoder. Every component or option that is not
 * implemented is refused by its JSON path, so that no file is read into other ids silently. */
#include <cjson/cJSON.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_hf_internal.h"

static bool flag(const cJSON *o, const char *key, bool dflt) {
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsBool(b) ? cJSON_IsTrue(b) : dflt;
}

static bool valid_id(const cJSON *x) {
  return cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble <= INT32_MAX &&
         x->valuedouble == (double)(int32_t)x->valuedouble;
}

void fg_tok_hf_free(fg_tok_hf *h) {
  if (!h) return;
  fg_hf_norm_free(h->norm, h->n_norm);
  fg_hf_pre_free(h->pre, h->n_pre);
  fg_hf_dec_free(h->dec, h->n_dec);
  free(h->prefix);
  free(h->suffix);
  free(h->merges);
  free(h->scores);
  free(h->uni);
  for (size_t i = 0; i < h->n_added; i++) free(h->added[i].text);
  free(h->added);
  free(h->post);
  free(h);
}

static fg_status dup_str(const cJSON *o, const char *key, char **out, size_t *n) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!(*out = strdup(cJSON_IsString(x) ? x->valuestring : ""))) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  *n = strlen(*out);
  return FG_OK;
}

/* The post-processor's single template: the ids before and after the text's (-1). */
static fg_status post_one(const char *file, const char *where, const fg_tokenizer *t, const cJSON *o, fg_tok_hf *h) {
  const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
  if (!cJSON_IsString(ty)) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s has no \"type\" string", file, where);
  const char *k = ty->valuestring;
  char sub[160];
  fg_status s = FG_OK;
  int32_t tmpl[64];
  size_t nt = 0;
  if (strcmp(k, "Sequence") == 0) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "processors"), *e;
    if (!cJSON_IsArray(a)) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.processors is not an array", file, where);
    int i = 0;
    cJSON_ArrayForEach(e, a) {
      snprintf(sub, sizeof sub, "%s.processors[%d]", where, i++);
      if ((s = post_one(file, sub, t, e, h))) return s;
    }
    return FG_OK;
  }
  if (strcmp(k, "ByteLevel") == 0) return FG_OK; /* offsets only */
  if (strcmp(k, "BertProcessing") == 0 || strcmp(k, "RobertaProcessing") == 0) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "cls"), *p = cJSON_GetObjectItemCaseSensitive(o, "sep");
    if (!cJSON_IsArray(c) || !cJSON_IsArray(p) || !valid_id(cJSON_GetArrayItem(c, 1)) ||
        !valid_id(cJSON_GetArrayItem(p, 1)))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.cls and .sep must be [token, id]", file, where);
    tmpl[nt++] = (int32_t)cJSON_GetArrayItem(c, 1)->valuedouble;
    tmpl[nt++] = -1;
    tmpl[nt++] = (int32_t)cJSON_GetArrayItem(p, 1)->valuedouble;
  } else if (strcmp(k, "TemplateProcessing") == 0) {
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(o, "single"), *sp = cJSON_GetObjectItemCaseSensitive(o, "special_tokens"), *e;
    if (!cJSON_IsArray(single)) return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.single is not an array", file, where);
    int i = 0;
    cJSON_ArrayForEach(e, single) {
      const cJSON *st = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken"), *sq = cJSON_GetObjectItemCaseSensitive(e, "Sequence");
      const cJSON *name = cJSON_GetObjectItemCaseSensitive(st ? st : sq, "id");
      if (!cJSON_IsString(name))
        return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.single[%d] is neither a SpecialToken nor a Sequence with an id", file,
                       where, i);
      if (sq) {
        if (strcmp(name->valuestring, "A") != 0)
          return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.single[%d] is Sequence \"%s\", not \"A\"", file, where, i,
                         name->valuestring);
        if (nt < 64) tmpl[nt++] = -1;
      } else {
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sp, name->valuestring), "ids"), *x;
        if (!cJSON_IsArray(ids))
          return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.special_tokens has no ids for \"%s\"", file, where, name->valuestring);
        cJSON_ArrayForEach(x, ids) {
          if (!valid_id(x) || (size_t)x->valuedouble >= t->n)
            return fg_fail(FG_ERR_INVALID_ARG, "%s: %s.special_tokens[\"%s\"] has an id outside the vocabulary", file,
                           where, name->valuestring);
          if (nt < 64) tmpl[nt++] = (int32_t)x->valuedouble;
        }
      }
      i++;
    }
    if (nt >= 64) return fg_fail(FG_ERR_UNSUPPORTED, "%s: %s.single has more than 63 ids", file, where);
  } else {
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: %s.type \"%s\" is not supported", file, where, k);
  }
  for (size_t i = 0; i < nt; i++)
    if (tmpl[i] >= 0 && (size_t)tmpl[i] >= t->n)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: %s names id %d, outside the vocabulary", file, where, (int)tmpl[i]);
  /* Composed with what came before: the earlier template goes where this one has the text. */
  size_t before = h->n_post ? h->n_post : 1, total = nt - 1 + before, q = 0;
  int32_t *v = malloc(total * sizeof *v);
  if (!v) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  bool seen = false;
  for (size_t i = 0; i < nt; i++) {
    if (tmpl[i] != -1 || seen) {
      if (tmpl[i] == -1) continue; /* a second A: not a single-text template */
      v[q++] = tmpl[i];
      continue;
    }
    seen = true;
    if (h->n_post) memcpy(v + q, h->post, h->n_post * sizeof *v), q += h->n_post;
    else v[q++] = -1;
  }
  if (!seen) {
    free(v);
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %s has no place for the text (Sequence A)", file, where);
  }
  free(h->post);
  h->post = v;
  h->n_post = q;
  return FG_OK;
}

fg_status fg_hf_post_read(const char *file, const fg_tokenizer *t, const cJSON *o, fg_tok_hf *h) {
  if (!o || cJSON_IsNull(o)) return FG_OK;
  return post_one(file, "post_processor", t, o, h);
}

/* Added tokens bucketed by first byte, longest first (the leftmost-longest match looks at a
 * bucket in order). Insertion sort: a few thousand tokens at most. */
static void sort_added(fg_tok_hf *h) {
  for (size_t i = 1; i < h->n_added; i++) {
    fg_hf_added x = h->added[i];
    size_t j = i;
    for (; j > 0; j--) {
      const fg_hf_added *p = &h->added[j - 1];
      unsigned char a = x.n ? (unsigned char)x.text[0] : 0, b = p->n ? (unsigned char)p->text[0] : 0;
      if (b < a || (b == a && p->n >= x.n)) break;
      h->added[j] = *p;
    }
    h->added[j] = x;
  }
  memset(h->added_start, 0, sizeof h->added_start);
  for (size_t i = 0; i < h->n_added; i++) h->added_start[(h->added[i].n ? (unsigned char)h->added[i].text[0] : 0) + 1]++;
  for (int b = 0; b < 256; b++) h->added_start[b + 1] += h->added_start[b];
}

static fg_status read_added(const char *file, const cJSON *added, fg_tok_hf *h) {
  size_t n = (size_t)cJSON_GetArraySize(added), i = 0;
  if (!(h->added = calloc(n ? n : 1, sizeof *h->added))) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", file);
  const cJSON *e;
  cJSON_ArrayForEach(e, added) {
    const char *c = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
    fg_hf_added *a = &h->added[i++];
    h->n_added = i;
    a->id = (int32_t)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
    a->special = flag(e, "special", false);
    a->lstrip = flag(e, "lstrip", false);
    a->rstrip = flag(e, "rstrip", false);
    a->single_word = flag(e, "single_word", false);
    a->normalized = flag(e, "normalized", !a->special);
    /* A normalized token is looked for in normalized text: its content is normalized too. */
    fg_status s = a->normalized ? fg_hf_normalize(h->norm, h->n_norm, c, strlen(c), &a->text, &a->n)
                                : ((a->text = strdup(c)) ? (a->n = strlen(c), FG_OK) : fg_fail(FG_ERR_NOMEM, "out of memory"));
    if (s) return s;
    if (!a->n) h->n_added--, free(a->text), i--; /* an empty token never matches */
  }
  sort_added(h);
  return FG_OK;
}

static fg_status model_options(const char *file, const cJSON *model, fg_tokenizer *t, fg_tok_hf *h) {
  fg_status s = FG_OK;
  const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
  h->unk = -1;
  if (cJSON_IsString(unk) && (h->unk = fg_tokenizer_index(t, unk->valuestring, strlen(unk->valuestring))) < 0)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: model.unk_token \"%s\" is not a token", file, unk->valuestring);
  h->fuse_unk = flag(model, "fuse_unk", false);
  h->byte_fallback = flag(model, "byte_fallback", false);
  h->ignore_merges = flag(model, "ignore_merges", false);
  if (h->model == FG_HF_WORDPIECE) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(model, "max_input_chars_per_word");
    if (!(h->prefix = strdup(cJSON_IsString(p) ? p->valuestring : "##")) || !(h->suffix = strdup("")))
      return fg_fail(FG_ERR_NOMEM, "%s: out of memory", file);
    h->prefix_n = strlen(h->prefix);
    h->max_chars = cJSON_IsNumber(m) && m->valuedouble >= 0 ? (size_t)m->valuedouble : 100;
  } else if ((s = dup_str(model, "continuing_subword_prefix", &h->prefix, &h->prefix_n)) ||
             (s = dup_str(model, "end_of_word_suffix", &h->suffix, &h->suffix_n))) {
    return s;
  }
  const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
  if (dropout && !cJSON_IsNull(dropout) && !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: model.dropout is not supported (encodes would be random)", file);
  for (int b = 0; b < 256; b++) {
    char x[7];
    snprintf(x, sizeof x, "<0x%02X>", b);
    h->byte_ids[b] = fg_tokenizer_index(t, x, 6);
  }
  if (h->model == FG_HF_UNIGRAM) {
    h->fuse_unk = true;
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(model, "unk_id");
    if (valid_id(u) && (size_t)u->valuedouble < t->n) h->unk = (int32_t)u->valuedouble;
    else if (u && !cJSON_IsNull(u)) return fg_fail(FG_ERR_INVALID_ARG, "%s: model.unk_id is not an id of the vocabulary", file);
  }
  return FG_OK;
}

/* The token texts by id: vocab (an {text: id} object, or Unigram's [[text, score], ...]) and
 * added_tokens; ids must run 0..n-1 without gaps. */
static fg_status vocab(const char *file, const cJSON *model, const cJSON *added, bool unigram, const char ***tok,
                       double **scores, size_t *n_out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, "vocab"), *e;
  if (unigram ? !cJSON_IsArray(v) : !cJSON_IsObject(v))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: model.vocab is not %s", file, unigram ? "an array" : "an object");
  long long max = unigram ? cJSON_GetArraySize(v) - 1 : -1;
  if (!unigram)
    cJSON_ArrayForEach(e, v) {
      if (!valid_id(e)) return fg_fail(FG_ERR_INVALID_ARG, "%s: model.vocab[\"%s\"] is not an id", file, e->string);
      if (e->valuedouble > max) max = (long long)e->valuedouble;
    }
  int i = 0;
  cJSON_ArrayForEach(e, added) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id"), *c = cJSON_GetObjectItemCaseSensitive(e, "content");
    if (!valid_id(id) || !cJSON_IsString(c))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: added_tokens[%d] lacks a valid id or content", file, i);
    if (id->valuedouble > max) max = (long long)id->valuedouble;
    i++;
  }
  if (max < 0) return fg_fail(FG_ERR_INVALID_ARG, "%s: model.vocab is empty", file);
  size_t n = (size_t)max + 1;
  const char **t = calloc(n, sizeof *t);
  double *sc = unigram ? calloc(n, sizeof *sc) : NULL;
  if (!t || (unigram && !sc)) {
    free(t);
    free(sc);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory for %zu tokens", file, n);
  }
  *tok = t;
  *scores = sc;
  *n_out = n;
  size_t k = 0;
  cJSON_ArrayForEach(e, v) {
    if (unigram) {
      const cJSON *p = cJSON_GetArrayItem(e, 0), *s = cJSON_GetArrayItem(e, 1);
      if (!cJSON_IsString(p) || !cJSON_IsNumber(s))
        return fg_fail(FG_ERR_INVALID_ARG, "%s: model.vocab[%zu] is not [piece, score]", file, k);
      t[k] = p->valuestring;
      sc[k++] = s->valuedouble;
    } else {
      t[(size_t)e->valuedouble] = e->string;
    }
  }
  i = 0;
  cJSON_ArrayForEach(e, added) {
    size_t id = (size_t)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
    const char *c = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
    if (t[id] && strcmp(t[id], c) != 0)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: added_tokens[%d] \"%s\" has id %zu, which is \"%s\"", file, i, c, id, t[id]);
    t[id] = c;
    i++;
  }
  for (size_t j = 0; j < n; j++)
    if (!t[j]) return fg_fail(FG_ERR_INVALID_ARG, "%s: no token has id %zu (ids must run 0..%zu without gaps)", file, j, n - 1);
  return FG_OK;
}

static const char *config_token(const cJSON *cfg, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(cfg, key);
  if (cJSON_IsObject(x)) x = cJSON_GetObjectItemCaseSensitive(x, "content");
  return cJSON_IsString(x) ? x->valuestring : NULL;
}

fg_status fg_hf_build(const char *file, const cJSON *root, const cJSON *cfg, fg_tokenizer **out) {
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  const cJSON *ty = cJSON_GetObjectItemCaseSensitive(model, "type");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  static const char *kinds[] = {"BPE", "WordPiece", "Unigram", "WordLevel"};
  int kind = -1;
  for (int i = 0; cJSON_IsString(ty) && i < 4; i++)
    if (strcmp(ty->valuestring, kinds[i]) == 0) kind = i;
  if (kind < 0)
    return fg_fail(cJSON_IsString(ty) ? FG_ERR_UNSUPPORTED : FG_ERR_INVALID_ARG, "%s: model.type %s%s%s is not supported",
                   file, cJSON_IsString(ty) ? "\"" : "", cJSON_IsString(ty) ? ty->valuestring : "(missing)",
                   cJSON_IsString(ty) ? "\"" : "");
  if (added && !cJSON_IsArray(added)) return fg_fail(FG_ERR_INVALID_ARG, "%s: added_tokens is not an array", file);
  const char **tok = NULL;
  double *scores = NULL;
  size_t n = 0;
  bool *special = NULL;
  fg_tokenizer *t = NULL;
  fg_tok_hf *h = NULL;
  fg_status s = vocab(file, model, added, kind == FG_HF_UNIGRAM, &tok, &scores, &n);
  if (s) goto done;
  if (!(special = calloc(n, sizeof *special)) || !(h = calloc(1, sizeof *h))) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", file);
    goto done;
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, added) special[(size_t)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble] = flag(e, "special", false);
  /* The token store (texts, lookup, special flags); the pipeline below drives it. */
  fg_tok_vocab v = fg_tok_vocab_init(FG_TOK_WPM);
  v.n_tokens = n;
  v.tokens = tok;
  v.special = special;
  if ((s = fg_tokenizer_from_vocab(&v, &t))) {
    fg_fail_prefix(s, "%s: ", file);
    goto done;
  }
  t->hf = h;
  h->model = (fg_hf_model_kind)kind;
  t->model = kind == FG_HF_BPE ? FG_TOK_BPE : kind == FG_HF_WORDPIECE ? FG_TOK_WPM : kind == FG_HF_UNIGRAM ? FG_TOK_UNIGRAM
                                                                                                       : FG_TOK_WORDLEVEL;
  h->scores = scores;
  scores = NULL;
  if ((s = model_options(file, model, t, h))) goto done;
  t->unk = h->unk;
  if (kind == FG_HF_UNIGRAM) {
    double lo = DBL_MAX;
    for (size_t i = 0; i < n; i++) {
      if (h->scores[i] < lo) lo = h->scores[i];
      if (fg_tok_len(t, (int32_t)i) > h->max_piece) h->max_piece = fg_tok_len(t, (int32_t)i);
    }
    h->unk_score = lo - 10.0;
    if ((s = fg_hf_unigram_index(t, h, n))) goto done;
  }
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  if (kind == FG_HF_BPE && !cJSON_IsArray(merges)) {
    s = fg_fail(FG_ERR_INVALID_ARG, "%s: model.merges is not an array", file);
    goto done;
  }
  if ((kind == FG_HF_BPE && (s = fg_hf_build_merges(file, t, merges))) ||
      (s = fg_hf_norm_read(file, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), &h->norm, &h->n_norm)) ||
      (s = fg_hf_pre_read(file, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), &h->pre, &h->n_pre)) ||
      (s = fg_hf_dec_read(file, cJSON_GetObjectItemCaseSensitive(root, "decoder"), &h->dec, &h->n_dec)) ||
      (s = fg_hf_post_read(file, t, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), h)) ||
      (s = read_added(file, added, h)))
    goto done;
  /* The BOS: tokenizer_config.json's, else the id the template puts first; the template is
   * what an encode that adds special tokens adds, as `tokenizers` does by default. */
  const char *bos = cfg ? config_token(cfg, "bos_token") : NULL, *eos = cfg ? config_token(cfg, "eos_token") : NULL;
  t->bos = bos ? fg_tokenizer_index(t, bos, strlen(bos)) : h->n_post && h->post[0] >= 0 ? h->post[0] : -1;
  t->eos = eos ? fg_tokenizer_index(t, eos, strlen(eos)) : -1;
  for (size_t i = 0; i < h->n_post; i++) t->add_bos |= h->post[i] >= 0;
done:
  free(tok);
  free(scores);
  free(special);
  if (s) {
    if (t) fg_tokenizer_close(t);
    else fg_tok_hf_free(h);
    return s;
  }
  *out = t;
  return FG_OK;
}
