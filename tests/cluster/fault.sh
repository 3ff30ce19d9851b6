#!/usr/bin/env bash
# Inject a fault into one process of the running local cluster (the chaos
# suite's tool; start.sh / start-node.sh started the process with launch()).
#
#   tests/cluster/fault.sh restart NAME [DOWN_SECONDS]   SIGTERM (SIGKILL after 20 s), wait, start it again
#   tests/cluster/fault.sh kill NAME [DOWN_SECONDS]      SIGKILL, wait, start it again
#
# NAME is a component with a pid file: etcd, kube-apiserver,
# kube-controller-manager, containerd, kube-scheduler, kubelet, kube-proxy.
# The process is started again with the command line and the PATH it had
# (read from /proc before it stopped: containerd finds the gVisor shim
# through the PATH start-node.sh gave it; nothing else of its environment,
# which launch() would print into the log), through the same launch() as at
# start, so stop.sh and pid_of still find it. Prints the new pid.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() { die "usage: fault.sh restart|kill NAME [DOWN_SECONDS]"; }
(($# >= 2)) || usage
action="$1" name="$2" down="${3:-0}"
[[ "$down" =~ ^[0-9]+$ ]] || usage
case "$action" in
  restart) signal=TERM ;;
  kill) signal=KILL ;;
  *) usage ;;
esac

pid="$(pid_of "$name")" || die "${name} is not running in ${STATE} (no live pid file)"
mapfile -d '' argv <"/proc/${pid}/cmdline"
((${#argv[@]} > 0)) || die "cannot read the command line of ${name} (pid ${pid})"
path="$(tr '\0' '\n' <"/proc/${pid}/environ" | sed -n 's/^PATH=//p' | head -n 1)"
cwd="$(readlink "/proc/${pid}/cwd")"

log "${action} ${name} (pid ${pid}), down for ${down} s"
kill "-${signal}" "$pid"
for _ in $(seq 1 200); do
  [[ -d "/proc/${pid}" ]] || break
  sleep 0.1
done
if [[ -d "/proc/${pid}" ]]; then
  log "${name} ignored SIGTERM for 20 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  while [[ -d "/proc/${pid}" ]]; do sleep 0.1; done
fi
sleep "$down"
cd "$cwd"
# env execs the command itself: the pid file still names ${name}'s process.
launch "$name" env "PATH=${path:-$PATH}" "${argv[@]}"
sleep 1
launched_alive "$name" || die "${name} exited right after it was started again; see ${LOGS}/${name}.log"
cat "${RUN}/${name}.pid"
