/* llama.cpp's rules for the vocabularies it loads from a GGUF, beyond what the file stores
 * (formats/tokenizer_internal.h). forgia's GGUF tokenizer is llama.cpp's, since that is what
 * runs the file; these are the places where llama.cpp decides from token texts and names. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tokenizer_internal.h"

/* Texts llama.cpp takes as end-of-turn, end-of-generation and fill-in-the-middle markers: each
 * becomes a control token (matched whole in text with parse_special) whatever its stored type. */
static const char *const control_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
    "[EOT]", "[EOS]", "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "<end_of_utterance>",
    "<|eom_id|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "</s>", "<eos>", "<turn|>", "<|tool_response>",
    "[e~[", "<|fim_prefix|>", "<fim-prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>",
    "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", "<fim_prefix>", "<|fim_suffix|>", "<fim-suffix>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>", "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>",
    "<|suffix|>", "<fim_suffix>", "<|fim_middle|>", "<fim-middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
    "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", "<fim_middle>", "<|fim_pad|>", "<fim-pad>", "<PAD>",
    "[PAD]", "<fim_pad>", "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>"};

static bool is(const char *tok, size_t len, const char *lit) { return len == strlen(lit) && !memcmp(tok, lit, len); }

static size_t find(const char *const *tok, const size_t *len, size_t n, const char *lit) {
  for (size_t i = 0; i < n; i++)
    if (is(tok[i], len[i], lit)) return i;
  return n;
}

void fg_tok_gguf_types(int32_t *types, const char *const *tok, const size_t *len, size_t n) {
  if (!types) return;
  /* every marker opens with '<', '[', '_' or U+2581 and is at most 32 bytes: the other tokens
   * (nearly all of a 262k vocabulary) are passed over without a comparison */
  for (size_t i = 0; i < n; i++) {
    const char c = len[i] ? tok[i][0] : 0;
    if (len[i] > 32 || (c != '<' && c != '[' && c != '_' && c != '\xe2') || types[i] == FG_TOK_TYPE_CONTROL) continue;
    for (size_t k = 0; k < sizeof control_texts / sizeof control_texts[0]; k++)
      if (is(tok[i], len[i], control_texts[k])) {
        types[i] = FG_TOK_TYPE_CONTROL;
        break;
      }
  }
  /* gpt-oss: its channel markers are rendered, user-defined tokens */
  for (const char *const *u = (const char *const[]){"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};
       *u; u++) {
    const size_t i = find(tok, len, n, *u);
    if (i < n) types[i] = FG_TOK_TYPE_USER_DEFINED;
  }
  /* "<|end|>" is no end of generation where <|return|> and <|call|> (or <|calls|> and
   * <|flush|>) are: a user-defined token there */
  const size_t end = find(tok, len, n, "<|end|>");
  const bool ret = find(tok, len, n, "<|return|>") < n, call = find(tok, len, n, "<|call|>") < n,
             calls = find(tok, len, n, "<|calls|>") < n, flush = find(tok, len, n, "<|flush|>") < n;
  if (end < n && ((ret && call) || (calls && flush))) types[end] = FG_TOK_TYPE_USER_DEFINED;
  /* Gemma 4 and PLaMo: "</s>" is an ordinary token there */
  const size_t s = find(tok, len, n, "</s>");
  if (s < n && (find(tok, len, n, "<|tool_response>") < n || find(tok, len, n, "<|plamo:eos|>") < n))
    types[s] = FG_TOK_TYPE_NORMAL;
}

bool fg_tok_gguf_default_bos(fg_tok_model model, const char *pre) {
  if (model == FG_TOK_SPM || model == FG_TOK_WPM) return true;
  static const char *const with_bos[] = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                                         "midm-2.0", "lfm2", "jina-v5-nano", "tekken", "chameleon"};
  for (size_t i = 0; pre && i < sizeof with_bos / sizeof with_bos[0]; i++)
    if (!strcmp(pre, with_bos[i])) return true;
  return false;
}

