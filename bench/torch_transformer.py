#!/usr/bin/env python3
"""bench/torch_transformer.py - PyTorch's side of ch11_transformer's measurements.

Times what a PyTorch user calls for the same operation on the same shape the way ours are
timed (lb_time_ms: CUDA events, calls back to back to at least 1 ms a sample, the median), inputs made on the GPU before the
timing (as ch11's programs do), and prints two RESULT lines in the lab book's format, with the
same prog= and size= as ours, so that `make bench` puts them in one table: the call as a script
makes it (name=torch, eager: Python and the dispatcher launch every kernel), and the same call
captured once in a CUDA graph and replayed (name=torch_graph: no launch overhead, the fastest
way PyTorch runs it, and the one our goals are measured against):

    python3 bench/torch_transformer.py softmax 16384x4096     torch.softmax(x, dim=-1), fp32
    python3 bench/torch_transformer.py cross_entropy 8192x50304
                      F.cross_entropy(logits, y) and its backward (the logits' gradient), fp32
    python3 bench/torch_transformer.py layernorm 16384x4096   F.layer_norm(x, (cols,), gamma, beta)
    python3 bench/torch_transformer.py rmsnorm 16384x4096     F.rms_norm(x, (cols,), gamma)
    python3 bench/torch_transformer.py adamw gpt2
                      torch.optim.AdamW(fused=True).step() over GPT-2 small's 148 tensors
    python3 bench/torch_transformer.py attention 4x16x4096x128[_causal]
                      F.scaled_dot_product_attention(q, k, v) in bf16, B x H x S x D, forward,
                      once with the flash backend (FlashAttention-2: name=torch_flash) and once
                      with cuDNN's (name=torch_cudnn); TFLOP/s counts 4 B H S^2 D, halved when
                      causal, as ch11's attention does. Each eager and as a graph's replay
                      (torch_flash_graph, torch_cudnn_graph), as the other operations.
    python3 bench/torch_transformer.py attention_backward 4x16x4096x128[_causal]
                      the same attention's backward alone: the forward run once outside the
                      timing, then torch.autograd.grad(O, (q, k, v), dO) timed (name=
                      torch_flash_bwd, torch_cudnn_bwd); _graph: the backend's backward operator
                      called directly and captured (autograd.grad itself cannot be); TFLOP/s
                      counts 2.5 times the forward's, as ch11's attention_backward does.

GB/s counts the bytes the operation must move (softmax: x read once, y written once; the
cross-entropy: the logits read once, their gradient written once; LayerNorm and RMSNorm: x read,
y written; AdamW: 28 bytes a parameter), as ours.
Runs where python3 has torch with a CUDA GPU; otherwise it says so and exits 0 (skipped).
"""
import sys

import torch_common
from bench_args import Usage

USAGE = ("usage: torch_transformer.py softmax|cross_entropy|layernorm|rmsnorm ROWSxCOLS [ITERS] | adamw gpt2 [ITERS]"
         " | attention|attention_backward BxHxSxD[_causal] [ITERS]   (--help says more)")
OPS = ("softmax", "cross_entropy", "layernorm", "rmsnorm", "adamw", "attention", "attention_backward")


def gpt2_sizes():
    """GPT-2 small's tensors, as ch11's adamw.c lists them: embeddings, 12 blocks, the last norm."""
    block = [768, 768, 768 * 2304, 2304, 768 * 768, 768, 768, 768, 768 * 3072, 3072, 3072 * 768, 768]
    return [50257 * 768, 1024 * 768] + block * 12 + [768, 768]


ARGS = Usage("torch_transformer", __doc__, USAGE)
usage_error = ARGS.error


