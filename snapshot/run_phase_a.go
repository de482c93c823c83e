package snapshot

// Phase A of delete detection (doc.go D5): while a partition's keys
// ascend, one iterator over the previous version walks forward with the
// source, and every previous row it passes without a matching key gets its
// row delete marker at once. The same iterator serves phase B for keys
// above switchKey, stepping forward, seeking when far, or falling back to
// a point Get for keys behind it.

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
