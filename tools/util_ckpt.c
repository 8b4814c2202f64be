#include "util_ckpt.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static bool looks_gguf(const char *path) {
  FILE *f = fopen(path, "rb");
  char magic[4] = {0};
  bool yes = false;
  if (f) {
    yes = fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
    fclose(f);
  }
  size_t n = strlen(path);
  return yes || (n >= 5 && strcmp(path + n - 5, ".gguf") == 0);
}

fg_status fg_cli_ckpt_open(const char *path, fg_cli_ckpt *out) {
  memset(out, 0, sizeof *out);
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode) && looks_gguf(path)) {
    out->format = FG_CLI_GGUF;
    return fg_gguf_open_auto(path, &out->gguf);
  }
  out->format = FG_CLI_SAFETENSORS;
  return fg_st_dir_open(path, FG_MAP_MMAP, &out->st);
}

void fg_cli_ckpt_close(fg_cli_ckpt *c) {
  if (!c) return;
  fg_gguf_close(c->gguf);
  fg_st_dir_close(c->st);
  memset(c, 0, sizeof *c);
}

void fg_cli_report(const char *cmd, const char *path) {
  const char *msg = fg_last_error();
  /* one line: a message never spans lines, but keep it that way whatever it holds */
  char line[1200];
  snprintf(line, sizeof line, "%s", msg);
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  if (path && !strstr(line, path))
    fprintf(stderr, "forgia %s: %s: %s\n", cmd, path, line);
  else
    fprintf(stderr, "forgia %s: %s\n", cmd, line);
}
