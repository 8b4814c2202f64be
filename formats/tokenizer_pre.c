/* Pre-tokenizers: the regex cuts byte-level BPE tokenizers make before merging, each written
 * as the reference tokenizer.json (or llama.cpp for a GGUF's tokenizer.ggml.pre) spells it,
 * and run with PCRE2: leftmost-first alternation with backtracking, as Oniguruma (which the
 * Hugging Face tokenizers use) runs it. Two details keep the classes equal to Oniguruma's:
 *   - \s is spelled out as Unicode White_Space (what Oniguruma's \s is); PCRE2's own \s
 *     also takes U+180E, which Unicode stopped calling a space in 6.3;
 *   - PCRE2_MATCH_INVALID_UTF: invalid UTF-8 never matches, so those bytes fall into the
 *     gaps between matches and stay pieces of their own, instead of failing the match.
 * Text between matches is a piece too (the "isolated" split of the reference). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_internal.h"

#define WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define SPACES "[" WS "]"
#define NOT_SPACE "[^" WS "]"

/* GPT-2's pattern (ByteLevel with use_regex in tokenizer.json). */
static const char re_gpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|" SPACES
                              "+(?!" NOT_SPACE ")|" SPACES "+";
/* Llama 3: digits in threes, case-insensitive contractions, a letter run takes one leading
 * non-letter, punctuation runs take trailing newlines. */
static const char re_llama3[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^" WS
                                "\\p{L}\\p{N}]+[\\r\\n]*|" SPACES "*[\\r\\n]+|" SPACES "+(?!" NOT_SPACE ")|" SPACES "+";
/* Qwen 2 (and 2.5, 3): Llama 3's with one digit at a time. */
static const char re_qwen2[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^" WS
                               "\\p{L}\\p{N}]+[\\r\\n]*|" SPACES "*[\\r\\n]+|" SPACES "+(?!" NOT_SPACE ")|" SPACES "+";
/* Qwen 3.5: a combining mark (\p{M}) stays with the letters it follows. */
static const char re_qwen35[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^" WS
                                "\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|" SPACES "*[\\r\\n]+|" SPACES "+(?!" NOT_SPACE
                                ")|" SPACES "+";
/* SmolLM: every \p{N} character is cut off alone first (the Digits pre-tokenizer with
 * individual_digits, whose test is Rust's char::is_numeric: Nd, Nl and No), then GPT-2's. */
static const char re_digit[] = "\\p{N}";

struct fg_tok_pre {
  fg_tok_pre_kind kind;
  pcre2_code *main;
  pcre2_code *digits; /* SmolLM's first split, else NULL */
};

static const struct {
  const char *name;
  fg_tok_pre_kind kind;
} names[] = {
    /* Our kind names, then the tokenizer.ggml.pre strings llama.cpp writes for them. */
    {"gpt2", FG_PRE_GPT2},     {"gpt-2", FG_PRE_GPT2},         {"smollm", FG_PRE_SMOLLM},
    {"llama3", FG_PRE_LLAMA3}, {"llama-bpe", FG_PRE_LLAMA3},   {"qwen2", FG_PRE_QWEN2},
    {"qwen35", FG_PRE_QWEN35},
};

fg_status fg_tok_pre_kind_of(const char *name, fg_tok_pre_kind *kind) {
  if (!name) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: a byte-level BPE vocabulary needs a pre-tokenizer kind");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i].name) == 0) {
      *kind = names[i].kind;
      return FG_OK;
    }
  return fg_fail(FG_ERR_UNSUPPORTED,
                 "tokenizer: unknown pre-tokenizer \"%s\" (expected gpt2, gpt-2, smollm, llama3, llama-bpe, qwen2 "
                 "or qwen35)",
                 name);
}

const char *fg_tok_pre_kind_name(fg_tok_pre_kind kind) {
  switch (kind) {
    case FG_PRE_GPT2: return "gpt2";
    case FG_PRE_SMOLLM: return "smollm";
    case FG_PRE_LLAMA3: return "llama3";
    case FG_PRE_QWEN2: return "qwen2";
    case FG_PRE_QWEN35: return "qwen35";
    default: return "";
  }
}

static fg_status compile(const char *re, pcre2_code **out) {
  int err = 0;
  PCRE2_SIZE at = 0;
  pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &err, &at,
                                NULL);
  if (!c) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return fg_fail(FG_ERR_UNSUPPORTED, "tokenizer: PCRE2 refuses a pre-tokenizer regex at %zu: %s", (size_t)at,
                   (const char *)msg);
  }
  /* JIT is an optimisation only: where it is unavailable the interpreter gives the same matches. */
  (void)pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);
  *out = c;
  return FG_OK;
}

