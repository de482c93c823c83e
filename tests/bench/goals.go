package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// report is everything one bench measured.
type report struct {
	cmd, machine, commit string
	load                 []string // 1-minute load average at the start, after the HTTP reads, at the end
	genTime, source      time.Duration
	tableBytes           int64

	first                          time.Duration
	same, ranges, churn            []time.Duration
	firstRec, sameRec, churnRec    runRecord
	rangesRec                      runRecord
	oneCopy                        int64
	afterChurn, afterSST, afterWAL int64
	dump                           int64

	rss1, rssSession, rssBig int64
	rssBigRows               int64
	// rssExport is the peak RSS of a fresh server exporting the whole
	// rssBigRows-row version as Parquet and as an Arrow stream
	// (exportAll).
	rssExport int64

	pointRPS, scanRPS, trivialRPS float64
	// https is the point reads over HTTPS and over plain HTTP measured
	// in pairs (httpsPointReads); empty: not measured (-https=false).
	https httpsFigure
	// formats holds the rows/s of a whole scan decoded by the client, by
	// format (formats.go).
	formats map[string]float64

	goBench map[string]goBenchResult

	hbaseFirst time.Duration
	hbaseRows  int64

	// copies is the copy by diff beside a full copy (copy.go); empty:
	// not measured (-copy=false).
	copies copyFigures

	// pg is the bench table on PostgreSQL (postgres.go); databases the
	// database of 20 tables per source (database.go), empty: not
	// measured (-database=false).
	pg        pgFigures
	databases []dbFigure
}

// goal is one row of the goal table.
type goal struct {
	what, measured, baseline, ratio, target string
	met                                     *bool // nil: not measured or informational
}

func yes(b bool) *bool { return &b }

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func secs(d time.Duration) string { return d.Round(time.Millisecond).String() }

