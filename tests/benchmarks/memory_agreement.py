#!/usr/bin/env python3
"""Memory agreement table: peak bytes per rank measured by tessera-train's counting allocator against
the planner's `tessera` memory profile for that rank's pipeline stage (docs/runtime.md, "Memory
against the planner"). The same panel as the CTest test tests/runtime/test_memory_agreement.cpp;
this script prints every term of the prediction for investigation.

    .venv/bin/python tests/benchmarks/memory_agreement.py --build build [--only NAME] [--steps 2]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# name, preset, layout overrides (parallel / training fields)
PANEL = [
    ("gpt single", "tiny-gpt", {}),
    ("gpt tp2", "tiny-gpt", {"tp": 2}),
    ("gpt tp2 sp", "tiny-gpt", {"tp": 2, "sequence_parallel": True}),
    ("gpt pp2 1f1b", "tiny-gpt", {"pp": 2}),
    ("gpt pp2 gpipe", "tiny-gpt", {"pp": 2, "schedule": "gpipe"}),
    ("gpt dp2 distopt", "tiny-gpt", {"dp": 2, "distributed_optimizer": True}),
    ("gpt full recompute", "tiny-gpt", {"recompute": "full"}),
    ("gpt selective recompute", "tiny-gpt", {"recompute": "selective"}),
    ("llama single", "tiny-llama", {}),
    ("llama tp2 sp", "tiny-llama", {"tp": 2, "sequence_parallel": True}),
    ("llama pp2 interleaved", "tiny-llama", {"pp": 2, "vpp": 2, "schedule": "interleaved"}),
    ("llama full recompute", "tiny-llama", {"recompute": "full"}),
]

PARALLEL_KEYS = {"tp", "pp", "dp", "vpp", "sequence_parallel", "schedule", "distributed_optimizer"}


def make_spec(preset, overrides, micro_batch, global_batch, steps):
    parallel = {"tp": 1, "pp": 1, "dp": 1, "vpp": 1, "sequence_parallel": False, "schedule": "1f1b",
                "distributed_optimizer": False}
    training = {"micro_batch_size": micro_batch, "global_batch_size": global_batch, "precision": "fp32",
                "recompute": "none", "flash_attention": False, "train_steps": steps, "lr": 0.003,
                "min_lr": 0.0003, "warmup_steps": 1, "seed": 1234}
    for key, value in overrides.items():
        (parallel if key in PARALLEL_KEYS else training)[key] = value
    world = parallel["tp"] * parallel["pp"] * parallel["dp"]
    return {"name": preset + " memory", "model": {"preset": preset}, "parallel": parallel, "training": training,
            "cluster": {"gpu": "cpu", "nodes": 1, "gpus_per_node": world}}, parallel


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--global-batch", type=int, default=16)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    train = os.path.join(args.build, "runtime", "tessera-train")
    cli = os.path.join(args.build, "app", "tessera-cli")
    print(f"{'layout':26} {'stage':>5} {'predicted':>10} {'measured':>10} {'ratio':>6}   terms (w g o act buf, bytes)")
    for name, preset, overrides in PANEL:
        if args.only and args.only not in name:
            continue
        spec, parallel = make_spec(preset, overrides, args.micro_batch, args.global_batch, args.steps)
        with tempfile.TemporaryDirectory() as tmp:
            spec_path = os.path.join(tmp, "spec.json")
            with open(spec_path, "w") as f:
                json.dump(spec, f)
            plan = json.loads(subprocess.run([cli, "plan", spec_path, "--json", "--memory-profile", "tessera"],
                                             check=True, capture_output=True, text=True).stdout)
            world = parallel["tp"] * parallel["pp"] * parallel["dp"]
            out = os.path.join(tmp, "out")
            run = subprocess.run([train, "--spec", spec_path, "--nproc", str(world), "--steps", str(args.steps),
                                  "--data", "synthetic", "--threads", "1", "--out", out],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{name}: tessera-train failed\n{run.stderr}", file=sys.stderr)
                continue
            peak = {}
            with open(os.path.join(out, "metrics.jsonl")) as f:
                for line in f:
                    record = json.loads(line)
                    if record.get("type") == "step":
                        peak[record["rank"]] = max(peak.get(record["rank"], 0), record["peak_memory_bytes"])
        stages = plan["memory"]["stages"]
        # rank -> stage: Megatron order, tp innermost, then dp, pp outermost.
        per_stage = parallel["tp"] * parallel["dp"]
        for stage in stages:
            s = stage["stage"]
            ranks = [r for r in peak if r // per_stage == s]
            measured = max(peak[r] for r in ranks)
            predicted = (stage["weights_bytes"] + stage["gradients_bytes"] + stage["optimizer_bytes"] +
                         stage["activations_bytes"] + stage["buffers_bytes"])
            terms = " ".join(str(stage[k]) for k in ("weights_bytes", "gradients_bytes", "optimizer_bytes",
                                                     "activations_bytes", "buffers_bytes"))
            print(f"{name:26} {s:5d} {predicted/1e6:9.3f}M {measured/1e6:9.3f}M {measured/predicted:6.3f}   {terms}",
                  flush=True)


if __name__ == "__main__":
    main()
