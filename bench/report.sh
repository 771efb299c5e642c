#!/usr/bin/env bash
# bench/report.sh <results.txt> <results.md> <chart prefix> - tables and SVG bar charts from
# RESULT lines (called by bench/run.sh).
set -eu
txt=$1 md=$2 prefix=$3
dir=$(dirname "$0")
rm -f "$prefix"-*.svg
awk -f "$dir/fields.awk" -f "$dir/report.awk" -v md="$md" -v prefix="$prefix" "$txt"
