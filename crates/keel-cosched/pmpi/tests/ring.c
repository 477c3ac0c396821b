/*
 * ring: a tiny MPI program with a known number of FCS communication events,
 * for testing keel_pmpi.
 *
 * usage: ring ITERATIONS COMPUTE_US
 *
 * Each iteration computes for COMPUTE_US * (1 + rank) microseconds of thread
 * CPU time (so rank 0 waits for rank 1 every iteration), then communicates
 * with its ring neighbours through one of seven patterns that each use
 * several blocking calls back to back. With COMPUTE_US well above the
 * wrapper's 50 us threshold, every iteration is exactly one event, so each
 * rank's comm_count must end at ITERATIONS; the final check (an allreduce
 * and a barrier right after the last iteration) merges into the last event.
 * With COMPUTE_US = 0 the whole run is back to back: one event.
 *
 * Every message and collective result is checked; a wrong value aborts with
 * exit status 3.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Keeps the compute loop from being optimised away. */
volatile double ring_sink;

/* Burns `us` microseconds of this thread's CPU time. */
static void compute(long long us)
{
    double x = 1.0;
    long long end = thread_cpu_ns() + us * 1000LL;
    while (us > 0 && thread_cpu_ns() < end) {
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    }
    ring_sink = x;
}

static int errors;

static void expect(int got, int want, const char *what, int iteration)
{
    if (got != want) {
        fprintf(stderr, "ring: iteration %d: %s = %d, expected %d\n", iteration, what, got, want);
        errors++;
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ring ITERATIONS COMPUTE_US\n");
        return 2;
    }
    int iterations = atoi(argv[1]);
    long long compute_us = atoll(argv[2]);

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        /* A blocking send to oneself may wait for a receive that never comes. */
        fprintf(stderr, "ring: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    int right = (rank + 1) % size;
    int left = (rank + size - 1) % size;

    for (int it = 0; it < iterations; it++) {
        compute(compute_us * (1 + rank));
        int mine = rank * 1000 + it;
        int want = left * 1000 + it;
        int got = -1;
        MPI_Request req[2];
        MPI_Status st, sts[2];
        int index;
        switch (it % 7) {
        case 0: /* Send and Recv, ordered by parity so that no rank deadlocks */
            if (rank % 2 == 0) {
                MPI_Send(&mine, 1, MPI_INT, right, 0, MPI_COMM_WORLD);
                MPI_Recv(&got, 1, MPI_INT, left, 0, MPI_COMM_WORLD, &st);
            } else {
                MPI_Recv(&got, 1, MPI_INT, left, 0, MPI_COMM_WORLD, &st);
                MPI_Send(&mine, 1, MPI_INT, right, 0, MPI_COMM_WORLD);
            }
            expect(st.MPI_SOURCE, left, "status source", it);
            break;
        case 1:
            MPI_Sendrecv(&mine, 1, MPI_INT, right, 1, &got, 1, MPI_INT, left, 1, MPI_COMM_WORLD,
                         &st);
            expect(st.MPI_SOURCE, left, "sendrecv status source", it);
            expect(st.MPI_TAG, 1, "sendrecv status tag", it);
            break;
        case 2:
            MPI_Irecv(&got, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(&mine, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, sts); /* not MPI_STATUSES_IGNORE: gcc 12 misreads it as an empty array */
            break;
        case 3:
            MPI_Irecv(&got, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(&mine, 1, MPI_INT, right, 3, MPI_COMM_WORLD, &req[1]);
            MPI_Wait(&req[0], &st);
            MPI_Wait(&req[1], MPI_STATUS_IGNORE);
            expect(st.MPI_TAG, 3, "wait status tag", it);
            break;
        case 4:
            MPI_Irecv(&got, 1, MPI_INT, left, 4, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(&mine, 1, MPI_INT, right, 4, MPI_COMM_WORLD, &req[1]);
            MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE);
            MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE);
            MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE);
            expect(index, MPI_UNDEFINED, "waitany index with no active request", it);
            break;
        case 5: {
            int sum = -1;
            MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            expect(sum, 1000 * size * (size - 1) / 2 + size * it, "allreduce sum", it);
            got = rank == 0 ? want : -1;
            MPI_Bcast(&got, 1, MPI_INT, 0, MPI_COMM_WORLD);
            want = (size - 1) * 1000 + it; /* rank 0's left neighbour */
            break;
        }
        case 6: {
            int sum = -1;
            int *out = malloc(sizeof(int) * (size_t)size);
            int *in = malloc(sizeof(int) * (size_t)size);
            for (int r = 0; r < size; r++)
                out[r] = rank * 100 + r;
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
            MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
            for (int r = 0; r < size; r++)
                expect(in[r], r * 100 + rank, "alltoall element", it);
            MPI_Allgather(&mine, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
            for (int r = 0; r < size; r++)
                expect(in[r], r * 1000 + it, "allgather element", it);
            if (rank == 0)
                expect(sum, (size - 1) * 1000 + it, "reduce max", it);
            got = want;
            free(out);
            free(in);
            break;
        }
        }
        expect(got, want, "received value", it);
    }

    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("ring: %d ranks, %d iterations, %d errors\n", size, iterations, total);
    MPI_Finalize();
    return total == 0 ? 0 : 3;
}
