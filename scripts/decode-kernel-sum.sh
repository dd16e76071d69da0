#!/usr/bin/env bash
# The decode step's overhead on both sides, measured the same way (issue 45): overhead = the
# replayed step's median wall time minus the sum of its kernels' GPU time. The kernel sum comes
# from Nsight Compute on one replayed step of each side (`ncu --profile-from-start off`, the step
# between cudaProfilerStart and cudaProfilerStop; gpu__time_duration.sum of every kernel, clocks
# and caches left as they are: --clock-control none --cache-control none). ncu runs kernels one
# at a time, so PDL's overlap does not count: the sum is each kernel's own time. The medians come
# from the same programs without ncu, in the same call.
#
# On the GPU host, from the project root, with a GPU bundle built (../shared/tools/gpu-bundle):
#   bash scripts/decode-kernel-sum.sh [OUT_DIR]
# Settings (environment): BATCH (default 1), CONTEXT (default 512), LAYERS (default 32), NCU
# (default ncu). Prints a markdown table; OUT_DIR (default kernel-sum-run) gets the CSVs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-kernel-sum-run}
batch=${BATCH:-1}
context=${CONTEXT:-512}
layers=${LAYERS:-32}
ncu=${NCU:-ncu}
mkdir -p "$out"
read -r -a decode <<< "${DECODE:-bash target/gpu-bundle/run.sh exe ordo-decode}"
ncu_args=(--profile-from-start off --clock-control none --cache-control none
    --metrics gpu__time_duration.sum --csv --print-units base)

echo "# The decode step's kernel sum and overhead: batch $batch, context $context, $layers layers"
# The medians, without ncu.
"${decode[@]}" --serve 3 --layers "$layers" --check-layers 1 --batches "$batch" --contexts "$context" \
    > "$out/ordo-serve.json"
python3 examples/decode/torch_step.py --batch "$batch" --context "$context" --layers "$layers" \
    > "$out/torch-serve.json"
# One step each under ncu.
"$ncu" "${ncu_args[@]}" --log-file "$out/ordo-ncu.csv" "${decode[@]}" --serve 0.001 --profile-step \
    --layers "$layers" --check-layers 1 --batches "$batch" --contexts "$context" --warmup 2 > /dev/null
"$ncu" "${ncu_args[@]}" --log-file "$out/torch-ncu.csv" python3 examples/decode/torch_step.py \
    --batch "$batch" --context "$context" --layers "$layers" --steps 1 --warmup 2 --profile-step > /dev/null

python3 - "$out" <<'EOF'
import csv, io, json, sys
out = sys.argv[1]

def kernel_sum(path):
    text = open(path).read()
    # ncu's log has lines of its own (==PROF==) before the CSV.
    lines = [l for l in text.splitlines() if l.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    ns = [float(r["Metric Value"].replace(",", "")) for r in rows if r.get("Metric Name") == "gpu__time_duration.sum"]
    names = {}
    for r in rows:
        if r.get("Metric Name") == "gpu__time_duration.sum":
            k = r["Kernel Name"][:60]
            names[k] = names.get(k, 0.0) + float(r["Metric Value"].replace(",", ""))
    top = sorted(names.items(), key=lambda kv: -kv[1])[:6]
    return len(ns), sum(ns) / 1e6, top

def median(path):
    return json.loads(open(path).read().strip().splitlines()[-1])["median_ms"]

print()
print("| side | kernels a step | kernel sum (ms, ncu) | replayed step median (ms) | overhead (ms) | overhead / step |")
print("| --- | --- | --- | --- | --- | --- |")
res = {}
for side in ("ordo", "torch"):
    n, total, top = kernel_sum(f"{out}/{side}-ncu.csv")
    m = median(f"{out}/{side}-serve.json")
    res[side] = (n, total, m, m - total, top)
    print(f"| {side} | {n} | {total:.3f} | {m:.3f} | {m - total:.3f} | {(m - total) / m * 100:.1f}% |")
o, t = res["ordo"][3], res["torch"][3]
print()
print(f"ordo's overhead / PyTorch-with-graphs' overhead: {o / t:.2f}x (target at most 0.5x: {'met' if o / t <= 0.5 else 'MISSED'})" if t > 0 else "PyTorch's overhead is not positive: the ratio is undefined")
for side in ("ordo", "torch"):
    print(f"\n{side}: the kernels that took the most (ms a step): " + "; ".join(f"{k} {v / 1e6:.3f}" for k, v in res[side][4]))
json.dump({s: {"kernels": v[0], "kernel_sum_ms": v[1], "median_ms": v[2], "overhead_ms": v[3]} for s, v in res.items()},
          open(f"{out}/kernel-sum.json", "w"), indent=1)
EOF
