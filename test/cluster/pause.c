// The test cluster's pod sandbox program (localhost/kube-rdma/pause:e2e, made by
// scripts/cluster-images.sh): the first process of every pod, which holds the pod's namespaces.
// It waits for signals and does nothing else: SIGINT or SIGTERM end it with status 0 (as PID 1
// it gets no default action for them, hence the handlers), SIGCHLD reaps whatever children
// ended (in a pod sharing its PID namespace, orphans are re-parented to it).
//   gcc -static -Os -o pause pause.c
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  const int saved = errno;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

static int on(int sig, void (*handler)(int)) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  action.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
  sigemptyset(&action.sa_mask);
  return sigaction(sig, &action, NULL);
}

int main(int argc, char** argv) {
  (void)argv;
  if (argc > 1) {
    static const char usage[] = "usage: pause (waits until SIGINT or SIGTERM)\n";
    (void)!write(STDERR_FILENO, usage, sizeof usage - 1);
    return 2;
  }
  if (on(SIGINT, stop) != 0 || on(SIGTERM, stop) != 0 || on(SIGCHLD, reap) != 0) {
    static const char failed[] = "pause: sigaction failed\n";
    (void)!write(STDERR_FILENO, failed, sizeof failed - 1);
    return 1;
  }
  for (;;) {
    pause();
  }
}
