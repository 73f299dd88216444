/* cppctl import --folded (import-folded.c): a folded-stacks file into a store. */
#pragma once

#include <stdint.h>

struct import_folded_args {
        const char *db;
        const char *file;     /* "-": standard input */
        const char *resource; /* its name */
        const char *unit;     /* what a gtick is, for a resource cppd does not know; NULL: "1 event" */
        const char *service;  /* the process's systemd unit */
        uint64_t period;      /* gticks per sample */
        const char *host;     /* NULL: this machine's */
        int64_t time;         /* when the samples were taken, unix seconds; 0: now */
        const char *command;  /* the command line, for the run */
};

/* Stores A->file in A->db as one run of A->resource, in one transaction: a bad line or a full
 * disk leaves the store as it was. Says what it did. Returns an exit status. */
int import_folded(const struct import_folded_args *a);
