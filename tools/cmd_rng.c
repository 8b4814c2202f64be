/* forgia rng: any of Fucina's random streams, any window of it, as binary on stdout. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forgia/forgia.h"
#include "util_args.h"
#include "util_threads.h"
#include "util_report.h"
#include "util_signal.h"

const char fg_cmd_rng_summary[] = "write values of one of Fucina's random streams to stdout (binary)";

static const char synopsis[] =
    "forgia rng --kind K --seed S [--offset I] --count N [--scale X] [--lo A --hi B] [--fan-in F] [--p P] "
    "[--device D] [--threads N]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "Writes elements I .. I+N-1 of a random stream to stdout: little-endian f32 values,\n"
          "except --kind u64 (little-endian u64 words) and --kind dropout (one byte, 0 or 1, per\n"
          "element). Each element is a function of (S, its index) alone, so any window of a stream\n"
          "gives the values a longer run gives there; with I = 0 they are Fucina's, bit for bit.\n\n"
          "  --kind K     gauss-fast  gaussianFillAtFast: ES noise, all-f32 arithmetic (--scale)\n"
          "               gauss       gaussianFill(At): Box-Muller on f64 log/cos/sin (--scale)\n"
          "               uniform     uniformFill over [A, B) (--lo, --hi)\n"
          "               kaiming     kaimingUniformFill with fan-in F (--fan-in)\n"
          "               dropout     inverted dropout's keep mask, drop probability P (--p)\n"
          "               u64         the raw splitmix64 words at(S, i)\n"
          "  --seed S     the stream's seed, a decimal integer 0 .. 2^64-1\n"
          "  --offset I   the index of the first element written (decimal, default 0)\n"
          "  --count N    how many elements (decimal; I + N - 1 must not pass 2^64-1)\n"
          "  --scale X    gauss and gauss-fast: each value times X (default 1)\n"
          "  --lo A --hi B  uniform: finite, A < B\n"
          "  --fan-in F   kaiming: F >= 1\n"
          "  --p P        dropout: 0 <= P < 1\n"
          "  --threads N  CPU threads (the values do not depend on it)\n"
          "  --device D   compute on D (cpu, cuda, cuda:N, auto) instead of on the host: the same\n"
          "               values (gauss runs on the host and is copied to D; u64 always on the host)\n\n"
          "Values are numbers as C's strtof reads them (decimal or hex floats), rounded once to f32.\n"
          "The output is binary, so stdout must not be a terminal: redirect it to a file or a pipe.\n"
          "Memory use does not depend on N.\n",
          synopsis);
}

/* The stream kinds of the command line, and the library kind behind each (u64: none). */
typedef struct rng_cli_kind {
  const char *name;
  fg_rng_kind kind;
  bool scale, bounds, fan_in, p;
} rng_cli_kind;

static const rng_cli_kind kinds[] = {
    {"gauss-fast", FG_RNG_GAUSS_FAST, true, false, false, false},
    {"gauss", FG_RNG_GAUSS, true, false, false, false},
    {"uniform", FG_RNG_UNIFORM, false, true, false, false},
    {"kaiming", FG_RNG_KAIMING, false, false, true, false},
    {"dropout", FG_RNG_KEEP_MASK, false, false, false, true},
    {"u64", FG_RNG_UNIFORM, false, false, false, false},
};


static bool parse_f32(const char *s, float *out) {
  char *end;
  errno = 0;
  const float v = strtof(s, &end);
  if (end == s || *end || !isfinite(v)) return false;
  *out = v;
  return true;
}

/* Elements per write: bounded memory whatever N is. */
#define RNG_CHUNK ((size_t)1 << 16)

/* Turns esize-byte values (f32 or u64) in place into little-endian bytes. */
static void to_le(void *buf, size_t m, size_t esize) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  (void)buf, (void)m, (void)esize;
#else
  uint8_t *p = buf;
  for (size_t k = 0; k < m; k++, p += esize) {
    uint64_t v = 0;
    if (esize == 8) {
      memcpy(&v, p, 8);
    } else {
      uint32_t u;
      memcpy(&u, p, 4);
      v = u;
    }
    for (size_t b = 0; b < esize; b++) p[b] = (uint8_t)(v >> (8 * b));
  }
