package adapters

// Chunk checksums over several connections. A run that finds little or
// nothing changed spends its time waiting for the source to compute the
// chunks' checksums (checksums.go), one query per chunk. Each query only
// reads, so several connections can compute them at once, as long as
// every connection sees the same committed transactions: checksums taken
// at different moments could see half of a transaction that touched two
// chunks, and the run would carry the other half over. So a run of one
// table whose adapter sets parallelism above 1 opens a point of the source
// (source.PointOpener: one exported snapshot on PostgreSQL, snapshots
// started under a brief global read lock on MySQL/MariaDB), reads the
// table on one of its connections and spreads the checksum queries over
// all of them, as pt-table-checksum's and mydumper's workers share
// chunks. Where the source gives a point of one connection only (MySQL
// without the RELOAD privilege, SQLite), that connection reads and
// computes everything, one query after another.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// keyRange is the keys after lo (nil: from the first) up to hi included
// (nil: to the last).
type keyRange struct {
	lo, hi []snapshot.Value
}

// chunkRanges are the key ranges of chunks, the first after lo and the
// last open ended.
func chunkRanges(chunks []chunk, lo []snapshot.Value) ([]keyRange, error) {
	out := make([]keyRange, len(chunks))
	for i := range chunks {
		var hi []snapshot.Value
		if i < len(chunks)-1 {
			v, err := parseDigestKey(chunks[i].Hi)
			if err != nil {
				return nil, err
			}
			hi = v
		}
		out[i] = keyRange{lo: lo, hi: hi}
		lo = hi
	}
	return out, nil
}

// errStopChecksums, returned by the done function of rangeChecksums, ends
// the pass early without an error.
var errStopChecksums = errors.New("adapters: checksum pass stopped early")

// rangeChecksums computes the source's checksum of each range, over the
// checksummers css at once (each one connection of one point of the
// source): one worker per checksummer takes the next range in order until
// none is left. done is called for each range computed, one call at a
// time; an error from it, or from a checksum, stops the workers from
// taking more ranges (those being computed finish: cancelling a query
// could break its connection, the one the run reads on). The error of the
// lowest range is returned, errStopChecksums as nil.
func rangeChecksums(ctx context.Context, css []checksummer, ranges []keyRange, done func(i int, rows int64, crc uint64) error) error {
	var (
		mu   sync.Mutex
		next int
		stop bool
		errs = make([]error, len(ranges))
		wg   sync.WaitGroup
	)
	for _, cs := range css[:min(len(css), len(ranges))] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if stop || next == len(ranges) {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				rows, crc, err := cs.ChunkChecksum(ctx, ranges[i].lo, ranges[i].hi)
				mu.Lock()
				if err == nil {
					err = done(i, rows, crc)
				}
				if err != nil {
					errs[i], stop = err, true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, errStopChecksums) {
			return err
		}
	}
	return nil
}

// checksumParallelism is how many connections a run of one table of spec
// computes its chunk checksums over through l: the adapter's parallelism
// when set above 1, else 1; never more than a pooled connection's
// max_open less one, which a MySQL point's read lock takes while the
// others start (all of max_open would leave the lock waiting for a
// connection, and every writer of the server behind it).
func checksumParallelism(spec api.Adapter, l *lease) int {
	n := spec.Parallelism
	if l.maxOpen > 0 {
		n = min(n, l.maxOpen-1)
	}
	return max(n, 1)
}

// openChecksumPoint moves a run of one table that will compute chunk
// checksums (a digest to compare with) onto a point of the source of the
// adapter's parallelism: the run's reader is closed, the point opened,
// the table opened again on one of its connections for the read (p.src)
// and on every other one for the checksums (p.css). The point's mode and
// the checksum connections go into the run record. A source without
// points, or a run that needs no checksums, stays on its reader.
func (p *pull) openChecksumPoint(ctx context.Context) error {
	n := checksumParallelism(p.spec, p.l)
	po, ok := p.l.src.(source.PointOpener)
	if n < 2 || !ok || p.prev == nil || !p.chunkable {
		return nil
	}
	req, err := p.s.tableRequest(ctx, p.l, p.spec)
	if err != nil {
		return err
	}
	// The reader's connection goes back first: a pooled connection's
	// max_open bounds the point's connections too. The table it found is
	// the point's to lock against a TRUNCATE or a rewrite where the
	// source's snapshot does not keep the rows (PostgreSQL), as for a
	// run of several tables.
	table := p.src.Table()
	if err := p.src.Close(); err != nil {
		p.s.log.Warn("ending source read", "run", p.runID, "err", p.l.scrub(err))
	}
	pt, err := po.OpenPoint(ctx, source.PointRequest{Parallelism: n, Resources: []source.Resource{table}})
	if err != nil {
		return fmt.Errorf("opening one point of the source of %d connections for the checksums: %w", n, p.readErr(ctx, err))
	}
	p.pt = pt
	info := pt.Info()
	css := make([]checksummer, 0, info.Connections)
	for i := range info.Connections {
		tr, err := pt.OpenTable(ctx, req)
		if err != nil {
			return fmt.Errorf("resource %q at the point of the source: %w", p.spec.Resource, p.readErr(ctx, err))
		}
		cs, ok := tr.(checksummer)
		if ok {
			ok, _ = cs.Chunkable()
		}
		if !ok || cs.ChecksumSignature() != p.signature {
			tr.Close()
			return fmt.Errorf("resource %q at the point of the source: its checksums differ from the run's reader's", p.spec.Resource)
		}
		if i == 0 {
			p.src = tr
		}
		css = append(css, cs)
	}
	p.cs, p.css = css[0], css
	p.schema = p.src.Schema()
	p.jsonCols = embedJSON(&p.schema, p.spec.EmbedJSON)
	p.prev, p.digestWhy = p.s.readDigest(ctx, p.spec.Dataset, p.cur, p.schema, p.signature)
	p.ar.mu.Lock()
	p.ar.rec.Point = &info
	p.ar.mu.Unlock()
	if p.s.testHookChecksumPoint != nil {
		p.s.testHookChecksumPoint(ctx, p.spec.Name)
	}
	return nil
}

// checksummers are the checksummers a run computes chunk checksums over:
// one per connection of its point, else the run's reader alone. The first
// time it is asked it records how many in the run record.
func (p *pull) checksummers() []checksummer {
	css := p.css
	if len(css) == 0 {
		css = []checksummer{p.cs}
	}
	if p.tables == nil {
		p.ar.mu.Lock()
		p.ar.rec.ChecksumConnections = len(css)
		p.ar.mu.Unlock()
	}
	return css
}

// closePoint ends the point of the checksums, if one was opened, once the
// source read is over: the other readers are closed with it.
func (p *pull) closePoint() {
	if p.pt == nil {
		return
	}
	if err := p.pt.Close(); err != nil {
		p.s.log.Warn("ending the point of the source", "run", p.runID, "err", p.l.scrub(err))
	}
	p.pt = nil
}
