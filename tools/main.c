/* forgia: command-line entry. Subcommands live one per file (tools/cmd_*.c). */
#include <stdio.h>
#include <string.h>

#include "forgia/forgia.h"

#define FG_CMD(n)                              \
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
#define FG_CMD(n) {#n, fg_cmd_##n, fg_cmd_##n##_summary},
#include "commands.inc"
#undef FG_CMD
};

static void usage(FILE *f) {
  fprintf(f, "usage: forgia [--version] <command> [args]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof fg_cli_cmds / sizeof fg_cli_cmds[0]; i++)
    fprintf(f, "  %-10s %s\n", fg_cli_cmds[i].name, fg_cli_cmds[i].summary);
  fprintf(f, "  %-10s %s\n", "help", "show this text, or `forgia help COMMAND` for one command");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *c = argv[1];
  if (strcmp(c, "--version") == 0 || strcmp(c, "version") == 0) {
    printf("forgia %s (%s)\n", fg_version(), fg_build_has_cuda() ? "cuda" : "cpu-only");
    return 0;
  }
  if (strcmp(c, "help") == 0 || strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0) {
    if (argc >= 3) {
      for (size_t i = 0; i < sizeof fg_cli_cmds / sizeof fg_cli_cmds[0]; i++) {
        if (strcmp(argv[2], fg_cli_cmds[i].name) == 0) {
          char *av[] = {argv[2], (char *)"--help", NULL};
          return fg_cli_cmds[i].run(2, av);
        }
      }
      fprintf(stderr, "forgia: unknown command '%s'\n", argv[2]);
      usage(stderr);
      return 2;
    }
    usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < sizeof fg_cli_cmds / sizeof fg_cli_cmds[0]; i++)
    if (strcmp(c, fg_cli_cmds[i].name) == 0) return fg_cli_cmds[i].run(argc - 1, argv + 1);
  fprintf(stderr, "forgia: unknown command '%s'\n", c);
  usage(stderr);
  return 2;
}
