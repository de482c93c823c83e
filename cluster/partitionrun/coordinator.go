package partitionrun

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster/placement"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
)

// The coordinator's side of partitioned runs (cluster.K14): it begins the run
// (the writer slot and transaction here, the partition table's epoch, the
// run record), routes each row to its partition, applies the rows of the
// partitions this node owns itself and queues the others' for their
// owners, closes every stream with END, waits for every report, and
// commits with their sums.

// coordinator is one partitioned run on its coordinator: an
// adapters.RunWriter. Put, Commit and Abort are called by the run's
// goroutine only; the transport's events come from its goroutines.
type coordinator struct {
	p  *Runs
	pr *snapshot.PartitionedRun // a run of a dataset of one table
	tr *snapshot.TablesRun      // a run of named tables (tables.go)
	xr *transfer.Run
	// rec is the run record; tabs the streams of each table, one for a
	// dataset of one table.
	rec    *runRecord
	tabs   []*tableStreams
	closed bool

	// mu guards reports (by stream, streams.go) and refused, which the
	// transport's events set; changed is poked when they change.
	mu      sync.Mutex
	reports map[int]snapshot.PartitionReport
	refused error
	changed chan struct{}
}

// tableStreams is the coordinator's side of the partitions of one table:
// streams first to first+Partitions-1. Used by one goroutine at a time.
type tableStreams struct {
	c     *coordinator
	first int
	w     *snapshot.TableWriter // the table's writer in a run of named tables
	rt    *snapshot.Router
	cols  []string
	local []*snapshot.PartitionWriter // by partition, for those of this node
	open  []*transfer.Batch           // the batch being filled, by partition
	size  []int                       // its bytes
	sent  []int64                     // rows per partition
	puts  int64
	done  bool // every partition reported and added
}

var _ adapters.RunWriter = (*coordinator)(nil)

// coordinate is what this node needs to coordinate a partitioned run: a
// transfer listener, the compression named (none when empty) and the
// partition table as it stands, every partition owned.
func (p *Runs) coordinate(ctx context.Context, compression string) (transfer.Compression, placement.PartitionTable, error) {
	if p.xfr == nil {
		return 0, placement.PartitionTable{}, errors.New("cluster: this node has no transfer listener")
	}
	comp, err := transfer.ParseCompression(cmp.Or(compression, "none"))
	if err != nil {
		return 0, placement.PartitionTable{}, err
	}
	tab, err := p.cfg.Table.Refresh(ctx)
	if err != nil {
		return 0, placement.PartitionTable{}, err
	}
	if i := slices.Index(tab.Owners, ""); i >= 0 {
		return 0, placement.PartitionTable{}, fmt.Errorf("cluster: partition %d has no owner in the partition table (epoch %d) yet: the keeper assigns every partition once a node is active", i, tab.Epoch)
	}
	return comp, tab, nil
}

// BeginPartitioned begins a partitioned run on this node, its coordinator
// (adapters.Partitioner): every partition must have an owner in the
// table.
func (p *Runs) BeginPartitioned(ctx context.Context, req adapters.PartitionedRun) (adapters.RunWriter, error) {
	comp, tab, err := p.coordinate(ctx, req.Compression)
	if err != nil {
		return nil, err
	}
	pr, err := p.cfg.DB.BeginPartitionedRun(ctx, req.Config, req.Options, len(tab.Owners))
	if err != nil {
		return nil, err
	}
	schema := pr.Schema()
	rec := &runRecord{Txn: pr.TxnID(), Epoch: tab.Epoch, Owners: tab.Owners, Version: pr.Version(), Partitions: len(tab.Owners),
		Schema: schema, PartitionKey: pr.PartitionKey(), Coordinator: p.cfg.Self, Incarnation: p.cfg.Incarnation, RunID: req.RunID, Started: time.Now().UTC()}
	fail := func(err error) (adapters.RunWriter, error) {
		return nil, errors.Join(err, pr.Abort(context.WithoutCancel(ctx), err.Error()))
	}
	if cr := req.Carried; cr != nil {
		if err := pr.Carry(cr.Version, cr.Rows); err != nil {
			return fail(err)
		}
		rec.Carried = cr.Ranges
	}
	c := &coordinator{p: p, pr: pr, rec: rec, reports: map[int]snapshot.PartitionReport{}, changed: make(chan struct{}, 1)}
	ts, err := c.newTableStreams(0, nil, schema, rec.PartitionKey)
	if err != nil {
		return fail(err)
	}
	c.tabs = []*tableStreams{ts}
	if err := p.writeRecord(ctx, req.Config.Name, rec); err != nil {
		return fail(fmt.Errorf("cluster: writing the run record of %s: %w", req.Config.Name, err))
	}
	if c.xr, err = p.xfr.StartRun(transfer.RunKey{Dataset: req.Config.Name, Txn: rec.Txn}, comp, c); err != nil {
		return fail(err)
	}
	p.log.Info("partitioned run begun", "dataset", req.Config.Name, "txn", rec.Txn, "epoch", rec.Epoch, "version", rec.Version,
		"partitions", rec.Partitions, "partition_key", rec.PartitionKey, "owners", countOwners(rec.Owners), "compression", comp.String(),
		"carried_ranges", len(rec.Carried))
	return c, nil
}

