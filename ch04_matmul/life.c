/* life.c - Conway's Game of Life on a torus: CPU, global-memory, shared-tile and bit-packed.
 *
 *   The board is W x H cells (default 4096 x 4096), a random fraction --density alive at
 *   the start (seeded), run for --gens generations. Edges wrap around.
 *   build: make ch04      run: ./life [version] [--size 16384 | WxH] [--gens 100] [--frames K]
 *
 * versions: the table versions[] below (0 the CPU, 1-3 GPU kernels with a launch per
 * generation, 4-6 all generations in one launch, for small boards, 7-8 faster bit-packed
 * kernels with a launch per generation), listed by ./life --help;
 * the kernels are in life_kernels.cu. A version whose limit the board exceeds (4-6) is skipped
 * in the all-versions run and refused (exit 2, with the limit) when asked for.
 *
 * --boards B (the book's conway_gpu_streams): B boards of this size, each from its own seed,
 * advanced one after another on the default stream, then in B streams at once; every board is
 * checked against the CPU, and the speed-up of the streams printed.
 *
 * Every version's board after G generations must equal the CPU's, cell for cell. Speed is in
 * cell updates per second, and against the memory bound of versions 1-2: 2 bytes per cell
 * per generation (read the old board, write the new) at the device-to-device copy bandwidth
 * measured in the same run. The final board is written to life.png; --frames K writes every
 * K-th generation as life_frame_NNNNNN.png to flip through.
 */
#include "labbook.h"
#include "life_kernels.h"

#include <errno.h>
#include <omp.h>
#include <string.h>

#define MAX_SIDE 65536

/* ---------------------------------------------------------------- CPU reference */

static void life_step_cpu(const uint8_t *in, uint8_t *out, int W, int H)
{
#pragma omp parallel for schedule(static)
    for (int y = 0; y < H; y++) {
        const uint8_t *up = in + (size_t)(y == 0 ? H - 1 : y - 1) * W, *mid = in + (size_t)y * W;
        const uint8_t *down = in + (size_t)(y == H - 1 ? 0 : y + 1) * W;
        for (int x = 0; x < W; x++) {
            int xl = x == 0 ? W - 1 : x - 1, xr = x == W - 1 ? 0 : x + 1;
            int n = up[xl] + up[x] + up[xr] + mid[xl] + mid[xr] + down[xl] + down[x] + down[xr];
            out[(size_t)y * W + x] = (uint8_t)(n == 3 || (n == 2 && mid[x]));
        }
    }
}

/* bytes <-> bits, in the layout life_kernels.h describes */
static void pack_board(const uint8_t *cells, uint32_t *words, int W, int H)
{
    int nw = (W + 31) / 32;
    memset(words, 0, sizeof(uint32_t) * (size_t)nw * H);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            if (cells[(size_t)y * W + x]) words[(size_t)y * nw + x / 32] |= 1u << (x % 32);
}

static void unpack_board(const uint32_t *words, uint8_t *cells, int W, int H)
{
    int nw = (W + 31) / 32;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) cells[(size_t)y * W + x] = (words[(size_t)y * nw + x / 32] >> (x % 32)) & 1u;
}

/* ---------------------------------------------------------------- running G generations */

typedef struct {
    int version, w, h, gens;
    int from_start;      /* copy the start board in first (verification); timing skips it */
    void *d_a, *d_b;     /* ping-pong boards: bytes (1, 2) or words (3) */
    const void *d_start; /* the initial board, same layout */
    size_t board_bytes;
} life_job;

/* Run G generations from d_a (after copying the start board there when from_start); the
 * result is in d_a when G is even, else in d_b. */
static cudaError_t run_generations(void *ctx)
{
    life_job *j = (life_job *)ctx;
    cudaError_t e = cudaSuccess;
    if (j->from_start) e = cudaMemcpyAsync(j->d_a, j->d_start, j->board_bytes, cudaMemcpyDeviceToDevice, 0);
    if (e == cudaSuccess && j->version >= LIFE_ONE_LAUNCH && j->version <= LIFE_ONE_LAUNCH_LAST)
        return life_launch_gens(j->version, j->d_a, j->d_b, j->w, j->h, j->gens);
    void *in = j->d_a, *out = j->d_b;
    for (int g = 0; g < j->gens && e == cudaSuccess; g++) {
        e = life_launch(j->version, in, out, j->w, j->h);
        void *t = in;
        in = out;
        out = t;
    }
    return e;
}

