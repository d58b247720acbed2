#!/usr/bin/env bash
# Stops the daemons s3-up.sh started, by the PID files in its state dir only (never by process
# name: other Ceph instances may run on this machine). Safe to run when nothing is running.
# radosgw goes first: if the OSD and mon go away under it, its shutdown waits on RADOS and runs
# into the KILL timeout. radosgw can ignore SIGTERM for up to 120 s, so every stage ends in
# SIGKILL after 3 s (nothing is lost: the store is memstore and s3-up starts from scratch).
D=${TESSERA_S3_DIR:-/tmp/tessera-s3}
stopped=""

# stop_daemons NAME...: TERM the named daemons, wait up to 3 s, KILL the rest, wait until gone.
stop_daemons() {
  local pids="" n f p alive
  for n in "$@"; do
    f="$D/run/$n.pid"
    [ -f "$f" ] || continue
    p=$(cat "$f" 2>/dev/null)
    # Only signal the PID if it still is a ceph daemon (the file may be stale, the PID reused).
    case "$(cat "/proc/$p/comm" 2>/dev/null)" in
      radosgw|ceph-osd|ceph-mon) kill "$p" 2>/dev/null && pids="$pids $p" ;;
    esac
  done
  [ -z "$pids" ] && return 0
  stopped="$stopped$pids"
  for i in $(seq 1 60); do
    alive=""
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
    [ -z "$alive" ] && return 0
    [ "$i" = 30 ] && for p in $alive; do kill -9 "$p" 2>/dev/null; done
    sleep 0.1
  done
  echo "s3-down: still alive after SIGKILL:$alive" >&2
}

stop_daemons client.rgw
stop_daemons osd.0 mon.a
rm -f "$D"/run/*.pid "$D/env"
[ -n "$stopped" ] && echo "s3-down: stopped$stopped" >&2
exit 0
