#!/usr/bin/env bash
# Simulated hosts on one machine (issue 31): N network namespaces as hosts,
# each with its own PID namespace, linked through a bridge, with per-link rate
# limits. The one harness the multi-host tests (tests/multihost_test.cpp) and
# benchmarks (bench/) use.
#
# Layout of a set NAME with N hosts (nothing in the root namespace changes):
#   namespace NAME-br   bridge br0 with ports p0..p{N-1} (and lo)
#   namespace NAME-hI   host I: eth0 = SUBNET.(I+1)/24 (veth to pI), lo up
#   a holder per host: `unshare --pid --fork --mount-proc` in NAME-hI, whose
#   init (PID 1 of the host's PID namespace, `sleep infinity`) every `exec`
#   joins: tasks of one host share a PID namespace (the transport's same-host
#   path, comm/same_host.hpp, works between them), tasks of two hosts do not
#   (it is refused, as between machines).
#   state in $ACTORFLOW_NETNS_STATE (default /run/actorflow-netns)/NAME: the
#   holders' PIDs, the host count, the subnet.
# Killing a host's init kills every process of that host; `down` does that
# for each host (by the PIDs recorded) and deletes the namespaces, which
# removes the veths and the bridge with them.
#
# Requires root (CAP_SYS_ADMIN, CAP_NET_ADMIN), iproute2 (ip, tc with tbf),
# util-linux (unshare, nsenter, setpriv). `check` says whether they work.
set -euo pipefail

STATE_ROOT=${ACTORFLOW_NETNS_STATE:-/run/actorflow-netns}

usage() {
  cat <<'EOF'
usage: hosts.sh COMMAND ...
  check                          exit 0 when namespaces, veth, bridge and tbf work here (else why, exit 1)
  up NAME N [--rate RATE] [--subnet A.B.C] [--owner PID]
                                 N hosts NAME-h0..NAME-h{N-1} on a bridge in NAME-br; host I has
                                 address A.B.C.(I+1) (default subnet 10.77.0); RATE (e.g. 1gbit,
                                 500mbit) limits every link, both directions (tc tbf); PID: the
                                 process the set belongs to (see prune)
  exec NAME I CMD [ARG...]       runs CMD on host I (its network, PID and mount namespaces; cwd and
                                 environment kept); exits with CMD's code; killed, it passes SIGTERM
                                 on to CMD (CMD's parent-death signal)
  ip NAME I                      prints host I's address
  pid NAME I                     prints the PID (in the root namespace) of host I's init
  link NAME I down|up            takes host I's link (its bridge port) down or up: its peers hear
                                 nothing from it, it hears nothing from them
  rate NAME I RATE|none          sets (or removes) host I's link rate, both directions
  down NAME                      kills every process of every host (by the recorded PIDs),
                                 deletes the namespaces; succeeds when nothing is left
  list                           the sets that are up
  prune                          takes down every set whose owner (up --owner) has exited: what a
                                 test killed before its clean-up left
Names: letters, digits, '_' and '-', at most 24 characters.
EOF
}

die() { echo "hosts.sh: $*" >&2; exit 1; }

check_name() {
  [[ $1 =~ ^[A-Za-z0-9_-]{1,24}$ ]] || die "bad set name '$1' (letters, digits, _ -; at most 24)"
}

state_dir() { echo "$STATE_ROOT/$1"; }

host_count() {
  local f
  f="$(state_dir "$1")/hosts"
  [[ -f $f ]] || die "no host set '$1' (see: hosts.sh list)"
  cat "$f"
}

check_host() {  # NAME I
  local n
  n=$(host_count "$1")
  if ! [[ $2 =~ ^[0-9]+$ ]] || (($2 >= n)); then die "no host $2 in '$1' (hosts 0..$((n - 1)))"; fi
}

# Bytes of burst for a tbf at RATE: at least 1 ms at that rate, and more than
# the largest (GSO) packet a veth hands over.
burst_for() {
  local r=${1,,} num unit bits
  [[ $r =~ ^([0-9]+)(bit|kbit|mbit|gbit)$ ]] || die "bad rate '$1' (e.g. 100mbit, 1gbit)"
  num=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[2]}
  case $unit in
    bit) bits=$num ;;
    kbit) bits=$((num * 1000)) ;;
    mbit) bits=$((num * 1000000)) ;;
    gbit) bits=$((num * 1000000000)) ;;
  esac
  local b=$((bits / 8 / 1000))
  ((b < 262144)) && b=262144
  echo "$b"
}

