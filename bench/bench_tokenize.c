/* Encode throughput (MB of text per second, one thread) of forgia's tokenizers against the
 * Hugging Face `tokenizers` library encoding the same texts in the same run
 * (bench_tokenize_peer.py), on the committed corpus (prose, code, CJK, emoji, whitespace
 * runs, special tokens) with the Llama 3 and Qwen 2 fixtures of tests/data/tok and the
 * WordPiece, Unigram and WordLevel fixtures of tests/data/tok/hf_pipeline.
 * Each text is encoded by its own call, as a serving loop or `forgia tokenize --file` does.
 *   bench_tokenize [--python PY] [--reps N] [--size BYTES]
 * --size: bytes of text per timed run (the corpus repeated; default 4 MB). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "forgia/mapping.h"
#include "forgia/tokenizer.h"
#include "harness.h"

#define TOK_DATA FORGIA_BENCH_DIR "/../tests/data/tok/"

static void die(const char *what) {
  fprintf(stderr, "bench_tokenize: %s: %s\n", what, fg_last_error());
  exit(1);
}

static unsigned hex4(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) v = v * 16 + (unsigned)(p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
  return v;
}

/* corpus.json is one array of strings, as the golden generator writes it: the strings are
 * decoded in place (an escape is never shorter than what it stands for). The library keeps
 * its JSON parser private, so a benchmark linking a shared libforgia reads it itself. */
static size_t parse_strings(char *j, char ***out, size_t **lens) {
  size_t cap = 0, n = 0;
  *out = NULL;
  *lens = NULL;
  for (char *p = j; *p; p++) {
    if (*p != '"') continue;
    char *o = ++p, *start = o;
    while (*p != '"') {
      if (!*p) die("corpus.json: unterminated string");
      if (*p != '\\') {
        *o++ = *p++;
        continue;
      }
      char e = p[1];
      p += 2;
      if (e == 'u') {
        unsigned cp = hex4(p);
        p += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && p[0] == '\\' && p[1] == 'u') {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(p + 2) - 0xDC00);
          p += 6;
        }
        o += fg_utf8_put(cp, o);
      } else {
        *o++ = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
      }
    }
    *o = 0;
    if (n == cap) {
      cap = cap ? cap * 2 : 1024;
      *out = realloc(*out, cap * sizeof **out);
      *lens = realloc(*lens, cap * sizeof **lens);
      if (!*out || !*lens) die("out of memory");
    }
    (*out)[n] = start;
    (*lens)[n++] = (size_t)(o - start);
  }
  return n;
}

typedef struct {
  const fg_tokenizer *t;
  char **texts;
  size_t *lens;
  size_t n, reps;
  uint64_t sink;
} enc_ctx;

static void run_encode(void *p) {
  enc_ctx *c = p;
  for (size_t r = 0; r < c->reps; r++)
    for (size_t i = 0; i < c->n; i++) {
      int32_t *ids;
      size_t n;
      if (fg_tokenizer_encode(c->t, c->texts[i], c->lens[i], false, &ids, &n)) die("encode");
      c->sink += n;
      fg_tokenizer_free_ids(ids);
    }
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("tokenize", 4u << 20, argc, argv);
  const char *py = ".venv/bin/python3";
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--python") == 0) py = argv[i + 1];
  fg_mapping *m;
  if (fg_mapping_open(TOK_DATA "corpus.json", FG_MAP_READ, &m)) die("corpus");
  char *json = malloc(fg_mapping_size(m) + 1);
  if (!json) die("out of memory");
  memcpy(json, fg_mapping_data(m), fg_mapping_size(m));
  json[fg_mapping_size(m)] = 0;
  fg_mapping_release(m);
  enc_ctx c = {0};
  c.n = parse_strings(json, &c.texts, &c.lens);
  size_t bytes = 0;
  for (size_t i = 0; i < c.n; i++) bytes += c.lens[i];
  if (!bytes) die("corpus.json holds no text");
  c.reps = b.size / bytes + 1;
  double mb = (double)(bytes * c.reps) / 1e6;
  /* byte-level BPE (Llama 3, Qwen 2), then the general tokenizer.json pipeline's fixtures:
   * WordPiece with BERT's normalizer, Unigram with Metaspace, WordLevel */
  const char *names[] = {"llama3", "qwen2", "hf_pipeline/bert_wordpiece", "hf_pipeline/unigram_meta",
                         "hf_pipeline/wordlevel"};
  for (int k = 0; k < (int)(sizeof names / sizeof names[0]); k++) {
    char path[1024];
    snprintf(path, sizeof path, TOK_DATA "%s", names[k]);
    fg_tokenizer *t;
    if (fg_tokenizer_open(path, &t)) die(path);
    c.t = t;
    double s = fg_bench_time(&b, run_encode, &c);
    char cmd[2048], line[1024] = "";
    snprintf(cmd, sizeof cmd, "%s %s/bench_tokenize_peer.py %s %s %zu %d", py, FORGIA_BENCH_DIR, path,
             TOK_DATA "corpus.json", c.reps, b.reps < 3 ? 3 : b.reps);
    FILE *p = popen(cmd, "r");
    double peer = 0;
    if (p && fgets(line, sizeof line, p)) {
      char *a = strstr(line, "\"encode_s\":");
      if (a) peer = atof(a + 11);
    }
    if (p) pclose(p);
    if (peer <= 0) fprintf(stderr, "bench_tokenize: peer run failed (%s); ratio omitted\n", cmd);
    char fig[64];
    const char *short_name = strchr(names[k], '/') ? strchr(names[k], '/') + 1 : names[k];
    snprintf(fig, sizeof fig, "encode_%s_MBps", short_name);
    fg_bench_report(&b, fig, mb / s, "MB/s", "hf_tokenizers_MBps", peer > 0 ? mb / peer : 0);
    fg_tokenizer_close(t);
  }
  free(json);
  free(c.texts);
  free(c.lens);
  return c.sink == 0;
}
