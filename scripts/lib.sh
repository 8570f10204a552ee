# Shared by the project's scripts: finds the Swift toolchain and says what is happening.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
step() { printf '\n==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# swift_build GREP_MODE PATTERN ARGUMENTS...: runs `swift build ARGUMENTS...`, shows its output through
# `grep GREP_MODE PATTERN` (-Ev to hide progress lines, -E to show only some), and stops the script when
# the build fails. The build's own exit status decides (PIPESTATUS), never grep's, which says only whether
# a line was shown: a failed build must not fall through to the products of an older one.
swift_build() {
    local mode=$1 pattern=$2 status
    shift 2
    set +e
    swift build "$@" 2>&1 | grep "$mode" "$pattern"
    status=${PIPESTATUS[0]}
    set -e
    ((status == 0)) || die "swift build $* failed (exit $status)"
}

# A throwaway PostgreSQL 15 cluster for tests (docs/CLEARING.md §3.6). `pg_start DIR` makes a cluster in DIR
# (an empty folder, e.g. from mktemp -d) with superuser `clearing` and trust authentication, listening on a
# Unix socket in DIR and on a free loopback port, and prints that port; connect with
# `host=DIR port=PORT user=clearing dbname=postgres`. fsync and synchronous commits are off: for tests only,
# never for money. `pg_stop DIR` stops it by the pid in postmaster.pid and removes DIR; callers run it from a
# trap (`trap 'pg_stop "$dir"' EXIT`) so that no cluster outlives its script.
pg_bin=/usr/lib/postgresql/15/bin
pg_start() {
    local dir=$1 as=() port attempt
    [[ -d "$dir" && -x "$pg_bin/initdb" ]] || { printf 'pg_start: no folder %s or no %s/initdb\n' "$dir" "$pg_bin" >&2; return 1; }
    # initdb refuses to run as root: the cluster belongs to nobody, which the folder is handed to.
    if [[ $(id -u) -eq 0 ]]; then
        chown nobody: "$dir" || return 1
        as=(runuser -u nobody --)
    fi
    "${as[@]}" "$pg_bin/initdb" -D "$dir/data" -U clearing -A trust --no-sync -E UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
    # A free port: one no process listens on; another process may take it between the check and the start, so
    # a failed start tries the next candidate.
    for attempt in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 40000))
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
        # The server must inherit no descriptor but 0-2: a process runner that learns of its child's exit
        # when a descriptor it passed down is closed (Foundation's Process does) would otherwise wait for the
        # server to stop.
        if (
            _pg_close_descriptors
            "${as[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 start \
                -o "-k $dir -h 127.0.0.1 -p $port -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        ) </dev/null >/dev/null 2>&1; then
            printf '%s\n' "$port" >"$dir/port"
            printf '%s\n' "$port"
            return 0
        fi
    done
    cat "$dir/log" >&2 2>/dev/null
    pg_stop "$dir"
    return 1
}
_pg_close_descriptors() {
    local path fd
    for path in /proc/self/fd/*; do
        fd=${path##*/}
        ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
    done
    return 0
}
pg_stop() {
    local dir=$1 pid waited=0
    [[ -n "$dir" && -d "$dir" ]] || return 0
    if [[ -f "$dir/data/postmaster.pid" ]]; then
        pid=$(head -n 1 "$dir/data/postmaster.pid")
        if [[ "$pid" =~ ^[0-9]+$ ]] && kill -INT "$pid" 2>/dev/null; then
            # Fast shutdown; after 10 s, an immediate one.
            while kill -0 "$pid" 2>/dev/null && ((waited < 100)); do
                sleep 0.1
                waited=$((waited + 1))
            done
            kill -0 "$pid" 2>/dev/null && kill -QUIT "$pid" 2>/dev/null
            while kill -0 "$pid" 2>/dev/null && ((waited < 150)); do
                sleep 0.1
                waited=$((waited + 1))
            done
        fi
    fi
    rm -rf "$dir"
}
# `pg_watch PID DIR`: stops the cluster in DIR once process PID has ended, however it ended (a test process
# that crashed never runs its own cleanup). Meant to run in the background.
pg_watch() {
    local parent=$1 dir=$2
    while kill -0 "$parent" 2>/dev/null && [[ -d "$dir" ]]; do sleep 1; done
    pg_stop "$dir"
}
