#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libito.so calls none of its own functions through the GOT: every function it
# defines binds inside it (-Bsymbolic-functions). A call a program could
# interpose would run the program's copy of an inline function ito uses,
# outside ito's code, where preemption would take a ULT inside ito for one
# running the program's code.
#   own_functions_bound.sh READELF LIBITO_SO
set -euo pipefail
readelf=$1 lib=$2
defined=$(mktemp) relocated=$(mktemp)
trap 'rm -f "$defined" "$relocated"' EXIT
# Functions libito.so defines and exports (section index not UND).
"$readelf" --dyn-syms -W "$lib" | awk '$4 == "FUNC" && $7 != "UND" { sub(/@.*/, "", $8); print $8 }' |
  sort -u > "$defined"
# Symbols its GOT and PLT slots are resolved to at load time.
"$readelf" -rW "$lib" | awk '/R_X86_64_(GLOB_DAT|JUMP_SLOT)|R_AARCH64_(GLOB_DAT|JUMP_SLOT)/ { sub(/@.*/, "", $5); print $5 }' |
  sort -u > "$relocated"
[ -s "$defined" ] || { echo "no exported functions read from $lib"; exit 1; }
both=$(comm -12 "$defined" "$relocated")
if [ -n "$both" ]; then
  echo "libito.so reaches these functions of its own through the GOT (interposable):"
  echo "$both" | head -20
  exit 1
fi
echo "ok: $(wc -l < "$defined") exported functions, none reached through the GOT"
