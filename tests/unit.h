/* unit.h - the CHECK macro of the host-only unit tests: count, and report a failed
 * condition with its file and line instead of stopping at the first. */
#ifndef UNIT_H
#define UNIT_H
#include <stdio.h>

static int n_checks, n_failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        n_checks++;                                                                  \
        if (!(cond)) {                                                               \
            n_failed++;                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#endif
