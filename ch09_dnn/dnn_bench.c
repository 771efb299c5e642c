/* dnn_bench.c - ch09's benchmark mode (--synthetic F,H,...,C): random data of that shape, the
 * training step timed on both paths, as a CUDA graph and launched, beside the step's GEMMs alone;
 * the fused path's GEMMs one at a time. */
#define _POSIX_C_SOURCE 200809L
#include "dnn_train.h" /* first: dnn_net.h includes cuBLAS before labbook.h */
#include "dnn_bench.h"

#include <math.h>
#include <string.h>

typedef struct {
    network *net;
    int which, rows;       /* which: one GEMM of the step, or -1: all of them in order */
    cudaGraphExec_t graph; /* if set: replay this graph of all the GEMMs instead */
    cudaStream_t s;
} gemm_job;

/* GEMM number `which` of a training step: forward 0..L-1, then dW L-1..0, then dX L-1..1 */
static void one_gemm(network *net, int which, int rows)
{
    int L = net->n_layers;
    if (which < L)
        gemm_forward(net, which, rows);
    else if (which < 2 * L)
        gemm_weight_grad(net, 2 * L - 1 - which, rows);
    else
        gemm_input_grad(net, 3 * L - 1 - which, rows);
}

static cudaError_t run_gemms(void *ctx)
{
    gemm_job *j = (gemm_job *)ctx;
    if (j->graph) return cudaGraphLaunch(j->graph, j->s);
    int n_gemms = 3 * j->net->n_layers - 1;
    for (int w = 0; w < n_gemms; w++)
        if (j->which < 0 || j->which == w) one_gemm(j->net, w, j->rows);
    return cudaGetLastError();
}

/* all the step's GEMMs, captured as one graph: the baseline of the step's graph */
static cudaGraphExec_t capture_gemms(gemm_job *j)
{
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(j->s, cudaStreamCaptureModeThreadLocal));
    CUDA_CHECK(run_gemms(j));
    CUDA_CHECK(cudaStreamEndCapture(j->s, &g));
    CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    return exec;
}

/* The bytes the cuBLAS path's kernels other than the GEMMs must move in one step, each counted
 * once (what a perfect kernel reads and writes): the gather (the batch read, written), the
 * bias and activation (Z read, written), the loss layer (logits read, dZ written, dZ read
 * again for the bias sums), back through each activation (dA and A read, dZ written) and the
 * optimizer (SGD: w, g, v read, w, v written; Adam: m as well). */
static size_t step_bytes_outside_gemms(const network *net, int rows, int adam)
{
    int L = net->n_layers;
    size_t floats = (size_t)2 * rows * net->size[0] + (size_t)3 * rows * net->size[L];
    for (int l = 1; l < L; l++) floats += (size_t)2 * rows * net->size[l] + (size_t)3 * rows * net->size[l];
    floats += (adam ? 7 : 5) * net->n_params;
    return sizeof(float) * floats;
}

typedef struct {
    trainer *t;
    cudaGraphExec_t graph;
    int steps;
    cudaStream_t s;
} epoch_job;

/* `steps` training steps from the start of the permutation (graph or launches), on stream 0's
 * timeline: the events of lb_time_ms are on the legacy default stream, which waits for s */
static cudaError_t run_epoch(void *ctx)
{
    epoch_job *e = (epoch_job *)ctx;
    cudaError_t err = cudaMemsetAsync(&e->t->d_state->cursor, 0, sizeof(int), e->s);
    for (int k = 0; k < e->steps && !err; k++) {
        if (e->graph)
            err = cudaGraphLaunch(e->graph, e->s);
        else
            train_step(e->t, e->s);
    }
    return err ? err : cudaGetLastError();
}

/* one epoch from a zeroed loss sum: its mean loss per step */
static double epoch_loss(epoch_job *e)
{
    step_state st;
    CUDA_CHECK(cudaMemsetAsync(&e->t->d_state->loss_sum, 0, sizeof(float) + sizeof(int), e->s)); /* loss_sum, correct */
    CUDA_CHECK(run_epoch(e));
    CUDA_CHECK(cudaMemcpyAsync(&st, e->t->d_state, sizeof st, cudaMemcpyDeviceToHost, e->s));
    CUDA_CHECK(cudaStreamSynchronize(e->s));
    return st.loss_sum / e->steps;
}

/* One path's step on the synthetic data: timed as a graph (and launched, for the cuBLAS path),
 * and whether it learns (the mean loss of an epoch falls from the first timed epoch to the last:
 * the network memorizes its random labels; "finite" alone would pass a step that learns nothing). */
typedef struct {
    float graph_ms, launch_ms;
    double first_loss, last_loss;
    int learns;
} path_timing;

