/*
 * keel-cosched SPANK plugin: registers each task of a Slurm step that
 * asked for it (`srun --keel-cosched[=POLICY]`) with the Keel node manager
 * (NM) of its node, which then gang-schedules the task with the rest of
 * its step (FCS). The NM answers with the task's monitoring page, which
 * the plugin hands to the task as KEEL_COSCHED_PAGE (and the step as
 * KEEL_COSCHED_JOB=<job>.<step>), where the PMPI wrapper finds it.
 *
 * The protocol (the Rust side is keel_cosched::cluster::register): one
 * line each way on a Unix stream socket, then the NM closes.
 *
 *   keel-register 1 job=J step=S rank=R size=N local_rank=L local_size=M \
 *       nodes=K pid=P uid=U gid=G [policy=NAME]\n          (<= 1024 bytes)
 *   ok page=/abs/path\n  or  refused REASON\n              (<= 4096 bytes)
 *
 * Why slurm_spank_task_init_privileged: it runs in the task's own process
 * (after slurmstepd's fork, before the exec of the user's program), as
 * root. The NM checks the connecting process's kernel credentials
 * (SO_PEERCRED): the pid must be the registered one, so only the task
 * itself can register, and only before it runs a single instruction of
 * the user's program, so the NM can stop and continue it from its first
 * instruction on. The NM's socket is root's (0600), so an ordinary user
 * cannot register anything by hand; being root here is what lets the
 * plugin reach it.
 *
 * Why the environment is set in the same callback: spank_setenv() in
 * task_init_privileged edits the step's environment array, from which
 * slurmstepd builds the task's environment (adding its per-task SLURM_*
 * variables) afterwards, just before the exec; checked on Slurm 22.05
 * (the cluster test in tests/spank_plugin.rs prints the variable from the
 * task). Registering and setting the variables in one callback leaves no
 * state to carry between callbacks.
 *
 * Plugin arguments (plugstack.conf):
 *   socket=PATH     the NM's socket (default /run/keel-cosched/nm.sock);
 *                   "%n" becomes the node's name (SLURMD_NODENAME, as
 *                   slurmd set it in its own environment), so that several
 *                   slurmd on one host each reach their own NM; "%%" is a
 *                   literal "%".
 *   timeout_ms=N    the whole registration's deadline, 1 to 600000
 *                   (default 2000): connect, send and reply together.
 *   required=0|1    1 (default): a task that cannot register does not
 *                   start: slurm_error says why (srun prints it) and the
 *                   plugin ends the task's process, whether plugstack.conf
 *                   lists the plugin as `required` or `optional`; 0: the
 *                   task starts unmanaged, without KEEL_COSCHED_PAGE
 *                   (slurm_info says why, in slurmd's log).
 *
 * Steps run without --keel-cosched are left alone, except that the plugin
 * removes KEEL_COSCHED_PAGE and KEEL_COSCHED_JOB from their environment:
 * the variables say that this task is registered, and only a registered
 * task may carry them.
 *
 * Every buffer is fixed; every read is bounded in size and in time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(keel-cosched, 1);

#define KEEL_DEFAULT_SOCKET "/run/keel-cosched/nm.sock"
#define KEEL_MAX_REQUEST 1024 /* register::MAX_REQUEST_BYTES */
#define KEEL_MAX_REPLY 4096   /* register::MAX_REPLY_BYTES */
#define KEEL_MAX_POLICY 64    /* register::MAX_POLICY_LEN */
#define KEEL_MAX_TIMEOUT_MS 600000
#define KEEL_SOCKET_TEMPLATE_MAX 256
#define KEEL_NODENAME_MAX 128
#define KEEL_WHY_MAX 1024

/* Plugin arguments, parsed in slurm_spank_init. */
static char arg_socket[KEEL_SOCKET_TEMPLATE_MAX] = KEEL_DEFAULT_SOCKET;
static int arg_timeout_ms = 2000;
static int arg_required = 1;

