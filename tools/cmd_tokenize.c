/* forgia tokenize: the token ids a checkpoint's own tokenizer gives a text. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/chat.h"
#include "forgia/tokenizer.h"
#include "util_args.h"
#include "util_chat.h"
#include "util_file.h"
#include "util_report.h"

const char fg_cmd_tokenize_summary[] = "print the token ids of a text, with the tokenizer a GGUF or HF folder carries";

static const char synopsis[] =
    "forgia tokenize PATH (--text T | --file F | --jsonl F | --chat MESSAGES.json [--add-generation-prompt] [--no-think] "
    "[--template NAME] [--date D]) [--no-bos]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "PATH is a GGUF file (its metadata alone is read) or a Hugging Face folder holding\n"
          "tokenizer.json (and tokenizer_config.json). Prints the ids of T, separated by single\n"
          "spaces, on one line; with --file F, one such line for every line of F (the line\n"
          "without its \\n); with --jsonl F, one for every line of F that holds a JSON string or an\n"
          "object with a \"text\" string (texts with newlines, the empty text). The BOS id comes first when the tokenizer adds one (GGUF\n"
          "tokenizer.ggml.add_bos_token, tokenizer_config.json add_bos_token); --no-bos leaves it\n"
          "out. Added tokens (<|im_start|>, <think>, ...) written in the text are matched whole.\n\n"
          "--file - and --chat - read standard input (a file named \"-\" is ./-).\n\n"
          "--chat MESSAGES.json renders a conversation ([{\"role\": \"system\"|\"user\"|\"assistant\",\n"
          "\"content\": \"...\"}, ...]; other keys such as tool_calls, and contents that are lists\n"
          "of parts, reach the template as they are) with the checkpoint's own chat template (GGUF\n"
          "tokenizer.chat_template, or tokenizer_config.json's chat_template / chat_template.jinja)\n"
          "and prints the prompt, a newline, then its ids on the last line. forgia runs the template\n"
          "with its Jinja interpreter, as jinja2 runs it for Hugging Face (see forgia help\n"
          "chat-template); the families with a built-in renderer (smollm2, lfm2, qwen2.5, qwen3,\n"
          "qwen3.5, llama3, llama3.1, gemma2, gemma3) take that byte-equal fast path. A file that\n"
          "carries no template is rendered with its architecture's renderer (general.architecture\n"
          "or config.json model_type: gemma2, gemma3, qwen3, qwen3.5), said in a note on stderr;\n"
          "an architecture several families share (llama, qwen2, lfm2) is an error: name one.\n"
          "The template writes the BOS itself where the family has one, so no BOS is added to a\n"
          "chat prompt.\n"
          "  --add-generation-prompt  open the assistant's turn at the end\n"
          "  --no-think               enable_thinking=false (Qwen 3 / 3.5: the empty <think> block)\n"
          "  --template NAME          a built-in renderer by its name above, whatever the file holds;\n"
          "                           any other NAME is the file's tokenizer.chat_template.NAME. The\n"
          "                           built-in name wins: a recognised template renders through\n"
          "                           that built-in renderer, so the name means it either way\n"
          "  --date D                 Llama 3.1+: the \"Today Date\" line (default: the template's)\n",
          synopsis);
}

static int print_ids(const fg_tokenizer *t, const char *text, size_t len, bool bos) {
  int32_t *ids = NULL;
  size_t n = 0;
  if (fg_tokenizer_encode(t, text, len, bos, &ids, &n)) return 1;
  for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
  putchar('\n');
  fg_tokenizer_free_ids(ids);
  return 0;
}

/* --jsonl: one JSON string (or {"text": ...}) per line, one line of ids each. */
static int jsonl(const fg_tokenizer *t, const char *file, bool bos) {
  uint8_t *buf = NULL;
  size_t len = 0;
  if (fg_cli_read_input(file, 0, &buf, &len)) {
    fg_cli_report("tokenize", fg_cli_chat_shown(file));
    return 1;
  }
  int rc = 0;
  size_t line = 0;
  for (size_t at = 0; !rc && at < len;) {
    const uint8_t *nl = memchr(buf + at, '\n', len - at);
    const size_t end = nl ? (size_t)(nl - buf) : len;
    line++;
    cJSON *j = cJSON_ParseWithLength((const char *)buf + at, end - at);
    const cJSON *s = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "text") : j;
    if (!cJSON_IsString(s)) {
      fg_cli_fail("tokenize", fg_cli_chat_shown(file), "line %zu: expected a JSON string or {\"text\": string}", line);
      rc = 1;
    } else if ((rc = print_ids(t, s->valuestring, strlen(s->valuestring), bos)) != 0) {
      fg_cli_report("tokenize", fg_cli_chat_shown(file));
    }
    cJSON_Delete(j);
    at = end + 1;
  }
  free(buf);
  return rc;
}

