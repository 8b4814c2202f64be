/* adv_spawn REPORT PROGRAM [ARGS...]: runs PROGRAM as a child and writes its peak RSS (KiB)
 * to REPORT, then exits as the child did (same code, or the same signal).
 *
 * Why not measure from Python: a child's ru_maxrss counts the memory of the process it was
 * forked from, up to the exec (the kernel carries the old mm's high-water mark over), so a
 * child of the runner looks at least as large as the runner. Forked from this small
 * program, the command's peak is its own. Not instrumented (tests/adversarial.cmake). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: adv_spawn REPORT PROGRAM [ARGS...]\n");
    return 125;
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("adv_spawn: fork");
    return 125;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    perror("adv_spawn: exec");
    _exit(127);
  }
  int status;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0) {
  }
  FILE *f = fopen(argv[1], "w");
  if (f) {
    fprintf(f, "%ld\n", ru.ru_maxrss);
    fclose(f);
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    return 128 + sig;
  }
  return WEXITSTATUS(status);
}
