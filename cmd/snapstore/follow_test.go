package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// TestProgressLine draws the bar of a running run: its fill follows the
// percent, the text says phase, rows out of the estimate, rate and time
// left; without an estimate the bar claims no share; the line fits the
// terminal.
func TestProgressLine(t *testing.T) {
	pct, left := 50.0, 4.0
	rec := adapters.RunRecord{Adapter: "products", Status: adapters.RunRunning, RowsRead: 100000, RowsEstimated: 200000,
		Progress: &adapters.RunProgress{Phase: "read", Percent: &pct, RowsPerSecond: 25000, SecondsLeft: &left}}
	line := progressLine(rec, 120)
	for _, want := range []string{"products [", strings.Repeat("█", 20) + strings.Repeat("░", 20) + "]", "read   50.0%", "100,000/~200,000 rows", "25,000/s", "4s left"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q: %s", want, line)
		}
	}
	if line := progressLine(rec, 80); len([]rune(line)) > 79 || !strings.HasSuffix(line, "4s left") || !strings.Contains(line, "█") {
		t.Errorf("an 80-column line: %q", line)
	}
	rec.Progress.Percent, rec.RowsEstimated, rec.Progress.SecondsLeft = nil, 0, nil
	if line := progressLine(rec, 120); strings.Contains(line, "█") || !strings.Contains(line, "·") || !strings.Contains(line, "100,000 rows") {
		t.Errorf("no estimate: %s", line)
	}
	rec.Progress = &adapters.RunProgress{Phase: "connect"}
	rec.RowsRead = 0
	if text := progressText(rec); text != "connect" {
		t.Errorf("connecting: %q", text)
	}
}

