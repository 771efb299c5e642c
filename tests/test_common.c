/* test_common.c - host-only unit tests of common/labbook.c: number and size parsing, argument
 * parsing, the tolerance checkers, the random generator, and the PNG writer (read back with
 * a small independent decoder of stored-deflate PNGs that checks every CRC and the Adler-32).
 * Needs no GPU. Exit 0 when every check holds. */
#define _POSIX_C_SOURCE 200809L
#include "labbook.h"

#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

/* ---------------------------------------------------------------- numbers */

static long long parsed(const char *s)
{
    long long v = -999;
    return lb_parse_i64(s, &v) ? -999 : v;
}

static void test_numbers(void)
{
    CHECK(parsed("1000") == 1000);
    CHECK(parsed("1") == 1);
    CHECK(parsed("0") == 0);
    CHECK(parsed("2^20") == 1048576);
    CHECK(parsed("2^20+3") == 1048579);
    CHECK(parsed("2^28+1") == 268435457);
    CHECK(parsed("2^10-1") == 1023);
    CHECK(parsed("1e6") == 1000000);
    CHECK(parsed("4k") == 4096);
    CHECK(parsed("4M") == 4194304);
    CHECK(parsed("2G") == 2147483648LL);
    CHECK(parsed("-5") == -5);
    long long v;
    CHECK(lb_parse_i64("", &v) != 0);
    CHECK(lb_parse_i64("abc", &v) != 0);
    CHECK(lb_parse_i64("12abc", &v) != 0);
    CHECK(lb_parse_i64("2^", &v) != 0);
    CHECK(lb_parse_i64("2^63", &v) != 0);
    CHECK(lb_parse_i64("99999999999999999999", &v) != 0);
    CHECK(lb_parse_i64("18446744073709551621", &v) != 0); /* 2^64 + 5: not 5 */
    CHECK(lb_parse_i64("9223372036854775813", &v) != 0);  /* 2^63 + 5 */
    CHECK(lb_parse_i64("2^62+2^62", &v) != 0);
    CHECK(lb_parse_i64("2^62+1", &v) != 0);
    CHECK(parsed("2^62-1+1") == (1LL << 62));
    CHECK(parsed("4611686018427387904") == (1LL << 62));
    CHECK(lb_parse_i64("1.5", &v) != 0);
    CHECK(lb_parse_i64("+", &v) != 0);

    lb_dims d;
    CHECK(lb_parse_dims("1000,1023,777", &d, 3) == 0 && d.n == 3 && d.v[0] == 1000 && d.v[1] == 1023 && d.v[2] == 777);
    CHECK(lb_parse_dims("512x256", &d, 2) == 0 && d.n == 2 && d.v[0] == 512 && d.v[1] == 256);
    CHECK(lb_parse_dims("2^12", &d, 1) == 0 && d.n == 1 && d.v[0] == 4096);
    CHECK(lb_parse_dims("1,2,3,4", &d, 3) != 0);
    CHECK(lb_parse_dims("5,6", &d, 1) != 0);
    CHECK(lb_parse_dims("5,", &d, 2) != 0);
    CHECK(lb_parse_dims(",5", &d, 2) != 0);
}

/* ---------------------------------------------------------------- arguments */

static int flag_x;
static double opt_d = 1.5;
static const char *opt_s = "default";
static lb_dims opt_dims = {{2, 1}, 1};

/* Run fn(arg) in a child process with its output silenced: the child's exit code, or -1 when fn
 * returned normally (for the helpers that exit on bad input). */
static int exit_code_of(void (*fn)(void *), void *arg)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        freopen("/dev/null", "w", stdout);
        fn(arg);
        _exit(100);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -2;
    return WEXITSTATUS(status) == 100 ? -1 : WEXITSTATUS(status);
}

typedef struct {
    const lb_program *prog;
    int argc;
    char **argv;
} parse_call;

static void call_parse(void *p)
{
    parse_call *c = (parse_call *)p;
    lb_args a = {.size = {{1}, 1}, .max_size_dims = 1};
    lb_parse_args(c->prog, &a, c->argc, c->argv);
}

/* lb_parse_args in a child process: its exit code, or -1 when it returned normally. */
static int exit_code_of_parse(const lb_program *prog, int argc, char **argv)
{
    parse_call c = {prog, argc, argv};
    return exit_code_of(call_parse, &c);
}

