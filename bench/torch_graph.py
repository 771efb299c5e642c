"""bench/torch_graph.py - PyTorch's CUDA graph recipe, shared by bench/'s PyTorch scripts: warm the
call up on a side stream, then capture it once; the graph's replay runs the same kernels on the same
tensors with no launch overhead (how the lab book's own steps are timed against it)."""


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
