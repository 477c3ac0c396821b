/*
 * keel_pmpi: the FCS monitoring layer (Frachtenberg et al., "Flexible
 * CoScheduling", section 2.6 and Table 1) for unmodified MPI programs.
 *
 * Loaded with LD_PRELOAD, this library defines the blocking MPI calls that
 * FCS measures and forwards each to its PMPI_ twin (the MPI profiling
 * interface). Around every call it records, in the shared monitoring page
 * named by KEEL_COSCHED_PAGE (the contract `keel_cosched::shm` reads):
 *
 *   comm_count     C_comm: communication events, where calls with no
 *                  computation between them (at most COMPUTE_EPSILON_NS of
 *                  process CPU time since the previous call ended) are one;
 *   comm_wait_ns   T_comm: wall time spent inside the calls;
 *   spin_ns_total  CPU time the calling thread burnt inside the calls (MPICH
 *                  polls while it waits), which the reader subtracts from
 *                  cpu_ns so that T_cpu counts computation only;
 *   cpu_ns         process CPU time at the update;
 *   updates        completed updates.
 *
 * It also honours the page's wait_mode where the profiling interface lets
 * it: point-to-point calls and MPI_Wait* become a loop on MPI_Test* that
 * spins for spin_ns (spin-block) and then sleeps between tests. Blocking
 * collectives are only measured, unless KEEL_PMPI_NBC=1 turns every one of
 * them into its nonblocking twin plus the same loop (see the README).
 *
 * A process without KEEL_COSCHED_PAGE, or whose page cannot be opened or
 * does not carry the contract's magic and version, reports nothing and runs
 * exactly as it would without the library (one warning on stderr for a page
 * that is named but unusable).
 *
 * The page has a single writer (this process); a mutex serialises the
 * process's own threads, and a seqlock lets the reader take a consistent
 * snapshot without a system call.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- The page contract (must match keel_cosched::shm) ------------------ */

#define KEEL_PAGE_MAGIC 0x4b45454c43534831ULL /* "KEELCSH1" */
#define KEEL_PAGE_VERSION 1u

enum wait_mode { WAIT_POLL = 0, WAIT_SPIN_BLOCK = 1, WAIT_BLOCK = 2 };

struct keel_page {
    uint64_t magic;
    uint32_t version;
    uint32_t wait_mode;
    uint64_t spin_ns;
    uint64_t seq;
    uint64_t comm_count;
    uint64_t comm_wait_ns;
    uint64_t spin_ns_total;
    uint64_t cpu_ns;
    uint64_t updates;
    uint64_t pid;
};

_Static_assert(offsetof(struct keel_page, wait_mode) == 12, "page layout");
_Static_assert(offsetof(struct keel_page, spin_ns) == 16, "page layout");
_Static_assert(offsetof(struct keel_page, seq) == 24, "page layout");
_Static_assert(offsetof(struct keel_page, comm_count) == 32, "page layout");
_Static_assert(offsetof(struct keel_page, comm_wait_ns) == 40, "page layout");
_Static_assert(offsetof(struct keel_page, spin_ns_total) == 48, "page layout");
_Static_assert(offsetof(struct keel_page, cpu_ns) == 56, "page layout");
_Static_assert(offsetof(struct keel_page, updates) == 64, "page layout");
_Static_assert(offsetof(struct keel_page, pid) == 72, "page layout");
_Static_assert(sizeof(struct keel_page) <= 4096, "page layout");

/* ---- Tuning (named defaults, overridable from the environment) --------- */

/* The contract's threshold: CPU time a process must spend between two calls
 * for the second to start a new event. Override: KEEL_PMPI_COMPUTE_EPSILON_NS. */
#define DEFAULT_COMPUTE_EPSILON_NS 50000ULL