static void time_path(trainer *t, const int *perm, int n, int steps, int launched_too, const lb_args *args,
                      cudaStream_t s, path_timing *pt)
{
    CUDA_CHECK(cudaMemcpy(t->d_perm, perm, sizeof(int) * n, cudaMemcpyHostToDevice));
    epoch_job plain = {t, NULL, steps, s}, graphed = {t, capture_step(t, s), steps, s};
    pt->first_loss = epoch_loss(&graphed);
    pt->launch_ms = launched_too ? lb_time_ms(run_epoch, &plain, 1, args->iters) / steps : 0.0f;
    pt->graph_ms = lb_time_ms(run_epoch, &graphed, 1, args->iters) / steps;
    pt->last_loss = epoch_loss(&graphed);
    pt->learns = isfinite(pt->last_loss) && pt->last_loss < pt->first_loss;
    CUDA_CHECK(cudaGraphExecDestroy(graphed.graph));
}

typedef struct {
    network *net;
    const fused_gemm *p;
    cudaStream_t s;
} fused_job;

static cudaError_t run_fused_gemm(void *ctx)
{
    fused_job *j = (fused_job *)ctx;
    fused_gemm_run(j->net, j->p, j->s);
    return cudaGetLastError();
}

/* the fused path's GEMMs, each timed alone, with its plan (tile, and parts of K) */
static void print_fused_gemms(trainer *t, const lb_args *args, cudaStream_t s)
{
    fused_gemm list[3 * DNN_MAX_LAYERS];
    int n = fused_step_gemms(t, list, 3 * DNN_MAX_LAYERS);
    /* the first GEMM gathers the batch through the permutation at the cursor, which the last
     * epoch left at its end: back to the first batch, or it would read past the permutation */
    CUDA_CHECK(cudaMemsetAsync(&t->d_state->cursor, 0, sizeof(int), s));
    printf("the fused path's GEMMs, each timed alone (M x N x K, tile/parts of K: us):");
    for (int i = 0; i < n; i++) {
        fused_job j = {t->net, &list[i], s};
        fused_plan plan = fused_plan_for(list[i].M, list[i].N, list[i].K, t->net->sms);
        printf(" %dx%dx%d %d/%d: %.1f;", list[i].M, list[i].N, list[i].K, plan.tile_m, plan.splits,
               lb_time_ms(run_fused_gemm, &j, 1, args->iters) * 1e3);
    }
    printf("\n");
}

/* --synthetic: random data of the given shape; time a training step on both paths (the cuBLAS one
 * launched, and as one CUDA graph; the fused one as a graph) against the cuBLAS path's GEMMs
 * alone (launched, and as one graph); check that each learns */
