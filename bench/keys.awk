# keys.awk - the RESULT rows of one results file that bench/run.sh could not tell apart: two
# different measurements (their fields' names differ: a step's ms and tokens_s, a training run's
# val_loss) under one key (prog, name, size): `BENCH_ONLY` replaces rows by that key, so
# measuring one again would drop the other. Repeats of one measurement (the same fields) are
# fine. Prints one line a clash; exit 1 if any (run.sh then fails).
function key(   k, i) { k = ""; for (i = 2; i <= NF; i++) if ($i ~ /^(prog|name|size)=/) k = k " " $i; return k }
function fields(   f, i, kv) { f = ""; for (i = 2; i <= NF; i++) if ($i !~ /^(chapter|date)=/) { split($i, kv, "="); f = f " " kv[1] }; return f }
/^RESULT / {
    k = key(); f = fields()
    if (!(k in seen)) seen[k] = f
    else if (seen[k] != f && !((k SUBSEP f) in told)) {
        printf "bench: two measurements share the key%s: fields%s and%s\n", k, seen[k], f
        told[k SUBSEP f] = 1; clashes++
    }
}
END { exit clashes ? 1 : 0 }