static const void *result_of(const life_job *j) { return j->gens % 2 ? j->d_b : j->d_a; }

static void write_board_png(const char *path, const uint8_t *cells, int W, int H)
{
    unsigned char *grey = lb_host_alloc((size_t)W * H, "the picture");
    for (size_t i = 0; i < (size_t)W * H; i++) grey[i] = cells[i] ? 255 : 0;
    if (lb_write_png(path, W, H, 1, grey, NULL))
        lb_die(LB_EXIT_USAGE, "life: cannot write %s: %s", path, strerror(errno));
    free(grey);
}

/* ---------------------------------------------------------------- main */

static int gens = 100, frames = 0, no_png = 0, boards = 0;
static double density = 0.25;
static const char *png_path = "life.png";
static const lb_opt options[] = {
    {"--gens", LB_OPT_INT, &gens, "generations to run"},
    {"--density", LB_OPT_DOUBLE, &density, "fraction of cells alive at the start"},
    {"--frames", LB_OPT_INT, &frames, "also write every K-th generation as life_frame_NNNNNN.png (0: none)"},
    {"--png", LB_OPT_STRING, &png_path, "the final board's picture"},
    {"--no-png", LB_OPT_FLAG, &no_png, "don't write the final board"},
    {"--boards", LB_OPT_INT, &boards, "B boards, serial vs a stream each (version 1 or 2; 0: off)"},
};
/* Every version: number, RESULT name, title, oldest GPU, what runs it (G generations on the
 * job's boards). Version 0 is the CPU, run once in main as the reference. To add a version:
 * the kernel and its case in life_launch, LIFE_VERSIONS in life_kernels.h, and a row here. */
static const lb_version versions[] = {
    {0, "cpu_omp", "CPU, OpenMP (every core)", LB_OLDEST_SM, NULL},
    {1, "global", "global memory", LB_OLDEST_SM, run_generations},
    {2, "shared_halo", "shared tiles + halo", LB_OLDEST_SM, run_generations},
    {3, "bitpacked", "bit-packed, 32 per word", LB_OLDEST_SM, run_generations},
    {4, "one_block", "one launch: one block, global", LB_OLDEST_SM, run_generations},
    {5, "one_block_smem", "one launch: one block, shared", LB_OLDEST_SM, run_generations},
    {6, "grid_sync", "one launch: cooperative grid sync", LB_OLDEST_SM, run_generations},
    {7, "prefetched", "bit-packed, every load first", LB_OLDEST_SM, run_generations},
    {8, "bitpacked64", "bit-packed, 64 per word", LB_OLDEST_SM, run_generations},
};
_Static_assert(sizeof versions / sizeof versions[0] == LIFE_VERSIONS,
               "one row in versions[] per version: LIFE_VERSIONS in life_kernels.h");

static const lb_program program = {
    .name = "life",
    .synopsis = "Conway's Game of Life on a torus: CPU, global memory, shared tiles, bit-packed, one launch",
    .details = "--size is N (N x N cells) or WxH. Speed is against the memory bound of versions 1-2: 2 bytes\n"
               "per cell per generation at the device-to-device copy bandwidth measured in the same run.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = sizeof options / sizeof options[0],
    .versions = versions,
    .n_versions = LIFE_VERSIONS,
};

/* The board after the run, cell for cell against the CPU's. */
static lb_check compare_boards(const char *name, const uint8_t *got, const uint8_t *ref, int W, size_t cells, int quiet)
{
    lb_check c = {0, 0.0, 0.0};
    for (size_t i = 0; i < cells; i++)
        if (got[i] != ref[i]) {
            if (!quiet && c.n_bad < 5)
                fprintf(stderr, "  %s mismatch at (x=%zu, y=%zu): got %d, want %d\n", name, i % (size_t)W,
                        i / (size_t)W, got[i], ref[i]);
            c.n_bad++;
            c.max_abs_err = 1;
        }
    if (c.n_bad && !quiet) fprintf(stderr, "  %s: %zu of %zu cells wrong\n", name, c.n_bad, cells);
    return c;
}