/* How long the blocking phase of a wait sleeps between two MPI_Test calls.
 * It bounds the extra latency a blocked process sees after its message
 * arrives (plus the kernel's timer slack, 50 us by default) and costs one
 * MPI_Test per period while blocked. Override: KEEL_PMPI_SLEEP_NS (>= 1). */
#define DEFAULT_SLEEP_NS 50000ULL

/* ---- State -------------------------------------------------------------- */

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static pthread_once_t attach_once = PTHREAD_ONCE_INIT;

/* Guards `page`, `totals`, `seq` and the back-to-back bookkeeping: a
 * threaded program may call MPI from several threads, and the page must
 * still see one writer at a time. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t compute_epsilon_ns = DEFAULT_COMPUTE_EPSILON_NS;
static uint64_t sleep_ns = DEFAULT_SLEEP_NS;
static int use_nbc;

static struct keel_page *page; /* NULL: not reporting */
static uint64_t seq;           /* our copy of page->seq; even between updates */
static struct {
    uint64_t comm_count, comm_wait_ns, spin_ns_total, updates;
} totals;
static int have_last;         /* a measured call has ended since attaching */
static uint64_t last_end_cpu; /* process CPU time when it ended */

/* Nesting depth of wrapped calls on this thread: only the outermost call is
 * measured, so a tool layered above us that calls MPI inside MPI does not
 * count twice. */
static __thread int depth;

static uint64_t now_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A difference of two clock readings, clamped at 0 so that a failed reading
 * (0) never wraps into a huge value. */
static uint64_t since(uint64_t later, uint64_t earlier)
{
    return later > earlier ? later - earlier : 0;
}

static void warn(const char *what, const char *detail)
{
    fprintf(stderr, "keel_pmpi: %s%s%s; this process will not report to the coscheduler\n",
            what, detail ? ": " : "", detail ? detail : "");
}

/* Reads an unsigned tunable; a malformed value keeps the default, loudly. */
static uint64_t env_u64(const char *name, uint64_t fallback, uint64_t min)
{
    const char *text = getenv(name);
    if (text == NULL || *text == '\0')
        return fallback;
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || value < min) {
        fprintf(stderr, "keel_pmpi: %s=%s is not an integer >= %llu; using %llu\n", name,
                text, (unsigned long long)min, (unsigned long long)fallback);
        return fallback;
    }
    return (uint64_t)value;
}

static void configure(void)
{
    compute_epsilon_ns =
        env_u64("KEEL_PMPI_COMPUTE_EPSILON_NS", DEFAULT_COMPUTE_EPSILON_NS, 0);
    sleep_ns = env_u64("KEEL_PMPI_SLEEP_NS", DEFAULT_SLEEP_NS, 1);
    use_nbc = env_u64("KEEL_PMPI_NBC", 0, 0) != 0;
}

/* Writes our totals to the page under the seqlock. Caller holds `lock`
 * and has checked `page`. */
static void publish(uint64_t cpu_ns)
{
    totals.updates += 1;
    __atomic_store_n(&page->seq, seq + 1, __ATOMIC_RELAXED);
    /* Orders the odd seq before the counter stores: a reader that sees any
     * new counter also sees the odd seq (pairs with its acquire fence). */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&page->comm_count, totals.comm_count, __ATOMIC_RELAXED);
    __atomic_store_n(&page->comm_wait_ns, totals.comm_wait_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&page->spin_ns_total, totals.spin_ns_total, __ATOMIC_RELAXED);
    __atomic_store_n(&page->cpu_ns, cpu_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&page->updates, totals.updates, __ATOMIC_RELAXED);
    seq += 2;
    /* Publishes the counters: a reader that loads this even seq with acquire
     * sees every store above. */
    __atomic_store_n(&page->seq, seq, __ATOMIC_RELEASE);
}

