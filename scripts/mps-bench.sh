#!/usr/bin/env bash
# MPS against time-slicing (issue 42): 1, 2 and 4 processes of `ordo-decode --serve` (a
# Llama-3-8B-shaped decode step, replayed from ordo's graph cache, each step synchronised) at once,
# without an MPS daemon (the GPU time-slices between the processes' contexts), then under an MPS
# control daemon of this script's own (its own pipe and log folders; quit on every way out; the
# GPU's settings are left alone), also with an active-thread percentage of 100/N.
#
# On the GPU host, from the project root, with a GPU bundle built (../shared/tools/gpu-bundle):
#   bash scripts/mps-bench.sh [OUT_DIR]
# Settings (environment): SERVE_S (timed seconds a configuration, default 5), LAYERS (default 8),
# BATCH (default 1), CONTEXT (default 512), DECODE (the command that runs ordo-decode; default the
# bundle's). Prints a markdown table; OUT_DIR (default mps-run) gets every process's JSON line.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-mps-run}
serve_s=${SERVE_S:-5}
layers=${LAYERS:-8}
batch=${BATCH:-1}
context=${CONTEXT:-512}
read -r -a decode <<< "${DECODE:-bash target/gpu-bundle/run.sh exe ordo-decode}"
mkdir -p "$out"
: > "$out/lines.jsonl"

work=$(mktemp -d)
pipe=$work/mps/pipe
log=$work/mps/log
mps_running=0

stop_mps() {
    if [[ $mps_running == 1 ]]; then
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$log nvidia-cuda-mps-control >/dev/null 2>&1 || true
        # The daemon exits once its server has; wait for it (at most 10 s).
        for _ in $(seq 100); do [[ -e $pipe/control ]] || break; sleep 0.1; done
        mps_running=0
    fi
}
cleanup() {
    local pids
    pids=$(jobs -p)
    [[ -n $pids ]] && kill $pids 2>/dev/null
    wait 2>/dev/null
    stop_mps
    [[ -d $log ]] && cp -r "$log" "$out/mps-log" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap "exit 143" INT TERM

start_mps() {
    mkdir -p "$pipe" "$log"
    CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$log nvidia-cuda-mps-control -d
    mps_running=1
    for _ in $(seq 100); do [[ -e $pipe/control ]] && return 0; sleep 0.1; done
    echo "mps-bench: the MPS control daemon did not start (see $log)" >&2
    return 1
}

# run_config NAME PROCESSES MPS(0|1) PERCENTAGE(or empty)
run_config() {
    local name=$1 n=$2 mps=$3 pct=$4
    local barrier=$work/$name
    mkdir -p "$barrier"
    local pids=()
    for i in $(seq "$n"); do
        (
            if [[ $mps == 1 ]]; then
                export CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$log
                [[ -n $pct ]] && export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct
            fi
            exec "${decode[@]}" --serve "$serve_s" --barrier "$barrier" --layers "$layers" \
                --check-layers 1 --batches "$batch" --contexts "$context" --warmup 5
        ) > "$barrier/out.$i" 2> "$barrier/err.$i" &
        pids+=($!)
    done
    # Every process warm (its ready file), or one gone: at most 5 minutes.
    local waited=0
    while (( $(find "$barrier" -name 'ready.*' | wc -l) < n )); do
        for p in "${pids[@]}"; do
            if ! kill -0 "$p" 2>/dev/null; then
                echo "mps-bench: $name: a process ended before the barrier:" >&2
                cat "$barrier"/err.* >&2
                return 1
            fi
        done
        sleep 0.05
        waited=$((waited + 1))
        if (( waited > 6000 )); then echo "mps-bench: $name: the barrier timed out" >&2; return 1; fi
    done
    echo $(( $(date +%s%3N) + 300 )) > "$barrier/go.tmp"
    mv "$barrier/go.tmp" "$barrier/go"
    local failed=0
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
    if [[ $failed == 1 ]]; then
        echo "mps-bench: $name: a process failed:" >&2
        cat "$barrier"/err.* >&2
        return 1
    fi
    for i in $(seq "$n"); do
        python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); d["config"]=sys.argv[1]; d["processes"]=int(sys.argv[2]); d["mps"]=sys.argv[3]=="1"; print(json.dumps(d))' \
            "$name" "$n" "$mps" < "$barrier/out.$i" >> "$out/lines.jsonl"
    done
}

echo "# MPS against time-slicing: ordo-decode --serve, $layers layers, batch $batch, context $context, ${serve_s} s a configuration"
nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv,noheader || true
run_config solo 1 0 ""
run_config timesliced-2 2 0 ""
run_config timesliced-4 4 0 ""
start_mps
run_config mps-1 1 1 ""
run_config mps-2 2 1 ""
run_config mps-4 4 1 ""
run_config mps-2-at-50 2 1 50
run_config mps-4-at-25 4 1 25
stop_mps

python3 - "$out/lines.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
configs = []
for r in rows:
    if r["config"] not in configs:
        configs.append(r["config"])
solo = sum(r["steps_per_s"] for r in rows if r["config"] == "solo")
print()
print("| configuration | processes | MPS | active threads | steps/s (all processes) | vs one process alone | step median (ms) | step p99 (ms, worst process) | latest start (ms) | outputs finite |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for c in configs:
    rs = [r for r in rows if r["config"] == c]
    total = sum(r["steps_per_s"] for r in rs)
    med = statistics.median(r["median_ms"] for r in rs)
    p99 = max(r["p99_ms"] for r in rs)
    late = max(r["late_ms"] for r in rs)
    pct = rs[0].get("mps_active_thread_percentage")
    pct = f"{pct}%" if pct else ("100% (unset)" if rs[0]["mps"] else "-")
    fin = all(r["finite"] for r in rs)
    print(f"| {c} | {len(rs)} | {'yes' if rs[0]['mps'] else 'no'} | {pct} | {total:.1f} | {total / solo:.2f}x | {med:.3f} | {p99:.3f} | {late:.1f} | {'yes' if fin else 'NO'} |")
EOF
