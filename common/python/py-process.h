/* A running CPython: where its runtime and the types a frame's objects must have are in the
 * process, and where its libc keeps a thread's pthread-specific data. Read from
 * /proc/PID/maps, the mapped files' .dynsym (through /proc/PID/root or map_files) and the
 * process's memory. A file's name says only where to look (files with "python" in their names:
 * the interpreter, libpython), never what it is (something named libpython3.11.so that does not
 * define _PyRuntime and Py_Version is not Python). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "py-layout.h"

struct py_process {
        const struct py_layout *layout;
        uint32_t version;      /* Py_Version, e.g. 0x030b02f0 */
        uint64_t runtime;      /* &_PyRuntime in the process */
        uint64_t key_addr;     /* runtime + layout->runtime_tss_key */
        uint64_t code_type;    /* &PyCode_Type: a code object's ob_type */
        uint64_t unicode_type; /* &PyUnicode_Type */
        uint64_t bytes_type;   /* &PyBytes_Type */
        uint16_t tsd_first;    /* glibc: offset in struct pthread of specific_1stblock
                                    * (keys < 32; entry i is 16 bytes, its data at +8) */
        uint16_t tsd_second;   /* offset of specific[] (keys >= 32), or 0 if unknown */
        char path[256];        /* the file defining _PyRuntime, as mapped */
        uint64_t space;        /* what py-code.c keeps its code objects under: set by the caller to
                                * name one program of one process (a pid execs another program,
                                * whose code objects are not the first's); 0: the pid */
};

/* Reads N bytes at ADDR of process PID into BUF. Returns 0; -ESRCH if the process is gone; -EPERM
 * without the right to (CAP_SYS_PTRACE); -EFAULT if not all of it is mapped. */
int py_read_memory(pid_t pid, uint64_t addr, void *buf, size_t n);

/* Inspects process PID. Returns 0 and fills *ret if it runs a CPython of a known layout with a
 * glibc whose pthread-specific data was found; -ENOENT if no mapped file defines _PyRuntime and
 * Py_Version (not Python); -EOPNOTSUPP for a Python that cannot be read (a version without a
 * layout, a free-threaded build, no glibc, an unknown pthread_getspecific), with *ret_why set to
 * a sentence saying why ("python 3.14.0 (/usr/bin/python3.14): no layout for this version"),
 * which the caller frees; -EAGAIN for a Python whose process maps no glibc (yet: a process
 * that just exec'd maps it a few milliseconds later; or ever: musl, a static build); -ESRCH if
 * the process is gone; other negative errnos. */
int py_process_inspect(pid_t pid, struct py_process *ret, char **ret_why);