/* A forked child is not the process the page belongs to: keep the lock
 * consistent across fork and let only the parent go on writing. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

static void fork_child(void)
{
    if (page != NULL)
        munmap(page, sizeof(struct keel_page));
    page = NULL;
    pthread_mutex_unlock(&lock);
}

static void attach(void)
{
    pthread_once(&config_once, configure);
    const char *path = getenv("KEEL_COSCHED_PAGE");
    if (path == NULL || *path == '\0')
        return;

    /* O_NONBLOCK: a path that names a FIFO must not hang the program. */
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        warn(path, strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size < (off_t)sizeof(struct keel_page)) {
        close(fd);
        warn(path, "not a regular file large enough for the page layout");
        return;
    }
    void *map = mmap(NULL, sizeof(struct keel_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED) {
        warn(path, strerror(map_errno));
        return;
    }
    struct keel_page *p = map;
    if (__atomic_load_n(&p->magic, __ATOMIC_ACQUIRE) != KEEL_PAGE_MAGIC ||
        __atomic_load_n(&p->version, __ATOMIC_RELAXED) != KEEL_PAGE_VERSION) {
        munmap(map, sizeof(struct keel_page));
        warn(path, "wrong magic or version (expected KEELCSH1, version 1)");
        return;
    }

    pthread_mutex_lock(&lock);
    /* Counters are monotonic over the life of the process: if an earlier
     * program image of this process (exec) already reported, continue from
     * its values instead of going backwards under the reader's baseline. */
    seq = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);
    seq += seq & 1; /* an update cut short by exec leaves it odd */
    totals.comm_count = __atomic_load_n(&p->comm_count, __ATOMIC_RELAXED);
    totals.comm_wait_ns = __atomic_load_n(&p->comm_wait_ns, __ATOMIC_RELAXED);
    totals.spin_ns_total = __atomic_load_n(&p->spin_ns_total, __ATOMIC_RELAXED);
    totals.updates = __atomic_load_n(&p->updates, __ATOMIC_RELAXED);
    page = p;
    publish(now_ns(CLOCK_PROCESS_CPUTIME_ID));
    pthread_mutex_unlock(&lock);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- Measuring one call ------------------------------------------------- */

struct call {
    int measured;        /* outermost call with a page: measure it */
    int new_event;       /* computation happened since the previous call */
    enum wait_mode mode; /* how to wait (poll when not reporting) */
    uint64_t spin_ns;
    uint64_t wall0, thread_cpu0;
};

