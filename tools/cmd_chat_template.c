/* forgia chat-template: a chat template rendered by forgia's Jinja interpreter, on one
 * conversation or on a JSONL batch of contexts (what tests/data/chat/jinja_templates.py
 * compares with jinja2). */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forgia/chat.h"
#include "forgia/jinja.h"
#include "util_args.h"
#include "util_chat.h"
#include "util_file.h"
#include "util_report.h"

const char fg_cmd_chat_template_summary[] = "render a chat template (any Jinja template) on messages, as jinja2 does";

static const char synopsis[] =
    "forgia chat-template [TEMPLATE] (--messages M.json [--vars V.json] [--add-generation-prompt] [--no-think] "
    "[--bos TEXT] | --jsonl F) [--now SECONDS]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "TEMPLATE (optional with --jsonl) is a template file (Jinja text), a GGUF file or a\n"
          "Hugging Face folder (its own chat template, as forgia tokenize --chat reads it). forgia\n"
          "renders templates with its Jinja interpreter, set up as Hugging Face's\n"
          "apply_chat_template sets up jinja2 (trim_blocks, lstrip_blocks, loop controls,\n"
          "raise_exception, strftime_now, tojson); with --messages, a template one of its built-in\n"
          "renderers recognises takes that renderer, which is byte-equal to it (forgia help\n"
          "tokenize). Not supported: str.format specs ({:>3}), recursive loops, include/import.\n"
          "  --messages M.json        the conversation: a JSON array of messages as Hugging Face\n"
          "                           takes them (role, content as a string or a list of parts,\n"
          "                           tool_calls, ...); - reads stdin. Prints the prompt and a \\n\n"
          "  --vars V.json            a JSON object of further variables (tools, documents, any\n"
          "                           keyword argument of apply_chat_template)\n"
          "  --add-generation-prompt  open the assistant's turn at the end\n"
          "  --no-think               enable_thinking=false\n"
          "  --bos TEXT               the bos_token variable (default \"\")\n"
          "  --jsonl F                one render per line of F, each a JSON object {\"context\": {...}}\n"
          "                           giving every variable (optionally \"template\": a file to render\n"
          "                           instead of TEMPLATE); one line out for each: {\"text\": ...}, or\n"
          "                           {\"error\": ...} when the template raises or fails\n"
          "  --now SECONDS            strftime_now's time, seconds since the epoch (default: now)\n",
          synopsis);
}

/* A template file's text, or the chat template a GGUF file or model folder carries. */
static int load_template(const char *path, char **text, size_t *len) {
  struct stat st;
  size_t n = strlen(path);
  if ((stat(path, &st) == 0 && S_ISDIR(st.st_mode)) || (n > 5 && strcmp(path + n - 5, ".gguf") == 0)) {
    if (fg_chat_template_from_path(path, NULL, text, len)) return fg_cli_report("chat-template", path), 1;
    return 0;
  }
  uint8_t *buf = NULL;
  if (fg_cli_read_input(path, 0, &buf, len)) return fg_cli_report("chat-template", path), 1;
  *text = (char *)buf;
  return 0;
}

static void print_result(fg_status s, const char *text, size_t len) {
  cJSON *o = cJSON_CreateObject();
  if (s) cJSON_AddStringToObject(o, "error", fg_last_error());
  else {
    char *t = malloc(len + 1);
    if (t) {
      memcpy(t, text, len);
      t[len] = 0;
    }
    cJSON_AddStringToObject(o, "text", t ? t : "");
    free(t);
  }
  char *line = cJSON_PrintUnformatted(o);
  if (line) puts(line);
  free(line);
  cJSON_Delete(o);
}

