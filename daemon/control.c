/* The control socket. A connection carries one request line and gets its reply lines, then is
 * closed. Everything about it is bounded: the request's length (PROTOCOL_MAX_LINE), the time a
 * peer may take (CONTROL_TIMEOUT_USEC), the connections at once (CONTROL_MAX_CONNECTIONS).
 * Replies are written without blocking the loop: what the socket does not take at once waits
 * for EPOLLOUT. A malformed request gets an ERROR reply and the connection ends; nothing a peer
 * sends can stop the daemon, and a peer that hangs up before its reply costs only its
 * connection: writes use MSG_NOSIGNAL (and cppd ignores SIGPIPE besides), so EPIPE comes back
 * instead of a signal that would end the daemon.
 *
 * The socket is open to every local user, so no one user may take all its connections: a uid
 * other than root holds at most CONTROL_MAX_PER_UID, the users outside the group together leave
 * CONTROL_RESERVED_GROUP for root and the group, and the group leaves CONTROL_RESERVED_ROOT for
 * root. The counts are found by walking the open connections (at most 64) at each accept.
 * Sessions likewise: a uid other than root starts at most CONTROL_MAX_SESSIONS_PER_UID, and
 * such users leave CONTROL_RESERVED_SESSIONS of max_sessions to root.
 *
 * Who may do what, from the peer's credentials (SO_PEERCRED) at connect time:
 *   status, sessions (all), flush   root, or a member of the configured group
 *   sessions (own), attach pid=, detach (own)   anyone, for processes it owns
 *   attach unit=, reload            root */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "grow.h"
#include "log.h"
#include "manager.h"
#include "namer.h"
#include "parse-util.h"
#include "proc-util.h"
#include "protocol.h"
#include "session.h"
#include "unit.h"

struct connection {
        struct control *control;
        struct connection *next; /* in control->connections */
        int fd;
        struct ucred peer;
        bool in_group;
        sd_event_source *io, *timer;
        char in[PROTOCOL_MAX_LINE];
        size_t n_in;
        char *out; /* the reply */
        size_t n_out, sent, cap_out;
        bool replied;
        bool draining; /* replied in full: reading what the peer still sends */
        size_t drained;
};

struct control {
        struct manager *manager;
        int fd;
        bool activated; /* passed by systemd: not ours to unlink */
        sd_event_source *listen;
        struct connection *connections; /* open ones, newest first */
        unsigned n_connections;
};

static void connection_free(struct connection *c) {
        if (!c)
                return;
        for (struct connection **p = &c->control->connections; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                close(c->fd);
        c->control->n_connections--;
        free(c->out);
        free(c);
}

/* Appends a reply line: WORD and NULL-terminated key/value pairs. */
static int reply(struct connection *c, const char *word, ...) {
        const char *kv[2 * PROTOCOL_MAX_FIELDS + 1];
        char line[PROTOCOL_MAX_LINE];
        unsigned n = 0;
        va_list ap;
        int len, r;

        va_start(ap, word);
        for (const char *k; n < 2 * PROTOCOL_MAX_FIELDS && (k = va_arg(ap, const char *));) {
                kv[n++] = k;
                kv[n++] = va_arg(ap, const char *);
        }
        va_end(ap);
        kv[n] = NULL;
        len = protocol_format(line, sizeof line, word, kv);
        if (len < 0)
                return len;
        r = GROW(c->out, c->cap_out, c->n_out + len);
        if (r < 0)
                return r;
        memcpy(c->out + c->n_out, line, len);
        c->n_out += len;
        return 0;
}

static int reply_error(struct connection *c, int error, const char *format, ...) {
        char message[512];
        const char *name;
        va_list ap;

        va_start(ap, format);
        vsnprintf(message, sizeof message, format, ap);
        va_end(ap);
        name = strerrorname_np(abs(error));
        return reply(c, "error", "errno", name ?: "EIO", "message", message, NULL);
}

/* Numbers formatted for one reply line: each call takes the next slot. */
struct numbers {
        char slot[16][24];
        unsigned n;
};

static const char *num(struct numbers *nb, uint64_t v) {
        char *s = nb->slot[nb->n++ % ELEMENTSOF(nb->slot)];

        snprintf(s, sizeof nb->slot[0], "%" PRIu64, v);
        return s;
}

static bool may_query(const struct connection *c) {
        return c->peer.uid == 0 || c->in_group;
}

/* The real uid of process PID, from /proc/PID/status. */
static int process_uid(pid_t pid, uid_t *ret) {
        char path[64], line[256];
        FILE *f;
        int r = -ESRCH;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -ESRCH;
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "Uid: %u", ret) == 1) {
                        r = 0;
                        break;
                }
        fclose(f);
        return r;
}

