/* test_dnn.c - host-only tests of ch09_dnn/dnn.c: the CSV loader (good files and every kind of
 * malformed one), the layer list, the shuffle, the z-score, and the CPU loss that gradcheck
 * uses as its oracle. */
#define main dnn_main
#include "dnn.c"
#undef main
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
    CHECK(load_csv(p, &d, 0, err, sizeof err) == 0);
    CHECK(d.n == 3 && d.features == 2 && d.classes == 2);
    if (d.n == 3) {
        CHECK(d.x[0] == 1.5f && d.x[3] == 40.0f && d.y[0] == 0 && d.y[1] == 1 && d.y[2] == 1);
        CHECK(strcmp(d.class_names[1], "dog") == 0);
    }
    free_dataset(&d);
    unlink(p);
    /* unlabelled rows are allowed for --predict only */
    p = write_temp("2,2,a,b\n1,2\n3,4,1\n");
    CHECK(load_csv(p, &d, 1, err, sizeof err) == 0 && d.y[0] == -1 && d.y[1] == 1);
    free_dataset(&d);
    CHECK(load_csv(p, &d, 0, err, sizeof err) == -1 && strstr(err, ":2: 2 fields"));
    unlink(p);
    /* the data sets themselves */
    CHECK(load_csv("../datasets/iris.csv", &d, 0, err, sizeof err) == 0 && d.n == 150 && d.features == 4 && d.classes == 3);
    free_dataset(&d);
    CHECK(load_csv("../datasets/digits.csv", &d, 0, err, sizeof err) == 0 && d.n == 1797 && d.features == 64 && d.classes == 10);
    free_dataset(&d);
}

static void test_bad_csv(void)
{
    static const struct { const char *text, *reason; } bad[] = {
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
        int rc = load_csv(p, &d, 0, err, sizeof err);
        CHECK(rc == -1);
        CHECK(strstr(err, bad[i].reason) != NULL);
        CHECK(strncmp(err, p, strlen(p)) == 0);   /* the message names the file */
        if (!strstr(err, bad[i].reason)) fprintf(stderr, "  case %zu: '%s'\n", i, err);
        unlink(p);
    }
    char err[512];
    dataset d;
    CHECK(load_csv("/nonexistent/x.csv", &d, 0, err, sizeof err) == -1 && strstr(err, "cannot open"));
}

static void test_layers_and_split(void)
{
    network net = {0};
    CHECK(parse_layers("4,16,16,3", &net) == 3 && net.size[0] == 4 && net.size[3] == 3);
    CHECK(parse_layers("784,1024,10", &net) == 2);
    CHECK(parse_layers("4", &net) == -1);
    CHECK(parse_layers("4,,3", &net) == -1);
    CHECK(parse_layers("4,0,3", &net) == -1);
    CHECK(parse_layers("4,x", &net) == -1);
    CHECK(parse_layers("1,2,3,4,5,6,7,8,9,10", &net) == -1);   /* more than MAX_LAYERS weight layers */
    net.n_layers = parse_layers("4,16,16,3", &net);
    layout(&net);
    CHECK(net.n_params == 4 * 16 + 16 + 16 * 16 + 16 + 16 * 3 + 3);
    CHECK(net.w_off[1] == 80 && net.b_off[2] == 80 + 272 + 48);

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

static void test_loss_cpu(void)
{
    /* zero weights: every class equally likely, loss = log(C) */
    network net = {0};
    parse_layers("3,4,5", &net);
    net.n_layers = 2;
    layout(&net);
    float *p = calloc(net.n_params, sizeof(float));
    float x[6] = {1, 2, 3, -1, 0, 1};
    int y[2] = {4, 0};
    CHECK(fabs(loss_cpu(&net, p, x, y, 2) - log(5.0)) < 1e-12);
    /* one layer, logits = x W + b by hand: x = (1, 2), W = [[1, 0], [0, 1]], b = (0, 1) ->
     * logits (1, 3), label 0: loss = log(e^1 + e^3) - 1 */
    network one = {0};
    parse_layers("2,2", &one);
    one.n_layers = 1;
    layout(&one);
    float q[6] = {1, 0, 0, 1, 0, 1};
    float x1[2] = {1, 2};
    int y1[1] = {0};
    CHECK(fabs(loss_cpu(&one, q, x1, y1, 1) - (log(exp(1.0) + exp(3.0)) - 1.0)) < 1e-12);
    free(p);
}

int main(void)
{
    test_good_csv();
    test_bad_csv();
    test_layers_and_split();
    test_loss_cpu();
    printf("test_dnn: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