static void test_args(void)
{
    static const lb_opt opts[] = {
        {"--flag", LB_OPT_FLAG, &flag_x, "a flag"},
        {"--ratio", LB_OPT_DOUBLE, &opt_d, "a number"},
        {"--name", LB_OPT_STRING, &opt_s, "a string"},
        {"--grid", LB_OPT_DIMS, &opt_dims, "dims"},
    };
    static const lb_version six[] = {{0, "a", "A", LB_OLDEST_SM, NULL}, {1, "b", "B", LB_OLDEST_SM, NULL},
                                     {2, "c", "C", LB_OLDEST_SM, NULL}, {3, "d", "D", LB_OLDEST_SM, NULL},
                                     {4, "e", "E", LB_OLDEST_SM, NULL}, {5, "f", "F", 90, NULL}};
    static const lb_program prog = {"t", "test", NULL, LB_USE_ALL, opts, 4, six, 6};
    lb_args a = {.size = {{10}, 1}, .max_size_dims = 3, .block = 256, .iters = 10, .seed = 1};
    char *argv[] = {"t",
                    "--size=1000,1023,777",
                    "--block",
                    "96",
                    "--iters",
                    "7",
                    "--seed",
                    "42",
                    "--check-only",
                    "--quiet",
                    "3",
                    "--flag",
                    "--ratio",
                    "0.25",
                    "--name=abc",
                    "--grid",
                    "4x3",
                    NULL};
    lb_parse_args(&prog, &a, (int)(sizeof argv / sizeof argv[0]) - 1, argv);
    CHECK(a.size.n == 3 && a.size.v[0] == 1000 && a.size.v[1] == 1023 && a.size.v[2] == 777);
    CHECK(a.block == 96 && a.iters == 7 && a.seed == 42);
    CHECK(a.check_only == 1 && a.quiet == 1 && a.version == 3);
    CHECK(flag_x == 1 && opt_d == 0.25 && strcmp(opt_s, "abc") == 0);
    CHECK(opt_dims.n == 2 && opt_dims.v[0] == 4 && opt_dims.v[1] == 3);

    lb_args b = {.size = {{10}, 1}, .max_size_dims = 1};
    char *argv2[] = {"t", "-n", "2^20+3", "0", NULL};
    lb_parse_args(&prog, &b, 4, argv2);
    CHECK(b.size.n == 1 && b.size.v[0] == 1048579 && b.version == 0);
    char *argv_none[] = {"t", NULL};
    lb_parse_args(&prog, &b, 1, argv_none);
    CHECK(b.version == -1); /* no number: every version */

    /* versions numbered from 1: 0 and 3 do not exist */
    static const lb_version two[] = {{1, "x", "X", LB_OLDEST_SM, NULL}, {2, "y", "Y", LB_OLDEST_SM, NULL}};
    static const lb_program prog12 = {"t12", "test", NULL, LB_USE_ALL, NULL, 0, two, 2};
    lb_args c = {.size = {{1}, 1}};
    char *argv3[] = {"t12", "2", NULL};
    lb_parse_args(&prog12, &c, 2, argv3);
    CHECK(c.version == 2);
    CHECK(lb_first_version(&prog12) == 1 && lb_last_version(&prog12) == 2);
    CHECK(lb_version_of(&prog12, 2) == &two[1] && lb_version_of(&prog12, 0) == NULL &&
          lb_version_of(&prog12, 3) == NULL);
    CHECK(lb_version_of(&prog, 5) == &six[5] && lb_last_version(&prog) == 5);
    char *argv4[] = {"t12", "3", NULL}, *argv5[] = {"t12", "0", NULL}, *argv6[] = {"t", "6", NULL};
    CHECK(exit_code_of_parse(&prog12, 2, argv4) == LB_EXIT_USAGE);
    CHECK(exit_code_of_parse(&prog12, 2, argv5) == LB_EXIT_USAGE);
    CHECK(exit_code_of_parse(&prog, 2, argv6) == LB_EXIT_USAGE);
    CHECK(exit_code_of_parse(&prog12, 1, argv_none) == -1); /* parsed, did not exit */
    /* a table whose numbers are not consecutive is refused before anything runs */
    static const lb_version gap[] = {{0, "x", "X", LB_OLDEST_SM, NULL}, {2, "y", "Y", LB_OLDEST_SM, NULL}};
    static const lb_program prog_gap = {"tgap", "test", NULL, LB_USE_ALL, NULL, 0, gap, 2};
    CHECK(exit_code_of_parse(&prog_gap, 1, argv_none) == LB_EXIT_USAGE);
    /* a program without versions takes no number */
    static const lb_program plain = {"tp", "test", NULL, LB_USE_ALL, NULL, 0, NULL, 0};
    char *argv7[] = {"tp", "1", NULL};
    CHECK(exit_code_of_parse(&plain, 2, argv7) == LB_EXIT_USAGE);

    /* a matrix product's size: N means N,N,N; M,N,K as given */
    int M, N, K;
    lb_size_mnk(&prog, &a, &M, &N, &K);
    CHECK(M == 1000 && N == 1023 && K == 777);
    lb_args d = {.size = {{300}, 1}};
    lb_size_mnk(&prog, &d, &M, &N, &K);
    CHECK(M == 300 && N == 300 && K == 300);
}

