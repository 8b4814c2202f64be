/* forgia load: stream a checkpoint onto a device and say how fast that went; with --bench,
 * next to the limits measured in the same run on the same files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util_args.h"
#include "util_limits.h"
#include "util_progress.h"
#include "util_report.h"
#include "util_threads.h"
#include "util_signal.h"
#include "util_text.h"
#include "forgia/forgia.h"
#include "forgia/load.h"

const char fg_cmd_load_summary[] = "load a GGUF/safetensors checkpoint onto a device and report GB/s";

static void usage(FILE *f) {
  fprintf(f,
          "usage: forgia load PATH [--device cpu|cuda|cuda:N] [--only REGEX]\n"
          "                        [--dtype keep|f32|bf16|f16|dequant|f64] [--keep-quant]\n"
          "                        [--ring N,SIZE] [--lazy] [--list] [--bench] [--threads N]\n"
          "\n"
          "PATH is a GGUF file, part 1 of a split GGUF, a safetensors file or a Hugging Face directory.\n"
          "  --device   target (default auto: the first GPU when present, else the CPU)\n"
          "  --only     load only tensors whose name matches the POSIX extended REGEX; one that\n"
          "             matches no tensor is an error (exit 1), not an empty load\n"
          "  --dtype    keep stored dtypes (default); f32 widens f16/bf16 and dequantizes block types;\n"
          "             bf16/f16 narrow float tensors; dequant only dequantizes block types;\n"
          "             f64 widens float tensors and decodes block types to f64 (on the host)\n"
          "  --keep-quant  block types stay quantized: --dtype applies to float tensors only\n"
          "  --ring     staging ring: N pinned buffers of SIZE bytes (K/M/G suffixes), default 4,16M\n"
          "  --lazy     CPU: borrow kept tensors without reading their pages\n"
          "  --list     print every loaded tensor (name, dtype, shape, bytes)\n"
          "  --bench    also measure page-cache read() into new memory (all threads), memcpy and\n"
          "             (GPU) pinned host-to-device bandwidth in this run, and print the load's\n"
          "             ratio to each\n"
          "  --threads N  CPU threads for decoding and copies (default: the cores)\n"
          "The summary line names the device the tensors went to (auto's choice included).\n");
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  unsigned long long mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
  else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
  else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
  if (*end == 'i' || *end == 'B') end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
  if (*end || v > SIZE_MAX / mul) return -1;
  *out = (size_t)(v * mul);
  return 0;
}

static bool regex_filter(const fg_load_tensor_info *t, void *user) {
  return regexec((const regex_t *)user, t->name, 0, NULL, 0) == 0;
}

typedef struct load_bar {
  fg_cli_progress bar;
  bool started;
  bool quiet;
} load_bar;

/* Draws progress and cancels the load once SIGINT or SIGTERM has come. */
static bool on_progress(const fg_load_progress *p, void *user) {
  load_bar *b = user;
  if (!b->started) {
    /* the totals are known at the first call */
    fg_cli_progress_init(&b->bar, b->quiet, "tensors", p->tensors_total, p->bytes_total);
    b->started = true;
  }
  if (fg_cli_signal_caught()) return false;
  fg_cli_progress_update(&b->bar, p->tensors_done, p->bytes_done, p->tensor, p->tensor ? strlen(p->tensor) : 0, NULL);
  return true;
}