// newTableStreams returns the streams of table number i of the run (0
// for a dataset of one table), whose writer is w (nil for a dataset of
// one table), rows of schema placed by the partition key pk.
func (c *coordinator) newTableStreams(i int, w *snapshot.TableWriter, schema snapshot.Schema, pk []string) (*tableStreams, error) {
	n := c.rec.Partitions
	rt, err := snapshot.NewRouter(schema, n, pk)
	if err != nil {
		return nil, err
	}
	ts := &tableStreams{c: c, first: i * n, w: w, rt: rt,
		local: make([]*snapshot.PartitionWriter, n), open: make([]*transfer.Batch, n), size: make([]int, n), sent: make([]int64, n)}
	for _, col := range schema.Columns {
		ts.cols = append(ts.cols, col.Name)
	}
	return ts, nil
}

// Partitions returns the count of partitions of the cached partition
// table, 0 before it has one (adapters.Partitioner).
func (p *Runs) Partitions() int { return len(p.cfg.Table.Table().Owners) }

// countOwners returns the count of distinct owners.
func countOwners(owners []string) int {
	seen := map[string]bool{}
	for _, o := range owners {
		seen[o] = true
	}
	return len(seen)
}

func (c *coordinator) TxnID() int64 { return c.rec.Txn }

// Stats returns the counts of the partitions reported so far.
func (c *coordinator) Stats() snapshot.RunStats {
	if c.tr != nil {
		return c.tr.Stats()
	}
	return c.pr.Stats()
}

// Put routes one source row of a dataset of one table (tableStreams.Put).
func (c *coordinator) Put(ctx context.Context, vals []snapshot.Value) error {
	return c.tabs[0].Put(ctx, vals)
}

// Put routes one source row of the table: to the local writer of its
// partition, or into the open batch of its partition, queued for the
// owner when full.
func (ts *tableStreams) Put(ctx context.Context, vals []snapshot.Value) error {
	c := ts.c
	key, part, err := ts.rt.Route(vals)
	if err != nil {
		return err
	}
	ts.puts++
	if ts.puts%4096 == 0 {
		if err := c.check(); err != nil {
			return err
		}
	}
	owner := c.rec.Owners[part]
	if owner == c.p.cfg.Self {
		w, err := ts.localWriter(ctx, part)
		if err != nil {
			return err
		}
		if err := w.Put(ctx, vals); err != nil {
			return err
		}
		c.p.rowsApplied.Inc()
		return nil
	}
	b := ts.open[part]
	if b == nil {
		b = &transfer.Batch{Stream: transfer.Stream{Partition: ts.first + part}, Epoch: c.rec.Epoch, Columns: ts.cols}
		ts.open[part] = b
	}
	row := transfer.Row{Key: slices.Clone(key), Values: make([][]byte, len(vals))}
	var buf []byte
	for i, v := range vals {
		st := len(buf)
		buf = snapshot.AppendCell(buf, v)
		row.Values[i] = buf[st:len(buf):len(buf)]
	}
	b.Rows = append(b.Rows, row)
	ts.size[part] += len(key) + len(buf) + 4*len(vals)
	ts.sent[part]++
	if len(b.Rows) >= c.p.cfg.BatchRows || ts.size[part] >= c.p.cfg.BatchBytes {
		return ts.flush(owner, part)
	}
	return nil
}

// localWriter returns the writer of partition part, a partition of this
// node, opening it at its first row.
func (ts *tableStreams) localWriter(ctx context.Context, part int) (*snapshot.PartitionWriter, error) {
	if w := ts.local[part]; w != nil {
		return w, nil
	}
	c := ts.c
	w, err := c.p.cfg.DB.OpenPartition(ctx, c.rec.spec(c.xr.Key().Dataset, ts.first+part))
	if err != nil {
		return nil, err
	}
	ts.local[part] = w
	return w, nil
}