def parse_args(argv):
    """The operation, the shape ROWSxCOLS (each 1..2^24, at most 2^31 elements) and the repeats."""
    ARGS.help_if_asked(argv)
    if len(argv) < 2 or len(argv) > 3:
        usage_error(f"two or three arguments, the operation, the shape and the repeats (got {len(argv)})")
    op, shape = argv[0], argv[1]
    if op not in OPS:
        usage_error(f"'{op[:40]}' is not an operation this script times ({', '.join(OPS)})")
    iters_text = argv[2] if len(argv) > 2 else "20"
    if not iters_text.isdigit() or not 1 <= int(iters_text) <= 100000:
        usage_error(f"the repeats must be 1..100000 (got '{iters_text[:40]}')")
    if op == "adamw":
        if shape != "gpt2":
            usage_error(f"adamw times the model gpt2 (got '{shape[:40]}')")
        return op, 0, 0, int(iters_text)
    if op in ("attention", "attention_backward"):
        return op, attention_shape(shape), 0, int(iters_text)
    parts = shape.split("x")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        usage_error(f"'{shape[:60]}' is not a shape ROWSxCOLS")
    rows, cols = int(parts[0]), int(parts[1])
    if not (1 <= rows <= 1 << 24 and 1 <= cols <= 1 << 24 and rows * cols <= 1 << 31):
        usage_error(f"'{shape[:60]}': each side 1..2^24, at most 2^31 elements")
    return op, rows, cols, int(iters_text)


def attention_shape(text):
    """BxHxSxD[_causal] as (B, H, S, D, causal), the limits of ch11's attention: D 64 or 128,
    S 1..65536, B x H 1..65535."""
    dims, causal = (text[:-7], True) if text.endswith("_causal") else (text, False)
    parts = dims.split("x")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        usage_error(f"'{text[:60]}' is not an attention shape BxHxSxD[_causal]")
    b, h, s, d = (int(p) for p in parts)
    if d not in (64, 128) or not 1 <= s <= 65536 or not 1 <= b * h <= 65535:
        usage_error(f"'{text[:60]}': D must be 64 or 128, S 1..65536, B x H 1..65535")
    return b, h, s, d, causal


def time_attention(torch, shape, iters):
    """F.scaled_dot_product_attention on bf16 (B, H, S, D) tensors, one backend at a time; a
    backend this torch or GPU lacks prints a line saying so instead of its row."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, s, d, causal = shape
    gen = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = ((torch.rand(b, h, s, d, device="cuda", generator=gen) * 4 - 2).to(torch.bfloat16) for _ in range(3))
    size = f"{b}x{h}x{s}x{d}" + ("_causal" if causal else "")
    flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    def fn():
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    for name, backend in (("torch_flash", SDPBackend.FLASH_ATTENTION), ("torch_cudnn", SDPBackend.CUDNN_ATTENTION)):
        with sdpa_kernel(backend):  # entered once: the timed calls are the attention alone
            try:
                fn()
            except RuntimeError as e:
                print(f"torch_transformer: {name} skipped ({str(e).splitlines()[0][:120]})")
                continue
            # eager, and captured once in a CUDA graph: at 8x16x1024x64 a call is ~50 us, where
            # Python's and the dispatcher's share can show; the replay has none of it
            for label, call in ((name, fn), (name + "_graph", torch_common.capture(torch, fn).replay)):
                ms = torch_common.time_ms(torch, call, iters)
                print(f"RESULT prog=attention name={label} size={size} ms={ms:.4f} "
                      f"tflops={flops / (ms * 1e9):.1f} check=none")


def direct_backward(torch, name, q, k, v, d_o, causal):
    """The backend's own backward operator (aten's _scaled_dot_product_{flash,cudnn}_attention_backward)
    on its forward's saved outputs, as a call a CUDA graph can capture: torch.autograd.grad cannot
    be captured here, since autograd runs each backward kernel on its forward's stream. The same
    kernels that autograd.grad launches, without the autograd engine between the calls."""
    aten = torch.ops.aten
    q, k, v = (t.detach() for t in (q, k, v))
    if name == "torch_flash_bwd":
        out, lse, cum_q, cum_k, max_q, max_k, seed, offset = aten._scaled_dot_product_flash_attention(
            q, k, v, 0.0, causal, False)[:8]
        return lambda: aten._scaled_dot_product_flash_attention_backward(
            d_o, q, k, v, out, lse, cum_q, cum_k, max_q, max_k, 0.0, causal, seed, offset)
    out, lse, cum_q, cum_k, max_q, max_k, seed, offset = aten._scaled_dot_product_cudnn_attention(
        q, k, v, None, True, 0.0, causal, False)[:8]
    return lambda: aten._scaled_dot_product_cudnn_attention_backward(
        d_o, q, k, v, out, lse, seed, offset, None, cum_q, cum_k, max_q, max_k, 0.0, causal)


def time_attention_backward(torch, shape, iters):
    """The backward of F.scaled_dot_product_attention alone, one backend at a time: the forward
    once, outside the timing, then the gradients of q, k, v for a fixed dO (torch.autograd.grad,
    the graph kept for the next call); and the backend's backward operator captured in a CUDA
    graph and replayed (direct_backward)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, s, d, causal = shape
    gen = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = ((torch.rand(b, h, s, d, device="cuda", generator=gen) * 4 - 2).to(torch.bfloat16).requires_grad_()
               for _ in range(3))
    d_o = (torch.rand(b, h, s, d, device="cuda", generator=gen) * 2 - 1).to(torch.bfloat16)
    size = f"{b}x{h}x{s}x{d}" + ("_causal" if causal else "")
    flops = 2.5 * 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    for name, backend in (("torch_flash_bwd", SDPBackend.FLASH_ATTENTION),
                          ("torch_cudnn_bwd", SDPBackend.CUDNN_ATTENTION)):
        with sdpa_kernel(backend):
            try:
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                def fn(out=out):
                    return torch.autograd.grad(out, (q, k, v), d_o, retain_graph=True)
                fn()
            except RuntimeError as e:
                print(f"torch_transformer: {name} skipped ({str(e).splitlines()[0][:120]})")
                continue
            calls = [(name, fn)]
            try:
                direct = direct_backward(torch, name, q, k, v, d_o, causal)
                calls.append((name + "_graph", torch_common.capture(torch, direct).replay))
            except (RuntimeError, TypeError) as e:
                print(f"torch_transformer: {name}_graph skipped ({str(e).splitlines()[0][:120]})")
            for label, call in calls:
                ms = torch_common.time_ms(torch, call, iters)
                print(f"RESULT prog=attention_backward name={label} size={size} ms={ms:.4f} "
                      f"tflops={flops / (ms * 1e9):.1f} check=none")


