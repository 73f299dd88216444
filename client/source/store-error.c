/* A SQLite store's errors in words: what happened, and what to do about it (make the store,
 * ask for permission, upgrade cppd), once for every command that opens a store. */
#include "store-error.h"

#include <errno.h>

#include "log.h"

int log_store_error(int r, const char *path, const struct store *s) {
        const char *detail = store_error(s);

        switch (r) {
        case -ENOENT:
                return log_error_errno(EIO, "%s: no such store (make one with 'cppctl import' or pass --db)",
                                       path);
        case -EACCES:
        case -EPERM:
                return log_error_errno(EIO, "%s: permission denied%s%s", path, *detail ? ": " : "", detail);
        case -EROFS:
                return log_error_errno(EIO, "%s: %s", path, *detail ? detail : "read-only to this user");
        case -EBADMSG:
                return log_error_errno(EIO, "%s: not a cppd store, or a damaged one%s%s; left untouched",
                                       path, *detail ? ": " : "", detail);
        case -EPROTONOSUPPORT:
                return log_error_errno(EIO, "%s: written by a newer cppd (%s); use that version", path,
                                       detail);
        case -EPROTO:
                return log_error_errno(EIO, "%s: %s; whoever may write it upgrades it by reading it", path,
                                       detail);
        case -ENOSPC:
                return log_error_errno(EIO, "%s: no space left on the device; nothing was changed", path);
        case -EBUSY:
                return log_error_errno(EIO, "%s: locked by another writer for too long", path);
        case -EOVERFLOW:
                return log_error_errno(EIO,
                                       "%s: %s, past cppd's bound of 2^62 gticks per resource (written by "
                                       "hand, or by an older cppd); left untouched",
                                       path, detail);
        default:
                return log_error_errno(r, "%s: %m%s%s", path, *detail ? ": " : "", detail);
        }
}