// median of durations.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// goals returns the rows of the goal table (the issue's), in its order.
func (r *report) goals() []goal {
	src := r.source.Seconds()
	var g []goal
	runRow := func(what string, d time.Duration, limit float64, note string) {
		x := d.Seconds() / src
		g = append(g, goal{what: what, measured: secs(d) + note, baseline: "source read " + secs(r.source),
			ratio: fmt.Sprintf("%.2fx", x), target: fmt.Sprintf("<= %sx", strconv.FormatFloat(limit, 'f', -1, 64)), met: yes(x <= limit)})
	}
	runRow(fmt.Sprintf("first run, %d rows", *rows), r.first, 1.15, "")
	if len(r.churn) > 0 {
		runRow("re-run, 1% of rows changed at random (the first such run)", r.churn[0], 1.15, fmt.Sprintf(", %d updated", r.churnRec.Stats.Updated))
		if len(r.churn) > 2 {
			runRow(fmt.Sprintf("same, median of the %d churn runs", len(r.churn)), median(r.churn), 1.15, "")
		}
	}
	last := func(ds []time.Duration) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		return ds[len(ds)-1]
	}
	runRow(fmt.Sprintf("re-run, 1%% of rows changed in 4 key ranges (the second such run; the first: %s)", durations(r.ranges[:len(r.ranges)-1])), last(r.ranges), 0.6,
		fmt.Sprintf(", %d updated, mode %s, %d of %d chunks read", r.rangesRec.Stats.Updated, r.rangesRec.Mode, r.rangesRec.Chunks-r.rangesRec.ChunksSkipped, r.rangesRec.Chunks))
	note := fmt.Sprintf(", mode %s", r.sameRec.Mode)
	if r.sameRec.Verified {
		note += ", verified, no new version"
	}
	runRow(fmt.Sprintf("re-run, nothing changed (the second such run; the first: %s)", durations(r.same[:len(r.same)-1])), last(r.same), 0.3, note)
	if first := r.firstRec.Stats.BytesWritten; first > 0 {
		pct := 100 * float64(r.churnRec.Stats.BytesWritten) / float64(first)
		g = append(g, goal{what: "bytes written by a 1% churn re-run", measured: mib(r.churnRec.Stats.BytesWritten),
			baseline: "first run " + mib(first), ratio: fmt.Sprintf("%.3f%%", pct), target: "<= 0.2%", met: yes(pct <= 0.2)})
	}
	x := float64(r.afterChurn) / float64(r.tableBytes)
	g = append(g, goal{what: fmt.Sprintf("storage after %d runs with 1%% churn (data dir: SSTables %s, WAL %s)", len(r.churn)+1, mib(r.afterSST), mib(r.afterWAL)),
		measured: mib(r.afterChurn), baseline: "table as text " + mib(r.tableBytes), ratio: fmt.Sprintf("%.2fx", x), target: "<= 0.5x", met: yes(x <= 0.5)})
	const rssLimit = 256 << 20
	g = append(g, goal{what: fmt.Sprintf("peak RSS, first run of %d rows", *rows), measured: mib(r.rss1), target: "<= 256 MiB", met: yes(r.rss1 <= rssLimit)})
	g = append(g, goal{what: "peak RSS, the whole session (runs and HTTP reads)", measured: mib(r.rssSession), target: "<= 256 MiB", met: yes(r.rssSession <= rssLimit)})
	if r.rssBig > 0 {
		g = append(g, goal{what: fmt.Sprintf("peak RSS, first run of %d rows", r.rssBigRows), measured: mib(r.rssBig),
			baseline: fmt.Sprintf("%d rows %s", *rows, mib(r.rss1)), ratio: ratio(float64(r.rssBig), float64(r.rss1)), target: "flat, <= 256 MiB", met: yes(r.rssBig <= rssLimit)})
	}
	if r.rssExport > 0 {
		g = append(g, goal{what: fmt.Sprintf("peak RSS, full export of a %d-row version (Parquet, then Arrow)", r.rssBigRows), measured: mib(r.rssExport),
			target: "<= 256 MiB", met: yes(r.rssExport <= rssLimit)})
	}
	pct := 100 * r.pointRPS / r.trivialRPS
	g = append(g, goal{what: fmt.Sprintf("HTTP point reads (wrk -t2 -c16 %v)", *wrkDur), measured: fmt.Sprintf("%.0f req/s", r.pointRPS),
		baseline: fmt.Sprintf("trivial echo handler %.0f req/s", r.trivialRPS), ratio: fmt.Sprintf("%.0f%%", pct), target: ">= 75%", met: yes(pct >= 75)})
	https := goal{what: fmt.Sprintf("HTTPS point reads, keep-alive (wrk -t2 -c16, %d pairs of %v with HTTP, median of the pairs' ratios)", *httpsRounds, max(*httpsRound, time.Second)), measured: "not measured (-https=false)", target: ">= 85%"}
	if len(r.https.plain) > 0 {
		pct := 100 * r.https.ratio()
		https.measured = fmt.Sprintf("%.0f req/s (median), server CPU %.0f µs a request", medianOf(r.https.tls), medianOf(r.https.tlsCPU))
		if len(r.https.together) > 0 {
			https.measured += fmt.Sprintf("; both at once %.0f%%", 100*medianOf(r.https.together))
		}
		https.baseline = fmt.Sprintf("HTTP point reads %.0f req/s (median), server CPU %.0f µs a request", medianOf(r.https.plain), medianOf(r.https.plainCPU))
		https.ratio, https.met = fmt.Sprintf("%.0f%%", pct), yes(pct >= 85)
	}
	g = append(g, https)
	for _, b := range []struct {
		prefix, what, base, target string
		limit                      float64
	}{
		{"BenchmarkGet/history=100/reader=snapshot", "point get, 100 versions of history (go bench)", "raw Pebble, same history", "<= 2x", 2},
		{"BenchmarkScan/reader=snapshot", "scan of 200k rows (go bench)", "raw Pebble", "<= 1.5x", 1.5},
		{"BenchmarkDiff/churn=random/walk=timebound", fmt.Sprintf("diff of a 1%% churn version of %d rows, rows changed at random (go bench)", *rows), "full walk", "<= 0.1x", 0.1},
		{"BenchmarkDiff/churn=ranges/walk=timebound", fmt.Sprintf("diff of a 1%% churn version of %d rows, rows changed in 4 key ranges (go bench)", *rows), "full walk", "<= 0.1x", 0.1},
	} {
		row := goal{what: b.what, target: b.target}
		for name, res := range r.goBench {
			if strings.HasPrefix(name, b.prefix) {
				row.measured = fmt.Sprintf("%.0f ns/op", res.nsPerOp)
				row.baseline = fmt.Sprintf("%s %.0f ns/op", b.base, res.baseline)
				row.ratio = fmt.Sprintf("%.2fx", res.xBaseline)
				row.met = yes(res.xBaseline <= b.limit)
			}
		}
		if row.met == nil {
			row.measured = "not measured"
		}
		g = append(g, row)
	}
	rowsPerSec := r.scanRPS * 1000
	g = append(g, goal{what: "HTTP NDJSON scan, 1,000-row pages", measured: fmt.Sprintf("%.0f rows/s (%.0f req/s)", rowsPerSec, r.scanRPS),
		target: ">= 1M rows/s", met: yes(rowsPerSec >= 1e6)})
	if nd := r.formats["ndjson"]; nd > 0 {
		for _, f := range []struct {
			name, what string
			x          float64
		}{{"arrow", "HTTP whole scan as an Arrow stream, decoded", 2.5}, {"parquet", "HTTP whole scan as Parquet, decoded", 1.2}} {
			got := r.formats[f.name]
			g = append(g, goal{what: f.what, measured: fmt.Sprintf("%.0f rows/s", got),
				baseline: fmt.Sprintf("NDJSON decoded %.0f rows/s", nd), ratio: ratio(got, nd),
				target: fmt.Sprintf(">= %.1fx NDJSON", f.x), met: yes(got >= f.x*nd)})
		}
	}
	for _, c := range r.copies.kinds {
		g = append(g, goal{what: fmt.Sprintf("copy of a version with %s by diff, between two servers", c.churn),
			measured: fmt.Sprintf("%s, mode %s, %d updated", secs(c.diff), c.diffRec.Mode, c.diffRec.Stats.Updated),
			baseline: fmt.Sprintf("full copy of the same version %s", secs(c.full)), ratio: fmt.Sprintf("%.2fx", c.ratio()),
			target: "<= 0.1x", met: yes(c.diffRec.Mode == "diff" && c.ratio() <= 0.1)})
	}
	if len(r.copies.kinds) == 0 {
		g = append(g, goal{what: "copy of a 1% churn version by diff", measured: "not measured (-copy=false)", target: "<= 0.1x"})
	}
	if r.hbaseFirst > 0 {
		runRow(fmt.Sprintf("first run on HBase, %d rows", r.hbaseRows), r.hbaseFirst, 3, "")
	} else {
		g = append(g, goal{what: "first run on HBase", measured: "not measured (no SNAPSTORE_TEST_HBASE_THRIFT)", target: "<= 3x"})
	}
	g = append(g, r.pg.goals()...)
	return append(g, databaseGoals(r.databases, r.rss1)...)
}

