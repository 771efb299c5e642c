/* test_life.c - host-only tests of ch04_matmul/life.c's CPU reference and its bit packing:
 * a blinker has period 2, a block never changes, a glider crosses an 8x8 torus and is back
 * after 32 generations, and pack/unpack round-trip at widths that are not multiples of 32.
 * Needs no GPU. */
#define main life_main /* take the program's functions, not its main */
#include "../ch04_matmul/life.c"
#undef main
#include "unit.h"

static void run(uint8_t *board, int W, int H, int gens)
{
    uint8_t *tmp = malloc((size_t)W * H);
    for (int g = 0; g < gens; g++) {
        life_step_cpu(board, tmp, W, H);
        memcpy(board, tmp, (size_t)W * H);
    }
    free(tmp);
}

int main(void)
{
    /* blinker on 5x5: horizontal -> vertical -> horizontal */
    uint8_t b[25] = {0}, start[25];
    b[2 * 5 + 1] = b[2 * 5 + 2] = b[2 * 5 + 3] = 1;
    memcpy(start, b, sizeof b);
    run(b, 5, 5, 1);
    CHECK(b[1 * 5 + 2] && b[2 * 5 + 2] && b[3 * 5 + 2] && !b[2 * 5 + 1] && !b[2 * 5 + 3]);
    run(b, 5, 5, 1);
    CHECK(memcmp(b, start, sizeof b) == 0);

    /* a block across the torus corner stays: cells (0,0) (7,0) (0,7) (7,7) on 8x8 */
    uint8_t blk[64] = {0}, blk0[64];
    blk[0] = blk[7] = blk[7 * 8] = blk[7 * 8 + 7] = 1;
    memcpy(blk0, blk, sizeof blk);
    run(blk, 8, 8, 5);
    CHECK(memcmp(blk, blk0, sizeof blk) == 0);

    /* glider: moves one cell diagonally every 4 generations, so on an 8x8 torus it is back
     * after 32; after 4 it is the same shape shifted by (1, 1) */
    uint8_t g[64] = {0}, g0[64], shifted[64] = {0};
    int gx[5] = {1, 2, 0, 1, 2}, gy[5] = {0, 1, 2, 2, 2};
    for (int i = 0; i < 5; i++) g[gy[i] * 8 + gx[i]] = 1, shifted[(gy[i] + 1) * 8 + gx[i] + 1] = 1;
    memcpy(g0, g, sizeof g);
    run(g, 8, 8, 4);
    CHECK(memcmp(g, shifted, sizeof g) == 0);
    run(g, 8, 8, 28);
    CHECK(memcmp(g, g0, sizeof g) == 0);

    /* 1x1 torus: the cell is its own 8 neighbours: alive -> 8 neighbours -> dies */
    uint8_t one = 1;
    run(&one, 1, 1, 1);
    CHECK(one == 0);

    /* pack/unpack round trip, and the unused bits of the last word stay 0 */
    int widths[] = {1, 5, 31, 32, 33, 64, 100};
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
        int W = widths[k], H = 3, nw = (W + 31) / 32;
        uint8_t cells[300], back[300];
        uint32_t words[4 * 3];
        lb_rng r;
        lb_rng_seed(&r, (unsigned long long)W);
        for (int i = 0; i < W * H; i++) cells[i] = lb_rng_next(&r) & 1;
        pack_board(cells, words, W, H);
        unpack_board(words, back, W, H);
        CHECK(memcmp(cells, back, (size_t)W * H) == 0);
        if (W % 32)
            for (int y = 0; y < H; y++) CHECK((words[y * nw + nw - 1] >> (W % 32)) == 0);
    }
    printf("test_life: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
