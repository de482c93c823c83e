package adapters

import (
	"context"
	"sync"

	"github.com/snapstore/snapstore/snapshot"
)

// Prefetching: a run reads its source in one goroutine and compares and
// writes in another, so that the driver's decoding and the source's own
// work overlap with snapstore's (the run's writer goroutine, in package
// snapshot, overlaps the store's writes in turn). Rows go over in batches,
// copied out of the driver's buffers; at most prefetchDepth batches are in
// flight, so memory is bounded by prefetchDepth times prefetchBytes. A row
// wider than prefetchBytes is not copied: it goes over alone, lent (its
// values still in the driver's buffers), and the read waits until it is
// consumed; a table of wide rows is read one row at a time, as without
// prefetching.
const (
	prefetchRows  = 512
	prefetchBytes = 1 << 20
	prefetchDepth = 4
)

// rowBatch is a batch of rows: cols values a row, their bytes in arena.
type rowBatch struct {
	vals  []snapshot.Value
	arena []byte
	n     int
	lent  bool // one row whose values are the source reader's
}

// prefetcher is a TableReader that reads another one ahead in its own
// goroutine. Next, Values and Err are for one goroutine, as a
// TableReader's are; Close stops the read.
type prefetcher struct {
	TableReader // Schema, Table; Close is prefetcher's
	cols        int
	full, free  chan *rowBatch
	cancel      context.CancelFunc
	done        chan struct{}
	back        chan struct{} // the consumer is done with a lent row
	cur         *rowBatch
	i           int   // the row of cur that Values returns
	err         error // the consumer's: its context ended
	readErr     error // the read goroutine's, set before done closes
	closeOnce   sync.Once
	closeErr    error
}

// prefetch starts reading tr ahead. The read stops at the end of the
// table, on an error, when ctx ends, or at Close.
func prefetch(ctx context.Context, tr TableReader) *prefetcher {
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetcher{TableReader: tr, cols: len(tr.Schema().Columns), full: make(chan *rowBatch, prefetchDepth),
		free: make(chan *rowBatch, prefetchDepth), cancel: cancel, done: make(chan struct{}), back: make(chan struct{}, 1)}
	for range prefetchDepth {
		p.free <- &rowBatch{arena: make([]byte, 0, prefetchBytes)}
	}
	go p.read(ctx)
	return p
}

// read is the goroutine: it fills free batches with rows and hands them
// over; it closes full at the end (its error, if any, then in p.err).
func (p *prefetcher) read(ctx context.Context) {
	defer close(p.done)
	defer close(p.full)
	var b *rowBatch
	take := func() bool {
		select {
		case b = <-p.free:
			b.n, b.vals, b.arena, b.lent = 0, b.vals[:0], b.arena[:0], false
			return true
		case <-ctx.Done():
			return false
		}
	}
	send := func() bool {
		select {
		case p.full <- b:
			b = nil
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !take() {
		return
	}
	for p.TableReader.Next(ctx) {
		row := p.TableReader.Values()
		size := 0
		for i := range row {
			size += len(row[i].Bytes)
		}
		// The row's bytes go where they fit: a batch's arena never grows,
		// so the values already in it stay put.
		if b.n > 0 && (b.n == prefetchRows || len(b.arena)+size > cap(b.arena)) {
			if !send() || !take() {
				return
			}
		}
		if size > cap(b.arena) {
			// A wide row: lent, alone, and the source reader waits (its
			// buffers hold the row) until the consumer is done with it.
			b.vals, b.n, b.lent = append(b.vals, row...), 1, true
			if !send() {
				return
			}
			select {
			case <-p.back:
			case <-ctx.Done():
				return
			}
			if !take() {
				return
			}
			continue
		}
		for _, v := range row {
			if v.Bytes != nil {
				s := len(b.arena)
				b.arena = append(b.arena, v.Bytes...)
				v.Bytes = b.arena[s:len(b.arena):len(b.arena)]
			}
			b.vals = append(b.vals, v)
		}
		b.n++
	}
	p.readErr = p.TableReader.Err()
	if b != nil && b.n > 0 {
		send()
	}
}

// Next implements TableReader.
func (p *prefetcher) Next(ctx context.Context) bool {
	if p.cur != nil {
		if p.i+1 < p.cur.n {
			p.i++
			return true
		}
		lent := p.cur.lent
		p.free <- p.cur
		if lent {
			p.back <- struct{}{}
		}
		p.cur = nil
	}
	select {
	case b, ok := <-p.full:
		if !ok {
			<-p.done // readErr is set
			return false
		}
		p.cur, p.i = b, 0
		return true
	case <-ctx.Done():
		p.err = ctx.Err()
		return false
	}
}

// Values implements TableReader: the row belongs to the prefetcher until
// the next Next.
func (p *prefetcher) Values() []snapshot.Value {
	return p.cur.vals[p.i*p.cols : (p.i+1)*p.cols : (p.i+1)*p.cols]
}

// Err implements TableReader.
func (p *prefetcher) Err() error {
	if p.err != nil {
		return p.err
	}
	select {
	case <-p.done:
		return p.readErr
	default:
		return nil
	}
}

// Close implements TableReader: the read goroutine stops, then the source
// reader closes.
func (p *prefetcher) Close() error {
	p.closeOnce.Do(func() {
		p.cancel()
		<-p.done
		p.closeErr = p.TableReader.Close()
	})
	return p.closeErr
}
