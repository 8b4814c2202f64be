/* Reads of mapped bytes that survive the file changing underneath (forgia/mapping.h).
 *
 * A thread entering a guarded read pushes a guard (a sigjmp_buf and the mapping's address
 * range) on a thread-local stack. forgia's SIGBUS/SIGSEGV handler looks at the faulting
 * thread's innermost guard: a SIGBUS raised by the kernel, or a SIGSEGV inside the guarded
 * mapping, jumps back to the guard's sigsetjmp, where it becomes a status. Every other
 * fault goes to the handler installed before forgia's, so that programs and sanitizers
 * see their own faults as before. The handler reads thread-local state and writes only the
 * guard it jumps to (async-signal-safe); the message is built after the jump. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/mapping_internal.h"

typedef struct fg_guard {
  sigjmp_buf env;
  uintptr_t lo, hi;          /* the guarded mapping's bytes; lo == hi for none */
  struct fg_guard *outer;
  volatile int sig;
  volatile uintptr_t addr;
} fg_guard;

static _Thread_local fg_guard *volatile fg_guard_top;

enum { FG_SIG_BUS = 0, FG_SIG_SEGV = 1 };
static struct sigaction fg_prev[2]; /* the handlers forgia's replaced */
static pthread_once_t fg_install_once = PTHREAD_ONCE_INIT;
static bool fg_installed;

/* A fault that is not forgia's: what would have happened without forgia's handler. */
static void pass_on(int sig, siginfo_t *si, void *uc) {
  struct sigaction *p = &fg_prev[sig == SIGBUS ? FG_SIG_BUS : FG_SIG_SEGV];
  if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
    struct sigaction h = *p;
    if (h.sa_flags & SA_RESETHAND) { /* a one-shot handler: the next fault gets the default */
      p->sa_handler = SIG_DFL;
      p->sa_flags &= ~SA_SIGINFO;
    }
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &h.sa_mask, &old);
    if (h.sa_flags & SA_SIGINFO) h.sa_sigaction(sig, si, uc);
    else h.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return;
  }
  bool sent = si == NULL || si->si_code <= 0; /* kill(2) and friends, not a fault */
  if (sent && p->sa_handler == SIG_IGN) return;
  /* The default action (a fault cannot be ignored: the kernel would kill anyway). Put it
   * back; a fault then happens again when the instruction reruns, a sent signal is
   * delivered again once this handler returns. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  if (sent) raise(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc) {
  fg_guard *g = fg_guard_top;
  if (g && si && si->si_code > 0) {
    uintptr_t a = (uintptr_t)si->si_addr;
    bool inside = a >= g->lo && a < g->hi;
    /* BUS_ADRALN (a misaligned access on strict machines) is a bug, not a file event. */
    if (inside || (sig == SIGBUS && si->si_code != BUS_ADRALN)) {
      g->sig = sig;
      g->addr = a;
      fg_guard_top = g->outer;
      siglongjmp(g->env, 1);
    }
  }
  int e = errno;
  pass_on(sig, si, uc);
  errno = e;
}

static void install(void) {
  /* The previous handlers are read before forgia's goes in, so that a fault on another
   * thread meanwhile never finds them unset. */
  if (sigaction(SIGBUS, NULL, &fg_prev[FG_SIG_BUS]) != 0 || sigaction(SIGSEGV, NULL, &fg_prev[FG_SIG_SEGV]) != 0)
    return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGBUS, &sa, NULL) != 0) return;
  if (sigaction(SIGSEGV, &sa, NULL) != 0) {
    sigaction(SIGBUS, &fg_prev[FG_SIG_BUS], NULL);
    return;
  }
  /* A sanitizer that keeps the fault signals to itself (ASan with allow_user_segv_handler=0)
   * reports success without installing anything: believe only what is in place. */
  struct sigaction now[2];
  fg_installed = sigaction(SIGBUS, NULL, &now[0]) == 0 && sigaction(SIGSEGV, NULL, &now[1]) == 0 &&
                 (now[0].sa_flags & SA_SIGINFO) && now[0].sa_sigaction == on_fault &&
                 (now[1].sa_flags & SA_SIGINFO) && now[1].sa_sigaction == on_fault;
}

