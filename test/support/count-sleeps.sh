#!/bin/sh
# Counts the wall-clock sleeps of the tests outside test/support: timer promises and the sleep helpers' calls.
# Usage: test/support/count-sleeps.sh [-v]   (-v lists them)
cd "$(git rev-parse --show-toplevel)" || exit 1
list() {
  git grep -nE "setTimeout\((resolve|r)\b|setTimeout\(\(\) => resolve|\b(sleep|delay|tick|settle)\([0-9A-Za-z_ .*+-]*\)" -- test ':!test/support' |
    grep -vE "^[^:]+:[0-9]+: *(//|\*)|function (sleep|delay)|const (sleep|delay|tick|settle) =|timers\.setTimeout|\.settle\("
}
[ "$1" = -v ] && list
echo "sleeps: $(list | wc -l)"
