#!/usr/bin/env python3
"""bench/torch_gpt.py - PyTorch's side of ch12's GPT: the same model (GPT-2's architecture, the
parameters in the order of ch12_gpt/gpt_cpu.h's gpt_tensor_at, the output layer tied to the
token embedding), trained the way practice has it on PyTorch: bf16 autocast, its fastest
scaled_dot_product_attention, fused AdamW, the gradient clipped to norm 1, eager and under
torch.compile. Prints RESULT lines in the lab book's format, so that `make bench` puts them beside
./gpt's in one run:

    python3 bench/torch_gpt.py speed L,H,C,T,B [V]   a training step on random tokens (V 50257,
                                                     padded to 50304 as ./gpt --synthetic does)
    python3 bench/torch_gpt.py compare CKPT GRADS DATA SEED
                                                     one batch's loss and gradient in fp32 against
                                                     ./gpt --load CKPT --grads GRADS --seed SEED's
    python3 bench/torch_gpt.py train START END DATA SEED B LR WARMUP WD CLIP EVAL_BATCHES fp32|bf16
                                                     ./gpt's training from checkpoint START to END
                                                     again, step for step: the validation losses
                                                     (bf16: within 0.03) and, in fp32, the weights
    python3 bench/torch_gpt.py selftest              the batch generator against ./gpt's (no GPU)

Timed like ./gpt --bench: warm-up steps (and compilation) first, then lb_time_ms's way (calls back
to back to at least 1 ms a sample, the median of 10 samples); tokens/s = B T / the step's time. The generator is common/'s lb_rng (splitmix64, seeded through
lb_rng_seed), written out below: the same seed draws the same batches on both sides.

Runs where python3 has torch with a CUDA GPU; otherwise it says so and exits 0 (skipped).
"""
import sys

from bench_args import Usage

USAGE = ("usage: torch_gpt.py speed L,H,C,T,B [V] | torch_gpt.py compare CKPT GRADS DATA SEED | "
         "torch_gpt.py train START END DATA SEED B LR WARMUP WD CLIP EVAL_BATCHES fp32|bf16 | torch_gpt.py selftest"
         "   (--help says more)")
ARGS = Usage("torch_gpt", __doc__, USAGE)

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def _mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Rng:
    """common/labbook.c's lb_rng: lb_rng_seed mixes the seed into the state; lb_rng_next adds the
    golden gamma and mixes. Rng(state=0) starts from the state itself (the published stream)."""

    def __init__(self, seed=None, state=None):
        self.s = state if state is not None else _mix((seed + GOLDEN) & M64)

    def next(self):
        self.s = (self.s + GOLDEN) & M64
        return _mix(self.s)


def text_tokens(path):
    """ch12's gpt_text_load: the characters, the vocabulary (ascending), the 90% training part"""
    data = open(path, "rb").read()
    chars = sorted(set(data))
    index = {c: i for i, c in enumerate(chars)}
    n = len(data)
    return [index[b] for b in data], chars, n // 10 * 9 + (n % 10) * 9 // 10


def batch(tokens, n_train, validation, B, T, rng):
    """ch12's gpt_batch: sequence b starts at lo + next() % (hi - lo - T) of its part"""
    lo, hi = (n_train, len(tokens)) if validation else (0, n_train)
    inputs, targets = [], []
    for _ in range(B):
        start = lo + rng.next() % (hi - lo - T)
        inputs.append(tokens[start:start + T])
        targets.append(tokens[start + 1:start + T + 1])
    return inputs, targets


