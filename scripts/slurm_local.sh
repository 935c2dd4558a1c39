#!/usr/bin/env bash
# A single-node SLURM cluster on this machine (controller and the one compute node), to try and test
# `treebench run -m ... hydra/launcher=slurm` without a real cluster. Needs root (apt-get, slurmd).
#
#   scripts/slurm_local.sh start    install slurm-wlm + munge if missing, configure, start, wait for idle
#   scripts/slurm_local.sh status   daemons, node state and queue; exit 0 when the node answers
#   scripts/slurm_local.sh stop     cancel this cluster's jobs, stop the daemons this script started
#
# Both start and stop are idempotent. Daemons run without systemd, with their pid files, logs and
# state under $TREEBENCH_SLURM_DIR (default /var/lib/treebench-slurm); `stop` kills only the pids
# recorded there. The config goes to /etc/slurm/slurm.conf (where every SLURM client looks) and is
# never written over when it is not ours. Accounting is off (no slurmdbd): `sacct` fails, job states
# come from `squeue`, which keeps finished jobs for MinJobAge seconds.
set -euo pipefail

DIR="${TREEBENCH_SLURM_DIR:-/var/lib/treebench-slurm}"
CONF_DIR=/etc/slurm
CONF="$CONF_DIR/slurm.conf"
MARK="# written by treebench scripts/slurm_local.sh"
NODE="$(hostname -s)"
START_TIMEOUT_S="${SLURM_LOCAL_TIMEOUT_S:-60}"

say() { echo "slurm_local: $*"; }
die() {
  say "$*" >&2
  exit 1
}

# pid recorded in $DIR/<name>.pid when that process is alive, else nothing
alive_pid() {
  local f="$DIR/$1.pid" pid
  [ -f "$f" ] || return 1
  pid="$(cat "$f" 2>/dev/null)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# the node's state ("idle", "down*", ...); empty when the controller does not answer
node_state() { { sinfo -h -N -n "$NODE" -o %T 2>/dev/null || true; } | head -1; }

install_packages() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sinfo >/dev/null &&
    command -v munged >/dev/null; then
    return
  fi
  [ "$(id -u)" = 0 ] || die "slurm-wlm/munge are not installed and installing needs root"
  command -v apt-get >/dev/null || die "slurm-wlm/munge are not installed and there is no apt-get"
  say "installing slurm-wlm and munge (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq slurm-wlm munge >/dev/null
}

write_config() {
  if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
    die "$CONF exists and was not written by this script; not touching a real cluster's config"
  fi
  local cpus mem_mb real_mb
  cpus="$(nproc)"
  mem_mb="$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)"
  real_mb=$((mem_mb * 95 / 100)) # a little under the machine's, or slurmd drains the node
  mkdir -p "$CONF_DIR" "$DIR/state" "$DIR/spool"
  cat >"$CONF.tmp" <<EOF
$MARK; \`scripts/slurm_local.sh stop\` leaves it, \`start\` rewrites it
ClusterName=treebench-local
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
# jobs run with the niceness of the process that submitted them (sweeps next to other work)
PropagatePrioProcess=1
# quick turnaround for small test jobs: time limits checked often, short grace before SIGKILL
KillWait=5
MinJobAge=600
SchedulerParameters=sched_interval=2
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_mb State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$CONF.tmp" "$CONF"
  say "wrote $CONF (node $NODE: CPUs=$cpus RealMemory=${real_mb}MB; state in $DIR)"
}

start_munge() {
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    return # a munged answers already (ours from an earlier start, or the system's)
  fi
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    chown munge:munge /etc/munge/munge.key 2>/dev/null || true
    chmod 400 /etc/munge/munge.key
  fi
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
  local pidfile=/run/munge/munged.pid
  if id munge >/dev/null 2>&1; then
    runuser -u munge -- munged --pid-file="$pidfile"
  else
    munged --force --pid-file="$pidfile"
  fi
  cp "$pidfile" "$DIR/munged.pid"
  for _ in $(seq 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return
    sleep 0.1
  done
  die "munged does not answer (see /var/log/munge/munged.log)"
}

start() {
  install_packages
  [ "$(id -u)" = 0 ] || die "starting slurmd needs root"
  mkdir -p "$DIR"
  if alive_pid slurmctld >/dev/null && alive_pid slurmd >/dev/null; then
    case "$(node_state)" in
      idle* | mixed* | allocated* | completing*)
        say "already running (node $NODE $(node_state))"
        return
        ;;
    esac
  fi
  write_config
  start_munge
  if ! alive_pid slurmctld >/dev/null; then
    # -i: ignore state files of an older config (node names, job ids) instead of refusing to start
    slurmctld -i || die "slurmctld did not start (see $DIR/slurmctld.log)"
  else
    scontrol reconfigure >/dev/null
  fi
  if ! alive_pid slurmd >/dev/null; then
    slurmd || die "slurmd did not start (see $DIR/slurmd.log)"
  fi
  local state=""
  for _ in $(seq $((START_TIMEOUT_S * 2))); do
    state="$(node_state)"
    case "$state" in
      idle*)
        say "node $NODE idle; partition debug (sinfo, sbatch, squeue ready)"
        return
        ;;
      down* | drain*) scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
  done
  die "node $NODE is '${state:-not known}' after ${START_TIMEOUT_S}s (see $DIR/slurmctld.log, $DIR/slurmd.log)"
}

stop_pid() {
  local name="$1" pid
  pid="$(alive_pid "$name")" || {
    rm -f "$DIR/$name.pid"
    return
  }
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  rm -f "$DIR/$name.pid"
  say "stopped $name ($pid)"
}

stop() {
  if alive_pid slurmctld >/dev/null; then
    # jobs of this private cluster only; their steps would outlive slurmd otherwise
    local jobs
    jobs="$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')"
    if [ -n "${jobs// /}" ]; then
      say "cancelling jobs: $jobs"
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      for _ in $(seq 40); do
        [ -z "$(squeue -h -t running,completing,pending -o %A 2>/dev/null)" ] && break
        sleep 0.25
      done
    fi
  fi
  stop_pid slurmd
  stop_pid slurmctld
  stop_pid munged # only if this script started it: the pid file is ours
}

status() {
  local rc=0 name pid
  for name in munged slurmctld slurmd; do
    if pid="$(alive_pid "$name")"; then
      say "$name running ($pid)"
    else
      say "$name not started by this script"
    fi
  done
  if ! command -v sinfo >/dev/null; then
    say "sinfo not installed"
    return 1
  fi
  local state
  state="$(node_state)"
  say "node $NODE: ${state:-no answer from slurmctld}"
  [ -n "$state" ] || rc=1
  [ -z "$state" ] || squeue -o "%.12i %.10T %.10M %.10l %.30j %r" 2>/dev/null || true
  return $rc
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