// TestCLI_RunProgressBar runs an adapter of 300,000 rows (30,000 under
// -short) through the CLI with stderr taken for a terminal: the bar is
// redrawn in place (\r) and grows to the end, the record follows on stdout,
// exit code 0. Without a terminal the same run writes no bar.
func TestCLI_RunProgressBar(t *testing.T) {
	// Enough rows for several frames at a 5 ms poll; fewer under -short,
	// where a run of 30,000 rows still lasts many polls.
	rows := 300000
	if testing.Short() {
		rows = 30000
	}
	url, _, _ := startServe(t, rows, nil)
	oldPoll, oldTerm := followPoll, isTerminal
	followPoll = 5 * time.Millisecond
	isTerminal = func(any) bool { return true }
	defer func() { followPoll, isTerminal = oldPoll, oldTerm }()
	code, out, errs := cli(t, "run", "big", "--server", url)
	if code != 0 || !strings.Contains(out, "status:    succeeded") || !strings.Contains(out, count(int64(rows))+" inserted") {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	frames := strings.Split(errs, "\r")
	var reading []string
	for _, f := range frames {
		if strings.Contains(f, "big [") && strings.Contains(f, "% ") {
			reading = append(reading, f)
		}
	}
	if len(reading) < 2 {
		t.Fatalf("%d progress frames in %q", len(reading), errs)
	}
	if !strings.HasSuffix(errs, "\r\x1b[K") {
		t.Errorf("the bar is not cleared at the end: %q", errs[max(0, len(errs)-80):])
	}
	t.Logf("%d frames, e.g. %s", len(reading), reading[len(reading)/2])
	for _, f := range reading {
		if !strings.HasSuffix(f, " left\x1b[K") && !strings.HasSuffix(f, "/s\x1b[K") && !strings.HasSuffix(f, " rows\x1b[K") {
			t.Errorf("a frame cut short: %q", f)
		}
	}
	isTerminal = oldTerm
	code, _, errs = cli(t, "run", "big", "--server", url)
	if code != 0 || strings.Contains(errs, "\r") || strings.Contains(errs, "█") {
		t.Fatalf("no terminal: exit %d %q", code, errs)
	}
}

// TestTables_ClusterFields: in a cluster the run and adapter tables say
// where runs happen (node, placed by; strategy, owner, single-node
// target); alone they keep their columns.
func TestTables_ClusterFields(t *testing.T) {
	now := time.Now()
	var b strings.Builder
	alone := adapters.RunRecord{ID: "r1-0001", Adapter: "film", Status: adapters.RunSucceeded, Start: now}
	if err := runsTable(&b, []adapters.RunRecord{alone}); err != nil || strings.Contains(b.String(), "NODE") {
		t.Errorf("runs alone: %v\n%s", err, b.String())
	}
	placed := alone
	placed.ID, placed.Node, placed.PlacedBy = "r1-0002", "node2", "node1"
	b.Reset()
	if err := runsTable(&b, []adapters.RunRecord{alone, placed}); err != nil || !strings.Contains(b.String(), "PLACED BY") ||
		!regexp.MustCompile(`r1-0002 .* node2 +node1`).MatchString(b.String()) {
		t.Errorf("runs in a cluster: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := printRun(&b, placed); err != nil || !strings.Contains(b.String(), "node:      node2") || !strings.Contains(b.String(), "placed by: node1") {
		t.Errorf("runs show in a cluster: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := printRun(&b, alone); err != nil || strings.Contains(b.String(), "placed by") {
		t.Errorf("runs show alone: %v\n%s", err, b.String())
	}
	b.Reset()
	list := []adapterView{{Adapter: api.Adapter{Name: "film", Strategy: "single-node"}, SingleNode: "node3", Owner: "node1"}, {Adapter: api.Adapter{Name: "actor"}, Owner: "node2"}}
	if err := adaptersTable(&b, list); err != nil || !regexp.MustCompile(`film .* single-node: node3 +node1`).MatchString(b.String()) ||
		!regexp.MustCompile(`actor .* local +node2`).MatchString(b.String()) {
		t.Errorf("adapters in a cluster: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := adaptersTable(&b, []adapterView{{Adapter: api.Adapter{Name: "film"}}}); err != nil || strings.Contains(b.String(), "OWNER") {
		t.Errorf("adapters alone: %v\n%s", err, b.String())
	}
}

// TestPrintRun_Tables: runs show gives a run of several tables' point and
// each table's counts, and why a table was read in full.
func TestPrintRun_Tables(t *testing.T) {
	rec := adapters.RunRecord{ID: "r1-0003", Adapter: "bank", Status: adapters.RunSucceeded, Start: time.Now(), Mode: adapters.ModeFull,
		Point: &source.PointInfo{Mode: source.PointReadLock, Reason: "FLUSH TABLES WITH READ LOCK granted", Connections: 2},
		Tables: []adapters.RunTable{
			{Name: "bank.accounts", Mode: adapters.ModeFull, ModeReason: "its schema changed since the current version", RowsRead: 100, Stats: snapshot.RunStats{Rows: 100, Inserted: 3}},
			{Name: "bank.ledger", Mode: adapters.ModeChunks, RowsRead: 5, Chunks: 4, ChunksSkipped: 3, Stats: snapshot.RunStats{Rows: 9000, Updated: 1}},
		}}
	var b strings.Builder
	if err := printRun(&b, rec); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{`point: read_lock over 2 connection\(s\); FLUSH TABLES`, `TABLE +READ .* DELETED +WHY\n`,
		`bank\.accounts +full +100 +100 +3 +0 +0 +its schema changed since the current version\n`, `bank\.ledger +chunks 1/4 +5 +9,000 +0 +1 +0 +-\n`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("runs show lacks %s:\n%s", re, out)
		}
	}
	// A run of mode full of which one table of two was read in full
	// says so, not that it read all rows.
	rec.RowsRead = 105
	b.Reset()
	if err := printRun(&b, rec); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "read:      1 of 2 tables in full, each table's read below: 105 rows (full)") || strings.Contains(out, "all rows") {
		t.Errorf("a run of several tables, one read in full:\n%s", out)
	}
	// A run of several tables that changed none is verify however its
	// tables were read: the read line does not say no row was read.
	rec.Mode, rec.RowsRead, rec.Chunks = adapters.ModeVerify, 105, 0
	b.Reset()
	if err := printRun(&b, rec); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "read:      no table changed (verify): each table's read below, 105 rows in all") || strings.Contains(out, "no rows") {
		t.Errorf("a verified run of several tables:\n%s", out)
	}
	// A table the run dropped; in a run refused by its guard, one it
	// would have dropped.
	rec.Tables = append(rec.Tables, adapters.RunTable{Name: "bank.old", Dropped: true, Stats: snapshot.RunStats{Deleted: 7}})
	for _, c := range []struct {
		status adapters.RunStatus
		read   string
	}{{adapters.RunSucceeded, "dropped"}, {adapters.RunFailed, "would drop"}} {
		rec.Status = c.status
		b.Reset()
		if err := printRun(&b, rec); err != nil {
			t.Fatal(err)
		}
		if re := `bank\.old +` + c.read + ` +0 +0 +0 +0 +7 `; !regexp.MustCompile(re).MatchString(b.String()) {
			t.Errorf("a %s run's dropped table lacks %s:\n%s", c.status, re, b.String())
		}
	}
}

// TestPrintRun_ErrorPrintable: a run's error quoting a source's text with
// control characters (a value holding an ESC sequence) prints them as
// escapes, on runs show and when a followed run fails.
func TestPrintRun_ErrorPrintable(t *testing.T) {
	rec := adapters.RunRecord{ID: "r1-0004", Adapter: "shop", Status: adapters.RunFailed, Code: "duplicate_key", Start: time.Now(),
		Error: "duplicate key (name=\x1b[2Jx) 2 times"}
	var b strings.Builder
	if err := printRun(&b, rec); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "\x1b") || !strings.Contains(out, `error: duplicate key (name=\x1b[2Jx) 2 times`) {
		t.Errorf("runs show of an error with an ESC sequence:\n%q", out)
	}
}
