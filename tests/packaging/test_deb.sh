#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The .deb as a site installs it: build it (cpack, prefix /usr, no tests; the .rpm too, its
# dependencies checked), install it into this
# system with apt-get, run the installed commands from a clean environment with Debian's
# /usr/bin/python3 (stagebench --version, a tiny run, stagebench-sim at tiny scale, man
# stagebench, the bash completion), then remove it and check that nothing of it is left
# (its files, the package directory, the bytecode Python wrote there). Before that, lintian
# on the .deb (no error, no warning but those scripts/debian/lintian-overrides explains), its
# binary stripped and hardened, its man pages compressed. Needs root: it
# installs into /usr. Exits 77 (skipped) when not root or not on Debian.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DEB:-$top/build-deb}

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
	echo "test_deb: needs root on Debian (apt-get, dpkg): skipped" >&2
	exit 77
fi
if dpkg-query -W -f='${Status}' stagebench 2>/dev/null | grep -q 'installed'; then
	echo "test_deb: a stagebench package is installed here already; remove it first" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/stagebench-deb.XXXXXX")
installed=false
cleanup() {
	if $installed; then
		apt-get remove -y -qq stagebench >/dev/null 2>&1 || dpkg --purge stagebench >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "test_deb: FAIL: $*" >&2
	exit 1
}

echo "== test_deb: build the .deb (prefix /usr, no tests) in $build"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
	-DBUILD_TESTING=OFF -DSTAGEBENCH_PYTHON=/usr/bin/python3 >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
