/* CLI helper: chat prompts for tokenize, generate and chat: the messages file, the renderer
 * (a built-in by name, the checkpoint's own template, or its architecture's), the BOS text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_chat.h"
#include "util_file.h"
#include "util_report.h"

const char fg_cli_chat_builtin_names[] = "smollm2, lfm2, qwen2.5, qwen3, qwen3.5, llama3, llama3.1, gemma2, gemma3";

/* The text of token id; NULL when id < 0 (or it does not decode). */
static char *token_text(const fg_tokenizer *t, int32_t id) {
  char *s = NULL;
  size_t n = 0;
  if (id < 0 || fg_tokenizer_decode(t, &id, 1, &s, &n)) return NULL;
  return s;
}

/* The BOS token's text, as the template's bos_token variable ("" when the vocabulary has none). */
char *fg_cli_chat_bos(const fg_tokenizer *t) { return token_text(t, fg_tokenizer_bos(t)); }

/* An input as messages name it: "-" is standard input. */
const char *fg_cli_chat_shown(const char *file) { return strcmp(file, "-") == 0 ? "standard input" : file; }

/* MESSAGES.json: [{"role": ..., "content": ...}, ...], other keys (tool_calls, ...) and
 * non-string contents (lists of parts) kept for the template in the raw text. */
int fg_cli_chat_messages(const char *cmd, const char *file, cJSON **root, fg_chat_msg **msgs, size_t *n, char **raw,
                         size_t *raw_len) {
  uint8_t *buf = NULL;
  size_t len = 0;
  if (fg_cli_read_input(file, 0, &buf, &len)) {
    fg_cli_report(cmd, fg_cli_chat_shown(file));
    return 1;
  }
  file = fg_cli_chat_shown(file);
  *root = cJSON_ParseWithLength((const char *)buf, len);
  if (raw) {
    *raw = (char *)buf;
    *raw_len = len;
  } else {
    free(buf);
  }
  if (!cJSON_IsArray(*root)) {
    fg_cli_fail(cmd, file, "not a JSON array of {\"role\", \"content\"} messages");
    return 1;
  }
  *n = (size_t)cJSON_GetArraySize(*root);
  *msgs = calloc(*n ? *n : 1, sizeof **msgs);
  if (!*msgs) {
    fg_cli_fail(cmd, file, "out of memory");
    return 1;
  }
  size_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, *root) {
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "role"), *c = cJSON_GetObjectItemCaseSensitive(e, "content");
    if (!cJSON_IsString(r) || (!raw && !cJSON_IsString(c))) {
      fg_cli_fail(cmd, file, raw ? "message %zu: needs a string \"role\"" : "message %zu: needs string \"role\" and \"content\"",
                  i);
      return 1;
    }
    (*msgs)[i].role = r->valuestring;
    (*msgs)[i].content = cJSON_IsString(c) ? c->valuestring : NULL; /* NULL: only the template can render it */
    i++;
  }
  return 0;
}

/* --template NAME is first a built-in renderer's name, then the file's template of that name;
 * without it, the file's own template, else its architecture's renderer (said in a note). */
int fg_cli_chat_pick(const char *cmd, const char *path, const char *name, fg_cli_chat *p) {
  if (name && fg_chat_family_from_name(name, &p->family) == FG_OK) {
    p->builtin = true;
    return 0;
  }
  fg_status s = fg_chat_template_from_path(path, name, &p->tmpl, &p->tlen);
  if (s == FG_OK) return 0;
  if (s != FG_ERR_NOT_FOUND) {
    fg_cli_report(cmd, path);
    return 1;
  }
  char why[512];
  snprintf(why, sizeof why, "%s", fg_last_error());
  if (name) {
    fg_cli_fail(cmd, "--template", "%s: no built-in renderer of that name (%s), and %s", name, fg_cli_chat_builtin_names,
                why);
    return 1;
  }
  char *arch = NULL;
  if (fg_chat_arch_from_path(path, &arch) != FG_OK) {
    fg_cli_fail(cmd, NULL, "%s, and no architecture to choose a renderer by (%s): name one with --template (%s)",
                why, fg_last_error(), fg_cli_chat_builtin_names);
    return 1;
  }
  if (fg_chat_family_for_arch(arch, &p->family) != FG_OK) {
    fg_cli_fail(cmd, path,
                "carries no chat template, and its architecture %s has no built-in renderer of its own: name one with "
                "--template (%s)",
                arch, fg_cli_chat_builtin_names);
    fg_chat_free(arch);
    return 1;
  }
  p->builtin = true;
  p->arch = arch;
  return 0;
}

