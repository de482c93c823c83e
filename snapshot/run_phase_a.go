package snapshot

// Phase A of delete detection (doc.go D5): while a partition's keys
// ascend, one iterator over the previous version walks forward with the
// source, and every previous row it passes without a matching key gets its
// row delete marker at once. The same iterator serves phase B for keys
// above switchKey, stepping forward, seeking when far, or falling back to
// a point Get for keys behind it. Carry moves the walk past a range of
// rows the source did not send, their checksums unchanged (verify.go).

import (
	"bytes"
	"context"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// readPrev resolves key's row in the previous version into r.res. In
// phase A it walks the partition's iterator forward, writing a row delete
// marker for every existing row it passes (the source skipped it); in
// phase B it steps a few rows forward, seeks when the key is further, and
// falls back to a point Get for keys behind the iterator.
//
// It returns the row's state at the previous version, nil when absent
// there; the state is valid until the next call.
func (r *Run) readPrev(ctx context.Context, p *runPart, key []byte) (*resolvedRow, error) {
	steps := 0
	for p.cur != nil {
		if !p.loaded {
			if !p.cur.next() {
				if err := p.cur.err(); err != nil {
					return nil, fmt.Errorf("snapshot: reading %s version %d: %w", r.ds.name, r.prev.Version, err)
				}
				// Exhausted: nothing at or above the floor.
				if !p.known(key) {
					return r.getPrev(ctx, p, key)
				}
				return nil, nil
			}
			p.loaded = true
		}
		c := bytes.Compare(p.cur.row(), key)
		if c > 0 {
			if !p.known(key) { // behind the iterator (phase B)
				return r.getPrev(ctx, p, key)
			}
			return nil, nil // absent
		}
		p.pass()
		r.compared(&p.cur.st)
		if c == 0 {
			return &p.cur.st, nil // valid until the next call to next
		}
		// A previous row below key.
		if !p.switched {
			if err := r.deleteRow(ctx, p, p.cur.row()); err != nil {
				return nil, err
			}
			continue
		}
		if steps++; steps > 8 {
			p.cur.seek(key)
			p.loaded = false
			p.floor, p.floorIncl = append(p.floor[:0], key...), true
			steps = 0
		}
	}
	return nil, nil
}

// known reports whether key lies in the region the iterator has covered:
// above the floor, below the loaded row.
func (p *runPart) known(key []byte) bool {
	c := bytes.Compare(key, p.floor)
	return c > 0 || (c == 0 && p.floorIncl) || p.floor == nil
}

// pass marks the loaded row as passed: it becomes the floor.
func (p *runPart) pass() {
	p.loaded = false
	p.floor, p.floorIncl = append(p.floor[:0], p.cur.row()...), false
}

// getPrev resolves key's row in the previous version with a point read;
// nil when absent.
func (r *Run) getPrev(ctx context.Context, p *runPart, key []byte) (*resolvedRow, error) {
	st := &r.getSt
	st.reset(r.n)
	var werr error
	err := r.db.st.VisitRow(ctx, p.table, key, r.readOpts, func(c store.Cell) bool {
		done, err := st.add(c, r.prevVis)
		werr = err
		return err == nil && !done
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading %s version %d: %w", r.ds.name, r.prev.Version, err)
	}
	if !st.present() {
		return nil, nil
	}
	return st, nil
}

// Carry takes the rows of the previous version whose keys lie after
// after (nil: from the first) and at or before through (full keys, in key
// order) into the run unchanged, without the source sending them: rows is
// their number and sum their part of the checksum (D6), as the source's
// digest recorded them. They count as Rows and Unchanged, and nothing is
// written for them. The rows of the previous version before the range
// that were neither put nor carried get their row delete marker, as in
// phase A (D5). Keys must keep ascending: after the source order broke in
// a partition, Carry fails with ErrInvalidArgument, as it does for a bad
// key.
func (r *Run) Carry(ctx context.Context, after, through []Value, rows int64, sum uint64) error {
	if err := r.usable(); err != nil {
		return err
	}
	if r.changes {
		return fmt.Errorf("%w: carrying rows in a run of changes, which keeps them all", ErrInvalidArgument)
	}
	encode := func(key []Value) ([]byte, error) {
		if len(key) != len(r.keyIdx) {
			return nil, fmt.Errorf("%w: %d key values for %d key columns", ErrInvalidArgument, len(key), len(r.keyIdx))
		}
		var out []byte
		for _, v := range key {
			var err error
			if out, err = appendKeyValue(out, v); err != nil {
				return nil, fmt.Errorf("%w: carrying rows: %w", ErrInvalidArgument, err)
			}
		}
		return out, nil
	}
	key, err := encode(through)
	if err != nil {
		return err
	}
	var from []byte
	if after != nil {
		if from, err = encode(after); err != nil {
			return err
		}
		if bytes.Compare(from, key) >= 0 {
			return fmt.Errorf("%w: carrying an empty range", ErrInvalidArgument)
		}
	}
	for _, p := range r.parts {
		if p.switched {
			return fmt.Errorf("%w: carrying rows after the source order broke", ErrInvalidArgument)
		}
		if p.lastKey != nil && bytes.Compare(key, p.lastKey) <= 0 {
			return fmt.Errorf("%w: carrying rows up to a key not after the last one", ErrInvalidArgument)
		}
	}
	for _, p := range r.parts {
		if err := r.passRange(ctx, p, from, key); err != nil {
			return err
		}
	}
	r.stats.Rows += rows
	r.stats.Unchanged += rows
	r.sum += sum
	if rows > 0 {
		r.shapes.inherit(r.opts.Schema, r.prev)
		if r.prev == nil {
			r.shapes.lost = true
		}
	}
	r.publishStats()
	return nil
}

// passRange moves partition p's walk past the rows of the previous
// version after from (nil: from the first) up to through, which the run
// takes over without the source sending them (Carry, and the carried
// ranges of a PartitionWriter): the rows before the range that were not
// put get their row delete marker first, as in phase A (D5).
func (r *Run) passRange(ctx context.Context, p *runPart, from, through []byte) error {
	if from != nil && r.prev != nil {
		// The rows up to from that nobody put are gone: walk to the
		// smallest key after it (never a key: no component starts with
		// 00), as a Put of it would.
		if _, err := r.readPrev(ctx, p, append(bytes.Clone(from), 0)); err != nil {
			r.err = err
			return err
		}
	}
	if p.cur != nil {
		p.cur.seek(append(bytes.Clone(through), 0))
		p.loaded = false
	}
	p.floor, p.floorIncl = append(p.floor[:0], through...), false
	p.lastKey = append(p.lastKey[:0], through...)
	return nil
}
