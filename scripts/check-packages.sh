#!/usr/bin/env bash
# The published crates as crates.io would get them: `cargo package` for each (manifest,
# metadata, include lists, versions on every dependency), each .crate's size, then
# every unpacked .crate type-checked against the others, as `cargo publish --dry-run`
# would verify them, but with `cargo check` in the workspace's target directory rather
# than a full build of each crate in a target of its own (measured: 12 minutes or
# more on 2 cores for the verified dry run, about one for this). What this misses: code
# generation and linking of the packaged sources, which the workspace's own build and
# tests cover for the same sources.
# Usage: scripts/check-packages.sh   (from the repository root; CARGO_TARGET_DIR is honoured)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
unpublished=(--exclude kubesched-envtest --exclude kubesched-difftest --exclude kubesched-apicheck)

rm -f "$target"/package/*.crate
CARGO_TARGET_DIR=$target cargo package --workspace --no-verify --allow-dirty "${unpublished[@]}" 2>&1 \
  | grep -v '^warning: ignoring \(test\|example\|benchmark\)' | grep -E 'warning|error|Packaged' || true

echo "-- package sizes (.crate, compressed) and files"
crates=()
for crate in "$target"/package/*.crate; do
  crates+=("$crate")
  files=$(tar -tzf "$crate" | grep -vc '/$')
  printf '%-34s %8d bytes %4d files\n' "$(basename "$crate")" "$(stat -c %s "$crate")" "$files"
done
[ ${#crates[@]} -eq 10 ] || { echo "expected 10 published crates, got ${#crates[@]}" >&2; exit 1; }
# Nothing from the conformance data or test fixtures.
for crate in "${crates[@]}"; do
  if tar -tzf "$crate" | grep -E '/(conformance|tests|benches|fuzz|deploy)/'; then
    echo "$(basename "$crate") ships test data" >&2
    exit 1
  fi
done

unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
members=()
patches=()
for crate in "${crates[@]}"; do
  tar -xzf "$crate" -C "$unpacked"
  dir=$(basename "$crate" .crate)
  name=${dir%-*}
  members+=("\"$dir\"")
  patches+=("$name = { path = \"$dir\" }")
done
{
  echo '[workspace]'
  echo 'resolver = "3"'
  echo "members = [$(IFS=,; echo "${members[*]}")]"
  echo '[patch.crates-io]'
  printf '%s\n' "${patches[@]}"
  # The workspace's own profile, so that the dependencies checked by clippy and
  # cargo doc are reused.
  sed -n '/^\[profile\./,$p' Cargo.toml
} > "$unpacked/Cargo.toml"
cp Cargo.lock "$unpacked/"
# Fresh mtimes: cargo then checks every packaged crate, never a cached earlier run.
find "$unpacked" -type f -exec touch {} +
echo "-- cargo check of the unpacked crates, against each other"
log=$unpacked/check.log
if ! (cd "$unpacked" && CARGO_TARGET_DIR=$target cargo check --workspace --all-features) >"$log" 2>&1; then
  cat "$log"
  echo "the packaged crates do not build against each other" >&2
  exit 1
fi
echo "$(grep -c '^ *Checking kubesched' "$log") kubesched crates checked from their packages ($(grep -c '^ *\(Checking\|Compiling\) ' "$log") units in all)"
echo "packages: ${#crates[@]} crates packaged and checked"
