#!/usr/bin/env bash
# Runs the GPU test binaries of a gpu-bundle (../shared/tools/gpu-bundle) under compute-sanitizer
# on a GPU machine, one tool at a time, and prints one summary line:
#   sanitizer: R runs, C clean, F with findings, S skipped
#
#   bash scripts/sanitize.sh [BUNDLE] [TOOL ...]   # from the project root
#   BUNDLE defaults to target/gpu-bundle; TOOLs to memcheck racecheck synccheck initcheck.
#   SANITIZE_LOGS=DIR keeps each run's log there (default: a temporary folder).
#   SANITIZE_ONLY="pkg:test ..." limits the runs to those test binaries (e.g. "kernels:pipeline").
#
# The C ABI fuzz (ffi-tests random_calls) runs ORDO_FUZZ_CALLS calls a thread (default here 150,
# against 800 in a plain run): the sanitizer makes each call many times slower. ORDO_FUZZ_NCCL=0
# keeps NCCL out of it (no communicator is made to borrow: NCCL's own work is not ours to sanitize).
# API errors are not counted (--report-api-errors no): several tests provoke them on purpose
# (an illegal call inside a capture, a bad launch configuration) and check the error returned.
# Tests run one at a time (--test-threads=1): the sanitizer serialises the device anyway, and a
# finding is then easy to tie to its test.
#
# Skipped, not run (and not counted as findings):
# - the NCCL tests (named two_gpus_nccl* and gpu_nccl*: NCCL's own kernels are not ours to
#   sanitize);
# - on a machine with fewer than two GPUs, the binaries whose tests all need two GPUs
#   (TWO_GPU_BINARIES below) and the tests named two_gpus* in the others;
# - under initcheck, the IPC binaries and the SM-partition binaries (INITCHECK_SKIP below, CB-34);
# - under racecheck and synccheck, measure:gpu's two tests that time kernels (TIMED_TESTS);
# - any binary whose tests are all filtered out by the above: it would make no CUDA call, which
#   compute-sanitizer reports as an error of its own ("target application terminated before first
#   instrumented API call", exit 255), not as a finding in our code.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-target/gpu-bundle}
shift || true
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(memcheck racecheck synccheck initcheck)
logs=${SANITIZE_LOGS:-$(mktemp -d)}
mkdir -p "$logs"
gpu_tests="core:gpu core:no_alloc core:memory_ordering core:errors core:captures core:staging core:graph_lifetimes kernels:gpu kernels:graphs kernels:conditional kernels:pipeline kernels:no_alloc kernels:threads kernels:multi_gpu kernels:temporaries kernels:temporaries_lifecycle libs:nvrtc ffi-tests:programs ffi-tests:random_calls ffi-tests:launch ffi-tests:last_error ffi-tests:pipeline_handle ffi-tests:alloc_options ffi-tests:temporaries ffi-tests:two_gpus ffi-tests:device_reset cuda-sys:no_driver core:batch_copy core:driver_log core:host_pool core:library_images core:partition ffi-tests:graph_cache ffi-tests:sm_partitions kernels:kernel_node_attributes kernels:launch_after_reset kernels:launch_paths measure:gpu core:shared_graph_cache core:async_wait core:ipc ffi-tests:ipc"
# Not here: measure:check_gpu (its dynamic check must see seeded PDL races happen, and under the
# sanitizer kernels do not overlap, so no race shows: 4 of its 6 tests fail there with 0 errors),
# kernels:sticky (it makes a kernel fault on purpose, which memcheck reports), and
# ffi-tests:capture_modes (its plain C++ reproducers crash child processes on purpose, CB-01..03).
[ -n "${SANITIZE_ONLY:-}" ] && gpu_tests=$SANITIZE_ONLY
# initcheck tracks one process's writes: memory another process wrote through IPC reads as
# uninitialised there, and it ends the two SM-partition (green context) binaries, ffi-tests
# sm_partitions and core partition, with signal 11 and no error (docs/cuda-behaviours.md, CB-34).
# These run under the other tools.
INITCHECK_SKIP="core:ipc ffi-tests:ipc ffi-tests:sm_partitions core:partition"
# Tests that time kernels against fixed bounds: racecheck and synccheck slow every kernel by
# orders of magnitude (a 50 us kernel took 5 ms), so the bounds cannot hold there.
TIMED_TESTS=(--skip measure_engine_a_kernel_of_known_duration_measures_that_long
  --skip measure_engine_submit_and_sync_measure_every_path_that_launches)
# Test binaries every test of which needs two GPUs (they name them two_gpus_*).
TWO_GPU_BINARIES="kernels:multi_gpu ffi-tests:two_gpus"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
skip=(--skip two_gpus_nccl --skip gpu_nccl)
[ "$gpus" -ge 2 ] || skip=(--skip two_gpus --skip gpu_nccl)
runs=0; clean=0; dirty=0; skipped=0
for tool in "${tools[@]}"; do
  while IFS=$'\t' read -r kind pkgdir name exe; do
    [ "$kind" = test ] || continue
    case " $gpu_tests " in *" $pkgdir:$name "*) ;; *) continue ;; esac
    if [ "$tool" = initcheck ]; then
      case " $INITCHECK_SKIP " in
        *" $pkgdir:$name "*)
          skipped=$((skipped + 1)); echo "skipped   $tool $pkgdir/$name: initcheck cannot follow it (CB-34)"; continue ;;
      esac
    fi
    tool_skip=()
    case "$tool:$pkgdir:$name" in racecheck:measure:gpu|synccheck:measure:gpu) tool_skip=("${TIMED_TESTS[@]}") ;; esac
    if [ "$gpus" -lt 2 ]; then
      case " $TWO_GPU_BINARIES " in
        *" $pkgdir:$name "*)
          skipped=$((skipped + 1)); echo "skipped   $tool $pkgdir/$name: needs two GPUs, $gpus here"; continue ;;
      esac
    fi
    # What is left to run after the filters (libtest applies --skip to --list too).
    if ! listing=$(cd "$pkgdir" && CARGO_MANIFEST_DIR="$PWD" "$OLDPWD/$bundle/bin/$exe" --list --include-ignored "${skip[@]}" 2>&1); then
      runs=$((runs + 1)); dirty=$((dirty + 1)); echo "FINDINGS  $tool $pkgdir/$name: cannot list its tests: $listing"; continue
    fi
    left=$(printf '%s\n' "$listing" | grep -c ': test$')
    if [ "$left" -eq 0 ]; then
      skipped=$((skipped + 1)); echo "skipped   $tool $pkgdir/$name: no test left after ${skip[*]}"; continue
    fi
    log="$logs/$tool-${pkgdir//\//_}-$name.log"
    (cd "$pkgdir" && CARGO_MANIFEST_DIR="$PWD" ORDO_FUZZ_CALLS="${ORDO_FUZZ_CALLS:-150}" ORDO_FUZZ_NCCL=0 \
      compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 99 \
      "$OLDPWD/$bundle/bin/$exe" --include-ignored --test-threads=1 "${skip[@]}" "${tool_skip[@]}") > "$log" 2>&1
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
echo "sanitizer: $runs runs, $clean clean, $dirty with findings, $skipped skipped"
[ "$dirty" -eq 0 ]