static void print_shape(const fg_model_tensor *t) {
  printf(" [");
  for (int d = 0; d < t->ndim; d++) printf("%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
  printf("]");
}

/* ---- --bench limits: tools/util_limits.c ------------------------------------------------ */

static int bench_read(const fg_model *m, double *gbs) {
  const char *paths[256];
  uint32_t n = fg_model_file_count(m) < 256 ? fg_model_file_count(m) : 256;
  for (uint32_t i = 0; i < n; i++) paths[i] = fg_model_file_path(m, i);
  *gbs = fg_cli_read_gbs(paths, n);
  return *gbs < 0 ? -1 : 0;
}

/* ---- the command ------------------------------------------------------------------------- */

typedef struct args {
  const char *path, *device, *only, *dtype, *ring, *threads;
  uint32_t ring_count;
  size_t ring_bytes;
  bool bench, list, lazy, keep_quant;
} args;

static const char synopsis[] = "forgia load PATH [--device D] [options]";

/* The value of --ring, checked against the loader's bounds here so that a bad one is bad
 * usage (exit 2) rather than a failed load. */
static int parse_ring(const fg_cli_spec *spec, args *a) {
  const char *comma = strchr(a->ring, ',');
  char *end;
  errno = 0;
  unsigned long n = strtoul(a->ring, &end, 10);
  if (!comma || end != comma || end == a->ring || errno || n == 0 || n > FG_LOAD_RING_MAX_COUNT ||
      parse_size(comma + 1, &a->ring_bytes) || a->ring_bytes < FG_LOAD_RING_MIN_BYTES ||
      a->ring_bytes > FG_LOAD_RING_MAX_BYTES)
    return fg_cli_usage_error(spec, "--ring", "'%s': expected N,SIZE with N in 1..%u and SIZE in 64K..1G (e.g. 4,16M)",
                              a->ring, FG_LOAD_RING_MAX_COUNT);
  a->ring_count = (uint32_t)n;
  return FG_CLI_GO;
}

static fg_status load_once(const args *a, fg_device *dev, const fg_load_options *o, fg_model **m, bool quiet) {
  /* off a terminal a load stays silent: it is over in seconds, and its summary says it all */
  load_bar b = {.quiet = quiet || !isatty(STDERR_FILENO)};
  fg_load_options oo = *o;
  oo.progress = on_progress;
  oo.progress_user = &b;
  fg_status s = fg_model_create(a->path, dev, &oo, m);
  if (b.started) fg_cli_progress_clear(&b.bar);
  return s;
}

/* Bytes the load actually read: stats count every loaded tensor's stored bytes, but with
 * --lazy the borrowed ones are mapped and never touched. */
static uint64_t bytes_touched(const fg_load_stats *st, bool lazy) {
  if (!lazy) return st->bytes_read;
  return st->bytes_borrowed < st->bytes_read ? st->bytes_read - st->bytes_borrowed : 0;
}

/* GB/s over the bytes read; negative when nothing was read (no bandwidth to speak of). */
static double load_gbs(const fg_load_stats *st, bool lazy) {
  uint64_t b = bytes_touched(st, lazy);
  return b && st->seconds > 0 ? (double)b / st->seconds / 1e9 : -1.0;
}

static void report(const char *label, const fg_model *m, fg_device *dev, const fg_load_options *o, bool lazy) {
  const fg_load_stats *st = fg_model_stats(m);
  double gbs = load_gbs(st, lazy);
  printf("%s: %llu tensors (%llu skipped), %llu bytes read, %llu bytes on %s, %llu borrowed%s, %.4f s",
         label, (unsigned long long)st->tensors, (unsigned long long)st->tensors_skipped,
         (unsigned long long)bytes_touched(st, lazy), (unsigned long long)st->bytes_owned, fg_device_spec(dev),
         (unsigned long long)st->bytes_borrowed, lazy && st->bytes_borrowed ? " unread (--lazy)" : "", st->seconds);
  if (gbs >= 0)
    printf(", %.3f GB/s\n", gbs);
  else
    printf(", no bandwidth (nothing was read)\n");
  if (st->staged)
    printf("%s: ring %u x %zu bytes (setup %.4f s), NUMA node %d, dtype policy %s\n", label, st->ring_count,
           st->ring_bytes, st->ring_seconds, st->numa_node, fg_load_dtype_name(o->dtype));
}

int fg_cmd_load(int argc, char **argv) {
  args a;
  memset(&a, 0, sizeof a);
  const fg_cli_opt opts[] = {{"--device", &a.device, NULL}, {"--only", &a.only, NULL},  {"--dtype", &a.dtype, NULL},
                             {"--ring", &a.ring, NULL},     {"--bench", NULL, &a.bench}, {"--list", NULL, &a.list},
                             {"--lazy", NULL, &a.lazy},     {"--keep-quant", NULL, &a.keep_quant},
                             {"--threads", &a.threads, NULL}};
  static const char *const pos_names[] = {"PATH"};
  const fg_cli_spec spec = {"load", synopsis, usage, opts, sizeof opts / sizeof opts[0], pos_names, &a.path, 1, 0, 0};
  int rc = fg_cli_parse(&spec, argc, argv);
  if (rc != FG_CLI_GO) return rc;
  if (a.ring && (rc = parse_ring(&spec, &a)) != FG_CLI_GO) return rc;
  if ((rc = fg_cli_threads(&spec, a.threads, NULL)) != FG_CLI_GO) return rc;
  fg_load_options o;
  fg_load_options_init(&o);
  if (a.dtype && fg_load_dtype_from_name(a.dtype, &o.dtype) != FG_OK)
    return fg_cli_usage_error(&spec, "--dtype", "'%s': expected keep, f32, bf16, f16, dequant or f64", a.dtype);
  if (a.keep_quant && o.dtype == FG_LOAD_DTYPE_DEQUANT)
    return fg_cli_usage_error(&spec, "--keep-quant", "contradicts --dtype dequant (which only changes block types)");
  regex_t re;
  if (a.only) {
    int e = regcomp(&re, a.only, REG_EXTENDED | REG_NOSUB);
    if (e) {
      char msg[256];
      regerror(e, &re, msg, sizeof msg);
      return fg_cli_usage_error(&spec, "--only", "'%s': %s", a.only, msg);
    }
    o.filter = regex_filter;
    o.filter_user = &re;
  }
  o.ring_count = a.ring_count;
  o.ring_bytes = a.ring_bytes;
  if (a.lazy) o.flags |= FG_LOAD_FLAG_LAZY;
  if (a.keep_quant) o.flags |= FG_LOAD_FLAG_KEEP_QUANT;

  fg_device *dev = NULL;
  fg_model *m = NULL;
  fg_load_ring *ring = NULL;
  fg_status ds = fg_device_open(a.device ? a.device : "auto", &dev);
  if (ds != FG_OK) {
    /* a device name that is wrong or names no device here is a usage mistake */
    if (a.only) regfree(&re);
    if (ds == FG_ERR_INVALID_ARG || ds == FG_ERR_NO_DEVICE) {
      char problem[512];
      snprintf(problem, sizeof problem, "%s", fg_last_error());
      return fg_cli_usage_error(&spec, NULL, "%s", problem);
    }
    fg_cli_report("load", NULL);
    return 1;
  }
  fg_cli_signals_catch();
  rc = 1;
  if (a.bench && fg_device_kind_of(dev) != FG_DEVICE_CPU) {
    /* One ring for both timed loads: pinning is a one-off cost a long-lived caller pays once. */
    if (fg_load_ring_create(dev, a.ring_count ? a.ring_count : FG_LOAD_RING_DEFAULT_COUNT,
                            a.ring_bytes ? a.ring_bytes : FG_LOAD_RING_DEFAULT_BYTES, &ring) != FG_OK) {
      fg_cli_report("load", NULL);
      goto out;
    }
    o.ring = ring;
  }
  if (load_once(&a, dev, &o, &m, false) != FG_OK) {
    if (fg_cli_signal_caught()) rc = fg_cli_interrupted("load", a.path);
    else fg_cli_report("load", a.path);
    goto out;
  }
  if (a.only && fg_model_stats(m)->tensors == 0) {
    /* a filter that selects nothing is a mistake, not an empty success */
    fg_cli_fail("load", a.path, "--only '%s' matches none of its %zu tensors", a.only,
                fg_model_stats(m)->tensors_skipped);
    goto out;
  }
  printf("source: ");
  fg_cli_puts_escaped(stdout, a.path, 0);
  printf(" (%s, %zu file%s)\n", fg_model_format(m), fg_model_file_count(m), fg_model_file_count(m) == 1 ? "" : "s");
  if (a.list)
    for (size_t i = 0; i < fg_model_count(m); i++) {
      const fg_model_tensor *t = fg_model_at(m, i);
      printf("  ");
      fg_cli_puts_escaped(stdout, t->name, 48);
      printf(" %-6s", fg_dtype_name(t->dtype));
      print_shape(t);
      printf(" %llu bytes%s\n", (unsigned long long)t->nbytes, t->borrowed ? " (borrowed)" : "");
    }
  report("load", m, dev, &o, a.lazy);
  if (a.bench) {
    /* The first load may have read from disk; the read() pass leaves every file in the page
     * cache, and the load is timed again against it. */
    double read_gbs = 0, memcpy_gbs = 0, h2d_gbs = 0;
    if (bench_read(m, &read_gbs)) {
      fg_cli_fail("load", a.path, "--bench: cannot read the files back: %s", strerror(errno));
      goto out;
    }
    fg_model_free(m);
    m = NULL;
    if (fg_cli_signal_caught()) {
      rc = fg_cli_interrupted("load", a.path);
      goto out;
    }
    if (load_once(&a, dev, &o, &m, true) != FG_OK) {
      if (fg_cli_signal_caught()) rc = fg_cli_interrupted("load", a.path);
      else fg_cli_report("load", a.path);
      goto out;
    }
    report("warm load", m, dev, &o, a.lazy);
    double gbs = load_gbs(fg_model_stats(m), a.lazy);
    memcpy_gbs = fg_cli_memcpy_gbs();
    if (gbs < 0) {
      /* --lazy borrowed every tensor: there is no load bandwidth to compare */
      printf("bench: warm load read no bytes (--lazy borrowed every tensor): no ratios\n");
      printf("bench: page-cache read() %.3f GB/s\n", read_gbs);
      printf("bench: memcpy %.3f GB/s\n", memcpy_gbs);
    } else {
      printf("bench: warm load %.3f GB/s\n", gbs);
      printf("bench: page-cache read() %.3f GB/s, ratio %.3f\n", read_gbs, read_gbs > 0 ? gbs / read_gbs : 0.0);
      printf("bench: memcpy %.3f GB/s, ratio %.3f\n", memcpy_gbs, memcpy_gbs > 0 ? gbs / memcpy_gbs : 0.0);
      if (fg_device_kind_of(dev) == FG_DEVICE_CUDA) {
        h2d_gbs = fg_cli_h2d_gbs(dev);
        printf("bench: pinned H2D %.3f GB/s, ratio %.3f\n", h2d_gbs, h2d_gbs > 0 ? gbs / h2d_gbs : 0.0);
      }
    }
    if (fg_cli_signal_caught()) {
      rc = fg_cli_interrupted("load", a.path);
      goto out;
    }
  }
  rc = 0;
out:
  fg_model_free(m);
  fg_load_ring_free(ring);
  fg_device_close(dev);
  if (a.only) regfree(&re);
  return rc;
}
