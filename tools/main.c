/* forgia: command-line entry. Subcommands live one per file (tools/cmd_*.c); the rules they
 * all keep (exit statuses, one-line errors, stdout, progress) are written in `forgia help`. */
#include <stdio.h>
#include <string.h>

#include "forgia/forgia.h"
#include "util_report.h"
#include "util_text.h"

#define FG_CMD(n, name)                        \
  int fg_cmd_##n(int argc, char **argv);       \
  extern const char fg_cmd_##n##_summary[];
#include "commands.inc"
#undef FG_CMD

typedef struct fg_cli_cmd {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} fg_cli_cmd;

static const fg_cli_cmd fg_cli_cmds[] = {
#define FG_CMD(n, name) {name, fg_cmd_##n, fg_cmd_##n##_summary},
#include "commands.inc"
#undef FG_CMD
};
#define N_CMDS (sizeof fg_cli_cmds / sizeof fg_cli_cmds[0])

static const char synopsis[] = "forgia [--version] COMMAND [args]";

static void usage(FILE *f) {
  fprintf(f, "usage: %s\n\ncommands:\n", synopsis);
  for (size_t i = 0; i < N_CMDS; i++) fprintf(f, "  %-10s %s\n", fg_cli_cmds[i].name, fg_cli_cmds[i].summary);
  fprintf(f, "  %-10s %s\n", "help", "show this text, or `forgia help COMMAND` for one command");
  fprintf(f,
          "\n"
          "exit status (every command):\n"
          "  0    success\n"
          "  1    a bad input file, or a failure while working (I/O, memory, device, a failed\n"
          "       write to stdout)\n"
          "  2    bad usage: an unknown option, a value option given twice, a missing, empty or\n"
          "       bad value (a dtype, a size, a regex, a device name or a device that is not\n"
          "       present), a missing or extra argument; all checked before any work is done\n"
          "  130  interrupted by SIGINT, 143 by SIGTERM, after removing partial output and\n"
          "       temporary files\n"
          "\n"
          "errors: a failure prints exactly one line on stderr, `forgia COMMAND: FILE: PROBLEM`.\n"
          "        An output path that is a device, a FIFO, a directory, one of the inputs (or\n"
          "        inside an input folder) or another output of the same run is a bad value (2),\n"
          "        found before any work. A committed checkpoint directory given to --save is\n"
          "        replaced only with --force or when --resume names it. A run that would do\n"
          "        nothing by mistake (a filter or a gradient file that selects nothing) fails.\n"
          "writes: every output file is written atomically (the old file or the whole new one).\n"
          "output: results go to stdout (a writing command ends with one summary line, naming\n"
          "        the device auto chose); progress goes to stderr, redrawn in place on a terminal;\n"
          "        elsewhere export prints at most one line a second and a last one, load none.\n"
          "        In readable output, control bytes and invalid UTF-8 in names, keys and values\n"
          "        are shown as \\xNN (--json output escapes them as JSON does).\n");
}

static const fg_cli_cmd *lookup(const char *name) {
  for (size_t i = 0; i < N_CMDS; i++)
    if (strcmp(name, fg_cli_cmds[i].name) == 0) return &fg_cli_cmds[i];
  return NULL;
}

static int bad_usage(const char *cmd, const char *what, const char *problem) {
  fg_cli_fail(cmd, what, "%s (usage: %s; see forgia help)", problem, synopsis);
  return 2;
}

/* `forgia help [COMMAND]`: help about help is help. */
static int help(int argc, char **argv) {
  if (argc > 3) return bad_usage("help", argv[3], "unexpected argument");
  if (argc < 3 || strcmp(argv[2], "help") == 0 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  const fg_cli_cmd *c = lookup(argv[2]);
  if (!c) return bad_usage("help", argv[2], "unknown command");
  char *av[] = {argv[2], (char *)"--help", NULL};
  return c->run(2, av);
}

static int dispatch(int argc, char **argv, const char **name) {
  if (argc < 2) {
    return bad_usage("", NULL, "no command given");
  }
  const char *c = argv[1];
  if (strcmp(c, "--version") == 0 || strcmp(c, "version") == 0) {
    *name = "version";
    if (argc > 2) return bad_usage("version", argv[2], "unexpected argument");
    printf("forgia %s (%s)\n", fg_version(), fg_build_has_cuda() ? "cuda" : "cpu-only");
    return 0;
  }
  if (strcmp(c, "help") == 0 || strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0) {
    *name = "help";
    return help(argc, argv);
  }
  const fg_cli_cmd *cmd = lookup(c);
  if (!cmd) {
    return bad_usage("", c, "unknown command");
  }
  *name = cmd->name;
  return cmd->run(argc - 1, argv + 1);
}

int main(int argc, char **argv) {
  const char *name = "";
  int rc = dispatch(argc, argv, &name);
  return fg_cli_close_stdout(name, rc);
}
