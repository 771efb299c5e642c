/* test_layernorm.c - host-only tests of ch11_transformer/layernorm.c's CPU reference and bounds:
 * a known row, a float emulation of the kernels' summation order (256 threads, then a tree; the
 * column sums in groups of 64 rows) inside every bound, and the one-pass variance E[x^2] -
 * mean^2 outside them where the mean is far from the spread. Needs no GPU. */
#define main layernorm_main
#include "../ch11_transformer/layernorm.c"
#undef main

#include "unit.h"

static float block_sum_f(const float *v, int n)
{
    float part[256] = {0};
    for (int i = 0; i < n; i++) part[i % 256] += v[i];
    for (int h = 128; h > 0; h >>= 1)
        for (int q = 0; q < h; q++) part[q] += part[q + h];
    return part[0];
}

int main(void)
{
    /* a known row: 1, 2, 3, 4 has mean 2.5 and variance 1.25; gamma 1, beta 0 */
    float x4[4] = {1, 2, 3, 4}, g4[4] = {1, 1, 1, 1}, b4[4] = {0}, dy4[4] = {0}, y4[4], r4[4];
    double mean1, rstd1, em1;
    ln_data d4 = {1, 4, x4, g4, b4, dy4, &mean1, &rstd1, &em1};
    layernorm_cpu(&d4, y4, r4);
    CHECK(mean1 == 2.5 && fabs(rstd1 - 1.0 / sqrt(1.25 + (double)LN_EPS)) < 1e-15);
    CHECK(fabs(y4[0] + 1.5 * rstd1) < 1e-6 && fabs(y4[3] - 1.5 * rstd1) < 1e-6);

    double offs[] = {0, 1000, -50};
    int shapes[][2] = {{64, 4096}, {300, 1000}, {130, 4097}};
    for (int k = 0; k < 3; k++) {
        int rows = shapes[k][0], cols = shapes[k][1];
        size_t n = (size_t)rows * cols;
        float *x = malloc(4 * n), *dy = malloc(4 * n), *y = malloc(4 * n), *yr = malloc(4 * n), *dx = malloc(4 * n);
        float *g = malloc(4 * (size_t)cols), *b = malloc(4 * (size_t)cols), *dg = malloc(4 * (size_t)cols),
              *db = malloc(4 * (size_t)cols), *tmp = malloc(4 * (size_t)cols);
        float *ey = malloc(4 * n), *naive = malloc(4 * n), *edx = malloc(4 * n), *edg = malloc(4 * (size_t)cols),
              *edb = malloc(4 * (size_t)cols), *mean = malloc(4 * (size_t)rows), *rstd = malloc(4 * (size_t)rows);
        double *dxt = malloc(8 * n), *dgt = malloc(8 * (size_t)cols), *dbt = malloc(8 * (size_t)cols);
        ln_data d = {rows, cols, x, g, b, dy, malloc(8 * (size_t)rows), malloc(8 * (size_t)rows), malloc(8 * (size_t)rows)};
        lb_rng rng;
        lb_rng_seed(&rng, 5 + k);
        for (size_t i = 0; i < n; i++) x[i] = (float)(offs[k] + lb_rng_uniform(&rng, -1, 1));
        lb_fill_uniform(g, (size_t)cols, 0.5f, 1.5f, &rng);
        lb_fill_uniform(b, (size_t)cols, -0.5f, 0.5f, &rng);
        lb_fill_uniform(dy, n, -1, 1, &rng);
        layernorm_cpu(&d, y, yr);
        layernorm_backward_cpu(&d, dx, dxt, dg, db, dgt, dbt, LN_ROWS_PER_GROUP);
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * cols;
            float m = block_sum_f(xr, cols) / cols;
            for (int c = 0; c < cols; c++) tmp[c] = (xr[c] - m) * (xr[c] - m);
            float rs = 1.0f / sqrtf(block_sum_f(tmp, cols) / cols + LN_EPS);
            for (int c = 0; c < cols; c++) tmp[c] = xr[c] * xr[c];
            float rs_naive = 1.0f / sqrtf(fmaxf(block_sum_f(tmp, cols) / cols - m * m, 0.0f) + LN_EPS);
            for (int c = 0; c < cols; c++) {
                ey[(size_t)r * cols + c] = (xr[c] - m) * rs * g[c] + b[c];
                naive[(size_t)r * cols + c] = (xr[c] - m) * rs_naive * g[c] + b[c];
            }
            mean[r] = m, rstd[r] = rs;
            float *a1 = malloc(4 * (size_t)cols), *a2 = malloc(4 * (size_t)cols);
            for (int c = 0; c < cols; c++) {
                float xh = (xr[c] - m) * rs, dxh = dy[(size_t)r * cols + c] * g[c];
                a1[c] = dxh, a2[c] = dxh * xh;
            }
            float m1 = block_sum_f(a1, cols) / cols, m2 = block_sum_f(a2, cols) / cols;
            for (int c = 0; c < cols; c++) {
                float xh = (xr[c] - m) * rs, dxh = dy[(size_t)r * cols + c] * g[c];
                edx[(size_t)r * cols + c] = rs * (dxh - m1 - xh * m2);
            }
            free(a1), free(a2);
        }
        fwd_tol ft = {&d, y, 0};
        CHECK(lb_check_f32_bound("forward", ey, y, n, forward_tolerance, &ft, 1).n_bad == 0);
        CHECK(lb_check_f32_bound("dX", edx, dx, n, array_tolerance, dxt, 1).n_bad == 0);
        /* the column sums as both backwards take them: groups of LN_ROWS_PER_GROUP rows (the
         * three-read one) and of LN_BWD_ROWS (the one-read one), each within its own bound */
        int group_sizes[2] = {LN_ROWS_PER_GROUP, LN_BWD_ROWS};
        for (int gs = 0; gs < 2; gs++) {
            int G_rows = group_sizes[gs];
            layernorm_backward_cpu(&d, dx, dxt, dg, db, dgt, dbt, G_rows);
            for (int c = 0; c < cols; c++) {
                float G = 0, B = 0;
                for (int r0 = 0; r0 < rows; r0 += G_rows) {
                    float pg = 0, pb = 0;
                    for (int r = r0; r < rows && r < r0 + G_rows; r++) {
                        size_t i = (size_t)r * cols + c;
                        pg += dy[i] * (x[i] - mean[r]) * rstd[r], pb += dy[i];
                    }
                    G += pg, B += pb;
                }
                edg[c] = G, edb[c] = B;
            }
            CHECK(lb_check_f32_bound("dgamma", edg, dg, (size_t)cols, array_tolerance, dgt, 1).n_bad == 0);
            CHECK(lb_check_f32_bound("dbeta", edb, db, (size_t)cols, array_tolerance, dbt, 1).n_bad == 0);
        }
        /* the one-pass variance: caught wherever the mean is far from the spread */
        if (offs[k] != 0) CHECK(lb_check_f32_bound("naive", naive, y, n, forward_tolerance, &ft, 1).n_bad > n / 10);
        free(x), free(dy), free(y), free(yr), free(dx), free(g), free(b), free(dg), free(db), free(tmp), free(ey);
        free(naive), free(edx), free(edg), free(edb), free(mean), free(rstd), free(dxt), free(dgt), free(dbt);
        free(d.mean), free(d.rstd), free(d.e_mean);
    }
    printf("test_layernorm: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
