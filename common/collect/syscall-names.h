/* System call names by number, for this architecture (generated from the kernel headers). */
#pragma once

/* The name of system call NR ("read"), or NULL if unknown. */
const char *syscall_name(unsigned long nr);
