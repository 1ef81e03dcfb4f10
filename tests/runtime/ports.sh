#!/usr/bin/env bash
# A local run opens no network port (docs/runtime.md, "What a run exposes"): during a
# `burst train --nproc 2` run, no socket of the launcher or its workers listens on an
# address other than loopback (/proc/net/tcp and tcp6, by the sockets' inodes). The run's
# own connected sockets must be seen too, so the check cannot pass by seeing nothing.
#
# usage: ports.sh BURST
set -uo pipefail
burst=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill -KILL "$launcher" 2>/dev/null; wait "$launcher" 2>/dev/null; pkill -KILL -f -- "$work" 2>/dev/null; rm -rf "$work"' EXIT

"$burst" train --model fmnist_cnn --dataset synthetic --global-batch 16 --nproc 2 --steps 100000 --log-every 1 \
  --save-params "$work/never.pt" > "$work/run.out" 2> "$work/run.err" &
launcher=$!
deadline=$((SECONDS + 120))
until grep -qE "^step +3 " "$work/run.out"; do
  if [ $SECONDS -ge $deadline ] || ! kill -0 "$launcher" 2>/dev/null; then
    echo "FAIL: the run never reached step 3:"; tail -n 3 "$work/run.err"; exit 1
  fi
  sleep 0.2
done
failures=0
seen=0
for sample in 1 2 3 4 5; do  # listeners may come and go: look several times
  python3 "$here/check_ports.py" "$launcher" > "$work/sockets"
  seen=$((seen + $(wc -l < "$work/sockets")))
  while read -r state endpoint; do
    host=${endpoint%:*}
    if [ "$state" = LISTEN ] && [ "$host" != 127.0.0.1 ] && [ "$host" != ::1 ]; then
      echo "FAIL: the run listens on $endpoint"
      failures=$((failures + 1))
    fi
  done < "$work/sockets"
  sleep 0.5
done
if [ "$seen" -eq 0 ]; then echo "FAIL: saw no socket of the run at all (the check would see nothing)"; exit 1; fi
[ "$failures" -eq 0 ] || exit 1
echo "ok: $seen socket observations of the run over 5 samples, none listening beyond loopback:"
sed 's/^/    /' "$work/sockets"
