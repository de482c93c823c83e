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
func (r *Run) readPrev(ctx context.Context, p *runPart, key []byte) error {
	var cells []store.Cell
	steps := 0
	for p.cur != nil {
		if !p.loaded {
			if !p.cur.next() {
				if err := p.cur.err(); err != nil {
					return fmt.Errorf("snapshot: reading %s version %d: %w", r.ds.name, r.prev.Version, err)
				}
				// Exhausted: nothing at or above the floor.
				if !p.known(key) {
					return r.getPrev(ctx, p, key)
				}
				break
			}
			p.loaded = true
		}
		c := bytes.Compare(p.cur.row, key)
		if c > 0 {
			if !p.known(key) { // behind the iterator (phase B)
				return r.getPrev(ctx, p, key)
			}
			break // absent
		}
		p.pass()
		if c == 0 {
			cells = p.cur.cells // valid until the next call to next
			break
		}
		// A previous row below key.
		if !p.switched {
			if err := r.deleteRow(ctx, p, p.cur.row, p.cur.cells); err != nil {
				return err
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
	r.res = resolve(cells, r.prevVis, r.res)
	return nil
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
	p.floor, p.floorIncl = append(p.floor[:0], p.cur.row...), false
}

// getPrev resolves key's row in the previous version with a point Get.
func (r *Run) getPrev(ctx context.Context, p *runPart, key []byte) error {
	cells, err := r.db.st.Get(ctx, p.table, key, r.readOpts)
	if err != nil {
		return fmt.Errorf("snapshot: reading %s version %d: %w", r.ds.name, r.prev.Version, err)
	}
	r.res = resolve(cells, r.prevVis, r.res)
	return nil
}