fg_status fg_cli_chat_render(const fg_cli_chat *p, const fg_tokenizer *t, const fg_chat_msg *msgs, size_t n,
                             const fg_chat_opts *o, char **out, size_t *len) {
  if (p->builtin) {
    fg_chat_opts oo = *o;
    char *bos = t ? fg_cli_chat_bos(t) : NULL;
    oo.bos_token = bos;
    fg_status s = fg_chat_render(p->family, msgs, n, &oo, out, len);
    fg_tokenizer_free_text(bos);
    return s;
  }
  /* the file's template: as JSON messages, the way tokenize and generate hand them over */
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; arr && i < n; i++) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", msgs[i].role ? msgs[i].role : "");
    cJSON_AddStringToObject(m, "content", msgs[i].content ? msgs[i].content : "");
    cJSON_AddItemToArray(arr, m);
  }
  char *raw = arr ? cJSON_PrintUnformatted(arr) : NULL;
  cJSON_Delete(arr);
  if (!raw) return fg_fail(FG_ERR_NOMEM, "chat template: out of memory");
  fg_status s = fg_cli_chat_render_json(p, t, raw, strlen(raw), msgs, n, o, out, len);
  free(raw);
  return s;
}

fg_status fg_cli_chat_render_json(const fg_cli_chat *p, const fg_tokenizer *t, const char *raw, size_t raw_len,
                                  const fg_chat_msg *msgs, size_t n, const fg_chat_opts *o, char **out, size_t *len) {
  if (p->builtin) {
    for (size_t i = 0; i < n; i++)
      if (!msgs[i].content)
        return fg_fail(FG_ERR_INVALID_ARG,
                       "message %zu: the built-in %s renderer takes text contents only; render the checkpoint's own "
                       "template for tool calls and content parts",
                       i, fg_chat_family_name(p->family));
    return fg_cli_chat_render(p, t, msgs, n, o, out, len);
  }
  fg_chat_opts oo = *o;
  char *bos = t ? fg_cli_chat_bos(t) : NULL, *eos = t ? token_text(t, fg_tokenizer_eos(t)) : NULL;
  oo.bos_token = bos;
  /* eos_token as Hugging Face passes it, for the templates the interpreter runs (the built-in
   * renderers' templates never print it, so recognised ones keep the fast path) */
  char *extra = NULL;
  size_t elen = 0;
  fg_chat_family fam;
  if (eos && fg_chat_recognize(p->tmpl, p->tlen, &fam) != FG_OK) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "eos_token", eos);
    extra = cJSON_PrintUnformatted(x);
    cJSON_Delete(x);
    elen = extra ? strlen(extra) : 0;
  }
  fg_status s = fg_chat_render_template_json(p->tmpl, p->tlen, raw, raw_len, extra, elen, &oo, out, len);
  free(extra);
  fg_tokenizer_free_text(bos);
  fg_tokenizer_free_text(eos);
  return s;
}

void fg_cli_chat_note(const char *cmd, const char *path, const fg_cli_chat *p) {
  if (p->arch)
    fg_cli_fail(cmd, "note", "%s carries no chat template; rendering with the built-in %s renderer, its architecture's (%s)",
                path, fg_chat_family_name(p->family), p->arch);
}

void fg_cli_chat_free(fg_cli_chat *p) {
  fg_chat_free(p->tmpl);
  fg_chat_free(p->arch);
  memset(p, 0, sizeof *p);
}
