/*
 * keel_spank_host: a stand-in for slurmstepd, so that the plugin's
 * registration (the protocol, its bounds and its failure modes) can be
 * tested without a Slurm cluster (tests/spank_plugin.rs).
 *
 *   keel_spank_host PLUGIN.so OPTION [PLUGIN-ARG ...]
 *
 * OPTION is `--keel-cosched`, `--keel-cosched=POLICY` or `-` (not given).
 * It loads the plugin, calls slurm_spank_init with the plugin arguments
 * (remote context), the option's callback, and then
 * slurm_spank_task_init_privileged in this process, as slurmstepd does in
 * the task's process. The task's items are fixed: job 77, step 3, global
 * task 1 of 4, local task 1 of 2, 2 nodes, this process's uid and gid.
 * SLURMD_NODENAME comes from this process's environment, as slurmstepd's
 * comes from slurmd.
 *
 * Output (stdout, unbuffered): `pid=N` first, then `setenv NAME=VALUE`
 * and `unsetenv NAME` for each change to the task's environment, then
 * `rc=N`. slurm_error and slurm_info print `error: ...` and `info: ...`
 * on stderr. Exit status: 0 the task would start; 2 slurm_spank_init
 * failed; 3 the option was refused; 4 task_init_privileged failed (the
 * plugin may also end the process itself, as a task that must not start).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <slurm/spank.h>

struct spank_handle {
    int unused;
};

static struct spank_option *option;

spank_context_t spank_context(void)
{
    return S_CTX_REMOTE;
}

int spank_remote(spank_t sp)
{
    (void)sp;
    return 1;
}

const char *spank_strerror(spank_err_t err)
{
    return err == ESPANK_SUCCESS ? "success" : "spank error";
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
    (void)sp;
    option = opt;
    return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
    (void)sp;
    va_list ap;
    va_start(ap, item);
    spank_err_t rc = ESPANK_SUCCESS;
    switch (item) {
    case S_JOB_UID:
        *va_arg(ap, uid_t *) = getuid();
        break;
    case S_JOB_GID:
        *va_arg(ap, gid_t *) = getgid();
        break;
    case S_JOB_ID:
        *va_arg(ap, uint32_t *) = 77;
        break;
    case S_JOB_STEPID:
        *va_arg(ap, uint32_t *) = 3;
        break;
    case S_TASK_GLOBAL_ID:
        *va_arg(ap, uint32_t *) = 1;
        break;
    case S_JOB_TOTAL_TASK_COUNT:
        *va_arg(ap, uint32_t *) = 4;
        break;
    case S_TASK_ID:
        *va_arg(ap, int *) = 1;
        break;
    case S_JOB_LOCAL_TASK_COUNT:
        *va_arg(ap, uint32_t *) = 2;
        break;
    case S_JOB_NNODES:
        *va_arg(ap, uint32_t *) = 2;
        break;
    default:
        rc = ESPANK_BAD_ARG;
        break;
    }
    va_end(ap);
    return rc;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
    (void)sp;
    (void)var;
    (void)buf;
    (void)len;
    return ESPANK_ENV_NOEXIST;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
    (void)sp;
    (void)overwrite;
    printf("setenv %s=%s\n", var, val);
    return ESPANK_SUCCESS;
}

spank_err_t spank_unsetenv(spank_t sp, const char *var)
{
    (void)sp;
    printf("unsetenv %s\n", var);
    return ESPANK_SUCCESS;
}

static void say(const char *level, const char *format, va_list ap)
{
    fprintf(stderr, "%s: ", level);
    vfprintf(stderr, format, ap);
    fputc('\n', stderr);
}

void slurm_error(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    say("error", format, ap);
    va_end(ap);
}

void slurm_info(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    say("info", format, ap);
    va_end(ap);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: %s PLUGIN.so --keel-cosched[=POLICY]|- [PLUGIN-ARG ...]\n",
                argv[0]);
        return 64;
    }
    void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (plugin == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 65;
    }
    spank_f *init = (spank_f *)dlsym(plugin, "slurm_spank_init");
    spank_f *task_priv = (spank_f *)dlsym(plugin, "slurm_spank_task_init_privileged");
    if (init == NULL || task_priv == NULL) {
        fprintf(stderr, "%s lacks slurm_spank_init or slurm_spank_task_init_privileged\n",
                argv[1]);
        return 65;
    }
    struct spank_handle handle = { 0 };
    int ac = argc - 3;
    char **av = argv + 3;
    printf("pid=%ld\n", (long)getpid());
    if (init(&handle, ac, av) != 0)
        return 2;
    const char *opt = argv[2];
    if (strcmp(opt, "-") != 0) {
        if (option == NULL || option->cb == NULL) {
            fprintf(stderr, "the plugin registered no option with a callback\n");
            return 65;
        }
        size_t n = strlen(option->name);
        if (strncmp(opt, "--", 2) != 0 || strncmp(opt + 2, option->name, n) != 0 ||
            (opt[2 + n] != '\0' && opt[2 + n] != '=')) {
            fprintf(stderr, "unknown option %s\n", opt);
            return 64;
        }
        const char *optarg = opt[2 + n] == '=' ? opt + 3 + n : NULL;
        if (option->cb(option->val, optarg, 1) != 0)
            return 3;
    }
    int rc = task_priv(&handle, ac, av);
    printf("rc=%d\n", rc);
    return rc == 0 ? 0 : 4;
}