// flush queues the open batch of part for its owner.
func (ts *tableStreams) flush(owner string, part int) error {
	b := ts.open[part]
	if b == nil {
		return nil
	}
	ts.open[part], ts.size[part] = nil, 0
	return ts.c.xr.Send(owner, b)
}

// finish closes the table's streams, finishes its local partitions, waits
// for every owner's report of its others (failing when an owner stays
// unreachable for OwnerWait, refuses a batch, or ctx ends), and adds every
// report to the run (to the table's writer in a run of named tables).
func (ts *tableStreams) finish(ctx context.Context) error {
	if ts.done {
		return nil
	}
	c := ts.c
	var remote []int
	for part, owner := range c.rec.Owners {
		if owner == c.p.cfg.Self {
			continue
		}
		remote = append(remote, ts.first+part)
		if err := ts.flush(owner, part); err != nil {
			return err
		}
		end := &transfer.Batch{Stream: transfer.Stream{Partition: ts.first + part}, Epoch: c.rec.Epoch, End: true, Total: ts.sent[part]}
		if err := c.xr.Send(owner, end); err != nil {
			return err
		}
	}
	for part, owner := range c.rec.Owners {
		if owner != c.p.cfg.Self {
			continue
		}
		w, err := ts.localWriter(ctx, part)
		if err != nil {
			return err
		}
		rep, err := w.Finish(ctx)
		if err != nil {
			return err
		}
		ts.local[part] = nil
		if err := ts.add(rep); err != nil {
			return err
		}
		c.p.written(c.xr.Key().Dataset, c.rec.Txn, c.p.cfg.Self, "local", rep)
	}
	if err := c.wait(ctx, remote); err != nil {
		return err
	}
	c.mu.Lock()
	reps := make([]snapshot.PartitionReport, len(remote))
	for i, s := range remote {
		reps[i] = c.reports[s]
	}
	c.mu.Unlock()
	for _, rep := range reps {
		if err := ts.add(rep); err != nil {
			return err
		}
	}
	ts.done = true
	if ts.w != nil {
		return ts.w.Finish(ctx)
	}
	return nil
}

// add adds one partition's report to the run.
func (ts *tableStreams) add(rep snapshot.PartitionReport) error {
	if ts.w != nil {
		return ts.w.AddPartition(rep)
	}
	return ts.c.pr.Add(rep)
}

// discard discards the table's local writers.
func (ts *tableStreams) discard() {
	for i, w := range ts.local {
		if w != nil {
			w.Discard()
			ts.local[i] = nil
		}
	}
}

// Commit closes every stream, finishes the local partitions, waits for
// every owner's report (failing when an owner stays unreachable for
// OwnerWait, refuses a batch, or ctx ends), and commits with the sums.
// On error the run is aborted.
func (c *coordinator) Commit(ctx context.Context) (snapshot.VersionInfo, error) {
	vi, err := c.commit(ctx)
	if err != nil {
		return snapshot.VersionInfo{}, errors.Join(err, c.Abort(context.WithoutCancel(ctx), err.Error()))
	}
	return vi, nil
}

func (c *coordinator) commit(ctx context.Context) (snapshot.VersionInfo, error) {
	for _, ts := range c.tabs {
		if err := ts.finish(ctx); err != nil {
			return snapshot.VersionInfo{}, err
		}
	}
	c.closed = true
	c.dropRecord()
	var vi snapshot.VersionInfo
	var err error
	if c.tr != nil {
		vi, err = c.tr.Commit(ctx)
	} else {
		vi, err = c.pr.Commit(ctx)
	}
	c.endTransfer(err == nil)
	if err != nil {
		c.p.runs.WithLabelValues("aborted").Inc()
		return snapshot.VersionInfo{}, err
	}
	if c.Verified() {
		c.p.runs.WithLabelValues("verified").Inc()
	} else {
		c.p.runs.WithLabelValues("committed").Inc()
	}
	return vi, nil
}

// SetSourceDigest sets the source's digest stored with the version the
// run commits (package adapters, checksums.go).
func (c *coordinator) SetSourceDigest(digest []byte) {
	if c.pr != nil {
		c.pr.SetSourceDigest(digest)
	}
}

