/* perf_event_open and naming events. Software events have a fixed table in the kernel ABI;
 * tracepoints are numbered at boot, so their ids and record layouts are read from tracefs at
 * run time; everything else is left to libpfm4, which knows the hardware events of the CPU at
 * hand (and encodes them even on a VM without a PMU, where the open then fails with ENOENT:
 * that is how "not counted on this machine" is detected). */
#include "perf-event.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <perfmon/pfmlib_perf_event.h>

#include "cleanup.h"

int perf_event_open_fd(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
        long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC);

        return fd < 0 ? -errno : (int) fd;
}

const char *perf_event_hint(int r) {
        switch (r) {
        case -EACCES:
        case -EPERM:
                return "permission denied: run as root, or grant CAP_PERFMON (and CAP_SYS_PTRACE for "
                       "other users' processes), or lower /proc/sys/kernel/perf_event_paranoid "
                       "(2 allows only user-space profiling of your own processes)";
        case -ENOENT:
        case -EOPNOTSUPP:
        case -ENODEV:
                return "this machine cannot count the event (no such hardware counter, e.g. in a VM)";
        case -ESRCH:
                return "no such process";
        case -EMFILE:
        case -ENFILE:
                return "too many open files: raise the limit (ulimit -n)";
        case -E2BIG:
                return "the kernel rejected the event's settings (perf_event_attr too big)";
        case -EINVAL:
                return "the kernel rejected the event's settings (period too large, or "
                       "perf_event_max_sample_rate too low?)";
        case -EBUSY:
                return "the counter is in exclusive use by another tool";
        default:
                return strerror(-r);
        }
}

const char *tracefs_path(void) {
        static const char *const candidates[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
        char p[64];

        for (size_t i = 0; i < ELEMENTSOF(candidates); i++) {
                snprintf(p, sizeof p, "%s/events", candidates[i]);
                if (access(p, F_OK) == 0)
                        return candidates[i];
        }
        return NULL;
}

/* Builds tracefs/events/SYS/EVENT/FILE into buf. Returns 0, -EINVAL, -ENODEV. */
static int tracepoint_path(const char *name, const char *file, char *buf, size_t size) {
        const char *colon = strchr(name, ':'), *root = tracefs_path();
        int n;

        if (!colon || colon == name || !colon[1] || strchr(colon + 1, ':') || strchr(name, '/') ||
            strstr(name, ".."))
                return -EINVAL;
        if (!root)
                return -ENODEV;
        n = snprintf(buf, size, "%s/events/%.*s/%s/%s", root, (int) (colon - name), name, colon + 1, file);
        return n < 0 || (size_t) n >= size ? -EINVAL : 0;
}

int tracepoint_id(const char *name, uint64_t *ret) {
        _cleanup_fclose_ FILE *f = NULL;
        unsigned long long id;
        char p[512];
        int r;

        r = tracepoint_path(name, "id", p, sizeof p);
        if (r < 0)
                return r;
        f = fopen(p, "re");
        if (!f)
                return errno == EACCES || errno == EPERM ? -EACCES : -ENOENT;
        if (fscanf(f, "%llu", &id) != 1)
                return -ENOENT;
        *ret = id;
        return 0;
}

int tracepoint_field(const char *name, const char *field, unsigned *ret_offset, unsigned *ret_size) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t cap = 0, flen = strlen(field);
        char p[512];
        int r;

        r = tracepoint_path(name, "format", p, sizeof p);
        if (r < 0)
                return r;
        f = fopen(p, "re");
        if (!f)
                return errno == EACCES || errno == EPERM ? -EACCES : -ENOENT;
        /* Lines look like "\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;": the field's name
         * is the last word before the first ';' (after any array suffix is dropped). */
        while (getline(&line, &cap, f) > 0) {
                char *decl = strstr(line, "field:"), *semi, *name_start, *o, *s;
                unsigned offset, size;

                if (!decl || !(semi = strchr(decl, ';')))
                        continue;
                *semi = '\0';
                if ((s = strchr(decl, '[')))
                        *s = '\0';
                name_start = strrchr(decl, ' ');
                name_start = name_start ? name_start + 1 : decl + 6;
                if (strlen(name_start) != flen || memcmp(name_start, field, flen) != 0)
                        continue;
                o = strstr(semi + 1, "offset:");
                s = strstr(semi + 1, "size:");
                if (!o || !s || sscanf(o, "offset:%u", &offset) != 1 || sscanf(s, "size:%u", &size) != 1)
                        return -ENOENT;
                *ret_offset = offset;
                *ret_size = size;
                return 0;
        }
        return -ENOENT;
}

static const struct {
        const char *name;
        uint64_t config;
} software_events[] = {
        { "cpu-clock", PERF_COUNT_SW_CPU_CLOCK },
        { "task-clock", PERF_COUNT_SW_TASK_CLOCK },
        { "page-faults", PERF_COUNT_SW_PAGE_FAULTS },
        { "faults", PERF_COUNT_SW_PAGE_FAULTS },
        { "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN },
        { "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ },
        { "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES },
        { "cs", PERF_COUNT_SW_CONTEXT_SWITCHES },
        { "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
        { "migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
        { "alignment-faults", PERF_COUNT_SW_ALIGNMENT_FAULTS },
        { "emulation-faults", PERF_COUNT_SW_EMULATION_FAULTS },
};

int pfm_event_encode(const char *name, struct perf_event_attr *attr) {
        static int initialized;
        pfm_perf_encode_arg_t arg = {};
        struct perf_event_attr a = { .size = sizeof a };
        int r;

        if (!initialized)
                initialized = pfm_initialize() == PFM_SUCCESS ? 1 : -1;
        if (initialized < 0)
                return -EIO;
        arg.attr = &a;
        arg.size = sizeof arg;
        r = pfm_get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
        if (r != PFM_SUCCESS)
                return -ENOENT;
        attr->type = a.type;
        attr->config = a.config;
        attr->config1 = a.config1;
        attr->config2 = a.config2;
        return 0;
}

int perf_event_name(const char *name, struct perf_event_attr *attr, bool *ret_tracepoint) {
        uint64_t id;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(software_events); i++)
                if (streq(name, software_events[i].name)) {
                        attr->type = PERF_TYPE_SOFTWARE;
                        attr->config = software_events[i].config;
                        *ret_tracepoint = false;
                        return 0;
                }
        /* "sys:event" may be a tracepoint, or a libpfm4 "EVENT:UMASK": try the tracepoint first,
         * and if tracefs is the problem, say so only when libpfm4 does not know the name. */
        r = -ENOENT;
        if (strchr(name, ':') && !strstr(name, "::")) {
                r = tracepoint_id(name, &id);
                if (r == 0) {
                        attr->type = PERF_TYPE_TRACEPOINT;
                        attr->config = id;
                        *ret_tracepoint = true;
                        return 0;
                }
        }
        if (pfm_event_encode(name, attr) < 0)
                return r == -ENODEV || r == -EACCES ? r : -ENOENT;
        *ret_tracepoint = false;
        return 0;
}