static void session_line(struct connection *c, const struct session *s) {
        struct numbers nb = {};
        uint64_t now;

        sd_event_now(c->control->manager->event, CLOCK_MONOTONIC, &now);
        reply(c, "session", "id", num(&nb, s->id), "target", s->target, "run", num(&nb, session_run_id(s)),
              "owner", num(&nb, s->owner), "seconds", num(&nb, (now - s->started_usec) / 1000000), NULL);
}

static void do_status(struct connection *c) {
        struct manager *m = c->control->manager;
        struct collector_stats st;
        struct collector_resource_stats rs;
        struct numbers nb = {};
        char rss[32] = "0", line[256];
        struct mallinfo2 mi;
        uint64_t live = 0, file = 0, now;
        FILE *f;

        collector_get_stats(m->collector, &st);
        (void) store_size(m->store, &live, &file);
        f = fopen("/proc/self/status", "re");
        while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "VmRSS: %31s", rss) == 1)
                        break;
        if (f)
                fclose(f);
        sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        /* What the allocations hold, apart from pages malloc keeps after a burst (RSS swings). */
        mi = mallinfo2();
        reply(c, "daemon", "pid", num(&nb, getpid()), "uptime", num(&nb, (now - m->started_usec) / 1000000),
              "store", m->config.store_path, "store_bytes", num(&nb, file), "store_live_bytes",
              num(&nb, live), "rss_kib", rss, "heap_kib", num(&nb, (mi.uordblks + mi.hblkhd) / 1024),
              "queue_kib", num(&nb, st.queue_bytes / 1024), "run", num(&nb, collector_run_id(m->collector)),
              "unwind", m->config.unwind == UNWIND_DWARF ? "dwarf" : "fp", "samples", num(&nb, st.samples),
              "samples_per_second", num(&nb, m->samples_per_second), "lost", num(&nb, st.lost), "processes",
              num(&nb, st.processes), "modules", num(&nb, st.modules), "flush_failures",
              num(&nb, m->flush_failures), NULL);
        /* What is in memory now and how flushes go, on a line of its own (num() has 16 slots). */
        nb.n = 0;
        reply(c, "state", "held", num(&nb, st.held), "live_processes", num(&nb, st.live_processes),
              "live_threads", num(&nb, st.live_threads), "flushes", num(&nb, m->flushes), "flush_ms_last",
              num(&nb, m->flush_usec_last / 1000), "flush_ms_max", num(&nb, m->flush_usec_max / 1000),
              "addresses", num(&nb, st.addresses), "lag_ms", num(&nb, st.lag_ns / 1000000), "stacks_cut",
              num(&nb, st.stacks_cut), "stacks_cut_short", num(&nb, st.stacks_cut_short), "rereads",
              num(&nb, st.proc_rereads), NULL);
        /* Python frames: in how many samples, of how many processes; or why not. */
        nb.n = 0;
        reply(c, "python", "processes", num(&nb, st.python_processes), "samples", num(&nb, st.python_samples),
              "cut", num(&nb, st.python_cut), "unreadable", num(&nb, st.python_unreadable), "walk_ns",
              num(&nb, st.python_walks ? st.python_walk_ns / st.python_walks : 0), "unsupported",
              num(&nb, st.python_unsupported), "off", collector_python_why(m->collector), "disabled",
              m->config.no_python ? "yes" : NULL, NULL);
        for (unsigned i = 0; i < collector_n_resources(m->collector); i++) {
                nb.n = 0;
                collector_resource_stats(m->collector, i, &rs);
                reply(c, "resource", "name", rs.name, "period", num(&nb, rs.period), "active",
                      rs.active ? "yes" : "no", "samples", num(&nb, rs.samples), "hits", num(&nb, rs.hits),
                      "stored", num(&nb, rs.stored), "lost", num(&nb, rs.lost), "samples_per_second",
                      num(&nb, (uint64_t) m->resource_rate[i]), "probed",
                      rs.libc ? num(&nb, rs.probed) : NULL, "not_measured",
                      rs.libc || rs.uncounted ? num(&nb, rs.uncounted) : NULL, "not_measured_why",
                      rs.uncounted ? rs.uncounted_why : NULL, NULL);
        }
        for (unsigned i = 0; m->pusher && i < pusher_n_targets(m->pusher); i++) {
                struct pusher_target_stats ps;

                nb.n = 0;
                pusher_target_stats(m->pusher, i, &ps);
                reply(c, "push", "target", push_kind_name(ps.kind), "url", ps.url, "interval",
                      num(&nb, m->config.push_interval / 1000000), "intervals", num(&nb, ps.intervals),
                      "pushed", num(&nb, ps.pushed), "failed", num(&nb, ps.failed), "error",
                      ps.error[0] ? ps.error : NULL, NULL);
        }
        if (m->shipper) {
                struct shipper_status fs;

                shipper_status(m->shipper, &fs);
                nb.n = 0;
                reply(c, "fleet", "url", fs.url, "spool", fs.spool, "spool_max", num(&nb, fs.spool_max),
                      "sent", num(&nb, fs.sent), "pending", num(&nb, fs.pending), "pending_bytes",
                      num(&nb, fs.pending_bytes), "dropped", num(&nb, fs.dropped), "dropped_hits",
                      num(&nb, fs.dropped_hits), "last_success", num(&nb, fs.last_success), "last_error_time",
                      num(&nb, fs.last_error_time), "spool_ms", num(&nb, fs.spool_usec / 1000),
                      "spool_cpu_ms", num(&nb, fs.spool_cpu_usec / 1000), "last_error", fs.last_error,
                      "damaged", num(&nb, fs.damaged), "set_aside", num(&nb, fs.set_aside), "set_aside_bytes",
                      num(&nb, fs.set_aside_bytes), "spool_error_time", num(&nb, fs.spool_error_time),
                      "spool_error", fs.spool_error, NULL);
        }
        if (m->namer) {
                struct namer_stats ns;

                namer_get_stats(m->namer, &ns);
                nb.n = 0;
                reply(c, "symbols", "servers", m->config.debuginfod, "passes", num(&nb, ns.passes),
                      "frames_named", num(&nb, ns.frames_named), "modules_missing",
                      num(&nb, ns.modules_missing), "error",
                      ns.last_error < 0 ? strerror(-ns.last_error) : NULL, NULL);
        }
        for (unsigned i = 0; i < m->n_sessions; i++)
                session_line(c, m->sessions[i]);
        reply(c, "ok", NULL);
}

