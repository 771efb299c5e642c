# fields.awk - shared by report.sh and fill_readmes.sh: parse a RESULT line into f[key],
# and write a rate with its unit.
function parse(line,    n, i, kv, parts) {
    delete f
    n = split(line, parts, " ")
    for (i = 2; i <= n; i++) {
        split(parts[i], kv, "=")
        f[kv[1]] = substr(parts[i], length(kv[1]) + 2)
    }
}
# the key by which make bench tells rows apart (bench/run.sh replaces rows measured again by it,
# bench/keys.awk checks that no two measurements share it): prog, name and size; a transcript's
# line by its name
function row_key(   k, i) {
    if ($1 == "TRANSCRIPT") return "T " $3
    k = ""; for (i = 2; i <= NF; i++) if ($i ~ /^(prog|name|size)=/) k = k " " $i
    return k
}
# the key that is not a standard field names the rate's unit; where a row has more than one
# (PyTorch's step: tokens_s and peak_gb), the one with a unit below
function rate_key(    k, other) {
    other = ""
    for (k in f) if (!(k in known)) { if (unit_text(k) != k) return k; other = k }
    return other
}
function unit_text(u) {
    if (u == "gbps") return "GB/s"
    if (u == "tflops") return "TFLOP/s"
    if (u == "giter_s") return "G iter/s"
    if (u == "gcells_s") return "G cells/s"
    if (u == "gflops") return "GFLOP/s"
    if (u == "gsamples_s") return "G samples/s"
    if (u == "mpix_s") return "Mpixel/s"
    if (u == "msamples_s") return "M samples/s"
    if (u == "test_acc_pct") return "% test accuracy"
    if (u == "gatomics_s") return "G atomics/s"
    if (u == "gops_s") return "G lane-ops/s"
    if (u == "mkeys_s") return "M keys/s"
    if (u == "speedup_vs_cpu") return "x CPU"
    if (u == "svd_s") return "SVD/s"
    if (u == "explained_pct") return "% of the variance"
    if (u == "mib") return "MiB"
    if (u == "kib") return "KiB"
    if (u == "create_ms") return "ms to create"
    if (u == "build_s") return "s to compile"
    if (u == "kernel_share") return "kernel share"
    if (u == "tokens_s") return "tokens/s"
    if (u == "val_loss") return "validation loss (nats)"
    return u
}
function rate_text(u, v) {
    if (u == "kernel_share") return sprintf("%.1f%% kernel", 100 * v)
    if (v + 0 >= 10000) v = sprintf("%.0f", v)   # 1.157e+04 -> 11570
    return sprintf("%s %s", v, unit_text(u))
}
BEGIN {
    split("chapter date prog ver name size ms base ratio check", ks, " ")
    for (i in ks) known[ks[i]] = 1
}
