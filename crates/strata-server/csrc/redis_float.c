/*
 * Redis's float arithmetic and float text, done with the C library exactly as redis-server
 * does it, so `strata serve` replies with the same bytes for the same inputs.
 *
 * Why C: redis-server computes INCRBYFLOAT and HINCRBYFLOAT in `long double` (80-bit x87
 * extended precision on x86-64, IEEE quad on aarch64), parses with strtold() and prints with
 * snprintf("%.17Lf") (then trims zeros), and prints double replies (ZSCORE, ZINCRBY, scores
 * WITHSCORES) with snprintf("%.17g"). Rust has no `long double` type and cannot pass one
 * through a variadic call, so the few operations live here, over an opaque 16-byte cell.
 * The functions mirror redis 7.0's util.c (string2ld, ld2string) and networking.c
 * (addReplyDouble); see the comments at each.
 *
 * Nothing here allocates, keeps state, or reads past the lengths it is given.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* redis's MAX_LONG_DOUBLE_CHARS: longer inputs are rejected, like redis does. */
#define MAX_LONG_DOUBLE_CHARS (5 * 1024)

typedef struct {
    long double v;
} strata_ld;

_Static_assert(sizeof(strata_ld) <= 16, "long double does not fit the 16-byte cell");

size_t strata_ld_size(void) { return sizeof(strata_ld); }

/* string2ld: the whole string must be a number (strtold's syntax, in the C locale: decimal,
 * hex, inf, infinity), with no leading space; NaN, overflow to infinity and underflow to zero
 * are rejected, and so is an embedded NUL (the number must span all `len` bytes).
 * Returns 1 and sets *out, or 0. */
int strata_ld_parse(const char *s, size_t len, strata_ld *out) {
    char buf[MAX_LONG_DOUBLE_CHARS];
    char *eptr;
    long double value;

    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    value = strtold(buf, &eptr);
    if (isspace((unsigned char)buf[0]) || eptr[0] != '\0' || (size_t)(eptr - buf) != len ||
        ((errno == ERANGE) &&
         (value == HUGE_VALL || value == -HUGE_VALL || fpclassify(value) == FP_ZERO)) ||
        isnan(value))
        return 0;
    out->v = value;
    return 1;
}

void strata_ld_from_i64(long long v, strata_ld *out) { out->v = (long double)v; }

/* a + b, as `value += incr` in incrbyfloatCommand. */
void strata_ld_add(const strata_ld *a, const strata_ld *b, strata_ld *out) {
    out->v = a->v + b->v;
}

/* 1 if finite (neither NaN nor infinite). */
int strata_ld_is_finite(const strata_ld *a) { return !(isnan(a->v) || isinf(a->v)); }

/* ld2string(..., LD_STR_HUMAN): "%.17Lf", then trailing zeros after the point and a trailing
 * point removed, "-0" printed as "0"; infinities as "inf" / "-inf". Returns the length written
 * (without a NUL), or -1 if `cap` is too small (5 KiB always suffices for finite values up to
 * about 1e4900... the caller passes MAX_LONG_DOUBLE_CHARS). */
int strata_ld_format_human(const strata_ld *a, char *buf, size_t cap) {
    long double value = a->v;
    int l;

    if (isinf(value)) {
        const char *t = value > 0 ? "inf" : "-inf";
        size_t n = strlen(t);
        if (cap < n) return -1;
        memcpy(buf, t, n);
        return (int)n;
    }
    l = snprintf(buf, cap, "%.17Lf", value);
    if (l < 0 || (size_t)l + 1 > cap) return -1;
    if (memchr(buf, '.', (size_t)l) != NULL) {
        char *p = buf + l - 1;
        while (*p == '0') {
            p--;
            l--;
        }
        if (*p == '.') l--;
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        l = 1;
    }
    return l;
}

/* addReplyDouble's text for a finite double: "%.17g". Returns the length, or -1. */
int strata_double_format_g17(double d, char *buf, size_t cap) {
    int l = snprintf(buf, cap, "%.17g", d);
    if (l < 0 || (size_t)l + 1 > cap) return -1;
    return l;
}