#endif
}

typedef struct rng_job {
  const rng_cli_kind *k;
  fg_rng_spec r;
  uint64_t count;
  fg_device *dev; /* NULL: on the host */
} rng_job;

/* Writes the stream a chunk at a time; 0, or 1 after leaving the failure in fg_last_error(). */
static int run(const rng_job *j) {
  if (!j->count) return 0;
  const bool words = strcmp(j->k->name, "u64") == 0;
  const size_t esize = words ? 8 : j->r.kind == FG_RNG_KEEP_MASK ? 1 : 4;
  const fg_dtype dtype = j->r.kind == FG_RNG_KEEP_MASK ? FG_U8 : FG_F32;
  const size_t chunk = j->count < RNG_CHUNK ? (size_t)j->count : RNG_CHUNK;
  void *buf = malloc(chunk * esize), *dbuf = NULL;
  if (!buf) {
    fg_fail(FG_ERR_NOMEM, "out of memory for a %zu-value chunk", chunk);
    return 1;
  }
  int rc = 0;
  if (j->dev && !words && fg_device_mem_alloc(j->dev, chunk * esize, &dbuf) != FG_OK) rc = 1;
  for (uint64_t done = 0; done < j->count && !rc && !fg_cli_signal_caught(); done += chunk) {
    const size_t m = j->count - done < chunk ? (size_t)(j->count - done) : chunk;
    fg_rng_spec r = j->r;
    r.first += done;
    if (words) {
      uint64_t *w = buf;
      for (size_t i = 0; i < m; i++) w[i] = fg_rng_at(r.seed, r.first + i);
    } else if (!j->dev) {
      if (fg_rng_fill_host(&r, buf, m) != FG_OK) rc = 1;
    } else if (fg_rng_fill(j->dev, &r, dbuf, dtype, m, NULL) != FG_OK ||
               fg_device_copy(j->dev, buf, dbuf, m * esize, FG_COPY_D2H) != FG_OK) {
      rc = 1;
    }
    if (rc) break;
    if (esize > 1) to_le(buf, m, esize);
    if (fwrite(buf, esize, m, stdout) != m) {
      fg_fail(FG_ERR_IO, "stdout: write failed: %s", strerror(errno));
      rc = 1;
    }
  }
  if (j->dev) fg_device_mem_free(j->dev, dbuf);
  free(buf);
  return rc;
}