/* ---------------------------------------------------------------- checkers */

static void test_checkers(void)
{
    float want[6] = {1.0f, -2.0f, 3.5f, 0.0f, 1e6f, -1e-6f};
    float got[6];
    memcpy(got, want, sizeof got);
    lb_check c = lb_check_f32("exact", got, want, 6, 0.0, 0.0, 1);
    CHECK(c.n_bad == 0 && c.max_abs_err == 0.0);

    got[2] = 3.5f + 1e-3f; /* outside 1e-5 + 1e-5*3.5 */
    c = lb_check_f32("off", got, want, 6, 1e-5, 1e-5, 1);
    CHECK(c.n_bad == 1 && fabs(c.max_abs_err - 1e-3) < 1e-6);
    c = lb_check_f32("loose", got, want, 6, 1e-2, 0.0, 1);
    CHECK(c.n_bad == 0);
    got[2] = want[2];

    got[4] = 1e6f + 1.0f; /* relative tolerance: 1e-6 * 1e6 = 1 */
    c = lb_check_f32("rel", got, want, 6, 0.0, 1.01e-6, 1);
    CHECK(c.n_bad == 0);
    c = lb_check_f32("rel", got, want, 6, 0.0, 0.5e-6, 1);
    CHECK(c.n_bad == 1);
    got[4] = want[4];

    got[3] = NAN; /* NaN never passes, at any tolerance */
    c = lb_check_f32("nan", got, want, 6, 1e30, 1e30, 1);
    CHECK(c.n_bad == 1);
    got[3] = INFINITY;
    c = lb_check_f32("inf", got, want, 6, 1e30, 1e30, 1);
    CHECK(c.n_bad == 1);
    got[3] = want[3];
    want[0] = NAN; /* a NaN reference is a failure too */
    got[0] = NAN;
    c = lb_check_f32("nan ref", got, want, 6, 1e30, 1e30, 1);
    CHECK(c.n_bad == 1);

    float poisoned[4];
    lb_poison_host(poisoned, sizeof poisoned); /* poison reads as NaN */
    CHECK(isnan(poisoned[0]) && isnan(poisoned[3]));

    int wi[4] = {1, 2, 3, 4}, gi[4] = {1, 2, 3, 4};
    CHECK(lb_check_i32("ints", gi, wi, 4, 1).n_bad == 0);
    gi[3] = -1;
    CHECK(lb_check_i32("ints", gi, wi, 4, 1).n_bad == 1);

    /* sampling: every element when affordable; else a stride, and always the last */
    CHECK(lb_sample_step(100, 1.0, 1000.0) == 1);
    size_t step = lb_sample_step(1000, 10.0, 1000.0), visits = 0, last = 0;
    CHECK(step > 1);
    for (size_t i = 0; i < 1000; i = lb_sample_next(i, 1000, step)) visits++, last = i;
    CHECK(last == 999 && visits <= 1000 / step + 2);
    visits = 0;
    for (size_t i = 0; i < 1; i = lb_sample_next(i, 1, 1)) visits++;
    CHECK(visits == 1);

    char buf[96];
    lb_check ok = {0, 0.0, 0.0}, bad = {3, 0.5, 0.1};
    CHECK(strncmp(lb_check_summary(&ok, buf, sizeof buf), "PASS", 4) == 0);
    CHECK(strncmp(lb_check_summary(&bad, buf, sizeof buf), "FAIL", 4) == 0);
}

/* ---------------------------------------------------------------- versions on an older GPU */

typedef struct {
    const lb_program *prog;
    const lb_args *args;
    const lb_gpu *gpu;
    int number;
} wanted_call;

static void call_wanted(void *p)
{
    wanted_call *c = (wanted_call *)p;
    lb_version_wanted(c->prog, c->args, c->gpu, c->number);
}

static void test_version_wanted(void)
{
    static const lb_version v[] = {{0, "base", "base", LB_OLDEST_SM, NULL}, {1, "new", "needs sm_90", 90, NULL}};
    static const lb_program prog = {"tsm", "test", NULL, LB_USE_ALL, NULL, 0, v, 2};
    lb_gpu old = {0}, h200 = {0};
    old.prop.major = 7, old.prop.minor = 5, old.cc = 75;
    snprintf(old.sm, sizeof old.sm, "sm_75");
    h200.prop.major = 9, h200.prop.minor = 0, h200.cc = 90;
    snprintf(h200.sm, sizeof h200.sm, "sm_90");
    lb_args all = {.version = -1, .quiet = 1}, one = {.version = 1, .quiet = 1};
    CHECK(lb_version_wanted(&prog, &all, &old, 0) == 1);
    CHECK(lb_version_wanted(&prog, &all, &old, 1) == 0); /* skipped in the all-versions run */
    CHECK(lb_version_wanted(&prog, &all, &h200, 1) == 1);
    CHECK(lb_version_wanted(&prog, &one, &h200, 0) == 0); /* another one was asked for */
    CHECK(lb_version_wanted(&prog, &one, &h200, 1) == 1);
    CHECK(lb_version_wanted(&prog, &all, &h200, 2) == 0); /* no such version */
    /* asked for by number on a GPU too old: exit 2 with the reason */
    wanted_call c = {&prog, &one, &old, 1};
    CHECK(exit_code_of(call_wanted, &c) == LB_EXIT_USAGE);
}

