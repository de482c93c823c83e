package partitionrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/snapshot"
)

// The owner's side of partitioned runs (cluster.K14): the transfer.Handler that
// applies the batches of the partitions this node owns at a run's epoch.
// A stream (origin, run, partition) gets a snapshot.PartitionWriter at
// its first batch, which every batch feeds in order and its END finishes,
// answering with the partition's report. A batch of a partition another
// node owns at the run's epoch goes on to that node (transfer.X6).

// ownerStream names one stream at its owner.
type ownerStream struct {
	origin string
	transfer.Stream
}

// ownedStream is an owner's state of one stream; its writer is used by
// one Apply at a time (the transport applies a stream's batches in turn).
type ownedStream struct {
	w    *snapshot.PartitionWriter
	rows int64
	used time.Time
	// applying is set, under Runs.mu, while a batch is put into w: the
	// sweep leaves such a stream alone, as it is not silent and its
	// writer is in use.
	applying bool
}

// Apply applies one batch of a stream (transfer.Handler).
func (p *Runs) Apply(ctx context.Context, from string, b *transfer.Batch) transfer.Outcome {
	p.sweep()
	rec, err := p.readRecord(ctx, b.RunKey)
	if err != nil {
		if errors.Is(err, snapshot.ErrRecordNotFound) || errors.Is(err, errRunGone) {
			return transfer.NotApplied(transfer.CodeRefused, err.Error())
		}
		return transfer.NotApplied(transfer.CodeRetry, err.Error())
	}
	if b.Partition < 0 || b.Partition >= rec.streams() {
		return transfer.NotApplied(transfer.CodeRefused, fmt.Sprintf("stream %d of a run of %d", b.Partition, rec.streams()))
	}
	if owner := rec.ownerOf(b.Partition); owner != p.cfg.Self {
		// The sender's view of the table is not the run's (X6).
		return transfer.Forward(owner)
	}
	k := ownerStream{origin: b.Origin, Stream: b.Stream}
	p.mu.Lock()
	st := p.streams[k]
	if b.Seq == 1 && st != nil {
		// The stream begins again (its origin rewound it): the writer
		// starts afresh and writes the same cells at the run's id.
		delete(p.streams, k)
		st.w.Discard()
		st = nil
	}
	p.mu.Unlock()
	if st == nil {
		if b.Seq == 1 {
			if out, wait := p.backingOff(k); wait {
				return out
			}
		}
		if b.Seq != 1 {
			return transfer.NotApplied(transfer.CodeRewind, fmt.Sprintf("no state of partition %d of %v here (this node restarted or dropped it)", b.Partition, b.RunKey))
		}
		w, err := p.cfg.DB.OpenPartition(ctx, rec.spec(b.Dataset, b.Partition))
		if err != nil {
			return p.storeFailed(k, "opening", err)
		}
		st = &ownedStream{w: w}
		p.mu.Lock()
		p.streams[k] = st
		p.mu.Unlock()
	}
	p.mu.Lock()
	st.used, st.applying = time.Now(), true
	p.mu.Unlock()
	out := p.applyRows(ctx, k, st, rec, b)
	p.mu.Lock()
	st.used, st.applying = time.Now(), false
	p.mu.Unlock()
	if out.Code != transfer.CodeApplied || b.End {
		p.mu.Lock()
		if p.streams[k] == st {
			delete(p.streams, k)
		}
		p.mu.Unlock()
		if out.Code != transfer.CodeApplied {
			st.w.Discard()
		}
	}
	return out
}

// applyRows puts b's rows into the writer of stream k and, for an END,
// finishes it and answers with the report. A store error is answered by
// storeFailed (retry.go).
func (p *Runs) applyRows(ctx context.Context, k ownerStream, st *ownedStream, rec *runRecord, b *transfer.Batch) transfer.Outcome {
	schema := rec.schemaOf(b.Partition)
	if len(b.Rows) > 0 && !slices.EqualFunc(b.Columns, schema.Columns, func(n string, c snapshot.Column) bool { return n == c.Name }) {
		return transfer.NotApplied(transfer.CodeRefused, fmt.Sprintf("the batch's columns %v are not the run's schema", b.Columns))
	}
	vals := make([]snapshot.Value, len(schema.Columns))
	for _, row := range b.Rows {
		if len(row.Values) != len(vals) {
			return transfer.NotApplied(transfer.CodeRefused, fmt.Sprintf("a row of %d values for %d columns", len(row.Values), len(vals)))
		}
		for i, c := range row.Values {
			v, err := snapshot.DecodeCell(c)
			if err != nil {
				return transfer.NotApplied(transfer.CodeRefused, err.Error())
			}
			vals[i] = v
		}
		if err := st.w.Put(ctx, vals); err != nil {
			return p.storeFailed(k, "writing", err)
		}
		st.rows++
	}
	p.rowsApplied.Add(float64(len(b.Rows)))
	if !b.End {
		return transfer.Applied(nil)
	}
	if b.Total != st.rows {
		return transfer.NotApplied(transfer.CodeRefused, fmt.Sprintf("partition %d of %v: %d rows sent, %d applied", b.Partition, b.RunKey, b.Total, st.rows))
	}
	rep, err := st.w.Finish(ctx)
	if err != nil {
		return p.storeFailed(k, "finishing", err)
	}
	p.retried(k)
	raw, err := json.Marshal(rep)
	if err != nil {
		return transfer.NotApplied(transfer.CodeRefused, err.Error())
	}
	p.written(b.Dataset, b.Txn, b.Origin, "remote", rep)
	return transfer.Applied(raw)
}

// written counts and logs a partition this node wrote and reported, for
// a run coordinated by origin (where: local, the coordinator is this
// node; remote, another).
func (p *Runs) written(dataset string, txn int64, origin, where string, rep snapshot.PartitionReport) {
	p.partsReported.WithLabelValues(where).Inc()
	p.log.Debug("partition written", "dataset", dataset, "txn", txn, "partition", rep.Partition, "origin", origin,
		"rows", rep.Stats.Rows, "inserted", rep.Stats.Inserted, "updated", rep.Stats.Updated, "deleted", rep.Stats.Deleted)
}

// Done drops what this node keeps of a run that is over
// (transfer.Handler).
func (p *Runs) Done(origin string, run transfer.RunKey, committed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.records, run)
	for k, st := range p.streams {
		if k.origin == origin && k.RunKey == run {
			st.w.Discard()
			delete(p.streams, k)
		}
	}
	for k := range p.retries {
		if k.origin == origin && k.RunKey == run {
			delete(p.retries, k)
		}
	}
}
