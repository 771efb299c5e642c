/* test_ptx.c - host-only tests of the C references in ch10_advanced/ptx.c, on inputs whose
 * answers are known by hand: they are what the inline PTX is checked against on the GPU. */
#define main ptx_main
#include "ptx.c"
#undef main
#include "unit.h"

int main(void)
{
    uint64_t lo, hi;
    add128_cpu(~0ull, 0, 1, 0, &lo, &hi); /* the carry moves into the high half */
    CHECK(lo == 0 && hi == 1);
    add128_cpu(~0ull, ~0ull, 1, 0, &lo, &hi); /* 2^128 - 1 + 1 wraps to 0 */
    CHECK(lo == 0 && hi == 0);
    add128_cpu(5, 7, 10, 20, &lo, &hi);
    CHECK(lo == 15 && hi == 27);

    CHECK(bfe_cpu(0xF0u, 4, 4) == 0xFu);
    CHECK(bfe_cpu(0x12345678u, 0, 32) == 0x12345678u);
    CHECK(bfe_cpu(0x12345678u, 28, 8) == 0x1u);       /* the field stops at bit 31 */
    CHECK(bfe_cpu(0x12345678u, 32, 4) == 0u);         /* past the word: nothing */
    CHECK(bfe_cpu(0x12345678u, 8, 0) == 0u);          /* no length: nothing */
    CHECK(bfe_cpu(0x12345678u, 256 + 8, 8) == 0x56u); /* positions are taken modulo 256 */

    CHECK(prmt_cpu(0x33221100u, 0x77665544u, 0x3210) == 0x33221100u); /* a itself */
    CHECK(prmt_cpu(0x33221100u, 0x77665544u, 0x7654) == 0x77665544u); /* b itself */
    CHECK(prmt_cpu(0x33221100u, 0x77665544u, 0x0123) == 0x00112233u); /* a's bytes reversed */
    CHECK(prmt_cpu(0x00000080u, 0, 0x0000) == 0x80808080u);           /* byte 0 everywhere */
    CHECK(prmt_cpu(0x00000080u, 0, 0x8888) == 0xFFFFFFFFu);           /* its sign, everywhere */
    CHECK(prmt_cpu(0x0000007Fu, 0, 0x8888) == 0u);

    CHECK(majority_cpu(0xF0u, 0xCCu, 0xAAu) == 0xE8u); /* the lop3 immediate is this truth table */
    CHECK(majority_cpu(~0u, ~0u, 0) == ~0u && majority_cpu(~0u, 0, 0) == 0);

    printf("test_ptx: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
