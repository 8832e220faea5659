#!/usr/bin/env bash
# The tensor transport between two simulated hosts (tests/netns/hosts.sh: a
# network and a PID namespace each, a bridge, tbf on every link), as between
# machines: the same-host path is off, every byte crosses the link. For each
# link rate, 24 tensors of 4 MiB from host 0 to host 1 (tests/netns/
# transport_peer, one process per host; throughput from the first tensor's
# arrival to the last's), beside the peer: a plain TCP stream of as many bytes
# over the same link (Debian's python3 sockets, 1 MiB writes). Rounds
# interleaved, median of 3. One JSON line per (link, impl), then the ratio
# of each to the link's rate and of the transport to the stream.
#   bench/transport_multihost.sh [BUILD_DIR]   (default build/; needs root)
# Where namespaces cannot be made, prints a row saying why it skipped ({"skipped": ...}) and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
hosts=tests/netns/hosts.sh
peer=$build/tests/transport_peer
if ! why=$($hosts check 2>&1); then
  # shellcheck disable=SC1003  # the quotes and backslashes go
  printf '{"bench":"transport_multihost","skipped":"%s"}\n' "$(echo "$why" | tr -d '"\\' | head -1)"
  exit 0
fi
[[ -x $peer ]] || { printf '{"bench":"transport_multihost","error":"no %s (build the tests)"}\n' "$peer"; exit 1; }
name="afbt$$"
dir=$(mktemp -d)
cleanup() { $hosts down "$name" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
$hosts prune >/dev/null 2>&1 || true
$hosts up "$name" 2 --owner $$ >/dev/null
n=24
bytes=$((4 << 20))
cat >"$dir/stream.py" <<'EOF'
import socket, sys, time
role, ip, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if role == "recv":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((ip, 5201)); s.listen(1); print("listening", flush=True)
    c, _ = s.accept(); got = 0; t0 = None
    while got < n:
        b = c.recv(1 << 20)
        if not b: break
        if t0 is None: t0 = time.time()
        got += len(b)
    print("%.4f" % (got * 8 / (time.time() - t0) / 1e9))
else:
    c = socket.create_connection((ip, 5201)); buf = b"x" * (1 << 20); left = n
    while left > 0:
        c.sendall(buf[:min(left, len(buf))]); left -= len(buf)
    c.close()
EOF

# wait_listening LOG: until LOG says "listening" (10 s at most).
wait_listening() {
  for _ in $(seq 200); do grep -q listening "$1" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}
# transport: Gbit/s of the transport, host 0 to host 1.
transport() {
  local r=$dir/recv.log
  : >"$r"
  $hosts exec "$name" 1 "$peer" recv 10.77.0.2 7001 10.77.0.1 7002 $n >"$r" 2>&1 &
  local rp=$!
  wait_listening "$r"
  $hosts exec "$name" 0 "$peer" send 10.77.0.1 7002 10.77.0.2 7001 $n $bytes >"$dir/send.log" 2>&1
  wait "$rp"
  grep -o '"gbit_s":[0-9.]*' "$r" | cut -d: -f2
}
# stream: Gbit/s of a plain TCP stream of the same bytes (n-1 tensors' worth, as timed above).
stream() {
  local r=$dir/stream.log
  : >"$r"
  $hosts exec "$name" 1 /usr/bin/python3 "$dir/stream.py" recv 10.77.0.2 $(((n - 1) * bytes)) >"$r" 2>&1 &
  local rp=$!
  wait_listening "$r"
  $hosts exec "$name" 0 /usr/bin/python3 "$dir/stream.py" send 10.77.0.2 $(((n - 1) * bytes)) >/dev/null 2>&1
  wait "$rp"
  tail -1 "$r"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for link in 100mbit 1gbit 10gbit none; do
  for i in 0 1; do $hosts rate "$name" "$i" "$link"; done
  t=() s=()
  for _ in 1 2 3; do
    t+=("$(transport)")
    s+=("$(stream)")
  done
  tm=$(printf '%s\n' "${t[@]}" | median)
  sm=$(printf '%s\n' "${s[@]}" | median)
  case $link in
    100mbit) rate=0.1 ;; 1gbit) rate=1 ;; 10gbit) rate=10 ;; none) rate=0 ;;
  esac
  for impl in transport tcp_stream; do
    v=$([[ $impl == transport ]] && echo "$tm" || echo "$sm")
    runs=$([[ $impl == transport ]] && echo "${t[*]}" || echo "${s[*]}")
    printf '{"bench":"transport_multihost","params":{"link":"%s","bytes":%d,"tensors":%d,"impl":"%s"},"metric":"throughput","unit":"Gbit/s","median":%s,"runs":[%s]}\n' \
      "$link" "$bytes" "$n" "$impl" "$v" "$(echo "$runs" | tr ' ' ',')"
  done
  awk -v l="$link" -v r="$rate" -v t="$tm" -v s="$sm" 'BEGIN {
    printf "{\"bench\":\"transport_multihost\",\"params\":{\"link\":\"%s\"},\"ratio_transport_vs_tcp_stream\":%.3f", l, t / s
    if (r > 0) printf ",\"transport_of_link_rate\":%.3f,\"tcp_stream_of_link_rate\":%.3f", t / r, s / r
    print "}" }'
done
