/* Forks after the OpenMP runtime (and the interposer) started: a child
 * that runs serial code, one forked from inside a parallel region, and
 * one that execs this program again (which then runs parallel loops with
 * the preload inherited). Prints "all ok" when every check passed. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static long parallel_sum(long n) {
    long sum = 0;
#pragma omp parallel for schedule(runtime) reduction(+ : sum)
    for (long i = 0; i < n; i++) sum += i;
    return sum;
}

static long serial_sum(long n) {
    long sum = 0;
    for (long i = 0; i < n; i++) sum += i;
    return sum;
}

static int wait_ok(pid_t pid, const char *what) {
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("FAIL %s: child status %d\n", what, status);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    long n = 100003, want = n * (n - 1) / 2;
    if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
        return parallel_sum(n) == want && parallel_sum(7) == 21 ? 0 : 1;
    }
    int ok = parallel_sum(n) == want;
    pid_t pid = fork();
    if (pid == 0) _exit(serial_sum(n) == want ? 0 : 1);
    ok &= wait_ok(pid, "serial child");
    pid_t inner = -1;
#pragma omp parallel
    {
#pragma omp for schedule(runtime) nowait
        for (long i = 0; i < 1000; i++) (void)i;
#pragma omp single
        {
            inner = fork();
            if (inner == 0) _exit(serial_sum(n) == want ? 0 : 1);
        }
    }
    ok &= wait_ok(inner, "child forked inside a region");
    pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "exec-child", (char *)NULL);
        _exit(127);
    }
    ok &= wait_ok(pid, "exec'd child");
    ok &= parallel_sum(n) == want;
    if (ok) printf("all ok\n");
    return !ok;
}
