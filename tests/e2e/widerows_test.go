package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

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

// TestWideRowsBoundedMemory pulls a table of 12 rows of 24 MiB (a 16 MiB
// LONGBLOB and an 8 MiB LONGTEXT, 288 MiB in all) and requires the
// server's peak RSS to stay under the bound docs/operations.md states: the
// process after a narrow run, plus Pebble's two memtables, plus twice the
// run's batch bound (batchBytes, 32 MiB), plus 24 times the widest row
// (about twelve live copies of a row on the way from the driver to Pebble,
// doubled by Go's heap growth at GOGC=100). A run that held its rows, or
// applied batches only by their count of cells, exceeds it.
//
// Not parallel: its 24 MiB statements stay out of the way of the other
// tests' MariaDB loads.
func TestWideRowsBoundedMemory(t *testing.T) {
	e := getMySQLEnv(t)
	const rows, blob, text = 12, 16 << 20, 8 << 20
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
		"CREATE TABLE wide (id INT PRIMARY KEY, b LONGBLOB, t LONGTEXT)",
	} {
		if _, err := src.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= rows; i++ {
		q := fmt.Sprintf("INSERT INTO wide VALUES (%d, REPEAT(CHAR(%d), %d), REPEAT('%c', %d))", i, i, blob, 'a'+i, text)
		if _, err := src.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	for _, a := range []string{"narrow", "wide"} {
		p.createAdapter(t, map[string]any{"name": a, "connection": "src", "resource": a})
	}
	p.mustRun(t, "narrow")
	base := p.peakRSS(t)
	r := p.mustRun(t, "wide")
	peak := p.peakRSS(t)
	const widest = blob + text
	bound := base + 2*64<<20 + 2*32<<20 + 24*widest
	t.Logf("peak RSS: %d MiB after a narrow run, %d MiB after %d rows of %d MiB (%d MiB in all); bound %d MiB",
		base>>20, peak>>20, r.RowsRead, widest>>20, rows*widest>>20, bound>>20)
	if r.RowsRead != rows || peak > bound {
		t.Fatalf("wide run: %d rows, peak RSS %d MiB over the bound %d MiB", r.RowsRead, peak>>20, bound>>20)
	}
	// The values arrived whole.
	var row struct {
		Row struct {
			T string `json:"t"`
		} `json:"row"`
	}
	p.jsonCall(t, 200, "GET", "/v1/datasets/wide/rows/3", nil, &row)
	if n := len(row.Row.T); n != text {
		t.Errorf("row 3 text: %d bytes, want %d", n, text)
	}
}
