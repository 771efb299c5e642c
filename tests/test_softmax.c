/* test_softmax.c - host-only tests of ch11_transformer/softmax.c's CPU reference and tolerance:
 * known answers, a float emulation of a thread per row (expf, a serial sum: the longest chain
 * any version has) inside the bound at every shape, and a row's sum missing one term outside it.
 * Needs no GPU. */
#define main softmax_main /* take the program's functions, not its main */
#include "../ch11_transformer/softmax.c"
#undef main

#include "unit.h"

/* version 1 in float; skip_last: the sum leaves out the row's last element (a planted bug) */
static void softmax_float(const float *x, float *y, int rows, int cols, int skip_last)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float m = -INFINITY, s = 0.0f;
        for (int c = 0; c < cols; c++) m = fmaxf(m, xr[c]);
        for (int c = 0; c < cols - (skip_last && cols > 1); c++) s += expf(xr[c] - m);
        for (int c = 0; c < cols; c++) y[(size_t)r * cols + c] = expf(xr[c] - m) * (1.0f / s);
    }
}

int main(void)
{
    /* known answers: equal values give 1 / cols; a masked entry gives 0; two entries 0 and ln 3 give 1/4, 3/4 */
    float x3[3] = {2.0f, 2.0f, -INFINITY}, y3[3], x2[2] = {0.0f, (float)log(3.0)}, y2[2];
    double m[1];
    softmax_cpu(x3, y3, m, 1, 3);
    CHECK(y3[0] == 0.5f && y3[1] == 0.5f && y3[2] == 0.0f && m[0] == 2.0);
    softmax_cpu(x2, y2, m, 1, 2);
    CHECK(fabs(y2[0] - 0.25) < 1e-7 && fabs(y2[1] - 0.75) < 1e-7);

    int shapes[][2] = {{64, 4097}, {16, 32768}, {256, 1}, {200, 1000}};
    double amps[] = {10, 100, 0, 3}, masked_share[] = {0, 0, 0, 0.3};
    for (int k = 0; k < 4; k++) {
        int rows = shapes[k][0], cols = shapes[k][1];
        size_t n = (size_t)rows * cols;
        float *x = malloc(4 * n), *y = malloc(4 * n), *ref = malloc(4 * n), *bad = malloc(4 * n);
        double *mx = malloc(8 * (size_t)rows);
        lb_rng rng;
        lb_rng_seed(&rng, 1 + k);
        make_input(x, rows, cols, amps[k], masked_share[k], &rng);
        softmax_cpu(x, ref, mx, rows, cols);
        softmax_float(x, y, rows, cols, 0);
        softmax_float(x, bad, rows, cols, 1);
        softmax_tol t = {x, mx, ref, cols};
        CHECK(lb_check_f32_bound("emulation", y, ref, n, softmax_tolerance, &t, 1).n_bad == 0);
        /* a lost term is seen where it is a share of the sum above the bound: not at +-100 over
         * 32768 columns, where most terms are nothing beside the largest */
        if (amps[k] < 50 && cols > 1) CHECK(lb_check_f32_bound("one term lost", bad, ref, n, softmax_tolerance, &t, 1).n_bad > 0);
        /* every row keeps one finite entry */
        for (int r = 0; r < rows; r++) CHECK(isfinite(mx[r]));
        free(x), free(y), free(ref), free(bad), free(mx);
    }
    printf("test_softmax: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
