# Shared settings for the project's scripts; sourced, not run.
#
# RPMU_CACHE   where built artifacts are cached, outside the clone
#              (default: ${XDG_CACHE_HOME:-~/.cache}/riscv_pmu_sbi_rust)

RPMU_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RPMU_CACHE=${RPMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/riscv_pmu_sbi_rust}
export RPMU_CACHE
export PATH="$HOME/.cargo/bin:$PATH"
export LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}
KERNEL_TARBALL=/usr/src/linux-source-6.12.tar.xz
# Every kernel-side make runs with these: RISC-V Rust needs clang (see arch/riscv/Kconfig, HAVE_RUST).
KMAKE_ARGS=(ARCH=riscv LLVM=-19)

# say TAG MESSAGE: a progress line on stderr, so stdout stays free for results.
say() { local tag=$1; shift; printf '[%s] %s\n' "$tag" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# need CMD PACKAGE: fail with a clear message when a tool is missing.
need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found: install the Debian package '$2' (scripts/setup-deps installs everything)"
}

# hash_of ARGS...: a short content hash of files and strings, for cache keys.
hash_of() {
  local a
  for a in "$@"; do
    if [ -f "$a" ]; then printf 'file %s\n' "$(basename "$a")"; cat "$a"; else printf 'str %s\n' "$a"; fi
  done | sha256sum | cut -c1-16
}

# elapsed START: seconds since START (from $SECONDS) as "Mm SSs".
elapsed() { local d=$((SECONDS - $1)); printf '%dm%02ds' $((d / 60)) $((d % 60)); }

# debian_extract TREE LOG PKG...: unpacks Debian trixie riscv64 packages (and what they depend on) into TREE with
# mmdebstrap's extract variant, which runs no maintainer script, so nothing riscv64 runs on the build machine.
# A mirror caught between two point releases serves a trixie InRelease whose index hashes do not match its
# riscv64 index yet; the install is then retried through the `stable` alias when that names trixie too.
debian_extract() {
  local tree=$1 log=$2 suite
  shift 2
  local pkgs
  pkgs=$(IFS=,; echo "$*")
  for suite in trixie stable; do
    if [ "$suite" = stable ]; then
      local release
      release=$(curl -fsS -m 60 http://deb.debian.org/debian/dists/stable/InRelease 2>/dev/null) || return 1
      grep -qx 'Codename: trixie' <<<"$release" || return 1
      say debian "the mirror's trixie index is inconsistent (see $log); retrying through 'stable', which is trixie"
    fi
    rm -rf "$tree"
    if mmdebstrap --quiet --variant=extract --architectures=riscv64 --include="$pkgs" \
      "$suite" "$tree" "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
      >>"$log" 2>&1; then
      return 0
    fi
  done
  return 1
}
