/* Fuzz target: a control request line, as any local user may send it; and the reply formatter
 * on what parsed, whose output must parse again to the same fields. */
#include "fuzz.h"
#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct protocol_message m, again;
        const char *kv[2 * PROTOCOL_MAX_FIELDS + 1];
        char line[PROTOCOL_MAX_LINE + 1];
        unsigned n = 0;
        int len;

        if (protocol_parse((const char *) data, size, &m) < 0)
                return 0;
        for (unsigned i = 0; i < m.n_fields; i++) {
                const char *v = protocol_get(&m, m.fields[i].key);

                /* A key given twice: the daemon reads its first value. */
                if (!v || v < m.buffer || v >= m.buffer + sizeof m.buffer)
                        abort();
                kv[n++] = m.fields[i].key;
                kv[n++] = m.buffer + m.fields[i].value;
        }
        kv[n] = NULL;
        len = protocol_format(line, sizeof line, m.word, kv);
        if (len < 0)
                return 0; /* escaping may not fit: that is allowed */
        if (protocol_parse(line, len - 1, &again) < 0 || again.n_fields != m.n_fields ||
            strcmp(again.word, m.word))
                abort();
        for (unsigned i = 0; i < m.n_fields; i++)
                if (strcmp(again.fields[i].key, m.fields[i].key) ||
                    strcmp(again.buffer + again.fields[i].value, m.buffer + m.fields[i].value))
                        abort();
        return 0;
}
