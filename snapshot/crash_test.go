package snapshot

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase"
)

// The crash test re-executes the test binary as a child (TestCrashChild)
// that runs a run or a GC and stops dead at a named point (Options.hook),
// where the parent kills it with SIGKILL. The parent then reopens the store
// and checks D3 and D4: the current version is exactly the
// last committed snapshot, no cell of the killed run is visible, and GC
// removes its cells.
const (
	crashEnvDir   = "SNAPSTORE_CRASH_DIR"
	crashEnvPoint = "SNAPSTORE_CRASH_POINT" // point:n, e.g. put:300
	crashEnvIter  = "SNAPSTORE_CRASH_ITER"
	crashEnvMode  = "SNAPSTORE_CRASH_MODE" // run or gc
	crashRowCount = 600
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
	ctx := context.Background()
	st := openTestStore(t, dir)
	hook := func(p string, n int64) {
		if p == point && n >= at {
			fmt.Printf("CRASH AT %s %d\n", p, n)
			os.Stdout.Sync()
			select {} // wait for SIGKILL
		}
	}
	db, err := Open(ctx, st, Options{batchSize: 64, hook: hook})
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.BeginRun(ctx, crashConfig, RunOptions{Schema: crashSchema, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CRASH TXN %d\n", r.TxnID())
	for _, row := range crashRows(iter) {
		if err := r.Put(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CRASH COMMITTED %d\n", r.TxnID())
	if os.Getenv(crashEnvMode) == "gc" {
		if _, err := db.GC(ctx, crashConfig.Name, false); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("CRASH DONE")
}

func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 50+ processes")
	}
	ctx := context.Background()
	dir := t.TempDir()
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
		if _, err := r.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		db.Close()
		st.Close()
	}
	type kill struct {
		mode, point string
		committed   bool // the point is after the durable commit
	}
	var points []kill
	for _, n := range []int{1, 60, 150, 250, 350, 450, 500, 560} {
		points = append(points, kill{"run", "put:" + strconv.Itoa(n), false})
	}
	for _, n := range []int{60, 400} {
		points = append(points, kill{"run", "flush:" + strconv.Itoa(n), false})
	}
	for _, p := range []string{"commit:flushed:0", "commit:deleted:0", "commit:synced:0"} {
		points = append(points, kill{"run", p, false})
	}
	points = append(points, kill{"run", "commit:committed:0", true}, kill{"run", "commit:cleared:0", true})
	points = append(points, kill{"gc", "gc:batch:1", true}, kill{"gc", "gc:batch:40", true})

	// committed holds the contents of the versions committed so far.
	committed := []struct {
		v    int64
		rows []string
	}{{0, crashRowsJSON(crashRows(0))}}
	iter := 0
	kills := 0
	for round := 0; round < 3; round++ {
		for _, k := range points {
			iter++
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvPoint+"="+k.point,
				crashEnvIter+"="+strconv.Itoa(iter), crashEnvMode+"="+k.mode)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = cmd.Stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var txnID int64
			killed, done, sawCommit := false, false, false
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
				if line == "CRASH DONE" {
					done = true
				}
			}
			cmd.Wait()
			if !killed && !done {
				t.Fatalf("iteration %d (%s): child neither reached its point nor finished:\n%s", iter, k.point, strings.Join(log, "\n"))
			}
			if killed {
				kills++
			} else {
				t.Logf("iteration %d: %s not reached, child finished", iter, k.point)
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
			if err != nil {
				t.Fatal(err)
			}
			if sawCommit || done || k.committed {
				if info.Current != txnID {
					t.Fatalf("iteration %d (%s): current %d, want the committed %d", iter, k.point, info.Current, txnID)
				}
				committed = append(committed, struct {
					v    int64
					rows []string
				}{txnID, crashRowsJSON(crashRows(iter))})
			} else {
				// Excluded: invalid, or still in progress until the
				// dataset's writer slot is next taken (txn.I5).
				excluded := slices.Contains(invalidIDs(db, crashConfig.Name), txnID) || slices.Contains(inProgressIDs(db, crashConfig.Name), txnID)
				if info.Current == txnID || !excluded {
					t.Fatalf("iteration %d (%s): killed txn %d: current %d, invalid %v", iter, k.point, txnID, info.Current, invalidIDs(db, crashConfig.Name))
				}
			}
			last := committed[len(committed)-1]
			if last.v != 0 && info.Current != last.v {
				t.Fatalf("iteration %d (%s): current %d, want %d", iter, k.point, info.Current, last.v)
			}
			r, err := db.Reader(ctx, crashConfig.Name, At{})
			if err != nil {
				t.Fatal(err)
			}
			got := scanJSON(t, r)
			r.Close()
			if !slices.Equal(got, last.rows) {
				t.Fatalf("iteration %d (%s): current version differs from the last committed snapshot (%d rows, want %d)", iter, k.point, len(got), len(last.rows))
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
						t.Fatalf("iteration %d (%s): version %d changed", iter, k.point, prev.v)
					}
				}
			}
			// GC removes the killed run's cells and prunes its id.
			if _, err := db.GC(ctx, crashConfig.Name, false); err != nil {
				t.Fatal(err)
			}
			if k.mode == "run" && killed && !k.committed {
				if n := countCellsAt(t, st, txnID); n != 0 {
					t.Fatalf("iteration %d (%s): %d cells of killed txn %d after GC", iter, k.point, n, txnID)
				}
				if slices.Contains(invalidIDs(db, crashConfig.Name), txnID) {
					t.Fatalf("iteration %d: killed txn %d not pruned", iter, txnID)
				}
			}
			db.Close()
			st.Close()
		}
	}
	if kills < 50 {
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
