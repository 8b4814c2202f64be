/* Where a chat template comes from: a GGUF's tokenizer.chat_template (or a named
 * tokenizer.chat_template.<name>), or a Hugging Face directory's tokenizer_config.json
 * chat_template (a string or a list of named templates) and chat_template.jinja. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forgia/chat.h"
#include "core/text.h"
#include "forgia/mapping.h"
#include "formats/tokenizer_internal.h"

/* A template file or config is read whole; the cap keeps a wrong path from being slurped. */
#define CHAT_FILE_MAX ((size_t)64 << 20)

fg_status fg_chat_template_from_gguf(const fg_gguf_file *f, const char *name, fg_gguf_str *out) {
  if (!f || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_template_from_gguf: NULL argument");
  char key[256];
  if (name && (size_t)snprintf(key, sizeof key, "tokenizer.chat_template.%s", name) >= sizeof key)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: template name \"%.40s...\" is too long", fg_gguf_path(f), name);
  if (!name) snprintf(key, sizeof key, "tokenizer.chat_template");
  fg_status s = fg_gguf_get_str(f, key, out);
  if (s == FG_ERR_NOT_FOUND) return fg_fail(s, "%s: no %s (the file carries no such chat template)", fg_gguf_path(f), key);
  if (s) return fg_fail(s, "%s: %s is not a string", fg_gguf_path(f), key);
  return FG_OK;
}

static fg_status read_all(const char *path, char **out, size_t *len) {
  fg_mapping *m = NULL;
  fg_status s = fg_mapping_open(path, FG_MAP_READ, &m);
  if (s) return s;
  size_t n = fg_mapping_size(m);
  if (n > CHAT_FILE_MAX) {
    fg_mapping_release(m);
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu bytes, more than a template or config's %zu", path, n, CHAT_FILE_MAX);
  }
  char *p = malloc(n + 1);
  if (!p) {
    fg_mapping_release(m);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  }
  if (n) memcpy(p, fg_mapping_data(m), n);
  p[n] = 0;
  fg_mapping_release(m);
  *out = p;
  *len = n;
  return FG_OK;
}

static fg_status dup_out(const char *s, char **out, size_t *len) {
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (!p) return fg_fail(FG_ERR_NOMEM, "chat: out of memory");
  memcpy(p, s, n + 1);
  *out = p;
  if (len) *len = n;
  return FG_OK;
}

/* tokenizer_config.json's chat_template: a string, or [{"name": ..., "template": ...}]. */
static fg_status from_config(const char *path, const cJSON *ct, const char *name, char **out, size_t *len) {
  if (cJSON_IsString(ct)) {
    if (name)
      return fg_fail(FG_ERR_NOT_FOUND, "%s: chat_template is a single template; there is no template named \"%s\"", path,
                     name);
    return dup_out(ct->valuestring, out, len);
  }
  if (!cJSON_IsArray(ct)) return fg_fail(FG_ERR_TYPE, "%s: chat_template is neither a string nor a list", path);
  const char *want = name ? name : "default";
  const cJSON *e;
  cJSON_ArrayForEach(e, ct) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "template");
    if (!cJSON_IsString(n) || !cJSON_IsString(t))
      return fg_fail(FG_ERR_TYPE, "%s: an entry of chat_template lacks a string name or template", path);
    if (strcmp(n->valuestring, want) == 0) return dup_out(t->valuestring, out, len);
  }
  return fg_fail(FG_ERR_NOT_FOUND, "%s: chat_template has no template named \"%s\"", path, want);
}

fg_status fg_chat_template_from_hf_dir(const char *dir, const char *name, char **out, size_t *len) {
  if (!dir || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_template_from_hf_dir: NULL argument");
  char *cfg_path = fg_path_join(dir, "tokenizer_config.json"), *jinja = fg_path_join(dir, "chat_template.jinja");
  fg_status s = FG_OK;
  char *text = NULL;
  size_t n = 0;
  cJSON *cfg = NULL;
  struct stat st;
  if (!cfg_path || !jinja) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", dir);
    goto done;
  }
  if (stat(cfg_path, &st) == 0) {
    if ((s = fg_tok_read_json(cfg_path, &cfg))) goto done;
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    if (ct && !cJSON_IsNull(ct)) {
      s = from_config(cfg_path, ct, name, out, len);
      goto done;
    }
  }
  if (!name && stat(jinja, &st) == 0) {
    if ((s = read_all(jinja, &text, &n))) goto done;
    *out = text;
    if (len) *len = n;
    text = NULL;
    goto done;
  }
  s = fg_fail(FG_ERR_NOT_FOUND, "%s: no chat template%s%s%s (tokenizer_config.json's chat_template%s)", dir,
              name ? " named \"" : "", name ? name : "", name ? "\"" : "", name ? "" : " or chat_template.jinja");
done:
  cJSON_Delete(cfg);
  free(text);
  free(cfg_path);
  free(jinja);
  return s;
}

fg_status fg_chat_template_from_path(const char *path, const char *name, char **out, size_t *len) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_template_from_path: NULL argument");
  struct stat st;
  if (stat(path, &st) != 0) return fg_fail(FG_ERR_NOT_FOUND, "%s: no such file or directory", path);
  if (S_ISDIR(st.st_mode)) return fg_chat_template_from_hf_dir(path, name, out, len);
  fg_gguf_file *f = NULL;
  fg_status s = fg_gguf_open(path, FG_MAP_MMAP, &f);
  if (s) return s;
  fg_gguf_str t;
  s = fg_chat_template_from_gguf(f, name, &t);
  if (!s) {
    char *p = malloc(t.len + 1);
    if (!p) {
      s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
    } else {
      memcpy(p, t.ptr, t.len);
      p[t.len] = 0;
      *out = p;
      if (len) *len = t.len;
    }
  }
  fg_gguf_close(f);
  return s;
}