int run_synthetic(const dnn_options *o, const lb_program *prog, const lb_args *args)
{
    network shape_net = {0};
    shape_net.act = strcmp(o->act, "sigmoid") == 0 ? ACT_SIGMOID : ACT_RELU;
    shape_net.n_layers = parse_layers(o->synthetic, &shape_net);
    if (shape_net.n_layers < 1)
        lb_usage_error(prog, "--synthetic takes sizes F,H,...,C (2 to %d numbers, each 1..65536)", DNN_MAX_LAYERS + 1);
    if (shape_net.size[shape_net.n_layers] > DNN_MAX_CLASSES)
        lb_usage_error(prog, "--synthetic: at most %d classes", DNN_MAX_CLASSES);
    layout(&shape_net);
    int rows = o->batch > 0 ? o->batch : 128, steps = o->steps != UNSET_INT ? o->steps : DNN_SYNTHETIC_STEPS, n = rows * steps, F = shape_net.size[0],
        C = shape_net.size[shape_net.n_layers];
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    require_tf32(o, &gpu);
    size_t act_floats = 0;
    for (int l = 0; l <= shape_net.n_layers; l++) act_floats += (size_t)2 * rows * shape_net.size[l];
    lb_require_device_memory(sizeof(float) * (2 * 5 * shape_net.n_params + 2 * act_floats + (size_t)n * F) +
                                 (80u << 20),
                             "two networks and the synthetic data");
    char shape[128];
    shape_text(&shape_net, shape, sizeof shape);
    if (!args->quiet)
        printf("dnn benchmark: %s, batch %d, %s, %s, random data (%d samples), %s (%s)\n", shape, rows,
               o->adam ? "Adam" : "SGD with momentum", o->tf32 ? "TF32 tensor cores" : "fp32", n, gpu.prop.name,
               gpu.sm);

    lb_rng rng;
    lb_rng_seed(&rng, args->seed);
    dataset data = {
        n, F, C, lb_host_alloc(sizeof(float) * (size_t)n * F, "data"), lb_host_alloc(sizeof(int) * n, "labels"), NULL};
    int *perm = lb_host_alloc(sizeof(int) * n, "permutation");
    lb_fill_uniform(data.x, (size_t)n * F, -1.0f, 1.0f, &rng);
    for (int i = 0; i < n; i++) data.y[i] = (int)(lb_rng_next(&rng) % (uint64_t)C), perm[i] = i;
    shuffle(perm, n, &rng);
    float *h_p = lb_host_alloc(sizeof(float) * shape_net.n_params, "parameters");
    init_params(&shape_net, h_p, &rng);
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s)); /* blocking: the default stream's events order with it */
    dnn_options po = *o;
    po.batch = rows;
    po.lr = o->lr > 0 ? o->lr : o->adam ? 1e-3 : 0.01;
    po.weight_decay = o->weight_decay != UNSET_DOUBLE ? o->weight_decay : 0.0;

    /* the cuBLAS path, and its GEMMs alone, like for like: launched one after another (against
     * the step's launches), and captured as one graph (against the step's graph) */
    network net;
    trainer t;
    path_timing cub, fus, lt = {0};
    int with_lt = shape_net.act == ACT_RELU; /* cuBLASLt's epilogues have no sigmoid */
    po.path = DNN_PATH_CUBLAS;
    setup_net(&po, &shape_net, h_p, rows, &data, &rng, s, &net, &t);
    time_path(&t, perm, n, steps, 1, args, s, &cub);
    int L = net.n_layers, n_gemms = 3 * L - 1;
    gemm_job gj = {&net, -1, rows, NULL, s};
    float gemms_ms = lb_time_ms(run_gemms, &gj, 1, args->iters);
    gj.graph = capture_gemms(&gj);
    float gemms_graph_ms = lb_time_ms(run_gemms, &gj, 1, args->iters);
    CUDA_CHECK(cudaGraphExecDestroy(gj.graph));
    gj.graph = NULL;
    if (!args->quiet) {
        printf("the cuBLAS path's GEMMs, each timed alone (us):");
        for (gj.which = 0; gj.which < n_gemms; gj.which++)
            printf(" %.1f", lb_time_ms(run_gemms, &gj, 1, args->iters) * 1e3);
        printf("\n");
    }
    free_net(&net, &t);
    /* the cuBLASLt path, from the same weights on the same batches, its GEMMs' algorithms tuned
     * (--lt --tune-gemms: the fastest it can be) */
    if (with_lt) {
        po.path = DNN_PATH_LT;
        po.tune_gemms = 1;
        setup_net(&po, &shape_net, h_p, rows, &data, &rng, s, &net, &t);
        time_path(&t, perm, n, steps, 1, args, s, &lt);
        free_net(&net, &t);
    }
    /* the fused path, from the same weights on the same batches */
    po.path = DNN_PATH_FUSED;
    po.tune_gemms = 0;
    setup_net(&po, &shape_net, h_p, rows, &data, &rng, s, &net, &t);
    time_path(&t, perm, n, steps, 0, args, s, &fus);
    if (!args->quiet) print_fused_gemms(&t, args, s);
    free_net(&net, &t);

    const char *suffix = o->tf32 ? "_tf32" : "";
    if (!args->quiet) {
        printf(" per step                                 us    samples/s   speed vs the cuBLAS GEMMs\n");
        printf(" cuBLAS path, launched one by one   %9.1f   %10.3g   %6.2f (the GEMMs launched: %.1f us)\n",
               cub.launch_ms * 1e3, rows / (cub.launch_ms * 1e-3), gemms_ms / cub.launch_ms, gemms_ms * 1e3);
        printf(" cuBLAS path, one CUDA graph        %9.1f   %10.3g   %6.2f (the GEMMs as a graph: %.1f us)\n",
               cub.graph_ms * 1e3, rows / (cub.graph_ms * 1e-3), gemms_graph_ms / cub.graph_ms, gemms_graph_ms * 1e3);
        if (with_lt) {
            printf(" cuBLASLt, tuned, launched          %9.1f   %10.3g   %6.2f\n", lt.launch_ms * 1e3,
                   rows / (lt.launch_ms * 1e-3), gemms_ms / lt.launch_ms);
            printf(" cuBLASLt, tuned, one CUDA graph    %9.1f   %10.3g   %6.2f\n", lt.graph_ms * 1e3,
                   rows / (lt.graph_ms * 1e-3), gemms_graph_ms / lt.graph_ms);
        }
        printf(" fused path, one CUDA graph         %9.1f   %10.3g   %6.2f (goal >= 2: half the GEMMs' time)\n",
               fus.graph_ms * 1e3, rows / (fus.graph_ms * 1e-3), gemms_graph_ms / fus.graph_ms);
        /* what the step spends outside its GEMMs, against what moving its bytes at the copy's speed takes */
        size_t bytes = step_bytes_outside_gemms(&shape_net, rows, o->adam);
        double copy_gbps = lb_memcpy_ceiling_gbps(bytes, args->iters, NULL);
        double floor_us = bytes / copy_gbps * 1e-3;
        printf(" outside the GEMMs (the step's graph minus the GEMMs' graph): cuBLAS path %.1f us", 
               (cub.graph_ms - gemms_graph_ms) * 1e3);
        if (with_lt) printf(", cuBLASLt path %.1f us", (lt.graph_ms - gemms_graph_ms) * 1e3);
        printf("; the work besides the products must move %.1f MB, %.1f us at the copy's %.0f GB/s: %.2fx that floor",
               bytes / 1e6, floor_us, copy_gbps, ((with_lt && lt.graph_ms < cub.graph_ms ? lt.graph_ms : cub.graph_ms) - gemms_graph_ms) * 1e3 / floor_us);
        printf(" (the faster path)\n");
        printf("mean loss of an epoch, first and last: cuBLAS path %.4f -> %.4f (%s)", cub.first_loss, cub.last_loss,
               cub.learns ? "it learns" : "NOT LEARNING");
        if (with_lt)
            printf(", cuBLASLt path %.4f -> %.4f (%s)", lt.first_loss, lt.last_loss,
                   lt.learns ? "it learns" : "NOT LEARNING");
        printf(", fused path %.4f -> %.4f (%s)", fus.first_loss, fus.last_loss,
               fus.learns ? "it learns" : "NOT LEARNING");
        printf("\n");
    }
    char sz[160], names[7][48];
    snprintf(sz, sizeof sz, "%s_b%d", shape, rows);
    const char *stems[7] = {"step_fused_graph", "step_graph",     "gemms_graph",   "step_launches",
                            "gemms_launched",   "step_lt_graph", "step_lt_launches"};
    for (int i = 0; i < 7; i++) snprintf(names[i], sizeof names[i], "%s%s", stems[i], suffix);
    lb_result rs[] = {
        {"dnn", -1, names[0], sz, fus.graph_ms, "msamples_s", rows / (fus.graph_ms * 1e-3) / 1e6, names[2],
         gemms_graph_ms / fus.graph_ms, fus.learns},
        {"dnn", -1, names[1], sz, cub.graph_ms, "msamples_s", rows / (cub.graph_ms * 1e-3) / 1e6, names[2],
         gemms_graph_ms / cub.graph_ms, cub.learns},
        {"dnn", -1, names[2], sz, gemms_graph_ms, "msamples_s", rows / (gemms_graph_ms * 1e-3) / 1e6, names[2], 1.0,
         -1},
        {"dnn", -1, names[3], sz, cub.launch_ms, "msamples_s", rows / (cub.launch_ms * 1e-3) / 1e6, names[4],
         gemms_ms / cub.launch_ms, cub.learns},
        {"dnn", -1, names[4], sz, gemms_ms, "msamples_s", rows / (gemms_ms * 1e-3) / 1e6, names[4], 1.0, -1},
        {"dnn", -1, names[5], sz, lt.graph_ms, "msamples_s", rows / (lt.graph_ms * 1e-3) / 1e6, names[2],
         gemms_graph_ms / lt.graph_ms, lt.learns},
        {"dnn", -1, names[6], sz, lt.launch_ms, "msamples_s", rows / (lt.launch_ms * 1e-3) / 1e6, names[4],
         gemms_ms / lt.launch_ms, lt.learns},
    };
    for (size_t i = 0; i < (with_lt ? 7u : 5u); i++) lb_print_result(&rs[i], args->quiet);
    int pass = cub.learns && fus.learns && (!with_lt || lt.learns);
    if (args->quiet) {
        char lt_text[64] = "no cuBLASLt path (sigmoid)";
        if (with_lt) snprintf(lt_text, sizeof lt_text, "%.1f us cuBLASLt path", lt.graph_ms * 1e3);
        printf("dnn: %s batch %d: %.1f us per step fused, %.1f us cuBLAS path, %s, its GEMMs as a graph %.1f us, %s\n",
               shape, rows, fus.graph_ms * 1e3, cub.graph_ms * 1e3, lt_text, gemms_graph_ms * 1e3,
               pass ? "PASS" : "FAIL");
    }
    CUDA_CHECK(cudaStreamDestroy(s));
    lb_free_dataset(&data);
    free(perm);
    free(h_p);
    return pass ? LB_EXIT_PASS : LB_EXIT_FAIL;
}
