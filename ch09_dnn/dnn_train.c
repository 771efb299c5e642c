/* dnn_train.c - training ch09's network (dnn_train.h): the epoch loop, the run's network and
 * trainer, and the modes that train more than one network. */
#define _POSIX_C_SOURCE 200809L
#include "dnn_train.h"
#include "dnn_data.h"

#include <float.h>
#include <math.h>
#include <string.h>
#include <unistd.h> /* isatty: an updating progress line only on a terminal */

/* "4-16-16-3": the layer sizes, for titles and RESULT sizes */
void shape_text(const network *net, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int l = 0; l <= net->n_layers; l++)
        snprintf(buf + strlen(buf), len - strlen(buf), l ? "-%d" : "%d", net->size[l]);
}

/* The learning rate of epoch e (from 0) of E: cosine decay from lr to 0, steps of x0.1 at one
 * half and three quarters, or constant. */
static double scheduled_lr(const dnn_options *o, int e)
{
    if (!strcmp(o->schedule, "cosine")) return o->lr * 0.5 * (1.0 + cos(3.141592653589793 * e / o->epochs));
    if (!strcmp(o->schedule, "step")) return o->lr * (e < o->epochs / 2 ? 1.0 : e < 3 * o->epochs / 4 ? 0.1 : 0.01);
    return o->lr;
}

/* The epochs: a fresh shuffle each, the step replayed as a graph (or launched), then the
 * validation set's loss and accuracy. The weights of the epoch with the lowest validation loss
 * are kept (the last epoch's without a validation set); --patience epochs without a better one
 * stop the run. progress: print each epoch (one updating line on a terminal). Returns the exit
 * status, and the run's numbers in r. */