static void call_begin(struct call *c)
{
    c->measured = 0;
    c->new_event = 0;
    c->mode = WAIT_POLL;
    c->spin_ns = 0;
    pthread_once(&config_once, configure);
    if (depth++ > 0)
        return;
    pthread_once(&attach_once, attach);

    pthread_mutex_lock(&lock);
    if (page != NULL) {
        uint64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        c->measured = 1;
        c->new_event = !have_last || since(cpu, last_end_cpu) > compute_epsilon_ns;
        /* The node manager changes these whenever it reclassifies us;
         * reading them at every call makes a change take effect at the next
         * call. */
        uint32_t mode = __atomic_load_n(&page->wait_mode, __ATOMIC_RELAXED);
        /* An unknown code reads as spin-block, as keel_cosched::shm reads
         * it: the mode that neither burns a CPU for long nor adds latency
         * to short waits. */
        c->mode = mode == WAIT_POLL || mode == WAIT_BLOCK ? (enum wait_mode)mode : WAIT_SPIN_BLOCK;
        c->spin_ns = __atomic_load_n(&page->spin_ns, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&lock);
    if (c->measured) {
        c->wall0 = now_ns(CLOCK_MONOTONIC);
        c->thread_cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    }
}

static void call_end(struct call *c)
{
    depth--;
    if (!c->measured)
        return;
    uint64_t wall = since(now_ns(CLOCK_MONOTONIC), c->wall0);
    uint64_t spun = since(now_ns(CLOCK_THREAD_CPUTIME_ID), c->thread_cpu0);
    pthread_mutex_lock(&lock);
    if (page != NULL) {
        uint64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        totals.comm_count += c->new_event ? 1 : 0;
        totals.comm_wait_ns += wall;
        totals.spin_ns_total += spun;
        last_end_cpu = cpu;
        have_last = 1;
        publish(cpu);
    }
    pthread_mutex_unlock(&lock);
}

/* ---- Waiting the way wait_mode asks ------------------------------------ */

typedef int (*test_fn)(void *arg, int *flag);

/* Completes whatever `test` tests: spinning for spin_ns first in spin-block
 * mode, then sleeping sleep_ns between tests (spin-block and block). Poll
 * mode tests in a tight loop, which is what MPICH's own blocking calls do. */
static int wait_loop(const struct call *c, test_fn test, void *arg)
{
    int flag = 0;
    int rc;
    if (c->mode == WAIT_POLL) {
        for (;;) {
            rc = test(arg, &flag);
            if (rc != MPI_SUCCESS || flag)
                return rc;
        }
    }
    if (c->mode == WAIT_SPIN_BLOCK) {
        uint64_t start = now_ns(CLOCK_MONOTONIC);
        for (;;) {
            rc = test(arg, &flag);
            if (rc != MPI_SUCCESS || flag)
                return rc;
            if (since(now_ns(CLOCK_MONOTONIC), start) >= c->spin_ns)
                break;
        }
    }
    struct timespec nap = {
        .tv_sec = (time_t)(sleep_ns / 1000000000ULL),
        .tv_nsec = (long)(sleep_ns % 1000000000ULL),
    };
    for (;;) {
        rc = test(arg, &flag);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        nanosleep(&nap, NULL);
    }
}

struct one_request {
    MPI_Request *request;
    MPI_Status *status;
};

static int test_one(void *arg, int *flag)
{
    struct one_request *a = arg;
    return PMPI_Test(a->request, flag, a->status);
}

static int wait_one(const struct call *c, MPI_Request *request, MPI_Status *status)
{
    struct one_request a = {request, status};
    return wait_loop(c, test_one, &a);
}

struct all_requests {
    int count;
    MPI_Request *requests;
    MPI_Status *statuses;
};

static int test_all(void *arg, int *flag)
{
    struct all_requests *a = arg;
    return PMPI_Testall(a->count, a->requests, flag, a->statuses);
}

struct any_request {
    int count;
    MPI_Request *requests;
    int *index;
    MPI_Status *status;
};

static int test_any(void *arg, int *flag)
{
    struct any_request *a = arg;
    return PMPI_Testany(a->count, a->requests, a->index, flag, a->status);
}

/* Whether a call should run as a nonblocking operation plus wait_loop. For
 * point-to-point calls that is safe whenever a rank wants to block, because
 * MPI_Isend matches MPI_Recv and the reverse. */
static int p2p_loops(const struct call *c)
{
    return c->mode != WAIT_POLL;
}

/* ---- Initialisation and finalisation ------------------------------------ */

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    pthread_once(&attach_once, attach);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    pthread_once(&attach_once, attach);
    return rc;
}

int MPI_Finalize(void)
{
    pthread_mutex_lock(&lock);
    if (page != NULL) {
        publish(now_ns(CLOCK_PROCESS_CPUTIME_ID));
        munmap(page, sizeof(struct keel_page));
        page = NULL;
    }
    pthread_mutex_unlock(&lock);
    return PMPI_Finalize();
}

