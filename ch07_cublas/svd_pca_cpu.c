/* svd_pca_cpu.c - svd_pca's references, variance counts and scatter picture (see svd_pca_cpu.h).
 * Host-only C. */
#include "svd_pca_cpu.h"

#include <math.h>
#include <string.h>

#define JACOBI_MAX_SWEEPS 60

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* One-sided Jacobi (Hestenes). Work on the columns of W, the matrix with more rows than
 * columns (A itself, or A^T when A is wide): rotating columns i and j by the angle that makes
 * them orthogonal keeps W's singular values (a rotation is orthogonal). When every pair is
 * orthogonal, W = U Sigma V^T has been reached with U Sigma's columns in W: their norms are the
 * singular values. */
int svd_values_cpu(const float *a, int M, int N, double *s)
{
    int tall = M >= N, p = tall ? M : N, q = tall ? N : M; /* W is p x q, p >= q */
    double *w = lb_host_alloc(sizeof(double) * (size_t)p * q, "the Jacobi reference's copy");
    /* column c of W stored contiguously: w[c*p .. c*p+p) */
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            double v = a[(size_t)r * N + c];
            if (tall)
                w[(size_t)c * p + r] = v;
            else
                w[(size_t)r * p + c] = v;
        }
    int sweeps = 0, converged = 0;
    while (!converged && sweeps < JACOBI_MAX_SWEEPS) {
        converged = 1;
        sweeps++;
        for (int i = 0; i < q - 1; i++)
            for (int j = i + 1; j < q; j++) {
                double *wi = w + (size_t)i * p, *wj = w + (size_t)j * p, alpha = 0, beta = 0, gamma = 0;
                for (int k = 0; k < p; k++) {
                    alpha += wi[k] * wi[k];
                    beta += wj[k] * wj[k];
                    gamma += wi[k] * wj[k];
                }
                /* orthogonal to working precision already: no rotation */
                if (fabs(gamma) <= 1e-15 * sqrt(alpha * beta)) continue;
                converged = 0;
                /* the angle that zeroes the (i,j) entry of W^T W (as in Jacobi's eigen method) */
                double zeta = (beta - alpha) / (2.0 * gamma);
                double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                double c = 1.0 / sqrt(1.0 + t * t), sn = c * t;
                for (int k = 0; k < p; k++) {
                    double x = wi[k], y = wj[k];
                    wi[k] = c * x - sn * y;
                    wj[k] = sn * x + c * y;
                }
            }
    }
    for (int c = 0; c < q; c++) {
        double norm2 = 0;
        for (int k = 0; k < p; k++) norm2 += w[(size_t)c * p + k] * w[(size_t)c * p + k];
        s[c] = sqrt(norm2);
    }
    free(w);
    qsort(s, (size_t)q, sizeof *s, cmp_desc);
    return converged ? sweeps : -1;
}

/* Cyclic Jacobi: each rotation zeroes one off-diagonal pair (p, q) of g; sweeping over all
 * pairs until the off-diagonal part is negligible leaves the eigenvalues on the diagonal. */
int sym_eigenvalues_cpu(double *g, int n, double *w)
{
    int sweeps = 0;
    for (; sweeps < JACOBI_MAX_SWEEPS; sweeps++) {
        double off = 0, diag = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                if (i != j)
                    off += g[(size_t)i * n + j] * g[(size_t)i * n + j];
                else
                    diag += g[(size_t)i * n + j] * g[(size_t)i * n + j];
            }
        if (off <= 1e-30 * diag || off == 0) break;
        for (int p = 0; p < n - 1; p++)
            for (int q = p + 1; q < n; q++) {
                double gpq = g[(size_t)p * n + q];
                if (gpq == 0) continue;
                double theta = (g[(size_t)q * n + q] - g[(size_t)p * n + p]) / (2.0 * gpq);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(1.0 + theta * theta));
                double c = 1.0 / sqrt(1.0 + t * t), s = c * t;
                /* g = J^T g J with J the rotation in the (p, q) plane: rows, then columns */
                for (int k = 0; k < n; k++) {
                    double x = g[(size_t)p * n + k], y = g[(size_t)q * n + k];
                    g[(size_t)p * n + k] = c * x - s * y;
                    g[(size_t)q * n + k] = s * x + c * y;
                }
                for (int k = 0; k < n; k++) {
                    double x = g[(size_t)k * n + p], y = g[(size_t)k * n + q];
                    g[(size_t)k * n + p] = c * x - s * y;
                    g[(size_t)k * n + q] = s * x + c * y;
                }
            }
    }
    for (int i = 0; i < n; i++) w[i] = g[(size_t)i * n + i];
    qsort(w, (size_t)n, sizeof *w, cmp_desc);
    return sweeps < JACOBI_MAX_SWEEPS ? sweeps : -1;
}

