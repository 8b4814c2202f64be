/* The tokenizer of a Hugging Face directory: tokenizer.json's model (a byte-level BPE vocab
 * and merges), its added_tokens and its pre-tokenizer, with tokenizer_config.json (when
 * present) for the BOS and EOS tokens and add_bos_token. Also fg_tokenizer_open, which
 * takes either a GGUF file or such a directory. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/text.h"
#include "forgia/mapping.h"
#include "formats/tokenizer_hf_internal.h"

/* tokenizer.json and its config are read whole; a 256 MiB cap keeps a wrong path (a weights
 * file named tokenizer.json) from being parsed as JSON. */
#define HF_JSON_MAX ((size_t)256 << 20)

fg_status fg_tok_read_json(const char *path, cJSON **out) {
  fg_mapping *m = NULL;
  fg_status s = fg_mapping_open(path, FG_MAP_READ, &m);
  if (s) return s;
  size_t n = fg_mapping_size(m);
  if (n > HF_JSON_MAX) {
    fg_mapping_release(m);
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu bytes, more than a tokenizer file's %zu", path, n, HF_JSON_MAX);
  }
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts((const char *)fg_mapping_data(m), n, &end, 0);
  size_t at = end ? (size_t)(end - (const char *)fg_mapping_data(m)) : 0;
  fg_mapping_release(m);
  if (!j) return fg_fail(FG_ERR_INVALID_JSON, "%s: not valid JSON (near byte %zu)", path, at);
  *out = j;
  return FG_OK;
}

/* The pre-tokenizer regexes as the reference tokenizer.json files spell them. */
static const struct {
  const char *re;
  const char *kind;
} split_kinds[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+",
     "llama3"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+",
     "qwen2"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "qwen35"},
};

static bool is_type(const cJSON *o, const char *type) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
  return cJSON_IsString(t) && strcmp(t->valuestring, type) == 0;
}

static bool flag(const cJSON *o, const char *key, bool dflt) {
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsBool(b) ? cJSON_IsTrue(b) : dflt;
}

/* Recognises the pre_tokenizer object: GPT-2's ByteLevel, SmolLM's Digits + ByteLevel, or a
 * Split with a known regex followed by a ByteLevel without its own regex. */
static fg_status pre_kind(const char *path, const cJSON *pre, const char **kind) {
  if (is_type(pre, "ByteLevel") && flag(pre, "use_regex", true) && !flag(pre, "add_prefix_space", false)) {
    *kind = "gpt2";
    return FG_OK;
  }
  const cJSON *seq = cJSON_GetObjectItemCaseSensitive(pre, "pretokenizers");
  if (is_type(pre, "Sequence") && cJSON_GetArraySize(seq) == 2) {
    const cJSON *a = cJSON_GetArrayItem(seq, 0), *b = cJSON_GetArrayItem(seq, 1);
    if (is_type(a, "Digits") && flag(a, "individual_digits", false) && is_type(b, "ByteLevel") &&
        flag(b, "use_regex", true) && !flag(b, "add_prefix_space", false)) {
      *kind = "smollm";
      return FG_OK;
    }
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "pattern"), "Regex");
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(a, "behavior");
    if (is_type(a, "Split") && cJSON_IsString(pat) && cJSON_IsString(beh) && strcmp(beh->valuestring, "Isolated") == 0 &&
        !flag(a, "invert", false) && is_type(b, "ByteLevel") && !flag(b, "use_regex", true) &&
        !flag(b, "add_prefix_space", false)) {
      for (size_t i = 0; i < sizeof split_kinds / sizeof split_kinds[0]; i++)
        if (strcmp(pat->valuestring, split_kinds[i].re) == 0) {
          *kind = split_kinds[i].kind;
          return FG_OK;
        }
      return fg_fail(FG_ERR_UNSUPPORTED, "%s: pre-tokenizer regex \"%s\" is none of llama3, qwen2, qwen35", path,
                     pat->valuestring);
    }
  }
  char *txt = cJSON_PrintUnformatted(pre);
  fg_status s = fg_fail(FG_ERR_UNSUPPORTED, "%s: pre_tokenizer %.200s is not a known kind (gpt2, smollm, llama3, qwen2, "
                                            "qwen35)",
                        path, txt ? txt : "?");
  free(txt);
  return s;
}

