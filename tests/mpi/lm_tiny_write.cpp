// Writes a tiny llama model folder (tests/util/lm_tiny.h: 2 layers, random weights) with the
// tokenizer files of TOKDIR into DIR, for the CLI tests that run under a launcher:
//   lm_tiny_write DIR TOKDIR
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "lm_tiny.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: lm_tiny_write DIR TOKDIR\n");
    return 2;
  }
  fgt::TinySpec s;
  s.V = 704;
  s.L = 2;
  const fgt::TinyModel m = fgt::tiny_make(s);
  mkdir(argv[1], 0755);
  if (fgt::tiny_write_hf(m, argv[1])) {
    std::fprintf(stderr, "lm_tiny_write: %s\n", fg_last_error());
    return 1;
  }
  for (const char *f : {"tokenizer.json", "tokenizer_config.json"}) {
    const std::string from = std::string(argv[2]) + "/" + f, to = std::string(argv[1]) + "/" + f;
    FILE *in = std::fopen(from.c_str(), "rb"), *out = std::fopen(to.c_str(), "wb");
    if (!in || !out) {
      std::fprintf(stderr, "lm_tiny_write: cannot copy %s\n", from.c_str());
      return 1;
    }
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) std::fwrite(buf, 1, n, out);
    std::fclose(in);
    if (std::fclose(out)) return 1;
  }
  return 0;
}
