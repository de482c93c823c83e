package partitionrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/cluster/placement"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
)

// peerBook is the transports' view of the members: ids and addresses,
// filled as the transports open.
type peerBook struct {
	mu    sync.Mutex
	addrs map[string]string
}

func (b *peerBook) Lookup(id string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.addrs[id]
	return a, ok
}

// partitionNode is one node of the test: its DB (on the store every node
// shares), its partitioned runs and its transport.
type partitionNode struct {
	id   string
	db   *snapshot.DB
	runs *Runs
	xfr  *transfer.Transport
}

// partitionNodes opens nodes a and b on one Pebble store, with the
// partition table of 8 partitions split between them, real transports
// over mutual TLS on loopback, and owner wait ownerWait.
func partitionNodes(t *testing.T, ownerWait time.Duration) (a, b *partitionNode) {
	t.Helper()
	return partitionNodesWith(t, ownerWait, nil)
}

// partitionNodesWith is partitionNodes with node b's store wrapped by
// wrapB (when not nil).
func partitionNodesWith(t *testing.T, ownerWait time.Duration, wrapB func(store.Store) store.Store) (a, b *partitionNode) {
	t.Helper()
	ctx := context.Background()
	st, err := pebble.Open(t.TempDir(), pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	certs := t.TempDir()
	caCert, caKey, err := transfer.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(certs, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile := write("ca.crt", caCert)
	book := &peerBook{addrs: map[string]string{}}
	var nodes []*partitionNode
	for _, id := range []string{"node-a", "node-b"} {
		var nodeStore store.Store = st
		if id == "node-b" && wrapB != nil {
			nodeStore = wrapB(st)
		}
		db, err := snapshot.Open(ctx, nodeStore, snapshot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		table, err := placement.OpenPartitions(ctx, db.Records(), 8)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := New(Config{Self: id, Incarnation: "i-" + id, DB: db, Table: table, OwnerWait: ownerWait, BatchRows: 50, StoreRetryBackoff: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(runs.Close)
		c, k, err := transfer.NewNodeCert(caCert, caKey, id, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cfg := transfer.DefaultConfig()
		cfg.NodeID, cfg.Incarnation, cfg.Listen = id, "i-"+id, "127.0.0.1:0"
		cfg.CAFile, cfg.CertFile, cfg.KeyFile = caFile, write(id+".crt", c), write(id+".key", k)
		cfg.Dir, cfg.Members, cfg.Handler = t.TempDir(), book, runs
		cfg.RetryMin, cfg.RetryMax = 20*time.Millisecond, 200*time.Millisecond
		xfr, err := transfer.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { xfr.Close() })
		runs.SetTransport(xfr)
		book.mu.Lock()
		book.addrs[id] = xfr.Addr()
		book.mu.Unlock()
		nodes = append(nodes, &partitionNode{id: id, db: db, runs: runs, xfr: xfr})
	}
	both := []placement.Member{{ID: "node-a", Weight: 1, State: cluster.Active}, {ID: "node-b", Weight: 1, State: cluster.Active}}
	if _, err := nodes[0].runs.cfg.Table.Step(ctx, both, 0, "node-a", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		tab, err := n.runs.cfg.Table.Refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c := countOwners(tab.Owners); c != 2 {
			t.Fatalf("the table gives partitions to %d nodes: %v", c, tab.Owners)
		}
	}
	return nodes[0], nodes[1]
}

var ledgerSchema = snapshot.Schema{
	Columns: []snapshot.Column{{Name: "id", Kind: snapshot.KindInt}, {Name: "name", Kind: snapshot.KindString, Nullable: true}},
	Key:     []string{"id"},
}

// ledgerRows returns n rows; names carry tag.
func ledgerRows(n int, tag string) [][]snapshot.Value {
	var rows [][]snapshot.Value
	for i := range n {
		name := fmt.Sprintf("%s-%d", tag, i)
		if i%10 == 0 {
			name = fmt.Sprintf("same-%d", i)
		}
		rows = append(rows, []snapshot.Value{{Kind: snapshot.KindInt, Int: int64(i)}, {Kind: snapshot.KindString, Bytes: []byte(name)}})
	}
	return rows
}

// writeAll puts rows into w and commits.
func writeAll(t *testing.T, w adapters.RunWriter, rows [][]snapshot.Value) (snapshot.VersionInfo, error) {
	t.Helper()
	ctx := context.Background()
	for _, r := range rows {
		if err := w.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return w.Commit(ctx)
}

func beginSpread(t *testing.T, n *partitionNode, dataset string) adapters.RunWriter {
	t.Helper()
	w, err := n.runs.BeginPartitioned(context.Background(), adapters.PartitionedRun{
		Config: snapshot.DatasetConfig{Name: dataset, Guard: snapshot.Guard{MaxShrink: 1}}, Options: snapshot.RunOptions{Schema: ledgerSchema},
		Compression: "metadata",
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A partitioned run over two nodes and real transports commits the
// version one Run of the same rows commits (counts and checksum), each
// node writing its partitions; a second run with changes too.
func TestPartitionedRun_TwoNodesEqualOneRun(t *testing.T) {
	ctx := context.Background()
	a, b := partitionNodes(t, time.Minute)
	for round, rows := range [][][]snapshot.Value{ledgerRows(2000, "first"), ledgerRows(1800, "second")} {
		vi, err := writeAll(t, beginSpread(t, a, "spread"), rows)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		r, err := a.db.BeginRun(ctx, snapshot.DatasetConfig{Name: "one", Guard: snapshot.Guard{MaxShrink: 1}, Partitions: 8}, snapshot.RunOptions{Schema: ledgerSchema})
		if err != nil {
			t.Fatal(err)
		}
		want, err := writeAll(t, r, rows)
		if err != nil {
			t.Fatal(err)
		}
		g, w := vi.Stats, want.Stats
		if g != w || g.Rows != int64(len(rows)) {
			t.Fatalf("round %d: partitioned %+v, one run %+v", round, g, w)
		}
	}
	ra, rb := testutil.ToFloat64(a.runs.rowsApplied), testutil.ToFloat64(b.runs.rowsApplied)
	if ra == 0 || rb == 0 || ra+rb != 3800 {
		t.Errorf("rows applied: node a %v, node b %v", ra, rb)
	}
	if got := testutil.ToFloat64(b.runs.partsReported.WithLabelValues("remote")); got != 8 {
		t.Errorf("node b reported %v partitions of node a's runs, want 8 (4 a run)", got)
	}
	if _, err := b.db.GetRecord(ctx, runRecordKind, "spread"); !errors.Is(err, snapshot.ErrRecordNotFound) {
		t.Errorf("the run record outlives the run: %v", err)
	}
}

// A partitioned run that changes nothing in any partition, with
// VerifyUnchanged (an adapter's default), records the current version
// verified on the coordinator, with both nodes' partitions reported: no
// version is committed, and the coordinator counts it verified.
func TestPartitionedRun_UnchangedIsVerified(t *testing.T) {
	ctx := context.Background()
	a, b := partitionNodes(t, time.Minute)
	rows := ledgerRows(1000, "same")
	begin := func() adapters.RunWriter {
		w, err := a.runs.BeginPartitioned(ctx, adapters.PartitionedRun{
			Config:  snapshot.DatasetConfig{Name: "steady", Guard: snapshot.Guard{MaxShrink: 1}},
			Options: snapshot.RunOptions{Schema: ledgerSchema, VerifyUnchanged: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	first, err := writeAll(t, begin(), rows)
	if err != nil {
		t.Fatal(err)
	}
	w := begin()
	vi, err := writeAll(t, w, rows)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Verified() || vi.Version != first.Version || vi.VerifiedAt == nil {
		t.Fatalf("the same rows again: verified %v, version %d (first %d), verified at %v", w.Verified(), vi.Version, first.Version, vi.VerifiedAt)
	}
	if got := testutil.ToFloat64(b.runs.partsReported.WithLabelValues("remote")); got != 8 {
		t.Errorf("node b reported %v partitions of node a's runs, want 8 (4 a run)", got)
	}
	if got := testutil.ToFloat64(a.runs.runs.WithLabelValues("verified")); got != 1 {
		t.Errorf("verified runs counted: %v, want 1", got)
	}
	if err := b.db.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := b.db.Dataset(ctx, "steady"); err != nil || d.Current != first.Version {
		t.Fatalf("on node b: %+v, %v", d, err)
	}
}

// An owner that cannot be reached fails the run after the owner wait,
// naming it; the current version stays, and nothing of the run is
// visible.
func TestPartitionedRun_OwnerDownFailsAtTheWait(t *testing.T) {
	ctx := context.Background()
	a, b := partitionNodes(t, time.Second)
	first, err := writeAll(t, beginSpread(t, a, "spread"), ledgerRows(500, "first"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.xfr.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = writeAll(t, beginSpread(t, a, "spread"), ledgerRows(500, "second"))
	if !errors.Is(err, adapters.ErrNodeUnreachable) || time.Since(start) < time.Second {
		t.Fatalf("a run whose owner is down: %v after %s", err, time.Since(start))
	}
	d, err := a.db.Dataset(ctx, "spread")
	if err != nil || d.Current != first.Version {
		t.Fatalf("after the failed run: %+v %v, want version %d", d, err, first.Version)
	}
}