int train(const dnn_options *o, trainer *t, const dataset *train_set, const dataset *val, lb_rng *rng,
                 cudaStream_t s, int progress, fit_result *r)
{
    network *net = t->net;
    int n_train = train_set->n, steps = n_train / o->batch; /* the last partial batch of each epoch is left out */
    cudaGraphExec_t graph = (o->epochs > 0 && !o->no_graph) ? capture_step(t, s) : NULL;
    int *perm = lb_host_alloc(sizeof(int) * n_train, "permutation");
    for (int i = 0; i < n_train; i++) perm[i] = i;
    float *d_best = NULL;
    if (val->n) CUDA_CHECK(cudaMalloc((void **)&d_best, sizeof(float) * net->n_params));
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    int status = LB_EXIT_PASS, terminal = progress && isatty(fileno(stdout));
    double best_loss = HUGE_VAL;
    memset(r, 0, sizeof *r);
    for (int e = 0; e < o->epochs; e++) {
        shuffle(perm, n_train, rng);
        CUDA_CHECK(cudaMemcpyAsync(t->d_perm, perm, sizeof(int) * n_train, cudaMemcpyHostToDevice, s));
        CUDA_CHECK(cudaMemsetAsync(&t->d_state->cursor, 0, sizeof(int), s));
        CUDA_CHECK(cudaMemsetAsync(&t->d_state->loss_sum, 0, sizeof(float) + sizeof(int), s)); /* loss_sum, correct */
        set_lr(t, (float)scheduled_lr(o, e), s);
        CUDA_CHECK(cudaEventRecord(e0, s));
        for (int k = 0; k < steps; k++) {
            if (graph)
                CUDA_CHECK(cudaGraphLaunch(graph, s));
            else
                train_step(t, s);
        }
        CUDA_CHECK(cudaEventRecord(e1, s));
        step_state st;
        CUDA_CHECK(cudaMemcpyAsync(&st, t->d_state, sizeof st, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        r->train_ms += ms;
        r->epochs_run = e + 1;
        r->steps += steps;
        double loss = st.loss_sum / steps;
        if (!isfinite(loss)) {
            if (terminal) printf("\n");
            fprintf(stderr, "dnn: the loss is %g at epoch %d: training diverged (try a smaller --lr)\n", loss, e + 1);
            status = LB_EXIT_FAIL;
            break;
        }
        double val_acc = 0.0, val_loss = 0.0;
        if (val->n) {
            evaluate(net, val, &val_acc, &val_loss, s);
            if (val_loss < best_loss) { /* the best epoch so far: keep its weights */
                best_loss = val_loss, r->best_epoch = e + 1, r->val_acc = val_acc, r->val_loss = val_loss;
                CUDA_CHECK(
                    cudaMemcpyAsync(d_best, net->d_params, sizeof(float) * net->n_params, cudaMemcpyDeviceToDevice, s));
            }
        }
        if (progress) {
            printf("%sepoch %4d/%d: loss %.4f, train acc %5.1f%%", terminal ? "\r" : "", e + 1, o->epochs, loss,
                   100.0 * st.correct / (steps * o->batch));
            if (val->n)
                printf(", val loss %.4f, val acc %5.1f%% (best: epoch %d)", val_loss, 100 * val_acc, r->best_epoch);
            printf(", %.3g samples/s%s", steps * o->batch / (ms * 1e-3), terminal ? "\033[K" : "\n");
            fflush(stdout);
        }
        if (val->n && o->patience > 0 && e + 1 - r->best_epoch >= o->patience) break; /* no better for too long */
    }
    if (terminal && r->epochs_run) printf("\n");
    if (d_best && r->best_epoch) { /* back to the best epoch's weights */
        CUDA_CHECK(cudaMemcpyAsync(net->d_params, d_best, sizeof(float) * net->n_params, cudaMemcpyDeviceToDevice, s));
        /* checked: the weights now in place give the validation loss recorded for that epoch */
        double acc_now, loss_now;
        evaluate(net, val, &acc_now, &loss_now, s);
        if (!(fabs(loss_now - r->val_loss) <= 1e-9 * fabs(r->val_loss))) {
            fprintf(stderr, "dnn: FAIL: the weights restored for epoch %d give a validation loss of %.9g, not the %.9g "
                            "recorded for it\n", r->best_epoch, loss_now, r->val_loss);
            status = LB_EXIT_FAIL;
        }
    }
    if (!val->n) r->best_epoch = r->epochs_run;
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (graph) CUDA_CHECK(cudaGraphExecDestroy(graph));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    CUDA_CHECK(cudaFree(d_best));
    free(perm);
    return status;
}

/* A network of the chosen shape on the chosen path, with its first weights (from init, or drawn
 * from rng), and a trainer for train_set. */
void setup_net(const dnn_options *o, const network *shape, const float *init, int max_rows,
                      const dataset *train_set, lb_rng *rng, cudaStream_t s, network *net, trainer *t)
{
    *net = *shape;
    net->path = o->path;
    net->tf32 = o->tf32;
    net->tune_gemms = o->tune_gemms;
    net_alloc(net, max_rows);
    float *p = lb_host_alloc(sizeof(float) * net->n_params, "parameters");
    if (init)
        memcpy(p, init, sizeof(float) * net->n_params);
    else
        init_params(net, p, rng);
    CUDA_CHECK(cudaMemcpy(net->d_params, p, sizeof(float) * net->n_params, cudaMemcpyHostToDevice));
    free(p);
    trainer_create(t, net, o->batch, train_set, o->adam, (float)o->momentum, (float)o->weight_decay);
    set_lr(t, (float)o->lr, s);
    CUBLAS_CHECK(cublasSetStream(net->h, s));
}

void free_net(network *net, trainer *t)
{
    trainer_free(t);
    net_free(net);
}

/* --vs-linear: logistic regression (layers F,C: no hidden layer) trained by the same code on the
 * same split, with the same optimizer, learning rate, batch and epochs. The network must beat
 * it: an accuracy bar that a linear model also clears cannot tell a working hidden layer from
 * a broken one. */
int beat_linear(const dnn_options *o, const dataset *train_set, const dataset *val, const dataset *test,
                       int max_rows, lb_rng *rng, network *net, cudaStream_t s)
{
    network lin = {0}, shape = {0};
    trainer t;
    shape.act = net->act;
    shape.n_layers = 1;
    shape.size[0] = train_set->features;
    shape.size[1] = train_set->classes;
    setup_net(o, &shape, NULL, max_rows, train_set, rng, s, &lin, &t);
    fit_result r;
    int status = train(o, &t, train_set, val, rng, s, 0, &r);
    double lin_acc = accuracy(&lin, test, NULL, s), net_acc = accuracy(net, test, NULL, s);
    int ok = status == LB_EXIT_PASS && net_acc > lin_acc;
    printf("logistic regression %d-%d on the same split: test accuracy %.2f%%, the network's %.2f%%: %s\n", lin.size[0],
           lin.size[1], 100 * lin_acc, 100 * net_acc,
           ok ? "PASS (the hidden layers help)" : "FAIL (the network is no better than a linear model)");
    free_net(&lin, &t);
    return ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}

/* --seeds K, --kfold K: K trainings, each on its own sets, network and shuffles, reported as the
 * test accuracy's mean and standard deviation (--seeds: seed k gives the run `./dnn --seed k`
 * would), or pooled over the folds (--kfold: every row is tested once, by the one network that
 * did not train on it). */
int run_repeated(const dnn_options *o, const lb_args *args, const dataset *all, const network *shape,
                        int max_rows, cudaStream_t s, double t_start)
{
    int runs = o->kfold ? o->kfold : o->seeds, status = LB_EXIT_PASS,
        *order = lb_host_alloc(sizeof(int) * all->n, "order");
    double *acc = lb_host_alloc(sizeof(double) * runs, "accuracies"), mean = 0.0, var = 0.0, val_mean = 0.0;
    long right = 0, tested = 0;
    lb_rng rng;
    for (int k = 0; k < runs; k++) {
        if (k == 0 || !o->kfold) { /* --seeds: a new shuffle per run; --kfold: one, cut into folds */
            lb_rng_seed(&rng, args->seed + (o->kfold ? 0 : (unsigned long long)k));
            for (int i = 0; i < all->n; i++) order[i] = i;
            shuffle(order, all->n, &rng);
        }
        dataset train_set, val, test;
        float *mean_x = NULL, *sd_x = NULL;
        make_sets(o, all, order, k, &train_set, &val, &test, &mean_x, &sd_x);
        network net;
        trainer t;
        setup_net(o, shape, NULL, max_rows, &train_set, &rng, s, &net, &t);
        fit_result r;
        if (train(o, &t, &train_set, &val, &rng, s, 0, &r) != LB_EXIT_PASS) status = LB_EXIT_FAIL;
        acc[k] = accuracy(&net, &test, NULL, s);
        right += lround(acc[k] * test.n), tested += test.n;
        mean += acc[k] / runs, val_mean += r.val_acc / runs;
        if (!args->quiet)
            printf("%s %d: test accuracy %6.2f%% (%d of %d), validation %6.2f%%, the weights of epoch %d of %d\n",
                   o->kfold ? "fold" : "seed", o->kfold ? k + 1 : (int)(args->seed + k), 100 * acc[k],
                   (int)lround(acc[k] * test.n), test.n, 100 * r.val_acc, r.best_epoch, r.epochs_run);
        free_net(&net, &t);
        lb_free_dataset(&train_set);
        lb_free_dataset(&val);
        lb_free_dataset(&test);
        free(mean_x);
        free(sd_x);
    }
    for (int k = 0; k < runs; k++) var += (acc[k] - mean) * (acc[k] - mean) / (runs > 1 ? runs - 1 : 1);
    double sd = sqrt(var), pooled = tested ? (double)right / tested : 0.0, score = o->kfold ? pooled : mean;
    char shape_s[128], name[128], sz[160];
    shape_text(shape, shape_s, sizeof shape_s);
    data_name(o, name, sizeof name);
    snprintf(name + strlen(name), sizeof name - strlen(name), o->kfold ? "_kfold%d" : "_%dseeds", runs);
    /* seeds from another start than 1 (6..10: splits the defaults were not tuned on) say so */
    if (!o->kfold && args->seed != 1)
        snprintf(name + strlen(name), sizeof name - strlen(name), "_from%llu", args->seed);
    snprintf(sz, sizeof sz, "%s_e%d", shape_s, o->epochs);
    if (o->kfold)
        printf("dnn: %s %s: %d-fold cross-validation accuracy %.2f%% (%ld of %ld rows; folds %.2f%% +- %.2f sd), "
               "validation %.2f%%, whole run %.2f s\n",
               o->data_path, shape_s, runs, 100 * pooled, right, tested, 100 * mean, 100 * sd, 100 * val_mean,
               (lb_wall_ms() - t_start) / 1e3);
    else
        printf("dnn: %s %s, seeds %llu..%llu: test accuracy %.2f%% +- %.2f (mean +- sd of %d runs), validation "
               "%.2f%%, whole run %.2f s\n",
               o->data_path, shape_s, args->seed, args->seed + runs - 1, 100 * mean, 100 * sd, runs, 100 * val_mean,
               (lb_wall_ms() - t_start) / 1e3);
    int acc_ok = o->min_accuracy < 0 || 100 * score >= o->min_accuracy;
    if (!acc_ok)
        fprintf(stderr, "dnn: %s accuracy %.2f%% is below --min-accuracy %g\n",
                o->kfold ? "cross-validation" : "mean test", 100 * score, o->min_accuracy);
    lb_result res = {"dnn",          -1,          name, sz,  0.0,
                     "test_acc_pct", 100 * score, NULL, 0.0, o->min_accuracy < 0 ? -1 : acc_ok};
    lb_print_result(&res, args->quiet);
    if (!o->kfold) {
        char sd_name[160];
        snprintf(sd_name, sizeof sd_name, "%s_sd", name);
        lb_result rs = {"dnn", -1, sd_name, sz, 0.0, "sd_pct", 100 * sd, NULL, 0.0, -1};
        lb_print_result(&rs, args->quiet);
    }
    free(order);
    free(acc);
    return status != LB_EXIT_PASS ? status : acc_ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}

/* --compare-paths: the same first weights, batches and learning rates on the cuBLAS path and on
 * another one: the fused path, or with --lt the cuBLASLt path. Their sums run in other orders, so the weights drift apart by rounding only.
 * The tolerance: a step's update rounds each weight once on each path (an ulp of the largest
 * weight at most: 2^-23 of it), and the gradients' other summation orders change the update by
 * far less (K roundings of a gradient, times the learning rate). These differences have random
 * signs, so over the steps they add like a random walk: sqrt(steps) of them, with a factor 4
 * of margin. Adam divides each gradient by its running size, so where a gradient is mostly
 * cancellation (small against its terms, and so different on the two paths by a good fraction
 * of itself) the two updates differ by that fraction of the learning rate: up to lr x
 * DNN_ADAM_ROUNDING a step, with random signs too, so sqrt(steps) of them.
 * With ReLU this holds only while no pre-activation falls within rounding of 0: one that does can
 * land on the other side of the kink on the other path, and from that step on the paths differ by
 * a gradient term (digits 64-300-10, seed 1: 2.2e-7 after one epoch, 1.2e-4 after three; with the
 * sigmoid 1.5e-7 after three). A failure with ReLU says so, and the sigmoid tells the two apart.
 * A path that computes something else drifts every step the same way, linearly, and passes
 * the tolerance after enough steps: exercise 1's bias decay on one path, at --weight-decay
 * 1e-5 with SGD and 1e-3 with Adam (tests/ch09_dnn.sh). The weights and biases are reported
 * apart. */
/* Adam's update differs between the paths by at most this fraction of the learning rate a step
 * (the cancellation above; digits, batch 100, 27 steps, measured 8.8e-6 at lr 3e-3) */
#define DNN_ADAM_ROUNDING (1.0 / 512)

int compare_paths(const dnn_options *o, const lb_args *args, const network *shape, const float *init,
                         const dataset *train_set, int max_rows, const lb_rng *rng, cudaStream_t s)
{
    float *w[2];
    dataset no_val = {0, train_set->features, train_set->classes, NULL, NULL, NULL}; /* no early stopping */
    fit_result r;
    int status = LB_EXIT_PASS;
    dnn_path other = o->path == DNN_PATH_LT ? DNN_PATH_LT : DNN_PATH_FUSED;
    for (int path = 0; path < 2; path++) { /* 0 cuBLAS, 1 the other */
        dnn_options po = *o;
        po.path = path == 0 ? DNN_PATH_CUBLAS : other;
        lb_rng same = *rng; /* the same shuffles on both paths */
        network net;
        trainer t;
        setup_net(&po, shape, init, max_rows, train_set, &same, s, &net, &t);
        if (train(&po, &t, train_set, &no_val, &same, s, 0, &r) != LB_EXIT_PASS) status = LB_EXIT_FAIL;
        w[path] = lb_host_alloc(sizeof(float) * net.n_params, "parameters");
        CUDA_CHECK(cudaMemcpy(w[path], net.d_params, sizeof(float) * net.n_params, cudaMemcpyDeviceToHost));
        free_net(&net, &t);
    }
    /* the weights and the biases apart: an edit that changes one of them (exercise 1 decays the
     * weights only) shows in its own gap, and a wrong one (no decay at all) in the other */
    double gap[2] = {0.0, 0.0}, largest = 0.0; /* [0] weights, [1] biases */
    for (int l = 0; l < shape->n_layers; l++)
        for (int part = 0; part < 2; part++) {
            size_t off = part == 0 ? shape->w_off[l] : shape->b_off[l];
            size_t count = (size_t)shape->size[l + 1] * (part == 0 ? (size_t)shape->size[l] : 1);
            for (size_t i = off; i < off + count; i++) {
                double d = fabs((double)w[0][i] - w[1][i]);
                if (!(d <= gap[part])) gap[part] = d; /* NaN sticks */
                largest = fmax(largest, fabs((double)w[0][i]));
            }
        }
    double steps = r.steps > 1 ? r.steps : 1;
    double tol = 4.0 * FLT_EPSILON * fmax(largest, 1.0) * sqrt(steps);
    if (o->adam) tol += o->lr * DNN_ADAM_ROUNDING * sqrt(steps);
    int w_ok = gap[0] <= tol, b_ok = gap[1] <= tol, ok = status == LB_EXIT_PASS && w_ok && b_ok;
    printf("dnn: %d epochs (%d steps) from the same weights, the cuBLAS and %s paths differ by at most %.2e in "
           "the weights and %.2e in the biases (the largest parameter is %.3f; tolerance %.2e): weights %s, "
           "biases %s: %s\n",
           r.epochs_run, r.steps, dnn_path_name(other), gap[0], gap[1], largest, tol, w_ok ? "PASS" : "FAIL", b_ok ? "PASS" : "FAIL",
           ok ? "PASS" : "FAIL");
    if (!ok && shape->act == ACT_RELU)
        printf("dnn: with ReLU a pre-activation within rounding of 0 can take the other side of the kink on one "
               "path; rerun with --act sigmoid: a gap that stays is not rounding\n");
    (void)args;
    free(w[0]);
    free(w[1]);
    return ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}
