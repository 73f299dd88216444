/* The logger. stderr lines carry the program's name so that output piped from several tools
 * stays attributable; journal entries carry CODE_* fields and the priority instead. */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-journal.h>

static int max_level = LOG_INFO;
static enum log_target target = LOG_TARGET_STDERR;

void log_set_max_level(int level) {
        max_level = level;
}

void log_set_target(enum log_target t) {
        target = t;
}

static int log_emit(int level, int error, const char *file, int line, const char *func,
                    const char *field, const char *format, va_list ap) {
        int saved = errno;
        char buf[2048];

        error = abs(error);
        if (level > max_level) {
                errno = saved;
                return -error;
        }

        errno = error;          /* so that %m names the error being logged */
        vsnprintf(buf, sizeof buf, format, ap);

        if (target == LOG_TARGET_JOURNAL) {
                char code_file[256], code_line[32];

                snprintf(code_file, sizeof code_file, "CODE_FILE=%s", file);
                snprintf(code_line, sizeof code_line, "CODE_LINE=%d", line);
                if (field)
                        sd_journal_send_with_location(code_file, code_line, func,
                                                      "MESSAGE=%s", buf,
                                                      "PRIORITY=%d", level,
                                                      "%s", field,
                                                      error ? "ERRNO=%d" : NULL, error,
                                                      NULL);
                else
                        sd_journal_send_with_location(code_file, code_line, func,
                                                      "MESSAGE=%s", buf,
                                                      "PRIORITY=%d", level,
                                                      error ? "ERRNO=%d" : NULL, error,
                                                      NULL);
        } else
                fprintf(stderr, "%s: %s\n", program_invocation_short_name, buf);

        errno = saved;
        return -error;
}

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_emit(level, error, file, line, func, NULL, format, ap);
        va_end(ap);
        return r;
}

int log_internal_field(int level, int error, const char *file, int line, const char *func,
                       const char *field, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_emit(level, error, file, line, func, field, format, ap);
        va_end(ap);
        return r;
}
