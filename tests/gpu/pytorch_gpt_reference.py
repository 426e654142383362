"""PyTorch reference for the GPU check: a GPT trained on synthetic tokens, bf16 mixed precision (fp32
master weights, bf16 autocast, fused AdamW), eager or torch.compile, on the one GPU of this machine
(or, with --device cpu, on the CPU: the GPU check's smoke run of its own steps). --compile compiles
each transformer block (regional compilation).

Prints one JSON line: tokens/s (median step after the warm-up), model TFLOP/s (Megatron's formula,
72·b·s·L·h²·(1 + s/(6h) + V/(12hL)) per step), MFU against the given peak, and peak memory allocated /
reserved by the CUDA caching allocator (0 on the CPU), and the median step split into the forward with
the loss, the backward and the rest (clipping, AdamW), timed by CUDA events. Exits 77 (not run) on CUDA without a GPU.
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.norm2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)

    def forward(self, x):  # [b, s, h]
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.word = nn.Embedding(a.vocab, a.hidden)
        self.pos = nn.Embedding(a.seq, a.hidden)
        self.blocks = nn.ModuleList(Block(a.hidden, a.heads) for _ in range(a.layers))
        self.norm = nn.LayerNorm(a.hidden)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, tokens):
        x = self.word(tokens) + self.pos.weight[: tokens.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return F.linear(self.norm(x), self.word.weight)  # tied


class Mark:
    """A point in the step: a CUDA event on the current stream (no synchronisation), or the host clock."""

    def __init__(self, cuda):
        self.event = torch.cuda.Event(enable_timing=True) if cuda else None
        if self.event is not None:
            self.event.record()
        self.host_s = time.perf_counter()

    def seconds_to(self, later):  # after the step's synchronisation
        if self.event is not None:
            return self.event.elapsed_time(later.event) / 1e3
        return later.host_s - self.host_s


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--peak-tflops", type=float, default=989.0)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    a = p.parse_args()
    if a.warmup >= a.steps:
        p.error(f"--warmup ({a.warmup}) must be below --steps ({a.steps})")
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("not run: no CUDA GPU", file=sys.stderr)
        return 77
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    with torch.device(a.device):  # initialised where it trains: 1.3B weights took ~19 s on the CPU
        model = GPT(a)
    params = sum(p.numel() for p in model.parameters())
    if a.compile:
        # Regional compilation (PyTorch's recipe for a stack of identical blocks): each block is compiled
        # in place and all of them share the first one's code, so compiling costs about one block, not
        # the whole model traced as one graph; the embeddings, the final norm and the head stay eager.
        for blk in model.blocks:
            blk.compile()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    g = torch.Generator(device=a.device).manual_seed(1)
    times, phases = [], []  # phases: (forward and loss, backward, the rest) of each measured step, seconds
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    for step in range(a.steps):
        tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), device=a.device, generator=g)
        sync()
        t0 = time.perf_counter()
        marks = [Mark(cuda)]
        with torch.autocast(a.device, dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, a.vocab), tokens[:, 1:].reshape(-1))
        marks.append(Mark(cuda))
        loss.backward()
        marks.append(Mark(cuda))
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        marks.append(Mark(cuda))
        sync()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
            phases.append([marks[i].seconds_to(marks[i + 1]) for i in range(3)])
    step_s = statistics.median(times)
    final_loss = loss.item()
    b, s, L, h, V = a.batch, a.seq, a.layers, a.hidden, a.vocab
    flops = 72 * b * s * L * h * h * (1 + s / (6 * h) + V / (12 * h * L))
    tflops = flops / step_s / 1e12
    print(json.dumps({
        "impl": "pytorch-compile" if a.compile else "pytorch-eager", "params": params,
        "tokens_per_s": b * s / step_s, "model_tflops": tflops, "mfu": tflops / a.peak_tflops,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated() if cuda else 0,
        "peak_reserved_bytes": torch.cuda.max_memory_reserved() if cuda else 0,
        "forward_ms": 1e3 * statistics.median(p[0] for p in phases),
        "backward_ms": 1e3 * statistics.median(p[1] for p in phases),
        "rest_ms": 1e3 * statistics.median(p[2] for p in phases), "step_ms": 1e3 * step_s,
        "final_loss": final_loss, "loss_finite": math.isfinite(final_loss),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