rm -f "$build"/stagebench_*.deb "$build"/stagebench-*.rpm
(cd "$build" && cpack -G DEB >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$build"/stagebench_*.deb)
# Debian's standard: lintian with no error and no warning (an override says its reason in
# scripts/debian/lintian-overrides), the programs stripped and hardened, the man pages
# compressed, the copyright and the changelog in the doc directory.
command -v lintian >/dev/null || fail "no lintian here (scripts/install-deps installs it)"
echo "== test_deb: lintian $(basename "$deb")"
# printed with the overrides and their reasons (which lintian then counts as failing), judged
# without them
lintian --display-info --pedantic --show-overrides "$deb" 2>&1 | grep -v '^running with root' || true
rc=0
lintian --fail-on error,warning "$deb" >"$work/lintian.log" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { cat "$work/lintian.log"; fail "lintian found errors or warnings (exit $rc)"; }
dpkg-deb -x "$deb" "$work/deb"
for b in bin/stagebench libexec/stagebench/stagebench-scan; do
	bin="$work/deb/usr/$b"
	readelf -S -d -l "$bin" >"$work/readelf"  # into files: grep -q's early exit would break the pipe
	nm -D "$bin" >"$work/nm"
	! grep -q '[.]symtab' "$work/readelf" || fail "usr/$b is not stripped"
	grep -q 'BIND_NOW' "$work/readelf" || fail "usr/$b: no -z now"
	grep -q 'GNU_RELRO' "$work/readelf" || fail "usr/$b: no -z relro"
	grep -q '__stack_chk_fail' "$work/nm" || fail "usr/$b: no stack protector"
	grep -q '_chk@' "$work/nm" || fail "usr/$b: no fortified calls"
done
uncompressed=$(find "$work/deb/usr/share/man" -type f ! -name '*.gz')
[ -z "$uncompressed" ] || fail "man pages not compressed: $uncompressed"
for f in copyright changelog.Debian.gz; do
	[ -f "$work/deb/usr/share/doc/stagebench/$f" ] || fail "no usr/share/doc/stagebench/$f"
done
[ "$(dpkg-deb -f "$deb" Maintainer)" != "" ] || fail "no Maintainer"
dpkg-deb -f "$deb" Depends | grep -q 'python3-clustershell' || fail "Depends lacks python3-clustershell"
dpkg-deb -f "$deb" Depends | grep -q 'libhwloc' || fail "Depends lacks libhwloc"
dpkg-deb -f "$deb" Recommends | grep -q 'python3-matplotlib' || fail "Recommends lacks matplotlib"
# The .rpm of the same tree: its dependencies (it is installed on RPM systems only).
(cd "$build" && cpack -G RPM >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack -G RPM"; }
rpm=$(ls "$build"/stagebench-*.rpm)
rpm -qpR "$rpm" >"$work/requires"
for dep in 'libhwloc.so.15()(64bit)' 'python3 >= 3.6' python3-clustershell; do
	grep -qxF "$dep" "$work/requires" || fail "the .rpm does not require $dep"
done
[ "$(rpm -qp --recommends "$rpm")" = python3-matplotlib ] || fail "the .rpm does not recommend matplotlib"

echo "== test_deb: apt-get install $deb"
installed=true
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" \
	>"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install"; }
dpkg -L stagebench | sort >"$work/files"

# From a clean environment: the system's PATH, no PYTHONPATH, a working directory outside the
# sources, so that only the installed files can answer.
mkdir "$work/home" "$work/stage" "$work/sim" "$work/results"
clean() { (cd "$work/home" && env -i PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8 "$@"); }

[ "$(clean which stagebench)" = /usr/bin/stagebench ] || fail "stagebench is not /usr/bin/stagebench"
[ "$(head -n 1 /usr/bin/stagebench-sim)" = "#!/usr/bin/python3" ] || fail "stagebench-sim's shebang"
out=$(clean /usr/bin/python3 -c 'import stagebench; print(stagebench.__file__)')
[ "$out" = /usr/lib/python3/dist-packages/stagebench/__init__.py ] || fail "the package imports from $out"
out=$(clean stagebench --version)
echo "$out"
[ "$out" = "stagebench 0.1.0" ] || fail "stagebench --version printed '$out'"
for c in cluster collect cron history sim; do
	out=$(clean stagebench-$c --version)
	[ "$out" = "stagebench-$c 0.1.0" ] || fail "stagebench-$c --version printed '$out'"
done
clean stagebench run 2a --scale tiny --start-in 0 --dir "$work/stage" --out "$work/run.json" \
	>"$work/run.log" 2>&1 || { cat "$work/run.log"; fail "the tiny run exited"; }
clean /usr/bin/python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); assert s["exit_code"] == 0, s["exit_code"]' \
	"$work/run.json" || fail "the tiny run's summary"
clean stagebench-sim --nodes 2 --servers 1 --dir "$work/sim" --results "$work/results" \
	--run-id deb --scale tiny 2a >"$work/sim.log" 2>&1 || { cat "$work/sim.log"; fail "stagebench-sim"; }
[ -f "$work/results/deb/manifest.json" ] || fail "stagebench-sim wrote no manifest"
# the collector's reader, installed beside it, takes the node summaries the sim wrote
find "$work/results/deb" -maxdepth 1 -name 'node*.json' -print0 >"$work/summaries"
[ -s "$work/summaries" ] || fail "stagebench-sim wrote no node summary"
clean /usr/libexec/stagebench/stagebench-scan <"$work/summaries" >"$work/scan.out" || fail "stagebench-scan exited $?"
# its record format's first line, as util/jscan.h defines it (SBSCAN2), then a taken summary
magic=$(sed -n 's/^#define JSCAN_MAGIC "\(SBSCAN[0-9]*\)\\n"$/\1/p' "$top/util/jscan.h")
[ -n "$magic" ] || fail "no JSCAN_MAGIC in util/jscan.h"
[ "$(head -c 9 "$work/scan.out")" = "$(printf '%s\nD' "$magic")" ] || fail "stagebench-scan declined a summary of the sim"
clean man -P cat stagebench 2>/dev/null | grep -q 'I/O benchmarks of a node' || fail "man stagebench"
clean man -P cat stagebench-cron 2>/dev/null | grep -q -- '--results' || fail "man stagebench-cron"
# the paths the installed commands print are the installed ones
for out in "$(clean stagebench-cron --help)" "$(clean man -P cat stagebench-cron 2>/dev/null)"; do
	grep -q '15 2 \* \* \* /usr/bin/stagebench-cron --results' <<<"$out" ||
		fail "the crontab line does not name /usr/bin/stagebench-cron: $out"
	! grep -q '/usr/local' <<<"$out" || fail "an installed command prints /usr/local"
done
clean bash --norc -c 'source /usr/share/bash-completion/completions/stagebench &&
	COMP_WORDS=(stagebench run --sca) COMP_CWORD=2 && _stagebench && [ "${COMPREPLY[*]}" = --scale ]' ||
	fail "the installed bash completion"
for c in stagebench-cluster stagebench-collect stagebench-cron stagebench-history stagebench-sim; do
	clean bash --norc -c "source /usr/share/bash-completion/completions/$c &&
		COMP_WORDS=($c --vers) COMP_CWORD=1 && _${c//-/_} && [ \"\${COMPREPLY[*]}\" = --version ]" ||
		fail "the installed bash completion of $c"
done
# root ran the Python commands: their bytecode is beside the package now
[ -d /usr/lib/python3/dist-packages/stagebench/__pycache__ ] || fail "no __pycache__ to clean up (did Python run?)"

echo "== test_deb: apt-get remove stagebench"
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq stagebench >"$work/apt.log" 2>&1 ||
	{ cat "$work/apt.log"; fail "apt-get remove"; }
installed=false
dpkg-query -W -f='${Status}' stagebench 2>/dev/null | grep -q 'ok installed' && fail "still installed"
left=$(while read -r f; do if [ -f "$f" ] || [ -L "$f" ]; then echo "$f"; fi; done <"$work/files")
[ -z "$left" ] || fail "files left after removal: $left"
for d in /usr/lib/python3/dist-packages/stagebench /usr/share/doc/stagebench; do
	[ ! -e "$d" ] || fail "$d left after removal: $(find "$d")"
done
echo "== test_deb: ok ($(wc -l <"$work/files") paths installed and removed)"