static int run_jsonl(const char *tpath, const char *file, const fg_jinja_opts *jo) {
  uint8_t *buf = NULL;
  size_t len = 0;
  if (fg_cli_read_input(file, 0, &buf, &len)) return fg_cli_report("chat-template", fg_cli_chat_shown(file)), 1;
  char *cur_path = NULL;
  fg_jinja *j = NULL;
  fg_status cs = FG_OK;
  char cerr[1024] = "";
  int rc = 0;
  size_t lineno = 0;
  for (size_t at = 0; !rc && at < len;) {
    const uint8_t *nl = memchr(buf + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - buf) : len;
    lineno++;
    cJSON *line = cJSON_ParseWithLength((const char *)buf + at, end - at);
    at = end + 1;
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(line, "context"),
                *tp = cJSON_GetObjectItemCaseSensitive(line, "template");
    const char *want = cJSON_IsString(tp) ? tp->valuestring : tpath;
    if (!cJSON_IsObject(ctx) || !want) {
      fg_cli_fail("chat-template", fg_cli_chat_shown(file), "line %zu: expected {\"context\": {...}} (and a template)", lineno);
      rc = 1;
    } else {
      if (!cur_path || strcmp(cur_path, want) != 0) { /* compile once per run of lines on one template */
        fg_jinja_free(j);
        j = NULL;
        free(cur_path);
        cur_path = strdup(want);
        char *text = NULL;
        size_t tl = 0;
        if (load_template(want, &text, &tl)) rc = 1;
        else if ((cs = fg_jinja_compile(text, tl, &j)) != FG_OK) snprintf(cerr, sizeof cerr, "%s", fg_last_error());
        free(text);
      }
      char *cj = rc ? NULL : cJSON_PrintUnformatted(ctx), *out = NULL;
      size_t olen = 0;
      if (!rc && !cj) {
        fg_cli_fail("chat-template", NULL, "out of memory");
        rc = 1;
      } else if (!rc && cs) {
        fg_fail(cs, "%s", cerr);
        print_result(cs, NULL, 0);
      } else if (!rc) {
        fg_status s = fg_jinja_render(j, cj, strlen(cj), jo, &out, &olen);
        print_result(s, out, olen);
        fg_jinja_free_text(out);
      }
      free(cj);
    }
    cJSON_Delete(line);
  }
  fg_jinja_free(j);
  free(cur_path);
  free(buf);
  return rc;
}

int fg_cmd_chat_template(int argc, char **argv) {
  const char *path = NULL, *messages = NULL, *vars = NULL, *bos = NULL, *jl = NULL, *now = NULL;
  bool gen = false, no_think = false;
  const fg_cli_opt opts[] = {{"--messages", &messages, NULL}, {"--vars", &vars, NULL},
                             {"--add-generation-prompt", NULL, &gen}, {"--no-think", NULL, &no_think},
                             {"--bos", &bos, NULL},          {"--jsonl", &jl, NULL},
                             {"--now", &now, NULL}};
  const char *const pos_names[] = {"TEMPLATE"};
  fg_cli_spec spec = {"chat-template", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, &path, 1, 1, 0};
  int prc = fg_cli_parse(&spec, argc, argv);
  if (prc != FG_CLI_GO) return prc;
  if (!path && !jl) return fg_cli_usage_error(&spec, "TEMPLATE", "missing (only --jsonl lines may name their own)");
  if ((messages != NULL) == (jl != NULL))
    return fg_cli_usage_error(&spec, messages ? "--jsonl" : "--messages", "give exactly one of --messages and --jsonl");
  if (jl && (vars || gen || no_think || bos))
    return fg_cli_usage_error(&spec, vars ? "--vars" : gen ? "--add-generation-prompt" : no_think ? "--no-think" : "--bos",
                              "goes with --messages (a --jsonl line's context gives every variable)");
  fg_jinja_opts jo = {0};
  uint64_t t = 0;
  if (now && (!fg_cli_parse_u64(now, 10, &t) || t == 0 || t > INT64_MAX))
    return fg_cli_usage_error(&spec, "--now", "%s: expected seconds since the epoch, above 0", now);
  jo.now = (int64_t)t;
  if (jl) return run_jsonl(path, jl, &jo);
  char *text = NULL, *prompt = NULL;
  size_t tl = 0, plen = 0, ml = 0, vl = 0;
  uint8_t *mbuf = NULL, *vbuf = NULL;
  int rc = 1;
  if (load_template(path, &text, &tl)) goto done;
  if (fg_cli_read_input(messages, 0, &mbuf, &ml)) {
    fg_cli_report("chat-template", fg_cli_chat_shown(messages));
    goto done;
  }
  if (vars && fg_cli_read_input(vars, 0, &vbuf, &vl)) {
    fg_cli_report("chat-template", vars);
    goto done;
  }
  fg_chat_opts o = {.add_generation_prompt = gen, .no_think = no_think, .bos_token = bos};
  if (fg_chat_render_template_json(text, tl, (const char *)mbuf, ml, (const char *)vbuf, vl, &o, &prompt, &plen)) {
    fg_cli_report("chat-template", path);
    goto done;
  }
  fwrite(prompt, 1, plen, stdout);
  putchar('\n');
  rc = 0;
done:
  fg_chat_free(prompt);
  free(text);
  free(mbuf);
  free(vbuf);
  return rc;
}