/* Versions 4-6 take boards up to a limit of this GPU: NULL when the board fits, else the reason. */
static const char *board_too_big(int version, size_t cells, char *why, size_t len)
{
    long long limit = life_max_cells(version);
    if (limit == 0 || (limit > 0 && (long long)cells <= limit)) return NULL;
    if (limit < 0)
        snprintf(why, len, "this GPU cannot launch cooperative kernels (or its limits could not be read)");
    else
        snprintf(why, len, "the board has %zu cells, this version takes at most %lld here (%s)", cells, limit,
                 version == 4   ? "one block, 1024 threads: beyond that it crawls"
                 : version == 5 ? "both boards in one block's shared memory"
                                : "one cell per thread, every block resident at once");
    return why;
}

/* ---------------------------------------------------------------- --boards: one board per stream */

typedef struct {
    int version, w, h, gens, n_boards, use_streams;
    uint8_t **d_a, **d_b;
    cudaStream_t *streams;
} boards_job;

/* G generations of every board: one board after the other on the default stream, or, with
 * streams, generation by generation across the boards, board b in stream b, so that every
 * stream always has its next kernel queued. */
static cudaError_t run_boards_once(void *ctx)
{
    boards_job *j = (boards_job *)ctx;
    cudaError_t e = cudaSuccess;
    if (!j->use_streams) {
        for (int b = 0; b < j->n_boards && !e; b++)
            for (int g = 0; g < j->gens && !e; g++)
                e = life_launch_stream(j->version, g % 2 ? j->d_b[b] : j->d_a[b], g % 2 ? j->d_a[b] : j->d_b[b], j->w,
                                       j->h, 0);
    } else {
        for (int g = 0; g < j->gens && !e; g++)
            for (int b = 0; b < j->n_boards && !e; b++)
                e = life_launch_stream(j->version, g % 2 ? j->d_b[b] : j->d_a[b], g % 2 ? j->d_a[b] : j->d_b[b], j->w,
                                       j->h, j->streams[b]);
    }
    return e;
}

