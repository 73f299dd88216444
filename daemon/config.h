/* cppd's configuration: /etc/cppd/cppd.conf (cppd.conf(5); packaging/cppd.conf shows every key
 * with its default). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"
#include "collector.h"
#include "push-request.h"

#define CONFIG_PATH_DEFAULT "/etc/cppd/cppd.conf"
#define CONFIG_MAX_RESOURCES 16
/* Bytes of a config file, and of one of its lines: it is read whole, and is small. */
#define CONFIG_MAX_SIZE (64 * 1024)
#define CONFIG_MAX_LINE 1024
/* struct config's gid when there is no group: "group =" empty, or the default group absent. */
#define CONFIG_NO_GID ((gid_t) -1)
/* Bytes for one group's entry (getgrnam_r()): its name and its members' names. */
#define CONFIG_GROUP_BUFFER (64 * 1024)

struct config_resource {
        char name[128];
        uint64_t period; /* gticks; 0: the resource's default */
        bool event;      /* "event:NAME": a raw event name */
};

struct config {
        /* [collect] */
        struct config_resource resources[CONFIG_MAX_RESOURCES];
        unsigned n_resources;
        enum unwind_mode unwind;
        bool kernel;
        bool no_jitter;       /* jitter = no: fixed periods (they may alias) */
        bool every_event;     /* every_event = yes: a coin at every event, not a countdown */
        bool no_python;       /* python = no: native frames only, no Python functions */
        bool realtime_reader; /* realtime_reader = yes: the ring reader in SCHED_FIFO */
        uint32_t stack_size;  /* bytes */
        uint32_t ring_size;   /* bytes per CPU, a power of two */
        uint32_t queue_size;  /* bytes of records read from the rings, not yet handled */
        /* [store] */
        char store_path[4096];
        uint64_t flush_interval; /* µs */
        uint64_t bucket;         /* µs, whole seconds */
        uint64_t retention;      /* µs; 0: keep everything */
        uint64_t max_size;       /* bytes of live store; 0: unbounded */
        bool lines;              /* granularity = line: frames keep address, file, line */
        /* [control] */
        char socket_path[108]; /* sizeof(sun_path) */
        char group[64];        /* members may query; "" for none */
        gid_t gid;             /* the group's, looked up when parsed; CONFIG_NO_GID: none */
        unsigned max_sessions;
        /* [fleet]: profiles pushed to fleet profilers (daemon/ship/pusher.c) */
        char push_url[_PUSH_KIND_MAX][PUSH_URL_MAX]; /* base URL by push_kind; "" for none */
        uint64_t push_interval;                      /* µs, whole seconds */
        char push_credentials[4096];                 /* headers file (push-credentials.h); "" for none */
        /* [fleet]: shipping to ClickHouse (ship/shipper.c); url "" ships nothing */
        char fleet_url[1024];         /* clickhouse://[USER@]HOST[:PORT]/DB */
        char fleet_credentials[4096]; /* a file: user, then password; "" for none */
        char fleet_spool[4096];       /* "": "spool" beside the store */
        uint64_t fleet_spool_max;     /* bytes of batches waiting in the spool */
        /* [alloc]: alloc-* counted by uprobes on glibc's allocator (alloc-probe.h) in the
         * processes of these units; off unless units are named */
        char alloc_units[CONFIG_MAX_LINE];         /* space-separated unit names; "": off */
        struct config_resource alloc_resources[2]; /* alloc-bytes, alloc-count by default */
        unsigned n_alloc_resources;
        unsigned alloc_max_processes; /* per libc; 0: no limit */
        /* [symbols]: debuginfod servers the naming thread asks (daemon/namer.c), space-separated
         * as $DEBUGINFOD_URLS; "" (the default): none, no network */
        char debuginfod[1024];
};

/* Whether C pushes to any fleet profiler. */
bool config_pushes(const struct config *c);

/* The spool's bound when spool_max is not set. */
#define CONFIG_FLEET_SPOOL_MAX_DEFAULT (256ULL << 20)

/* Sets every key to its default. The default group, cppd, is looked up: where there is no such
 * group (cppd by hand, not installed), gid is CONFIG_NO_GID and only root may query. */
void config_defaults(struct config *c);

/* Parses TEXT (SIZE bytes) over the defaults into *ret. Returns 0, or -EBADMSG and sets
 * *ret_line and ERROR (of ERROR_SIZE bytes) to what is wrong where: an unknown section or key,
 * a bad value (a group that does not exist is one), a line over CONFIG_MAX_LINE. *ret is
 * untouched on error. */
int config_parse(const char *text, size_t size, struct config *ret, unsigned *ret_line, char *error,
                 size_t error_size);

/* Reads and parses PATH. Returns 0; -ENOENT if there is no such file and -ENODATA if it is empty
 * (the caller decides whether the defaults do: an empty file is also what a reload sees while
 * the file is being rewritten); -EBADMSG as config_parse(), with the line; -EFBIG past CONFIG_MAX_SIZE;
 * -ESTALE if the file changed while it was read (replaced or rewritten: read it again later);
 * -EISDIR, -EBADFD for a folder or another file that is not a regular file (a FIFO: opened
 * without waiting for a writer, read_open()); other negative errnos from reading. */
int config_load(const char *path, struct config *ret, unsigned *ret_line, char *error, size_t error_size);
