"""bench/torch_common.py - what bench/'s PyTorch scripts share: torch with a CUDA GPU (or the line
saying why the script skips), and PyTorch's CUDA graph recipe (warm the call up on a side stream,
capture it once; the replay runs the same kernels on the same tensors with no launch overhead, how
the lab book's own steps are timed against it), and lb_time_ms's way of timing a call."""


def cuda_torch(name):
    """torch, if it imports and sees a CUDA GPU; else None, after the script's 'skipped' line."""
    try:
        import torch
    except ImportError:
        print(f"{name}: skipped (python3 has no torch)")
        return None
    if not torch.cuda.is_available():
        print(f"{name}: skipped (torch sees no CUDA GPU)")
        return None
    return torch


def capture(torch, fn):
    """fn captured in a torch.cuda.CUDAGraph after three warm-up calls on a side stream."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


MIN_SAMPLE_MS = 1.0  # common/labbook.h's LB_MIN_SAMPLE_MS


def time_ms(torch, fn, iters):
    """As lb_time_ms times ours: two warm-up calls; then one call timed alone decides how many calls
    back to back make a sample of at least MIN_SAMPLE_MS (at most 1000); the median of `iters`
    samples, each between two CUDA events, divided by its calls."""
    def sample(calls):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop)

    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    one = sample(1)
    calls = 1 if one >= MIN_SAMPLE_MS else min(1000, int(MIN_SAMPLE_MS / max(one, 1e-3)) + 1)
    times = [sample(calls) / calls for _ in range(iters)]
    times.sort()
    mid = len(times) // 2
    return times[mid] if len(times) % 2 else 0.5 * (times[mid - 1] + times[mid])