static void do_attach(struct connection *c, const struct protocol_message *req) {
        struct manager *m = c->control->manager;
        const char *pid_s = protocol_get(req, "pid"), *unit = protocol_get(req, "unit");
        const char *duration_s = protocol_get(req, "duration"), *unwind = protocol_get(req, "unwind");
        struct session_request sr = {
                .unit = unit,
                .resources = protocol_get(req, "resources"),
                .unwind = m->config.unwind,
                .owner = c->peer.uid,
        };
        struct session *s;
        const char *what = NULL;
        struct numbers nb = {};
        uint64_t pid = 0;
        uid_t owner;
        int r;

        if (!!pid_s == !!unit) {
                reply_error(c, EINVAL, "attach needs pid= or unit=");
                return;
        }
        if (pid_s && safe_atou64_range(pid_s, 1, INT32_MAX, &pid) < 0) {
                reply_error(c, EINVAL, "pid=%s is not a process id", pid_s);
                return;
        }
        if (unit && !unit_name_valid(unit)) {
                reply_error(c, EINVAL, "unit=%s is not a unit name", unit);
                return;
        }
        if (duration_s) {
                char *end;

                errno = 0;
                sr.duration = strtod(duration_s, &end);
                if (errno || *end || !(sr.duration > 0) || sr.duration > 31 * 86400.0) {
                        reply_error(c, EINVAL, "duration=%s: expected seconds", duration_s);
                        return;
                }
        }
        if (unwind && !streq(unwind, "dwarf") && !streq(unwind, "fp")) {
                reply_error(c, EINVAL, "unwind=%s: expected dwarf or fp", unwind);
                return;
        }
        if (unwind)
                sr.unwind = streq(unwind, "fp") ? UNWIND_FP : UNWIND_DWARF;

        /* Permissions: root anything; others their own processes only. */
        if (unit && c->peer.uid != 0) {
                reply_error(c, EACCES, "only root may profile a unit");
                return;
        }
        if (pid) {
                if (process_uid(pid, &owner) < 0) {
                        reply_error(c, ESRCH, "no process %" PRIu64, pid);
                        return;
                }
                if (c->peer.uid != 0 && owner != c->peer.uid) {
                        reply_error(c, EACCES, "process %" PRIu64 " belongs to another user", pid);
                        return;
                }
                sr.pid = pid;
        }

        if (c->peer.uid != 0) {
                unsigned mine = 0, users = 0;

                for (unsigned i = 0; i < m->n_sessions; i++) {
                        mine += m->sessions[i]->owner == c->peer.uid;
                        users += m->sessions[i]->owner != 0;
                }
                if (mine >= CONTROL_MAX_SESSIONS_PER_UID) {
                        reply_error(c, EBUSY, "you have %u sessions already, the most one user may have",
                                    mine);
                        return;
                }
                if (m->config.max_sessions > CONTROL_RESERVED_SESSIONS &&
                    users >= m->config.max_sessions - CONTROL_RESERVED_SESSIONS) {
                        reply_error(c, EBUSY, "too many sessions (max_sessions=%u, %d of them kept for root)",
                                    m->config.max_sessions, CONTROL_RESERVED_SESSIONS);
                        return;
                }
        }
        r = manager_start_session(m, &sr, &s, &what);
        if (r == -EBUSY)
                reply_error(c, EBUSY, "too many sessions (max_sessions=%u)", m->config.max_sessions);
        else if (r == -ENOENT && what)
                reply_error(c, ENOENT, "unknown resource or event '%s'", what);
        else if (r == -ENOENT && unit)
                reply_error(c, ENOENT, "no unit %s is running", unit);
        else if (r == -ENOEXEC && what)
                reply_error(c, ENOEXEC, "cannot count the allocations of the target: %s", what);
        else if (r == -ESRCH && proc_is_zombie((pid_t) pid))
                reply_error(c, ESRCH,
                            "process %" PRIu64
                            " has exited (a zombie its parent has not reaped): nothing is left "
                            "to profile",
                            pid);
        else if (r == -ESRCH)
                reply_error(c, ESRCH, "no process %" PRIu64, pid);
        else if (r == -ENODEV)
                reply_error(c, ENODEV, "none of the resources can be counted on this machine");
        else if (r < 0)
                reply_error(c, r, "cannot profile %s%s%s: %s", unit ?: pid_s, what ? " for " : "", what ?: "",
                            strerror(-r));
        else {
                reply(c, "session", "id", num(&nb, s->id), "run", num(&nb, session_run_id(s)), "store",
                      m->config.store_path, "target", s->target, NULL);
                reply(c, "ok", NULL);
        }
}

