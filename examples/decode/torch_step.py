#!/usr/bin/env python3
"""One configuration of torch_decode.py's model replayed from a CUDA graph, for
scripts/decode-kernel-sum.sh: the step's median wall time over timed replays, and, with
--profile-step, one replay between torch.cuda.profiler.start() and stop() (cudaProfilerStart/Stop),
so that `ncu --profile-from-start off` collects the kernels of exactly one step. Prints one JSON line.

    python3 examples/decode/torch_step.py --batch 1 --context 512 [--layers 32] [--steps 60] [--profile-step]
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_decode as td  # noqa: E402  (the model, the formula and the timing of the comparison)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--profile-step", action="store_true")
    args = ap.parse_args()
    if args.batch < 1 or args.context < 1 or args.layers < 1 or args.steps < 1 or args.warmup < 0:
        sys.exit("torch_step.py: --batch, --context, --layers and --steps must be positive")
    if not torch.cuda.is_available():
        sys.exit("torch_step.py: no CUDA device")
    dev = torch.device("cuda")
    cfg = td.Config(layers=args.layers)
    with torch.inference_mode():
        model = td.Decoder(cfg, dev, args.context + 1)
        pos = torch.tensor([args.context], dtype=torch.int64, device=dev)
        x = td.formula_tensor((args.batch, cfg.hidden), td.unit_formula(td.INPUT_LAYER, td.ATTN_NORM), dev)
        kcs = [td.formula_cache(args.batch, cfg.kv_heads, args.context, td.unit_formula(l, td.K_CACHE), dev) for l in range(args.layers)]
        vcs = [td.formula_cache(args.batch, cfg.kv_heads, args.context, td.unit_formula(l, td.V_CACHE), dev) for l in range(args.layers)]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(x, pos, kcs, vcs, args.layers)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = model(x, pos, kcs, vcs, args.layers)
        for _ in range(args.warmup):
            graph.replay()
            torch.cuda.synchronize()
        if args.profile_step:
            torch.cuda.profiler.start()
            graph.replay()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        samples = td.time_steps(args.steps, graph.replay)
        finite = bool(torch.isfinite(out).all().item())
    st = td.stats([s["wall_ms"] for s in samples])
    print(json.dumps({"side": "torch", "batch": args.batch, "context": args.context, "layers": args.layers,
                      "steps": args.steps, "median_ms": st["median"], "p99_ms": st["p99"], "finite": finite}))


if __name__ == "__main__":
    main()
