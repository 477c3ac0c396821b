/* Maps the tasks of a load file on PUs with a libkeel policy and prints
 * each task's destination, the import/export lists' sizes and the metrics.
 *
 *   map_loads FILE PUS SPEC [KEY=VALUE...]
 *
 * FILE has one task per line: its load, then optionally its current PU
 * (negative: none yet). Every KEY=VALUE is set with keel_mapper_set_param.
 * Output: "dest <task> <pu>" lines, then "migrations=.. lambda=.." and
 * "all ok". Exit status 1 with libkeel's message on any error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"

static int fail(const char *what, keel_status s) {
    fprintf(stderr, "%s: %s: %s\n", what, keel_status_name((int)s), keel_last_error_message());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s FILE PUS SPEC [KEY=VALUE...]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t cap = 16, n = 0;
    double *loads = malloc(cap * sizeof *loads);
    int64_t *current = malloc(cap * sizeof *current);
    int have_current = 0;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        double load;
        long long pu;
        int got = sscanf(line, "%lf %lld", &load, &pu);
        if (got < 1) continue;
        if (n == cap) {
            cap *= 2;
            loads = realloc(loads, cap * sizeof *loads);
            current = realloc(current, cap * sizeof *current);
        }
        loads[n] = load;
        current[n] = got == 2 ? (int64_t)pu : -1;
        have_current |= got == 2;
        n++;
    }
    fclose(f);

    int rc = 0;
    keel_status status;
    keel_mapper *mapper = keel_mapper_new(argv[3], &status);
    if (!mapper) {
        rc = fail("keel_mapper_new", status);
        goto out;
    }
    for (int i = 4; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "%s: expected KEY=VALUE\n", argv[i]);
            rc = 2;
            goto out;
        }
        *eq = '\0';
        status = keel_mapper_set_param(mapper, argv[i], eq + 1);
        if (status != KEEL_OK) {
            rc = fail("keel_mapper_set_param", status);
            goto out;
        }
    }

    keel_map_input input = {0};
    input.task_loads = loads;
    input.num_tasks = n;
    input.num_pus = (size_t)strtoull(argv[2], NULL, 10);
    if (have_current) {
        input.current_pu = current;
        input.num_current_pu = n;
    }
    keel_map_result *result = NULL;
    status = keel_map(mapper, &input, &result);
    if (status != KEEL_OK) {
        rc = fail("keel_map", status);
        goto out;
    }
    size_t len = 0, imports = 0, exports = 0;
    const int64_t *dest = keel_result_destinations(result, &len);
    for (size_t t = 0; t < len; t++) printf("dest %zu %lld\n", t, (long long)dest[t]);
    keel_result_imports(result, &imports);
    keel_result_exports(result, &exports);
    keel_map_metrics m;
    keel_result_metrics(result, &m);
    printf("spec=%s imports=%zu exports=%zu migrations=%lld\n", keel_mapper_spec(mapper), imports,
           exports, (long long)m.migrations);
    printf("lambda=%.17g lib=%.17g makespan=%.17g\n", m.lambda, m.lib_percent, m.makespan);
#ifndef KEEL_EXAMPLE_LEAK /* the leak check's own test builds it without the free */
    keel_result_free(result);
#endif
    printf("all ok\n");
out:
    keel_mapper_free(mapper);
    free(loads);
    free(current);
    return rc;
}