static void do_detach(struct connection *c, const struct protocol_message *req) {
        struct manager *m = c->control->manager;
        const char *id_s = protocol_get(req, "id");
        struct numbers nb = {};
        uint64_t id, run;
        int r;

        if (!id_s || safe_atou64(id_s, &id) < 0) {
                reply_error(c, EINVAL, "detach needs id=");
                return;
        }
        for (unsigned i = 0; i < m->n_sessions; i++) {
                struct session *s = m->sessions[i];

                if (s->id != id)
                        continue;
                if (c->peer.uid != 0 && s->owner != c->peer.uid) {
                        reply_error(c, EACCES, "session %" PRIu64 " belongs to another user", id);
                        return;
                }
                run = session_run_id(s);
                r = session_end(s);
                if (r < 0)
                        reply_error(c, r, "the session's last samples could not be stored: %s", strerror(-r));
                else {
                        reply(c, "session", "id", num(&nb, id), "run", num(&nb, run), NULL);
                        reply(c, "ok", NULL);
                }
                return;
        }
        reply_error(c, ENOENT, "no session %" PRIu64, id);
}

static void handle(struct connection *c, const struct protocol_message *req) {
        struct manager *m = c->control->manager;
        int r, q;

        if (streq(req->word, "status")) {
                if (!may_query(c))
                        reply_error(c, EACCES, "status is for root and members of group %s", m->config.group);
                else
                        do_status(c);
        } else if (streq(req->word, "sessions")) {
                for (unsigned i = 0; i < m->n_sessions; i++)
                        if (may_query(c) || m->sessions[i]->owner == c->peer.uid)
                                session_line(c, m->sessions[i]);
                reply(c, "ok", NULL);
        } else if (streq(req->word, "attach"))
                do_attach(c, req);
        else if (streq(req->word, "detach"))
                do_detach(c, req);
        else if (streq(req->word, "flush")) {
                if (!may_query(c))
                        reply_error(c, EACCES, "flush is for root and members of group %s", m->config.group);
                else if ((r = manager_catch_up(m)) < 0 && r != -ETIMEDOUT)
                        reply_error(c, r, "the samples could not be handled: %s", strerror(-r));
                else if ((q = manager_flush(m)) < 0)
                        reply_error(c, q, "the store refused the flush: %s", strerror(-q));
                else if (r == -ETIMEDOUT)
                        /* Stored what was handled: the client may ask again for the rest. */
                        reply(c, "ok", "partial", "yes", NULL);
                else {
                        /* a client wants what was stored: name it soon (cppctl record's end) */
                        if (m->namer)
                                namer_wake(m->namer);
                        reply(c, "ok", NULL);
                }
        } else if (streq(req->word, "reload")) {
                if (c->peer.uid != 0)
                        reply_error(c, EACCES, "only root may reload");
                else if ((r = manager_reload(m)) < 0)
                        reply_error(c, r, "the configuration was not reloaded: %s", strerror(-r));
                else
                        reply(c, "ok", NULL);
        } else
                reply_error(c, EBADMSG, "unknown request '%s'", req->word);
}