def selftest():
    """the generator's published first outputs (tests/test_gpt.c checks lb_rng the same), and a
    batch of a small text drawn as ./gpt draws it"""
    r = Rng(state=0)
    ok = r.next() == 0xE220A8397B1DCDAF and r.next() == 0x6E789E6AA1B965F4
    # 100 tokens 0..99 (90 train), 3 sequences of 4 from seed 7: they start at 21, 6 and 39, as
    # tests/test_gpt.c finds gpt_batch's do
    tokens = list(range(100))
    inputs, targets = batch(tokens, 90, False, 3, 4, Rng(seed=7))
    ok &= [i[0] for i in inputs] == [21, 6, 39] and all(t[:-1] == i[1:] for i, t in zip(inputs, targets))
    print(f"torch_gpt: selftest {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def build_model(torch, L, H, C, T, V, Vp):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.qkv, self.proj = nn.LayerNorm(C), nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.ln2, self.fc, self.fcproj = nn.LayerNorm(C), nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (z.view(b, t, H, C // H).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, C)
            x = x + self.proj(y)
            return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Parameter(torch.empty(Vp, C)), nn.Parameter(torch.empty(T, C))
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(C)

        def forward(self, idx):
            x = self.wte[idx] + self.wpe[: idx.shape[1]]
            for blk in self.blocks:
                x = blk(x)
            return self.lnf(x) @ self.wte[:V].t()  # tied: the embedding's first V rows

        def ordered(self):
            """the parameters in gpt_tensor_at's order (ch12's checkpoint file)"""
            out = [self.wte, self.wpe]
            for b in self.blocks:
                out += [b.ln1.weight, b.ln1.bias, b.qkv.weight, b.qkv.bias, b.proj.weight, b.proj.bias,
                        b.ln2.weight, b.ln2.bias, b.fc.weight, b.fc.bias, b.fcproj.weight, b.fcproj.bias]
            return out + [self.lnf.weight, self.lnf.bias]

    model = GPT().cuda()
    with torch.no_grad():  # GPT-2's initialisation, as ./gpt's
        for name, p in model.named_parameters():
            if p.dim() == 2:
                std = 0.02 / ((2 * L) ** 0.5 if name.endswith(("proj.weight",)) else 1.0)
                p.normal_(0.0, std)
            elif name.endswith("weight"):
                p.fill_(1.0)
            else:
                p.zero_()
    return model


def read_checkpoint(path):
    """ch12's checkpoint (gpt_data.h): the configuration, the vocabulary and the fp32 parameters"""
    import struct
    data = open(path, "rb").read()
    if data[:8] != b"LBGPT01\n":
        ARGS.error(f"{path}: not a checkpoint of ch12's gpt")
    L, H, C, T, V, Vp, moments, _ = struct.unpack_from("<8i", data, 8)
    chars = data[40:40 + V]
    return (L, H, C, T, V, Vp), chars, data[40 + 256 + 8:]


def compare(torch, ckpt, grads_path, text_path, seed):
    """The gradient of one batch in fp32 (no TF32, no autocast) from the checkpoint's parameters,
    against ./gpt's: each tensor within atol of its largest element plus rtol of the element, the
    loss within rtol, where atol and rtol are the check tolerance of the version that wrote the
    file (GPT_CHECK_* of ch12_gpt/gpt_model.h: fp32's 3e-5 and 1e-4, bf16's 5e-2)."""
    import struct
    F = torch.nn.functional
    (L, H, C, T, V, Vp), chars, rest = read_checkpoint(ckpt)
    g = open(grads_path, "rb").read()
    if g[:8] != b"LBGPTGR2":
        ARGS.error(f"{grads_path}: not a gradient file of ./gpt --grads")
    B, Tb, version = struct.unpack_from("<3i", g, 8)
    their_loss, atol, rtol = struct.unpack_from("<3f", g, 20)
    tokens, text_chars, n_train = text_tokens(text_path)
    if bytes(text_chars) != chars:
        ARGS.error(f"{text_path} has another vocabulary than {ckpt}")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = build_model(torch, L, H, C, T, V, Vp)
    params = model.ordered()
    n = sum(p.numel() for p in params)
    flat = torch.frombuffer(bytearray(rest[:4 * n]), dtype=torch.float32)
    theirs = torch.frombuffer(bytearray(g[32:32 + 4 * n]), dtype=torch.float32)
    at = 0
    with torch.no_grad():
        for p in params:
            p.copy_(flat[at:at + p.numel()].view_as(p))
            at += p.numel()
    inputs, targets = batch(tokens, n_train, False, B, Tb, Rng(seed=seed + 1))  # ./gpt's training stream
    idx, tgt = torch.tensor(inputs, device="cuda"), torch.tensor(targets, device="cuda")
    loss = F.cross_entropy(model(idx).view(-1, V), tgt.view(-1))
    loss.backward()
    worst, bad, at = 0.0, 0, 0
    for i, p in enumerate(params):
        mine, their = p.grad.detach().flatten().double().cpu(), theirs[at:at + p.numel()].double()
        at += p.numel()
        largest = mine.abs().max().item()
        err = (mine - their).abs()
        if largest > 0:
            worst = max(worst, err.max().item() / largest)
        misses = int((err > atol * largest + rtol * mine.abs() + 1e-12).sum().item())
        if misses:
            bad += 1
            print(f"torch_gpt: tensor {i} ({tuple(p.shape)}): {misses} of {p.numel()} outside the tolerance")
    loss_ok = abs(loss.item() - their_loss) <= rtol * abs(loss.item())
    print(f"torch_gpt: loss {loss.item():.7f} here, {their_loss:.7f} ./gpt's (version {version}); gradient worst "
          f"{worst:.2g} of a tensor's largest (tolerance {atol:.2g} of it + {rtol:.2g} of the element)")
    check = "PASS" if loss_ok and not bad else "FAIL"
    print(f"RESULT prog=gpt name=torch_compare ver={version} size=L{L}_H{H}_C{C}_T{Tb}_B{B} worst_rel={worst:.3g} check={check}")
    return 0 if check == "PASS" else 1


def schedule(lr, s, warmup, steps):
    """ch12_gpt/gpt.c's learning rate at step s of a run of `steps`: a linear warm-up, then a cosine
    to a tenth"""
    import math
    if s < warmup:
        return lr * (s + 1) / warmup
    progress = (s - warmup) / (steps - warmup) if steps > warmup else 1.0
    return 0.1 * lr + 0.45 * lr * (1.0 + math.cos(math.pi * progress))


def train(torch, start, end, text_path, seed, B, lr, warmup, wd, clip, eval_batches, precision):
    """./gpt's training, step for step, from the checkpoint it started from (START, saved before
    its first step) to the one it saved (END): the same batches (the seed + 1's stream), learning
    rates, clipping by the global norm (the gradient scaled by min(1, clip / norm), as gpt_clip_launch
    does) and AdamW (betas 0.9 and 0.999, eps 1e-8, decay on the matrices: ch11's AdamW). Then both
    models' validation loss, computed here alike (fp32, the seed + 2's batches, as ./gpt draws them),
    and in fp32 mode each tensor's distance from ./gpt's, against how far training moved it."""
    import struct
    F = torch.nn.functional
    (L, H, C, T, V, Vp), chars, rest0 = read_checkpoint(start)
    cfg_end, chars_end, rest1 = read_checkpoint(end)
    if cfg_end != (L, H, C, T, V, Vp) or chars_end != chars:
        ARGS.error(f"{start} and {end} are not the same model")
    step0 = struct.unpack_from("<q", open(start, "rb").read(), 40 + 256)[0]
    steps = struct.unpack_from("<q", open(end, "rb").read(), 40 + 256)[0] - step0
    if step0 != 0 or steps < 1:
        ARGS.error(f"{start} must be saved before the first step and {end} after it (steps {step0} and {step0 + steps})")
    tokens, text_chars, n_train = text_tokens(text_path)
    if bytes(text_chars) != chars:
        ARGS.error(f"{text_path} has another vocabulary than {start}")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    def load(model, rest):
        n = sum(p.numel() for p in model.ordered())
        flat = torch.frombuffer(bytearray(rest[:4 * n]), dtype=torch.float32)
        at = 0
        with torch.no_grad():
            for p in model.ordered():
                p.copy_(flat[at:at + p.numel()].view_as(p))
                at += p.numel()

    def loss_of(model, inputs, targets, autocast):
        idx, tgt = torch.tensor(inputs, device="cuda"), torch.tensor(targets, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            logits = model(idx)
        return F.cross_entropy(logits.float().view(-1, V), tgt.view(-1))

    def validation(model):
        rng, total = Rng(seed=seed + 2), 0.0
        with torch.no_grad():
            for _ in range(eval_batches):
                total += loss_of(model, *batch(tokens, n_train, True, B, T, rng), False).item()
        return total / eval_batches

    model = build_model(torch, L, H, C, T, V, Vp)
    load(model, rest0)
    first = [p.detach().clone() for p in model.ordered()]
    decay = [p for p in model.ordered() if p.dim() == 2]
    plain = [p for p in model.ordered() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": plain, "weight_decay": 0.0}], lr=lr,
                            betas=(0.9, 0.999), eps=1e-8)
    rng = Rng(seed=seed + 1)
    for s in range(steps):
        for group in opt.param_groups:
            group["lr"] = schedule(lr, s, warmup, steps)
        loss = loss_of(model, *batch(tokens, n_train, False, B, T, rng), precision == "bf16")
        loss.backward()
        norm = torch.sqrt(sum((p.grad.float() ** 2).sum() for p in model.parameters()))
        scale = torch.clamp(clip / norm, max=1.0)
        for p in model.parameters():
            p.grad.mul_(scale)
        opt.step()
        opt.zero_grad(set_to_none=True)
    theirs = build_model(torch, L, H, C, T, V, Vp)
    load(theirs, rest1)
    val_here, val_theirs = validation(model), validation(theirs)
    worst = 0.0
    for p, q, p0 in zip(model.ordered(), theirs.ordered(), first):
        moved = (p.detach() - p0).norm().item()
        if moved > 0:
            worst = max(worst, (p.detach() - q.detach()).norm().item() / moved)
    print(f"torch_gpt: {steps} steps ({precision}): validation loss {val_here:.4f} here, {val_theirs:.4f} ./gpt's; "
          f"each tensor's distance from ./gpt's, against how far it moved: worst {worst:.3g}")
    # fp32: the weights themselves agree (distance at most 1% of the way they moved); bf16: the
    # validation losses within 0.03 nats (the bound)
    ok = worst <= 1e-2 if precision == "fp32" else abs(val_here - val_theirs) <= 0.03
    print(f"RESULT prog=gpt name=torch_train_{precision} size=L{L}_H{H}_C{C}_T{T}_B{B} steps={steps} precision={precision} "
          f"val_loss={val_here:.4f} gpt_val_loss={val_theirs:.4f} weights_rel={worst:.3g} check={'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def speed(torch, L, H, C, T, B, V):
    import torch_common
    F = torch.nn.functional
    Vp = (V + 127) // 128 * 128 if V > 256 else V  # as ./gpt --synthetic: 50257 -> 50304
    torch.manual_seed(1)
    size = f"L{L}_H{H}_C{C}_T{T}_B{B}"
    # eager; torch.compile's default (fused kernels, launched one by one); and "reduce-overhead",
    # which also records forward and backward as CUDA graphs: the like of ./gpt's version 7 on
    for name, mode in (("torch", None), ("torch_compile", "default"), ("torch_compile_graphs", "reduce-overhead")):
        model = build_model(torch, L, H, C, T, V, Vp)
        decay = [p for p in model.parameters() if p.dim() == 2]
        plain = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": plain, "weight_decay": 0.0}],
                                lr=3e-4, fused=True)
        idx = torch.randint(0, V, (B, T), device="cuda")
        tgt = torch.randint(0, V, (B, T), device="cuda")
        fwd = torch.compile(model, mode=mode) if mode else model

        def step():
            if mode == "reduce-overhead":
                torch.compiler.cudagraph_mark_step_begin()  # the last step's graph outputs are free
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(fwd(idx).float().view(-1, V), tgt.view(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)

        try:
            for _ in range(3):  # torch.compile compiles here, outside the timing
                step()
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            ms = torch_common.time_ms(torch, step, 10)  # as ./gpt --bench times a step (lb_time_ms)
        except torch.OutOfMemoryError:  # e.g. the graphs' private pools at a large batch: no row
            print(f"{name}: out of GPU memory at {size}, not timed")
            ms = None
        if ms is not None:
            peak = torch.cuda.max_memory_allocated() / 1e9  # the tensors' peak during the timed steps
            print(f"RESULT prog=gpt name={name} size={size} ms={ms:.4f} tokens_s={B * T / (ms * 1e-3):.0f} "
                  f"peak_gb={peak:.2f} check=none")
        del model, opt, fwd, step
        torch._dynamo.reset()  # the compiled graphs and their memory pools go with the model
        torch.cuda.empty_cache()


def main(argv):
    ARGS.help_if_asked(argv)
    if not argv or argv[0] not in ("speed", "compare", "train", "selftest"):
        ARGS.error(f"the first argument is speed, compare, train or selftest (got '{argv[0][:40] if argv else ''}')")
    if argv[0] == "selftest":
        if len(argv) != 1:
            ARGS.error("selftest takes no arguments")
        return selftest()
    if argv[0] == "train":
        if len(argv) != 12 or argv[11] not in ("fp32", "bf16"):
            ARGS.error("train takes START END DATA SEED B LR WARMUP WD CLIP EVAL_BATCHES fp32|bf16")
        try:
            seed, B, warmup, eval_batches = int(argv[4]), int(argv[5]), int(argv[7]), int(argv[10])
            lr, wd, clip = float(argv[6]), float(argv[8]), float(argv[9])
        except ValueError:
            ARGS.error("train: SEED B WARMUP EVAL_BATCHES are integers, LR WD CLIP numbers")
        import torch_common
        torch = torch_common.cuda_torch("torch_gpt")
        return 0 if torch is None else train(torch, argv[1], argv[2], argv[3], seed, B, lr, warmup, wd, clip,
                                             eval_batches, argv[11])
    if argv[0] == "compare":
        if len(argv) != 5 or not argv[4].isdigit():
            ARGS.error("compare takes CKPT GRADS DATA SEED (the seed a number)")
        import torch_common
        torch = torch_common.cuda_torch("torch_gpt")
        return 0 if torch is None else compare(torch, argv[1], argv[2], argv[3], int(argv[4]))
    if len(argv) not in (2, 3):
        ARGS.error("speed takes L,H,C,T,B and an optional vocabulary")
    try:
        L, H, C, T, B = (int(v) for v in argv[1].split(","))
        V = int(argv[2]) if len(argv) > 2 else 50257
    except ValueError:
        ARGS.error(f"'{argv[1][:40]}' is not L,H,C,T,B (five positive integers)")
    if min(L, H, C, T, B, V) < 1 or C % H:
        ARGS.error(f"L, H, C, T, B and V must be positive and H must divide C (got {argv[1][:40]})")
    import torch_common
    torch = torch_common.cuda_torch("torch_gpt")
    if torch is None:
        return 0
    speed(torch, L, H, C, T, B, V)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
