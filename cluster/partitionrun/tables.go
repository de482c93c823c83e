package partitionrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/snapshot"
)

// Partitioned runs of named tables: the coordinator of a
// snapshot.TablesRun this node began (the one writer slot and
// transaction, one point of the source read here) sends each table's rows
// to the owners of their partitions over one transfer run, stream by
// stream (streams.go), adds each table's reports to its TableWriter once
// its rows are all sent, and commits the one version covering every
// table. Any table's failure aborts the whole run (snapshot.D4).

var _ adapters.TablesPartitioner = (*Runs)(nil)

// PartitionTables makes run write the partitions of its tables on their
// owners in the partition table (adapters.TablesPartitioner): every table
// must have as many partitions as the table has (snapshot.
// ErrPartitionCount otherwise). On error the caller aborts run.
func (p *Runs) PartitionTables(ctx context.Context, run *snapshot.TablesRun, req adapters.PartitionedTables) (adapters.TablesWriter, error) {
	comp, tab, err := p.coordinate(ctx, req.Compression)
	if err != nil {
		return nil, err
	}
	n := len(tab.Owners)
	rec := &runRecord{Txn: run.TxnID(), Epoch: tab.Epoch, Owners: tab.Owners, Version: run.Version(), Partitions: n,
		Coordinator: p.cfg.Self, Incarnation: p.cfg.Incarnation, RunID: req.RunID, Started: time.Now().UTC()}
	ws := run.Tables()
	var dataset string
	for _, w := range ws {
		if w.Partitions() != n {
			return nil, fmt.Errorf("%w: table %q has %d partitions, a partitioned run of this cluster needs %d (drop the dataset, or name another)",
				snapshot.ErrPartitionCount, w.Name(), w.Partitions(), n)
		}
		sp, err := w.PartitionSpec(0)
		if err != nil {
			return nil, err
		}
		rec.Tables = append(rec.Tables, tableRecord{Name: sp.Table, Number: sp.TableNumber, Schema: sp.Schema, PartitionKey: sp.PartitionKey})
		dataset = sp.Dataset
	}
	c := &coordinator{p: p, tr: run, rec: rec, reports: map[int]snapshot.PartitionReport{}, changed: make(chan struct{}, 1)}
	for i, w := range ws {
		ts, err := c.newTableStreams(i, w, rec.Tables[i].Schema, rec.Tables[i].PartitionKey)
		if err != nil {
			return nil, fmt.Errorf("table %q: %w", w.Name(), err)
		}
		c.tabs = append(c.tabs, ts)
	}
	if err := p.writeRecord(ctx, dataset, rec); err != nil {
		return nil, fmt.Errorf("cluster: writing the run record of %s: %w", dataset, err)
	}
	if c.xr, err = p.xfr.StartRun(transfer.RunKey{Dataset: dataset, Txn: rec.Txn}, comp, c); err != nil {
		if derr := p.cfg.DB.DeleteRecord(context.WithoutCancel(ctx), runRecordKind, dataset); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	p.log.Info("partitioned run of tables begun", "dataset", dataset, "txn", rec.Txn, "epoch", rec.Epoch, "version", rec.Version,
		"tables", len(rec.Tables), "partitions", n, "owners", countOwners(rec.Owners), "compression", comp.String())
	return c, nil
}

// Table returns the streams of the table name, nil when the run has none
// (adapters.TablesWriter).
func (c *coordinator) Table(name string) adapters.TableRows {
	for _, ts := range c.tabs {
		if ts.w != nil && ts.w.Name() == name {
			return ts
		}
	}
	return nil
}

// Finish closes the table's streams and adds its partitions' reports
// (adapters.TableRows); on error the run can only be aborted.
func (ts *tableStreams) Finish(ctx context.Context) error {
	if err := ts.finish(ctx); err != nil {
		return fmt.Errorf("table %q: %w", ts.w.Name(), err)
	}
	return nil
}

// Stats returns the counts of the table's partitions reported so far
// (adapters.TableRows).
func (ts *tableStreams) Stats() snapshot.RunStats { return ts.w.Stats() }