/* The option, as the option callback saw it in this process. */
static int opt_given;
static char opt_policy[KEEL_MAX_POLICY + 1];

static int keel_option_cb(int val, const char *optarg, int remote);

static struct spank_option keel_option = {
    "keel-cosched",
    "POLICY",
    "Gang-schedule this step's tasks with Keel's node managers; "
    "POLICY (optional) names the coscheduling policy, e.g. fcs",
    2, /* the argument is optional */
    0,
    keel_option_cb,
};

/* [a-z0-9:=.,_-]{1,64}, as register::valid_policy. */
static int valid_policy(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > KEEL_MAX_POLICY)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              strchr(":=.,_-", c) != NULL))
            return 0;
    }
    return 1;
}

static int keel_option_cb(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    /*
     * `--keel-cosched` and `--keel-cosched=` both mean "the NM's default
     * policy": how an absent optional argument reaches slurmstepd (NULL
     * or "") is Slurm's business, and both read the same here.
     */
    if (optarg == NULL || optarg[0] == '\0') {
        opt_policy[0] = '\0';
    } else if (!valid_policy(optarg)) {
        slurm_error("keel-cosched: --keel-cosched=%.80s: not a policy name "
                    "([a-z0-9:=.,_-], 1 to %d characters)",
                    optarg, KEEL_MAX_POLICY);
        return -1;
    } else {
        /* valid_policy bounded the length */
        memcpy(opt_policy, optarg, strlen(optarg) + 1);
    }
    opt_given = 1;
    return 0;
}

/* A whole decimal number in [lo, hi], or -1. */
static long parse_decimal(const char *s, long lo, long hi)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == NULL || *end != '\0' || v < lo || v > hi)
        return -1;
    return v;
}

/*
 * Checks a socket template: absolute, printable, and every '%' followed
 * by 'n' or '%', so that a typo is reported when the plugin loads rather
 * than when a task starts.
 */
static int valid_socket_template(const char *t)
{
    if (t[0] != '/')
        return 0;
    for (const char *p = t; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return 0;
        if (*p == '%') {
            if (p[1] != 'n' && p[1] != '%')
                return 0;
            p++;
        }
    }
    return 1;
}

static int parse_args(int ac, char **av)
{
    for (int i = 0; i < ac; i++) {
        const char *a = av[i];
        if (strncmp(a, "socket=", 7) == 0) {
            const char *v = a + 7;
            if (strlen(v) >= sizeof(arg_socket) || !valid_socket_template(v)) {
                slurm_error("keel-cosched: plugin argument %.300s: the socket "
                            "must be an absolute path shorter than %zu bytes, "
                            "with %%n (node name) or %%%% as its only %%-escapes",
                            a, sizeof(arg_socket));
                return -1;
            }
            memcpy(arg_socket, v, strlen(v) + 1);
        } else if (strncmp(a, "timeout_ms=", 11) == 0) {
            long v = parse_decimal(a + 11, 1, KEEL_MAX_TIMEOUT_MS);
            if (v < 0) {
                slurm_error("keel-cosched: plugin argument %.300s: "
                            "timeout_ms must be 1 to %d",
                            a, KEEL_MAX_TIMEOUT_MS);
                return -1;
            }
            arg_timeout_ms = (int)v;
        } else if (strcmp(a, "required=0") == 0) {
            arg_required = 0;
        } else if (strcmp(a, "required=1") == 0) {
            arg_required = 1;
        } else {
            slurm_error("keel-cosched: unknown plugin argument %.300s "
                        "(valid: socket=PATH, timeout_ms=N, required=0|1)",
                        a);
            return -1;
        }
    }
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    if (parse_args(ac, av) != 0)
        return -1;
    /*
     * The option exists where a user gives it (srun: local; sbatch and
     * salloc: allocator) and where it is read back (slurmstepd: remote);
     * slurmd proper and the prolog/epilog have no options.
     */
    switch (spank_context()) {
    case S_CTX_LOCAL:
    case S_CTX_REMOTE:
    case S_CTX_ALLOCATOR:
        if (spank_option_register(sp, &keel_option) != ESPANK_SUCCESS) {
            slurm_error("keel-cosched: cannot register the --keel-cosched option");
            return -1;
        }
        break;
    default:
        break;
    }
    return 0;
}

