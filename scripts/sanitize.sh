#!/usr/bin/env bash
# Runs the GPU test binaries of a gpu-bundle (../shared/tools/gpu-bundle) under compute-sanitizer
# on a GPU machine, one tool at a time, and prints one summary line:
#   sanitizer: R runs, C clean, F with findings
#
#   bash scripts/sanitize.sh [BUNDLE] [TOOL ...]   # from the project root
#   BUNDLE defaults to target/gpu-bundle; TOOLs to memcheck racecheck synccheck initcheck.
#   SANITIZE_LOGS=DIR keeps each run's log there (default: a temporary folder).
#   SANITIZE_ONLY="pkg:test ..." limits the runs to those test binaries (e.g. "kernels:pipeline").
#
# API errors are not counted (--report-api-errors no): several tests provoke them on purpose
# (an illegal call inside a capture, a bad launch configuration) and check the error returned.
# The NCCL test is skipped (NCCL's own kernels are not ours to sanitize); the other two-GPU tests run
# where there are two GPUs, and are skipped where there is one.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-target/gpu-bundle}
shift || true
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(memcheck racecheck synccheck initcheck)
logs=${SANITIZE_LOGS:-$(mktemp -d)}
mkdir -p "$logs"
gpu_tests="core:gpu core:no_alloc kernels:gpu kernels:graphs kernels:pipeline kernels:no_alloc kernels:threads kernels:multi_gpu ffi-tests:programs ffi-tests:random_calls ffi-tests:two_gpus cuda-sys:no_driver"
[ -n "${SANITIZE_ONLY:-}" ] && gpu_tests=$SANITIZE_ONLY
skip=(--skip two_gpus_nccl)
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$gpus" -ge 2 ] || skip=(--skip two_gpus)
runs=0; clean=0; dirty=0
for tool in "${tools[@]}"; do
  while IFS=$'\t' read -r kind pkgdir name exe; do
    [ "$kind" = test ] || continue
    case " $gpu_tests " in *" $pkgdir:$name "*) ;; *) continue ;; esac
    log="$logs/$tool-${pkgdir//\//_}-$name.log"
    (cd "$pkgdir" && CARGO_MANIFEST_DIR="$PWD" compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 99 \
      "$OLDPWD/$bundle/bin/$exe" --include-ignored --test-threads=1 "${skip[@]}") > "$log" 2>&1
    rc=$?
    runs=$((runs + 1))
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -n 1)
    if [ $rc -eq 0 ] && grep -q "test result: ok" "$log"; then
      clean=$((clean + 1)); echo "clean     $tool $pkgdir/$name: $summary"
    else
      dirty=$((dirty + 1)); echo "FINDINGS  $tool $pkgdir/$name (exit $rc): $summary  [$log]"
    fi
  done < "$bundle/manifest.tsv"
done
echo "sanitizer: $runs runs, $clean clean, $dirty with findings"
[ "$dirty" -eq 0 ]
