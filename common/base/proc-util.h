/* What /proc says of a process, for messages. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Whether process PID has exited and waits for its parent to reap it (a zombie, state Z or X in
 * /proc/PID/stat): it is still there, but nothing of it is left to profile. */
bool proc_is_zombie(pid_t pid);
