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

/* gradcheck's comparison: a smooth point, a wrong gradient, and a ReLU kink at p (the loss is
 * a |z|-like corner: slope -1 on the left, 3 on the right), where the central difference (1) is
 * neither side and the gradient is one side or wrong */
static void test_compare_gradient(void)
{
    double h = 1e-5, l0 = 2.0;
    /* smooth: L = 2 + 0.5 p + p^2 around p = 0 */
    double lp = l0 + 0.5 * h + h * h, lm = l0 - 0.5 * h + h * h;
    grad_verdict ok = compare_gradient(0.5, lp, l0, lm, h, h);
    CHECK(ok.rel <= GRADCHECK_TOL && !ok.kink && fabs(ok.fd - 0.5) < 1e-9);
    CHECK(compare_gradient(0.55, lp, l0, lm, h, h).rel > GRADCHECK_TOL); /* 10% off: caught */
    /* a kink: slope -1 to the left, 3 to the right */
    double kp = l0 + 3.0 * h, km = l0 + 1.0 * h;
    grad_verdict left = compare_gradient(-1.0, kp, l0, km, h, h), right = compare_gradient(3.0, kp, l0, km, h, h);
    CHECK(left.kink && left.rel <= GRADCHECK_TOL && right.kink && right.rel <= GRADCHECK_TOL);
    CHECK(fabs(left.fd - 1.0) < 1e-9); /* the central difference: the sides' mean */
    grad_verdict wrong = compare_gradient(2.0, kp, l0, km, h, h); /* neither side */
    CHECK(!wrong.kink && wrong.rel > GRADCHECK_TOL);
    /* a wrong gradient at a smooth point is not excused as a kink */
    CHECK(!compare_gradient(-0.5, lp, l0, lm, h, h).kink);
}

/* The fused GEMMs' plans: with a split, the workspace and counters hold every part, each part
 * of K is at least 64 deep; and the plans of the 784-1024-10 step as NOTES.md describes them. */
static void test_fused_plans(void)
{
    const int sms[] = {132, 108, 40, 1};
    const int shapes[][3] = {{128, 1024, 785}, {128, 10, 1025}, {128, 1024, 10},   {1025, 10, 128},   {785, 1024, 128},
                             {1, 1, 1},        {5, 3, 17},      {4097, 4096, 512}, {512, 1000, 4097}, {16, 17, 5}};
    for (size_t g = 0; g < sizeof sms / sizeof sms[0]; g++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
            fused_plan p = fused_plan_for(M, N, K, sms[g]);
            int tiles = ((M + p.tile_m - 1) / p.tile_m) * ((N + p.tile_n - 1) / p.tile_n);
            CHECK(p.splits >= 1);
            CHECK(p.tile_m == 32 || p.tile_m == 64 || p.tile_m == 128);
            if (p.splits > 1) {
                CHECK((size_t)tiles * p.splits * p.tile_m * p.tile_n <= fused_workspace_floats(sms[g]));
                CHECK((size_t)tiles <= fused_counter_ints(sms[g]));
                CHECK(K / p.splits >= 64);
            }
        }
    fused_plan fwd = fused_plan_for(128, 1024, 785, 132), dw = fused_plan_for(785, 1024, 128, 132);
    CHECK(fwd.tile_m == 64 && fwd.splits == 8);
    CHECK(dw.tile_m == 64 && dw.splits == 1);
}

int main(void)
{
    test_layers();
    test_loss_cpu();
    test_compare_gradient();
    test_fused_plans();
    printf("test_dnn: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
