#!/usr/bin/env python3
"""Benchmark: tessera-train (1 rank) against an equivalent PyTorch eager training loop using the same
torch (so the same kernels), the same GPT, threads and batch; and tessera-train DP=2 against DP=1 with
one thread per rank. Prints tokens/s of each and the ratios, all measured in this run.

    .venv/bin/python tests/benchmarks/runtime_vs_pytorch.py --tessera-train build/runtime/tessera-train
        [--layers 6 --hidden 512 --heads 8 --seq 256 --batch 4 --steps 12 --threads 2]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def spec(args, dp):
    return {
        "name": "benchmark",
        "model": {"arch": "gpt", "num_layers": args.layers, "hidden_size": args.hidden,
                  "num_attention_heads": args.heads, "ffn_hidden_size": 4 * args.hidden, "vocab_size": args.vocab,
                  "seq_length": args.seq, "normalization": "layernorm", "activation": "gelu",
                  "position_embedding": "learned", "tie_embeddings": True},
        "parallel": {"tp": 1, "pp": 1, "dp": dp},
        "training": {"micro_batch_size": args.batch // dp, "global_batch_size": args.batch, "precision": "fp32",
                     "recompute": "none", "flash_attention": False, "train_steps": args.steps, "lr": 3e-4,
                     "min_lr": 3e-4, "warmup_steps": 0, "weight_decay": 0.1, "grad_clip": 1.0, "seed": 1234},
        "cluster": {"gpu": "cpu", "nodes": 1, "gpus_per_node": dp},
    }


def tessera_tokens_per_s(args, dp, threads):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "spec.json")
        with open(path, "w") as f:
            json.dump(spec(args, dp), f)
        cmd = [args.tessera_train, "--spec", path, "--out", d, "--data", "synthetic", "--threads", str(threads)]
        if dp > 1:
            cmd += ["--nproc", str(dp)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times = [r["step_time_s"] for r in map(json.loads, open(os.path.join(d, "metrics.jsonl")))
                 if r["type"] == "step" and r["rank"] == 0 and r["step"] > args.warmup]
    return args.batch * args.seq / statistics.median(times)


class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x):  # [s, b, h], as tessera-train
        s, b, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(h, -1)
        q, k, v = (t.reshape(s, b, self.heads, h // self.heads).permute(1, 2, 0, 3) for t in (q, k, v))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True).permute(2, 0, 1, 3).reshape(s, b, h)
        x = x + self.proj(o)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.wte = nn.Embedding(args.vocab, args.hidden)
        self.wpe = nn.Embedding(args.seq, args.hidden)
        self.blocks = nn.ModuleList(Block(args.hidden, args.heads) for _ in range(args.layers))
        self.norm = nn.LayerNorm(args.hidden)

    def forward(self, tokens):  # [s, b]
        x = self.wte(tokens) + self.wpe.weight[: tokens.shape[0]].unsqueeze(1)
        for block in self.blocks:
            x = block(x)
        return self.norm(x) @ self.wte.weight.t()


def pytorch_tokens_per_s(args, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(1234)
    model = GPT(args)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
    times, losses = [], []
    for step in range(args.steps):
        start = time.perf_counter()
        data = torch.randint(0, args.vocab, (args.seq + 1, args.batch))
        logits = model(data[:-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), data[1:].reshape(-1))
        opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        times.append(time.perf_counter() - start)
    assert all(math.isfinite(l) for l in losses)
    return args.batch * args.seq / statistics.median(times[args.warmup:])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tessera-train", required=True)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--repeats", type=int, default=1,
                   help="alternate ours and the reference this many times; ratios are medians of the pairs "
                        "(on a shared machine the load drifts between two consecutive runs)")
    args = p.parse_args()

    print(f"GPT {args.layers} layers, hidden {args.hidden}, seq {args.seq}, batch {args.batch}, "
          f"{args.threads} threads, fp32, torch {torch.__version__}")
    ratios, scalings = [], []
    for repeat in range(args.repeats):
        ours = tessera_tokens_per_s(args, 1, args.threads)
        reference = pytorch_tokens_per_s(args, args.threads)
        ratios.append(ours / reference)
        print(f"[{repeat + 1}] tessera-train (1 rank):  {ours:10.0f} tokens/s")
        print(f"[{repeat + 1}] PyTorch eager:           {reference:10.0f} tokens/s")
        print(f"[{repeat + 1}] ratio tessera/PyTorch:   {ours / reference:10.3f}")
    for repeat in range(args.repeats):
        dp1 = tessera_tokens_per_s(args, 1, 1)
        dp2 = tessera_tokens_per_s(args, 2, 1)
        scalings.append(dp2 / dp1)
        print(f"[{repeat + 1}] tessera-train DP=1, 1 thread:          {dp1:10.0f} tokens/s")
        print(f"[{repeat + 1}] tessera-train DP=2, 1 thread per rank: {dp2:10.0f} tokens/s")
    print(f"ratio tessera/PyTorch (median of {args.repeats}): {statistics.median(ratios):.3f}")
    print(f"DP scaling DP=2/DP=1 (median of {args.repeats}):  {statistics.median(scalings):.3f}")
    if not all(r > 0 for r in ratios + scalings):
        sys.exit(1)


if __name__ == "__main__":
    main()
