#!/usr/bin/env bash
# The declared minimum Rust versions, checked offline (docs/api-stability.md#minimum-
# supported-rust-version): no other toolchain can be installed here, so instead of
# building with the old compiler this checks that (1) each published crate declares a
# `rust-version` at least as high as every dependency it pulls in with its default
# features declares (from Cargo.lock's resolved versions), and (2) clippy's
# `incompatible_msrv` lint, which runs in CI's clippy step and reads `rust-version`,
# finds no standard-library API newer than it. Language features (let-chains need
# 1.88) are not checked by either: they are why the floor is 1.88.
set -euo pipefail
cd "$(dirname "$0")/.."
metadata=$(mktemp)
trap 'rm -f "$metadata"' EXIT
cargo metadata --format-version 1 --locked > "$metadata"
status=0
for crate in kubesched-config kubesched-framework kubesched-plugins kubesched-sim kubesched-replay \
  kubesched-report kubesched-kube kubesched-cli kubesched; do
  cargo tree --locked -p "$crate" -e normal --prefix none -f '{p}' 2>/dev/null \
    | awk '{print $1, $2}' | sort -u \
    | python3 -c '
import json, sys
crate = sys.argv[1]
meta = json.load(open(sys.argv[2]))
rv = {(p["name"], "v" + p["version"]): p.get("rust_version") for p in meta["packages"]}
def key(v): return (tuple(int(x) for x in v.split(".")) + (0, 0, 0))[:3]
declared = rv[(crate, "v" + next(p["version"] for p in meta["packages"] if p["name"] == crate))]
worst = max(((rv.get((n, v)) or "0", n + " " + v) for n, v in (l.split() for l in sys.stdin if l.strip()) if n != crate),
            key=lambda x: key(x[0]))
ok = key(worst[0]) <= key(declared)
verdict = "ok" if ok else "TOO LOW"
print(f"{crate:<22} rust-version {declared:<6} highest dependency: {worst[1]} ({worst[0]}) {verdict}")
sys.exit(0 if ok else 1)
' "$crate" "$metadata" || status=1
done
exit $status
