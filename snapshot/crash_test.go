package snapshot

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/store/storetest"
)

// The crash test re-executes the test binary as a child (TestCrashChild)
// that runs a run, a GC, a rollback or a drop and stops dead at a kill
// point, where the parent kills it with SIGKILL. A kill point is a named
// point of the code (Options.hook: put:300, commit:synced:0, row:write:2,
// drop:deleted:0...), the n-th store call of the operation (call:n:
// between two calls, so inside a multi-call operation), or the n-th
// write of it applied in part and the kill at the next call (part:n: on
// HBase, a prefix of that write's Thrift calls, as storetest.FaultStore
// applies it along store.ApplyPlanner). The parent then reopens the store
// and checks D3, D4, D9, D10 and D11: the current version is exactly the
// last committed snapshot, or the one the killed operation committed
// whole; no cell of a killed run is visible; GC removes them.
const (
	crashEnvDir    = "SNAPSTORE_CRASH_DIR"
	crashEnvPoint  = "SNAPSTORE_CRASH_POINT" // point:n, e.g. put:300
	crashEnvIter   = "SNAPSTORE_CRASH_ITER"
	crashEnvMode   = "SNAPSTORE_CRASH_MODE" // run, gc, rollback or drop
	crashEnvTarget = "SNAPSTORE_CRASH_TARGET"
	crashRowCount  = 600
)

var crashSchema = Schema{
	Columns: []Column{{Name: "id", Kind: KindInt}, {Name: "a", Kind: KindString}, {Name: "b", Kind: KindInt}},
	Key:     []string{"id"},
}

var crashConfig = DatasetConfig{Name: "c", Retention: Retention{TTL: time.Nanosecond, MinVersions: 2}, Guard: Guard{MaxShrink: 1}}

// crashRows is the source table of iteration i, in a shuffled order.
func crashRows(i int) [][]Value {
	var rows [][]Value
	for k := 0; k < crashRowCount; k++ {
		if (k*7+i)%23 == 0 {
			continue
		}
		a := "v" + strconv.Itoa(k)
		if (k+i)%10 == 0 {
			a += "-" + strconv.Itoa(i)
		}
		rows = append(rows, []Value{iv(int64(k)), sv(a), iv(int64(k % 5))})
	}
	for k := 0; k < 3; k++ {
		id := int64(crashRowCount + i*3 + k)
		rows = append(rows, []Value{iv(id), sv("new"), {}})
	}
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	rng.Shuffle(len(rows), func(x, y int) { rows[x], rows[y] = rows[y], rows[x] })
	return rows
}

func crashRowsJSON(rows [][]Value) []string {
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b []Value) int { return cmp.Compare(a[0].Int, b[0].Int) })
	out := make([]string, len(sorted))
	for i, r := range sorted {
		b, _ := Row{Columns: []string{"id", "a", "b"}, Values: r}.MarshalJSON()
		out[i] = string(b)
	}
	return out
}

