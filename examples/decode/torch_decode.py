#!/usr/bin/env python3
"""The PyTorch side of the decode comparison (issue 45), and the comparison itself.

The same model as ordo-decode (examples/decode): Llama-3-8B layer shapes, fp16 weights and KV cache
from the same hash formula (integer tensor ops here, bit-identical to ordo's GPU fill), fused QKV
and gate/up weights, a decode step per token from hidden states to the final RMSNorm. Written as
PyTorch model code is (HF Llama's RMSNorm, rotate-half rotary, F.scaled_dot_product_attention with
GQA, F.silu), timed eager, as one CUDA graph a configuration (torch.cuda.CUDAGraph, static
buffers) and through torch.compile(mode="reduce-overhead") within a time budget.

One command on the GPU host, after ordo-decode wrote its folder (default decode-run):

    python3 examples/decode/torch_decode.py --ordo decode-run

prints markdown tables (PyTorch's figures, the correctness comparison with ordo's outputs, the
side-by-side figures and the targets) and writes decode-run/torch.json and decode-run/compare.json.
No network: everything is generated on the GPU.
"""

import argparse
import json
import math
import os
import statistics
import struct
import sys
import time

import torch
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------------
# The model's shapes (ModelConfig::llama3_8b in examples/decode/src/config.rs).

HEAD_DIM = 128
FORMULA_POSITIONS = 4096  # the cache's index in the formula: ((b * kv + g) * 4096 + p) * 128 + d
FINAL_NORM_LAYER = 1000
INPUT_LAYER = 1001
# Tensor ids in the seed (formula::Tensor).
ATTN_NORM, QKV, O, FFN_NORM, GATE_UP, DOWN, K_CACHE, V_CACHE = range(8)

CATEGORIES = [
    "attn_norm",
    "qkv_gemm",
    "rope_kv",
    "attention",
    "o_gemm_residual",
    "ffn_norm",
    "gate_up_gemm",
    "silu_mul",
    "down_gemm_residual",
    "final_norm",
]


class Config:
    def __init__(self, hidden=4096, heads=32, kv_heads=8, ffn=14336, layers=32, eps=1e-5, theta=500000.0):
        self.hidden, self.heads, self.kv_heads, self.ffn, self.layers = hidden, heads, kv_heads, ffn, layers
        self.eps, self.theta, self.head_dim = eps, theta, HEAD_DIM
        assert hidden == heads * HEAD_DIM and heads % kv_heads == 0

    @property
    def qkv_dim(self):
        return (self.heads + 2 * self.kv_heads) * HEAD_DIM


# ---------------------------------------------------------------------------------------------
# The formula (examples/decode/src/formula.rs): element i of a tensor with seed s is
# fp16(fp32(k) * c + offset), each operation rounded to nearest even, k = (hash32(i ^ s) >> 8) - 2^23.

M32 = 0xFFFFFFFF


def hash32_int(x):
    """lowbias32 on a Python int."""
    x &= M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & M32
    x ^= x >> 16
    return x


def mul32(x, c):
    """(x * c) mod 2^32 for an int64 tensor x in [0, 2^32) and a constant c < 2^32, without int64
    overflow: c split in 16-bit halves."""
    lo, hi = c & 0xFFFF, c >> 16
    return (x * lo + (((x * hi) & 0xFFFF) << 16)) & M32


def hash32(x):
    """lowbias32 on an int64 tensor of values in [0, 2^32)."""
    x = x ^ (x >> 16)
    x = mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = mul32(x, 0x846CA68B)
    x = x ^ (x >> 16)
    return x


def seed(layer, tensor):
    return hash32_int(layer * 16 + tensor + 1)


def f32(x):
    """x rounded to float32 (as a Python float)."""
    return struct.unpack("f", struct.pack("f", x))[0]


UNIT = 2.0**-23


def linear_formula(layer, tensor, fan_in):
    return seed(layer, tensor), f32(1.0 / math.sqrt(fan_in)) * UNIT, 0.0


def norm_formula(layer, tensor):
    return seed(layer, tensor), 0.25 * UNIT, 1.0


def unit_formula(layer, tensor):
    return seed(layer, tensor), UNIT, 0.0


def formula_values(index, formula):
    """fp16 values of the formula at the int64 tensor `index` (indices below 2^32)."""
    s, c, offset = formula
    k = (hash32(index ^ s) >> 8) - 8388608
    v = k.to(torch.float32) * c
    v = v + offset
    return v.to(torch.float16)


