/* libFuzzer target for the training-checkpoint readers. The first byte picks one:
 *   even: trainer_state.json text. A parsed state is written back and must parse to the
 *         same fields (bit for bit; skipped when a double is infinite, which is written as
 *         Fucina's non-JSON `inf`).
 *   odd:  a state dict stream loaded, strict and not, into fixed destinations; a failed
 *         load must leave every destination byte as it was. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/state_dict.h"
#include "forgia/trainer_state.h"

static void same_state(const fg_trainer_state *a, const fg_trainer_state *b) {
  for (size_t i = 0;; i++) {
    const char *na, *nb;
    char ka, kb;
    bool sa, sb;
    uint64_t ua = 0, ub = 0;
    double fa = 0, fb = 0;
    bool more = fg_trainer_state_field(a, i, &na, &ka, &sa, &ua, &fa);
    if (more != fg_trainer_state_field(b, i, &nb, &kb, &sb, &ub, &fb)) abort();
    if (!more) return;
    if (sa != sb || ua != ub || memcmp(&fa, &fb, sizeof fa) != 0) abort();
  }
}

static void trainer_state(const uint8_t *data, size_t size) {
  fg_trainer_state s, r;
  if (fg_trainer_state_parse((const char *)data, size, "fuzz", &s) != FG_OK) return;
  for (size_t i = 0;; i++) {
    const char *n;
    char k;
    bool set;
    uint64_t u;
    double f = 0;
    if (!fg_trainer_state_field(&s, i, &n, &k, &set, &u, &f)) break;
    if (k == 'f' && set && !isfinite(f)) return;
  }
  char *text = NULL;
  size_t len = 0;
  if (fg_trainer_state_format(&s, &text, &len) != FG_OK) abort();
  if (fg_trainer_state_parse(text, len, "fuzz", &r) != FG_OK) abort();
  same_state(&s, &r);
  free(text);
}

static void state_dict(const uint8_t *data, size_t size) {
  float a[4];
  uint16_t b[2];
  int64_t c[1];
  uint64_t sa[2] = {2, 2}, sb[1] = {2}, sc[1] = {1};
  fg_state_dict_dest d[3] = {{"a", FG_F32, 2, sa, a, sizeof a},
                             {"b", FG_BF16, 1, sb, b, sizeof b},
                             {"c", FG_I64, 1, sc, c, sizeof c}};
  fg_state_dict_alias al[1] = {{"x", "a"}};
  for (int strict = 0; strict < 2; strict++) {
    memset(a, 0x5A, sizeof a);
    memset(b, 0x5A, sizeof b);
    memset(c, 0x5A, sizeof c);
    fg_state_dict_load_opts o = {strict == 0, al, 1};
    bool loaded[3];
    if (fg_state_dict_load_bytes(data, size, "fuzz", d, 3, &o, loaded) == FG_OK) continue;
    const uint8_t *p[3] = {(const uint8_t *)a, (const uint8_t *)b, (const uint8_t *)c};
    size_t n[3] = {sizeof a, sizeof b, sizeof c};
    for (int i = 0; i < 3; i++)
      for (size_t k = 0; k < n[i]; k++)
        if (p[i][k] != 0x5A) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1)
    state_dict(data + 1, size - 1);
  else
    trainer_state(data + 1, size - 1);
  return 0;
}
