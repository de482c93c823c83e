package snapshot

// Delete detection (doc.go D5): rows of the previous version that the
// source no longer has get a row delete marker at the run's id. Phase A
// writes them as its iterator passes them (run_phase_a.go); what is left
// is found here, at commit.

import (
	"bytes"
	"context"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// markDeleted writes the row delete markers still due at commit. In phase
// A they are the previous rows after the last key, read on from the
// partition's iterator. In phase B the keys seen (the scratch table, which
// the store keeps sorted) are merge-joined with the previous rows above
// switchKey; a key seen twice there is ErrDuplicateKey.
func (r *Run) markDeleted(ctx context.Context, p *runPart) error {
	if !p.switched {
		return r.markDeletedAfter(ctx, p)
	}
	return r.markDeletedUnseen(ctx, p)
}

// markDeletedAfter is markDeleted in phase A: the previous rows after the
// last key, read on from the partition's iterator.
func (r *Run) markDeletedAfter(ctx context.Context, p *runPart) error {
	if p.cur == nil {
		return nil
	}
	for {
		if !p.loaded {
			if !p.cur.next() {
				break
			}
			p.loaded = true
		}
		p.pass()
		r.compared(&p.cur.st)
		if err := r.deleteRow(ctx, p, p.cur.row()); err != nil {
			return err
		}
	}
	if err := p.cur.err(); err != nil {
		return fmt.Errorf("snapshot: reading %s version %d: %w", r.ds.name, r.prev.Version, err)
	}
	return nil
}

// markDeletedUnseen is markDeleted in phase B: the keys seen, from the
// scratch table, merge-joined with the previous rows above switchKey.
func (r *Run) markDeletedUnseen(ctx context.Context, p *runPart) error {
	// Only this run's rows (scratch.go).
	own := scratchRow(nil, r.id, nil)
	seenIt, err := r.db.st.Scan(ctx, p.scratch, store.ScanOptions{Start: own, End: scratchRow(nil, r.id+1, nil),
		ReadOptions: store.ReadOptions{TimeRange: store.TimeRange{Min: r.id, Max: r.id + 1}}})
	if err != nil {
		return fmt.Errorf("snapshot: reading seen keys of %s: %w", r.ds.name, err)
	}
	seen := newRowReader(seenIt)
	defer seen.close()
	var prev *rowCursor
	if r.prev != nil {
		it, err := r.db.st.Scan(ctx, p.table, store.ScanOptions{ReadOptions: r.readOpts, Start: append(append([]byte{}, p.switchKey...), 0)})
		if err != nil {
			return fmt.Errorf("snapshot: reading %s version %d: %w", r.ds.name, r.prev.Version, err)
		}
		prev = newRowCursor(it, r.prevVis, r.n)
		defer prev.close()
	}
	nextSeen := func() (bool, error) {
		if !seen.next() {
			return false, nil
		}
		if len(seen.cells) > 1 {
			// Name this key and the next few repeated ones.
			dups := []string{fmt.Sprintf("%s %d times", r.formatRowKey(seen.row()[len(own):]), len(seen.cells))}
			for len(dups) < maxNamedDuplicates && seen.next() {
				if len(seen.cells) > 1 {
					dups = append(dups, fmt.Sprintf("%s %d times", r.formatRowKey(seen.row()[len(own):]), len(seen.cells)))
				}
			}
			return false, duplicateKeyError(dups)
		}
		return true, nil
	}
	haveSeen, err := nextSeen()
	if err != nil {
		return err
	}
	if prev != nil {
		for prev.next() {
			for haveSeen && bytes.Compare(seen.row()[len(own):], prev.row()) < 0 {
				if haveSeen, err = nextSeen(); err != nil {
					return err
				}
			}
			if haveSeen && bytes.Equal(seen.row()[len(own):], prev.row()) {
				continue
			}
			if err := r.deleteRow(ctx, p, prev.row()); err != nil {
				return err
			}
		}
		if err := prev.err(); err != nil {
			return fmt.Errorf("snapshot: reading %s version %d: %w", r.ds.name, r.prev.Version, err)
		}
	}
	for haveSeen {
		if haveSeen, err = nextSeen(); err != nil {
			return err
		}
	}
	if err := seen.err(); err != nil {
		return fmt.Errorf("snapshot: reading seen keys of %s: %w", r.ds.name, err)
	}
	return nil
}

// deleteRow writes a row delete marker for row, a row of the previous
// version that the source did not give.
func (r *Run) deleteRow(ctx context.Context, p *runPart, row []byte) error {
	st := len(p.arena)
	p.arena = append(p.arena, row...)
	p.data.DeleteRow(p.arena[st:len(p.arena):len(p.arena)], r.id)
	p.dataBytes += len(row)
	r.stats.Deleted++
	r.stats.BytesWritten += int64(len(row) + 8)
	if p.data.Len() >= r.db.opts.batchSize {
		return r.flushData(ctx, p)
	}
	return nil
}
