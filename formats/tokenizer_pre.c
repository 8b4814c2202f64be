/* Pre-tokenizers: the regex cuts byte-level BPE tokenizers make before merging, each written
 * as the reference tokenizer.json (or llama.cpp for a GGUF's tokenizer.ggml.pre) spells it,
 * and run with PCRE2: leftmost-first alternation with backtracking, as Oniguruma (which the
 * Hugging Face tokenizers use) runs it. Two details keep the classes equal to Oniguruma's:
 *   - \s is spelled out as Unicode White_Space (what Oniguruma's \s is); PCRE2's own \s
 *     also takes U+180E, which Unicode stopped calling a space in 6.3;
 *   - PCRE2_MATCH_INVALID_UTF: invalid UTF-8 never matches, so those bytes fall into the
 *     gaps between matches and stay pieces of their own, instead of failing the match.
 * Text between matches is a piece too (the "isolated" split of the reference). A kind may be
 * a sequence of regexes, as llama.cpp runs them: each cuts every piece of the one before. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
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
/* SmolLM (and StarCoder, Refact, Command-R): every \p{N} character is cut off alone first
 * (the Digits pre-tokenizer with individual_digits, whose test is Rust's char::is_numeric: Nd,
 * Nl and No), then GPT-2's. */
static const char re_digit[] = "\\p{N}";
/* Falcon: punctuation runs, then GPT-2's, then runs of three ASCII digits. */
static const char re_falcon_punct[] = "[\\p{P}\\$\\+<=>\\^~\\|`]+";
static const char re_three_digits[] = "[0-9][0-9][0-9]";
/* llama.cpp's default, for a GGUF that names no pre-tokenizer: Falcon's without the backtick. */
static const char re_default_punct[] = "[\\p{P}\\$\\+<=>\\^~\\|]+";
/* Gemma 4: runs of newlines apart from runs of anything else. */
static const char re_newlines[] = "[^\\n]+|\\n+";
/* DeepSeek: line breaks alone, then words with one leading space, punctuation runs, CJK runs
 * (U+4E00..U+9FA5, U+0800..U+4E00, Hangul U+AC00..U+D7FF), numbers. */
static const char re_line_break[] = "[\\r\\n]";
static const char re_ds_letters[] = SPACES "?\\p{L}+";
static const char re_ds_punct[] = SPACES "?\\p{P}+";
/* llama.cpp runs the regexes that name no \\p class with std::wregex over a copy of the text
 * in which every non-ASCII White_Space character is U+000B, so an explicit range never takes
 * one: U+0800..U+4E00 holds U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000. */
static const char re_cjk[] = "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}"
                             "\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{4E00}"
                             "\\x{AC00}-\\x{D7FF}]+";
static const char re_one_number[] = "\\p{N}";
static const char re_numbers[] = "\\p{N}+";
/* DeepSeek LLM: the cased letters (its own class), ASCII and full-width punctuation, trailing
 * space. */
static const char re_dsl_letters[] =
    SPACES "?[\\x{41}-\\x{5A}\\x{61}-\\x{7A}\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}"
    "\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
    "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}"
    "\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"
    "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}"
    "\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}"
    "\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}"
    "\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
    "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}"
    "\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+";
static const char re_dsl_punct[] =
    SPACES "?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3001}-\\x{3002}]+"; /* U+3000: a space */
static const char re_trailing_space[] = SPACES "+\\z";

#define MAX_STAGES 6

struct fg_tok_pre {
  fg_tok_pre_kind kind;
  pcre2_code *re[MAX_STAGES]; /* applied in order, each to the pieces of the one before */
  size_t n;
};

static const struct {
  const char *name;
  fg_tok_pre_kind kind;
} names[] = {
    /* Our kind names, then the tokenizer.ggml.pre strings llama.cpp writes for them. */
    {"gpt2", FG_PRE_GPT2},     {"gpt-2", FG_PRE_GPT2},         {"smollm", FG_PRE_SMOLLM},
    {"llama3", FG_PRE_LLAMA3}, {"llama-bpe", FG_PRE_LLAMA3},   {"qwen2", FG_PRE_QWEN2},
    {"qwen35", FG_PRE_QWEN35}, {"starcoder", FG_PRE_SMOLLM},  {"refact", FG_PRE_SMOLLM},
    {"command-r", FG_PRE_SMOLLM}, {"mpt", FG_PRE_GPT2},       {"falcon", FG_PRE_FALCON},
    {"deepseek-coder", FG_PRE_DEEPSEEK_CODER}, {"deepseek-llm", FG_PRE_DEEPSEEK_LLM},
    {"default", FG_PRE_DEFAULT}, {"gemma4", FG_PRE_GEMMA4},
};

