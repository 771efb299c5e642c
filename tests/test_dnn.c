/* test_dnn.c - host-only tests of ch09_dnn/dnn_net.c's CPU parts: the layer list and the
 * parameter layout, and the CPU loss that gradcheck uses as its oracle. Needs no GPU. */
#include "dnn_net.h"

#include <math.h>
#include <stdlib.h>
#include "unit.h"

static void test_layers(void)
{
    network net = {0};
    CHECK(parse_layers("4,16,16,3", &net) == 3 && net.size[0] == 4 && net.size[3] == 3);
    CHECK(parse_layers("784,1024,10", &net) == 2);
    CHECK(parse_layers("4", &net) == -1);
    CHECK(parse_layers("4,,3", &net) == -1);
    CHECK(parse_layers("4,0,3", &net) == -1);
    CHECK(parse_layers("4,x", &net) == -1);
    CHECK(parse_layers("1,2,3,4,5,6,7,8,9,10", &net) == -1); /* more than DNN_MAX_LAYERS weight layers */
    net.n_layers = parse_layers("4,16,16,3", &net);
    layout(&net);
    CHECK(net.n_params == 4 * 16 + 16 + 16 * 16 + 16 + 16 * 3 + 3);
    CHECK(net.w_off[1] == 80 && net.b_off[2] == 80 + 272 + 48);
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
    test_layers();
    test_loss_cpu();
    printf("test_dnn: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