/* A special-token entry of tokenizer_config.json: a string or {"content": ...}. */
static const char *token_content(const cJSON *cfg, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(cfg, key);
  if (cJSON_IsObject(x)) x = cJSON_GetObjectItemCaseSensitive(x, "content");
  return cJSON_IsString(x) ? x->valuestring : NULL;
}

typedef struct hf_build {
  const char *path;
  const char **tok;
  int32_t *added;
  size_t n_added;
  char **merge_buf; /* joined "a b" for merges written as pairs */
  const char **merges;
  size_t n_merges;
} hf_build;

static fg_status set_token(hf_build *b, size_t n, const char *what, long long id, const char *text) {
  if (id < 0 || (unsigned long long)id >= n)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %s \"%s\" has id %lld, outside 0..%zu", b->path, what, text, id, n - 1);
  if (b->tok[id] && strcmp(b->tok[id], text) != 0)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: id %lld is both \"%s\" and \"%s\"", b->path, id, b->tok[id], text);
  b->tok[id] = text;
  return FG_OK;
}

static bool is_str(const cJSON *o, const char *key, const char *want) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) && strcmp(v->valuestring, want) == 0;
}

/* Replace(" " -> "▁"), as SentencePiece-converted files spell it. */
static bool is_space_replace(const cJSON *n) {
  return is_type(n, "Replace") && is_str(cJSON_GetObjectItemCaseSensitive(n, "pattern"), "String", " ") &&
         is_str(n, "content", "\xE2\x96\x81");
}

/* The text handling of a SentencePiece-style BPE file (byte_fallback): Gemma's Replace
 * normalizer (no dummy prefix), Llama 2's legacy Prepend + Replace (a prefix before every
 * run between added tokens), or a Metaspace pre-tokenizer that does not split
 * (prepend_scheme first / always / never). Anything else is refused by name. */
static fg_status spm_shape(const char *path, const cJSON *root, bool *prefix, fg_tok_prefix *at) {
  const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
  const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
  bool no_pre = !pre || cJSON_IsNull(pre), no_norm = !norm || cJSON_IsNull(norm);
  *prefix = false;
  *at = FG_TOK_PREFIX_SEGMENT;
  if (no_pre && is_space_replace(norm)) return FG_OK;
  const cJSON *seq = cJSON_GetObjectItemCaseSensitive(norm, "normalizers");
  if (no_pre && is_type(norm, "Sequence") && cJSON_GetArraySize(seq) == 2 &&
      is_type(cJSON_GetArrayItem(seq, 0), "Prepend") && is_str(cJSON_GetArrayItem(seq, 0), "prepend", "\xE2\x96\x81") &&
      is_space_replace(cJSON_GetArrayItem(seq, 1))) {
    *prefix = true;
    return FG_OK;
  }
  if (no_norm && is_type(pre, "Metaspace") && is_str(pre, "replacement", "\xE2\x96\x81") && !flag(pre, "split", true)) {
    const cJSON *scheme = cJSON_GetObjectItemCaseSensitive(pre, "prepend_scheme");
    if (cJSON_IsString(scheme)) {
      *prefix = strcmp(scheme->valuestring, "never") != 0;
      *at = strcmp(scheme->valuestring, "first") == 0 ? FG_TOK_PREFIX_FIRST : FG_TOK_PREFIX_EACH;
    } else {
      *prefix = flag(pre, "add_prefix_space", true); /* older files: a prefix on every run */
      *at = FG_TOK_PREFIX_EACH;
    }
    return FG_OK;
  }
  char *n = norm ? cJSON_PrintUnformatted(norm) : NULL, *p = pre ? cJSON_PrintUnformatted(pre) : NULL;
  fg_status s = fg_fail(FG_ERR_UNSUPPORTED,
                        "%s: a byte_fallback BPE whose normalizer %.120s and pre_tokenizer %.120s are none of the "
                        "SentencePiece shapes (Replace; Prepend + Replace; Metaspace without split)",
                        path, n ? n : "null", p ? p : "null");
  free(n);
  free(p);
  return s;
}

/* A SentencePiece-style BPE file as an SPM vocabulary: the merged piece of rank r scores -r, so
 * the best-scored pair is the best-ranked merge; a piece no merge makes is never a merge
 * result; <0xXX> pieces are bytes, unk_token unknown, added tokens control (special) or
 * user-defined. The merges are looked up through a first tokenizer over the same texts. */
