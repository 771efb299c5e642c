/* lb_args.c - the command line of every program, declared in labbook.h: the shared flags,
 * a program's own flags, its version number (checked against its version table), and the
 * number syntax 1000, 2^20+3, 1e6, 4M. Host-only: needs no GPU. */
#define _POSIX_C_SOURCE 200809L
#include "labbook.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LB_MAX_VALUE (1LL << 62)

/* One term: 123, 2^20, 1e6, 4k, 4M, 4G. Advances *p. */
static int parse_term(const char **p, long long *out)
{
    const char *s = *p;
    if (!isdigit((unsigned char)*s)) return -1;
    long long v = 0;
    while (isdigit((unsigned char)*s)) {
        /* checked before the multiply: a number that does not fit is an error, not wrapped
         * around (18446744073709551621 would otherwise read as 5) */
        if (v > (LB_MAX_VALUE - (*s - '0')) / 10) return -1;
        v = v * 10 + (*s - '0');
        s++;
    }
    if (*s == '^' || *s == 'e' || *s == 'E') {
        long long base = (*s == '^') ? v : 10, mult = (*s == '^') ? 1 : v;
        s++;
        if (!isdigit((unsigned char)*s)) return -1;
        long long e = 0;
        while (isdigit((unsigned char)*s)) {
            e = e * 10 + (*s - '0');
            if (e > 62) return -1;
            s++;
        }
        v = mult;
        for (long long i = 0; i < e; i++) {
            if (base != 0 && v > LB_MAX_VALUE / (base ? base : 1)) return -1;
            v *= base;
        }
    } else if (*s && strchr("kKmMgG", *s)) {
        int shift = (*s == 'k' || *s == 'K') ? 10 : (*s == 'm' || *s == 'M') ? 20 : 30;
        if (v > (LB_MAX_VALUE >> shift)) return -1;
        v <<= shift;
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}

int lb_parse_i64(const char *s, long long *out)
{
    if (!s) return -1;
    int neg = 0;
    if (*s == '-') {
        neg = 1;
        s++;
    }
    long long v;
    if (parse_term(&s, &v)) return -1;
    while (*s == '+' || *s == '-') {
        char op = *s++;
        long long t;
        if (parse_term(&s, &t)) return -1;
        /* |v| and t are at most 2^62: refuse a result beyond that before computing it */
        if (op == '+' ? (v > 0 && t > LB_MAX_VALUE - v) : (v < 0 && t > LB_MAX_VALUE + v)) return -1;
        v = (op == '+') ? v + t : v - t;
        if (v > LB_MAX_VALUE || v < -LB_MAX_VALUE) return -1;
    }
    if (*s) return -1;
    *out = neg ? -v : v;
    return 0;
}

int lb_parse_dims(const char *s, lb_dims *out, int max_dims)
{
    lb_dims d = {{0, 0, 0}, 0};
    char buf[128];
    if (!s || strlen(s) >= sizeof buf || max_dims < 1 || max_dims > 3) return -1;
    strcpy(buf, s);
    char *start = buf;
    for (;;) {
        char *sep = start + strcspn(start, ",x");
        char last = *sep;
        *sep = '\0';
        if (d.n == max_dims || lb_parse_i64(start, &d.v[d.n])) return -1;
        d.n++;
        if (!last) break;
        start = sep + 1;
    }
    *out = d;
    return 0;
}

static void print_dims(FILE *f, const lb_dims *d)
{
    for (int i = 0; i < d->n; i++) fprintf(f, i ? ",%lld" : "%lld", d->v[i]);
}

static void print_usage(const lb_program *prog, const lb_args *a, FILE *f)
{
    unsigned u = prog->uses;
    fprintf(f, "usage: %s%s [options]\n  %s\n\noptions:\n", prog->name, prog->n_versions ? " [version]" : "",
            prog->synopsis);
    if (u & LB_USE_SIZE) {
        static const char *const forms[] = {"N", "N", "N|WxH", "N|M,N,K"};
        fprintf(f, "  -n, --size %-10s problem size (default ", forms[a->max_size_dims]);
        print_dims(f, &a->size);
        fprintf(f, "); numbers may be written 1000, 2^20+3, 1e6, 4M\n");
    }
    if (u & LB_USE_BLOCK) fprintf(f, "  --block N             threads per block (default %d)\n", a->block);
    if (u & LB_USE_ITERS) fprintf(f, "  --iters N             timed repeats, median reported (default %d)\n", a->iters);
    if (u & LB_USE_SEED) fprintf(f, "  --seed S              random seed for the inputs (default %llu)\n", a->seed);
    if (u & LB_USE_CHECK_ONLY) fprintf(f, "  --check-only          verify against the CPU reference, don't time\n");
    if (u & LB_USE_QUIET) fprintf(f, "  --quiet               print one summary line\n");
    for (int i = 0; i < prog->n_opts; i++) {
        const lb_opt *o = &prog->opts[i];
        char left[64];
        const char *arg = o->kind == LB_OPT_FLAG     ? ""
                          : o->kind == LB_OPT_DIMS   ? " X[,Y]"
                          : o->kind == LB_OPT_STRING ? " S"
                          : o->kind == LB_OPT_DOUBLE ? " X"
                                                     : " N";
        snprintf(left, sizeof left, "%s%s", o->name, arg);
        fprintf(f, "  %-21s %s", left, o->help);
        switch (o->kind) {
        /* a default of -1 (or INT_MIN, -inf: "not given" where -1 is a value) means "chosen by the
         * program": its help text says how */
        case LB_OPT_INT:
            if (*(int *)o->dst != -1 && *(int *)o->dst != INT_MIN) fprintf(f, " (default %d)", *(int *)o->dst);
            break;
        case LB_OPT_I64:
            if (*(long long *)o->dst != -1) fprintf(f, " (default %lld)", *(long long *)o->dst);
            break;
        case LB_OPT_DOUBLE:
            if (*(double *)o->dst != -1.0 && isfinite(*(double *)o->dst))
                fprintf(f, " (default %g)", *(double *)o->dst);
            break;
        case LB_OPT_STRING:
            if (*(const char **)o->dst) fprintf(f, " (default %s)", *(const char **)o->dst);
            break;
        case LB_OPT_DIMS:
            if (((lb_dims *)o->dst)->n == 0) break; /* no default: off unless given */
            fprintf(f, " (default ");
            print_dims(f, (lb_dims *)o->dst);
            fprintf(f, ")");
            break;
        case LB_OPT_FLAG: break;
        }
        fputc('\n', f);
    }
    fprintf(f, "  -h, --help            this text\n");
    if (prog->n_versions) {
        fprintf(f, "\nversions (with none given, all are run and compared with the first):\n");
        for (int i = 0; i < prog->n_versions; i++) {
            const lb_version *v = &prog->versions[i];
            fprintf(f, "  %2d  %-14s %s", v->number, v->name, v->title);
            if (v->min_sm > LB_OLDEST_SM) fprintf(f, " (needs sm_%d or newer)", v->min_sm);
            fputc('\n', f);
        }
    }
    if (prog->details) fprintf(f, "\n%s", prog->details);
    fprintf(f, "\nexit: 0 pass, 1 wrong result, 2 bad input, 3 CUDA error, 77 no usable GPU\n");
}

void lb_usage_error(const lb_program *prog, const char *fmt, ...)
{
    /* one line: an argument of 100,000 characters is shown by its start, not echoed whole */
    char line[320];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s%s", prog->name, line, n >= (int)sizeof line ? "... (cut: an argument too long to show)" : "");
    fprintf(stderr, "\nusage: %s%s [options]   (%s --help lists them, with the defaults)\n", prog->name,
            prog->n_versions ? " [version]" : "", prog->name);
    exit(LB_EXIT_USAGE);
}

/* "--size=4" or "--size 4": return the value text, or exit 2 when it is missing. */
static const char *take_value(const lb_program *prog, const char *flag, const char *inline_val, int argc, char **argv,
                              int *i)
{
    if (inline_val) return inline_val;
    if (*i + 1 >= argc) lb_usage_error(prog, "%s needs a value", flag);
    return argv[++*i];
}

/* Why a value that lb_parse_i64 refused is wrong: written in its grammar ([-]term, then +term or
 * -term, each term digits with ^digits, e/Edigits or one of kKmMgG) but beyond what it can hold,
 * or not a number at all ("2^-1", "1e", "4kk" are not numbers, however numeric their letters) */
static int looks_numeric(const char *s, size_t len)
{
    const char *end = s + len;
    if (s < end && *s == '-') s++;
    for (;;) {
        if (s == end || !isdigit((unsigned char)*s)) return 0;
        while (s < end && isdigit((unsigned char)*s)) s++;
        if (s < end && strchr("^eE", *s)) {
            if (++s == end || !isdigit((unsigned char)*s)) return 0;
            while (s < end && isdigit((unsigned char)*s)) s++;
        } else if (s < end && strchr("kKmMgG", *s))
            s++;
        if (s == end) return 1;
        if (*s != '+' && *s != '-') return 0;
        s++;
    }
}
static const char *not_a_value(const char *s) { return looks_numeric(s, strlen(s)) ? "is too large" : "is not a number"; }

/* A size lb_parse_dims refused, written as at most max_dims numbers (separated by , or x) that
 * only overflowed: too large, not malformed */
static int dims_too_large(const char *v, int max_dims)
{
    int parts = 0;
    for (const char *p = v;; p++) {
        size_t len = strcspn(p, ",x");
        if (!looks_numeric(p, len) || ++parts > max_dims) return 0;
        p += len;
        if (!*p) return 1;
    }
}

static long long positive_value(const lb_program *prog, const char *flag, const char *val, long long max)
{
    long long v;
    if (lb_parse_i64(val, &v)) lb_usage_error(prog, "%s: '%s' %s", flag, val, not_a_value(val));
    if (v <= 0) lb_usage_error(prog, "%s must be positive (got %s)", flag, val);
    if (v > max) lb_usage_error(prog, "%s %s is too large (at most %lld)", flag, val, max);
    return v;
}

static void parse_own_option(const lb_program *prog, const lb_opt *o, const char *val)
{
    switch (o->kind) {
    case LB_OPT_FLAG: *(int *)o->dst = 1; break;
    case LB_OPT_STRING: *(const char **)o->dst = val; break;
    case LB_OPT_INT: {
        long long v;
        if (lb_parse_i64(val, &v)) lb_usage_error(prog, "%s: '%s' %s", o->name, val, not_a_value(val));
        if (v < -2147483647LL || v > 2147483647LL)
            lb_usage_error(prog, "%s: %s is out of range (an int: at most 2147483647 either way)", o->name, val);
        *(int *)o->dst = (int)v;
        break;
    }
    case LB_OPT_I64: {
        long long v;
        if (lb_parse_i64(val, &v)) lb_usage_error(prog, "%s: '%s' %s", o->name, val, not_a_value(val));
        *(long long *)o->dst = v;
        break;
    }
    case LB_OPT_DOUBLE: {
        char *end;
        errno = 0;
        double v = strtod(val, &end);
        if (end == val || *end || errno || !isfinite(v)) lb_usage_error(prog, "%s: '%s' is not a number", o->name, val);
        *(double *)o->dst = v;
        break;
    }
    case LB_OPT_DIMS: { /* X or XxY (or X,Y), each a count or an index: 0 .. 2^31 - 1 */
        lb_dims *d = (lb_dims *)o->dst;
        lb_dims parsed;
        if (lb_parse_dims(val, &parsed, 2)) lb_usage_error(prog, "%s: '%s' is not X or XxY", o->name, val);
        for (int k = 0; k < parsed.n; k++)
            if (parsed.v[k] < 0 || parsed.v[k] > 2147483647LL)
                lb_usage_error(prog, "%s: '%s': each number must be 0 to 2^31-1", o->name, val);
        *d = parsed;
        break;
    }
    }
}

/* The version table must list versions first_version, first_version + 1, ... in order: a row
 * out of place is a mistake in the program, reported before anything runs. */
static void check_version_table(const lb_program *prog)
{
    for (int i = 0; i < prog->n_versions; i++)
        if (prog->versions[i].number != prog->versions[0].number + i)
            lb_die(LB_EXIT_USAGE,
                   "%s: version table row %d is numbered %d, expected %d (rows in order, "
                   "no gaps)",
                   prog->name, i, prog->versions[i].number, prog->versions[0].number + i);
}

void lb_parse_args(const lb_program *prog, lb_args *a, int argc, char **argv)
{
    unsigned u = prog->uses;
    if (a->max_size_dims < 1) a->max_size_dims = 1;
    a->version = -1;
    check_version_table(prog);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char flag[64];
        const char *inline_val = NULL;
        /* split "--flag=value" */
        const char *eq = strchr(arg, '=');
        if (arg[0] == '-' && arg[1] == '-' && eq && (size_t)(eq - arg) < sizeof flag) {
            memcpy(flag, arg, (size_t)(eq - arg));
            flag[eq - arg] = '\0';
            inline_val = eq + 1;
        } else {
            snprintf(flag, sizeof flag, "%s", arg);
        }

        if (!strcmp(flag, "-h") || !strcmp(flag, "--help")) {
            print_usage(prog, a, stdout);
            exit(LB_EXIT_PASS);
        } else if ((u & LB_USE_SIZE) && (!strcmp(flag, "-n") || !strcmp(flag, "--size"))) {
            const char *v = take_value(prog, flag, inline_val, argc, argv, &i);
            lb_dims d;
            static const char *const forms[] = {"", "one number, e.g. 2^20+3", "N or WxH", "N, M,N,K or MxNxK"};
            if (lb_parse_dims(v, &d, a->max_size_dims)) {
                if (dims_too_large(v, a->max_size_dims)) /* 1e30: a number, only too large */
                    lb_usage_error(prog, "%s: '%s' is too large (a size is far smaller: --help)", flag, v);
                lb_usage_error(prog, "%s: '%s' is not a size (%s)", flag, v, forms[a->max_size_dims]);
            }
            for (int k = 0; k < d.n; k++) /* 0x10 is the size 0 by 10, not hexadecimal: say how it was read */
                if (d.v[k] <= 0)
                    lb_usage_error(prog, "%s must be positive (got %s%s)", flag, v,
                                   d.n == 2 && strchr(v, 'x') ? ", read as width x height" : "");
            a->size = d;
            a->size_given = 1;
        } else if ((u & LB_USE_BLOCK) && !strcmp(flag, "--block")) {
            a->block = (int)positive_value(prog, flag, take_value(prog, flag, inline_val, argc, argv, &i), 1 << 20);
        } else if ((u & LB_USE_ITERS) && !strcmp(flag, "--iters")) {
            a->iters = (int)positive_value(prog, flag, take_value(prog, flag, inline_val, argc, argv, &i), 1000000);
        } else if ((u & LB_USE_SEED) && !strcmp(flag, "--seed")) {
            const char *v = take_value(prog, flag, inline_val, argc, argv, &i);
            long long s;
            if (lb_parse_i64(v, &s)) lb_usage_error(prog, "--seed: '%s' %s", v,
                               looks_numeric(v, strlen(v)) ? "is too large (at most 2^62)" : "is not a number");
            if (s < 0) lb_usage_error(prog, "--seed must be 0 or more (got %s)", v);
            a->seed = (unsigned long long)s;
        } else if ((u & LB_USE_CHECK_ONLY) && !strcmp(flag, "--check-only")) {
            if (inline_val) lb_usage_error(prog, "%s takes no value", flag);
            a->check_only = 1;
        } else if ((u & LB_USE_QUIET) && !strcmp(flag, "--quiet")) {
            if (inline_val) lb_usage_error(prog, "%s takes no value", flag);
            a->quiet = 1;
        } else if (prog->n_versions > 0 && isdigit((unsigned char)arg[0])) {
            long long v;
            int lo = lb_first_version(prog), hi = lb_last_version(prog);
            if (a->version != -1) lb_usage_error(prog, "one version at a time (got %d, then '%s')", a->version, arg);
            if (lb_parse_i64(arg, &v) || v < lo || v > hi)
                lb_usage_error(prog, "version '%s' does not exist (%d..%d)", arg, lo, hi);
            a->version = (int)v;
        } else {
            const lb_opt *o = NULL;
            for (int k = 0; k < prog->n_opts; k++)
                if (!strcmp(flag, prog->opts[k].name)) o = &prog->opts[k];
            if (!o) lb_usage_error(prog, "unknown argument '%s'", arg);
            if (o->kind == LB_OPT_FLAG) {
                if (inline_val) lb_usage_error(prog, "%s takes no value", flag);
                parse_own_option(prog, o, NULL);
            } else {
                parse_own_option(prog, o, take_value(prog, flag, inline_val, argc, argv, &i));
            }
        }
    }
}