set_rate() {  # NAME I RATE|none
  local name=$1 i=$2 rate=$3 dev
  for dev in "$name-h$i:eth0" "$name-br:p$i"; do
    local ns=${dev%%:*} ifc=${dev#*:}
    if [[ $rate == none ]]; then
      ip -n "$ns" link show "$ifc" >/dev/null
      tc -n "$ns" qdisc del dev "$ifc" root 2>/dev/null || true
    else
      tc -n "$ns" qdisc replace dev "$ifc" root tbf rate "$rate" burst "$(burst_for "$rate")" latency 50ms
    fi
  done
}

cmd_check() {
  [[ $(id -u) == 0 ]] || { echo "not root"; return 1; }
  local tool
  for tool in ip tc unshare nsenter setpriv; do
    command -v "$tool" >/dev/null || { echo "$tool not installed"; return 1; }
  done
  local t="afchk$$" st why=""
  st=$(mktemp -d)
  export ACTORFLOW_NETNS_STATE=$st
  if ! "$0" up "$t" 2 --rate 1gbit >/dev/null 2>&1 || ! "$0" exec "$t" 0 true >/dev/null 2>&1; then
    why="cannot make network or PID namespaces, veth pairs, a bridge or a tbf qdisc here"
  fi
  "$0" down "$t" >/dev/null 2>&1 || true
  rm -rf "$st"
  [[ -z $why ]] || { echo "$why"; return 1; }
  echo "ok"
}

cmd_up() {
  local name=$1 n=$2 rate="" subnet=10.77.0 owner=""
  shift 2
  while (($#)); do
    case $1 in
      --rate) rate=$2; shift 2 ;;
      --subnet) subnet=$2; shift 2 ;;
      --owner) owner=$2; shift 2 ;;
      *) die "up: unknown option '$1'" ;;
    esac
  done
  check_name "$name"
  if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 250)); then die "up: host count '$n' (1..250)"; fi
  [[ $subnet =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "up: bad subnet '$subnet' (A.B.C)"
  [[ -z $rate ]] || burst_for "$rate" >/dev/null
  [[ -z $owner || $owner =~ ^[0-9]+$ ]] || die "up: bad owner PID '$owner'"
  local dir
  dir=$(state_dir "$name")
  [[ ! -e $dir ]] || die "up: set '$name' exists (hosts.sh down $name)"
  mkdir -p "$dir"
  echo "$n" >"$dir/hosts"
  echo "$subnet" >"$dir/subnet"
  # The owner, with its start time (a PID may be reused): /proc/PID/stat's 22nd field.
  [[ -z $owner ]] || echo "$owner $(start_time "$owner")" >"$dir/owner"
  # From here on a failure takes down what was made.
  trap 'cmd_down "$name" >/dev/null 2>&1 || true' ERR
  ip netns add "$name-br"
  ip -n "$name-br" link set lo up
  ip -n "$name-br" link add br0 type bridge
  ip -n "$name-br" link set br0 up
  local i
  for ((i = 0; i < n; i++)); do
    ip netns add "$name-h$i"
    ip -n "$name-h$i" link set lo up
    ip -n "$name-br" link add "p$i" type veth peer name eth0 netns "$name-h$i"
    ip -n "$name-br" link set "p$i" master br0 up
    ip -n "$name-h$i" addr add "$subnet.$((i + 1))/24" dev eth0
    ip -n "$name-h$i" link set eth0 up
    [[ -z $rate ]] || set_rate "$name" "$i" "$rate"
    # The holder: init of the host's PID namespace, in its own session, its
    # output nowhere; its PID (as the root namespace sees it) is recorded.
    setsid ip netns exec "$name-h$i" unshare --pid --fork --mount-proc sleep infinity \
      </dev/null >/dev/null 2>&1 &
    local outer=$! init="" tries
    for ((tries = 0; tries < 500; tries++)); do
      init=$(awk '{print $1}' "/proc/$outer/task/$outer/children" 2>/dev/null) || true
      # ip netns exec execs unshare in place; unshare forks init.
      if [[ -n $init ]] && [[ $(readlink "/proc/$init/ns/pid") != $(readlink /proc/$$/ns/pid) ]]; then break; fi
      init=""
      sleep 0.01
    done
    [[ -n $init ]] || { kill -KILL "$outer" 2>/dev/null || true; die "up: host $i's PID namespace did not start"; }
    echo "$outer" >"$dir/holder$i"
    echo "$init" >"$dir/init$i"
  done
  trap - ERR
  for ((i = 0; i < n; i++)); do echo "$name-h$i $subnet.$((i + 1))"; done
}

init_pid() {  # NAME I -> PID of host I's init, checked to be alive
  local p
  p=$(cat "$(state_dir "$1")/init$2")
  [[ -d /proc/$p ]] || die "host $2 of '$1' is gone (its init $p exited)"
  echo "$p"
}

cmd_exec() {
  local name=$1 i=$2
  shift 2
  (($#)) || die "exec: no command"
  check_host "$name" "$i"
  local p
  p=$(init_pid "$name" "$i")
  exec nsenter -t "$p" --net --pid --mount --wd="$PWD" -- setpriv --pdeathsig TERM -- "$@"
}

start_time() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null || echo gone; }

cmd_prune() {
  local dir owner started
  for dir in "$STATE_ROOT"/*/; do
    [[ -f $dir/owner ]] || continue
    read -r owner started <"$dir/owner"
    [[ $(start_time "$owner") == "$started" ]] && continue
    echo "hosts.sh: pruning $(basename "$dir") (owner $owner exited)" >&2
    cmd_down "$(basename "$dir")" || true
  done
}

cmd_down() {
  local name=$1 dir n i
  check_name "$name"
  dir=$(state_dir "$name")
  n=$(cat "$dir/hosts" 2>/dev/null || echo 0)
  for ((i = 0; i < n; i++)); do
    local p
    p=$(cat "$dir/init$i" 2>/dev/null) || continue
    # Killing a PID namespace's init kills every process in it.
    kill -KILL "$p" 2>/dev/null || true
  done
  for ((i = 0; i < n; i++)); do
    local h
    h=$(cat "$dir/holder$i" 2>/dev/null) || continue
    kill -KILL "$h" 2>/dev/null || true
  done
  for ((i = 0; i < n; i++)); do ip netns del "$name-h$i" 2>/dev/null || true; done
  ip netns del "$name-br" 2>/dev/null || true
  rm -rf "$dir"
  local left
  left=$(ip netns list | awk '{print $1}' | grep -E "^$name-(br|h[0-9]+)$" || true)
  [[ -z $left ]] || die "down: namespaces left: $left"
}

main() {
  (($#)) || { usage; exit 2; }
  local c=$1
  shift
  case $c in
    check) cmd_check ;;
    up) (($# >= 2)) || die "up NAME N"; cmd_up "$@" ;;
    exec) (($# >= 3)) || die "exec NAME I CMD..."; cmd_exec "$@" ;;
    ip) (($# == 2)) || die "ip NAME I"; check_host "$1" "$2"; echo "$(cat "$(state_dir "$1")/subnet").$(($2 + 1))" ;;
    pid) (($# == 2)) || die "pid NAME I"; check_host "$1" "$2"; init_pid "$1" "$2" ;;
    link)
      (($# == 3)) || die "link NAME I down|up"
      check_host "$1" "$2"
      [[ $3 == down || $3 == up ]] || die "link: '$3' (down|up)"
      ip -n "$1-br" link set "p$2" "$3"
      ;;
    rate) (($# == 3)) || die "rate NAME I RATE|none"; check_host "$1" "$2"; set_rate "$@" ;;
    down) (($# == 1)) || die "down NAME"; cmd_down "$1" ;;
    list) ls "$STATE_ROOT" 2>/dev/null || true ;;
    prune) cmd_prune ;;
    -h | --help | help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
