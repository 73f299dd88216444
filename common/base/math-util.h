/* Integer helpers the tree loaders share (store-read.c, ch-read.c). */
#pragma once

#include <stdint.h>

/* The greatest common divisor; gcd(0, b) = b. */
static inline uint64_t gcd_u64(uint64_t a, uint64_t b) {
        while (b) {
                uint64_t t = a % b;

                a = b;
                b = t;
        }
        return a;
}

/* A + B and A * B, stopping at UINT64_MAX rather than wrapping. */
static inline uint64_t saturating_add(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline uint64_t saturating_mul(uint64_t a, uint64_t b) {
        uint64_t p;

        return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}
