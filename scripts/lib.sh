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
