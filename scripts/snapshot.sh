#!/usr/bin/env bash
# The checked-in bindings, cuda-sys/src/snapshot/cudaN.rs: what the build script's bindgen makes from
# the newest release of each CUDA major (the build takes them where libclang is missing, where the
# `bindgen` feature of ordo-cuda-sys is off, and for documentation builds).
#
#   bash scripts/snapshot.sh          # regenerates them (after a bindgen update, or a new release)
#   bash scripts/snapshot.sh --check  # regenerates them elsewhere and fails on any difference
#
# The newest releases are looked up and installed when missing by scripts/toolkits.sh; each is built
# in its own target folder, target/toolkits/X.Y, as there. Needs libclang (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
SYS_PKG=${SYS_PKG:-ordo-cuda-sys}
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "snapshot: unknown argument $1 (--check or nothing)" >&2; exit 2 ;;
esac
homes=$(bash scripts/toolkits.sh --newest --homes)
[ -n "$homes" ] || { echo "snapshot: no toolkit to generate from" >&2; exit 1; }
status=0
while read -r rel root; do
  major=${rel%%.*}
  snapshot=cuda-sys/src/snapshot/cuda$major.rs
  # The build script's own output (OUT_DIR/bindings.rs), and how it was made.
  info=$(env -u CUDA_PATH CUDA_HOME="$root" CARGO_TARGET_DIR="$PWD/target/toolkits/$rel" \
    cargo build -p "$SYS_PKG" --locked --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "build-script-executed" and "/cuda-sys#" in m.get("package_id", ""):
        env = dict(m.get("env", []))
        print(env.get("ORDO_CUDA_BINDINGS", "?"), m["out_dir"])
') || { echo "snapshot: building $SYS_PKG against CUDA $rel failed" >&2; exit 1; }
  read -r made out_dir <<< "$info"
  if [ "$made" != bindgen ]; then
    echo "snapshot: the CUDA $rel build did not run bindgen ($made): is libclang installed?" >&2
    exit 1
  fi
  if [ "$check" = 1 ]; then
    if cmp -s "$out_dir/bindings.rs" "$snapshot"; then
      echo "snapshot: $snapshot is what bindgen makes from CUDA $rel"
    else
      echo "snapshot: $snapshot differs from what bindgen makes from CUDA $rel (bash scripts/snapshot.sh rewrites it):"
      diff -u "$snapshot" "$out_dir/bindings.rs" | head -n 40 || true
      status=1
    fi
  else
    mkdir -p "$(dirname "$snapshot")"
    cp "$out_dir/bindings.rs" "$snapshot"
    echo "snapshot: $snapshot from CUDA $rel ($(wc -c < "$snapshot") bytes)"
  fi
done <<< "$homes"
exit $status
