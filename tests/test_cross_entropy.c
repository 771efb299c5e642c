/* test_cross_entropy.c - host-only tests of ch11_transformer/cross_entropy.c's CPU reference
 * and bounds: known answers, a float emulation of the kernels' summation order (1024 threads,
 * each its share of the row, then a tree) inside the bounds, and a row's sum one float4 short
 * outside them. Needs no GPU. */
#define main cross_entropy_main
#include "../ch11_transformer/cross_entropy.c"
#undef main

#include "unit.h"

/* the kernels' order in float; short4: the sum leaves out the row's last four logits */
static float emulate(const float *x, const int *y, float *g, int rows, int classes, int short4)
{
    float total = 0.0f;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * classes;
        float m = -INFINITY, part[1024] = {0};
        for (int c = 0; c < classes; c++) m = fmaxf(m, xr[c]);
        for (int c = 0; c < classes - (short4 ? 4 : 0); c++) part[c % 1024] += expf(xr[c] - m);
        for (int h = 512; h > 0; h >>= 1)
            for (int q = 0; q < h; q++) part[q] += part[q + h];
        float s = part[0];
        for (int c = 0; c < classes; c++) g[(size_t)r * classes + c] = (expf(xr[c] - m) / s - (c == y[r])) / rows;
        total += logf(s) + m - xr[y[r]];
    }
    return total / rows;
}

int main(void)
{
    /* known answers: two equal logits, label 0: loss log 2, gradient (1/2 - 1, 1/2) */
    float x2[2] = {3.0f, 3.0f}, g2[2];
    int y2[1] = {0};
    double mx1[1], tol1;
    double loss = cross_entropy_cpu(x2, y2, g2, mx1, 1, 2, &tol1);
    CHECK(fabs(loss - log(2.0)) < 1e-12 && g2[0] == -0.5f && g2[1] == 0.5f && tol1 > 0);

    int shapes[][2] = {{64, 50257}, {16, 57344}, {300, 2}, {200, 1000}};
    double amps[] = {10, 30, 100, 0};
    for (int k = 0; k < 4; k++) {
        int rows = shapes[k][0], C = shapes[k][1];
        size_t n = (size_t)rows * C;
        float *x = malloc(4 * n), *g = malloc(4 * n), *ref = malloc(4 * n), *bad = malloc(4 * n);
        int *y = malloc(4 * (size_t)rows);
        double *mx = malloc(8 * (size_t)rows), lt;
        lb_rng rng;
        lb_rng_seed(&rng, 3 + k);
        lb_fill_uniform(x, n, (float)-amps[k], (float)amps[k], &rng);
        for (int r = 0; r < rows; r++) y[r] = (int)(lb_rng_next(&rng) % (uint64_t)C);
        double want = cross_entropy_cpu(x, y, ref, mx, rows, C, &lt);
        float got = emulate(x, y, g, rows, C, 0);
        ce_tol t = {x, mx, ref, y, rows, C};
        CHECK(lb_check_f32_bound("emulation", g, ref, n, grad_tolerance, &t, 1).n_bad == 0);
        CHECK(fabs(got - want) <= lt);
        if (C > 4) {
            emulate(x, y, bad, rows, C, 1);
            CHECK(lb_check_f32_bound("a float4 short", bad, ref, n, grad_tolerance, &t, 1).n_bad > 0);
        }
        free(x), free(g), free(ref), free(bad), free(y), free(mx);
    }
    printf("test_cross_entropy: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
