#!/usr/bin/env bash
# The image and the CLI of an earlier commit, for the upgrade test (test/integration/upgrade.test.ts), cached by commit.
#
#   bash scripts/image/build-earlier.sh COMMIT
#   env: POLYCRATE_CONTROLPLANE_CACHE (default ~/.cache/polycrate-operator)
#
# Checks COMMIT out into a git worktree, runs `npm ci` there and that commit's own `scripts/image/build.sh` with the
# tag <its package.json version>-<first 12 hex digits of COMMIT>, so the earlier image is built the way that version
# built it. Output (cached in <cache>/upgrade-<COMMIT>/, reused when `done` is there): image/<archive>.oci.tar
# (plus digest, ref, SBOM), cli/ (the tree with its dist/ and node_modules: its own `bin/run.js operator install`),
# archive (the archive's path), ref (the image's NAME:TAG), npm-ci.log, image.log, done. Prints the directory last.
# Exit code 3: COMMIT is not in this clone (a shallow clone: `git fetch --unshallow`) and not cached.
set -euo pipefail
export LC_ALL=C
umask 022
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 COMMIT (40 hex digits)" >&2; exit 2; }
commit=$1
[[ "$commit" =~ ^[0-9a-f]{40}$ ]] || { echo "COMMIT must be the full 40-digit hash, got $commit" >&2; exit 2; }
base=${POLYCRATE_CONTROLPLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/polycrate-operator}
cache="$base/upgrade-$commit"

complete() { [ -f "$cache/done" ] && [ -f "$cache/archive" ] && [ -f "$(cat "$cache/archive")" ] && [ -f "$cache/cli/bin/run.js" ] && [ -d "$cache/cli/dist" ]; }
if complete; then echo "$cache"; exit 0; fi

mkdir -p "$base"
exec 9>"$base/upgrade-$commit.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi # built by another process meanwhile

git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null || {
  echo "commit $commit is not in this clone (shallow? git fetch --unshallow) and $cache holds no build of it" >&2; exit 3; }

step() { printf '%s  %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
started=$(date +%s)
rm -rf "$cache"
mkdir -p "$cache"
tree="$cache/cli.tmp"
cleanup() {
  if [ -d "$tree" ]; then git -C "$repo" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"; fi
  git -C "$repo" worktree prune 2>/dev/null || true
}
trap cleanup EXIT

step "worktree of $commit"
git -C "$repo" worktree add --detach "$tree" "$commit" >/dev/null 2>&1
step "npm ci (log: $cache/npm-ci.log)"
(cd "$tree" && npm ci --no-audit --no-fund >"$cache/npm-ci.log" 2>&1) || { tail -20 "$cache/npm-ci.log" >&2; exit 1; }
version=$(node -p 'require(process.argv[1]).version' "$tree/package.json")
tag="$version-${commit:0:12}"
step "its scripts/image/build.sh --tag $tag (log: $cache/image.log)"
(cd "$tree" && bash scripts/image/build.sh --output "$cache/image" --tag "$tag" >"$cache/image.log" 2>&1) || { tail -20 "$cache/image.log" >&2; exit 1; }
archive="$cache/image/polycrate-$tag.oci.tar"
[ -f "$archive" ] || { echo "the build wrote no $archive" >&2; exit 1; }
# The archive is what the test loads; the layout directories beside it only double the size.
rm -rf "$cache/image/oci" "$cache/image/platforms"

# The tree stays as the earlier CLI, no longer a worktree.
rm -f "$tree/.git"
mv "$tree" "$cache/cli"
git -C "$repo" worktree prune
echo "$archive" >"$cache/archive"
cp "$cache/image/ref" "$cache/ref"
touch "$cache/done"
step "earlier image $(cat "$cache/ref") ready in $(( $(date +%s) - started ))s"
echo "$cache"
