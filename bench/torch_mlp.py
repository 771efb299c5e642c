#!/usr/bin/env python3
"""bench/torch_mlp.py - the PyTorch reference for ch09's --synthetic benchmark.

Trains the same dense network (ReLU hidden layers, softmax cross-entropy, SGD with momentum 0.9,
lr 0.01) on the same kind of data (uniform random inputs in [-1, 1), random labels), with the
whole step - the batch's gather, forward, loss, backward and the optimizer - captured once as a
CUDA graph and replayed, in fp32 and in TF32. As in ch09's step, the batch is gathered inside the
graph through a permutation kept on the device, at a step counter kept on the device: no copy
or Python work between the replays. Prints one RESULT line per measurement in the lab book's format,
so `make bench` puts PyTorch's step beside ch09's in one run:

    python3 bench/torch_mlp.py 784,1024,10 128      (sizes F,H,...,C and the batch)

Runs where python3 has torch with a CUDA GPU; otherwise it says so and exits 0 (skipped).
"""
import sys

import torch_common
from bench_args import Usage
import time


USAGE = "usage: torch_mlp.py [F,H,...,C [BATCH]]   (default 784,1024,10 128; --help says more)"

ARGS = Usage("torch_mlp", __doc__, USAGE)
usage_error = ARGS.error


def parse_args(argv):
    """The sizes (2 to 9 numbers, each 1..65536, as dnn --synthetic takes) and the batch."""
    ARGS.help_if_asked(argv)
    if len(argv) > 2:
        usage_error(f"at most two arguments, the sizes and the batch (got {len(argv)})")
    text = argv[0] if argv else "784,1024,10"
    try:
        sizes = [int(v) for v in text.split(",")]
    except ValueError:
        usage_error(f"'{text[:60]}' is not sizes F,H,...,C (2 to 9 numbers, each 1..65536)")
    if not 2 <= len(sizes) <= 9 or not all(1 <= s <= 65536 for s in sizes):
        usage_error(f"'{text[:60]}' is not sizes F,H,...,C (2 to 9 numbers, each 1..65536)")
    batch_text = argv[1] if len(argv) > 1 else "128"
    if not batch_text.isdigit() or not 1 <= int(batch_text) <= 65536:
        usage_error(f"the batch must be 1..65536 (got '{batch_text[:60]}')")
    return sizes, int(batch_text)


def main():
    sizes, batch = parse_args(sys.argv[1:])
    torch = torch_common.cuda_torch("torch_mlp")
    if torch is None:
        return 0
    shape = "-".join(str(s) for s in sizes)
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        ms = time_graph_step(torch, sizes, batch)
        name = "torch_graph_tf32" if tf32 else "torch_graph"
        print(f"RESULT prog=dnn name={name} size={shape}_b{batch} ms={ms:.4f} "
              f"msamples_s={batch / (ms * 1e-3) / 1e6:.4g} check=none")
    return 0


def time_graph_step(torch, sizes, batch, steps=64, iters=20):
    dev = torch.device("cuda")
    torch.manual_seed(1)
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, capturable=True) \
        if "capturable" in torch.optim.SGD.__init__.__code__.co_varnames \
        else torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = steps * batch
    data_x = torch.rand(n, sizes[0], device=dev) * 2 - 1
    data_y = torch.randint(0, sizes[-1], (n,), device=dev)
    perm = torch.randperm(n, device=dev)
    cursor = torch.zeros((), dtype=torch.long, device=dev)  # the step, on the device
    offsets = torch.arange(batch, device=dev)

    def step():
        rows = perm[(cursor * batch + offsets) % n]  # this step's rows of the permutation
        x, y = data_x.index_select(0, rows), data_y.index_select(0, rows)
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        cursor.add_(1)
        return loss

    graph = torch_common.capture(torch, step)  # one step, warmed up on a side stream first

    def epoch():
        for _ in range(steps):  # replays only: the gather is inside the graph
            graph.replay()

    epoch()
    torch.cuda.synchronize()
    samples = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        start.record()
        epoch()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) / steps)
    samples.sort()
    return samples[len(samples) // 2]


if __name__ == "__main__":
    sys.exit(main())
