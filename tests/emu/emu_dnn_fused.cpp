/* emu_dnn_fused.cpp - ch09's fused GEMM kernel on CPU threads (emu_cuda.h), for one layer of
 * `in` to `out` units and a batch of `rows`, each product the fused step makes of it (as
 * dnn_net.c's forward_fused and backward_fused build them), against the same in double:
 *
 *   emu_dnn_fused rows in out [relu|sigmoid]
 *
 *   forward  Z = act([X, 1] [W; b]), X gathered through a permutation, the gathered rows kept
 *   dX       dZ' = (dZ W^T) * act'(A)
 *   update   [W; b] by SGD with momentum from [A, 1]^T dZ (and the plain gradient, FUSED_STORE)
 * with the GPU's plan for each shape (tiles, and K split over blocks when the tiles are few:
 * EMU_SMS changes the count of SMs the plan fills). An element passes within 2^-20 K of the sum
 * of its |terms| (fp32 sums in any order); a lost k, a part of a split K added twice or not at
 * all, or an update of the wrong parameter is far outside. Exit 0 when all pass, 1 otherwise. */
#include "emu_cuda.h"
#include "dnn_fused_kernels.h"

#include <random>

/* the multiprocessors the plans fill: the emulated GPU's (EMU_SMS, emu_runtime.cpp) */
static int sms()
{
    int n = 0;
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0);
    return n;
}

