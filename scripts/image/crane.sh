#!/usr/bin/env bash
# Builds go-containerregistry's `crane` (the daemonless image tool) at its pinned version into a cache outside the
# repo (go-tool.sh) and prints its path (last line).
exec bash "$(dirname "$0")/go-tool.sh" crane
