#!/usr/bin/env bash
# A run across two hosts, the torchrun way: two network namespaces joined by a veth pair
# (10.231.x addresses that exist only inside them), one rank in each with RANK, WORLD_SIZE,
# LOCAL_RANK, MASTER_ADDR (rank 0's veth address) and MASTER_PORT. The host name resolves
# as on the machine (often to 127.0.0.1, as in many containers), so the ranks must bind the
# address that reaches the master, or the interface GLOO_SOCKET_IFNAME names (docs/runtime.md):
#  - with GLOO_SOCKET_IFNAME, and without it: both equal one process within 1e-9 (float64);
#  - an interface that does not exist is refused: exit 2, one line, before connecting.
# Needs root (ip netns); exits 77 (ctest: skipped) saying why where namespaces cannot be made.
#
# usage: two_hosts.sh BURST PYTHON_WITH_TORCH MODEL_DIR
set -uo pipefail
burst=$1
python=$2
models=$3
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "skipped: $1"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "making network namespaces needs root"
command -v ip >/dev/null || skip "no ip command (iproute2)"
id=$$
a="burst-a-$id" b="burst-b-$id" va="bva$id" vb="bvb$id"
work=$(mktemp -d)
cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
ip netns add "$a" 2>/dev/null && ip netns add "$b" || skip "ip netns add failed (no permission for namespaces here)"
ip link add "$va" type veth peer name "$vb" || skip "cannot make a veth pair"
ip link set "$va" netns "$a" && ip link set "$vb" netns "$b" &&
  ip -n "$a" addr add 10.231.0.1/24 dev "$va" && ip -n "$b" addr add 10.231.0.2/24 dev "$vb" &&
  ip -n "$a" link set "$va" up && ip -n "$b" link set "$vb" up &&
  ip -n "$a" link set lo up && ip -n "$b" link set lo up || { echo "FAIL: cannot set up the namespaces"; exit 1; }

common=(--model "$models/resnet_like.json" --global-batch 8 --steps 3 --seed 5 --lr 0.01 --dtype float64
        --log-every 100 --timeout 30)
failures=0

# NAME INTERFACES(yes|no): rank 0 in namespace a, rank 1 in b; rank 0 saves the parameters.
two_ranks() {
  local name=$1 named=$2 pids=() rc=0
  for rank in 0 1; do
    local ns=$a dev=$va
    [ "$rank" = 1 ] && ns=$b dev=$vb
    local env_vars=(RANK=$rank WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=10.231.0.1 MASTER_PORT=29531)
    [ "$named" = yes ] && env_vars+=(GLOO_SOCKET_IFNAME="$dev")
    ip netns exec "$ns" env "${env_vars[@]}" "$burst" train "${common[@]}" --save-params "$work/$name.pt" \
      > "$work/$name.$rank.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  if [ $rc -ne 0 ]; then
    echo "FAIL: $name: a rank failed:"
    tail -n 3 "$work/$name".*.log | sed 's/^/    | /'
    failures=$((failures + 1))
  fi
}

"$burst" train "${common[@]}" --save-params "$work/one.pt" > "$work/one.log" 2>&1 ||
  { echo "FAIL: one process failed"; tail -n 3 "$work/one.log"; exit 1; }
two_ranks interface yes
two_ranks reach no
[ $failures -eq 0 ] && "$python" "$here/compare_params.py" --many "$work/one.pt" 1e-9 \
  "2 hosts, GLOO_SOCKET_IFNAME naming the veth=$work/interface.pt" "2 hosts, the address that reaches the master=$work/reach.pt" ||
  failures=$((failures + 1))

rc=0
ip netns exec "$a" env RANK=0 WORLD_SIZE=2 MASTER_ADDR=10.231.0.1 MASTER_PORT=29532 GLOO_SOCKET_IFNAME=burst_none0 \
  "$burst" train "${common[@]}" > "$work/refused.out" 2> "$work/refused.err" || rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l < "$work/refused.err")" -eq 1 ] && grep -q "no interface 'burst_none0'" "$work/refused.err"; then
  echo "ok: refused: $(cat "$work/refused.err")"
else
  echo "FAIL: GLOO_SOCKET_IFNAME=burst_none0 gave exit $rc: $(cat "$work/refused.err")"
  failures=$((failures + 1))
fi
[ $failures -eq 0 ] || { echo "two_hosts: $failures failure(s)"; exit 1; }
echo "two_hosts: 2 ranks in 2 network namespaces equal one process (float64), with and without GLOO_SOCKET_IFNAME"
