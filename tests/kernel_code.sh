#!/usr/bin/env bash
# tests/kernel_code.sh - one kernel's machine code, as the GPU runs it: its resources (registers,
# shared memory: cuobjdump -res-usage) and its SASS (cuobjdump -sass), every instantiation of a
# template included. For the solutions whose edit shows in the code the compiler made rather
# than in the results (16-byte loads, a padded shared array, a shuffle gone), grep its output:
#   bash ../tests/kernel_code.sh ./elementwise scale_kernel | grep LDG
#   bash tests/kernel_code.sh PROGRAM KERNEL     exit 0; 2: no such kernel in PROGRAM, or no cuobjdump
set -u
prog=${1:?usage: kernel_code.sh PROGRAM KERNEL} kernel=${2:?usage: kernel_code.sh PROGRAM KERNEL}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo "${CUDA_PATH:-/usr/local/cuda}/bin/cuobjdump")}
[ -x "$CUOBJDUMP" ] || { echo "kernel_code: cuobjdump not found (it comes with the CUDA toolkit; or set CUOBJDUMP=)"; exit 2; }
[ -f "$prog" ] || { echo "kernel_code: no program $prog (build it with make)"; exit 2; }
# a kernel's symbol is its name (extern "C") or, from C++, _Z<length><name> followed by its
# argument types (the length makes the name whole: scale_kernel2 would be _Z13...)
symbol="^(${kernel}|_Z${#kernel}${kernel}.*)\$"
res=$("$CUOBJDUMP" -res-usage "$prog" 2>&1 | awk -v re="$symbol" '
    /^ *Function / { name = $2; sub(/:$/, "", name); keep = name ~ re; if (keep) print name; next }
    keep { print "  " $0; keep = 0 }')
[ -n "$res" ] || { echo "kernel_code: no kernel $kernel in $prog"; exit 2; }
echo "$res"
"$CUOBJDUMP" -sass "$prog" | awk -v re="$symbol" '
    /Function : / { name = $NF; keep = name ~ re; if (keep) print "SASS of " name; next }
    keep { print }'
