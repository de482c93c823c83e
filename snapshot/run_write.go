package snapshot

// The run's writer: Put fills a partition's batch of row versions and
// hands it over when full; one goroutine per run writes the batches, in
// the order handed over, while Put goes on comparing the next rows. At
// most writeDepth batches exist per run (one filling, the others queued or
// being written), and those queued or being written hold writeBudget bytes
// at most (or one batch wider than that), so the run's memory stays
// bounded and Put waits when the store is slower than the source.
//
// A partition of a first run (no previous version) whose keys ascend loads
// its row versions with the store's Loader when it has one (store/pebble
// writes SSTables and ingests them), else every batch is applied (without
// sync; the commit syncs once). A load is flushed, which makes its cells
// visible, when the partition leaves phase A (revisit reads them) and at
// commit. Every write, and every load's flush, goes out only while the
// run holds the dataset's writer slot at its epoch, with the slot's expiry
// as its deadline (doc.go W3): a fenced writer writes nothing more. A
// partition's writer of a partitioned run (run_partition.go) holds no
// slot and writes through the same writer without that bound
// (Run.writeContext): the coordinator's slot fences the commit.

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/snapstore/snapstore/store"
)

// writeDepth is the number of batches of a run: one filled by Put, the
// others queued or being written.
const writeDepth = 3

// writeBudget bounds the bytes of the batches queued or being written,
// whatever their number: batches of wide rows (each over batchBytes) wait
// until the writer has room, one at a time at worst.
const writeBudget = (writeDepth - 1) * batchBytes

// writeJob is a batch handed to the writer, or a barrier.
type writeJob struct {
	p       *runPart
	batch   store.Batch
	arena   []byte
	size    int           // the bytes counted in runWriter.queued
	barrier chan struct{} // closed by the writer when it reaches the job
}

// runWriter writes a run's batches in a goroutine.
type runWriter struct {
	r    *Run
	ctx  context.Context
	jobs chan *writeJob
	free chan *writeJob
	done chan struct{}
	room chan struct{} // signalled when queued bytes were written

	mu     sync.Mutex
	err    error // the first write error; the run can then only be aborted
	queued int   // bytes of the batches queued or being written
}

// startWriter starts the run's writer, at its first batch (flushData).
// ctx's values go with every write; its cancellation does not: each
// write is bounded by writeContext.
func (r *Run) startWriter(ctx context.Context) {
	w := &runWriter{r: r, ctx: context.WithoutCancel(ctx), jobs: make(chan *writeJob, writeDepth), free: make(chan *writeJob, writeDepth), done: make(chan struct{}), room: make(chan struct{}, 1)}
	// The spare batches are sized at once, so that the run's memory is
	// what it will stay from the first row on.
	for range writeDepth - 1 {
		w.free <- &writeJob{batch: store.Batch{Mutations: make([]store.Mutation, 0, r.db.opts.batchSize)}}
	}
	r.w = w
	go w.loop()
}

func (w *runWriter) loop() {
	defer close(w.done)
	for j := range w.jobs {
		if j.barrier != nil {
			close(j.barrier)
			continue
		}
		if w.failed() == nil {
			if err := w.write(j); err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
			}
		}
		j.batch.Reset()
		j.arena = j.arena[:0]
		if cap(j.arena) > 2*batchBytes {
			j.arena = nil // a wide row's: let it go
		}
		w.mu.Lock()
		w.queued -= j.size
		w.mu.Unlock()
		select {
		case w.room <- struct{}{}:
		default:
		}
		w.free <- j
	}
}

// write applies one batch, or adds it to its partition's load.
func (w *runWriter) write(j *writeJob) error {
	r := w.r
	n := j.batch.Len()
	if l := j.p.load; l != nil {
		for i := range j.batch.Mutations {
			m := &j.batch.Mutations[i]
			if m.Op != store.OpPut {
				return fmt.Errorf("snapshot: writing %s txn %d: %w: a %d mutation in a load", r.ds.name, r.id, ErrCorrupt, m.Op)
			}
			if err := l.Add(m.Cell); err != nil {
				return fmt.Errorf("snapshot: writing %s txn %d: %w", r.ds.name, r.id, err)
			}
		}
	} else {
		// W3: no write once the slot expired or was taken (a partition's
		// writer holds none: the coordinator's fences the commit).
		ctx, cancel, err := r.writeContext(w.ctx)
		if err == nil {
			err = r.db.st.Apply(ctx, &j.batch)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("snapshot: writing %s txn %d: %w", r.ds.name, r.id, err)
		}
	}
	r.db.metrics.cellsWrite.Add(float64(n))
	return nil
}

