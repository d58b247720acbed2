#!/usr/bin/env bash
# Starts the project's local S3: a throwaway single-node Ceph cluster (1 mon, 1 memstore OSD,
# no mgr) plus radosgw (beast) on 127.0.0.1, no systemd. Everything lives in one state dir;
# stop it with s3-down.sh (PID files only). Prints the endpoint URL as the only stdout line
# (progress goes to stderr) and writes "$TESSERA_S3_DIR/env" with the TESSERA_S3_* exports.
#
#   TESSERA_S3_DIR         state dir (default /tmp/tessera-s3); wiped on each fresh start
#   TESSERA_S3_PORT        radosgw port (default 7480)
#   TESSERA_S3_ACCESS_KEY  S3 access key (default tessera)
#   TESSERA_S3_SECRET_KEY  S3 secret key (default tessera-secret)
#   TESSERA_S3_MON_PORT    mon msgr2 port (default 3300); msgr1 uses it + 3489 (6789 by default)
#
# If this state dir's instance is already running with the same port and keys, it is reused.
# Data is in memory (memstore): a restart starts empty. Written for Ceph 16.2, as Debian
# bookworm ships it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
D=${TESSERA_S3_DIR:-/tmp/tessera-s3}
PORT=${TESSERA_S3_PORT:-7480}
ACCESS=${TESSERA_S3_ACCESS_KEY:-tessera}
SECRET=${TESSERA_S3_SECRET_KEY:-tessera-secret}
MON_V2=${TESSERA_S3_MON_PORT:-3300}
MON_V1=$((MON_V2 + 3489))
ENDPOINT="http://127.0.0.1:$PORT"
log() { echo "s3-up: $*" >&2; }
answers() { curl -s -o /dev/null --max-time 1 "$ENDPOINT/"; }

for b in ceph ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph-authtool curl; do
  command -v "$b" >/dev/null || { log "missing $b: run infra/local/install-deps.sh"; exit 1; }
done

ENVFILE_WANT="export TESSERA_S3_ENDPOINT=$ENDPOINT
export TESSERA_S3_ACCESS_KEY=$ACCESS
export TESSERA_S3_SECRET_KEY=$SECRET
export TESSERA_S3_DIR=$D"

# Reuse a healthy instance of this state dir started with the same settings.
if [ -f "$D/env" ] && [ "$(cat "$D/env")" = "$ENVFILE_WANT" ] && [ -f "$D/run/client.rgw.pid" ] \
  && kill -0 "$(cat "$D/run/client.rgw.pid")" 2>/dev/null && answers; then
  log "already running (state $D)"
  echo "$ENDPOINT"
  exit 0
fi

TESSERA_S3_DIR="$D" "$HERE/s3-down.sh"
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$PORT" "$MON_V2" "$MON_V1"; do
  if listening "$p"; then log "port $p is in use by another process (not this state dir's instance)"; exit 1; fi
done

# Wipe only a dir this script created (marker file), never an arbitrary path given by mistake.
if [ -e "$D" ]; then
  if [ -f "$D/.tessera-s3" ] || [ -z "$(ls -A "$D")" ]; then rm -rf "$D"
  else log "$D exists and is not a tessera-s3 state dir; refusing to wipe it"; exit 1; fi
fi
mkdir -p "$D"/{run,log,mon/a,osd/0}
touch "$D/.tessera-s3"
# A failure half way leaves no daemons behind.
trap 'rc=$?; [ $rc -ne 0 ] && { log "failed, see $D/log; stopping"; TESSERA_S3_DIR="$D" "$HERE/s3-down.sh"; }; exit $rc' EXIT

FSID=$(cat /proc/sys/kernel/random/uuid)
C="$D/ceph.conf"
# auth none everywhere: loopback-only test cluster. "ms mon client mode = crc" for radosgw is
# required: without it radosgw hangs at start (get_initial_auth_request returned -13).
# Size-1 pools, chooseleaf 0 and a high pg-per-osd limit let one OSD hold every pool; the
# short paxos intervals make each mon command (pool create, osd new) commit in milliseconds.
cat > "$C" <<CONF
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
run dir = $D/run
pid file = $D/run/\$name.pid
admin socket = $D/run/\$name.asok
log file = $D/log/\$name.log
keyring = $D/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
[mon]
paxos propose interval = 0.01
paxos min wait = 0.001
[mon.a]
mon data = $D/mon/a
[osd.0]
osd data = $D/osd/0
osd objectstore = memstore
memstore device bytes = 2147483648
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw data = $D/rgw
ms mon client mode = crc
CONF
export CEPH_CONF="$C"

ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]" "$D/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$D/monmap" --keyring "$D/keyring" >>"$D/log/mkfs.out" 2>&1
ceph-mon -i a >>"$D/log/daemons.out" 2>&1          # daemonizes; pid in $D/run/mon.a.pid
OSD_UUID=$(cat /proc/sys/kernel/random/uuid)
OSD_ID=$(ceph osd new "$OSD_UUID" 2>>"$D/log/mkfs.out")   # -> 0
ceph-osd -i "$OSD_ID" --mkfs --osd-uuid "$OSD_UUID" >>"$D/log/mkfs.out" 2>&1
ceph-osd -i "$OSD_ID" >>"$D/log/daemons.out" 2>&1
log "mon + osd started (state $D)"

# Pre-create the rgw pools in ONE ceph CLI session (it reads commands from stdin): each separate
# `ceph` run costs a python start + mon handshake, and pools radosgw creates lazily make the
# first S3 requests wait ~10 s. The mon accepts pool creation before the OSD reports up.
POOLS=".rgw.root default.rgw.log default.rgw.control default.rgw.meta default.rgw.buckets.index default.rgw.buckets.data default.rgw.buckets.non-ec"
for p in $POOLS; do echo "osd pool create $p 8 8"; echo "osd pool application enable $p rgw"; done \
  | ceph >>"$D/log/pools.out" 2>&1

for i in $(seq 1 100); do
  ceph osd stat 2>/dev/null | grep -q '1 up' && break
  [ "$i" = 100 ] && { log "osd.0 not up"; exit 1; }
  sleep 0.1
done

# The user is created before radosgw starts: radosgw-admin notifies running gateways of the
# change and, if a gateway is registered but dead, waits 30 s for its answer.
radosgw-admin user create --uid=tessera --display-name=tessera \
  --access-key="$ACCESS" --secret-key="$SECRET" >>"$D/log/mkfs.out" 2>&1
radosgw -n client.rgw >>"$D/log/daemons.out" 2>&1   # daemonizes; pid in $D/run/client.rgw.pid
for i in $(seq 1 300); do
  answers && break
  # Fail fast when radosgw died (e.g. the port is taken by a non-HTTP listener).
  rgw_pid=$(cat "$D/run/client.rgw.pid" 2>/dev/null || true)
  if [ "$i" -gt 5 ] && { [ -z "$rgw_pid" ] || ! kill -0 "$rgw_pid" 2>/dev/null; }; then
    log "radosgw exited; see $D/log/client.rgw.log"; exit 1
  fi
  [ "$i" = 300 ] && { log "radosgw not answering on $ENDPOINT"; exit 1; }
  sleep 0.1
done

echo "$ENVFILE_WANT" > "$D/env"
log "radosgw up on $ENDPOINT (access key $ACCESS; exports in $D/env)"
echo "$ENDPOINT"