static fg_status build_spm(const char *path, const cJSON *model, fg_tok_vocab *v, fg_tokenizer **out) {
  size_t n = v->n_tokens;
  float *scores = malloc(n * sizeof *scores);
  int32_t *types = malloc(n * sizeof *types);
  fg_tokenizer *look = NULL;
  fg_tok_vocab lv = fg_tok_vocab_init(FG_TOK_SPM);
  lv.n_tokens = n;
  lv.tokens = v->tokens;
  fg_status s = FG_OK;
  if (!scores || !types) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
    goto done;
  }
  for (size_t i = 0; i < n; i++) scores[i] = 0.0f, types[i] = FG_TOK_TYPE_NOT_MERGED;
  lv.scores = scores;
  lv.token_type = types;
  if ((s = fg_tokenizer_from_vocab(&lv, &look))) goto done;
  for (size_t r = 0; r < v->n_merges; r++) {
    const char *m = v->merges[r], *sp = strchr(m, ' ');
    if (!sp) {
      s = fg_fail(FG_ERR_INVALID_ARG, "merge %zu \"%s\" has no space between its halves", r, m);
      goto done;
    }
    size_t ln = (size_t)(sp - m), rn = strlen(sp + 1);
    char *joined = malloc(ln + rn + 1);
    if (!joined) {
      s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
      goto done;
    }
    memcpy(joined, m, ln);
    memcpy(joined + ln, sp + 1, rn + 1);
    int32_t id = fg_tokenizer_index(look, joined, ln + rn);
    int32_t a = fg_tokenizer_index(look, m, ln), b = fg_tokenizer_index(look, sp + 1, rn);
    free(joined);
    if (id < 0 || a < 0 || b < 0) {
      s = fg_fail(FG_ERR_INVALID_ARG, "merge %zu \"%s\": its halves or their join are not tokens", r, m);
      goto done;
    }
    if (types[id] == FG_TOK_TYPE_NOT_MERGED) scores[id] = -(float)r, types[id] = FG_TOK_TYPE_NORMAL;
  }
  for (size_t i = 0; i < n; i++) {
    const char *t = v->tokens[i];
    if (strlen(t) == 6 && strncmp(t, "<0x", 3) == 0 && t[5] == '>') types[i] = FG_TOK_TYPE_BYTE;
  }
  const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
  if (cJSON_IsString(unk)) {
    v->unk_id = fg_tokenizer_index(look, unk->valuestring, strlen(unk->valuestring));
    if (v->unk_id < 0) {
      s = fg_fail(FG_ERR_INVALID_ARG, "model.unk_token \"%s\" is not a token", unk->valuestring);
      goto done;
    }
    types[v->unk_id] = FG_TOK_TYPE_UNKNOWN;
  }
  for (size_t k = 0; k < v->n_added; k++) types[v->added[k]] = FG_TOK_TYPE_CONTROL;
  v->model = FG_TOK_SPM;
  v->scores = scores;
  v->token_type = types;
  v->n_merges = 0;
  v->merges = NULL;
  s = fg_tokenizer_from_vocab(v, out);
done:
  fg_tokenizer_close(look);
  free(scores);
  free(types);
  return s;
}

