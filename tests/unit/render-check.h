/* Helpers for the renderer tests: render into memory, count and find strings in the output,
 * and ask python3's parsers whether it is well formed. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* The number of occurrences of NEEDLE in S. */
static inline size_t count_of(const char *s, const char *needle) {
        size_t n = 0;

        for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/* Feeds TEXT to the python3 program CHECK on its stdin; true if it exits 0. */
static inline bool python_accepts(const char *text, const char *check) {
        char command[2048];
        FILE *p;
        int status;

        snprintf(command, sizeof command, "python3 -c '%s'", check);
        p = popen(command, "w");
        if (!p)
                return false;
        fputs(text, p);
        status = pclose(p);
        return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* True if TEXT is well-formed XML. */
static inline bool xml_parses(const char *text) {
        return python_accepts(text,
                              "import sys, xml.dom.minidom\n"
                              "xml.dom.minidom.parseString(sys.stdin.buffer.read())");
}