fg_status fg_tok_pre_kind_of(const char *name, fg_tok_pre_kind *kind) {
  if (!name) return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: a byte-level BPE vocabulary needs a pre-tokenizer kind");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i].name) == 0) {
      *kind = names[i].kind;
      return FG_OK;
    }
  return fg_fail(FG_ERR_UNSUPPORTED,
                 "tokenizer: unknown pre-tokenizer \"%s\" (expected gpt2, gpt-2, smollm, llama3, llama-bpe, qwen2, "
                 "qwen35, starcoder, refact, command-r, mpt, falcon, deepseek-coder, deepseek-llm, default or gemma4)",
                 name);
}

const char *fg_tok_pre_kind_name(fg_tok_pre_kind kind) {
  switch (kind) {
    case FG_PRE_GPT2: return "gpt2";
    case FG_PRE_SMOLLM: return "smollm";
    case FG_PRE_LLAMA3: return "llama3";
    case FG_PRE_QWEN2: return "qwen2";
    case FG_PRE_QWEN35: return "qwen35";
    case FG_PRE_FALCON: return "falcon";
    case FG_PRE_DEEPSEEK_CODER: return "deepseek-coder";
    case FG_PRE_DEEPSEEK_LLM: return "deepseek-llm";
    case FG_PRE_DEFAULT: return "default";
    case FG_PRE_GEMMA4: return "gemma4";
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
  const char *seq[MAX_STAGES] = {NULL};
  switch (kind) {
    case FG_PRE_GPT2: seq[0] = re_gpt2; break;
    case FG_PRE_SMOLLM: seq[0] = re_digit, seq[1] = re_gpt2; break;
    case FG_PRE_LLAMA3: seq[0] = re_llama3; break;
    case FG_PRE_QWEN2: seq[0] = re_qwen2; break;
    case FG_PRE_QWEN35: seq[0] = re_qwen35; break;
    case FG_PRE_FALCON: seq[0] = re_falcon_punct, seq[1] = re_gpt2, seq[2] = re_three_digits; break;
    case FG_PRE_DEEPSEEK_CODER:
      seq[0] = re_line_break, seq[1] = re_ds_letters, seq[2] = re_ds_punct, seq[3] = re_cjk, seq[4] = re_one_number;
      break;
    case FG_PRE_DEFAULT:
      seq[0] = re_default_punct, seq[1] = re_gpt2, seq[2] = re_numbers, seq[3] = re_three_digits;
      break;
    case FG_PRE_GEMMA4: seq[0] = re_newlines; break;
    case FG_PRE_DEEPSEEK_LLM:
      seq[0] = re_line_break, seq[1] = re_dsl_letters, seq[2] = re_dsl_punct, seq[3] = re_trailing_space,
      seq[4] = re_cjk, seq[5] = re_numbers;
      break;
    default: return fg_fail(FG_ERR_INVALID_ARG, "tokenizer: pre-tokenizer kind %d out of range", (int)kind);
  }
  fg_tok_pre *p = calloc(1, sizeof *p);
  if (!p) return fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
  p->kind = kind;
  fg_status s = FG_OK;
  for (size_t i = 0; i < MAX_STAGES && seq[i] && s == FG_OK; i++) s = compile(seq[i], &p->re[p->n++]);
  if (s != FG_OK) {
    fg_tok_pre_free(p);
    return s;
  }
  *out = p;
  return FG_OK;
}

void fg_tok_pre_free(fg_tok_pre *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++) pcre2_code_free(p->re[i]);
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

/* One stage of a split: its regex over a piece, every piece it makes going to the next stage
 * (or out, after the last). */
typedef struct stage {
  const fg_tok_pre *p;
  pcre2_match_data **md;
  size_t at;
  fg_tok_piece_fn fn;
  void *ctx;
} stage;

static int run_stage(const stage *st, const char *text, size_t len);

static int next_stage(void *c, const char *text, size_t len) {
  stage nx = *(const stage *)c;
  nx.at++;
  return run_stage(&nx, text, len);
}

static int run_stage(const stage *st, const char *text, size_t len) {
  const bool last = st->at + 1 == st->p->n;
  return split_re(st->p->re[st->at], st->md[st->at], text, len, last ? st->fn : next_stage,
                  last ? st->ctx : (void *)st);
}

int fg_tok_pre_split(const fg_tok_pre *p, const char *text, size_t len, fg_tok_piece_fn fn, void *ctx) {
  pcre2_match_data *md[MAX_STAGES] = {NULL};
  int r = 0;
  for (size_t i = 0; i < p->n && !r; i++)
    if (!(md[i] = pcre2_match_data_create(4, NULL))) r = -(int)FG_ERR_NOMEM;
  if (!r) {
    const stage st = {p, md, 0, fn, ctx};
    r = run_stage(&st, text, len);
  }
  for (size_t i = 0; i < p->n; i++) pcre2_match_data_free(md[i]);
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