static fg_status build_from_json(const char *path, const cJSON *root, const cJSON *cfg, fg_tokenizer **out) {
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (!is_type(model, "BPE"))
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: model.type is not \"BPE\" (only byte-level BPE is read from tokenizer.json)",
                   path);
  /* byte_fallback marks a SentencePiece-style BPE (Llama 2, Gemma): its own text handling. */
  bool spm = flag(model, "byte_fallback", false), spm_prefix = false;
  fg_tok_prefix spm_at = FG_TOK_PREFIX_SEGMENT;
  fg_status s;
  if (spm && (s = spm_shape(path, root, &spm_prefix, &spm_at))) return s;
  /* Normalizers: NFC (Qwen 2's) is applied; any other changes the ids in ways not
   * reproduced here, so it is refused by name rather than skipped. */
  const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
  bool nfc = false;
  if (norm && !cJSON_IsNull(norm) && !spm) {
    nfc = is_type(norm, "NFC");
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(norm, "type");
    if (!nfc)
      return fg_fail(FG_ERR_UNSUPPORTED, "%s: normalizer \"%s\" is not supported (NFC is)", path,
                     cJSON_IsString(ty) ? ty->valuestring : "?");
  }
  /* BPE options that change the ids and that byte-level files leave off: refused rather
   * than ignored, so that no file is read into different ids without a word. */
  const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
  const cJSON *csp = cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix");
  const cJSON *ews = cJSON_GetObjectItemCaseSensitive(model, "end_of_word_suffix");
  if ((dropout && !cJSON_IsNull(dropout)) || (cJSON_IsString(csp) && csp->valuestring[0]) ||
      (cJSON_IsString(ews) && ews->valuestring[0]))
    return fg_fail(FG_ERR_UNSUPPORTED,
                   "%s: model sets dropout, continuing_subword_prefix or end_of_word_suffix, which forgia's BPE "
                   "does not use",
                   path);
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: model.vocab must be an object and model.merges an array", path);
  if (added && !cJSON_IsArray(added)) return fg_fail(FG_ERR_INVALID_ARG, "%s: added_tokens is not an array", path);
  const char *kind = NULL;
  if (!spm && (s = pre_kind(path, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), &kind))) return s;
  /* The vocabulary size: one past the largest id of vocab and added_tokens. */
  long long max_id = -1;
  const cJSON *e;
  cJSON_ArrayForEach(e, vocab) {
    if (!cJSON_IsNumber(e) || e->valuedouble != (double)(long long)e->valuedouble || e->valuedouble < 0 ||
        e->valuedouble > INT32_MAX)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: vocab entry \"%s\" has no valid id", path, e->string);
    if ((long long)e->valuedouble > max_id) max_id = (long long)e->valuedouble;
  }
  cJSON_ArrayForEach(e, added) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
    if (!cJSON_IsNumber(id) || !cJSON_IsString(c) || id->valuedouble < 0 || id->valuedouble > INT32_MAX)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: an added_tokens entry lacks a valid id or content", path);
    /* Added tokens are matched as their exact text; the options that widen a match are refused. */
    if (flag(e, "lstrip", false) || flag(e, "rstrip", false) || flag(e, "single_word", false))
      return fg_fail(FG_ERR_UNSUPPORTED, "%s: added token \"%s\" sets lstrip, rstrip or single_word", path,
                     c->valuestring);
    if ((long long)id->valuedouble > max_id) max_id = (long long)id->valuedouble;
  }
  if (max_id < 0) return fg_fail(FG_ERR_INVALID_ARG, "%s: model.vocab is empty", path);
  size_t n = (size_t)max_id + 1, n_added = (size_t)cJSON_GetArraySize(added);
  size_t n_merges = (size_t)cJSON_GetArraySize(merges);
  hf_build b = {path, calloc(n, sizeof(char *)), malloc((n_added + 1) * sizeof(int32_t)), 0,
                calloc(n_merges + 1, sizeof(char *)), malloc((n_merges + 1) * sizeof(char *)), 0};
  bool *special = calloc(n, sizeof *special);
  if (!b.tok || !b.added || !b.merge_buf || !b.merges || !special) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
    goto done;
  }
  cJSON_ArrayForEach(e, vocab) if ((s = set_token(&b, n, "token", (long long)e->valuedouble, e->string))) goto done;
  cJSON_ArrayForEach(e, added) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
    const char *c = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
    if ((s = set_token(&b, n, "added token", (long long)id->valuedouble, c))) goto done;
    b.added[b.n_added++] = (int32_t)id->valuedouble;
    special[(size_t)id->valuedouble] = flag(e, "special", false);
  }
  for (size_t i = 0; i < n; i++)
    if (!b.tok[i]) {
      s = fg_fail(FG_ERR_INVALID_ARG, "%s: no token has id %zu (ids must run 0..%zu without gaps)", path, i, n - 1);
      goto done;
    }
  /* Merges are "a b" strings, or [a, b] pairs in newer files. */
  cJSON_ArrayForEach(e, merges) {
    if (cJSON_IsString(e)) {
      b.merges[b.n_merges++] = e->valuestring;
    } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
               cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
      const char *l = cJSON_GetArrayItem(e, 0)->valuestring, *r = cJSON_GetArrayItem(e, 1)->valuestring;
      size_t ln = strlen(l), rn = strlen(r);
      char *j = malloc(ln + rn + 2);
      if (!j) {
        s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
        goto done;
      }
      memcpy(j, l, ln);
      j[ln] = ' ';
      memcpy(j + ln + 1, r, rn + 1);
      b.merge_buf[b.n_merges] = j;
      b.merges[b.n_merges++] = j;
    } else {
      s = fg_fail(FG_ERR_INVALID_ARG, "%s: merge %zu is neither \"a b\" nor [a, b]", path, b.n_merges);
      goto done;
    }
  }
  fg_tok_vocab v = fg_tok_vocab_init(FG_TOK_BPE);
  v.n_tokens = n;
  v.tokens = b.tok;
  v.n_merges = b.n_merges;
  v.merges = b.merges;
  v.n_added = b.n_added;
  v.added = b.added;
  v.special = special;
  v.pre = kind;
  v.ignore_merges = flag(model, "ignore_merges", false);
  v.normalize_nfc = nfc;
  const char *bos = cfg ? token_content(cfg, "bos_token") : NULL;
  const char *eos = cfg ? token_content(cfg, "eos_token") : NULL;
  v.add_bos = cfg ? flag(cfg, "add_bos_token", false) : false;
  for (size_t i = 0; i < n; i++) {
    if (bos && strcmp(b.tok[i], bos) == 0 && v.bos_id < 0) v.bos_id = (int32_t)i;
    if (eos && strcmp(b.tok[i], eos) == 0 && v.eos_id < 0) v.eos_id = (int32_t)i;
  }
  if (bos && v.bos_id < 0) {
    s = fg_fail(FG_ERR_INVALID_ARG, "%s: tokenizer_config.json's bos_token \"%s\" is not a token", path, bos);
    goto done;
  }
  if (eos && v.eos_id < 0) {
    s = fg_fail(FG_ERR_INVALID_ARG, "%s: tokenizer_config.json's eos_token \"%s\" is not a token", path, eos);
    goto done;
  }
  if (spm) {
    v.add_space_prefix = spm_prefix;
    v.prefix_at = spm_at;
    s = build_spm(path, model, &v, out);
  } else {
    s = fg_tokenizer_from_vocab(&v, out);
  }
  if (s) fg_fail_prefix(s, "%s: ", path);