bool fg_tok_gguf_clean_spaces(fg_tok_model model, const char *pre) {
  if (model == FG_TOK_WPM) return true;
  if (model != FG_TOK_BPE) return false;
  /* the byte-level kinds llama.cpp leaves uncleaned; every other one (a missing pre too) cleans */
  static const char *const raw[] = {
      "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5", "youtu", "sarvam-moe", "command-r", "qwen2",
      "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "poro-chat", "viking", "tekken", "smollm", "chameleon",
      "gpt-4o", "llama4", "kanana2", "talkie", "granite-embed-multi-97m", "tiny_aya", "cohere2moe", "superbpe",
      "trillion", "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan",
      "hunyuan-dense", "hy_v4", "joyai-llm", "kimi-k2", "ufakzeka", "grok-2", "afmoe", "laguna", "minimax-m2",
      "solar-open"};
  for (size_t i = 0; pre && i < sizeof raw / sizeof raw[0]; i++)
    if (!strcmp(pre, raw[i])) return false;
  return true;
}

/* Three passes, as llama.cpp makes them, each reading the previous one's output: the space
 * before ? ! . , goes; a lone ' between spaces loses both spaces; the space before 's 'm 're
 * 've goes. The first byte is always kept. */
size_t fg_tok_clean_spaces(char *s, size_t n) {
  if (n < 2) return n;
  size_t k = 1;
  for (size_t i = 1; i < n; i++) {
    char x = s[i];
    if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) k--;
    s[k++] = x;
  }
  n = k;
  k = 1;
  bool prev_gone = false; /* the character before i was a space taken out with a ' */
  for (size_t i = 1; i < n; i++) {
    char x = s[i];
    if (x == '\'' && i + 1 < n && !prev_gone && s[i - 1] == ' ' && s[i + 1] == ' ') {
      k--;
      s[k++] = x;
      i++;
      prev_gone = true;
      continue;
    }
    prev_gone = false;
    s[k++] = x;
  }
  n = k;
  k = 1;
  for (size_t i = 1; i < n; i++) {
    char x = s[i];
    if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      char x1 = s[i + 1];
      if (x1 == 's' || x1 == 'm')
        k--;
      else if (i + 2 < n && ((x1 == 'r' && s[i + 2] == 'e') || (x1 == 'v' && s[i + 2] == 'e')))
        k--;
    }
    s[k++] = x;
  }
  return k;
}

bool *fg_tok_gguf_rstrip(const char *name, size_t name_len, const int32_t *types, const char *const *tok,
                         const size_t *len, size_t n, fg_status *fail) {
  *fail = FG_OK;
  /* Phi-3 (general.name, any case, holding "phi-3" or "phi3"): every special token but <unk>,
   * <s> and <|endoftext|> takes the whitespace after it, and so does </s> */
  bool phi3 = false;
  for (size_t i = 0; name && i + 4 <= name_len && !phi3; i++) {
    char w[6] = {0};
    for (size_t k = 0; k < 5 && i + k < name_len; k++) w[k] = (char)tolower((unsigned char)name[i + k]);
    phi3 = !strncmp(w, "phi-3", 5) || !strncmp(w, "phi3", 4);
  }
  if (!phi3) return NULL;
  bool *r = calloc(n ? n : 1, sizeof *r);
  if (!r) {
    *fail = fg_fail(FG_ERR_NOMEM, "tokenizer: out of memory");
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    const int32_t ty = types ? types[i] : FG_TOK_TYPE_NORMAL;
    r[i] = ty == FG_TOK_TYPE_CONTROL || ty == FG_TOK_TYPE_USER_DEFINED || ty == FG_TOK_TYPE_UNKNOWN;
    if (is(tok[i], len[i], "</s>")) r[i] = true;
    if (is(tok[i], len[i], "<unk>") || is(tok[i], len[i], "<s>") || is(tok[i], len[i], "<|endoftext|>")) r[i] = false;
  }
  return r;
}