/* ---------------------------------------------------------------- the report */

static void test_report(void)
{
    static const lb_version v4[] = {{0, "base", "the baseline", LB_OLDEST_SM, NULL},
                                    {1, "slow", "slow", LB_OLDEST_SM, NULL},
                                    {2, "fast", "fast", LB_OLDEST_SM, NULL},
                                    {3, "wrong", "wrong", LB_OLDEST_SM, NULL}};
    static const lb_program prog = {"trep", "test", NULL, LB_USE_ALL, NULL, 0, v4, 4};
    lb_args args = {.quiet = 1, .version = -1};
    lb_report r = {
        .prog = &prog, .args = &args, .unit = "gbps", .unit_head = "GB/s", .base = "base", .base_head = "vs base"};
    lb_report_table(&r, "100", NULL);
    lb_report_row(&r, 0, NULL, 2.0, 10.0, -1, NULL); /* the first row is the baseline */
    CHECK(r.base_value == 10.0 && r.failures == 0 && !r.have_best);
    lb_report_row(&r, 1, NULL, 4.0, 5.0, 1, NULL);
    lb_report_row(&r, 2, NULL, 1.0, 20.0, 1, NULL);
    CHECK(r.have_best && r.best == 2 && r.best_ratio == 2.0 && strcmp(r.best_name, "fast") == 0 && r.failures == 0);
    lb_report_row(&r, 3, NULL, 0.5, 40.0, 0, NULL); /* a failed row counts, and is never the best */
    CHECK(r.failures == 1 && r.best == 2);
    CHECK(lb_report_finish(&r) == LB_EXIT_FAIL);

    /* a new table starts a new baseline; a program may give none (< 0) */
    lb_report_table(&r, "200", NULL);
    CHECK(r.base_value == 0.0);
    r.base_value = -1.0;
    lb_report_row(&r, 1, NULL, 1.0, 7.0, 1, NULL);
    CHECK(r.base_value == -1.0);
    lb_report_item(&r, "other", "not a version", 1.0, 50.0, 1, NULL); /* items race too */
    CHECK(r.have_best && r.best == -1 && strcmp(r.best_name, "other") == 0 && r.failures == 1);

    /* one version asked for (./prog 2): no baseline in the run, so no ratio against it */
    lb_args one_args = {.quiet = 1, .version = 2};
    lb_report o = {
        .prog = &prog, .args = &one_args, .unit = "gbps", .unit_head = "GB/s", .base = "base", .base_head = "vs base"};
    lb_report_table(&o, "100", NULL);
    lb_report_row(&o, 2, NULL, 1.0, 20.0, 1, NULL);
    CHECK(o.base_value == 0.0 && o.have_best && o.best_ratio == 0.0);

    lb_args ok_args = {.quiet = 1, .check_only = 1, .version = -1};
    lb_report c = {.prog = &prog, .args = &ok_args, .unit = "gbps", .unit_head = "GB/s"};
    lb_report_table(&c, "1", NULL);
    lb_report_row(&c, 1, NULL, 0.0, 0.0, 1, NULL); /* --check-only: no timing, no best */
    CHECK(!c.have_best && lb_report_finish(&c) == LB_EXIT_PASS);
}

/* ---------------------------------------------------------------- random numbers */