// TestCrashChild is the child of TestCrash; it skips unless run by it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("run by TestCrash")
	}
	pn := os.Getenv(crashEnvPoint)
	i := strings.LastIndexByte(pn, ':')
	point := pn[:i]
	at, _ := strconv.ParseInt(pn[i+1:], 10, 64)
	iter, _ := strconv.Atoi(os.Getenv(crashEnvIter))
	mode := os.Getenv(crashEnvMode)
	target, _ := strconv.ParseInt(os.Getenv(crashEnvTarget), 10, 64)
	ctx := context.Background()
	crash := func(what string, n int64) {
		fmt.Printf("CRASH AT %s %d\n", what, n)
		os.Stdout.Sync()
		select {} // wait for SIGKILL
	}
	// Calls are counted from the start of the operation the mode names.
	var counting atomic.Bool
	var calls, writes atomic.Int64
	fs := storetest.NewFaultStore(openTestStore(t, dir), storetest.Faults{Rand: rand.New(rand.NewPCG(uint64(iter), 3))})
	partial := atomic.Bool{}
	fs.SetBefore(func(c storetest.Call) {
		if !counting.Load() {
			return
		}
		n := calls.Add(1)
		if partial.Load() || point == "call" && n >= at {
			crash(point, n)
		}
		if c.Op.IsWrite() && point == "part" && writes.Add(1) == at {
			partial.Store(true) // this write lands in part; the kill comes at the next call
		}
	})
	fs.SetDecide(func(c storetest.Call) storetest.Fault {
		if partial.Load() && c.Op.IsWrite() && counting.Load() && writes.Load() == at {
			return storetest.Partial
		}
		return storetest.NoFault
	})
	var rowHooks atomic.Int64 // row:write and row:written, counted from the operation's start
	hook := func(p string, n int64) {
		if !counting.Load() || p != point {
			return
		}
		if strings.HasPrefix(p, "row:") {
			n = rowHooks.Add(1)
		}
		if n >= at {
			crash(p, n)
		}
	}
	db, err := Open(ctx, fs, Options{batchSize: 64, hook: hook})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("CRASH OPEN")
	run := func() {
		r, err := db.BeginRun(ctx, crashConfig, RunOptions{Schema: crashSchema, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("CRASH TXN %d\n", r.TxnID())
		for _, row := range crashRows(iter) {
			if err := r.Put(ctx, row); err != nil {
				fmt.Printf("CRASH FAILED %v\n", err)
				r.Abort(ctx, err.Error()) // as the runner does
				return
			}
		}
		if _, err := r.Commit(ctx); err != nil {
			fmt.Printf("CRASH FAILED %v\n", err)
			return
		}
		fmt.Printf("CRASH COMMITTED %d\n", r.TxnID())
	}
	switch mode {
	case "run":
		counting.Store(true)
		run()
	case "gc":
		run()
		counting.Store(true)
		if _, err := db.GC(ctx, crashConfig.Name, false); err != nil {
			fmt.Printf("CRASH FAILED %v\n", err)
		}
	case "rollback":
		counting.Store(true)
		vi, err := db.Rollback(ctx, crashConfig.Name, target)
		if err != nil {
			fmt.Printf("CRASH FAILED %v\n", err)
			break
		}
		fmt.Printf("CRASH COMMITTED %d\n", vi.Version)
	case "drop":
		if _, err := db.Dataset(ctx, crashConfig.Name); errors.Is(err, ErrDatasetNotFound) {
			run() // something to drop
			fmt.Println("CRASH CREATED")
		}
		counting.Store(true)
		if err := db.DropDataset(ctx, crashConfig.Name); err != nil {
			fmt.Printf("CRASH FAILED %v\n", err)
			break
		}
		fmt.Println("CRASH DROPPED")
		counting.Store(false)
		run()
	}
	fmt.Println("CRASH DONE")
}

func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 100+ processes")
	}
	ctx := context.Background()
	dir := t.TempDir()
	var v1 int64
	{ // version 1, in process
		st := openTestStore(t, dir)
		db, err := Open(ctx, st, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := db.BeginRun(ctx, crashConfig, RunOptions{Schema: crashSchema})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range crashRows(0) {
			if err := r.Put(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		vi, err := r.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v1 = vi.Version
		db.Close()
		st.Close()
	}
	type kill struct {
		mode, point string
		// committed: the point is after the durable commit; before: it is
		// before the commit point; neither: either may have happened.
		committed, before bool
	}
	var points []kill
	for _, n := range []int{1, 60, 150, 250, 350, 450, 500, 560} {
		points = append(points, kill{"run", "put:" + strconv.Itoa(n), false, true})
	}
	for _, n := range []int{60, 400} {
		points = append(points, kill{"run", "flush:" + strconv.Itoa(n), false, true})
	}
	for _, p := range []string{"commit:flushed:0", "commit:deleted:0", "commit:synced:0", "commit:recorded:0", "row:write:2"} {
		points = append(points, kill{"run", p, false, true})
	}
	points = append(points, kill{"run", "row:written:2", true, false}, kill{"run", "commit:committed:0", true, false}, kill{"run", "commit:cleared:0", true, false})
	points = append(points, kill{"gc", "gc:batch:1", true, false}, kill{"gc", "gc:batch:40", true, false})
	// Inside multi-call operations: between two store calls, or with a
	// write applied in part (on HBase, between its Thrift calls).
	multi := []kill{
		{"run", "call:6", false, false}, {"run", "part:3", false, false}, {"run", "part:7", false, false},
		{"gc", "row:write:1", true, false}, {"gc", "row:written:1", true, false}, {"gc", "call:4", true, false},
		{"gc", "part:2", true, false}, {"gc", "row:write:2", true, false},
		{"rollback", "row:written:1", false, false}, {"rollback", "call:5", false, false}, {"rollback", "part:3", false, false},
		{"rollback", "commit:recorded:0", false, true}, {"rollback", "row:write:2", false, true}, {"rollback", "row:written:2", true, false},
		{"drop", "call:1", false, false}, {"drop", "drop:recorded:0", false, false}, {"drop", "call:3", false, false},
		{"drop", "drop:deleted:0", false, false}, {"drop", "row:written:2", false, false},
	}

	// committed holds the contents of the versions committed so far.
	type version struct {
		v    int64
		rows []string
	}
	committed := []version{{v1, crashRowsJSON(crashRows(0))}}
	iter := 0
	kills := 0
	for round := 0; round < 3; round++ {
		all := points
		if round < 2 {
			all = append(slices.Clone(points), multi...)
		}
		for _, k := range all {
			iter++
			var target int64
			if k.mode == "rollback" {
				if len(committed) < 2 {
					continue
				}
				target = committed[len(committed)-2].v
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvPoint+"="+k.point,
				crashEnvIter+"="+strconv.Itoa(iter), crashEnvMode+"="+k.mode, crashEnvTarget+"="+strconv.FormatInt(target, 10))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = cmd.Stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var txnID int64
			killed, done, sawCommit, dropped := false, false, false, false
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
				if strings.HasPrefix(line, "CRASH COMMITTED ") {
					sawCommit = true
				}
				dropped = dropped || line == "CRASH DROPPED"
				if line == "CRASH CREATED" {
					committed = []version{{txnID, crashRowsJSON(crashRows(iter))}}
				}
				if line == "CRASH DONE" {
					done = true
				}
			}
			cmd.Wait()
			what := fmt.Sprintf("iteration %d (%s %s)", iter, k.mode, k.point)
			if !killed && !done {
				t.Fatalf("%s: child neither reached its point nor finished:\n%s", what, strings.Join(log, "\n"))
			}
			if killed {
				kills++
			} else {
				t.Logf("%s: not reached, child finished: %s", what, strings.Join(slices.DeleteFunc(log, func(l string) bool { return !strings.HasPrefix(l, "CRASH") }), "; "))
			}

			st := openTestStore(t, dir)
			// A process started after the killed child's writer slot
			// expired (W1; on Pebble, a store one process opens, it is
			// taken at once anyway), and after the grace before its
			// transaction may be pruned (G6: the gateway may still apply
			// a call of the killed child; 21.5 minutes with HBase's
			// defaults, none on Pebble).
			later := func() time.Time { return time.Now().Add(hbase.DefaultMaxWriteDelay + 2*DefaultSlotLease) }
			db, err := Open(ctx, st, Options{now: later})
			if err != nil {
				t.Fatal(err)
			}
			info, err := db.Dataset(ctx, crashConfig.Name)
			if err == nil && info.Current == 0 && len(committed) == 0 {
				err = ErrDatasetNotFound // created again, nothing committed yet
			}
			switch {
			case errors.Is(err, ErrDatasetNotFound) && (k.mode == "drop" || len(committed) == 0):
				// Dropped, or its drop recorded: nothing of it is left to
				// read, and a later writer finishes the drop (D10).
				if err := db.DropDataset(ctx, crashConfig.Name); err != nil && !errors.Is(err, ErrDatasetNotFound) {
					t.Fatalf("%s: finishing the drop: %v", what, err)
				}
				if _, err := db.Dataset(ctx, crashConfig.Name); !errors.Is(err, ErrDatasetNotFound) {
					t.Fatalf("%s: after the drop was finished: %v", what, err)
				}
				committed = nil
				db.Close()
				st.Close()
				continue
			case err != nil:
				t.Fatalf("%s: %v", what, err)
			}
			last := version{}
			if len(committed) > 0 {
				last = committed[len(committed)-1]
			}
			switch {
			case k.mode == "drop":
				// Not dropped: either killed before the drop was recorded,
				// or dropped and created again by the child's run.
				if dropped && info.Current == txnID && txnID != 0 {
					committed = []version{{txnID, crashRowsJSON(crashRows(iter))}}
				} else if info.Current != last.v {
					t.Fatalf("%s: current %d, want %d or a new dataset", what, info.Current, last.v)
				}
			case k.mode == "rollback":
				restored := info.Current != last.v
				if (k.committed || sawCommit) && !restored || k.before && restored {
					t.Fatalf("%s: rollback committed %v, current %d (before %d)", what, restored, info.Current, last.v)
				}
				if restored {
					vi := info.CurrentInfo
					if vi == nil || vi.RestoredFrom != target {
						t.Fatalf("%s: current %+v, want a version restored from %d", what, vi, target)
					}
					rows := committed[len(committed)-2].rows
					committed = append(committed, version{info.Current, rows})
				}
			default:
				isNew := info.Current == txnID && txnID != 0
				if (sawCommit || k.committed) && !isNew || k.before && isNew {
					t.Fatalf("%s: current %d, txn %d committed %v", what, info.Current, txnID, sawCommit)
				}
				if isNew {
					committed = append(committed, version{txnID, crashRowsJSON(crashRows(iter))})
				} else if len(committed) == 0 {
					t.Fatalf("%s: current %d of a dataset nothing was committed to", what, info.Current)
				} else {
					// Excluded: invalid, or still in progress until the
					// dataset's writer slot is next taken (txn.I5).
					excluded := slices.Contains(invalidIDs(db, crashConfig.Name), txnID) || slices.Contains(inProgressIDs(db, crashConfig.Name), txnID)
					if txnID != 0 && !excluded {
						t.Fatalf("%s: killed txn %d: current %d, invalid %v", what, txnID, info.Current, invalidIDs(db, crashConfig.Name))
					}
				}
				last = committed[len(committed)-1]
				if info.Current != last.v {
					t.Fatalf("%s: current %d, want %d", what, info.Current, last.v)
				}
			}
			last = committed[len(committed)-1]
			r, err := db.Reader(ctx, crashConfig.Name, At{})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got := scanJSON(t, r)
			r.Close()
			if !slices.Equal(got, last.rows) {
				t.Fatalf("%s: current version differs from the last committed snapshot (%d rows, want %d)", what, len(got), len(last.rows))
			}
			// The previous kept version, if any, is intact too.
			if vs, _ := db.Versions(ctx, crashConfig.Name); len(vs) > 1 && len(committed) > 1 {
				prev := committed[len(committed)-2]
				if vs[1].Version == prev.v {
					r, err := db.Reader(ctx, crashConfig.Name, At{Version: prev.v})
					if err != nil {
						t.Fatal(err)
					}
					got := scanJSON(t, r)
					r.Close()
					if !slices.Equal(got, prev.rows) {
						t.Fatalf("%s: version %d changed", what, prev.v)
					}
				}
			}
			// GC removes the killed run's cells and prunes its id.
			if _, err := db.GC(ctx, crashConfig.Name, false); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if k.mode == "run" && killed && info.Current != txnID {
				if n := countCellsAt(t, st, txnID); n != 0 {
					t.Fatalf("%s: %d cells of killed txn %d after GC", what, n, txnID)
				}
				if slices.Contains(invalidIDs(db, crashConfig.Name), txnID) {
					t.Fatalf("%s: killed txn %d not pruned", what, txnID)
				}
			}
			db.Close()
			st.Close()
		}
	}
	if kills < 90 {
		t.Fatalf("only %d kills", kills)
	}
	t.Logf("%d children killed with SIGKILL, %d committed versions", kills, len(committed)-1)
}

func countCellsAt(t *testing.T, st store.Store, ts int64) int {
	t.Helper()
	it, err := st.Scan(context.Background(), dataTable(crashConfig.Name, 0), store.ScanOptions{ReadOptions: store.ReadOptions{TimeRange: store.TimeRange{Min: ts, Max: ts + 1}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		n++
	}
	it.Close()
	return n
}