/* ---- Point-to-point ------------------------------------------------------ */

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    struct call c;
    call_begin(&c);
    int rc;
    if (p2p_loops(&c)) {
        MPI_Request request;
        rc = PMPI_Isend(buf, count, datatype, dest, tag, comm, &request);
        if (rc == MPI_SUCCESS)
            rc = wait_one(&c, &request, MPI_STATUS_IGNORE);
    } else {
        rc = PMPI_Send(buf, count, datatype, dest, tag, comm);
    }
    call_end(&c);
    return rc;
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    struct call c;
    call_begin(&c);
    int rc;
    if (p2p_loops(&c)) {
        MPI_Request request;
        rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, &request);
        if (rc == MPI_SUCCESS)
            rc = wait_one(&c, &request, status);
    } else {
        rc = PMPI_Recv(buf, count, datatype, source, tag, comm, status);
    }
    call_end(&c);
    return rc;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status)
{
    struct call c;
    call_begin(&c);
    int rc;
    if (p2p_loops(&c)) {
        MPI_Request requests[2];
        MPI_Status statuses[2];
        rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &requests[0]);
        if (rc == MPI_SUCCESS) {
            rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &requests[1]);
            if (rc != MPI_SUCCESS) {
                /* Do not leave the receive posted into a buffer the caller
                 * believes is free again. */
                PMPI_Cancel(&requests[0]);
                PMPI_Wait(&requests[0], MPI_STATUS_IGNORE);
            }
        }
        if (rc == MPI_SUCCESS) {
            struct all_requests a = {2, requests, statuses};
            rc = wait_loop(&c, test_all, &a);
            if (status != MPI_STATUS_IGNORE)
                *status = statuses[0];
        }
    } else {
        rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                           recvtype, source, recvtag, comm, status);
    }
    call_end(&c);
    return rc;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    struct call c;
    call_begin(&c);
    int rc = p2p_loops(&c) ? wait_one(&c, request, status) : PMPI_Wait(request, status);
    call_end(&c);
    return rc;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    struct call c;
    call_begin(&c);
    int rc;
    if (p2p_loops(&c)) {
        struct all_requests a = {count, array_of_requests, array_of_statuses};
        rc = wait_loop(&c, test_all, &a);
    } else {
        rc = PMPI_Waitall(count, array_of_requests, array_of_statuses);
    }
    call_end(&c);
    return rc;
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status)
{
    struct call c;
    call_begin(&c);
    int rc;
    if (p2p_loops(&c)) {
        struct any_request a = {count, array_of_requests, indx, status};
        rc = wait_loop(&c, test_any, &a);
    } else {
        rc = PMPI_Waitany(count, array_of_requests, indx, status);
    }
    call_end(&c);
    return rc;
}

/* ---- Collectives ----------------------------------------------------------
 *
 * A nonblocking collective never matches a blocking one, and FCS classifies
 * each process on its own, so ranks of one job can be in different wait
 * modes. The conversion therefore cannot follow the mode: with
 * KEEL_PMPI_NBC=1 (set alike for every rank of the job) every collective
 * goes through its nonblocking twin, whatever the mode and even without a
 * page; otherwise collectives are measured and left to MPICH, which polls.
 */

#define COLLECTIVE(blocking_call, nonblocking_call)                                         \
    do {                                                                                    \
        struct call c;                                                                      \
        call_begin(&c);                                                                     \
        int rc;                                                                             \
        if (use_nbc) {                                                                      \
            MPI_Request request;                                                            \
            rc = nonblocking_call;                                                          \
            if (rc == MPI_SUCCESS)                                                          \
                rc = wait_one(&c, &request, MPI_STATUS_IGNORE);                             \
        } else {                                                                            \
            rc = blocking_call;                                                             \
        }                                                                                   \
        call_end(&c);                                                                       \
        return rc;                                                                          \
    } while (0)

int MPI_Barrier(MPI_Comm comm)
{
    COLLECTIVE(PMPI_Barrier(comm), PMPI_Ibarrier(comm, &request));
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    COLLECTIVE(PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm),
               PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, &request));
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm)
{
    COLLECTIVE(PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm),
               PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, &request));
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    COLLECTIVE(PMPI_Bcast(buffer, count, datatype, root, comm),
               PMPI_Ibcast(buffer, count, datatype, root, comm, &request));
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    COLLECTIVE(PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),
               PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              &request));
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    COLLECTIVE(PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),
               PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               &request));
}
