/* test_adamw.c - host-only tests of ch11_transformer/adamw.c's CPU reference and bound: a known
 * step, the kernel's arithmetic in float (powf 4 ulps off, the CUDA bound) inside the bound over
 * 3 steps, and the bias correction of the next step outside it. Needs no GPU. */
#define main adamw_main
#include "../ch11_transformer/adamw.c"
#undef main

#include "unit.h"

int main(void)
{
    corrections cr = make_corrections();
    /* a known step: g = 0 and empty moments leave only the decay, p (1 - lr wd) */
    double p = 2.0, m = 0.0, v = 0.0, tol[3];
    adamw_cpu(&p, 0.0, &m, &v, 1, &cr, tol);
    CHECK(fabs(p - 2.0 * (1.0 - (double)ADAMW_LR * ADAMW_WD)) < 1e-15 && m == 0.0 && v == 0.0);
    /* GPT-2 small: 148 tensors, 124,439,808 parameters */
    long long n[ADAMW_MAX_TENSORS];
    int count = gpt2_sizes(n);
    long long total = 0;
    for (int k = 0; k < count; k++) total += n[k];
    CHECK(count == 148 && total == 124439808);
    long long parsed[ADAMW_MAX_TENSORS];
    CHECK(parse_sizes("1,3,2^20+3", parsed) == 3 && parsed[2] == 1048579);
    CHECK(parse_sizes("0", parsed) == -1 && parse_sizes("x", parsed) == -1);
    /* an empty field is malformed, not skipped (strtok would fold "1,,3" into "1,3") */
    CHECK(parse_sizes("1,,3", parsed) == -1 && parse_sizes(",3", parsed) == -1 && parse_sizes("3,", parsed) == -1 &&
          parse_sizes("", parsed) == -1);
    CHECK(parse_sizes("7", parsed) == 1 && parsed[0] == 7);

    lb_rng rng;
    lb_rng_seed(&rng, 9);
    size_t bad = 0, caught = 0, outputs = 0;
    for (int mutant = 0; mutant < 2; mutant++)
        for (int i = 0; i < 200000; i++) {
            float pf = lb_rng_uniform(&rng, -1, 1), g = lb_rng_uniform(&rng, -1, 1), mf = lb_rng_uniform(&rng, -0.1f, 0.1f),
                  vf = lb_rng_uniform(&rng, 0, 0.01f);
            double P = pf, M = mf, V = vf;
            adamw_cpu(&P, g, &M, &V, 3, &cr, tol);
            for (int t = 1; t <= 3; t++) {
                float p1 = powf(0.9f, (float)(t + mutant)), p2 = powf(0.999f, (float)(t + mutant));
                for (int k = 0; k < 4; k++) p1 = nextafterf(p1, 1), p2 = nextafterf(p2, 1);
                float cx = 1.0f / (1.0f - p1), cy = 1.0f / (1.0f - p2);
                mf = 0.9f * mf + (1.0f - 0.9f) * g;
                vf = 0.999f * vf + (1.0f - 0.999f) * g * g;
                pf -= ADAMW_LR * ((mf * cx) / (sqrtf(vf * cy) + 1e-8f) + ADAMW_WD * pf);
            }
            int p_ok = fabs(pf - (float)P) <= tol[0];
            int ok = p_ok && fabs(mf - (float)M) <= tol[1] && fabs(vf - (float)V) <= tol[2];
            if (mutant) caught += !p_ok, outputs++;
            else bad += !ok;
        }
    CHECK(bad == 0);
    CHECK(caught > outputs * 9 / 10); /* the next step's correction: p wrong nearly everywhere */
    printf("test_adamw: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}
