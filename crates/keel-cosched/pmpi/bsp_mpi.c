/*
 * bsp_mpi: the FCS paper's synthetic BSP job (section 3.2) as a real MPI
 * program, for the cluster scenarios that Slurm launches across nodes.
 *
 * usage: bsp_mpi ITERATIONS GRANULARITY_US [SCALES]
 *
 * Each of ITERATIONS supersteps computes for GRANULARITY_US times this
 * rank's scale (SCALES: comma-separated factors by rank, e.g. "2,1";
 * missing ones are 1) microseconds of thread CPU time, so that time spent
 * suspended or waiting does not count as compute, then exchanges one
 * integer with both ring neighbours (MPI_Sendrecv each way), as the
 * single-machine job's ring pattern does. A one-rank job only computes.
 *
 * Every message is checked, and at the end an allreduce of a checksum
 * over all supersteps is compared with its closed form: a wrong value
 * exits with status 3. Rank 0 prints "bsp_mpi ok SIZE ITERATIONS SUM
 * job=SLURM_JOB_ID" (job=- outside Slurm).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SCALES 4096

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

volatile double bsp_sink;

static void compute(long long ns)
{
    double x = 1.0;
    long long end = thread_cpu_ns() + ns;
    while (ns > 0 && thread_cpu_ns() < end) {
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    }
    bsp_sink = x;
}

/* The SCALES factor of `rank`, 1 when the list is shorter; -1 on a
 * malformed list. */
static double scale_of(const char *list, int rank)
{
    double scale = 1.0;
    int index = 0;
    const char *p = list;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || v < 0 || v > 1e6 || (*end != ',' && *end != '\0'))
            return -1;
        if (index == rank)
            scale = v;
        if (++index > MAX_SCALES)
            return -1;
        p = *end == ',' ? end + 1 : end;
    }
    return scale;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: bsp_mpi ITERATIONS GRANULARITY_US [SCALES]\n");
        return 2;
    }
    char *end;
    long iterations = strtol(argv[1], &end, 10);
    if (*end || iterations < 1 || iterations > 100000000L) {
        fprintf(stderr, "bsp_mpi: ITERATIONS must be 1 ..= 1e8\n");
        return 2;
    }
    double granularity_us = strtod(argv[2], &end);
    if (*end || !(granularity_us >= 0 && granularity_us <= 1e7)) {
        fprintf(stderr, "bsp_mpi: GRANULARITY_US must be 0 ..= 1e7\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double scale = argc == 4 ? scale_of(argv[3], rank) : 1.0;
    if (scale < 0) {
        fprintf(stderr, "bsp_mpi: SCALES must be comma-separated factors 0 ..= 1e6\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long long step_ns = (long long)(granularity_us * scale * 1e3);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    long long sum = 0;
    int errors = 0;
    for (long it = 0; it < iterations; it++) {
        compute(step_ns);
        if (size > 1) {
            int mine = (int)((rank * 7919L + it) % 1000003L), from_left = -1, from_right = -1;
            MPI_Sendrecv(&mine, 1, MPI_INT, right, 0, &from_left, 1, MPI_INT, left, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Sendrecv(&mine, 1, MPI_INT, left, 1, &from_right, 1, MPI_INT, right, 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errors += from_left != (int)((left * 7919L + it) % 1000003L);
            errors += from_right != (int)((right * 7919L + it) % 1000003L);
        }
        sum += it % 1000;
    }
    long long total = 0;
    MPI_Allreduce(&sum, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    long long per_rank = 0;
    for (long it = 0; it < iterations; it++)
        per_rank += it % 1000;
    if (errors || total != per_rank * size) {
        fprintf(stderr, "bsp_mpi: rank %d: %d wrong messages, checksum %lld, expected %lld\n",
                rank, errors, total, per_rank * size);
        MPI_Finalize();
        return 3;
    }
    if (rank == 0) {
        const char *job = getenv("SLURM_JOB_ID");
        printf("bsp_mpi ok %d %ld %lld job=%s\n", size, iterations, total, job ? job : "-");
    }
    MPI_Finalize();
    return 0;
}