void covariance_cpu(const float *x, int n, int f, double *mean, double *cov)
{
    for (int j = 0; j < f; j++) {
        double s = 0;
        for (int i = 0; i < n; i++) s += x[(size_t)i * f + j];
        mean[j] = s / n;
    }
    memset(cov, 0, sizeof(double) * (size_t)f * f);
    for (int i = 0; i < n; i++)
        for (int a = 0; a < f; a++) {
            double da = x[(size_t)i * f + a] - mean[a];
            for (int b = 0; b <= a; b++) cov[(size_t)a * f + b] += da * (x[(size_t)i * f + b] - mean[b]);
        }
    /* n = 1: no spread to estimate; the covariance stays 0 rather than dividing by 0 */
    double scale = n > 1 ? 1.0 / (n - 1) : 0.0;
    for (int a = 0; a < f; a++)
        for (int b = 0; b <= a; b++) cov[(size_t)b * f + a] = cov[(size_t)a * f + b] *= scale;
}

int components_for(const double *var, int k, double total, double frac)
{
    double kept = 0;
    for (int c = 0; c < k; c++) {
        kept += var[c];
        /* a hair below frac counts: the shares are sums of rounded numbers */
        if (kept >= frac * total * (1.0 - 1e-12)) return c + 1;
    }
    return k;
}

/* ---------------------------------------------------------------- the scatter picture */

#define PLOT_SIZE 480
#define PLOT_MARGIN 24
enum { PAL_WHITE, PAL_AXIS, PAL_UNLABELLED, PAL_CLASS0 };
#define PLOT_CLASSES 10 /* distinct colours; class c is drawn in colour c mod 10 */

static const unsigned char class_rgb[PLOT_CLASSES][3] = {
    {31, 119, 180}, {255, 127, 14},  {44, 160, 44}, {214, 39, 40},  {148, 103, 189},
    {140, 86, 75},  {227, 119, 194}, {90, 90, 90},  {188, 189, 34}, {23, 190, 207}};
static const char *class_colour_names[PLOT_CLASSES] = {"blue",  "orange", "green",     "red",   "purple",
                                                       "brown", "pink",   "dark grey", "olive", "cyan"};

const char *scatter_colour_name(int c) { return c < 0 ? "light grey" : class_colour_names[c % PLOT_CLASSES]; }

static void fill_square(unsigned char *img, int cx, int cy, int half, unsigned char colour)
{
    for (int y = cy - half; y <= cy + half; y++)
        for (int x = cx - half; x <= cx + half; x++)
            if (x >= 0 && y >= 0 && x < PLOT_SIZE && y < PLOT_SIZE) img[(size_t)y * PLOT_SIZE + x] = colour;
}

/* data coordinate v in [lo, hi] -> pixel in [PLOT_MARGIN, PLOT_SIZE - PLOT_MARGIN] */
static int to_pixel(double v, double lo, double hi)
{
    double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    return PLOT_MARGIN + (int)lround(t * (PLOT_SIZE - 2 * PLOT_MARGIN - 1));
}

int write_scatter_png(const char *path, const float *px, const float *py, const int *label, int n)
{
    unsigned char palette[256 * 3] = {0}, *img = lb_host_alloc(PLOT_SIZE * PLOT_SIZE, "the scatter picture");
    memset(img, PAL_WHITE, PLOT_SIZE * PLOT_SIZE);
    memcpy(palette + 3 * PAL_WHITE, (unsigned char[3]){255, 255, 255}, 3);
    memcpy(palette + 3 * PAL_AXIS, (unsigned char[3]){200, 200, 200}, 3);
    memcpy(palette + 3 * PAL_UNLABELLED, (unsigned char[3]){170, 170, 170}, 3);
    for (int c = 0; c < PLOT_CLASSES; c++) memcpy(palette + 3 * (PAL_CLASS0 + c), class_rgb[c], 3);

    double xlo = 0, xhi = 0, ylo = 0, yhi = 0; /* the range includes 0, so the axes can show */
    int classes = 0;
    for (int i = 0; i < n; i++) {
        xlo = fmin(xlo, px[i]), xhi = fmax(xhi, px[i]);
        ylo = fmin(ylo, py[i]), yhi = fmax(yhi, py[i]);
        if (label[i] + 1 > classes) classes = label[i] + 1;
    }
    int x0 = to_pixel(0, xlo, xhi), y0 = PLOT_SIZE - 1 - to_pixel(0, ylo, yhi); /* y grows upwards */
    for (int t = 0; t < PLOT_SIZE; t++) {
        img[(size_t)y0 * PLOT_SIZE + t] = PAL_AXIS;
        img[(size_t)t * PLOT_SIZE + x0] = PAL_AXIS;
    }
    for (int i = 0; i < n; i++) {
        unsigned char colour = label[i] < 0 ? PAL_UNLABELLED : (unsigned char)(PAL_CLASS0 + label[i] % PLOT_CLASSES);
        fill_square(img, to_pixel(px[i], xlo, xhi), PLOT_SIZE - 1 - to_pixel(py[i], ylo, yhi), 1, colour);
    }
    /* the key: one square per class, left to right, in the top margin */
    for (int c = 0; c < classes && c < PLOT_CLASSES; c++)
        fill_square(img, PLOT_MARGIN + 14 * c, PLOT_MARGIN / 2, 4, (unsigned char)(PAL_CLASS0 + c));
    int rc = lb_write_png(path, PLOT_SIZE, PLOT_SIZE, 1, img, palette);
    free(img);
    return rc;
}
