/* The plan-only API across MPI ranks from C: every rank holds 16 objects,
 * rank 0's ten times heavier; one keel_mpi_plan call gives each rank its
 * export and import lists.
 *
 *   mpicc -DKEEL_MPI -I include examples-c/mpi_plan.c -L DIR -lkeel -o mpi_plan
 *   mpiexec -n 4 ./mpi_plan [tree] [bad]
 *
 * Each rank prints `rank R/N exports E imports I keeps K`; rank 0 then
 * prints the job's lambda before and after. With `tree`, the plan is
 * decided in groups of 2 ranks (keel_mpi_plan_tree). With `bad`, rank 1
 * passes a NULL weights array: every rank prints the same error and
 * exits 3. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "keel.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bad = 0, tree = 0;
    for (int a = 1; a < argc; a++) {
        bad |= strcmp(argv[a], "bad") == 0;
        tree |= strcmp(argv[a], "tree") == 0;
    }

    enum { N = 16 };
    uint64_t ids[N], sizes[N];
    double weights[N];
    for (int i = 0; i < N; i++) {
        ids[i] = (uint64_t)(rank * N + i);
        weights[i] = rank == 0 ? 10.0 : 1.0;
        sizes[i] = 1024;
    }
    keel_mpi_plan_result *plan = NULL;
    const double *w = bad && rank == 1 ? NULL : weights;
    MPI_Fint comm = MPI_Comm_c2f(MPI_COMM_WORLD);
    keel_status status =
        tree ? keel_mpi_plan_tree(comm, 2, "greedy", ids, w, sizes, NULL, N, 0.0, 1.0, &plan)
             : keel_mpi_plan(comm, "greedy", ids, w, sizes, NULL, N, 0.0, 1.0, &plan);
    if (status != KEEL_OK) {
        printf("rank %d/%d error %s: %s\n", rank, size, keel_status_name(status),
               keel_last_error_message());
        MPI_Finalize();
        return 3;
    }
    size_t nexp = 0, nimp = 0, ndest = 0;
    const keel_transfer *exports = keel_mpi_plan_exports(plan, &nexp);
    const keel_transfer *imports = keel_mpi_plan_imports(plan, &nimp);
    const int32_t *dest = keel_mpi_plan_destinations(plan, &ndest);
    size_t keeps = 0;
    for (size_t i = 0; i < ndest; i++) keeps += dest[i] == rank;
    /* Every export leaves this rank for another. */
    for (size_t i = 0; i < nexp; i++)
        if (exports[i].rank == rank || exports[i].rank >= size) return 4;
    for (size_t i = 0; i < nimp; i++)
        if (imports[i].rank == rank || imports[i].rank >= size) return 4;
    printf("rank %d/%d exports %zu imports %zu keeps %zu\n", rank, size, nexp, nimp, keeps);
    keel_mpi_metrics m;
    if (keel_mpi_plan_metrics(plan, &m) != KEEL_OK) return 5;
    if (rank == 0)
        printf("lambda %.4f -> %.4f migrations %llu bytes %llu\n", m.lambda_before,
               m.lambda_after, (unsigned long long)m.migrations,
               (unsigned long long)m.bytes_moved);
    keel_mpi_plan_free(plan);
    MPI_Finalize();
    return 0;
}
