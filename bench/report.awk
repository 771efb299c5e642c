# report.awk - RESULT lines to markdown tables and SVG bar charts (run by report.sh)
/^# date=/ {
    header = substr($0, 3)
    gpu = header
    sub(/^date=/, "Measured ", header); sub(/ gpu=/, " on ", header); sub(/ driver=/, ", driver ", header)
    sub(/ driver CUDA/, ", driver CUDA", header); sub(/.*gpu=/, "", gpu); sub(/ driver=.*/, "", gpu)
    next
}
/^RESULT / {
    parse($0)
    k = rate_key()
    p = f["prog"]
    if (!(p in seen)) { seen[p] = 1; progs[++np] = p; chap[p] = f["chapter"] }
    row = sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", ("ver" in f) ? f["ver"] : "-", f["name"],
                  f["size"], f["ms"], rate_text(k, f[k]),
                  ("base" in f) ? sprintf("%.2fx %s", f["ratio"], f["base"]) : "-", f["check"], f["date"])
    rows[p] = rows[p] row "\n"
    # chart groups: one per program, size and rate unit
    if (k == "gbps" || k == "tflops" || k == "giter_s" || k == "gcells_s" || k == "gflops" || k == "gsamples_s") {
        g = p SUBSEP f["size"] SUBSEP k
        if (!(g in gn)) { groups[++ng] = g }
        gn[g]++
        glabel[g, gn[g]] = (("ver" in f) ? f["ver"] " " : "") f["name"]
        gval[g, gn[g]] = f[k] + 0
    }
}
END {
    printf "# Benchmark results: %s\n\n", gpu > md
    printf "%s. Written by `make bench` (bench/run.sh) from the programs' RESULT lines; do not edit by hand.\n\n", header > md
    printf "`speed vs baseline` is the baseline's time over the row's: higher is faster, 1.00x as fast as the baseline, 0.50x half its speed.\n\n" > md
    for (i = 1; i <= np; i++) {
        p = progs[i]
        printf "## %s (%s)\n\n", p, chap[p] > md
        print "| ver | name | size | ms | rate | speed vs baseline | check | date |" > md
        print "|---|---|---|---|---|---|---|---|" > md
        printf "%s\n", rows[p] > md
        # a chart per size with two rows or more; a size sweep (more than eight sizes, as
        # bandwidth's) charts its last only
        nchart = 0
        for (j = 1; j <= ng; j++) { split(groups[j], gp, SUBSEP); if (gp[1] == p && gn[groups[j]] >= 2) last = ++nchart }
        c = 0
        for (j = 1; j <= ng; j++) {
            split(groups[j], gp, SUBSEP)
            if (gp[1] != p || gn[groups[j]] < 2) continue
            if (++c < last && nchart > 8) continue
            svg = sprintf("%s-%s-%s.svg", prefix, p, gp[2])
            write_chart(groups[j], svg, p " " gp[2] ", " unit_text(gp[3]))
            name = svg; sub(/.*\//, "", name)
            printf "![%s %s](%s)\n\n", p, gp[2], name > md
        }
    }
}
function write_chart(g, svg, title,    n, i, max, w, y, bw) {
    n = gn[g]; max = 0
    for (i = 1; i <= n; i++) if (gval[g, i] > max) max = gval[g, i]
    if (max <= 0) max = 1
    w = 720
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"13\">\n", w, 40 + 28 * n > svg
    printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" font-weight=\"bold\">%s (%s)</text>\n", title, gpu > svg
    for (i = 1; i <= n; i++) {
        y = 34 + 28 * (i - 1)
        bw = int(400 * gval[g, i] / max + 0.5)
        printf "<text x=\"10\" y=\"%d\">%s</text>\n", y + 15, glabel[g, i] > svg
        printf "<rect x=\"200\" y=\"%d\" width=\"%d\" height=\"20\" fill=\"#4477aa\"/>\n", y, bw > svg
        printf "<text x=\"%d\" y=\"%d\">%s</text>\n", 206 + bw, y + 15, gval[g, i] > svg
    }
    print "</svg>" > svg
    close(svg)
}
