package snapshot

// Phase B of delete detection (doc.go D5): from a partition's first key
// below its predecessor to the end of the run, every key is recorded in
// the scratch table (scratch.go); keys at or below switchKey are checked
// against what phase A wrote (revisit), and the rows not seen are found at
// commit (run_deletes.go).

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// startPhaseB switches partition p to phase B. Phase A's writes are
// written first (and its load, if any, flushed and ended: the keys no
// longer come in order), so that revisit can read them; the dataset's
// scratch table is marked dirty before the first key is recorded there.
func (r *Run) startPhaseB(ctx context.Context, p *runPart) error {
	if err := r.syncWrites(ctx, []*runPart{p}, true, false); err != nil {
		return err
	}
	p.switched = true
	p.switchKey = append([]byte{}, p.lastKey...)
	r.ds.mu.Lock()
	r.ds.scratchDirty = true
	r.ds.mu.Unlock()
	return nil
}

// revisit handles a phase B key at or below switchKey: phase A (whose
// writes were flushed at the switch) either saw it (then it is a
// duplicate, ErrDuplicateKey) or passed it in the previous version and wrote a
// row delete marker, which is taken back. A key given twice within phase
// B is left to the scratch merge at commit. It returns the previous
// version's state of the row (nil when absent), valid until the next call.
func (r *Run) revisit(ctx context.Context, p *runPart, key []byte) (*resolvedRow, error) {
	// One read for both the run's own row version (at its id, the newest)
	// and the previous version's chain: every version up to the run's id.
	o := store.ReadOptions{TimeRange: store.TimeRange{Min: 0, Max: r.id + 1}}
	st := &r.getSt
	st.reset(r.n)
	own, marked := 0, false
	var werr error
	err := r.db.st.VisitRow(ctx, p.table, key, o, func(c store.Cell) bool {
		if c.Timestamp == r.id {
			own++
			marked = marked || c.Kind == store.KindDeleteRow
			return true
		}
		if r.prev == nil {
			return false
		}
		done, err := st.add(c, r.prevVis)
		werr = err
		return err == nil && !done
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		r.err = fmt.Errorf("snapshot: reading %s txn %d: %w", r.ds.name, r.id, err)
		return nil, r.err
	}
	switch {
	case marked:
		p.data.DeleteVersion(append([]byte{}, key...), nil, r.id)
		r.stats.Deleted--
		r.stats.BytesWritten -= int64(len(key) + 8)
	case own > 0 || st.present():
		return nil, ErrDuplicateKey
	}
	if !st.present() {
		return nil, nil
	}
	return st, nil
}

// recordSeen adds key to the partition's batch of scratch rows.
func (r *Run) recordSeen(p *runPart, key []byte) {
	ss := len(p.sarena)
	p.sarena = scratchRow(p.sarena, r.id, key)
	re := len(p.sarena)
	p.sarena = binary.BigEndian.AppendUint64(p.sarena, p.seq)
	p.seq++
	p.seen.Put(p.sarena[ss:re:re], p.sarena[re:len(p.sarena):len(p.sarena)], r.id, nil)
}

// flushSeen applies the partition's batch of scratch rows, without sync.
func (r *Run) flushSeen(ctx context.Context, p *runPart) error {
	if p.seen.Len() == 0 {
		return nil
	}
	if err := r.db.st.Apply(ctx, &p.seen); err != nil {
		r.err = fmt.Errorf("snapshot: recording seen keys of %s txn %d: %w", r.ds.name, r.id, err)
		return r.err
	}
	p.seen.Reset()
	p.sarena = p.sarena[:0]
	return nil
}