/* --boards: B boards, serial vs streams, each board checked; returns the exit code. */
static int run_boards(int n_boards, int version, int W, int H, const lb_args *args, const lb_gpu *gpu)
{
    size_t cells = (size_t)W * H;
    lb_require_device_memory(3 * cells * (size_t)n_boards, "the boards");
    if (!args->quiet)
        printf("life --boards: %d boards of %dx%d, %d generations, version %d, serial vs %d streams, %s (%s)\n",
               n_boards, W, H, gens, version, n_boards, gpu->prop.name, gpu->sm);
    uint8_t **ref = lb_host_alloc(sizeof(uint8_t *) * (size_t)n_boards, "the boards");
    uint8_t *start = lb_host_alloc(cells, "a board"), *tmp = lb_host_alloc(cells, "a board");
    uint8_t *got = lb_host_alloc(cells, "a board");
    boards_job j = {version, W, H, gens, n_boards, 0, NULL, NULL, NULL};
    j.d_a = lb_host_alloc(sizeof(uint8_t *) * (size_t)n_boards, "the boards");
    j.d_b = lb_host_alloc(sizeof(uint8_t *) * (size_t)n_boards, "the boards");
    uint8_t **d_start = lb_host_alloc(sizeof(uint8_t *) * (size_t)n_boards, "the boards");
    j.streams = lb_host_alloc(sizeof(cudaStream_t) * (size_t)n_boards, "the streams");
    uint64_t threshold = (uint64_t)(density * 18446744073709551615.0);
    for (int b = 0; b < n_boards; b++) {
        lb_rng rng;
        lb_rng_seed(&rng, args->seed + (unsigned long long)b); /* a different board each */
        for (size_t i = 0; i < cells; i++) start[i] = density >= 1.0 || lb_rng_next(&rng) < threshold;
        CUDA_CHECK(cudaMalloc((void **)&d_start[b], cells));
        CUDA_CHECK(cudaMalloc((void **)&j.d_a[b], cells));
        CUDA_CHECK(cudaMalloc((void **)&j.d_b[b], cells));
        CUDA_CHECK(cudaMemcpy(d_start[b], start, cells, cudaMemcpyHostToDevice));
        /* blocking streams: the default stream's events in lb_time_ms wait for their work */
        CUDA_CHECK(cudaStreamCreate(&j.streams[b]));
        ref[b] = lb_host_alloc(cells, "a CPU board");
        memcpy(ref[b], start, cells);
        for (int g = 0; g < gens; g++) {
            life_step_cpu(ref[b], tmp, W, H);
            memcpy(ref[b], tmp, cells);
        }
    }
    double ms[2] = {0, 0};
    size_t bad = 0;
    for (int s = 0; s < 2; s++) {
        j.use_streams = s;
        for (int b = 0; b < n_boards; b++) {
            lb_poison_device(j.d_b[b], cells);
            CUDA_CHECK(cudaMemcpy(j.d_a[b], d_start[b], cells, cudaMemcpyDeviceToDevice));
        }
        CUDA_CHECK(run_boards_once(&j));
        CUDA_CHECK(cudaDeviceSynchronize());
        for (int b = 0; b < n_boards; b++) {
            CUDA_CHECK(cudaMemcpy(got, gens % 2 ? j.d_b[b] : j.d_a[b], cells, cudaMemcpyDeviceToHost));
            char name[48];
            snprintf(name, sizeof name, "%s, board %d", s ? "streams" : "serial", b);
            bad += compare_boards(name, got, ref[b], W, cells, args->quiet).n_bad;
        }
        if (!args->check_only) ms[s] = lb_time_ms(run_boards_once, &j, 1, args->iters);
    }
    char size[48];
    snprintf(size, sizeof size, "%dx%dx%d", n_boards, W, H);
    double updates = (double)cells * gens * n_boards;
    if (!args->check_only) {
        const char *label[2] = {"one after another, default stream", "a stream per board"};
        const char *name[2] = {"boards_serial", "boards_streams"};
        if (!args->quiet) printf(" schedule                               ms    Gcells/s  vs serial\n");
        for (int s = 0; s < 2; s++) {
            if (!args->quiet)
                printf(" %-34s %9.3f %10.2f %9.2f\n", label[s], ms[s], updates / (ms[s] * 1e6), ms[0] / ms[s]);
            lb_result r = {"life",   version,       name[s], size, ms[s], "gcells_s", updates / (ms[s] * 1e6),
                           "serial", ms[0] / ms[s], bad == 0};
            lb_print_result(&r, args->quiet);
        }
    }
    if (!args->quiet)
        printf("every board after %d generations against the CPU: %s\n", gens, bad ? "FAIL" : "PASS");
    else if (args->check_only)
        printf("life: --boards %d, %dx%d, %s\n", n_boards, W, H, bad ? "FAIL" : "PASS");
    else
        printf("life: --boards %d, %dx%d, streams %.2fx serial, %s\n", n_boards, W, H, ms[0] / ms[1],
               bad ? "FAIL" : "PASS");
    for (int b = 0; b < n_boards; b++) {
        CUDA_CHECK(cudaFree(d_start[b]));
        CUDA_CHECK(cudaFree(j.d_a[b]));
        CUDA_CHECK(cudaFree(j.d_b[b]));
        CUDA_CHECK(cudaStreamDestroy(j.streams[b]));
        free(ref[b]);
    }
    free(ref), free(start), free(tmp), free(got), free(j.d_a), free(j.d_b), free(d_start), free(j.streams);
    return bad ? LB_EXIT_FAIL : LB_EXIT_PASS;
}

