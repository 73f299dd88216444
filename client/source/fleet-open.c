/* Opening a clickhouse:// URL for cppctl: credentials from a file named by --credentials or
 * $CPPD_CLICKHOUSE_CREDENTIALS, never from the command line; the schema made (writers) or
 * checked (readers); errors in words. */
#include "fleet-open.h"

#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "url-util.h"

const char *fleet_credentials(const char *arg) {
        const char *e;

        if (arg)
                return arg;
        e = getenv(CH_CREDENTIALS_ENV);
        return e && *e ? e : NULL;
}

int log_fleet_error(int r, struct ch_client *c) {
        const char *why = c ? ch_client_error(c) : "";

        return log_error_errno(r, "%s", *why ? why : "ClickHouse: %m");
}

int fleet_open(const char *url, const char *credentials, bool create, struct ch_client **ret) {
        _cleanup_(ch_client_freep) struct ch_client *c = NULL;
        const char *why = NULL;
        char shown[1024];
        int r;

        r = ch_client_open(url, credentials, &c, &why);
        if (r == -EINVAL)
                return log_error_errno(r, "%s: %s (expected clickhouse://[USER@]HOST[:PORT]/DB)",
                                       url_redact(url, shown, sizeof shown), why ?: "bad URL");
        if (r == -ENOMEM)
                return log_error_errno(r, "Out of memory");
        if (r < 0)
                return log_error_errno(r, "%s", why ?: "Cannot open the ClickHouse credentials: %m");
        r = create ? ch_schema_create(c) : ch_schema_check(c);
        if (r < 0)
                return log_fleet_error(r, c);
        *ret = take_ptr(&c);
        return 0;
}
