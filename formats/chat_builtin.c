/* The built-in renderers chosen without a template text: by their own name, or by the
 * architecture of a checkpoint that carries no template. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/text.h"
#include "forgia/chat.h"
#include "formats/tokenizer_internal.h"

/* The names as fg_chat_family_name gives them, in enum order, for messages. */
static const char all_names[] = "smollm2, lfm2, qwen2.5, qwen3, qwen3.5, llama3, llama3.1, gemma2, gemma3";

fg_status fg_chat_family_from_name(const char *name, fg_chat_family *out) {
  if (!name || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_family_from_name: NULL argument");
  for (int f = FG_CHAT_SMOLLM2; f <= FG_CHAT_GEMMA3; f++) {
    if (strcmp(name, fg_chat_family_name((fg_chat_family)f)) == 0) {
      *out = (fg_chat_family)f;
      return FG_OK;
    }
  }
  return fg_fail(FG_ERR_NOT_FOUND, "chat: \"%.80s\" is no built-in renderer (%s)", name, all_names);
}

/* Only architectures whose instruct checkpoints all use one family's template: "llama" (Llama
 * 2, 3, 3.1 and SmolLM2 alike), "qwen2" (Qwen 2 and 2.5), "lfm2" (LFM2 and LFM2.5) and
 * "qwen3moe" (Qwen3 and Qwen3-Coder) are left out, since a wrong guess renders silently wrong
 * prompts. GGUF general.architecture names first, then Hugging Face model_type names. */
static const struct {
  const char *arch;
  fg_chat_family family;
} by_arch[] = {
    {"gemma2", FG_CHAT_GEMMA2}, {"gemma3", FG_CHAT_GEMMA3},    {"qwen3", FG_CHAT_QWEN3},
    {"qwen35", FG_CHAT_QWEN35}, {"qwen35moe", FG_CHAT_QWEN35}, {"gemma3_text", FG_CHAT_GEMMA3},
};

fg_status fg_chat_family_for_arch(const char *arch, fg_chat_family *out) {
  if (!arch || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_family_for_arch: NULL argument");
  for (size_t i = 0; i < sizeof by_arch / sizeof by_arch[0]; i++) {
    if (strcmp(arch, by_arch[i].arch) == 0) {
      *out = by_arch[i].family;
      return FG_OK;
    }
  }
  return fg_fail(FG_ERR_NOT_FOUND, "chat: architecture \"%.80s\" has no built-in renderer of its own (%s)", arch,
                 all_names);
}

static fg_status dup_str(const char *p, size_t n, const char *where, char **out) {
  char *s = malloc(n + 1);
  if (!s) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", where);
  memcpy(s, p, n);
  s[n] = 0;
  *out = s;
  return FG_OK;
}

static fg_status arch_of_hf_dir(const char *dir, char **out) {
  char *cfg_path = fg_path_join(dir, "config.json");
  if (!cfg_path) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", dir);
  cJSON *cfg = NULL;
  struct stat st;
  fg_status s;
  if (stat(cfg_path, &st) != 0) {
    s = fg_fail(FG_ERR_NOT_FOUND, "%s: no config.json to name the architecture", dir);
  } else if ((s = fg_tok_read_json(cfg_path, &cfg)) == FG_OK) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    s = cJSON_IsString(mt) ? dup_str(mt->valuestring, strlen(mt->valuestring), cfg_path, out)
                           : fg_fail(FG_ERR_NOT_FOUND, "%s: no string model_type", cfg_path);
  }
  cJSON_Delete(cfg);
  free(cfg_path);
  return s;
}

fg_status fg_chat_arch_from_path(const char *path, char **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_chat_arch_from_path: NULL argument");
  struct stat st;
  if (stat(path, &st) != 0) return fg_fail(FG_ERR_NOT_FOUND, "%s: no such file or directory", path);
  if (S_ISDIR(st.st_mode)) return arch_of_hf_dir(path, out);
  fg_gguf_file *f = NULL;
  fg_status s = fg_gguf_open(path, FG_MAP_MMAP, &f);
  if (s) return s;
  fg_gguf_str a;
  s = fg_gguf_get_str(f, "general.architecture", &a);
  if (s == FG_ERR_NOT_FOUND)
    s = fg_fail(s, "%s: no general.architecture", path);
  else if (s)
    s = fg_fail(s, "%s: general.architecture is not a string", path);
  else if (memchr(a.ptr, 0, a.len))
    s = fg_fail(FG_ERR_INVALID_ARG, "%s: general.architecture holds a NUL byte", path);
  else
    s = dup_str(a.ptr, a.len, path, out);
  fg_gguf_close(f);
  return s;
}