// Verified reports whether Commit recorded the previous version verified
// instead of committing: no partition changed anything.
func (c *coordinator) Verified() bool {
	if c.tr != nil {
		return c.tr.Verified()
	}
	return c.pr.Verified()
}

// wait waits until the remote streams reported.
func (c *coordinator) wait(ctx context.Context, streams []int) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		c.mu.Lock()
		got, refused := 0, c.refused
		for _, s := range streams {
			if _, ok := c.reports[s]; ok {
				got++
			}
		}
		c.mu.Unlock()
		if refused != nil {
			return refused
		}
		if got == len(streams) {
			return nil
		}
		if err := c.check(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d of %d partitions' owners: %w", len(streams)-got, len(streams), context.Cause(ctx))
		case <-c.changed:
		case <-t.C:
		}
	}
}

// check returns why the run cannot finish: an owner refused a batch, one
// departed for good (departed.go), or one stayed unreachable for
// OwnerWait.
func (c *coordinator) check() error {
	c.mu.Lock()
	refused := c.refused
	c.mu.Unlock()
	if refused != nil {
		return refused
	}
	if err := c.departed(); err != nil {
		return err
	}
	for _, w := range c.xr.Waiting() {
		if d := time.Since(w.Since); d >= c.p.cfg.OwnerWait {
			return fmt.Errorf("%w: node %s, owner of partitions of this run, could not be reached for %s (cluster.transfer.owner_wait %s): %s",
				adapters.ErrNodeUnreachable, w.Node, d.Round(time.Second), c.p.cfg.OwnerWait, w.Err)
		}
	}
	return nil
}

// Acked receives the transport's acknowledgements: an END's carries the
// partition's report (transfer.Events).
func (c *coordinator) Acked(to string, s transfer.Stream, seq uint64, report []byte) {
	if report == nil {
		return
	}
	var rep snapshot.PartitionReport
	err := json.Unmarshal(report, &rep)
	c.mu.Lock()
	switch {
	case err != nil:
		c.refused = fmt.Errorf("cluster: node %s's report of partition %d does not decode: %w", to, s.Partition, err)
	case rep.Partition != s.Partition%len(c.rec.Owners):
		c.refused = fmt.Errorf("cluster: node %s reported partition %d for partition %s", to, rep.Partition, c.rec.streamName(s.Partition))
	default:
		c.reports[s.Partition] = rep
	}
	c.mu.Unlock()
	c.poke()
}

// Refused receives a refused batch: the run cannot finish
// (transfer.Events).
func (c *coordinator) Refused(to string, s transfer.Stream, reason string) {
	c.mu.Lock()
	if c.refused == nil {
		if r, ok := strings.CutPrefix(reason, refusedUnavailable); ok {
			c.refused = fmt.Errorf("cluster: node %s refused partition %s of the run: %w: %s", to, c.rec.streamName(s.Partition), store.ErrUnavailable, r)
		} else {
			c.refused = fmt.Errorf("cluster: node %s refused partition %s of the run: %s", to, c.rec.streamName(s.Partition), reason)
		}
	}
	c.mu.Unlock()
	c.poke()
}

func (c *coordinator) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Abort aborts the run: the transaction invalid (snapshot.D4), the local
// writers discarded, the owners told (DONE), the run record deleted.
func (c *coordinator) Abort(ctx context.Context, reason string) error {
	for _, ts := range c.tabs {
		ts.discard()
	}
	open := !c.closed
	if open {
		c.closed = true
		c.dropRecord()
	}
	var err error
	if c.tr != nil {
		err = c.tr.Abort(ctx, reason)
	} else {
		err = c.pr.Abort(ctx, reason)
	}
	if open {
		c.endTransfer(false)
		c.p.runs.WithLabelValues("aborted").Inc()
	}
	return err
}

// endTransfer ends the sending side: the queues dropped, DONE to the
// owners.
func (c *coordinator) endTransfer(committed bool) {
	if err := c.xr.End(committed); err != nil {
		c.p.log.Warn("ending a partitioned run's transfer", "dataset", c.xr.Key().Dataset, "txn", c.rec.Txn, "err", err)
	}
}

// dropRecord deletes the run record while the run still holds the
// dataset's writer slot, so that it never deletes the next run's.
func (c *coordinator) dropRecord() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.p.cfg.DB.DeleteRecord(ctx, runRecordKind, c.xr.Key().Dataset); err != nil {
		c.p.log.Warn("deleting a partitioned run's record", "dataset", c.xr.Key().Dataset, "txn", c.rec.Txn, "err", err)
	}
}