static int on_timeout(sd_event_source *src, uint64_t usec, void *userdata) {
        connection_free(userdata);
        return 0;
}

/* Bytes read and thrown away after a reply, before hanging up anyway. */
#define CONTROL_MAX_DRAIN (1024 * 1024)

static int on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        struct connection *c = userdata;
        struct protocol_message *req;
        char *nl;
        ssize_t n;

        if (c->draining) {
                /* Closing with unread input makes the kernel reset the connection, and the peer
                 * may lose the reply; so read it to the end first. */
                n = read(c->fd, c->in, sizeof c->in);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return 0;
                c->drained += n > 0 ? n : 0;
                if (n <= 0 || c->drained > CONTROL_MAX_DRAIN)
                        connection_free(c);
                return 0;
        }
        if (!c->replied) {
                n = read(c->fd, c->in + c->n_in, sizeof c->in - c->n_in);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return 0;
                if (n <= 0) {
                        connection_free(c);
                        return 0;
                }
                c->n_in += n;
                nl = memchr(c->in, '\n', c->n_in);
                if (!nl && c->n_in < sizeof c->in)
                        return 0; /* more to come */
                req = malloc(sizeof *req);
                if (!req) {
                        connection_free(c);
                        return 0;
                }
                if (!nl || protocol_parse(c->in, nl - c->in, req) < 0)
                        reply_error(c, EBADMSG,
                                    "malformed request: expected 'WORD key=value ...\\n', "
                                    "at most %d bytes",
                                    PROTOCOL_MAX_LINE - 1);
                else
                        handle(c, req);
                free(req);
                c->replied = true;
                if (c->n_out == 0) { /* no memory for the reply */
                        connection_free(c);
                        return 0;
                }
                sd_event_source_set_io_events(c->io, EPOLLOUT);
        }
        n = send(c->fd, c->out + c->sent, c->n_out - c->sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n < 0) {
                connection_free(c);
                return 0;
        }
        c->sent += n;
        if (c->sent == c->n_out) {
                (void) shutdown(c->fd, SHUT_WR);
                c->draining = true;
                sd_event_source_set_io_events(c->io, EPOLLIN);
        }
        return 0;
}

/* Whether the peer PID is in group GID, by its supplementary groups in /proc/PID/status. */
static bool peer_in_group(const struct ucred *peer, gid_t gid) {
        char path[64], line[4096];
        bool found = false;
        FILE *f;

        if (peer->gid == gid)
                return true;
        snprintf(path, sizeof path, "/proc/%d/status", (int) peer->pid);
        f = fopen(path, "re");
        if (!f)
                return false;
        while (fgets(line, sizeof line, f))
                if (startswith(line, "Groups:")) {
                        char *save = NULL;

                        for (char *g = strtok_r(line + 7, " \t\n", &save); g;
                             g = strtok_r(NULL, " \t\n", &save))
                                found = found || strtoul(g, NULL, 10) == gid;
                        break;
                }
        fclose(f);
        return found;
}

/* Why a peer of credentials PEER (IN_GROUP: a member of the configured group) may not have one
 * more connection now, or NULL if it may (the rules atop this file). */