/* Monotonic milliseconds. */
static int64_t now_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before `deadline`, 0 when it has passed. */
static int ms_left(int64_t deadline)
{
    int64_t left = deadline - now_ms();
    if (left <= 0)
        return 0;
    return left > KEEL_MAX_TIMEOUT_MS ? KEEL_MAX_TIMEOUT_MS : (int)left;
}

/* Waits for `events` on `fd` until `deadline`: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int ms = ms_left(deadline);
        if (ms == 0)
            return 0;
        struct pollfd p = { .fd = fd, .events = events, .revents = 0 };
        int r = poll(&p, 1, ms);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/*
 * Writes the socket path for this node into `out`: the template with
 * "%n" replaced by the node's name (not the host's: several slurmd on
 * one host are several nodes, each with its own NM).
 *
 * The name comes from SLURMD_NODENAME in this process's own environment,
 * which slurmd sets for itself when it starts and slurmstepd inherits.
 * It is not taken from the job's environment (spank_getenv): in
 * task_init_privileged that does not hold SLURMD_NODENAME yet (slurmstepd
 * adds it to each task's environment later), and what it does hold comes
 * from the user's srun, who must not choose which NM registers the task.
 */
static int socket_path(char *out, size_t outlen, char *why, size_t whylen)
{
    char node[KEEL_NODENAME_MAX] = "";
    size_t o = 0;
    for (const char *p = arg_socket; *p != '\0'; p++) {
        const char *piece = p;
        size_t n = 1;
        if (p[0] == '%' && p[1] == '%') {
            p++;
        } else if (p[0] == '%' && p[1] == 'n') {
            p++;
            if (node[0] == '\0') {
                const char *name = getenv("SLURMD_NODENAME");
                if (name == NULL || name[0] == '\0' || strlen(name) >= sizeof(node)) {
                    snprintf(why, whylen, "the socket %s needs the node's name, and "
                             "slurmstepd's environment has no usable SLURMD_NODENAME",
                             arg_socket);
                    return -1;
                }
                memcpy(node, name, strlen(name) + 1);
                for (const char *c = node; *c != '\0'; c++) {
                    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                          (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.')) {
                        snprintf(why, whylen, "the node name in SLURMD_NODENAME is not a "
                                 "plain name ([A-Za-z0-9._-])");
                        return -1;
                    }
                }
            }
            piece = node;
            n = strlen(node);
        }
        if (o + n >= outlen) {
            snprintf(why, whylen, "the socket path from %s is longer than %zu bytes",
                     arg_socket, outlen - 1);
            return -1;
        }
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = '\0';
    return 0;
}

/*
 * Registers the calling task. On success the page path is in `page`
 * (KEEL_MAX_REPLY bytes), "<job>.<step>" in `jobstep` and 0 is returned;
 * otherwise `why` says why and -1 is returned.
 */
static int keel_register(spank_t sp, char *page, char *jobstep, size_t jobsteplen,
                         char *why, size_t whylen)
{
    uint32_t job = 0, step = 0, rank = 0, size = 0, local_size = 0, nodes = 0;
    int local_rank = -1;
    uid_t uid = 0;
    gid_t gid = 0;
    spank_err_t e;

#define ITEM(item, ptr)                                                      \
    do {                                                                     \
        e = spank_get_item(sp, item, ptr);                                   \
        if (e != ESPANK_SUCCESS) {                                           \
            snprintf(why, whylen, "cannot read " #item " from Slurm: %s",    \
                     spank_strerror(e));                                     \
            return -1;                                                       \
        }                                                                    \
    } while (0)
    ITEM(S_JOB_ID, &job);
    ITEM(S_JOB_STEPID, &step);
    ITEM(S_TASK_GLOBAL_ID, &rank);
    ITEM(S_JOB_TOTAL_TASK_COUNT, &size);
    ITEM(S_TASK_ID, &local_rank);
    ITEM(S_JOB_LOCAL_TASK_COUNT, &local_size);
    ITEM(S_JOB_NNODES, &nodes);
    ITEM(S_JOB_UID, &uid);
    ITEM(S_JOB_GID, &gid);
#undef ITEM
    if (local_rank < 0) {
        snprintf(why, whylen, "Slurm gave the task the local id %d", local_rank);
        return -1;
    }
    snprintf(jobstep, jobsteplen, "%u.%u", (unsigned)job, (unsigned)step);

    struct sockaddr_un addr;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    char sockpath[sizeof(addr.sun_path)];
    if (socket_path(sockpath, sizeof(sockpath), why, whylen) != 0)
        return -1;
    memcpy(addr.sun_path, sockpath, strlen(sockpath) + 1);

    char req[KEEL_MAX_REQUEST + 1];
    int n = snprintf(req, sizeof(req),
                     "keel-register 1 job=%u step=%u rank=%u size=%u local_rank=%u "
                     "local_size=%u nodes=%u pid=%ld uid=%lu gid=%lu%s%s\n",
                     (unsigned)job, (unsigned)step, (unsigned)rank, (unsigned)size,
                     (unsigned)local_rank, (unsigned)local_size, (unsigned)nodes,
                     (long)getpid(), (unsigned long)uid, (unsigned long)gid,
                     opt_policy[0] != '\0' ? " policy=" : "", opt_policy);
    if (n < 0 || (size_t)n >= sizeof(req) || n > KEEL_MAX_REQUEST) {
        snprintf(why, whylen, "the registration line does not fit %d bytes",
                 KEEL_MAX_REQUEST);
        return -1;
    }

    int64_t deadline = now_ms() + arg_timeout_ms;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(why, whylen, "cannot make a socket: %s", strerror(errno));
        return -1;
    }
    /*
     * A non-blocking connect on a Unix socket fails with EAGAIN while the
     * listener's backlog is full: retry until the deadline.
     */
    for (;;) {
        if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
            break;
        int err = errno;
        if (err == EINTR)
            continue;
        if (err == EINPROGRESS) {
            int soerr = 0;
            socklen_t len = sizeof(soerr);
            if (wait_fd(fd, POLLOUT, deadline) == 1 &&
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0)
                break;
            err = soerr != 0 ? soerr : ETIMEDOUT;
        } else if (err == EAGAIN && ms_left(deadline) > 0) {
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            continue;
        }
        snprintf(why, whylen, "cannot reach the node manager at %s: %s", sockpath,
                 strerror(err == EAGAIN ? ETIMEDOUT : err));
        close(fd);
        return -1;
    }

    /*
     * MSG_NOSIGNAL: a closed NM is an error here, not a SIGPIPE that kills
     * the task. A failed send is remembered rather than reported at once:
     * an NM that refuses without reading (busy) may have answered and
     * closed first, and its answer says more than EPIPE.
     */
    size_t sent = 0;
    char send_err[160] = "";
    while (sent < (size_t)n) {
        ssize_t w = send(fd, req + sent, (size_t)n - sent, MSG_NOSIGNAL);
        if (w > 0) {
            sent += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(fd, POLLOUT, deadline) == 1)
                continue;
            snprintf(send_err, sizeof(send_err), "timed out");
        } else {
            snprintf(send_err, sizeof(send_err), "%s", w < 0 ? strerror(errno) : "no progress");
        }
        break;
    }

    /* The reply: one line, at most KEEL_MAX_REPLY bytes, by the deadline. */
    char reply[KEEL_MAX_REPLY + 1];
    size_t got = 0;
    char *nl = NULL;
    while (nl == NULL) {
        if (got >= KEEL_MAX_REPLY) {
            snprintf(why, whylen, "the node manager at %s sent a reply longer than %d bytes",
                     sockpath, KEEL_MAX_REPLY);
            close(fd);
            return -1;
        }
        ssize_t r = recv(fd, reply + got, KEEL_MAX_REPLY - got, 0);
        if (r > 0) {
            nl = memchr(reply + got, '\n', (size_t)r);
            got += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        char fault[160];
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(fd, POLLIN, deadline) == 1)
                continue;
            snprintf(fault, sizeof(fault), "did not answer within %d ms", arg_timeout_ms);
        } else if (r == 0) {
            snprintf(fault, sizeof(fault), "closed without a complete reply");
        } else {
            snprintf(fault, sizeof(fault), "failed while replying: %s", strerror(errno));
        }
        close(fd);
        if (send_err[0] != '\0')
            snprintf(why, whylen, "cannot send the registration to %s: %s", sockpath, send_err);
        else
            snprintf(why, whylen, "the node manager at %s %s", sockpath, fault);
        return -1;
    }
    close(fd);
    *nl = '\0';
    for (const char *c = reply; c < nl; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            snprintf(why, whylen, "the node manager at %s sent a reply with a control "
                     "character", sockpath);
            return -1;
        }
    }
    if (strncmp(reply, "ok page=/", 9) == 0) {
        /* reply holds at most KEEL_MAX_REPLY bytes, so the page fits. */
        memcpy(page, reply + 8, strlen(reply + 8) + 1);
        return 0;
    }
    if (strcmp(reply, "refused") == 0 || strncmp(reply, "refused ", 8) == 0) {
        snprintf(why, whylen, "the node manager at %s refused task %u of job %u.%u: %.700s",
                 sockpath, (unsigned)rank, (unsigned)job, (unsigned)step,
                 reply[7] == ' ' ? reply + 8 : "no reason given");
        return -1;
    }
    snprintf(why, whylen, "the node manager at %s sent an unreadable reply: %.200s",
             sockpath, reply);
    return -1;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!spank_remote(sp))
        return 0;
    char page[KEEL_MAX_REPLY];
    char jobstep[32];
    char why[KEEL_WHY_MAX] = "";
    if (opt_given && keel_register(sp, page, jobstep, sizeof(jobstep), why, sizeof(why)) == 0) {
        spank_err_t e = spank_setenv(sp, "KEEL_COSCHED_PAGE", page, 1);
        if (e == ESPANK_SUCCESS)
            e = spank_setenv(sp, "KEEL_COSCHED_JOB", jobstep, 1);
        if (e == ESPANK_SUCCESS)
            return 0;
        snprintf(why, sizeof(why), "registered, but cannot set KEEL_COSCHED_PAGE for job %s: %s",
                 jobstep, spank_strerror(e));
    }
    /*
     * KEEL_COSCHED_PAGE is set exactly when this task registered: a value
     * inherited from srun's environment (a step launched from inside a
     * managed task) names another task's page.
     */
    spank_unsetenv(sp, "KEEL_COSCHED_PAGE");
    spank_unsetenv(sp, "KEEL_COSCHED_JOB");
    if (!opt_given)
        return 0;
    if (arg_required) {
        slurm_error("keel-cosched: %s (the plugin is required=1: the task does not start)",
                    why);
        /*
         * Returning an error is not enough: Slurm ignores a failing
         * callback of a plugin that plugstack.conf lists as `optional`
         * (the task then runs unmanaged), and the plugstack line decides
         * that, not this plugin. This callback runs in the task's own
         * process, forked from slurmstepd and not yet exec'd, so ending
         * it here is what slurmstepd itself does when a `required`
         * plugin fails (_exit(1)): the task does not start either way.
         */
        _exit(1);
    }
    slurm_info("keel-cosched: %s; the task runs without gang scheduling (required=0)", why);
    return 0;
}
