/* test_dnn_data.c - host-only tests of ch09_dnn/dnn_data.c, linked alone (no cuBLAS, no
 * kernels): the CSV loader (good files and every kind of malformed one), the shuffle and the
 * z-score. */
#define _POSIX_C_SOURCE 200809L
#include "dnn_data.h"

#include <math.h>
#include <string.h>
#include <unistd.h>
#include "unit.h"

static char *write_temp(const char *text)
{
    static char path[64];
    strcpy(path, "/tmp/labbook_csv_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
        close(fd);
    }
    return path;
}

static void test_good_csv(void)
{
    char err[512];
    dataset d;
    char *p = write_temp("3,2,cat,dog\n1.5,2,0\n-3,4e1,1\r\n0,0 , 1\n\n");
    CHECK(lb_load_csv(p, &d, 0, err, sizeof err) == 0);
    CHECK(d.n == 3 && d.features == 2 && d.classes == 2);
    if (d.n == 3) {
        CHECK(d.x[0] == 1.5f && d.x[3] == 40.0f && d.y[0] == 0 && d.y[1] == 1 && d.y[2] == 1);
        CHECK(strcmp(d.class_names[1], "dog") == 0);
    }
    lb_free_dataset(&d);
    unlink(p);
    /* unlabelled rows are allowed for --predict only */
    p = write_temp("2,2,a,b\n1,2\n3,4,1\n");
    CHECK(lb_load_csv(p, &d, 1, err, sizeof err) == 0 && d.y[0] == -1 && d.y[1] == 1);
    lb_free_dataset(&d);
    CHECK(lb_load_csv(p, &d, 0, err, sizeof err) == -1 && strstr(err, ":2: 2 fields"));
    unlink(p);
    /* the data sets themselves */
    CHECK(lb_load_csv("../datasets/iris.csv", &d, 0, err, sizeof err) == 0 && d.n == 150 && d.features == 4 &&
          d.classes == 3);
    lb_free_dataset(&d);
    CHECK(lb_load_csv("../datasets/digits.csv", &d, 0, err, sizeof err) == 0 && d.n == 1797 && d.features == 64 &&
          d.classes == 10);
    lb_free_dataset(&d);
}

static void test_bad_csv(void)
{
    static const struct {
        const char *text, *reason;
    } bad[] = {
        {"", "empty file"},
        {"x,2,a,b\n", ":1: bad header"},
        {"2,2\n1,2,0\n", ":1: bad header"},
        {"2,0,a\n", ":1: bad header"},
        {"2.5,2,a,b\n", ":1: bad header"},
        {"1,2,a, \n1,2,0\n", "class name 2 is empty"},
        {"2,2,a,b\n1,2,0\n1,2\n", ":3: 2 fields"},
        {"2,2,a,b\n1,2,0\n1,2,0,0\n", ":3: 4 fields"},
        {"2,2,a,b\n1,x,0\n1,2,0\n", ":2: field 2 ('x') is not a number"},
        {"2,2,a,b\n1,2,0\n1,,0\n", ":3: field 2 ('') is not a number"},
        {"2,2,a,b\n1,2,2\n", ":2: label '2' is not a class number 0..1"},
        {"2,2,a,b\n1,2,-1\n", "label '-1'"},
        {"2,2,a,b\n1,2,0.5\n", "label '0.5'"},
        {"3,2,a,b\n1,2,0\n1,2,1\n", ":4: the header promises 3 samples, the file ends after 2"},
        {"1,2,a,b\n1,2,0\n3,4,1\n", ":3: more rows than the header's 1"},
        {"1,2,a,b\n1,nan,0\n", "is not a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512] = "";
        dataset d;
        char *p = write_temp(bad[i].text);
        int rc = lb_load_csv(p, &d, 0, err, sizeof err);
        CHECK(rc == -1);
        CHECK(strstr(err, bad[i].reason) != NULL);
        CHECK(strncmp(err, p, strlen(p)) == 0); /* the message names the file */
        if (!strstr(err, bad[i].reason)) fprintf(stderr, "  case %zu: '%s'\n", i, err);
        unlink(p);
    }
    char err[512];
    dataset d;
    CHECK(lb_load_csv("/nonexistent/x.csv", &d, 0, err, sizeof err) == -1 && strstr(err, "cannot open"));
}

static void test_shuffle_and_zscore(void)
{
    /* the shuffle is a permutation, and the same one for the same seed */
    int a[100], b[100], seen[100] = {0};
    lb_rng r1, r2;
    lb_rng_seed(&r1, 5);
    lb_rng_seed(&r2, 5);
    for (int i = 0; i < 100; i++) a[i] = b[i] = i;
    shuffle(a, 100, &r1);
    shuffle(b, 100, &r2);
    int moved = 0;
    for (int i = 0; i < 100; i++) seen[a[i]]++, moved += a[i] != i;
    for (int i = 0; i < 100; i++) CHECK(seen[i] == 1 && a[i] == b[i]);
    CHECK(moved > 90);

    /* z-score: mean 0, sd 1 afterwards; a constant feature keeps sd 1 */
    float x[] = {1, 5, 3, 5, 5, 5, 7, 5};
    int y[] = {0, 0, 0, 0};
    dataset d = {4, 2, 1, x, y, NULL};
    float mean[2], sd[2];
    feature_stats(&d, mean, sd);
    CHECK(mean[0] == 4.0f && mean[1] == 5.0f && fabsf(sd[0] - sqrtf(5.0f)) < 1e-6f && sd[1] == 1.0f);
    normalize(&d, mean, sd);
    CHECK(fabsf(x[0] + 3.0f / sqrtf(5.0f)) < 1e-6f && x[1] == 0.0f);
}

int main(void)
{
    test_good_csv();
    test_bad_csv();
    test_shuffle_and_zscore();
    printf("test_dnn_data: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
