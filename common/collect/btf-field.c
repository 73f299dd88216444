/* Reads just enough of a BTF file (include/uapi/linux/btf.h) to find a member's offset: the type
 * section walked once to index each type's start, then the struct found by name and its members
 * followed through typedefs and qualifiers. */
#include "btf-field.h"

#include <errno.h>
#include <linux/btf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include <fcntl.h>
#include <unistd.h>

/* The whole of FILE (sysfs gives no size beforehand). */
static int read_all(const char *file, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *data = NULL;
        size_t size = 0, cap = 0;

        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t k;

                if (size == cap) {
                        char *d;

                        cap = cap ? 2 * cap : 1 << 20;
                        if (cap > (256u << 20))
                                return -EFBIG;
                        d = realloc(data, cap);
                        if (!d)
                                return -ENOMEM;
                        data = d;
                }
                k = read(fd, data + size, cap - size);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                size += (size_t) k;
        }
        *ret = take_ptr(&data);
        *ret_size = size;
        return 0;
}

struct btf_file {
        const uint8_t *types, *strings;
        uint32_t types_len, strings_len;
        const struct btf_type **by_id; /* by type id; [0] is void */
        uint32_t n;
};

/* Bytes after a btf_type that belong to it, or -1 for an unknown kind. */
static long extra_size(const struct btf_type *t) {
        uint32_t vlen = BTF_INFO_VLEN(t->info);

        switch (BTF_INFO_KIND(t->info)) {
        case BTF_KIND_INT:
                return 4;
        case BTF_KIND_ARRAY:
                return sizeof(struct btf_array);
        case BTF_KIND_STRUCT:
        case BTF_KIND_UNION:
                return (long) vlen * sizeof(struct btf_member);
        case BTF_KIND_ENUM:
                return (long) vlen * sizeof(struct btf_enum);
        case BTF_KIND_FUNC_PROTO:
                return (long) vlen * sizeof(struct btf_param);
        case BTF_KIND_VAR:
                return sizeof(struct btf_var);
        case BTF_KIND_DATASEC:
                return (long) vlen * sizeof(struct btf_var_secinfo);
        case BTF_KIND_DECL_TAG:
                return sizeof(struct btf_decl_tag);
        case BTF_KIND_ENUM64:
                return (long) vlen * sizeof(struct btf_enum64);
        case BTF_KIND_PTR:
        case BTF_KIND_FWD:
        case BTF_KIND_TYPEDEF:
        case BTF_KIND_VOLATILE:
        case BTF_KIND_CONST:
        case BTF_KIND_RESTRICT:
        case BTF_KIND_FUNC:
        case BTF_KIND_FLOAT:
        case BTF_KIND_TYPE_TAG:
                return 0;
        }
        return -1;
}

static const char *name_of(const struct btf_file *b, uint32_t off) {
        if (off >= b->strings_len || !memchr(b->strings + off, 0, b->strings_len - off))
                return NULL;
        return (const char *) b->strings + off;
}

static int index_types(struct btf_file *b) {
        size_t cap = 0;
        uint32_t off = 0;

        b->n = 1;
        while (off < b->types_len) {
                const struct btf_type *t = (const void *) (b->types + off);
                long extra;

                if (b->types_len - off < sizeof *t || (extra = extra_size(t)) < 0 ||
                    b->types_len - off - sizeof *t < (size_t) extra)
                        return -EBADMSG;
                if (b->n >= cap) {
                        const struct btf_type **m;

                        cap = cap ? 2 * cap : 65536;
                        m = realloc(b->by_id, cap * sizeof *m);
                        if (!m)
                                return -ENOMEM;
                        b->by_id = m;
                }
                b->by_id[b->n++] = t;
                off += sizeof *t + (uint32_t) extra;
        }
        return 0;
}

/* Type ID with typedefs and qualifiers taken off, or NULL. */
static const struct btf_type *resolve(const struct btf_file *b, uint32_t id) {
        for (unsigned depth = 0; depth < 32 && id > 0 && id < b->n; depth++) {
                const struct btf_type *t = b->by_id[id];

                switch (BTF_INFO_KIND(t->info)) {
                case BTF_KIND_TYPEDEF:
                case BTF_KIND_VOLATILE:
                case BTF_KIND_CONST:
                case BTF_KIND_RESTRICT:
                case BTF_KIND_TYPE_TAG:
                        id = t->type;
                        continue;
                }
                return t;
        }
        return NULL;
}

