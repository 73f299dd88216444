/* The names of the output formats, as --format takes them. */
#include "render.h"

#include <errno.h>
#include <string.h>

static const char *const names[_RENDER_FORMAT_MAX] = {
        [RENDER_TEXT] = "text",     [RENDER_JSON] = "json",
        [RENDER_CSV] = "csv",       [RENDER_FOLDED] = "folded",
        [RENDER_DOT] = "dot",       [RENDER_FLAME] = "flame",
        [RENDER_ICICLE] = "icicle", [RENDER_HTML] = "html",
        [RENDER_PPROF] = "pprof",   [RENDER_SPEEDSCOPE] = "speedscope",
};

const char *render_format_name(enum render_format f) {
        return f < _RENDER_FORMAT_MAX ? names[f] : NULL;
}

int render_format_from_name(const char *name) {
        for (int f = 0; f < _RENDER_FORMAT_MAX; f++)
                if (strcmp(names[f], name) == 0)
                        return f;
        if (strcmp(name, "svg") == 0)
                return RENDER_FLAME;
        return -EINVAL;
}
