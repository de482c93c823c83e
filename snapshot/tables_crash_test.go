package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store/hbase"
)

// The crash test of runs of named tables, in the manner of crash_test.go:
// a child process (TestTablesCrashChild) begins a run of the three tables
// of shop, writes some tables whole and part of another, and stops dead at
// a kill point, where the parent kills it with SIGKILL. The parent then
// reopens the store and checks D3 and D4 for the dataset as a whole: the
// current version is the last committed one, every table whole; no cell
// of the killed run is visible, and GC removes them; the next run
// commits.
const (
	tablesCrashEnvDir   = "SNAPSTORE_TABLES_CRASH_DIR"
	tablesCrashEnvPoint = "SNAPSTORE_TABLES_CRASH_POINT" // a hook point, or "tables" (after the Puts, before Commit)
	tablesCrashEnvGen   = "SNAPSTORE_TABLES_CRASH_GEN"
)

func TestTablesCrashChild(t *testing.T) {
	dir := os.Getenv(tablesCrashEnvDir)
	if dir == "" {
		t.Skip("run by TestTablesCrash")
	}
	point := os.Getenv(tablesCrashEnvPoint)
	gen, _ := strconv.Atoi(os.Getenv(tablesCrashEnvGen))
	ctx := context.Background()
	crash := func(what string) {
		fmt.Printf("CRASH AT %s\n", what)
		os.Stdout.Sync()
		select {} // wait for SIGKILL
	}
	hook := func(p string, n int64) {
		if p == point {
			crash(p)
		}
	}
	db, err := Open(ctx, openTestStore(t, dir), Options{batchSize: 16, hook: hook})
	if err != nil {
		t.Fatal(err)
	}
	tables := shop(gen)
	var opts TablesRunOptions
	for _, tb := range tables {
		opts.Tables = append(opts.Tables, tb.spec)
	}
	tr, err := db.BeginTablesRun(ctx, tablesConfig, opts)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CRASH TXN %d\n", tr.TxnID())
	// Two tables whole, then half of the third (its batches of 16 go out
	// while it runs).
	for i, tb := range tables {
		rows := tb.rows
		if i == 2 && point == "tables" {
			rows = rows[:len(rows)/2]
		}
		for _, row := range rows {
			if err := tr.Table(tb.spec.Name).Put(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
	}
	if point == "tables" {
		crash(point)
	}
	if _, err := tr.Commit(ctx); err != nil {
		fmt.Printf("CRASH FAILED %v\n", err)
		return
	}
	fmt.Printf("CRASH COMMITTED %d\n", tr.TxnID())
}

// TestTablesCrash kills a child at each point of a run of named tables
// before its commit point, and checks that the previous version is whole
// and that the next run commits.
func TestTablesCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	dir := t.TempDir()
	// Version 1, written by this process.
	st := openTestStore(t, dir)
	db, err := Open(ctx, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v1 := mustRunTables(t, db, shop(1))
	db.Close()
	st.Close()
	last, lastGen := v1.Version, 1
	points := []string{"tables", "commit:flushed", "commit:deleted", "commit:synced", "commit:recorded"}
	for i, point := range points {
		gen := i + 2
		cmd := exec.Command(os.Args[0], "-test.run=^TestTablesCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), tablesCrashEnvDir+"="+dir, tablesCrashEnvPoint+"="+point, tablesCrashEnvGen+"="+strconv.Itoa(gen))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var txnID int64
		killed := false
		var log []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			log = append(log, line)
			if id, ok := strings.CutPrefix(line, "CRASH TXN "); ok {
				txnID, _ = strconv.ParseInt(id, 10, 64)
			}
			if strings.HasPrefix(line, "CRASH AT ") {
				cmd.Process.Kill() // SIGKILL
				killed = true
				break
			}
		}
		cmd.Wait()
		if !killed || txnID == 0 {
			t.Fatalf("%s: the child was not killed at its point:\n%s", point, strings.Join(log, "\n"))
		}

		// A process started after the child's slot expired and past the
		// grace (crash_test.go).
		st := openTestStore(t, dir)
		later := func() time.Time { return time.Now().Add(hbase.DefaultMaxWriteDelay + 2*DefaultSlotLease) }
		db, err := Open(ctx, st, Options{now: later})
		if err != nil {
			t.Fatal(err)
		}
		info, err := db.Dataset(ctx, tablesConfig.Name)
		if err != nil {
			t.Fatal(err)
		}
		if info.Current != last {
			t.Fatalf("%s: current %d, want %d", point, info.Current, last)
		}
		checkShop(t, db, last, shop(lastGen))
		if !slices.Contains(invalidIDs(db, tablesConfig.Name), txnID) && !slices.Contains(inProgressIDs(db, tablesConfig.Name), txnID) {
			t.Fatalf("%s: killed txn %d neither invalid nor in progress", point, txnID)
		}
		// Once synced, the killed run's cells are in the store (in the
		// tables of version 1, whose numbers the run kept), none of them
		// visible; before, its unsynced writes may be lost with it.
		killedCells := 0
		for _, ti := range v1.Tables {
			killedCells += tableCellsIn(t, st, ti, txnID, txnID+1)
		}
		if killedCells == 0 && (point == "commit:synced" || point == "commit:recorded") {
			t.Fatalf("%s: the killed txn %d wrote nothing", point, txnID)
		}
		// The next run commits, then GC removes the killed run's cells
		// from every table.
		vi := mustRunTables(t, db, shop(gen))
		checkShop(t, db, vi.Version, shop(gen))
		if _, err := db.GC(ctx, tablesConfig.Name, false); err != nil {
			t.Fatal(err)
		}
		for _, ti := range vi.Tables {
			if n := tableCellsIn(t, st, ti, txnID, txnID+1); n != 0 {
				t.Fatalf("%s: %d cells of killed txn %d in %s after GC", point, n, txnID, ti.Name)
			}
		}
		if slices.Contains(invalidIDs(db, tablesConfig.Name), txnID) {
			t.Fatalf("%s: killed txn %d not pruned", point, txnID)
		}
		last, lastGen = vi.Version, gen
		db.Close()
		st.Close()
	}
}
