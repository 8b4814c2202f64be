/* forgia inspect on a lone file that is not a model checkpoint: which kind it is, told from
 * its first bytes (inspect.h), and the optimizer-frame view. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forgia/optim_frame.h"
#include "inspect.h"
#include "inspect_frame.h"
#include "util_file.h"
#include "util_json.h"
#include "util_report.h"
#include "util_text.h"

/* Enough to see past leading whitespace to a JSON text's first byte. */
#define HEAD_BYTES 4096
/* A JSON text is read whole and parsed into a tree (inspect_json_text.c bounds its values):
 * tokenizer.json files run to tens of MiB. */
#define JSON_MAX_BYTES (256ull << 20)

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Index of the first byte past whitespace (and a UTF-8 byte-order mark), from `from`. */
static size_t skip_space(const unsigned char *b, size_t n, size_t from) {
  size_t i = from;
  if (i + 3 <= n && b[i] == 0xEF && b[i + 1] == 0xBB && b[i + 2] == 0xBF) i += 3;
  while (i < n && is_space(b[i])) i++;
  return i;
}

static bool magic_char(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

static uint64_t le64(const unsigned char *b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | b[i];
  return v;
}

static int32_t le32(const unsigned char *b) {
  uint32_t v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  int32_t s;
  memcpy(&s, &v, 4);
  return s;
}

/* safetensors: a little-endian u64 header length that fits the file, then the header's '{'.
 * (A text file's first eight bytes read as a length far beyond any file.) */
static bool looks_safetensors(const unsigned char *h, size_t got, uint64_t size) {
  if (got < 9 || size < 8 || le64(h) > size - 8) return false;
  size_t i = skip_space(h, got, 8);
  return i < got && h[i] == '{';
}

/* llama-imatrix's legacy .dat: i32 entry count, then the first entry's i32 name length and
 * name. Counts that fit the file and a name of text bytes. */
static bool looks_legacy_imatrix(const unsigned char *h, size_t got, uint64_t size) {
  if (got < 9) return false;
  int32_t n = le32(h), nl = le32(h + 4);
  /* an entry is at least name length, one name byte, ncall, nval and one value: 17 bytes */
  if (n < 1 || (uint64_t)n > size / 17 || nl < 1 || (uint64_t)nl > size - 8) return false;
  for (size_t i = 8; i < got && i < 8 + (size_t)nl; i++)
    if (h[i] < 0x20 || h[i] == 0x7f) return false;
  return true;
}

/* What the first bytes are, for the one line that says the file is none of the kinds. */
static void describe_head(const unsigned char *h, size_t got, char *out, size_t cap) {
  size_t k = 0, n = got < 8 ? got : 8;
  for (size_t i = 0; i < n && k + 4 < cap; i++) k += (size_t)snprintf(out + k, cap - k, "%s%02x", i ? " " : "", h[i]);
  char text[8 * 4 + 1];
  fg_cli_escape_into(text, sizeof text, (const char *)h, n);
  snprintf(out + k, cap - k, " (\"%s\")", text);
}

static int read_head(const char *path, unsigned char *h, size_t cap, size_t *got) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  ssize_t r;
  size_t n = 0;
  while (n < cap && ((r = pread(fd, h + n, cap - n, (off_t)n)) > 0 || (r < 0 && errno == EINTR)))
    if (r > 0) n += (size_t)r;
  close(fd);
  *got = n;
  return 0;
}

int fg_cli_inspect_file(const char *path, const fg_cli_inspect_opts *o) {
  struct stat st;
  /* what the checkpoint reader takes, and its errors for what cannot be read at all */
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || ends_with(path, ".safetensors") ||
      ends_with(path, ".index.json"))
    return -1;
  unsigned char h[HEAD_BYTES];
  size_t got = 0;
  if (read_head(path, h, sizeof h, &got) != 0) return -1;
  const uint64_t size = (uint64_t)st.st_size;
  /* Fucina's magics: "FZ", then two of A-Z 0-9 ("FZA4", "FZAD"; forgia/optim_frame.h) */
  const bool frame = got >= 4 && h[0] == 'F' && h[1] == 'Z' && magic_char(h[2]) && magic_char(h[3]);
  if (!frame && ((got >= 4 && memcmp(h, "GGUF", 4) == 0) || looks_safetensors(h, got, size))) return -1;
  const size_t j = skip_space(h, got, 0);
  const bool json = !frame && j < got && (h[j] == '{' || h[j] == '[');
  if (json && size > JSON_MAX_BYTES) {
    fg_cli_fail("inspect", path, "a JSON text of %llu bytes, more than the %llu inspect reads", (unsigned long long)size,
                JSON_MAX_BYTES);
    return 1;
  }
  if (frame || json) {
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (fg_cli_read_file(path, frame ? 0 : JSON_MAX_BYTES, &bytes, &len) != FG_OK) {
      fg_cli_report("inspect", path);
      return 1;
    }
    int rc = frame ? fg_cli_inspect_frame_file(path, bytes, len, o)
                   : fg_cli_inspect_json_file(path, (const char *)bytes, len, o);
    free(bytes);
    return rc;
  }
  if (looks_legacy_imatrix(h, got, size)) return fg_cli_inspect_imatrix(path, o);
  if (size == 0) {
    fg_cli_fail("inspect", path, "empty file (0 bytes): not a GGUF, safetensors, optimizer frame, imatrix or JSON file");
    return 1;
  }
  char head[128];
  describe_head(h, got, head, sizeof head);
  fg_cli_fail("inspect", path,
              "%llu bytes starting %s: not a GGUF, safetensors, optimizer frame, imatrix or JSON file",
              (unsigned long long)size, head);
  return 1;
}

int fg_cli_inspect_frame_file(const char *path, const unsigned char *bytes, size_t len, const fg_cli_inspect_opts *o) {
  fg_oframe *f = NULL;
  if (fg_optim_frame_parse(bytes, len, &f) != FG_OK) {
    fg_cli_report("inspect", path);
    return 1;
  }
  int rc = 0;
  if (o->json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "optimizer_frame");
    cJSON_AddItemToObject(root, "path", fg_cli_json_bytes(path, strlen(path)));
    cJSON_AddItemToObject(root, "bytes", fg_cli_json_u64(len));
    cJSON_AddItemToObject(root, "frame", fg_cli_frame_json(f));
    rc = fg_cli_json_print("inspect", path, root);
  } else {
    fg_cli_puts_escaped(stdout, path, 0);
    printf(": optimizer frame (Fucina saveState), %zu bytes\n", len);
    fg_cli_frame_print(f, 2, o->full);
  }
  fg_optim_frame_free(f);
  return rc;
}