int main(int argc, char **argv)
{
    lb_args args = {.size = {{4096}, 1}, .max_size_dims = 2, .iters = 5, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    if (!no_png && !png_path[0]) lb_usage_error(&program, "--png needs a file name (--no-png writes none)");
    if (!no_png) lb_check_output_path(&program, "--png", png_path);
    long long w_ll = args.size.v[0], h_ll = args.size.n > 1 ? args.size.v[1] : w_ll;
    if (w_ll > MAX_SIDE || h_ll > MAX_SIDE) lb_usage_error(&program, "--size: at most %dx%d cells", MAX_SIDE, MAX_SIDE);
    if (gens < 1) lb_usage_error(&program, "--gens must be positive");
    if (frames < 0) lb_usage_error(&program, "--frames must be 0 or positive");
    if (!(density >= 0.0 && density <= 1.0)) lb_usage_error(&program, "--density must be between 0 and 1");
    if (boards < 0 || boards > 1024) lb_usage_error(&program, "--boards must be 0..1024");
    if (boards && args.version != -1 && args.version != 1 && args.version != 2)
        lb_usage_error(&program, "--boards runs version 1 or 2 (byte boards), not %d", args.version);
    int W = (int)w_ll, H = (int)h_ll, nw = (W + 31) / 32;
    size_t cells = (size_t)W * H, byte_board = cells, word_board = sizeof(uint32_t) * (size_t)nw * H;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    if (boards) return run_boards(boards, args.version == 2 ? 2 : 1, W, H, &args, &gpu);
    lb_require_device_memory(3 * byte_board + 3 * word_board + (args.check_only ? 0 : 2 * byte_board), "the boards");
    if (!args.quiet)
        printf("life: %dx%d torus, %d generations, %.0f%% alive at start, %s (%s), seed %llu, %d CPU threads\n", W, H,
               gens, 100 * density, gpu.prop.name, gpu.sm, args.seed, omp_get_max_threads());

    /* the start board and the CPU's board after G generations */
    uint8_t *start = lb_host_alloc(byte_board, "the board"), *ref = lb_host_alloc(byte_board, "the CPU board");
    uint8_t *tmp = lb_host_alloc(byte_board, "the CPU board"), *got = lb_host_alloc(byte_board, "the GPU board");
    uint32_t *words = lb_host_alloc(word_board, "the packed board");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    uint64_t threshold = (uint64_t)(density * 18446744073709551615.0);
    for (size_t i = 0; i < cells; i++) start[i] = density >= 1.0 || lb_rng_next(&rng) < threshold;
    memcpy(ref, start, byte_board);
    double t0 = lb_wall_ms();
    for (int g = 0; g < gens; g++) {
        life_step_cpu(ref, tmp, W, H);
        uint8_t *t = ref;
        ref = tmp;
        tmp = t;
    }
    double cpu_ms = lb_wall_ms() - t0;
    size_t alive = 0;
    for (size_t i = 0; i < cells; i++) alive += ref[i];

    /* device boards: bytes for versions 1-2, words for 3 */
    uint8_t *d_start8, *d_a8, *d_b8;
    uint32_t *d_start32, *d_a32, *d_b32;
    CUDA_CHECK(cudaMalloc((void **)&d_start8, byte_board));
    CUDA_CHECK(cudaMalloc((void **)&d_a8, byte_board));
    CUDA_CHECK(cudaMalloc((void **)&d_b8, byte_board));
    CUDA_CHECK(cudaMalloc((void **)&d_start32, word_board));
    CUDA_CHECK(cudaMalloc((void **)&d_a32, word_board));
    CUDA_CHECK(cudaMalloc((void **)&d_b32, word_board));
    CUDA_CHECK(cudaMemcpy(d_start8, start, byte_board, cudaMemcpyHostToDevice));
    pack_board(start, words, W, H);
    CUDA_CHECK(cudaMemcpy(d_start32, words, word_board, cudaMemcpyHostToDevice));

    /* the report: rates against the memory bound of versions 1-2, measured first */
    char sz[32];
    snprintf(sz, sizeof sz, "%dx%d", W, H);
    double updates = (double)cells * gens;
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "gcells_s",
                     .unit_head = "Gcells/s",
                     .base = "membound_2B",
                     .base_head = "vs 2B/cell"};
    lb_report_table(&rep, sz, NULL);
    double bound_gcells = 0.0;
    if (!args.check_only) {
        bound_gcells = lb_memcpy_ceiling_gbps(2 * byte_board, args.iters, NULL) / 2.0;
        rep.base_value = bound_gcells;
    }
    if (!args.quiet)
        printf("alive after %d generations: %zu of %zu cells; ms are per generation\n", gens, alive, cells);
    if (!args.check_only && lb_version_wanted(&program, &args, &gpu, 0))
        lb_report_row(&rep, 0, NULL, cpu_ms / gens, updates / (cpu_ms * 1e6), -1, "reference");

    for (int v = 1; v < LIFE_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        char too_big[200];
        if (board_too_big(v, cells, too_big, sizeof too_big)) {
            if (args.version == v) lb_die(LB_EXIT_USAGE, "life: version %d: %s", v, too_big);
            if (!args.quiet) printf(" %3d  %-30s skipped: %s\n", v, versions[v].title, too_big);
            continue;
        }
        int packed = v == 3 || v >= 7; /* 3, 7 and 8 work on 32 cells per word, the others on bytes */
        life_job job = {v,
                        W,
                        H,
                        gens,
                        1,
                        packed ? (void *)d_a32 : (void *)d_a8,
                        packed ? (void *)d_b32 : (void *)d_b8,
                        packed ? (const void *)d_start32 : (const void *)d_start8,
                        packed ? word_board : byte_board};
        lb_poison_device(job.d_a, job.board_bytes); /* 0xFF cells: neither 0 nor 1, and fail */
        lb_poison_device(job.d_b, job.board_bytes);
        CUDA_CHECK(versions[v].run(&job));
        size_t stray = 0;
        if (packed) {
            CUDA_CHECK(cudaMemcpy(words, result_of(&job), word_board, cudaMemcpyDeviceToHost));
            unpack_board(words, got, W, H);
            /* the unused bits of each row's last word must have stayed 0 */
            if (W % 32)
                for (int y = 0; y < H; y++) stray += (words[(size_t)y * nw + nw - 1] >> (W % 32)) != 0;
            if (stray && !args.quiet)
                fprintf(stderr, "  bitpacked: %zu rows have bits set past the board's width\n", stray);
        } else {
            CUDA_CHECK(cudaMemcpy(got, result_of(&job), byte_board, cudaMemcpyDeviceToHost));
        }
        lb_check c = compare_boards(versions[v].name, got, ref, W, cells, args.quiet);
        c.n_bad += stray;
        double ms = 0.0;
        job.from_start = 0; /* time the generations alone, continuing from the current board */
        if (!args.check_only) ms = lb_time_ms(versions[v].run, &job, 1, args.iters);
        char verdict[96];
        lb_report_row(&rep, v, NULL, ms / gens, ms > 0 ? updates / (ms * 1e6) : 0.0, c.n_bad == 0,
                      lb_check_summary(&c, verdict, sizeof verdict));
    }
    if (!args.quiet && !args.check_only)
        printf("memory bound for versions 1-2: 2 bytes per cell per generation at %.0f GB/s (D2D memcpy, this run) "
               "= %.1f G cells/s\n",
               2 * bound_gcells, bound_gcells);

    /* pictures: the final board, and with --frames every K-th generation (CPU, from the start) */
    if (!no_png) write_board_png(png_path, ref, W, H);
    if (frames > 0) {
        uint8_t *a = tmp, *b = got;
        memcpy(a, start, byte_board);
        char name[64];
        for (int g = 0; g <= gens; g++) {
            if (g % frames == 0) {
                snprintf(name, sizeof name, "life_frame_%06d.png", g);
                write_board_png(name, a, W, H);
            }
            if (g < gens) {
                life_step_cpu(a, b, W, H);
                uint8_t *t = a;
                a = b;
                b = t;
            }
        }
        if (!args.quiet) printf("wrote life_frame_*.png every %d generations\n", frames);
    }
    if (!args.quiet && !no_png) printf("wrote %s\n", png_path);
    CUDA_CHECK(cudaFree(d_start8));
    CUDA_CHECK(cudaFree(d_a8));
    CUDA_CHECK(cudaFree(d_b8));
    CUDA_CHECK(cudaFree(d_start32));
    CUDA_CHECK(cudaFree(d_a32));
    CUDA_CHECK(cudaFree(d_b32));
    free(start);
    free(ref);
    free(tmp);
    free(got);
    free(words);
    return lb_report_finish(&rep);
}