done:
  free(special);
  free(b.tok);
  free(b.added);
  if (b.merge_buf)
    for (size_t i = 0; i < n_merges; i++) free(b.merge_buf[i]);
  free(b.merge_buf);
  free(b.merges);
  return s;
}

fg_status fg_tokenizer_from_hf_dir(const char *dir, fg_tokenizer **out) {
  if (!dir || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_tokenizer_from_hf_dir: NULL argument");
  char *tj = fg_path_join(dir, "tokenizer.json"), *tc = fg_path_join(dir, "tokenizer_config.json");
  cJSON *root = NULL, *cfg = NULL;
  fg_status s = FG_OK;
  struct stat st;
  if (!tj || !tc) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", dir);
    goto done;
  }
  if ((s = fg_tok_read_json(tj, &root))) goto done;
  if (stat(tc, &st) == 0 && (s = fg_tok_read_json(tc, &cfg))) goto done;
  /* The shapes of the fast paths first; any other file runs the general pipeline. */
  s = build_from_json(tj, root, cfg, out);
  if (s == FG_ERR_UNSUPPORTED) s = fg_hf_build(tj, root, cfg, out);
done:
  cJSON_Delete(root);
  cJSON_Delete(cfg);
  free(tj);
  free(tc);
  return s;
}

fg_status fg_tokenizer_open(const char *path, fg_tokenizer **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_tokenizer_open: NULL argument");
  struct stat st;
  if (stat(path, &st) != 0) return fg_fail(FG_ERR_NOT_FOUND, "%s: no such file or directory", path);
  if (S_ISDIR(st.st_mode)) return fg_tokenizer_from_hf_dir(path, out);
  /* A mapping reads nothing until touched: the metadata pages alone are read. */
  fg_gguf_file *f = NULL;
  fg_status s = fg_gguf_open(path, FG_MAP_MMAP, &f);
  if (s) return s;
  s = fg_tokenizer_from_gguf(f, out);
  fg_gguf_close(f);
  return s;
}
