/* libFuzzer target for tokenizer.json: the input up to its first '\0' is written as a Hugging
 * Face folder's tokenizer.json and opened (the fast paths or the general pipeline of
 * formats/tokenizer_hf_*.c); the rest is encoded (with and without special tokens), decoded
 * and stream-decoded. Files the reader refuses are fine; crashes, leaks, a decode and stream
 * that disagree, or an encode giving an id outside the vocabulary are not. Seeds: the
 * fixtures of tests/data/tok/hf_pipeline (.ci/run).
 *
 *   TMPDIR=/tmp/x ./fuzz_tokenizer_json -max_total_time=15 corpus seeds
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forgia/tokenizer.h"

static char dir[4096];

static int setup(void) {
  if (dir[0]) return 0;
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/fuzz_tokjson_XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    dir[0] = 0;
    return -1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (setup()) return 0;
  const uint8_t *z = memchr(data, 0, size);
  size_t jn = z ? (size_t)(z - data) : size;
  const char *text = z ? (const char *)z + 1 : "";
  size_t tn = z ? size - jn - 1 : 0;
  char path[4200];
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, jn, f);
  fclose(f);
  fg_tokenizer *t = NULL;
  if (fg_tokenizer_from_hf_dir(dir, &t) != FG_OK) return 0;
  size_t nt = fg_tokenizer_n_tokens(t);
  for (int special = 0; special < 2; special++) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (fg_tokenizer_encode(t, text, tn, special, &ids, &n) != FG_OK) continue;
    for (size_t i = 0; i < n; i++)
      if (ids[i] < 0 || (size_t)ids[i] >= nt) abort();
    char *d = NULL;
    size_t dn = 0;
    if (fg_tokenizer_decode(t, ids, n, &d, &dn) != FG_OK) abort();
    fg_tok_stream *s = NULL;
    if (fg_tok_stream_create(t, &s) != FG_OK) abort();
    char *acc = malloc(dn + 1);
    size_t an = 0;
    int bad = !acc;
    for (size_t i = 0; i < n && !bad; i++) {
      const char *b;
      size_t bn;
      if (fg_tok_stream_push(s, ids[i], &b, &bn) != FG_OK || an + bn > dn) bad = 1;
      else memcpy(acc + an, b, bn), an += bn;
    }
    const char *b;
    size_t bn;
    fg_tok_stream_finish(s, &b, &bn);
    if (!bad && (an + bn != dn || memcmp(acc, d, an) != 0 || memcmp(b, d + an, bn) != 0)) bad = 1;
    free(acc);
    fg_tok_stream_free(s);
    fg_tokenizer_free_text(d);
    fg_tokenizer_free_ids(ids);
    if (bad) abort(); /* the stream must give what decode gives */
  }
  fg_tokenizer_close(t);
  return 0;
}