func (w *runWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// send hands p's batch to the writer and gives p an empty one, waiting
// for one to be free.
func (w *runWriter) send(p *runPart) {
	// Only this goroutine adds to queued: room waited for stays.
	size := p.dataBytes
	p.dataBytes = 0
	w.waitRoom(max(0, writeBudget-size))
	w.mu.Lock()
	w.queued += size
	w.mu.Unlock()
	j := <-w.free
	j.p, j.size = p, size
	j.batch, p.data = p.data, j.batch
	j.arena, p.arena = p.arena, j.arena
	p.data.Table = p.table
	w.jobs <- j
	if size > writeBudget {
		// Wide rows: no copy of the next ones is made until these are
		// written. Then their copies (the driver's packets, the packed
		// row, the store's buffers: several times the row) are garbage,
		// and are collected now: left to the collector's pace, what a
		// table of such rows allocates while a cycle marks survives it,
		// and the heap grows to twice that (docs/operations.md, capacity
		// notes). A cycle costs little beside such a row: the heap to
		// mark is small, the rows' bytes hold no pointers.
		w.waitRoom(0)
		runtime.GC()
	}
}

// waitRoom returns when the bytes queued or being written are at most n.
func (w *runWriter) waitRoom(n int) {
	for {
		w.mu.Lock()
		ok := w.queued <= n
		w.mu.Unlock()
		if ok {
			return
		}
		<-w.room
	}
}

// wait returns when every batch handed over is written, with the first
// write error.
func (w *runWriter) wait() error {
	b := make(chan struct{})
	w.jobs <- &writeJob{barrier: b}
	<-b
	return w.failed()
}

// stop waits for the writer to finish and ends it.
func (w *runWriter) stop() {
	close(w.jobs)
	<-w.done
}

// flushData hands the partition's batch to the writer, starting it at the
// run's first batch; a write error of an earlier batch fails the run.
func (r *Run) flushData(ctx context.Context, p *runPart) error {
	if r.w != nil {
		if err := r.w.failed(); err != nil {
			r.err = err
			return err
		}
	}
	if p.data.Len() == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		r.err = fmt.Errorf("snapshot: writing %s txn %d: %w", r.ds.name, r.id, err)
		return r.err
	}
	if r.w == nil {
		r.startWriter(ctx)
	}
	r.w.send(p)
	r.hook("flush", r.stats.Rows)
	return nil
}

// flushFull hands the partition's batch to the writer once it holds
// batchSize cells or markers, or batchBytes of them (the one rule of a
// full batch, for row versions and delete markers alike).
func (r *Run) flushFull(ctx context.Context, p *runPart) error {
	if p.data.Len() < r.db.opts.batchSize && p.dataBytes < batchBytes {
		return nil
	}
	return r.flushData(ctx, p)
}

// syncWrites hands over every partition's batch and waits until all are
// written, then flushes the loads (their cells become visible); with
// endLoads the loads end too, and later writes are applied. With seal
// the loads are not flushed; with endLoads too they are sealed and move
// to r.sealed.
func (r *Run) syncWrites(ctx context.Context, parts []*runPart, endLoads, seal bool) error {
	for _, p := range parts {
		if err := r.flushData(ctx, p); err != nil {
			return err
		}
	}
	if r.w != nil {
		if err := r.w.wait(); err != nil {
			r.err = err
			return err
		}
	}
	for _, p := range parts {
		if p.load == nil {
			continue
		}
		if seal {
			if !endLoads {
				continue
			}
			if err := p.load.Seal(); err != nil {
				r.err = fmt.Errorf("snapshot: writing %s txn %d: %w", r.ds.name, r.id, err)
				return r.err
			}
			r.sealed = append(r.sealed, p.load)
			p.load = nil
			continue
		}
		// W3: the load's cells reach the store here (an ingest), within
		// the slot's deadline (run_partition.go: a partition's writer has
		// none).
		lctx, cancel, err := r.writeContext(ctx)
		if err == nil {
			err = p.load.Flush(lctx)
		}
		cancel()
		if err != nil {
			r.err = fmt.Errorf("snapshot: writing %s txn %d: %w", r.ds.name, r.id, err)
			return r.err
		}
		if endLoads {
			p.load.Close()
			p.load = nil
		}
	}
	return nil
}

// endWrites stops the writer after the batches handed over and drops what
// loads did not flush (an aborted run's cells, invisible anyway); the
// sealed loads stay (dropSealed).
func (r *Run) endWrites() {
	if r.w != nil {
		r.w.stop()
		r.w = nil
	}
	for _, p := range r.parts {
		if p != nil && p.load != nil {
			p.load.Close()
			p.load = nil
		}
	}
}

// dropSealed drops the loads lastWrites sealed and the commit did not
// flush (an aborted or verified run's cells, invisible anyway).
func (r *Run) dropSealed() {
	for _, l := range r.sealed {
		l.Close()
	}
	r.sealed = nil
}
