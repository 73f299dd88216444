/* Regular expressions from users (--focus, the shell's filters, the SQL functions' arguments),
 * compiled only when compiling them cannot take the machine. */
#include "pattern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

/* glibc's regcomp() copies a repeated subexpression once per repetition ('x+' is 'xx*', 'x{3,5}'
 * five copies) and takes time and memory quadratic in runs of optional copies and exponential
 * in repetitions of repetitions: 'a' and 24 '+' takes 12 GB and 40 s, '(a?){20000}' 3 GB,
 * 'a' with 10 '?' then 6 '+' minutes. A pattern is any user's to write (an argument of a SQL query
 * included), so before regcomp() sees one it is refused if repetitions nest more than REGEX_MAX_NESTING deep
 * (POSIX leaves adjacent ones such as 'a+?' undefined anyway) or if its copies would make more
 * than REGEX_MAX_NODES nodes. The count may be above glibc's, never below. */
#define REGEX_MAX_NESTING 3u
#define REGEX_MAX_NODES 4000u

static const char *regex_too_costly(const char *p) {
        struct level {
                size_t nodes;          /* of the sequence so far */
                size_t last;           /* of its last atom or group, which a repetition copies */
                unsigned last_nesting; /* repetitions around that last atom, and inside it */
                unsigned nesting;      /* the most around any atom so far */
        } level[64] = {}, *l = level;  /* one per open '(' */

        for (; *p; p++) {
                size_t factor;

                switch (*p) {
                case '(':
                        if (l == level + ELEMENTSOF(level) - 1)
                                return "groups nest too deep";
                        *++l = (struct level) {};
                        continue;
                case ')':
                        if (l > level) {
                                const struct level group = *l--;

                                l->nodes = MIN(l->nodes + group.nodes, REGEX_MAX_NODES + 1);
                                l->last = group.nodes;
                                l->last_nesting = group.nesting;
                                l->nesting = MAX(l->nesting, group.nesting);
                        }
                        continue;
                case '|':
                        l->last = 0;
                        l->last_nesting = 0;
                        continue;
                case '*':
                case '?':
                        factor = 1; /* no copy, one node more */
                        break;
                case '+':
                        factor = 2;
                        break;
                case '{': {
                        char *end;
                        unsigned long m = strtoul(p + 1, &end, 10), n;

                        /* glibc takes '{,N}' for '{0,N}' */
                        if ((end == p + 1 && *end != ',') || (*end != ',' && *end != '}'))
                                goto atom; /* not an interval: regcomp() judges it */
                        if (*end == '}')
                                n = m;
                        else if (end[1] == '}')
                                n = m + 1, end++;
                        else
                                n = strtoul(end + 1, &end, 10);
                        if (*end != '}')
                                goto atom;
                        factor = MIN(MAX(MAX(m, n), 1ul), REGEX_MAX_NODES + 1);
                        p = end;
                        break;
                }
                case '[':
                        /* A bracket expression is one node: skip to its ']', which may be its
                         * first member, past classes such as [:alpha:]. */
                        p += p[1] == '^';
                        p += p[1] == ']';
                        while (p[1] && p[1] != ']') {
                                p++;
                                if (p[0] == '[' && p[1] && strchr(":=.", p[1])) {
                                        const char *close = p + 2;

                                        while (*close && !(close[0] == p[1] && close[1] == ']'))
                                                close++;
                                        if (!*close)
                                                break;
                                        p = close + 1;
                                }
                        }
                        if (p[1])
                                p++;
                        goto atom;
                case '\\':
                        if (p[1])
                                p++;
                        goto atom;
                default:
atom:
                        l->nodes = MIN(l->nodes + 1, REGEX_MAX_NODES + 1);
                        l->last = 1;
                        l->last_nesting = 0;
                        continue;
                }
                /* A repetition: FACTOR copies of the last atom or group instead of one, and
                 * the node that repeats them. */
                l->nodes = MIN(l->nodes + l->last * (factor - 1) + 1, REGEX_MAX_NODES + 1);
                l->last = MIN(l->last * factor + 1, REGEX_MAX_NODES + 1);
                l->last_nesting++;
                l->nesting = MAX(l->nesting, l->last_nesting);
                if (l->nesting > REGEX_MAX_NESTING)
                        return "repetitions of repetitions nest too deep (as in '((a+)*)+' or 'a+?*+')";
        }
        if (level[0].nodes + (l - level) > REGEX_MAX_NODES)
                return "its repetitions make too many copies (as in '(a?){5000}')";
        return NULL;
}

int pattern_compile(regex_t *re, const char *pattern, char *error, size_t size) {
        const char *why = regex_too_costly(pattern);
        int r;

        if (why) {
                snprintf(error, size, "'%s' would cost too much to compile: %s; simplify it", pattern, why);
                return -EINVAL;
        }
        r = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
        if (r != 0) {
                regerror(r, re, error, size);
                return -EINVAL;
        }
        return 0;
}