static const char *refusal(const struct control *ctl, const struct ucred *peer, bool in_group) {
        unsigned same_uid = 0, outsiders = 0;

        for (const struct connection *c = ctl->connections; c; c = c->next) {
                same_uid += c->peer.uid == peer->uid;
                outsiders += c->peer.uid != 0 && !c->in_group;
        }
        if (ctl->n_connections >= CONTROL_MAX_CONNECTIONS)
                return "too many connections";
        if (peer->uid == 0)
                return NULL;
        if (same_uid >= CONTROL_MAX_PER_UID)
                return "too many connections from this user";
        if (in_group)
                return ctl->n_connections >= CONTROL_MAX_CONNECTIONS - CONTROL_RESERVED_ROOT ?
                        "too many connections" :
                        NULL;
        return outsiders >= CONTROL_MAX_CONNECTIONS - CONTROL_RESERVED_GROUP ? "too many connections" : NULL;
}

static int on_accept(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        struct control *ctl = userdata;
        const struct config *config = &ctl->manager->config;
        struct connection *c;
        struct ucred peer;
        socklen_t len = sizeof peer;
        const char *why;
        bool in_group;
        int cfd, r;

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0)
                return 0;
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0) {
                close(cfd);
                return 0;
        }
        in_group = config->gid != CONFIG_NO_GID && peer_in_group(&peer, config->gid);
        why = refusal(ctl, &peer, in_group);
        if (why) {
                char busy[128];
                int n = protocol_format(busy, sizeof busy, "error",
                                        (const char *const[]) { "errno", "EBUSY", "message", why, NULL });

                /* One try, never waiting: the peer reads it or not. */
                if (n > 0)
                        (void) send(cfd, busy, n, MSG_DONTWAIT | MSG_NOSIGNAL);
                close(cfd);
                log_debug("Connection of uid %u refused: %s", (unsigned) peer.uid, why);
                return 0;
        }
        c = calloc(1, sizeof *c);
        if (!c) {
                close(cfd);
                return 0;
        }
        c->control = ctl;
        c->fd = cfd;
        c->peer = peer;
        c->in_group = in_group;
        c->next = ctl->connections;
        ctl->connections = c;
        ctl->n_connections++;
        r = sd_event_add_io(ctl->manager->event, &c->io, cfd, EPOLLIN, on_io, c);
        if (r >= 0)
                r = sd_event_add_time_relative(ctl->manager->event, &c->timer, CLOCK_MONOTONIC,
                                               CONTROL_TIMEOUT_USEC, 100000, on_timeout, c);
        if (r < 0)
                connection_free(c);
        return 0;
}

int control_new(struct manager *m, struct control **ret) {
        struct control *ctl;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int n, r;

        ctl = calloc(1, sizeof *ctl);
        if (!ctl)
                return -ENOMEM;
        ctl->manager = m;
        ctl->fd = -1;

        n = sd_listen_fds(true);
        if (n > 0 && sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) > 0) {
                ctl->fd = SD_LISTEN_FDS_START;
                ctl->activated = true;
        } else {
                char dir[sizeof sa.sun_path], *slash;

                snprintf(sa.sun_path, sizeof sa.sun_path, "%s", m->config.socket_path);
                snprintf(dir, sizeof dir, "%s", m->config.socket_path);
                slash = strrchr(dir, '/');
                if (slash && slash != dir) {
                        *slash = '\0';
                        (void) mkdir(dir, 0755);
                }
                ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (ctl->fd < 0) {
                        r = -errno;
                        goto fail;
                }
                (void) unlink(sa.sun_path); /* a daemon's socket left behind: ours now */
                if (bind(ctl->fd, (struct sockaddr *) &sa, sizeof sa) < 0 || chmod(sa.sun_path, 0666) < 0 ||
                    listen(ctl->fd, SOMAXCONN) < 0) {
                        r = -errno;
                        goto fail;
                }
        }
        (void) fcntl(ctl->fd, F_SETFL, fcntl(ctl->fd, F_GETFL) | O_NONBLOCK);
        r = sd_event_add_io(m->event, &ctl->listen, ctl->fd, EPOLLIN, on_accept, ctl);
        if (r < 0)
                goto fail;
        *ret = ctl;
        return 0;
fail:
        control_free(ctl);
        return r;
}

struct control *control_free(struct control *ctl) {
        if (!ctl)
                return NULL;
        while (ctl->connections)
                connection_free(ctl->connections);
        sd_event_source_disable_unref(ctl->listen);
        if (ctl->fd >= 0) {
                if (!ctl->activated)
                        (void) unlink(ctl->manager->config.socket_path);
                close(ctl->fd);
        }
        free(ctl);
        return NULL;
}
