/* dnn_bench.h - ch09's benchmark mode, --synthetic (dnn_bench.c) */
#ifndef DNN_BENCH_H
#define DNN_BENCH_H
#include "dnn_options.h"

/* Random data of the --synthetic shape; the step timed on both paths; returns the exit status */
int run_synthetic(const dnn_options *o, const lb_program *prog, const lb_args *args);

#endif