fg_status fg_tok_pre_new(fg_tok_pre_kind kind, fg_tok_pre **out) {
  const char *re = NULL;
  switch (kind) {
    case FG_PRE_GPT2:
    case FG_PRE_SMOLLM: re = re_gpt2; break;
    case FG_PRE_LLAMA3: re = re_llama3; break;
    case FG_PRE_QWEN2: re = re_qwen2; break;
    case FG_PRE_QWEN35: re = re_qwen35; break;
    default: return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: pre-tokenizer kind %d out of range", (int)kind);
  }
  fg_tok_pre *p = calloc(1, sizeof *p);
  if (!p) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  p->kind = kind;
  fg_status s = compile(re, &p->main);
  if (s == FG_OK && kind == FG_PRE_SMOLLM) s = compile(re_digit, &p->digits);
  if (s != FG_OK) {
    fg_tok_pre_free(p);
    return s;
  }
  *out = p;
  return FG_OK;
}

void fg_tok_pre_free(fg_tok_pre *p) {
  if (!p) return;
  pcre2_code_free(p->main);
  pcre2_code_free(p->digits);
  free(p);
}

/* Cuts text[0, len) with code: every match and every gap between matches is a piece. */
static int split_re(const pcre2_code *code, pcre2_match_data *md, const char *text, size_t len, fg_tok_piece_fn fn,
                    void *ctx) {
  size_t pos = 0, gap = 0;
  while (pos < len) {
    int rc = pcre2_match(code, (PCRE2_SPTR)text, len, pos, 0, md, NULL);
    if (rc < 0) break; /* PCRE2_ERROR_NOMATCH: the rest is one gap */
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (b > gap) {
      int r = fn(ctx, text + gap, b - gap);
      if (r) return r;
    }
    if (e == b) { /* none of the patterns matches empty; kept safe all the same */
      pos = b + 1;
      gap = b;
      continue;
    }
    int r = fn(ctx, text + b, e - b);
    if (r) return r;
    pos = gap = e;
  }
  if (gap < len) return fn(ctx, text + gap, len - gap);
  return 0;
}

int fg_tok_pre_split(const fg_tok_pre *p, const char *text, size_t len, fg_tok_piece_fn fn, void *ctx) {
  pcre2_match_data *md = pcre2_match_data_create(4, NULL);
  pcre2_match_data *md2 = p->digits ? pcre2_match_data_create(4, NULL) : NULL;
  if (!md || (p->digits && !md2)) {
    pcre2_match_data_free(md);
    pcre2_match_data_free(md2);
    return -(int)FG_ERR_NOMEM;
  }
  int r = 0;
  if (!p->digits) {
    r = split_re(p->main, md, text, len, fn, ctx);
  } else {
    /* Each \p{N} character alone; GPT-2's pattern inside the runs between them. */
    size_t pos = 0, gap = 0;
    while (pos < len && !r) {
      int rc = pcre2_match(p->digits, (PCRE2_SPTR)text, len, pos, 0, md, NULL);
      if (rc < 0) break;
      const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
      size_t b = ov[0], e = ov[1];
      if (b > gap && (r = split_re(p->main, md2, text + gap, b - gap, fn, ctx)) != 0) break;
      r = fn(ctx, text + b, e - b);
      pos = gap = e;
    }
    if (!r && gap < len) r = split_re(p->main, md, text + gap, len - gap, fn, ctx);
  }
  pcre2_match_data_free(md);
  pcre2_match_data_free(md2);
  return r;
}

fg_status fg_tok_pretokenize(const char *kind, const char *text, size_t len, fg_tok_piece_fn fn, void *ctx) {
  if ((!text && len) || !fn) return fg_fail(FG_ERR_INVALID_ARG, "fg_tok_pretokenize: NULL text or callback");
  fg_tok_pre_kind k = FG_PRE_NONE;
  fg_status s = fg_tok_pre_kind_of(kind, &k);
  if (s != FG_OK) return s;
  fg_tok_pre *p;
  if ((s = fg_tok_pre_new(k, &p)) != FG_OK) return s;
  int r = fg_tok_pre_split(p, text ? text : "", len, fn, ctx);
  fg_tok_pre_free(p);
  if (r == -(int)FG_ERR_NOMEM) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  return FG_OK;
}
