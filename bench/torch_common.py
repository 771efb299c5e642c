"""bench/torch_common.py - what bench/'s PyTorch scripts share: torch with a CUDA GPU (or the line
saying why the script skips), and PyTorch's CUDA graph recipe (warm the call up on a side stream,
capture it once; the replay runs the same kernels on the same tensors with no launch overhead, how
the lab book's own steps are timed against it)."""


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