void lb_check_output_path(const lb_program *prog, const char *flag, const char *path)
{
    if (!path || !path[0]) return;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (strlen(path) >= sizeof dir) lb_usage_error(prog, "%s: the path is too long", flag);
    if (!slash)
        strcpy(dir, ".");
    else if (slash == path)
        strcpy(dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (slash && slash[1] == '\0') lb_usage_error(prog, "%s '%s' names a folder, not a file", flag, path);
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) lb_usage_error(prog, "%s '%s': no folder '%s'", flag, path, dir);
    if (access(dir, W_OK)) lb_usage_error(prog, "%s '%s': the folder '%s' is not writable", flag, path, dir);
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) lb_usage_error(prog, "%s '%s' is a folder, not a file", flag, path);
}

void lb_size_mnk(const lb_program *prog, const lb_args *args, int *M, int *N, int *K)
{
    if (args->size.n == 2) lb_usage_error(prog, "--size takes N or M,N,K (also written MxNxK), not two numbers");
    long long d[3];
    for (int i = 0; i < 3; i++) {
        d[i] = args->size.n == 3 ? args->size.v[i] : args->size.v[0];
        if (d[i] > 65536) lb_usage_error(prog, "--size: each dimension at most 65536");
    }
    *M = (int)d[0], *N = (int)d[1], *K = (int)d[2];
}

void lb_size_rows_cols(const lb_program *prog, const lb_args *args, int max_cols, const char *cols_name, int *rows,
                       int *cols)
{
    long long r = args->size.v[0], c = args->size.n == 2 ? args->size.v[1] : args->size.v[0];
    if (c > max_cols) lb_usage_error(prog, "--size: at most %d %s", max_cols, cols_name);
    if (r > (1 << 24) || r * c > (1LL << 31))
        lb_usage_error(prog, "--size: at most 2^24 rows and 2^31 elements (got %lldx%lld)", r, c);
    *rows = (int)r, *cols = (int)c;
}

int lb_first_version(const lb_program *prog) { return prog->n_versions ? prog->versions[0].number : -1; }

int lb_last_version(const lb_program *prog)
{
    return prog->n_versions ? prog->versions[prog->n_versions - 1].number : -1;
}

const lb_version *lb_version_of(const lb_program *prog, int number)
{
    int i = number - lb_first_version(prog);
    return (prog->n_versions && i >= 0 && i < prog->n_versions) ? &prog->versions[i] : NULL;
}
