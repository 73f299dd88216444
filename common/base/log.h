/* The logger: one line per message to stderr, or to the journal with structured fields once the
 * daemon selects it. common/ logs nothing above debug; daemon/ and client/ log once, at the edge,
 * with the context the user needs. */
#pragma once

#include <stdarg.h>
#include <syslog.h>

enum log_target {
        LOG_TARGET_STDERR,
        LOG_TARGET_JOURNAL,
};

void log_set_max_level(int level);
void log_set_target(enum log_target target);

/* Logs at LEVEL (a syslog priority) unless it is above the maximum level. ERROR, if non-zero, is
 * a negative or positive errno: it is put in errno for %m and returned as a negative errno, so
 * `return log_error_errno(r, ...)` logs and fails in one step. Returns -abs(error). */
int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...)
        __attribute__((format(printf, 6, 7)));

/* As log_internal(), with FIELD ("CPPD_UNIT=nginx.service", or NULL) added to the journal entry
 * as a field of its own, for queries like `journalctl CPPD_UNIT=nginx.service`. */
int log_internal_field(int level, int error, const char *file, int line, const char *func, const char *field,
                       const char *format, ...) __attribute__((format(printf, 7, 8)));

#define log_full_errno(level, error, ...) \
        log_internal((level), (error), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_full_field(level, error, field, ...) \
        log_internal_field((level), (error), __FILE__, __LINE__, __func__, (field), __VA_ARGS__)

#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)
