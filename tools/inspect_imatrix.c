/* forgia inspect on an importance matrix (forgia/imatrix.h), legacy .dat or GGUF: its
 * entries as llama-quantize reads them, the chunks and the datasets. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "forgia/imatrix.h"
#include "inspect.h"
#include "util_json.h"
#include "util_report.h"
#include "util_text.h"

/* Readable output lists at most this many entries without --full. */
#define LIST_LIMIT 64

bool fg_cli_gguf_is_imatrix(const fg_gguf_file *f) {
  fg_gguf_str t;
  return fg_gguf_key_index(f, "imatrix.chunk_count") >= 0 || fg_gguf_key_index(f, "imatrix.datasets") >= 0 ||
         (fg_gguf_get_str(f, "general.type", &t) == FG_OK && t.len == 7 && !memcmp(t.ptr, "imatrix", 7));
}

static cJSON *json(const char *path, const fg_imatrix *m) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "format", "imatrix");
  cJSON_AddStringToObject(r, "container", fg_imatrix_format_of(m) == FG_IMATRIX_GGUF ? "gguf" : "dat");
  cJSON_AddItemToObject(r, "path", fg_cli_json_bytes(path, strlen(path)));
  cJSON_AddItemToObject(r, "chunk_count", fg_cli_json_i64(fg_imatrix_chunk_count(m)));
  cJSON_AddItemToObject(r, "chunk_size", fg_cli_json_i64(fg_imatrix_chunk_size(m)));
  cJSON *ds = cJSON_AddArrayToObject(r, "datasets");
  for (size_t i = 0; i < fg_imatrix_dataset_count(m); i++) {
    const char *d = fg_imatrix_dataset(m, i);
    cJSON_AddItemToArray(ds, fg_cli_json_bytes(d, strlen(d)));
  }
  cJSON *es = cJSON_AddArrayToObject(r, "entries");
  for (size_t i = 0; i < fg_imatrix_count(m); i++) {
    fg_imatrix_entry e;
    if (fg_imatrix_entry_at(m, i, &e) != FG_OK) break;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "name", fg_cli_json_bytes(e.name, strlen(e.name)));
    cJSON_AddItemToObject(o, "values", fg_cli_json_i64(e.n_values));
    cJSON_AddItemToObject(o, "experts", fg_cli_json_i64(e.n_counts));
    cJSON_AddItemToArray(es, o);
  }
  return r;
}

static void print(const char *path, const fg_imatrix *m, bool full) {
  const size_t n = fg_imatrix_count(m);
  fg_cli_puts_escaped(stdout, path, 0);
  printf(": imatrix (%s), %zu entries", fg_imatrix_format_of(m) == FG_IMATRIX_GGUF ? "GGUF" : "legacy .dat", n);
  if (fg_imatrix_chunk_count(m)) printf(", %lld chunks", (long long)fg_imatrix_chunk_count(m));
  if (fg_imatrix_chunk_size(m)) printf(" of %lld tokens", (long long)fg_imatrix_chunk_size(m));
  printf("\n");
  for (size_t i = 0; i < fg_imatrix_dataset_count(m); i++) {
    printf(i ? ", " : "datasets: ");
    fg_cli_puts_escaped(stdout, fg_imatrix_dataset(m, i), 0);
    if (i + 1 == fg_imatrix_dataset_count(m)) printf("\n");
  }
  printf("entries (name, values, experts):\n");
  for (size_t i = 0; i < n; i++) {
    if (!full && i == LIST_LIMIT) {
      printf("  ... %zu more (--full lists them)\n", n - i);
      break;
    }
    fg_imatrix_entry e;
    if (fg_imatrix_entry_at(m, i, &e) != FG_OK) break;
    printf("  ");
    fg_cli_puts_escaped(stdout, e.name, 40);
    printf(" %10lld  %lld\n", (long long)e.n_values, (long long)e.n_counts);
  }
}

/* The reader's messages read "imatrix PATH: PROBLEM"; the CLI's line puts the file first. */
static void report(const char *path) {
  const char *msg = fg_last_error(), *p = strstr(msg, path);
  size_t n = strlen(path);
  if (p && p > msg && p[-1] == ' ' && !memchr(msg, ':', (size_t)(p - msg)) && p[n] == ':' && p[n + 1] == ' ')
    fg_cli_fail("inspect", path, "%.*s: %s", (int)(p - msg - 1), msg, p + n + 2);
  else
    fg_cli_report("inspect", path);
}

int fg_cli_inspect_imatrix(const char *path, const fg_cli_inspect_opts *o) {
  fg_imatrix *m = NULL;
  if (fg_imatrix_open(path, &m) != FG_OK) {
    report(path);
    return 1;
  }
  int rc = 0;
  if (o->json) rc = fg_cli_json_print("inspect", path, json(path, m));
  else print(path, m, o->full);
  fg_imatrix_close(m);
  return rc;
}