/* The status of a fault that ended a guarded read, with what the file is now. */
static fg_status fault_status(const fg_mapping *m, const fg_guard *g) {
  const char *path = m ? m->path : "<memory>";
  bool inside = g->addr >= g->lo && g->addr < g->hi;
  unsigned long long at = inside ? (unsigned long long)(g->addr - g->lo) : 0;
  if (!inside && !m)
    return fg_fail(FG_ERR_IO, "bus error reading address %#llx: the file mapped there was truncated or could not be "
                   "read", (unsigned long long)g->addr);
  if (!inside)
    return fg_fail(FG_ERR_IO, "%s: bus error at address %#llx, outside this file's mapping: the file mapped there was "
                   "truncated or could not be read", path, (unsigned long long)g->addr);
  if (g->sig == SIGSEGV)
    return fg_fail(FG_ERR_IO, "%s: offset %llu is no longer mapped (segmentation fault): the mapping was released "
                   "while being read", path, at);
  if (!m->from_file)
    return fg_fail(FG_ERR_IO, "%s: offset %llu could not be read (bus error): the file behind this memory was "
                   "truncated or could not be read", path, at);
  struct stat st;
  if (stat(path, &st) != 0)
    return fg_fail(FG_ERR_IO, "%s: offset %llu could not be read (bus error): the file was truncated or could not "
                   "be read, and the path is gone now (%s)", path, at, strerror(errno));
  if (st.st_ino != m->st_ino || st.st_dev != m->st_dev)
    return fg_fail(FG_ERR_IO, "%s: offset %llu could not be read (bus error): the file that was opened was "
                   "truncated or could not be read, and the path names another file now", path, at);
  if ((uint64_t)st.st_size < m->size)
    return fg_fail(FG_ERR_TRUNCATED, "%s: truncated while being read: %llu bytes now, %llu when it was opened; offset "
                   "%llu is past the end", path, (unsigned long long)st.st_size, (unsigned long long)m->size, at);
  bool modified = st.st_mtim.tv_sec != m->mtime.tv_sec || st.st_mtim.tv_nsec != m->mtime.tv_nsec;
  return fg_fail(FG_ERR_IO, "%s: offset %llu could not be read (bus error): a read error, or the file shrank and "
                 "grew back (%s since it was opened)", path, at, modified ? "modified" : "same modification time");
}

fg_status fg_mapping_access(const fg_mapping *m, fg_mapping_fn fn, void *user) {
  if (!fn) return fg_fail(FG_ERR_INVALID_ARG, "fg_mapping_access: NULL function");
  if (m && m->kind == FG_MAP_KIND_OWNED) return fn(user); /* our own memory cannot fault */
  pthread_once(&fg_install_once, install);
  if (!fg_installed) return fn(user);
  fg_guard g;
  g.lo = m && m->data ? (uintptr_t)m->data : 0;
  g.hi = g.lo + (m && m->data ? m->size : 0);
  g.outer = fg_guard_top;
  g.sig = 0;
  g.addr = 0;
  /* The mask is saved: the handler runs with the signal blocked, and the jump must leave
   * it as it was. */
  if (sigsetjmp(g.env, 1)) return fault_status(m, &g);
  fg_guard_top = &g;
  atomic_signal_fence(memory_order_seq_cst); /* the guard is up before fn's first read */
  fg_status s = fn(user);
  atomic_signal_fence(memory_order_seq_cst);
  fg_guard_top = g.outer;
  return s;
}

typedef struct copy_job {
  void *dst;
  const uint8_t *src;
  size_t len;
} copy_job;

static fg_status copy_fn(void *user) {
  const copy_job *j = user;
  memcpy(j->dst, j->src, j->len);
  return FG_OK;
}

/* Without forgia's handler in place: the kernel copies (process_vm_readv on this process),
 * and a page the file no longer backs ends the copy short instead of raising SIGBUS. Where
 * that call is not allowed either (seccomp), a plain copy. */
static fg_status copy_by_kernel(const fg_mapping *m, const copy_job *j) {
  size_t done = 0;
  while (done < j->len) {
    struct iovec to = {(uint8_t *)j->dst + done, j->len - done};
    struct iovec from = {(void *)(uintptr_t)(j->src + done), j->len - done};
    ssize_t r = process_vm_readv(getpid(), &to, 1, &from, 1, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && done == 0 && (errno == ENOSYS || errno == EPERM)) {
      memcpy(j->dst, j->src, j->len);
      return FG_OK;
    }
    if (r <= 0) {
      fg_guard g;
      memset(&g, 0, sizeof g);
      g.lo = (uintptr_t)m->data;
      g.hi = g.lo + m->size;
      g.sig = SIGBUS;
      g.addr = (uintptr_t)(j->src + done);
      return fault_status(m, &g);
    }
    done += (size_t)r;
  }
  return FG_OK;
}

fg_status fg_mapping_copy(const fg_mapping *m, void *dst, uint64_t off, uint64_t len) {
  if (!m || (!dst && len)) return fg_fail(FG_ERR_INVALID_ARG, "fg_mapping_copy: NULL argument");
  if (off > m->size || len > m->size - off)
    return fg_fail(FG_ERR_RANGE, "%s: %llu bytes at offset %llu run past its %zu bytes", m->path,
                   (unsigned long long)len, (unsigned long long)off, m->size);
  if (len == 0) return FG_OK;
  copy_job j = {dst, m->data + off, (size_t)len};
  if (m->kind != FG_MAP_KIND_OWNED) {
    pthread_once(&fg_install_once, install);
    if (!fg_installed) return copy_by_kernel(m, &j);
  }
  return fg_mapping_access(m, copy_fn, &j);
}