static int chat(const fg_tokenizer *t, const char *path, const char *file, const char *name, const fg_chat_opts *o) {
  char *prompt = NULL, *raw = NULL;
  size_t plen = 0, n = 0, rawlen = 0;
  cJSON *root = NULL;
  fg_chat_msg *msgs = NULL;
  fg_cli_chat p = {0};
  int rc = 1;
  if (fg_cli_chat_pick("tokenize", path, name, &p)) goto done;
  if (fg_cli_chat_messages("tokenize", file, &root, &msgs, &n, &raw, &rawlen)) goto done;
  if (fg_cli_chat_render_json(&p, t, raw, rawlen, msgs, n, o, &prompt, &plen)) {
    fg_cli_report("tokenize", path);
    goto done;
  }
  fwrite(prompt, 1, plen, stdout);
  putchar('\n');
  if ((rc = print_ids(t, prompt, plen, false)) != 0) fg_cli_report("tokenize", path);
  /* a note, not an error: only a run that succeeds says it, so stderr stays one line either way */
  if (!rc) fg_cli_chat_note("tokenize", path, &p);
done:
  fg_chat_free(prompt);
  fg_cli_chat_free(&p);
  free(msgs);
  free(raw);
  cJSON_Delete(root);
  return rc;
}

int fg_cmd_tokenize(int argc, char **argv) {
  const char *text = NULL, *file = NULL, *path = NULL, *chat_file = NULL, *tmpl_name = NULL, *date = NULL,
             *jl = NULL;
  bool no_bos = false, gen = false, no_think = false;
  const fg_cli_opt opts[] = {{"--text", &text, NULL},
                             {"--file", &file, NULL},
                             {"--no-bos", NULL, &no_bos},
                             {"--chat", &chat_file, NULL},
                             {"--add-generation-prompt", NULL, &gen},
                             {"--no-think", NULL, &no_think},
                             {"--template", &tmpl_name, NULL},
                             {"--date", &date, NULL},
                             {"--jsonl", &jl, NULL}};
  const char *const pos_names[] = {"PATH"};
  fg_cli_spec spec = {"tokenize", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, &path, 1, 0, 0};
  int prc = fg_cli_parse(&spec, argc, argv);
  if (prc != FG_CLI_GO) return prc;
  if ((text != NULL) + (file != NULL) + (chat_file != NULL) + (jl != NULL) != 1)
    return fg_cli_usage_error(&spec, text ? (file ? "--file" : chat_file ? "--chat" : "--jsonl") : "--text",
                              "give exactly one of --text, --file, --jsonl and --chat");
  if (!chat_file && (gen || no_think || tmpl_name || date))
    return fg_cli_usage_error(&spec, gen ? "--add-generation-prompt" : no_think ? "--no-think" : tmpl_name ? "--template" : "--date",
                              "goes with --chat");
  fg_tokenizer *t = NULL;
  if (fg_tokenizer_open(path, &t)) {
    fg_cli_report("tokenize", path);
    return 1;
  }
  bool bos = fg_tokenizer_add_bos(t) && !no_bos;
  int rc = 0;
  if (chat_file) {
    fg_chat_opts o = {.add_generation_prompt = gen, .no_think = no_think, .date = date};
    rc = chat(t, path, chat_file, tmpl_name, &o);
  } else if (jl) {
    rc = jsonl(t, jl, bos);
  } else if (text) {
    rc = print_ids(t, text, strlen(text), bos);
    if (rc) fg_cli_report("tokenize", path);
  } else {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (fg_cli_read_input(file, 0, &buf, &len)) {
      fg_cli_report("tokenize", fg_cli_chat_shown(file));
      rc = 1;
    }
    for (size_t at = 0; !rc && at < len;) {
      const uint8_t *nl = memchr(buf + at, '\n', len - at);
      size_t end = nl ? (size_t)(nl - buf) : len;
      if ((rc = print_ids(t, (const char *)buf + at, end - at, bos)) != 0) fg_cli_report("tokenize", fg_cli_chat_shown(file));
      at = end + 1;
    }
    free(buf);
  }
  fg_tokenizer_close(t);
  return rc;
}
