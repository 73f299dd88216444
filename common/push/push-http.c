/* One POST per call, with libcurl's easy interface, on the caller's thread: the daemon posts from
 * a thread of its own (daemon/ship/pusher.c), a few requests per push interval, so a handle per
 * request costs nothing that matters and keeps no state between pushes. Timeouts bound every
 * request, and a progress callback aborts one when the daemon stops. Only http and https are
 * allowed and redirects are not followed: the configuration names the receiver. */
#include "push-http.h"

#include <errno.h>
#include <string.h>

#include <curl/curl.h>

#include "cleanup.h"

int push_http_init(void) {
        return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

/* Keeps the reply's first PUSH_HTTP_REPLY_MAX bytes and takes the rest unread. */
static size_t on_body(char *data, size_t size, size_t n, void *userdata) {
        struct push_http_reply *reply = userdata;
        size_t have = strlen(reply->body), take = MIN(size * n, PUSH_HTTP_REPLY_MAX - have);

        memcpy(reply->body + have, data, take);
        reply->body[have + take] = '\0';
        return size * n;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
        const bool *cancel = userdata;

        return cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED) ? 1 : 0;
}

/* Appends S to *LIST. Returns false when there is no memory (*LIST as it was). */
static bool append(struct curl_slist **list, const char *s) {
        struct curl_slist *l = curl_slist_append(*list, s);

        if (!l)
                return false;
        *list = l;
        return true;
}

static int curl_errno(CURLcode c) {
        switch (c) {
        case CURLE_COULDNT_CONNECT:
                return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
                return -EHOSTUNREACH;
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_ABORTED_BY_CALLBACK:
                return -ECANCELED;
        case CURLE_UNSUPPORTED_PROTOCOL:
                return -EPROTONOSUPPORT;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return -EIO;
        }
}

int push_http_post(const struct push_http_request *req, struct push_http_reply *ret) {
        struct curl_slist *headers = NULL;
        char content_type[128];
        bool ok;
        CURLcode c;
        CURL *curl;

        *ret = (struct push_http_reply) {};
        curl = curl_easy_init();
        if (!curl)
                return -ENOMEM;
        snprintf(content_type, sizeof content_type, "Content-Type: %s", req->content_type);
        /* No "Expect: 100-continue" round trip before the body. */
        ok = append(&headers, content_type) && append(&headers, "Expect:");
        for (size_t i = 0; ok && i < req->n_headers; i++)
                ok = append(&headers, req->headers[i]);
        if (!ok) {
                curl_slist_free_all(headers);
                curl_easy_cleanup(curl);
                return -ENOMEM;
        }
        curl_easy_setopt(curl, CURLOPT_URL, req->url);
        curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM for timeouts: we are a thread */
        curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long) PUSH_HTTP_CONNECT_TIMEOUT_MS);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long) PUSH_HTTP_TIMEOUT_MS);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, (const char *) req->body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->size);
        curl_easy_setopt(curl, CURLOPT_USERAGENT, "cppd/" CPPD_VERSION);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, ret);
        curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, ret->error);
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, (void *) req->cancel);
        c = curl_easy_perform(curl);
        if (c == CURLE_OK)
                curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &ret->status);
        else if (!ret->error[0])
                snprintf(ret->error, sizeof ret->error, "%s", curl_easy_strerror(c));
        curl_easy_cleanup(curl);
        curl_slist_free_all(headers);
        return c == CURLE_OK ? 0 : curl_errno(c);
}
