# fill_readmes.awk - one README with its results blocks refilled (run by fill_readmes.sh)
FNR == NR {
    if ($0 ~ /^# date=/) { header = substr($0, 3) }
    else if ($0 ~ /^RESULT /) lines[++n] = $0
    else if ($0 ~ /^TRANSCRIPT /) { # TRANSCRIPT chapter=C name=N <a line of the run's output>
        t = $0; sub(/^TRANSCRIPT chapter=[^ ]* name=/, "", t)
        tname = t; sub(/ .*/, "", tname)
        transcript[tname] = transcript[tname] (index(t, " ") ? substr(t, index(t, " ") + 1) : "") "\n"
    }
    next
}
/<!-- transcript / { # a run's output, as make bench kept it (bench/<chapter>.sh prints it)
    print
    want = $0; sub(/.*name=/, "", want); sub(/-->.*/, "", want); sub(/ .*/, "", want)
    print ""
    gpu = header; sub(/.*gpu=/, "", gpu); sub(/ driver=.*/, "", gpu)
    day = header; sub(/^date=/, "", day); sub(/ .*/, "", day)
    if (want in transcript) printf "```text\n%s```\n\n%s, %s (from `make bench`, %s)\n\n", transcript[want], gpu, day, results_md
    else printf "(not run yet: `make bench` fills this block)\n\n"
    skipping = 1
    next
}
/<!-- \/transcript -->/ { skipping = 0 }
/<!-- results / {
    print
    # a value ends at a space or at the closing "-->" (sizes may hold dashes: 784-1024-10_b128)
    want_prog = $0; sub(/.*prog=/, "", want_prog); sub(/-->.*/, "", want_prog); sub(/ .*/, "", want_prog)
    want_size = ""
    if ($0 ~ /size=/) { want_size = $0; sub(/.*size=/, "", want_size); sub(/-->.*/, "", want_size); sub(/ .*/, "", want_size) }
    print ""
    rows_out = 0
    for (i = 1; i <= n; i++) {
        parse(lines[i])
        if (f["prog"] != want_prog || (want_size != "" && f["size"] != want_size)) continue
        if (rows_out++ == 0) {
            print "| ver | name | size | ms | rate | speed vs baseline | check |"
            print "|---|---|---|---|---|---|---|"
        }
        k = rate_key()
        printf "| %s | %s | %s | %s | %s | %s | %s |\n", ("ver" in f) ? f["ver"] : "-", f["name"], f["size"],
               f["ms"], rate_text(k, f[k]), ("base" in f) ? sprintf("%.2fx %s", f["ratio"], f["base"]) : "-", f["check"]
        date = f["date"]
    }
    gpu = header; sub(/.*gpu=/, "", gpu); sub(/ driver=.*/, "", gpu)
    if (rows_out) printf "\n%s, %s (from `make bench`, %s)\n\n", gpu, date, results_md
    else printf "(not measured yet: `make bench` fills this table)\n\n"
    skipping = 1
    next
}
/<!-- \/results -->/ { skipping = 0 }
!skipping { print }
