/* test_mandelbrot.c - host-only tests of ch03_vecadd/mandelbrot.c's CPU reference: escape
 * counts worked out by hand, the symmetry of the set about the real axis, and the OpenMP
 * image equal to the single-thread one. Needs no GPU. */
#define main mandelbrot_main /* take the program's functions, not its main */
#include "../ch03_vecadd/mandelbrot.c"
#undef main

#include "unit.h"

int main(void)
{
    /* z: 0 -> c = 1+i (|z|^2 = 2) -> (1+i)^2 + 1+i = 1+3i (|z|^2 = 10 > 4): 2 steps */
    CHECK(escape_count_cpu(1.0f, 1.0f, 256) == 2);
    /* c = 2.5: z = 2.5 after one step, |z|^2 = 6.25 > 4 */
    CHECK(escape_count_cpu(2.5f, 0.0f, 256) == 1);
    /* 0, -1 (period 2) and -2 (z = -2, 2, 2, ...) never escape */
    CHECK(escape_count_cpu(0.0f, 0.0f, 256) == 256);
    CHECK(escape_count_cpu(-1.0f, 0.0f, 1000) == 1000);
    CHECK(escape_count_cpu(-2.0f, 0.0f, 300) == 300);
    /* c = i: 0, i, -1+i, -i, -1+i, ... periodic: stays */
    CHECK(escape_count_cpu(0.0f, 1.0f, 500) == 500);
    /* the limit is respected */
    CHECK(escape_count_cpu(0.0f, 0.0f, 1) == 1);

    /* 64x64 over [-2,2]^2: dy = 1/16, so row y and row 63-y have exactly opposite ci and the
     * conjugate orbit gives equal counts; the OpenMP image equals the one-thread image. */
    mandel_view v = {64, 64, 200, -2.0f, 4.0f / 64, 2.0f, 4.0f / 64};
    int one[64 * 64], many[64 * 64];
    mandelbrot_cpu(&v, one, 1);
    mandelbrot_cpu(&v, many, 4);
    CHECK(memcmp(one, many, sizeof one) == 0);
    int symmetric = 1, inside = 0, outside_fast = 0;
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++) {
            symmetric &= one[y * 64 + x] == one[(63 - y) * 64 + x];
            inside += one[y * 64 + x] == 200;
            outside_fast += one[y * 64 + x] <= 2;
        }
    CHECK(symmetric);
    /* the set's area is about 1.506 of the window's 16: roughly 9% of pixels inside */
    CHECK(inside > 64 * 64 * 6 / 100 && inside < 64 * 64 * 13 / 100);
    CHECK(outside_fast > 64 * 64 / 3); /* the corners escape at once */
    printf("test_mandelbrot: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
