# keys.awk - the RESULT rows of one results file that bench/run.sh could not tell apart: two
# different measurements (their fields' names differ: a step's ms and tokens_s, a training run's
# val_loss) under one key (prog, name, size): `BENCH_ONLY` replaces rows by that key, so
# measuring one again would drop the other. Repeats of one measurement (the same fields) are
# fine. Prints one line a clash; exit 1 if any (run.sh then fails). Run with fields.awk (row_key).
function fields(   s, i, kv) { s = ""; for (i = 2; i <= NF; i++) if ($i !~ /^(chapter|date)=/) { split($i, kv, "="); s = s " " kv[1] }; return s }
/^RESULT / {
    k = row_key(); shape = fields()
    if (!(k in seen)) seen[k] = shape
    else if (seen[k] != shape && !((k SUBSEP shape) in told)) {
        printf "bench: two measurements share the key%s: fields%s and%s\n", k, seen[k], shape
        told[k SUBSEP shape] = 1; clashes++
    }
}
END { exit clashes ? 1 : 0 }
