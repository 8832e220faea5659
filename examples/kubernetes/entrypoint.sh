#!/bin/sh
# The entry point of statefulset.yaml's pods (no training operator): this
# pod's TF_CONFIG from its name, then `actorflow launch --cluster tf_config`
# for this one task: a ps task serves, a worker runs the program given as
# arguments.
#
#   POD_NAME          PREFIX-JOB-ORDINAL, e.g. actorflow-worker-1: the StatefulSet
#                     actorflow-worker's pod 1 is /job:worker/task:1 (default: hostname)
#   NAMESPACE         the pods' namespace
#   SERVICE           the headless Service both StatefulSets name (serviceName)
#   PS_REPLICAS, WORKER_REPLICAS
#                     the StatefulSets' replicas (the cluster's size)
#   PORT              the port every task serves on (default 2222)
#   CLUSTER_DOMAIN    appended to the names when set (e.g. cluster.local)
#   ACTORFLOW         the actorflow command (default: actorflow on PATH)
#   STAY_AFTER_SUCCESS=1
#                     a StatefulSet restarts a container that exits, even with 0:
#                     after the task has finished, wait (until the StatefulSet is
#                     deleted) instead of training again; a marker in DONE_DIR
#                     (default /run/actorflow, an emptyDir: it survives container
#                     restarts, not the pod) remembers it.
# Every task's address is PREFIX-JOB-I.SERVICE.NAMESPACE.svc[.CLUSTER_DOMAIN]:PORT,
# the DNS name the headless Service gives pod I of StatefulSet PREFIX-JOB.
# Exit status: the launch's (the task's own; 2 for a bad configuration).
set -eu

fail() {
  echo "entrypoint.sh: $*" >&2
  exit 2
}

name=${POD_NAME:-$(hostname)}
: "${NAMESPACE:?entrypoint.sh: NAMESPACE must be set (the namespace of the pods)}"
: "${SERVICE:?entrypoint.sh: SERVICE must be set (the headless Service)}"
: "${PS_REPLICAS:?entrypoint.sh: PS_REPLICAS must be set}"
: "${WORKER_REPLICAS:?entrypoint.sh: WORKER_REPLICAS must be set}"
PORT=${PORT:-2222}
ACTORFLOW=${ACTORFLOW:-actorflow}

index=${name##*-}
set_name=${name%-*}
job=${set_name##*-}
prefix=${set_name%-*}
case "$index" in '' | *[!0-9]*) fail "pod name '$name' does not end in -ORDINAL" ;; esac
case "$job" in ps | worker) ;; *) fail "pod name '$name' is not PREFIX-ps-N or PREFIX-worker-N" ;; esac
[ "$prefix" != "$set_name" ] || fail "pod name '$name' has no PREFIX before -$job-$index"

# "PREFIX-JOB-0.SERVICE...:PORT","PREFIX-JOB-1...", for JOB ($1) and its count ($2).
addresses() {
  i=0
  sep=
  while [ "$i" -lt "$2" ]; do
    printf '%s"%s-%s-%d.%s.%s.svc%s:%s"' "$sep" "$prefix" "$1" "$i" "$SERVICE" "$NAMESPACE" \
      "${CLUSTER_DOMAIN:+.$CLUSTER_DOMAIN}" "$PORT"
    sep=,
    i=$((i + 1))
  done
}

TF_CONFIG=$(printf '{"cluster":{"ps":[%s],"worker":[%s]},"task":{"type":"%s","index":%d}}' \
  "$(addresses ps "$PS_REPLICAS")" "$(addresses worker "$WORKER_REPLICAS")" "$job" "$index")
export TF_CONFIG

# Waits until the pod is deleted (SIGTERM ends it at once).
stay() {
  echo "entrypoint.sh: $job:$index $1; waiting (delete the StatefulSets to end)"
  trap 'exit 0' TERM INT
  while :; do
    sleep 3600 &
    wait $! || :
  done
}

done_marker=${DONE_DIR:-/run/actorflow}/done
if [ "${STAY_AFTER_SUCCESS:-0}" = 1 ] && [ -f "$done_marker" ]; then stay "finished already"; fi

# The launch as a child, which SIGTERM and SIGINT reach (a shell that is a
# container's PID 1 would ignore them itself).
"$ACTORFLOW" launch --cluster tf_config -- "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null || :' TERM INT
while :; do
  status=0
  wait "$child" || status=$?
  kill -0 "$child" 2>/dev/null || break  # gone: $status is its exit status, not a signal's interruption
done
trap - TERM INT
if [ "$status" = 0 ] && [ "${STAY_AFTER_SUCCESS:-0}" = 1 ]; then
  mkdir -p "$(dirname "$done_marker")" && touch "$done_marker"
  stay "finished"
fi
exit "$status"
