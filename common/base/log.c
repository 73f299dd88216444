/* The logger. stderr lines carry the program's name so that output piped from several tools
 * stays attributable; journal entries carry CODE_* fields and the priority instead. A message
 * past LOG_MESSAGE_MAX loses its middle, not its end: it is usually an argument quoted whole (a
 * 100 KB name) with the reason after it, and the reason is what the reader needs. */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-journal.h>

#include "cleanup.h"

/* Bytes of a message shown: its first and last halves around a note of what was left out. */
#define LOG_MESSAGE_MAX 2048

static int max_level = LOG_INFO;
static enum log_target target = LOG_TARGET_STDERR;

void log_set_max_level(int level) {
        max_level = level;
}

void log_set_target(enum log_target t) {
        target = t;
}

static int log_emit(int level, int error, const char *file, int line, const char *func, const char *field,
                    const char *format, va_list ap) {
        int saved = errno;
        _cleanup_free_ char *whole = NULL;
        char buf[LOG_MESSAGE_MAX + 64];
        int n;

        error = abs(error);
        if (level > max_level) {
                errno = saved;
                return -error;
        }

        errno = error; /* so that %m names the error being logged */
        n = vasprintf(&whole, format, ap);
        if (n < 0) {
                whole = NULL;
                snprintf(buf, sizeof buf, "(no memory to format a message: %s)", format);
        } else if ((size_t) n <= LOG_MESSAGE_MAX)
                memcpy(buf, whole, (size_t) n + 1);
        else {
                size_t head = LOG_MESSAGE_MAX / 2, tail = (size_t) n - LOG_MESSAGE_MAX / 2;

                /* Cut at character boundaries: no UTF-8 continuation byte starts either side. */
                while (head > 0 && ((unsigned char) whole[head] & 0xc0) == 0x80)
                        head--;
                while (tail < (size_t) n && ((unsigned char) whole[tail] & 0xc0) == 0x80)
                        tail++;
                snprintf(buf, sizeof buf, "%.*s[... %zu bytes left out ...]%s", (int) head, whole,
                         tail - head, whole + tail);
        }

        if (target == LOG_TARGET_JOURNAL) {
                char code_file[256], code_line[32];

                snprintf(code_file, sizeof code_file, "CODE_FILE=%s", file);
                snprintf(code_line, sizeof code_line, "CODE_LINE=%d", line);
                if (field)
                        sd_journal_send_with_location(code_file, code_line, func, "MESSAGE=%s", buf,
                                                      "PRIORITY=%d", level, "%s", field,
                                                      error ? "ERRNO=%d" : NULL, error, NULL);
                else
                        sd_journal_send_with_location(code_file, code_line, func, "MESSAGE=%s", buf,
                                                      "PRIORITY=%d", level, error ? "ERRNO=%d" : NULL, error,
                                                      NULL);
        } else
                fprintf(stderr, "%s: %s\n", program_invocation_short_name, buf);

        errno = saved;
        return -error;
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format,
                 ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_emit(level, error, file, line, func, NULL, format, ap);
        va_end(ap);
        return r;
}

int log_internal_field(int level, int error, const char *file, int line, const char *func, const char *field,
                       const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_emit(level, error, file, line, func, field, format, ap);
        va_end(ap);
        return r;
}
