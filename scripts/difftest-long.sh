#!/usr/bin/env bash
# A long differential run by hand (docs/conformance.md): N seeds in batches of 1,000,
# each seed with and without --preemption in both versions, going on past
# disagreements; every shrunk case lands under target/difftest/.
# usage: scripts/difftest-long.sh ORACLE_DIR [SEEDS] [SEED_BASE]
set -uo pipefail
cd "$(dirname "$0")/.."
oracles=${1:?usage: scripts/difftest-long.sh ORACLE_DIR [SEEDS] [SEED_BASE]}
total=${2:-50000}
base=${3:-$(( $(date +%s) % 1000000000 * 1000 ))}
cargo build --release -p kubesched-cli -p kubesched-difftest || exit 2
failed=0
for (( start = base; start < base + total; start += 1000 )); do
  count=$(( base + total - start < 1000 ? base + total - start : 1000 ))
  target/release/kubesched-difftest --kubesched target/release/kubesched \
    --oracle-dir "$oracles" --seed-base "$start" --count "$count" --both-modes \
    --out target/difftest
  status=$?
  [ "$status" = 2 ] && exit 2
  [ "$status" = 1 ] && failed=1
done
echo "seeds $base..$(( base + total - 1 )) done; disagreements: $([ $failed = 1 ] && echo 'yes, see target/difftest/' || echo none)"
exit $failed