func (r *report) write(path string) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nMeasured %s on %s, at commit %s; 1-minute load average %s (start, after the HTTP reads, end).\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), r.machine, r.commit, strings.Join(r.load, ", "))
	fmt.Fprintf(&b, "Command: `%s`.\n\n", r.cmd)
	fmt.Fprintf(&b, "Table: %d rows, %s as text (%.0f bytes a row), generated in %v.\n\n", *rows, mib(r.tableBytes), float64(r.tableBytes)/float64(*rows), r.genTime.Round(time.Millisecond))
	b.WriteString("| what | measured | baseline | ratio | goal | |\n|---|---|---|---|---|---|\n")
	var missed []string
	for _, g := range r.goals() {
		status := ""
		if g.met != nil {
			status = "met"
			if !*g.met {
				status = "**missed**"
				missed = append(missed, g.what)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", g.what, g.measured, g.baseline, g.ratio, g.target, status)
	}
	if len(missed) == 0 {
		b.WriteString("\nEvery goal measured here is met.\n")
	} else {
		fmt.Fprintf(&b, "\nMissed: %s.\n", strings.Join(missed, "; "))
	}
	b.WriteString("\nFor comparison:\n\n| what | measured | baseline | ratio |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| storage after the churn runs, vs the data dir after run 1 | %s | %s | %s |\n", mib(r.afterChurn), mib(r.oneCopy), ratio(float64(r.afterChurn), float64(r.oneCopy)))
	if r.dump > 0 {
		n := int64(len(r.churn) + 1)
		fmt.Fprintf(&b, "| same, vs `mysqldump \\| zstd` kept per run | %s | %d dumps %s | %s |\n", mib(r.afterChurn), n, mib(r.dump*n), ratio(float64(r.afterChurn), float64(r.dump*n)))
	}
	fmt.Fprintf(&b, "| the runs with nothing changed | %s | | |\n", durations(r.same))
	fmt.Fprintf(&b, "| the runs with 1%% changed in 4 key ranges | %s | | |\n", durations(r.ranges))
	fmt.Fprintf(&b, "| the %d churn runs | %s | | |\n", len(r.churn), durations(r.churn))
	if r.copies.first > 0 {
		fmt.Fprintf(&b, "| first copy of the edge's dataset, in full (copy.go) | %s, %d rows | | |\n", secs(r.copies.first), r.copies.firstRec.Stats.Rows)
		for _, c := range r.copies.kinds {
			fmt.Fprintf(&b, "| phases of the copy by diff, %s | %s | phases of the full copy: %s | |\n", c.churn, phases(c.diffRec), phases(c.fullRec))
		}
	}
	for _, name := range sortedKeys(r.goBench) {
		res := r.goBench[name]
		x := ""
		if res.xBaseline > 0 {
			x = fmt.Sprintf("%.2fx", res.xBaseline)
		}
		fmt.Fprintf(&b, "| go bench %s | %.0f ns/op | | %s |\n", name, res.nsPerOp, x)
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	prev, _ := os.ReadFile(path)
	// Keep any hand-written sections after the generated table.
	const marker = "\n<!-- end of generated section -->\n"
	tail := ""
	if i := bytes.Index(prev, []byte(marker)); i >= 0 {
		tail = string(prev[i+len(marker):])
	}
	if err := os.WriteFile(path, []byte(b.String()+marker+tail), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Print(b.String())
}

func durations(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprintf("%.2fs", d.Seconds()))
	}
	return strings.Join(s, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
