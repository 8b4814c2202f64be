/* Chat-template rendering (renders per second, one thread) of forgia's Jinja interpreter
 * against jinja2 rendering the same template on the same context in the same run
 * (bench_jinja_peer.py, jinja2 set up as Hugging Face does), for real templates of
 * tests/data/chat on a short conversation (system, two exchanges) and a long one (a system
 * turn and 400 turns of ~300 bytes). Two figures each: render only (the template compiled
 * once) and compile + render.
 *   bench_jinja [--python PY] [--reps N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/jinja.h"
#include "forgia/mapping.h"
#include "harness.h"

#define CHAT_DATA FORGIA_BENCH_DIR "/../tests/data/chat/"

static void die(const char *what) {
  fprintf(stderr, "bench_jinja: %s: %s\n", what, fg_last_error());
  exit(1);
}

typedef struct run_ctx {
  const char *tmpl, *ctx;
  size_t tlen, clen;
  const fg_jinja *compiled;
  int renders;
  size_t sink;
} run_ctx;

static void render_only(void *p) {
  run_ctx *r = p;
  for (int i = 0; i < r->renders; i++) {
    char *out;
    size_t n;
    if (fg_jinja_render(r->compiled, r->ctx, r->clen, NULL, &out, &n)) die("render");
    r->sink += n;
    fg_jinja_free_text(out);
  }
}

static void compile_render(void *p) {
  run_ctx *r = p;
  for (int i = 0; i < r->renders; i++) {
    fg_jinja *j;
    char *out;
    size_t n;
    if (fg_jinja_compile(r->tmpl, r->tlen, &j) || fg_jinja_render(j, r->ctx, r->clen, NULL, &out, &n)) die("compile");
    r->sink += n;
    fg_jinja_free_text(out);
    fg_jinja_free(j);
  }
}

/* The conversation's JSON: a system turn and turns alternating user/assistant. */
static char *conversation(int turns, size_t *len) {
  size_t cap = 1024 + (size_t)turns * 512, n = 0;
  char *s = malloc(cap);
  if (!s) die("out of memory");
  n += (size_t)snprintf(s + n, cap - n,
                        "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_generation_prompt\": true, \"messages\": "
                        "[{\"role\": \"system\", \"content\": \"You are a helpful assistant. Answer briefly.\"}");
  for (int i = 0; i < turns; i++)
    n += (size_t)snprintf(s + n, cap - n,
                          ", {\"role\": \"%s\", \"content\": \"Turn %d: the quick brown fox jumps over the lazy dog, "
                          "then explains why in a few sentences.\\nSecond line with numbers 12345 and unicode "
                          "\\u00e9\\u4e2d\\u6587. A longer tail of text follows so the turn holds about three hundred "
                          "bytes, as a chat turn often does in a real conversation.\"}",
                          i % 2 ? "assistant" : "user", i);
  n += (size_t)snprintf(s + n, cap - n, "]}");
  *len = n;
  return s;
}

static char *slurp(const char *path, size_t *len) {
  fg_mapping *m;
  if (fg_mapping_open(path, FG_MAP_READ, &m)) die(path);
  *len = fg_mapping_size(m);
  char *s = malloc(*len + 1);
  if (!s) die("out of memory");
  memcpy(s, fg_mapping_data(m), *len);
  s[*len] = 0;
  fg_mapping_release(m);
  return s;
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("jinja", 0, argc, argv);
  const char *py = ".venv/bin/python3";
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--python") == 0) py = argv[i + 1];
  static const char *const templates[][2] = {{"qwen3", "templates/qwen3-0.6b.jinja"},
                                             {"llama3.1", "templates/llama3.1-8b-instruct.jinja"},
                                             {"gemma3", "templates/gemma3-4b-it.jinja"},
                                             {"smollm3", "unrecognised/smollm3-3b.jinja"},
                                             {"qwen3_coder", "unrecognised/qwen3-coder.jinja"}};
  static const struct { const char *name; int turns, renders; } convs[] = {{"short", 4, 200}, {"long", 400, 4}};
  size_t sink = 0;
  for (size_t k = 0; k < sizeof templates / sizeof templates[0]; k++) {
    char path[1024];
    snprintf(path, sizeof path, CHAT_DATA "%s", templates[k][1]);
    run_ctx r = {0};
    r.tmpl = slurp(path, &r.tlen);
    fg_jinja *j;
    if (fg_jinja_compile(r.tmpl, r.tlen, &j)) die(path);
    r.compiled = j;
    for (size_t c = 0; c < sizeof convs / sizeof convs[0]; c++) {
      char *ctx = conversation(convs[c].turns, &r.clen);
      r.ctx = ctx;
      r.renders = convs[c].renders;
      double s_render = fg_bench_time(&b, render_only, &r) / r.renders;
      double s_both = fg_bench_time(&b, compile_render, &r) / r.renders;
      char ctx_path[] = "/tmp/bench_jinja_ctx_XXXXXX";
      int fd = mkstemp(ctx_path);
      FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
      if (!f || fwrite(ctx, 1, r.clen, f) != r.clen || fclose(f)) die("temporary context file");
      char cmd[4096], line[1024] = "";
      snprintf(cmd, sizeof cmd, "%s %s/bench_jinja_peer.py %s %s %d %d", py, FORGIA_BENCH_DIR, path, ctx_path,
               r.renders, b.reps < 3 ? 3 : b.reps);
      FILE *p = popen(cmd, "r");
      double peer = 0, peer_both = 0;
      if (p && fgets(line, sizeof line, p)) {
        char *a = strstr(line, "\"render_s\":"), *e = strstr(line, "\"compile_render_s\":");
        if (a) peer = atof(a + 11);
        if (e) peer_both = atof(e + 19);
      }
      if (p) pclose(p);
      remove(ctx_path);
      if (peer <= 0) fprintf(stderr, "bench_jinja: peer run failed (%s); ratio omitted\n", cmd);
      char fig[96];
      snprintf(fig, sizeof fig, "render_%s_%s_per_s", templates[k][0], convs[c].name);
      fg_bench_report(&b, fig, 1 / s_render, "renders/s", "jinja2_renders_per_s", peer > 0 ? 1 / peer : 0);
      snprintf(fig, sizeof fig, "compile_render_%s_%s_per_s", templates[k][0], convs[c].name);
      fg_bench_report(&b, fig, 1 / s_both, "renders/s", "jinja2_compile_renders_per_s", peer_both > 0 ? 1 / peer_both : 0);
      free(ctx);
    }
    sink += r.sink;
    fg_jinja_free(j);
    free((char *)r.tmpl);
  }
  return sink == 0;
}
