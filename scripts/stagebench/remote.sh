# shellcheck shell=sh
# SPDX-License-Identifier: MIT
# What stagebench-cluster runs on a node through a remote shell (clush, pdsh over ssh): this
# whole script, its comment lines left out, sent as `sh -c SCRIPT sh ACTION ARG...`. Every
# value reaches it as a positional argument, never as a word of the script. ACTION:
#   named BINARY ARG...                        BINARY ARG... --node NAME
#   run RESULTS SUFFIX SCRATCH BINARY ARG...   a run in the foreground (its pid file in SCRATCH)
#   arm RESULTS SUFFIX SCRATCH STATE CLOCK BINARY ARG...
#                                              a run armed (--detach SCRATCH/STATE.NAME),
#                                              then, CLOCK "clock", `stagebench clock`
#   atstate STATE [BINARY COMMAND ARG...]      BINARY COMMAND STATE.NAME ARG... (status, stop),
#                                              or the tail of that armed run's log
#   stop SCRATCH SIGNAL                        signal the run whose pid file is in SCRATCH
#   send SCRATCH SUFFIX                        print this node's summary SCRATCH/NAME.SUFFIX
#   scratch-rm SCRATCH                         remove this node's files in SCRATCH, then it
#                                              once empty
# RESULTS: the shared results directory (the summary goes to RESULTS/NAME.SUFFIX), or empty:
# the summary goes to SCRATCH/NAME.SUFFIX, and the launcher gathers it (send). SCRATCH is the
# run's node-local scratch directory, an unpredictable name the launcher chose; every file in
# it carries the node's name, so node names that reach one machine (ssh aliases) or share a
# --scratch on a shared filesystem never collide.

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

# owned DIR: DIR is a directory (not a link) of this user or root that others cannot write,
# or one with the sticky bit (/tmp), where others cannot remove or rename what is ours.
owned() {
	[ -d "$1" ] && [ ! -L "$1" ] && { [ -O "$1" ] || [ "$(stat -c %u -- "$1")" = 0 ]; } &&
		case "$(stat -c %A -- "$1")" in
		?????????t | ?????????T) true ;;
		?????w???? | ????????w?) false ;;
		*) true ;;
		esac
}

# scratch DIR: the node-local scratch directory made fresh (mode 0700) in a parent that owned
# accepts (--scratch), or else one this user made before (another name of the same machine
# made it). Anything else (a parent another user may write, a directory planted by another
# user, a link) fails the node, nothing written; so does a parent that cannot hold it (no
# space), said as the system says it.
scratch() {
	parent=${1%/*}
	[ -e "$parent" ] || mkdir -p -- "$parent" || {
		echo "stagebench-cluster: error: --scratch $parent cannot be created (see the line above)" >&2
		exit 3
	}
	if ! owned "$parent"; then
		echo "stagebench-cluster: error: --scratch $parent is not a directory of this user or root closed to others (or sticky, as /tmp): refused" >&2
		exit 3
	fi
	if ! why=$(mkdir -m 0700 -- "$1" 2>&1) && ! private "$1"; then
		case "$why" in
		*"No space left"* | *"Disk quota"*)
			echo "stagebench-cluster: error: node-local scratch $1: no space left on device" >&2 ;;
		*"File exists"*)
			echo "stagebench-cluster: error: node-local scratch $1 is not a private directory of this user (mode 0700, not a link): refused" >&2 ;;
		*)
			echo "stagebench-cluster: error: node-local scratch $1 cannot be created: ${why#mkdir: }" >&2 ;;
		esac
		exit 3
	fi
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
	if [ -n "$results" ]; then out="$results/$n.$suffix"; else out="$dir/$n.$suffix"; fi
	exec "$@" --node "$n" --out "$out"
	;;
arm)
	# stagebench makes the state directory SCRATCH/STATE.NAME (mode 0700) and refuses one
	# that exists. CLOCK "clock": once armed, the node's clock answers the launcher's
	# timestamps over this connection (`stagebench clock`), its offset next to the start.
	results=$1 suffix=$2 dir=$3 state=$4 clock=$5
	shift 5
	scratch "$dir"
	if [ -n "$results" ]; then out="$results/$n.$suffix"; else out="$dir/$n.$suffix"; fi
	if [ "$clock" != clock ]; then
		exec "$@" --node "$n" --out "$out" --detach "$dir/$state.$n"
	fi
	"$@" --node "$n" --out "$out" --detach "$dir/$state.$n" || exit
	exec "$1" clock --node "$n"
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
send)
	# This node's own summary, a regular file (not a link) in a scratch directory that is
	# ours, on stdout.
	dir=$1 f="$1/$n.$2"
	if ! private "$dir" || [ ! -f "$f" ] || [ -L "$f" ]; then
		echo "stagebench-cluster: error: no summary $f on this node" >&2
		exit 1
	fi
	exec cat -- "$f"
	;;
scratch-rm)
	# This node's armed state directories (a directory, not a link), its pid file and its
	# summaries, then the directory once empty (other names of this machine may still have
	# files in it).
	dir=$1
	private "$dir" || exit 0
	for state in "$dir"/arm-*."$n"; do
		[ -d "$state" ] && [ ! -L "$state" ] && rm -f -- "$state"/* && rmdir -- "$state"
	done
	rm -f -- "$dir/$n.pid" "$dir/$n".*.json
	rmdir -- "$dir" 2>/dev/null
	exit 0
	;;
*)
	echo "stagebench-cluster: error: remote.sh: unknown action '$action'" >&2
	exit 2
	;;
esac
