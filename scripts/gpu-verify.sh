#!/usr/bin/env bash
# On the GPU machine, from the project root, with a gpu-bundle carried there (see
# ../shared/docs/gpu-machine.md): the whole test suite RUNS times in a row in the default harness
# (tests in parallel threads), then compute-sanitizer passes while time is left, most important
# first. Logs go to $OUT (or /tmp/gpu-verify): run1.log .. runN.log and sanitizer.tgz.
#
#   bash scripts/gpu-verify.sh LIMIT_S [RUNS] [BUNDLE]
#
# The first run passes --nocapture, so that tests' timings and measurements are in run1.log.
# A sanitizer pass stops at the limit; what ran is in its summary line.
set -u
start=$(date +%s)
limit=${1:?usage: gpu-verify.sh LIMIT_S [RUNS] [BUNDLE]}
runs=${2:-3}
bundle=${3:-target/gpu-bundle}
out=${OUT:-/tmp/gpu-verify}
mkdir -p "$out"
left() { echo $((limit - ($(date +%s) - start))); }
nvidia-smi -L
# The tests that need several GPUs pass without checking anything where there are fewer; here,
# where the count is known, they must run.
ORDO_REQUIRE_GPUS=$(nvidia-smi -L | grep -c '^GPU')
export ORDO_REQUIRE_GPUS
status=0
for i in $(seq 1 "$runs"); do
  s=$(date +%s)
  if [ "$i" = 1 ]; then args=(tests --nocapture); else args=(); fi
  bash "$bundle/run.sh" "${args[@]}" > "$out/run$i.log" 2>&1 || status=1
  echo "run $i: $(($(date +%s) - s)) s: $(tail -n 1 "$out/run$i.log")"
  grep -E "^FAILED|^test .* FAILED" "$out/run$i.log"
done
logs=$(mktemp -d)
core="core:memory_ordering core:errors core:captures core:staging core:graph_lifetimes core:gpu kernels:pipeline kernels:graphs kernels:conditional kernels:gpu libs:nvrtc"
ffi="ffi-tests:programs ffi-tests:device_reset ffi-tests:random_calls ffi-tests:launch ffi-tests:last_error ffi-tests:pipeline_handle ffi-tests:alloc_options"
rest="core:no_alloc kernels:no_alloc kernels:threads kernels:multi_gpu ffi-tests:two_gpus cuda-sys:no_driver"
for pass in "memcheck|$core $ffi" "racecheck|$core $ffi" "synccheck|$core $ffi" "initcheck|$core $ffi" \
            "memcheck|$rest" "racecheck|$rest" "synccheck|$rest" "initcheck|$rest"; do
  t=$(left)
  [ "$t" -gt 30 ] || { echo "no time left for ${pass%%|*} of ${pass#*|}"; continue; }
  SANITIZE_LOGS=$logs SANITIZE_ONLY="${pass#*|}" timeout $((t - 10)) bash scripts/sanitize.sh "$bundle" "${pass%%|*}" \
    | grep -v "^clean"
  echo "${pass%%|*} (${pass#*|}): exit ${PIPESTATUS[0]} at $(($(date +%s) - start)) s"
done
tar -czf "$out/sanitizer.tgz" -C "$logs" .
exit $status