/* got (rows x cols, ld) against want, each element within its bound */
static int compare(const char *what, const float *got, int ld, const std::vector<double> &want,
                   const std::vector<double> &bound, int rows, int cols)
{
    size_t bad = 0, first = 0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * cols + c;
            if (!(fabs(got[(size_t)r * ld + c] - want[i]) <= bound[i])) {
                if (!bad) first = i;
                bad++;
            }
        }
    printf("  %-44s %zu of %zu wrong", what, bad, (size_t)rows * cols);
    if (bad)
        printf(" (first: [%zu][%zu] = %.7g, want %.7g)", first / cols, first % cols,
               got[(first / cols) * ld + first % cols], want[first]);
    printf(" %s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}

static double act_of(double z, int act) { return act == ACT_RELU ? (z > 0 ? z : 0) : 1.0 / (1.0 + exp(-z)); }
static double act_grad(double a, int act) { return act == ACT_RELU ? (a > 0 ? 1.0 : 0.0) : a * (1.0 - a); }

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: emu_dnn_fused rows in out [relu|sigmoid]\n");
        return 2;
    }
    int rows = atoi(argv[1]), in = atoi(argv[2]), out = atoi(argv[3]);
    int act = argc > 4 && strcmp(argv[4], "sigmoid") == 0 ? ACT_SIGMOID : ACT_RELU;
    if (rows < 1 || in < 1 || out < 1) {
        fprintf(stderr, "emu_dnn_fused: rows, in and out must be positive\n");
        return 2;
    }
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    auto fill = [&](std::vector<float> &v, size_t n, float a) {
        for (size_t i = 0; i < n; i++) v[i] = a * uniform(rng);
    };
    int samples = rows + 7; /* the training set the permutation gathers from */
    /* the inputs with NaN after their ends (emu_guarded): a read past one fails */
    size_t nX = (size_t)samples * in, nWb = (size_t)(in + 1) * out, nZ = (size_t)rows * out, nA = (size_t)rows * in;
    std::vector<float> X = emu_guarded<float>(nX), Wb = emu_guarded<float>(nWb), dZ = emu_guarded<float>(nZ);
    std::vector<float> A = emu_guarded<float>(nA), V((size_t)(in + 1) * out), Z((size_t)rows * out);
    std::vector<float> kept((size_t)rows * in), dX((size_t)rows * in);
    fill(X, nX, 1.0f), fill(Wb, nWb, 0.1f), fill(dZ, nZ, 0.01f), fill(V, V.size(), 0.001f);
    for (size_t i = 0; i < nA; i++) A[i] = act == ACT_RELU ? fmaxf(uniform(rng), 0.0f) : 0.5f + 0.5f * uniform(rng);
    std::vector<int> perm(samples);
    for (int i = 0; i < samples; i++) perm[i] = (i * 5 + 3) % samples; /* 5 and rows + 7 coprime or not: any order */
    step_state state = {3, 1, 0.0f, 0, 0.05f};                         /* cursor 3: the batch starts mid-permutation */
    float mu = 0.9f, wd = 1e-4f;
    std::vector<float> workspace(fused_workspace_floats(sms()));
    std::vector<int> counters(fused_counter_ints(sms()), 0);
    int failed = 0;
    printf("emulated fused step, %d rows, %d -> %d units, %s, %d SMs:\n", rows, in, out,
           act == ACT_RELU ? "ReLU" : "sigmoid", sms());

    /* forward, the first layer's way: the batch gathered through the permutation, kept */
    {
        fused_gemm p = {};
        p.M = rows, p.N = out, p.K = in + 1, p.A = X.data(), p.lda = in, p.a_ones = 1, p.a_perm = perm.data();
        p.a_copy = kept.data(), p.B = Wb.data(), p.ldb = out, p.C = Z.data(), p.ldc = out;
        p.epilogue = FUSED_ACT, p.act = act, p.state = &state;
        std::fill(Z.begin(), Z.end(), NAN), std::fill(kept.begin(), kept.end(), NAN);
        fused_gemm_launch(&p, fused_plan_for(p.M, p.N, p.K, sms()), workspace.data(), counters.data(), 0);
        std::vector<double> want((size_t)rows * out), bound(want.size()), wk((size_t)rows * in), bk(wk.size(), 0.0);
        for (int r = 0; r < rows; r++) {
            const float *x = &X[(size_t)perm[state.cursor + r] * in];
            for (int k = 0; k < in; k++) wk[(size_t)r * in + k] = x[k];
            for (int c = 0; c < out; c++) {
                double s = Wb[(size_t)in * out + c], size = fabs(s);
                for (int k = 0; k < in; k++)
                    s += (double)x[k] * Wb[(size_t)k * out + c], size += fabs(x[k] * Wb[(size_t)k * out + c]);
                want[(size_t)r * out + c] = act_of(s, act);
                bound[(size_t)r * out + c] = 0x1.0p-20 * (in + 1) * size + 1e-30;
            }
        }
        failed += compare("forward Z = act([X, 1] [W; b])", Z.data(), out, want, bound, rows, out);
        failed += compare("the gathered rows kept", kept.data(), in, wk, bk, rows, in);
    }
    /* dX: (dZ W^T) * act'(A) */
    {
        fused_gemm p = {};
        p.M = rows, p.N = in, p.K = out, p.A = dZ.data(), p.lda = out, p.B = Wb.data(), p.ldb = out, p.b_trans = 1;
        p.C = dX.data(), p.ldc = in, p.epilogue = FUSED_ACT_GRAD, p.act = act, p.act_out = A.data();
        std::fill(dX.begin(), dX.end(), NAN);
        fused_gemm_launch(&p, fused_plan_for(p.M, p.N, p.K, sms()), workspace.data(), counters.data(), 0);
        std::vector<double> want((size_t)rows * in), bound(want.size());
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < in; k++) {
                double s = 0.0, size = 0.0;
                for (int c = 0; c < out; c++) {
                    double t = (double)dZ[(size_t)r * out + c] * Wb[(size_t)k * out + c];
                    s += t, size += fabs(t);
                }
                double g = act_grad(A[(size_t)r * in + k], act);
                want[(size_t)r * in + k] = s * g, bound[(size_t)r * in + k] = 0x1.0p-20 * out * size * g + 1e-30;
            }
        failed += compare("dX = (dZ W^T) * act'(A)", dX.data(), in, want, bound, rows, in);
    }
    /* the update: [dW; db] = [A, 1]^T dZ, then SGD with momentum on [W; b]; and the gradient alone */
    for (int update = 0; update < 2; update++) {
        std::vector<float> C = update ? Wb : std::vector<float>(nWb, NAN), v = V;
        fused_gemm p = {};
        p.M = in + 1, p.N = out, p.K = rows, p.A = A.data(), p.lda = in, p.a_trans = 1, p.a_ones = 1;
        p.B = dZ.data(), p.ldb = out, p.C = C.data(), p.ldc = out, p.epilogue = update ? FUSED_SGD : FUSED_STORE;
        p.opt1 = v.data(), p.mu = mu, p.wd = wd, p.state = &state;
        fused_gemm_launch(&p, fused_plan_for(p.M, p.N, p.K, sms()), workspace.data(), counters.data(), 0);
        std::vector<double> want(nWb), bound(nWb), want_v(nWb), bound_v(nWb);
        for (int k = 0; k <= in; k++)
            for (int c = 0; c < out; c++) {
                double g = 0.0, size = 0.0;
                for (int r = 0; r < rows; r++) {
                    double t = (k < in ? (double)A[(size_t)r * in + k] : 1.0) * dZ[(size_t)r * out + c];
                    g += t, size += fabs(t);
                }
                size_t i = (size_t)k * out + c;
                double gb = 0x1.0p-20 * rows * size + 1e-30;
                if (!update) {
                    want[i] = g, bound[i] = gb;
                } else { /* v = mu v - lr (g + wd w), w += v: the gradient's error scaled by lr, and roundings */
                    double vi = mu * (double)V[i] - state.lr * (g + wd * (double)Wb[i]);
                    want_v[i] = vi, bound_v[i] = state.lr * gb + 0x1.0p-22 * (fabs(vi) + 1e-6);
                    want[i] = Wb[i] + vi, bound[i] = bound_v[i] + 0x1.0p-22 * fabs(want[i]);
                }
            }
        if (!update) {
            failed += compare("[dW; db] = [A, 1]^T dZ", C.data(), out, want, bound, in + 1, out);
        } else {
            failed += compare("SGD on [W; b]: the weights", C.data(), out, want, bound, in + 1, out);
            failed += compare("SGD on [W; b]: the velocity", v.data(), out, want_v, bound_v, in + 1, out);
        }
    }
    for (int c : counters)
        if (c != 0) {
            printf("  a split K's tile counter was left at %d: FAIL\n", c);
            failed++;
            break;
        }
    return emu_finish(failed);
}
