/* test_svd_pca.c - host-only tests of ch07_cublas/svd_pca_cpu.c, linked alone: the Jacobi SVD
 * and eigen references on matrices whose answers are known, the covariance, the count of
 * components for a share of the variance, and the scatter picture's file. */
#define _POSIX_C_SOURCE 200809L
#include "svd_pca_cpu.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include "unit.h"

static int close_to(double a, double b, double tol) { return fabs(a - b) <= tol; }

static void test_svd_values(void)
{
    double s[4];
    /* a diagonal matrix: its singular values are |diagonal|, sorted */
    float diag[9] = {2, 0, 0, 0, -5, 0, 0, 0, 3};
    CHECK(svd_values_cpu(diag, 3, 3, s) >= 1);
    CHECK(close_to(s[0], 5, 1e-12) && close_to(s[1], 3, 1e-12) && close_to(s[2], 2, 1e-12));
    /* [[3, 0], [4, 5]]: A^T A = [[25, 20], [20, 25]], eigenvalues 45 and 5 */
    float a2[4] = {3, 0, 4, 5};
    CHECK(svd_values_cpu(a2, 2, 2, s) >= 1);
    CHECK(close_to(s[0], sqrt(45.0), 1e-12) && close_to(s[1], sqrt(5.0), 1e-12));
    /* one row (wide) and one column (tall): a single singular value, the vector's norm */
    float row[4] = {1, 2, 2, 4};
    CHECK(svd_values_cpu(row, 1, 4, s) >= 1 && close_to(s[0], 5, 1e-12));
    CHECK(svd_values_cpu(row, 4, 1, s) >= 1 && close_to(s[0], 5, 1e-12));
    /* rank 1 (outer product of (1,2,3) and (1,1)): one non-zero value, sqrt(14) sqrt(2) */
    float r1[6] = {1, 1, 2, 2, 3, 3};
    CHECK(svd_values_cpu(r1, 3, 2, s) >= 1);
    CHECK(close_to(s[0], sqrt(28.0), 1e-12) && close_to(s[1], 0, 1e-12));
    /* zeros */
    float z[6] = {0};
    CHECK(svd_values_cpu(z, 2, 3, s) >= 1 && s[0] == 0 && s[1] == 0);
    /* the sum of squares of the singular values is the squared Frobenius norm */
    lb_rng rng;
    lb_rng_seed(&rng, 5);
    float r[7 * 4];
    lb_fill_uniform(r, 28, -1, 1, &rng);
    double fro = 0, ss = 0;
    for (int i = 0; i < 28; i++) fro += (double)r[i] * r[i];
    CHECK(svd_values_cpu(r, 7, 4, s) >= 1);
    for (int i = 0; i < 4; i++) ss += s[i] * s[i];
    CHECK(close_to(ss, fro, 1e-12 * fro) && s[0] >= s[1] && s[1] >= s[2] && s[2] >= s[3] && s[3] > 0);
}

static void test_eigen_and_covariance(void)
{
    double g[9] = {2, 1, 0, 1, 2, 0, 0, 0, 7}, w[3];
    CHECK(sym_eigenvalues_cpu(g, 3, w) >= 0);
    CHECK(close_to(w[0], 7, 1e-12) && close_to(w[1], 3, 1e-12) && close_to(w[2], 1, 1e-12));
    /* points on the line y = 2x: one direction holds all the variance */
    float x[8] = {0, 0, 1, 2, 2, 4, 3, 6};
    double mean[2], cov[4];
    covariance_cpu(x, 4, 2, mean, cov);
    CHECK(close_to(mean[0], 1.5, 1e-15) && close_to(mean[1], 3, 1e-15));
    /* var(x) = 5/3, var(y) = 20/3, cov = 10/3 */
    CHECK(close_to(cov[0], 5.0 / 3, 1e-14) && close_to(cov[3], 20.0 / 3, 1e-14) && close_to(cov[1], 10.0 / 3, 1e-14) &&
          cov[1] == cov[2]);
    CHECK(sym_eigenvalues_cpu(cov, 2, w) >= 0 && close_to(w[0], 25.0 / 3, 1e-13) && close_to(w[1], 0, 1e-13));
}

static void test_components_for(void)
{
    double var[4] = {6, 2, 1.5, 0.5}; /* total 10: 60%, 80%, 95%, 100% */
    CHECK(components_for(var, 4, 10, 0.5) == 1);
    CHECK(components_for(var, 4, 10, 0.6) == 1);
    CHECK(components_for(var, 4, 10, 0.9) == 3);
    CHECK(components_for(var, 4, 10, 0.95) == 3);
    CHECK(components_for(var, 4, 10, 0.99) == 4);
}

static void test_scatter(void)
{
    float px[3] = {-1, 0, 2}, py[3] = {1, -3, 0.5f};
    int label[3] = {0, 1, -1};
    const char *path = "/tmp/labbook_scatter_test.png";
    remove(path);
    CHECK(write_scatter_png(path, px, py, label, 3) == 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 480 * 480); /* uncompressed: at least one byte a pixel */
    remove(path);
    CHECK(write_scatter_png("/no-such-folder/x.png", px, py, label, 3) == -1);
    CHECK(!strcmp(scatter_colour_name(0), "blue") && !strcmp(scatter_colour_name(11), "orange") &&
          !strcmp(scatter_colour_name(-1), "light grey"));
}

int main(void)
{
    test_svd_values();
    test_eigen_and_covariance();
    test_components_for();
    test_scatter();
    printf("test_svd_pca: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