int fg_cmd_rng(int argc, char **argv) {
  const char *kind = NULL, *seed = NULL, *offset = NULL, *count = NULL, *scale = NULL, *lo = NULL, *hi = NULL,
             *fan_in = NULL, *p = NULL, *device = NULL, *threads = NULL;
  const fg_cli_opt opts[] = {{"--kind", &kind, NULL},   {"--seed", &seed, NULL},     {"--offset", &offset, NULL},
                             {"--count", &count, NULL}, {"--scale", &scale, NULL},   {"--lo", &lo, NULL},
                             {"--hi", &hi, NULL},       {"--fan-in", &fan_in, NULL}, {"--p", &p, NULL},
                             {"--device", &device, NULL}, {"--threads", &threads, NULL}};
  const fg_cli_spec spec = {"rng", synopsis, usage, opts, sizeof opts / sizeof opts[0], NULL, NULL, 0, 0, 0};
  int prc = fg_cli_parse(&spec, argc, argv);
  if (prc != FG_CLI_GO) return prc;
  if ((prc = fg_cli_threads(&spec, threads, NULL)) != FG_CLI_GO) return prc;

  rng_job j = {0};
  if (!kind) return fg_cli_usage_error(&spec, "--kind", "missing");
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(kind, kinds[i].name) == 0) j.k = &kinds[i];
  if (!j.k) return fg_cli_usage_error(&spec, "--kind", "takes gauss-fast, gauss, uniform, kaiming, dropout or u64, not '%s'", kind);
  if (!seed) return fg_cli_usage_error(&spec, "--seed", "missing");
  if (!count) return fg_cli_usage_error(&spec, "--count", "missing");
  if (!fg_cli_parse_u64(seed, 10, &j.r.seed))
    return fg_cli_usage_error(&spec, "--seed", "'%s' is not a decimal integer 0 .. 18446744073709551615", seed);
  if (offset && !fg_cli_parse_u64(offset, 10, &j.r.first))
    return fg_cli_usage_error(&spec, "--offset", "'%s' is not a decimal integer 0 .. 18446744073709551615", offset);
  if (!fg_cli_parse_u64(count, 10, &j.count))
    return fg_cli_usage_error(&spec, "--count", "'%s' is not a decimal integer 0 .. 18446744073709551615", count);
  if (j.count && j.r.first > UINT64_MAX - (j.count - 1))
    return fg_cli_usage_error(&spec, "--count", "elements %s + %s run past index 2^64-1", offset ? offset : "0", count);

  /* every option given must mean something for this kind */
  const struct {
    const char *name, *value;
    bool applies;
  } extra[] = {{"--scale", scale, j.k->scale}, {"--lo", lo, j.k->bounds},        {"--hi", hi, j.k->bounds},
               {"--fan-in", fan_in, j.k->fan_in}, {"--p", p, j.k->p}};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
    if (extra[i].value && !extra[i].applies)
      return fg_cli_usage_error(&spec, extra[i].name, "does not apply to --kind %s", j.k->name);
    if (!extra[i].value && extra[i].applies && strcmp(extra[i].name, "--scale") != 0)
      return fg_cli_usage_error(&spec, extra[i].name, "missing (--kind %s needs it)", j.k->name);
  }
  j.r.kind = j.k->kind;
  j.r.scale = 1.0f;
  if (scale && !parse_f32(scale, &j.r.scale)) return fg_cli_usage_error(&spec, "--scale", "'%s' is not a finite number", scale);
  if (lo && !parse_f32(lo, &j.r.lo)) return fg_cli_usage_error(&spec, "--lo", "'%s' is not a finite number", lo);
  if (hi && !parse_f32(hi, &j.r.hi)) return fg_cli_usage_error(&spec, "--hi", "'%s' is not a finite number", hi);
  if (lo && hi && !(j.r.lo < j.r.hi))
    return fg_cli_usage_error(&spec, "--lo", "%s is not below --hi %s (as f32)", lo, hi);
  if (fan_in && (!fg_cli_parse_u64(fan_in, 10, &j.r.fan_in) || j.r.fan_in == 0))
    return fg_cli_usage_error(&spec, "--fan-in", "'%s' is not a decimal integer >= 1", fan_in);
  if (p && (!parse_f32(p, &j.r.p) || !(j.r.p >= 0.0f && j.r.p < 1.0f)))
    return fg_cli_usage_error(&spec, "--p", "'%s' is not a number in [0, 1)", p);
  /* the library checks the same again; a spec it refuses is still a usage mistake */
  if (strcmp(j.k->name, "u64") != 0 && fg_rng_fill_host(&j.r, NULL, 0) != FG_OK)
    return fg_cli_usage_error(&spec, NULL, "%s", fg_last_error());
  if (isatty(STDOUT_FILENO))
    return fg_cli_usage_error(&spec, "stdout", "is a terminal; the values are binary: redirect them to a file or a pipe");

  if (device) {
    fg_status ds = fg_device_open(device, &j.dev);
    if (ds != FG_OK) {
      if (ds == FG_ERR_INVALID_ARG || ds == FG_ERR_NO_DEVICE) {
        char problem[512];
        snprintf(problem, sizeof problem, "%s", fg_last_error());
        return fg_cli_usage_error(&spec, "--device", "%s", problem);
      }
      fg_cli_report("rng", NULL);
      return 1;
    }
  }
  fg_cli_signals_catch();
  int rc = run(&j);
  if (!rc && fflush(stdout) != 0) {
    fg_fail(FG_ERR_IO, "stdout: write failed: %s", strerror(errno));
    rc = 1;
  }
  if (fg_cli_signal_caught()) rc = fg_cli_interrupted("rng", NULL);
  else if (rc) fg_cli_report("rng", NULL);
  fg_device_close(j.dev);
  return rc;
}