static void test_rng(void)
{
    lb_rng a, b, c;
    lb_rng_seed(&a, 7);
    lb_rng_seed(&b, 7);
    lb_rng_seed(&c, 8);
    int same = 1, differs = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = lb_rng_next(&a), y = lb_rng_next(&b), z = lb_rng_next(&c);
        same &= x == y;
        differs |= x != z;
    }
    CHECK(same && differs);
    /* neighbouring seeds are not one stream shifted: no draw of seed 8 among seed 7's first 1000 */
    lb_rng_seed(&a, 7);
    uint64_t seen[1000];
    for (int i = 0; i < 1000; i++) seen[i] = lb_rng_next(&a);
    int shifted = 0;
    for (int j = 0; j < 10; j++) {
        uint64_t z = lb_rng_next(&c);
        for (int i = 0; i < 1000; i++) shifted |= seen[i] == z;
    }
    CHECK(!shifted);
    float v[10000];
    lb_fill_uniform(v, 10000, -1.0f, 1.0f, &a);
    double mean = 0;
    int in_range = 1, zeros = 0;
    for (int i = 0; i < 10000; i++) {
        in_range &= v[i] >= -1.0f && v[i] < 1.0f;
        zeros += v[i] == 0.0f;
        mean += v[i];
    }
    mean /= 10000;
    CHECK(in_range);
    CHECK(zeros < 5);
    CHECK(fabs(mean) < 0.05); /* 5 sigma of 1/sqrt(3*10000) */

    /* Philox4x32-10: the known-answer vectors published with the algorithm (Random123) */
    static const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                       {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                       {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
    static const uint32_t key[3][2] = {{0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
    static const uint32_t want[3][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
    for (int t = 0; t < 3; t++) {
        uint32_t got[4];
        lb_philox4x32_10(ctr[t], key[t], got);
        CHECK(got[0] == want[t][0] && got[1] == want[t][1] && got[2] == want[t][2] && got[3] == want[t][3]);
    }
}

/* ---------------------------------------------------------------- PNG */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t crc32_bitwise(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return c ^ 0xFFFFFFFFu;
}

/* Decode a PNG made of stored deflate blocks; returns the pixels (caller frees) or NULL. */
static unsigned char *read_stored_png(const char *path, int *w, int *h, int *type, unsigned char *pal)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *file = malloc((size_t)size), *z = malloc((size_t)size);
    size_t zlen = 0;
    if (fread(file, 1, (size_t)size, f) != (size_t)size) size = 0;
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    unsigned char *pixels = NULL;
    int ok = size > 8 && memcmp(file, sig, 8) == 0, seen_end = 0;
    long pos = 8;
    while (ok && pos + 12 <= size && !seen_end) {
        uint32_t len = be32(file + pos);
        if (pos + 12 + (long)len > size) {
            ok = 0;
            break;
        }
        const unsigned char *type_p = file + pos + 4, *data = file + pos + 8;
        if (crc32_bitwise(type_p, len + 4) != be32(data + len)) {
            ok = 0;
            break;
        }
        if (!memcmp(type_p, "IHDR", 4)) {
            *w = (int)be32(data);
            *h = (int)be32(data + 4);
            *type = data[9];
            ok = data[8] == 8 && data[10] == 0 && data[11] == 0 && data[12] == 0;
        } else if (!memcmp(type_p, "PLTE", 4)) {
            if (pal && len == 768) memcpy(pal, data, 768);
        } else if (!memcmp(type_p, "IDAT", 4)) {
            memcpy(z + zlen, data, len);
            zlen += len;
        } else if (!memcmp(type_p, "IEND", 4)) {
            seen_end = 1;
        }
        pos += 12 + len;
    }
    int ch = *type == 2 ? 3 : 1;
    size_t row = (size_t)*w * ch, raw_len = (size_t)*h * (row + 1), got = 0;
    unsigned char *raw = malloc(raw_len + 1);
    ok = ok && seen_end && zlen >= 6 && z[0] == 0x78 && ((z[0] << 8) | z[1]) % 31 == 0;
    size_t zp = 2;
    int final = 0;
    while (ok && !final) { /* stored blocks: header bits, LEN, NLEN, bytes */
        if (zp + 5 > zlen || (z[zp] & 6) != 0) {
            ok = 0;
            break;
        }
        final = z[zp] & 1;
        unsigned len = z[zp + 1] | z[zp + 2] << 8, nlen = z[zp + 3] | z[zp + 4] << 8;
        if ((len ^ 0xFFFFu) != nlen || zp + 5 + len > zlen || got + len > raw_len) {
            ok = 0;
            break;
        }
        memcpy(raw + got, z + zp + 5, len);
        got += len;
        zp += 5 + len;
    }
    if (ok && got == raw_len && zp + 4 == zlen) {
        uint32_t a1 = 1, a2 = 0;
        for (size_t i = 0; i < raw_len; i++) {
            a1 = (a1 + raw[i]) % 65521;
            a2 = (a2 + a1) % 65521;
        }
        if (((a2 << 16) | a1) == be32(z + zp)) {
            pixels = malloc(raw_len);
            for (int y = 0; y < *h && pixels; y++) {
                if (raw[(size_t)y * (row + 1)] != 0) {
                    free(pixels);
                    pixels = NULL;
                    break;
                }
                memcpy(pixels + (size_t)y * row, raw + (size_t)y * (row + 1) + 1, row);
            }
        }
    }
    free(raw);
    free(z);
    free(file);
    return pixels;
}

static void png_round_trip(int w, int h, int channels, int with_palette)
{
    size_t n = (size_t)w * h * channels;
    unsigned char *px = malloc(n), pal[768], pal_back[768];
    lb_rng r;
    lb_rng_seed(&r, (unsigned long long)(w * 131 + h));
    for (size_t i = 0; i < n; i++) px[i] = (unsigned char)lb_rng_next(&r);
    for (int i = 0; i < 768; i++) pal[i] = (unsigned char)(i * 7);
    char path[] = "/tmp/labbook_png_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) {
        free(px);
        return;
    }
    close(fd);
    CHECK(lb_write_png(path, w, h, channels, px, with_palette ? pal : NULL) == 0);
    int rw = 0, rh = 0, type = -1;
    unsigned char *back = read_stored_png(path, &rw, &rh, &type, pal_back);
    CHECK(back != NULL);
    CHECK(rw == w && rh == h);
    CHECK(type == (with_palette ? 3 : channels == 3 ? 2 : 0));
    if (back) CHECK(memcmp(back, px, n) == 0);
    if (with_palette) CHECK(memcmp(pal, pal_back, 768) == 0);
    free(back);
    free(px);
    unlink(path);
}

static void test_png(void)
{
    png_round_trip(1, 1, 1, 0);
    png_round_trip(3, 2, 1, 0);
    png_round_trip(5, 4, 3, 0);
    png_round_trip(333, 77, 1, 1);
    png_round_trip(700, 700, 3, 0); /* 1.47 MB: many stored blocks and two IDAT chunks */
    CHECK(lb_write_png("/tmp/x.png", 0, 5, 1, (const unsigned char *)"", NULL) != 0);
    CHECK(lb_write_png("/nonexistent-dir/x.png", 1, 1, 1, (const unsigned char *)"a", NULL) != 0);
}

/* Write `bytes` to a temporary file and read it back as a PGM; err gets the reason. */
static unsigned char *pgm_from_bytes(const char *bytes, size_t n, int *w, int *h, char *err, size_t err_len)
{
    char path[] = "/tmp/labbook_pgm_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return NULL;
    CHECK(write(fd, bytes, n) == (ssize_t)n);
    close(fd);
    unsigned char *px = lb_read_pgm(path, w, h, err, err_len);
    unlink(path);
    return px;
}

static void test_pgm(void)
{
    int w = 0, h = 0;
    char err[256];
    /* good: a comment in the header, 3x2 pixels */
    static const char good[] = "P5\n# a comment\n3 2\n255\n\x01\x02\x03\xfd\xfe\xff";
    unsigned char *px = pgm_from_bytes(good, sizeof good - 1, &w, &h, err, sizeof err);
    CHECK(px && w == 3 && h == 2);
    if (px) CHECK(px[0] == 1 && px[2] == 3 && px[5] == 255);
    free(px);
    /* the data set */
    px = lb_read_pgm("../datasets/camera.pgm", &w, &h, err, sizeof err);
    if (!px) px = lb_read_pgm("datasets/camera.pgm", &w, &h, err, sizeof err);
    CHECK(px && w == 512 && h == 512);
    free(px);
    /* bad: each must fail with its reason */
    static const struct {
        const char *bytes;
        const char *reason;
    } bad[] = {
        {"P2\n3 2\n255\n1 2 3 4 5 6\n", "must start with P5"},
        {"P5\n3\n", "malformed PGM header"},
        {"P5\n3 x 255\n", "malformed PGM header"},
        {"P5\n3 2\n65535\nxxxxxxxxxxxx", "maxval 65535"},
        {"P5\n3 2\n0\nxxxxxx", "maxval 0"},
        {"P5\n0 2\n255\n", "each side"},
        {"P5\n3 2\n255\nabcd", "truncated: 4 of 6"},
        {"", "must start with P5"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        px = pgm_from_bytes(bad[i].bytes, strlen(bad[i].bytes), &w, &h, err, sizeof err);
        CHECK(px == NULL);
        CHECK(strstr(err, bad[i].reason) != NULL);
        if (!strstr(err, bad[i].reason)) fprintf(stderr, "  case %zu: got '%s'\n", i, err);
        free(px);
    }
    CHECK(lb_read_pgm("/nonexistent/x.pgm", &w, &h, err, sizeof err) == NULL && strstr(err, "cannot open"));
}

/* lb_check_rows_cols: C = 10 r + c against the same formula; one wrong column is in every
 * sampled row, a NaN too; an element off by less than the tolerance passes */
static double ten_r_plus_c(const void *ctx, int r, int c)
{
    (void)ctx;
    return 10.0 * r + c;
}
static void test_rows_cols(void)
{
    enum { M = 37, N = 23 };
    static float C[M * N];
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) C[r * N + c] = (float)(10 * r + c);
    lb_rng rng;
    lb_rng_seed(&rng, 7);
    CHECK(lb_check_rows_cols("C", C, M, N, ten_r_plus_c, NULL, 1e-3, 0.0, &rng, 1).n_bad == 0);
    C[5 * N + 3] += 5e-4f; /* inside the tolerance */
    CHECK(lb_check_rows_cols("C", C, M, N, ten_r_plus_c, NULL, 1e-3, 0.0, &rng, 1).n_bad == 0);
    for (int r = 0; r < M; r++) C[r * N + 4] += 1.0f; /* column 4 wrong: every sampled row sees it */
    CHECK(lb_check_rows_cols("C", C, M, N, ten_r_plus_c, NULL, 1e-3, 0.0, &rng, 1).n_bad >= 1);
    for (int r = 0; r < M; r++) C[r * N + 4] = NAN;
    CHECK(lb_check_rows_cols("C", C, M, N, ten_r_plus_c, NULL, 1e-3, 0.0, &rng, 1).n_bad >= 1);
}

/* lb_check_rows_cols sees one wrong 64x64 tile anywhere, from every seed: a checked row in every
 * band of 64 rows (8 random rows and 8 columns miss this one a third of the time) */
static void test_rows_cols_tile(void)
{
    enum { M = 2048, N = 640 };
    float *C = malloc(sizeof(float) * M * N);
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) C[r * N + c] = (float)(10 * r + c);
    for (int r = 640; r < 704; r++)
        for (int c = 128; c < 192; c++) C[r * N + c] += 1.0f;
    int seen = 0;
    for (unsigned long long seed = 1; seed <= 30; seed++) {
        lb_rng rng;
        lb_rng_seed(&rng, seed);
        seen += lb_check_rows_cols("C", C, M, N, ten_r_plus_c, NULL, 1e-3, 0.0, &rng, 1).n_bad > 0;
    }
    CHECK(seen == 30);
    free(C);
}

/* The CPU's GEMM: both layouts of B give the same C for the same matrix, a hand-computed
 * element, no full reference past 2^30 multiply-adds, and the check (full and sampled) sees a
 * wrong element; lb_check_f32_bound takes each element's own tolerance. */
static double tol_of_index(size_t i, const void *ctx) { return ((const double *)ctx)[i]; }
static void test_gemm(void)
{
    enum { M = 3, N = 2, K = 4 };
    float A[M * K], B_kn[K * N], B_nk[N * K];
    for (int i = 0; i < M * K; i++) A[i] = (float)(i + 1);
    for (int k = 0; k < K; k++)
        for (int c = 0; c < N; c++) B_kn[k * N + c] = B_nk[c * K + k] = (float)(k - 2 * c);
    lb_gemm g1 = {A, B_kn, M, N, K, LB_B_K_BY_N}, g2 = {A, B_nk, M, N, K, LB_B_N_BY_K};
    /* C[1][1] = sum_k A[1][k] (k - 2) = 5*-2 + 6*-1 + 7*0 + 8*1 = -8 */
    CHECK(lb_gemm_element(&g1, 1, 1) == -8.0 && lb_gemm_element(&g2, 1, 1) == -8.0);
    float *r1 = lb_gemm_reference(&g1), *r2 = lb_gemm_reference(&g2);
    CHECK(r1 && r2 && memcmp(r1, r2, sizeof(float) * M * N) == 0);
    lb_rng rng;
    lb_rng_seed(&rng, 3);
    CHECK(lb_gemm_check("C", r1, &g2, r2, 0.0, 0.0, &rng, 1).n_bad == 0);
    CHECK(lb_gemm_check("C", r1, &g1, NULL, 0.0, 0.0, &rng, 1).n_bad == 0); /* sampled: recomputed */
    r1[1 * N + 1] += 1.0f;
    CHECK(lb_gemm_check("C", r1, &g1, r2, 0.5, 0.0, &rng, 1).n_bad == 1);
    CHECK(lb_gemm_check("C", r1, &g1, NULL, 0.5, 0.0, &rng, 1).n_bad >= 1);
    lb_gemm big = {A, B_kn, 1 << 12, 1 << 12, (1 << 6) + 1, LB_B_K_BY_N}; /* 2^30 + 2^24 multiply-adds */
    CHECK(lb_gemm_reference(&big) == NULL);
    free(r1);
    free(r2);

    float want[3] = {1.0f, 2.0f, 3.0f}, got[3] = {1.0f, 2.5f, 3.0f};
    double tols[3] = {0.0, 0.6, 0.0};
    CHECK(lb_check_f32_bound("bound", got, want, 3, tol_of_index, tols, 1).n_bad == 0);
    tols[1] = 0.4;
    CHECK(lb_check_f32_bound("bound", got, want, 3, tol_of_index, tols, 1).n_bad == 1);
}

/* lb_bf16_bits: the top half, rounded to nearest with ties to even; lb_bf16_value undoes it */
static void test_bf16(void)
{
    CHECK(lb_bf16_bits(1.0f) == 0x3F80 && lb_bf16_value(0x3F80) == 1.0f);
    CHECK(lb_bf16_bits(-2.0f) == 0xC000);
    CHECK(lb_bf16_bits(1.0f + 0x1.0p-8f) == 0x3F80);              /* a tie: to the even 1.0 */
    CHECK(lb_bf16_bits(1.0f + 3 * 0x1.0p-8f) == 0x3F82);          /* a tie: to the even 1 + 2^-6 */
    CHECK(lb_bf16_bits(1.0f + 0x1.0p-8f + 0x1.0p-20f) == 0x3F81); /* past the tie: up */
    CHECK(lb_bf16_value(lb_bf16_bits(3.0e38f)) > 3.0e38f * 0.99f);
}

/* the nearest finite e4m3 code to x by search over all of them (ties: the even code, whose
 * mantissa's last bit is 0), past 448 saturated: an independent reference for lb_e4m3_bits */
static uint8_t e4m3_nearest(float x)
{
    int best = -1;
    double best_err = INFINITY;
    for (int c = 0; c < 256; c++) {
        float v = lb_e4m3_value((uint8_t)c);
        if (isnan(v) || (signbit(v) != signbit(x))) continue; /* the sign kept, -0 too */
        double err = fabs((double)v - (double)x);
        if (err < best_err || (err == best_err && (c & 1) == 0)) best = c, best_err = err;
    }
    return (uint8_t)best;
}

/* lb_e4m3_bits and lb_e4m3_value: every code there and back, the ties, subnormals, saturation,
 * NaN; and 100000 random values and every midpoint against the search above */
static void test_e4m3(void)
{
    CHECK(lb_e4m3_value(0x38) == 1.0f && lb_e4m3_value(0x7E) == 448.0f && lb_e4m3_value(0x08) == 0x1p-6f);
    CHECK(lb_e4m3_value(0x01) == 0x1p-9f && lb_e4m3_value(0x07) == 7 * 0x1p-9f && lb_e4m3_value(0xB8) == -1.0f);
    CHECK(isnan(lb_e4m3_value(0x7F)) && isnan(lb_e4m3_value(0xFF)) && lb_e4m3_value(0x78) == 256.0f);
    int round_trip = 1;
    for (int c = 0; c < 256; c++)
        if ((c & 0x7F) != 0x7F && lb_e4m3_bits(lb_e4m3_value((uint8_t)c)) != c) round_trip = 0;
    CHECK(round_trip);
    CHECK(lb_e4m3_bits(1.0625f) == 0x38);     /* a tie between 1 and 1.125: to the even 1 */
    CHECK(lb_e4m3_bits(1.1875f) == 0x3A);     /* between 1.125 and 1.25: to the even 1.25 */
    CHECK(lb_e4m3_bits(1.0626f) == 0x39);     /* past the tie: up */
    CHECK(lb_e4m3_bits(0x1p-10f) == 0x00);    /* half the smallest subnormal: to the even 0 */
    CHECK(lb_e4m3_bits(3 * 0x1p-10f) == 0x02); /* between 1 and 2 x 2^-9: to the even 2 */
    CHECK(lb_e4m3_bits(7.5f * 0x1p-9f) == 0x08); /* the largest subnormal and 2^-6: to 2^-6 */
    CHECK(lb_e4m3_bits(460.0f) == 0x7E && lb_e4m3_bits(-1e30f) == 0xFE && lb_e4m3_bits(INFINITY) == 0x7E);
    CHECK(lb_e4m3_bits(NAN) == 0x7F && lb_e4m3_bits(-0.0f) == 0x80 && lb_e4m3_bits(0.0f) == 0x00);
    int agree = 1;
    lb_rng rng;
    lb_rng_seed(&rng, 9);
    for (int i = 0; i < 100000; i++) { /* magnitudes 2^-12 to 2^9 */
        float x = ldexpf(lb_rng_uniform(&rng, -1.0f, 1.0f), (int)lb_rng_uniform(&rng, -11.0f, 10.0f));
        if (lb_e4m3_bits(x) != e4m3_nearest(x)) agree = 0;
    }
    for (int c = 0; c < 0x7E; c++) { /* the midpoints between neighbours, both signs */
        float mid = (lb_e4m3_value((uint8_t)c) + lb_e4m3_value((uint8_t)(c + 1))) / 2;
        if (lb_e4m3_bits(mid) != e4m3_nearest(mid) || lb_e4m3_bits(-mid) != e4m3_nearest(-mid)) agree = 0;
    }
    CHECK(agree);
}

int main(void)
{
    test_bf16();
    test_e4m3();
    test_numbers();
    test_args();
    test_checkers();
    test_rows_cols();
    test_rows_cols_tile();
    test_gemm();
    test_version_wanted();
    test_report();
    test_rng();
    test_png();
    test_pgm();
    printf("test_common: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