/* The offset in bits of member NAME of struct or union T (looking into anonymous members too),
 * with its type in *ret_type; -ENOENT, -EINVAL for a bit field. */
static long member_offset(const struct btf_file *b, const struct btf_type *t, const char *name,
                          uint32_t *ret_type, unsigned depth) {
        const struct btf_member *m = (const void *) (t + 1);
        bool bitfields = BTF_INFO_KFLAG(t->info);

        if (depth > 8)
                return -ENOENT;
        for (uint32_t i = 0; i < BTF_INFO_VLEN(t->info); i++) {
                const char *n = name_of(b, m[i].name_off);
                uint32_t bits = bitfields ? BTF_MEMBER_BIT_OFFSET(m[i].offset) : m[i].offset;

                if (!n)
                        return -EBADMSG;
                if (n[0] == '\0') { /* an anonymous struct or union: its members are ours */
                        const struct btf_type *inner = resolve(b, m[i].type);
                        long r;

                        if (!inner ||
                            (BTF_INFO_KIND(inner->info) != BTF_KIND_STRUCT &&
                             BTF_INFO_KIND(inner->info) != BTF_KIND_UNION))
                                continue;
                        r = member_offset(b, inner, name, ret_type, depth + 1);
                        if (r >= 0)
                                return r + bits;
                        if (r != -ENOENT)
                                return r;
                        continue;
                }
                if (strcmp(n, name) != 0)
                        continue;
                if (bitfields && BTF_MEMBER_BITFIELD_SIZE(m[i].offset) != 0)
                        return -EINVAL;
                *ret_type = m[i].type;
                return bits;
        }
        return -ENOENT;
}

long btf_field_offset(const char *file, const char *struct_name, const char *path) {
        _cleanup_free_ char *data = NULL;
        _cleanup_free_ const struct btf_type **by_id = NULL;
        struct btf_file b = {};
        const struct btf_header *h;
        const struct btf_type *t = NULL;
        long offset = 0;
        size_t size = 0;
        int r;

        r = read_all(file, &data, &size);
        if (r < 0)
                return r;
        h = (const void *) data;
        if (size < sizeof *h || h->magic != BTF_MAGIC || h->hdr_len > size ||
            (uint64_t) h->hdr_len + h->type_off + h->type_len > size ||
            (uint64_t) h->hdr_len + h->str_off + h->str_len > size)
                return -EBADMSG;
        b.types = (const uint8_t *) data + h->hdr_len + h->type_off;
        b.types_len = h->type_len;
        b.strings = (const uint8_t *) data + h->hdr_len + h->str_off;
        b.strings_len = h->str_len;
        r = index_types(&b);
        by_id = b.by_id;
        if (r < 0)
                return r;
        for (uint32_t id = 1; id < b.n && !t; id++) {
                const struct btf_type *x = b.by_id[id];
                const char *n = name_of(&b, x->name_off);

                if (BTF_INFO_KIND(x->info) == BTF_KIND_STRUCT && BTF_INFO_VLEN(x->info) > 0 && n &&
                    strcmp(n, struct_name) == 0)
                        t = x;
        }
        if (!t)
                return -ENOENT;
        for (const char *p = path; *p;) {
                size_t len = strcspn(p, ".");
                char name[128];
                uint32_t type;
                long bits;

                if (len == 0 || len >= sizeof name)
                        return -EINVAL;
                memcpy(name, p, len);
                name[len] = '\0';
                if (!t ||
                    (BTF_INFO_KIND(t->info) != BTF_KIND_STRUCT && BTF_INFO_KIND(t->info) != BTF_KIND_UNION))
                        return -ENOENT;
                bits = member_offset(&b, t, name, &type, 0);
                if (bits < 0)
                        return bits;
                if (bits % 8 != 0)
                        return -EINVAL;
                offset += bits / 8;
                t = resolve(&b, type);
                p += len;
                if (*p == '.')
                        p++;
        }
        return offset;
}