def main():
    op, rows, cols, iters = parse_args(sys.argv[1:])
    torch = torch_common.cuda_torch("torch_transformer")
    if torch is None:
        return 0
    if op == "attention":
        time_attention(torch, rows, iters)
        return 0
    if op == "attention_backward":
        time_attention_backward(torch, rows, iters)
        return 0
    gen = torch.Generator(device="cuda").manual_seed(1)
    if op == "adamw":  # a tensor each, with its gradient, as a model's parameters are
        sizes = gpt2_sizes()
        rows, cols = sum(sizes), 1
        params = [torch.nn.Parameter(torch.rand(n, device="cuda", generator=gen) * 2 - 1) for n in sizes]
        for p in params:
            p.grad = torch.rand(p.numel(), device="cuda", generator=gen) * 2 - 1
        # capturable: the step count and the bias corrections stay on the GPU, so a graph can replay it
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True, capturable=True)
        fn, prog, name, size, moved = opt.step, "adamw", "torch_fused", str(rows), 28 * rows
    else:
        x = (torch.rand(rows, cols, device="cuda", generator=gen) * 20 - 10).float()
        prog, name, size, moved = op, "torch", f"{rows}x{cols}", 2 * rows * cols * 4
        if op == "softmax":
            def fn():
                return torch.softmax(x, dim=-1)
        elif op in ("layernorm", "rmsnorm"):
            gamma = torch.rand(cols, device="cuda", generator=gen) + 0.5
            beta = torch.rand(cols, device="cuda", generator=gen) - 0.5
            if op == "layernorm":
                def fn():
                    return torch.nn.functional.layer_norm(x, (cols,), gamma, beta, 1e-5)
            else:
                prog, name = "layernorm", "torch_rmsnorm"

                def fn():
                    return torch.nn.functional.rms_norm(x, (cols,), gamma, 1e-5)
        else:  # the loss and its backward, as a training step calls them; the gradient is made anew each time
            x.requires_grad_(True)
            y = torch.randint(0, cols, (rows,), device="cuda", generator=gen)

            def fn():
                x.grad = None
                torch.nn.functional.cross_entropy(x, y).backward()
    for label, call in ((name, fn), (name + "_graph", torch_common.capture(torch, fn).replay)):
        ms = torch_common.time_ms(torch, call, iters)
        print(f"RESULT prog={prog} name={label} size={size} ms={ms:.4f} gbps={moved / (ms * 1e6):.1f} check=none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
