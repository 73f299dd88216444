/* Fuzz target: the daemon's configuration file. */
#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct config c;
        char error[256];
        unsigned line;

        if (config_parse((const char *) data, size, &c, &line, error, sizeof error) == 0 &&
            (c.n_resources == 0 || c.n_resources > CONFIG_MAX_RESOURCES || c.store_path[0] != '/'))
                abort();
        return 0;
}
