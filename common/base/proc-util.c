/* /proc/PID/stat is "PID (COMM) STATE ...", and COMM may hold anything, spaces and parentheses
 * too: the state follows the last ')'. */
#include "proc-util.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool proc_is_zombie(pid_t pid) {
        char path[64], buf[512], *paren;
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        paren = strrchr(buf, ')');
        return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}
