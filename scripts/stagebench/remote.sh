#!/bin/sh
# SPDX-License-Identifier: MIT
# What stagebench-cluster runs on a node through a remote shell (clush, pdsh over ssh): this
# whole script, its comment lines left out, sent as `sh -c SCRIPT sh ACTION ARG...`. Every
# value reaches it as a positional argument, never as a word of the script. ACTION:
#   named BINARY ARG...                        BINARY ARG... --node NAME
#   run RESULTS SUFFIX SCRATCH BINARY ARG...   a run in the foreground (its pid file in SCRATCH)
#   arm RESULTS SUFFIX SCRATCH STATE BINARY ARG...
#                                              a run armed (--detach SCRATCH/STATE.NAME)
#   atstate STATE [BINARY COMMAND ARG...]      BINARY COMMAND STATE.NAME ARG... (status, stop),
#                                              or the tail of that armed run's log
#   stop SCRATCH SIGNAL                        signal the run whose pid file is in SCRATCH
#   scratch-rm SCRATCH                         remove this node's files in SCRATCH, then it
# RESULTS: the shared results directory (the summary goes to RESULTS/NAME.SUFFIX), or empty:
# the summary goes to SCRATCH/SUFFIX, copied back by the launcher. SCRATCH is the run's
# node-local scratch directory, an unpredictable name the launcher chose.

# The node's name: $STAGEBENCH_NODE, else Slurm's node name, else its short host name.
n=${STAGEBENCH_NODE:-${SLURMD_NODENAME:-$(hostname -s)}}

# private DIR: DIR is a private directory of this user: a directory, not a link, owned by
# this user, mode 0700.
private() {
	[ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ] &&
		case "$(ls -ld -- "$1")" in
		"drwx------ "* | "drwx------. "*) true ;;
		*) false ;;
		esac
}

# started PID: the start time of process PID (field 22 of /proc/PID/stat); with its pid, it
# names that process.
# shellcheck disable=SC2086 # $fields: the fields after the command name, split on purpose
started() {
	[ -r "/proc/$1/stat" ] && (
		read -r fields <"/proc/$1/stat" && fields=${fields##*) } && set -f &&
			set -- $fields && echo "${20}"
	)
}

# scratch DIR: the node-local scratch directory made fresh (mode 0700), or else one this
# user made before (another alias of the same machine made it). Anything else (planted by
# another user, a link) fails the node, nothing written.
scratch() {
	mkdir -p -- "${1%/*}"
	mkdir -m 0700 -- "$1" 2>/dev/null || private "$1" || {
		echo "stagebench-cluster: error: node-local scratch $1 is not a private directory of this user (mode 0700, not a link): refused" >&2
		exit 3
	}
}

action=$1
shift
case "$action" in
named)
	exec "$@" --node "$n"
	;;
run)
	# The pid file SCRATCH/NAME.pid holds "PID START-TIME", created exclusively (set -C).
	results=$1 suffix=$2 dir=$3
	shift 3
	scratch "$dir"
	rm -f -- "$dir/$n.pid" && t=$(started $$) && (
		set -C
		echo "$$ $t" >"$dir/$n.pid"
	) || exit 3
	if [ -n "$results" ]; then out="$results/$n.$suffix"; else out="$dir/$suffix"; fi
	exec "$@" --node "$n" --out "$out"
	;;
arm)
	# stagebench makes the state directory SCRATCH/STATE.NAME (mode 0700) and refuses one
	# that exists.
	results=$1 suffix=$2 dir=$3 state=$4
	shift 4
	scratch "$dir"
	if [ -n "$results" ]; then out="$results/$n.$suffix"; else out="$dir/$suffix"; fi
	exec "$@" --node "$n" --out "$out" --detach "$dir/$state.$n"
	;;
atstate)
	state="$1.$n"
	if [ $# -eq 1 ]; then exec tail -n 20 -- "$state/log"; fi
	binary=$2 command=$3
	shift 3
	exec "$binary" "$command" "$state" "$@"
	;;
stop)
	# Only the process the pid file names, when it is still that process (same start time)
	# and a stagebench run of the launcher (--start-at in its command line), in a scratch
	# directory that is ours.
	dir=$1
	private "$dir" && [ -f "$dir/$n.pid" ] && [ ! -L "$dir/$n.pid" ] || exit 0
	read -r pid t <"$dir/$n.pid"
	case "$pid" in "" | *[!0-9]*) exit 0 ;; esac
	[ -n "$t" ] && [ "$(started "$pid")" = "$t" ] &&
		tr '\000' '\n' <"/proc/$pid/cmdline" | grep -qx -e --start-at &&
		kill -s "$2" "$pid" 2>/dev/null
	exit 0
	;;
scratch-rm)
	# This node's armed state directories (a directory, not a link), its pid file and the
	# summaries, then the directory once empty.
	dir=$1
	private "$dir" || exit 0
	for state in "$dir"/arm-*."$n"; do
		[ -d "$state" ] && [ ! -L "$state" ] && rm -f -- "$state/state" "$state/log" &&
			rmdir -- "$state"
	done
	rm -f -- "$dir/$n.pid" "$dir"/*.json
	rmdir -- "$dir" 2>/dev/null
	exit 0
	;;
*)
	echo "stagebench-cluster: error: remote.sh: unknown action '$action'" >&2
	exit 2
	;;
esac