def formula_tensor(shape, formula, device, chunk=1 << 24):
    """A tensor of `shape`, element i (row-major) from the formula; generated in chunks."""
    n = math.prod(shape)
    out = torch.empty(n, dtype=torch.float16, device=device)
    for start in range(0, n, chunk):
        end = min(n, start + chunk)
        out[start:end] = formula_values(torch.arange(start, end, dtype=torch.int64, device=device), formula)
    return out.view(shape)


def formula_cache(batch, kv_heads, context, formula, device):
    """A cache [batch, kv_heads, context + 1, 128]: positions < context from the formula (the
    index ((b * kv + g) * 4096 + p) * 128 + d), the last position zero (the step writes it)."""
    cache = torch.zeros(batch, kv_heads, context + 1, HEAD_DIM, dtype=torch.float16, device=device)
    if context == 0:
        return cache
    rows = cache.view(batch * kv_heads, context + 1, HEAD_DIM)
    p = torch.arange(context, dtype=torch.int64, device=device).view(1, context, 1)
    d = torch.arange(HEAD_DIM, dtype=torch.int64, device=device).view(1, 1, HEAD_DIM)
    step = max(1, (1 << 24) // (context * HEAD_DIM))  # rows at a time: bounded temporaries
    for r0 in range(0, batch * kv_heads, step):
        r = torch.arange(r0, min(r0 + step, batch * kv_heads), dtype=torch.int64, device=device).view(-1, 1, 1)
        rows[r0 : r0 + r.shape[0], :context] = formula_values((r * FORMULA_POSITIONS + p) * HEAD_DIM + d, formula)
    return cache


def rope_table(cfg, positions):
    """(cos, sin) [positions, 64] as float32: computed in float64 with Python's math, as ordo's
    config::rope_table computes it."""
    half = cfg.head_dim // 2
    inv_freq = [1.0 / cfg.theta ** ((2 * i) / cfg.head_dim) for i in range(half)]
    cos = [[math.cos(p * f) for f in inv_freq] for p in range(positions)]
    sin = [[math.sin(p * f) for f in inv_freq] for p in range(positions)]
    return torch.tensor(cos, dtype=torch.float32), torch.tensor(sin, dtype=torch.float32)


# ---------------------------------------------------------------------------------------------
# The model, as PyTorch model code writes it.


def rms_norm(x, w, eps):
    """HF Llama's LlamaRMSNorm."""
    xf = x.to(torch.float32)
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * xf.to(x.dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def no_mark(_name):
    pass


class Decoder(torch.nn.Module):
    """Weights as buffers (static addresses for CUDA graphs and torch.compile)."""

    def __init__(self, cfg, device, max_positions):
        super().__init__()
        self.cfg = cfg
        h, f = cfg.hidden, cfg.ffn
        for l in range(cfg.layers):
            self.register_buffer(f"attn_norm{l}", formula_tensor((h,), norm_formula(l, ATTN_NORM), device))
            self.register_buffer(f"qkv{l}", formula_tensor((cfg.qkv_dim, h), linear_formula(l, QKV, h), device))
            self.register_buffer(f"o{l}", formula_tensor((h, h), linear_formula(l, O, h), device))
            self.register_buffer(f"ffn_norm{l}", formula_tensor((h,), norm_formula(l, FFN_NORM), device))
            self.register_buffer(f"gate_up{l}", formula_tensor((2 * f, h), linear_formula(l, GATE_UP, h), device))
            self.register_buffer(f"down{l}", formula_tensor((h, f), linear_formula(l, DOWN, f), device))
        self.register_buffer("final_norm", formula_tensor((h,), norm_formula(FINAL_NORM_LAYER, ATTN_NORM), device))
        cos, sin = rope_table(cfg, max_positions)
        # HF's layout: the 64 frequencies twice, for rotate_half.
        self.register_buffer("cos", torch.cat((cos, cos), dim=-1).to(device))
        self.register_buffer("sin", torch.cat((sin, sin), dim=-1).to(device))
        self.gqa = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")

    def w(self, name, l):
        return getattr(self, f"{name}{l}")

    def rope(self, pos):
        """cos, sin of the step's position, [1, 1, 1, 128] in the model's dtype."""
        return (
            self.cos.index_select(0, pos).to(torch.float16).view(1, 1, 1, HEAD_DIM),
            self.sin.index_select(0, pos).to(torch.float16).view(1, 1, 1, HEAD_DIM),
        )

    def layer(self, l, h, pos, cos, sin, kc, vc, mark=no_mark):
        cfg = self.cfg
        b = h.shape[0]
        xn = rms_norm(h, self.w("attn_norm", l), cfg.eps)
        mark("attn_norm")
        qkv = F.linear(xn, self.w("qkv", l))
        mark("qkv_gemm")
        q, k, v = qkv.split([cfg.hidden, cfg.kv_heads * HEAD_DIM, cfg.kv_heads * HEAD_DIM], dim=-1)
        q = q.view(b, 1, cfg.heads, HEAD_DIM).transpose(1, 2)
        k = k.view(b, 1, cfg.kv_heads, HEAD_DIM).transpose(1, 2)
        v = v.view(b, 1, cfg.kv_heads, HEAD_DIM).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        kc.index_copy_(2, pos, k)
        vc.index_copy_(2, pos, v)
        mark("rope_kv")
        if self.gqa:
            o = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
        else:
            group = cfg.heads // cfg.kv_heads
            o = F.scaled_dot_product_attention(
                q, kc.repeat_interleave(group, dim=1), vc.repeat_interleave(group, dim=1)
            )
        mark("attention")
        o = o.transpose(1, 2).reshape(b, cfg.hidden)
        h = h + F.linear(o, self.w("o", l))
        mark("o_gemm_residual")
        xn = rms_norm(h, self.w("ffn_norm", l), cfg.eps)
        mark("ffn_norm")
        gu = F.linear(xn, self.w("gate_up", l))
        mark("gate_up_gemm")
        g, u = gu.chunk(2, dim=-1)
        a = F.silu(g) * u
        mark("silu_mul")
        h = h + F.linear(a, self.w("down", l))
        mark("down_gemm_residual")
        return h

    def forward(self, x, pos, kcs, vcs, layers: int):
        cos, sin = self.rope(pos)
        h = x
        for l in range(layers):
            h = self.layer(l, h, pos, cos, sin, kcs[l], vcs[l])
        return rms_norm(h, self.final_norm, self.cfg.eps)


# ---------------------------------------------------------------------------------------------
# Measuring (the same definitions as ordo-decode's measure.rs).


def stats(values):
    v = sorted(values)
    if not v:
        return {"median": float("nan"), "p99": float("nan"), "mean": float("nan")}
    rank = min(max(math.ceil(0.99 * len(v)), 1), len(v))
    return {"median": statistics.median(v), "p99": v[rank - 1], "mean": sum(v) / len(v)}


def time_steps(steps, enqueue):
    """Each step timed alone: wall to the synchronise's return, host enqueue, thread CPU time."""
    out = []
    for _ in range(steps):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        enqueue()
        t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        torch.cuda.synchronize()
        t2 = time.perf_counter_ns()
        out.append({"wall_ms": (t2 - t0) / 1e6, "enqueue_ms": (t1 - t0) / 1e6, "cpu_ms": (c1 - c0) / 1e6})
    return out


SPIN_CYCLES = 4_000_000  # ~2 ms at the H200's clock: longer than the host takes to enqueue a layer


def profile(model, x, pos, kcs, vcs, layers, passes=3):
    """The step's GPU time as ordo-decode's profile measures it, the median of `passes`: each
    layer (and the rotary gather before them, and the final norm) enqueued behind a spin kernel
    (torch.cuda._sleep). Returns (each category's time with an event after each operation, us a
    step; the busy time with events around each layer only, us)."""
    events = [torch.cuda.Event(enable_timing=True) for _ in range(16)]
    series = {c: [] for c in CATEGORIES}
    busy = []
    for _ in range(passes):
        total = 0.0
        torch.cuda._sleep(SPIN_CYCLES)
        events[0].record()
        cos, sin = model.rope(pos)
        events[1].record()
        torch.cuda.synchronize()
        total += events[0].elapsed_time(events[1]) * 1e3
        h = x
        for l in range(layers + 1):
            torch.cuda._sleep(SPIN_CYCLES)
            events[0].record()
            if l < layers:
                h = model.layer(l, h, pos, cos, sin, kcs[l], vcs[l])
            else:
                rms_norm(h, model.final_norm, model.cfg.eps)
            events[1].record()
            torch.cuda.synchronize()
            total += events[0].elapsed_time(events[1]) * 1e3
        busy.append(total)
    for _ in range(passes):
        totals = {c: 0.0 for c in CATEGORIES}

        def chunk(body):
            marks = []

            def mark(name):
                events[len(marks) + 1].record()
                marks.append(name)

            torch.cuda._sleep(SPIN_CYCLES)
            events[0].record()
            result = body(mark)
            torch.cuda.synchronize()
            for k, name in enumerate(marks):
                totals[name] += events[k].elapsed_time(events[k + 1]) * 1e3
            return result

        def prep(mark):
            r = model.rope(pos)
            mark("rope_kv")
            return r

        cos, sin = chunk(prep)
        h = x
        for l in range(layers):
            h = chunk(lambda mark, l=l, h=h: model.layer(l, h, pos, cos, sin, kcs[l], vcs[l], mark))

        def final(mark, h=h):
            out = rms_norm(h, model.final_norm, model.cfg.eps)
            mark("final_norm")
            return out

        chunk(final)
        for c in CATEGORIES:
            series[c].append(totals[c])
    return {c: statistics.median(v) for c, v in series.items()}, statistics.median(busy)


def kernel_names_and_sum(fn, steps=3):
    """torch.profiler over `steps` calls of fn: the GPU kernel time a step (CUPTI) and the kernels
    that took the most. An auxiliary figure; None where the profiler fails."""
    try:
        from torch.profiler import ProfilerActivity, profile as tprofile

        with tprofile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                fn()
            torch.cuda.synchronize()
        rows = []
        for e in prof.key_averages():
            t = getattr(e, "self_device_time_total", None)
            if t is None:
                t = getattr(e, "self_cuda_time_total", 0.0)
            if t > 0:
                rows.append((e.key, t / steps, e.count // steps))
        rows.sort(key=lambda r: -r[1])
        return {
            "kernel_us_per_step": sum(r[1] for r in rows),
            "kernels_per_step": sum(r[2] for r in rows),
            "top": [{"name": n[:120], "us_per_step": t, "count": c} for n, t, c in rows[:8]],
        }
    except Exception as e:  # noqa: BLE001 (an auxiliary figure: report why, go on)
        return {"error": f"{type(e).__name__}: {e}"}


def loaded_cublas():
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and "libcublas.so" in parts[5]:
                    return parts[5]
    except OSError:
        pass
    return None


def result_row(batch, context, mode, samples, busy_ms, ops_ms):
    wall = stats([s["wall_ms"] for s in samples])
    enq = stats([s["enqueue_ms"] for s in samples])
    cpu = stats([s["cpu_ms"] for s in samples])
    return {
        "batch": batch,
        "context": context,
        "mode": mode,
        "median_ms": wall["median"],
        "p99_ms": wall["p99"],
        "mean_ms": wall["mean"],
        "tokens_per_s": batch / (wall["median"] / 1e3),
        "host_enqueue_ms": enq["median"],
        "host_cpu_ms": cpu["median"],
        "gpu_busy_ms": busy_ms,
        "gpu_ops_ms": ops_ms,
        "overhead_ms": wall["median"] - busy_ms,
        "steps": len(samples),
        "samples_ms": [s["wall_ms"] for s in samples],
    }


def compare_outputs(ours, theirs, atol, rtol):
    d = (ours.float() - theirs.float()).abs()
    ref = theirs.float().abs()
    return {
        "max_abs": d.max().item(),
        "mean_abs": d.mean().item(),
        "max_rel": (d / ref.clamp_min(1e-3)).max().item(),
        "pass": bool((d <= atol + rtol * ref).all().item()),
    }


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ordo", default="decode-run", help="ordo-decode's output folder (read; torch.json written there)")
    ap.add_argument("--layers", type=int, default=None, help="layers timed (default: ordo.json's, else 32)")
    ap.add_argument("--check-layers", type=int, default=None, help="layers compared (default: ordo.json's, else 2)")
    ap.add_argument("--batches", default=None, help="default: ordo.json's, else 1,8,32")
    ap.add_argument("--contexts", default=None, help="default: ordo.json's, else 512,2048")
    ap.add_argument("--steps", type=int, default=None, help="timed steps a configuration and mode (default: ordo's)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--compile-budget-s", type=float, default=100.0,
                    help="wall seconds torch.compile may take in all: a compile predicted to pass it is skipped "
                    "(the first always runs; 0: no torch.compile)")
    ap.add_argument("--atol", type=float, default=2e-2)
    ap.add_argument("--rtol", type=float, default=2e-2)
    args = ap.parse_args()

    started = time.perf_counter()
    if not torch.cuda.is_available():
        sys.exit("torch_decode.py: no CUDA device")
    dev = torch.device("cuda")
    ordo = None
    ordo_path = os.path.join(args.ordo, "ordo.json")
    if os.path.exists(ordo_path):
        with open(ordo_path) as f:
            ordo = json.load(f)
    else:
        print(f"(no {ordo_path}: PyTorch's figures only, no comparison)")
    om = (ordo or {}).get("model", {})
    osettings = (ordo or {}).get("settings", {})
    layers = args.layers or om.get("layers", 32)
    check_layers = args.check_layers or om.get("check_layers", 2)
    steps = args.steps or osettings.get("steps", 60)
    ordo_cfgs = sorted({(r["batch"], r["context"]) for r in (ordo or {}).get("results", [])})
    batches = [int(x) for x in args.batches.split(",")] if args.batches else sorted({b for b, _ in ordo_cfgs}) or [1, 8, 32]
    contexts = [int(x) for x in args.contexts.split(",")] if args.contexts else sorted({c for _, c in ordo_cfgs}) or [512, 2048]
    cfg = Config(layers=layers)

    t0 = time.perf_counter()
    with torch.inference_mode():
        model = Decoder(cfg, dev, max(contexts) + 1)
    torch.cuda.synchronize()
    build_s = time.perf_counter() - t0
    name = torch.cuda.get_device_name()
    print(f"# PyTorch decode: Llama-3-8B layer shapes, fp16, {layers} layers timed, {check_layers} checked\n")
    print(
        f"{name} | torch {torch.__version__} | CUDA {torch.version.cuda} | SDPA enable_gqa: {model.gqa} | "
        f"fp16 reduced-precision reduction: {torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction} | "
        f"weights built in {build_s:.1f} s"
    )

    out = {
        "side": "torch",
        "device": name,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "settings": {"layers": layers, "check_layers": check_layers, "steps": steps, "warmup": args.warmup},
        "results": [],
        "ops": [],
        "check": [],
        "profiler": [],
        "compile": {"budget_s": args.compile_budget_s, "configs": []},
    }
    ok = True

    # Correctness, then the timed configurations, each with its own caches.
    check_rows = []
    measured = {}
    # Largest first: the CUPTI pass (torch.profiler) runs once, after the last configuration's
    # timings (batch 1, the shortest context), since an initialised profiler can slow later launches.
    configs = [(b, c) for b in sorted(batches, reverse=True) for c in sorted(contexts, reverse=True)]
    for batch, context in configs:
        with torch.inference_mode():
            pos = torch.tensor([context], dtype=torch.int64, device=dev)
            x = formula_tensor((batch, cfg.hidden), unit_formula(INPUT_LAYER, ATTN_NORM), dev)
            kcs = [formula_cache(batch, cfg.kv_heads, context, unit_formula(l, K_CACHE), dev) for l in range(layers)]
            vcs = [formula_cache(batch, cfg.kv_heads, context, unit_formula(l, V_CACHE), dev) for l in range(layers)]
            # The check: the first check_layers layers against ordo's output.
            mine = model(x, pos, kcs, vcs, check_layers)
            torch.cuda.synchronize()
            row = {"batch": batch, "context": context, "layers": check_layers}
            path = os.path.join(args.ordo, f"check_b{batch}_c{context}.f16")
            if os.path.exists(path):
                with open(path, "rb") as f:
                    theirs = torch.frombuffer(bytearray(f.read()), dtype=torch.float16).view(batch, cfg.hidden)
                row.update(compare_outputs(theirs.to(dev), mine, args.atol, args.rtol))
                ok &= row["pass"]
            else:
                row["missing"] = path
            check_rows.append(row)

            # Eager and one CUDA graph, alternating rounds (as ordo's), then the profile.
            def eager():
                return model(x, pos, kcs, vcs, layers)

            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    eager()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = model(x, pos, kcs, vcs, layers)
            for _ in range(args.warmup):
                eager()
                torch.cuda.synchronize()
                graph.replay()
                torch.cuda.synchronize()
            e, g = [], []
            first = (steps + 1) // 2
            for n in (first, steps - first):
                e += time_steps(n, eager)
                g += time_steps(n, graph.replay)
            ref_eager = eager()
            graph.replay()
            torch.cuda.synchronize()
            identical = torch.equal(ref_eager, static_out)
            ops, busy_us = profile(model, x, pos, kcs, vcs, layers)
            busy_ms, ops_ms = busy_us / 1e3, sum(ops.values()) / 1e3
            if (batch, context) == configs[-1]:
                prof = kernel_names_and_sum(graph.replay)
                prof.update({"batch": batch, "context": context, "mode": "graph"})
                out["profiler"].append(prof)
            for mode, samples in (("eager", e), ("graph", g)):
                r = result_row(batch, context, mode, samples, busy_ms, ops_ms)
                r["out_eager_equals_graph"] = identical
                out["results"].append(r)
            for c in CATEGORIES:
                out["ops"].append({"batch": batch, "context": context, "category": c, "us_per_step": ops[c]})
            measured[(batch, context)] = (ops, busy_us)
            graph = static_out = kcs = vcs = None  # their memory back before the next configuration
            torch.cuda.empty_cache()
    out["check"] = sorted(check_rows, key=lambda r: (r["batch"], r["context"]))
    out["results"].sort(key=lambda r: (r["batch"], r["context"], r["mode"]))

    # torch.compile(mode="reduce-overhead"), within the budget.
    if args.compile_budget_s > 0:
        run_compile(model, cfg, batches, contexts, layers, steps, args, out, dev)

    print_report(out, ordo, measured, layers, args)
    cmp = compare(ordo, out) if ordo else None
    if cmp:
        out["targets"] = cmp["targets"]
    out["ok"] = ok
    out["run_s"] = time.perf_counter() - started
    os.makedirs(args.ordo, exist_ok=True)
    with open(os.path.join(args.ordo, "torch.json"), "w") as f:
        json.dump(out, f, indent=1)
    if cmp:
        with open(os.path.join(args.ordo, "compare.json"), "w") as f:
            json.dump(cmp, f, indent=1)
    print(f"\nrun {out['run_s']:.0f} s; wrote {os.path.join(args.ordo, 'torch.json')}" + (" and compare.json" if cmp else ""))
    if not ok:
        print("torch_decode.py: ordo's outputs are outside the tolerance (see the correctness table)")
        sys.exit(1)


def run_compile(model, cfg, batches, contexts, layers, steps, args, out, dev):
    """torch.compile(mode="reduce-overhead") of the step, configuration by configuration (batch 1
    first) within the budget; rows in out["results"] (mode "compile") and out["compile"]. The
    caches are inputs marked static (no copy into the CUDA graph's buffers) with a dynamic sequence
    length; the weights are the module's buffers."""
    rows = out["compile"]["configs"]
    try:
        compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    except Exception as e:  # noqa: BLE001
        out["compile"]["error"] = f"{type(e).__name__}: {e}"
        return
    spent, longest, compiled_kinds = 0.0, 0.0, set()
    for batch in batches:
        for context in contexts:
            # Batch 1 compiles once (size-1 dimensions are specialised), every larger batch once
            # more (a dynamic batch); the sequence length is dynamic from the start. A compile
            # that has not been seen yet is predicted to take as long as the longest so far.
            kind = "batch 1" if batch == 1 else "batch > 1"
            predicted = 0.0 if kind in compiled_kinds else longest
            if spent + predicted > args.compile_budget_s:
                rows.append({"batch": batch, "context": context,
                             "skipped": f"a compile of ~{predicted:.0f} s would pass the budget of {args.compile_budget_s:.0f} s"})
                continue
            t0 = time.perf_counter()
            try:
                with torch.inference_mode():
                    pos = torch.tensor([context], dtype=torch.int64, device=dev)
                    x = formula_tensor((batch, cfg.hidden), unit_formula(INPUT_LAYER, ATTN_NORM), dev)
                    kcs = [formula_cache(batch, cfg.kv_heads, context, unit_formula(l, K_CACHE), dev) for l in range(layers)]
                    vcs = [formula_cache(batch, cfg.kv_heads, context, unit_formula(l, V_CACHE), dev) for l in range(layers)]
                    for t in kcs + vcs:
                        torch._dynamo.mark_static_address(t)
                        torch._dynamo.maybe_mark_dynamic(t, 2)
                    prep = time.perf_counter() - t0

                    def step():
                        return compiled(x, pos, kcs, vcs, layers)

                    t1 = time.perf_counter()
                    for _ in range(3):  # compiles (or not), then records the graph
                        step()
                    torch.cuda.synchronize()
                    compile_s = time.perf_counter() - t1
                    for _ in range(args.warmup):
                        step()
                    torch.cuda.synchronize()
                    samples = time_steps(steps, step)
                    got = step().clone()
                    want = model(x, pos, kcs, vcs, layers)
                    torch.cuda.synchronize()
                    close = compare_outputs(got, want, args.atol, args.rtol)
                    # The eager kernels' busy time: the compiled step runs other (fused) kernels,
                    # so its overhead column is only indicative.
                    busy_ms, ops_ms = next(
                        ((r["gpu_busy_ms"], r["gpu_ops_ms"]) for r in out["results"]
                         if (r["batch"], r["context"]) == (batch, context)),
                        (float("nan"), float("nan")),
                    )
                    r = result_row(batch, context, "compile", samples, busy_ms, ops_ms)
                    r["compile_s"] = compile_s
                    r["vs_eager"] = close
                    out["results"].append(r)
                    rows.append({"batch": batch, "context": context, "compile_s": compile_s, "prep_s": prep})
                    compiled_kinds.add(kind)
                    longest = max(longest, compile_s)
                    kcs = vcs = None
            except Exception as e:  # noqa: BLE001 (report and go on)
                rows.append({"batch": batch, "context": context, "error": f"{type(e).__name__}: {str(e)[:400]}"})
            torch.cuda.empty_cache()
            spent += time.perf_counter() - t0


def fmt(v, digits=3):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def print_report(out, ordo, measured, layers, args):
    print(f"\n## Correctness ({out['settings']['check_layers']} layers): ordo's output against PyTorch's eager output")
    print(f"\npass: |ordo - torch| <= {args.atol:g} + {args.rtol:g} |torch| for every element\n")
    print("| batch | context | max abs | mean abs | max rel | pass |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in out["check"]:
        if "missing" in r:
            print(f"| {r['batch']} | {r['context']} | - | - | - | no ordo output ({r['missing']}) |")
        else:
            print(f"| {r['batch']} | {r['context']} | {r['max_abs']:.3e} | {r['mean_abs']:.3e} | {r['max_rel']:.3e} | {r['pass']} |")

    print(f"\n## PyTorch step time ({layers} layers): ms a step, each step synchronised\n")
    print("GPU busy: the eager step's GPU time with the queue kept full (each layer behind a spin kernel); "
          "overhead = median - GPU busy (for compile, against the eager kernels' busy time: indicative only).\n")
    print("| batch | context | mode | median | p99 | tokens/s | host enqueue | host CPU | GPU busy | overhead |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in out["results"]:
        print(
            f"| {r['batch']} | {r['context']} | {r['mode']} | {fmt(r['median_ms'])} | {fmt(r['p99_ms'])} | "
            f"{r['tokens_per_s']:.0f} | {fmt(r['host_enqueue_ms'])} | {fmt(r['host_cpu_ms'])} | "
            f"{fmt(r['gpu_busy_ms'])} | {r['overhead_ms']:+.3f} |"
        )
    if out["compile"].get("error") or any("error" in c or "skipped" in c for c in out["compile"]["configs"]):
        print("\ntorch.compile:", json.dumps(out["compile"]))

    print("\n## GPU time of each operation (us a step, all layers): PyTorch / ordo\n")
    keys = sorted(measured)
    print("| operation | " + " | ".join(f"b{b} c{c}" for b, c in keys) + " |")
    print("| --- |" + " --- |" * len(keys))
    ordo_ops = {}
    for o in (ordo or {}).get("ops", []):
        k = (o["batch"], o["context"], o["category"])
        ordo_ops[k] = ordo_ops.get(k, 0.0) + o["us_per_step"]
    ordo_busy = {(r["batch"], r["context"]): r.get("gpu_busy_ms") for r in (ordo or {}).get("results", [])}
    for c in CATEGORIES + ["sum", "GPU busy"]:
        cells = []
        for b, ctx in keys:
            ops, busy_us = measured[(b, ctx)]
            if c == "sum":
                t = sum(ops.values())
                o = sum(v for (ob, oc, _), v in ordo_ops.items() if (ob, oc) == (b, ctx)) or None
            elif c == "GPU busy":
                t = busy_us
                o = ordo_busy.get((b, ctx))
                o = o * 1e3 if o is not None else None
            else:
                t, o = ops[c], ordo_ops.get((b, ctx, c))
            cells.append(f"{t:.1f} / {fmt(o, 1)}")
        print(f"| {c} | " + " | ".join(cells) + " |")
    print("\nPyTorch's kernels in the graph replay (torch.profiler, CUPTI: kernel time only, no gaps):\n")
    print("| batch | context | kernels a step | kernel time a step (ms) | top kernel |")
    print("| --- | --- | --- | --- | --- |")
    for p in out["profiler"]:
        if "error" in p:
            print(f"| {p['batch']} | {p['context']} | - | - | profiler failed: {p['error'][:80]} |")
        else:
            top = p["top"][0]["name"][:60] if p["top"] else "-"
            print(f"| {p['batch']} | {p['context']} | {p['kernels_per_step']} | {p['kernel_us_per_step'] / 1e3:.3f} | {top} |")


def compare(ordo, out):
    """Side by side, and the targets of issue 45."""
    idx = lambda rows: {(r["batch"], r["context"], r["mode"]): r for r in rows}  # noqa: E731
    o, t = idx(ordo.get("results", [])), idx(out["results"])
    print("\n## ordo against PyTorch (median ms a step; ratio = ordo / PyTorch)\n")
    print("| batch | context | ordo eager | torch eager | ratio | ordo graph | torch graph | ratio | torch compile | ordo graph overhead | torch graph overhead | ordo tokens/s (graph) | torch tokens/s (graph) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for (b, c) in sorted({(k[0], k[1]) for k in o} & {(k[0], k[1]) for k in t}):
        oe, te, og, tg = o.get((b, c, "eager")), t.get((b, c, "eager")), o.get((b, c, "graph")), t.get((b, c, "graph"))
        tc = t.get((b, c, "compile"))
        if not (oe and te and og and tg):
            continue
        row = {
            "batch": b, "context": c,
            "eager_ratio": oe["median_ms"] / te["median_ms"],
            "graph_ratio": og["median_ms"] / tg["median_ms"],
            "ordo_graph_overhead_ms": og["overhead_ms"], "torch_graph_overhead_ms": tg["overhead_ms"],
            "ordo": {"eager": oe["median_ms"], "graph": og["median_ms"]},
            "torch": {"eager": te["median_ms"], "graph": tg["median_ms"], "compile": tc["median_ms"] if tc else None},
        }
        rows.append(row)
        print(
            f"| {b} | {c} | {oe['median_ms']:.3f} | {te['median_ms']:.3f} | {row['eager_ratio']:.3f} | "
            f"{og['median_ms']:.3f} | {tg['median_ms']:.3f} | {row['graph_ratio']:.3f} | "
            f"{fmt(tc['median_ms']) if tc else '-'} | {og['overhead_ms']:+.3f} | {tg['overhead_ms']:+.3f} | "
            f"{og['tokens_per_s']:.0f} | {tg['tokens_per_s']:.0f} |"
        )
    targets = []

    def target(what, b, value, limit, note=""):
        met = value is not None and not math.isnan(value) and value <= limit
        targets.append({"target": what, "batch": b, "value": value, "limit": limit, "met": met, "note": note})

    for r in rows:
        if r["batch"] == 1:
            target(f"graph step, batch 1, context {r['context']}: ordo / torch graph", 1, r["graph_ratio"], 0.8)
            target(f"eager step, batch 1, context {r['context']}: ordo / torch eager", 1, r["eager_ratio"], 0.25)
        if r["batch"] == 8:
            target(f"graph step, batch 8, context {r['context']}: ordo / torch graph", 8, r["graph_ratio"], 0.9)
        to, oo = r["torch_graph_overhead_ms"], r["ordo_graph_overhead_ms"]
        if to > 0:
            target(f"graph overhead, batch {r['batch']}, context {r['context']}: ordo / torch", r["batch"], oo / to, 0.5,
                   f"ordo {oo:+.3f} ms, torch {to:+.3f} ms")
        else:
            target(f"graph overhead, batch {r['batch']}, context {r['context']}: ordo / torch", r["batch"], None, 0.5,
                   f"torch's overhead is not positive ({to:+.3f} ms): no ratio")
    print("\n## Targets (issue 45)\n")
    print("| target | value | limit | met | note |")
    print("| --- | --- | --- | --- | --- |")
    for g in targets:
        print(f"| {g['target']} | {fmt(g['value'])} | {g['limit']} | {'yes' if g['met'] else 'NO'} | {g['note']} |")
    return {"rows": rows, "targets": targets}


if __name__ == "__main__":
    main()
