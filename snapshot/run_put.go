package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// Put adds one source row, values aligned with RunOptions.Schema.Columns. The
// run copies what it keeps; vals may be reused after Put returns.
// ErrBadKey for a NULL key column. Rows may come in any order (ascending
// key order is fastest, doc.go D5); a key given twice is ErrBadKey: from
// Put when its first occurrence came before the source order first broke
// (phase A), else from Commit, which then aborts the run. After ErrBadKey,
// ErrBadSchema or ErrInvalidArgument from Put the run goes on without the
// row; after any other error it can only be aborted.
//
// Put writes only what differs from the previous version (D5): nothing
// for an unchanged row, else one row version (rowversion.go) holding the
// columns whose encoded value differs, or the whole row when it is new,
// when the column names changed, or when the row's chain is long.
func (r *Run) Put(ctx context.Context, vals []Value) error {
	if err := r.usable(); err != nil {
		return err
	}
	if err := r.checkRow(vals); err != nil {
		return err
	}
	cols := r.opts.Schema.Columns
	var err error
	r.keyBuf = r.keyBuf[:0]
	for _, i := range r.keyIdx {
		if r.keyBuf, err = appendKeyValue(r.keyBuf, vals[i]); err != nil {
			return fmt.Errorf("%w (column %q)", err, cols[i].Name)
		}
	}
	key := r.keyBuf
	if r.placed, err = r.place.partition(key, vals); err != nil {
		if errors.Is(err, ErrDuplicateKey) {
			return duplicateKeyError([]string{r.putKeyText(vals)})
		}
		return err
	}
	p := r.parts[r.placed]
	if p == nil {
		return r.notThisPartition(vals)
	}
	if r.carried != nil {
		if err := r.carryBefore(ctx, p, key, vals); err != nil {
			return err
		}
	}
	switch c := bytes.Compare(key, p.lastKey); {
	case c == 0 && p.lastKey != nil:
		return duplicateKeyError([]string{r.putKeyText(vals)})
	case c < 0 && r.changes:
		return fmt.Errorf("%w: a change of key %s below the last one (changes come in key order)", ErrInvalidArgument, r.putKeyText(vals))
	case c < 0 && r.carried != nil:
		return fmt.Errorf("%w: key %s below the last one in a partition that carries ranges over (rows come in key order)", ErrInvalidArgument, r.putKeyText(vals))
	case c < 0 && !p.switched:
		if err := r.startPhaseB(ctx, p); err != nil {
			return err
		}
	}

	prev, err := r.findPrev(ctx, p, key, vals)
	if err != nil {
		return err
	}
	p.lastKey = append(p.lastKey[:0], key...)

	r.pack(vals)

	// Write what differs (D5): a delta of the changed cells (new values,
	// and column delete markers for the columns the row has but the run's
	// schema does not), or the whole row when it is new, when every
	// column changed, or when its chain is long.
	exists := prev != nil && prev.present()
	changed, full := r.cells(prev, exists)
	if changed {
		r.writeVersion(p, key, full)
	}
	switch {
	case !exists:
		r.stats.Inserted++
	case changed:
		r.stats.Updated++
	default:
		r.stats.Unchanged++
	}
	r.stats.Rows++
	if r.stats.Rows%1024 == 0 {
		r.publishStats()
	}

	// Record the key as seen (D5), in phase B only.
	if p.switched {
		r.recordSeen(p, key)
	}
	if err := r.flushFull(ctx, p); err != nil {
		return err
	}
	if p.seen.Len() >= r.db.opts.batchSize {
		if err := r.flushSeen(ctx, p); err != nil {
			return err
		}
	}
	r.hook("put", r.stats.Rows)
	return nil
}

// checkRow checks that vals, a row given to Put, has one value per column
// of the run's schema, each of its column's kind or null.
func (r *Run) checkRow(vals []Value) error {
	cols := r.opts.Schema.Columns
	if len(vals) != len(cols) {
		return fmt.Errorf("%w: %d values for %d columns", ErrInvalidArgument, len(vals), len(cols))
	}
	for i := range vals {
		if k := vals[i].Kind; k != KindNull && k != cols[i].Kind {
			return fmt.Errorf("%w: column %q holds %s, got a %s value", ErrBadSchema, cols[i].Name, cols[i].Kind, k)
		}
	}
	return nil
}

// findPrev finds the row of key in the previous version (and, in phase B
// below switchKey, whether phase A saw or deleted it); nil when the run
// has no previous version. vals is the row given to Put, for errors.
func (r *Run) findPrev(ctx context.Context, p *runPart, key []byte, vals []Value) (*resolvedRow, error) {
	switch {
	case p.switched && bytes.Compare(key, p.switchKey) <= 0:
		prev, err := r.revisit(ctx, p, key)
		if errors.Is(err, ErrDuplicateKey) {
			return nil, duplicateKeyError([]string{r.putKeyText(vals)})
		}
		return prev, err
	case r.changes:
		prev, err := r.getPrev(ctx, p, key)
		if err != nil {
			r.err = err
			return nil, err
		}
		r.takeOut(prev)
		return prev, nil
	case r.prev != nil:
		prev, err := r.readPrev(ctx, p, key)
		if err != nil {
			r.err = err
			return nil, err
		}
		return prev, nil
	}
	return nil, nil
}

// pack packs the column values of vals (rowversion.go) into r.enc, each
// after its dictionary index, with r.encOff and r.encEnd delimiting the
// values, and folds the row into the checksum (D6) and the value shapes
// (shapes.go).
func (r *Run) pack(vals []Value) {
	need := versionReserve
	for i := range vals {
		need += 2*binary.MaxVarintLen64 + 1 + len(vals[i].Bytes)
	}
	if cap(r.enc) < need {
		r.enc = make([]byte, 0, need) // one allocation, not growth by appends
	}
	r.enc = append(r.enc[:0], make([]byte, versionReserve)...)
	r.encOff, r.encEnd = r.encOff[:0], r.encEnd[:0]
	for i := range vals {
		r.enc = binary.AppendUvarint(r.enc, uint64(r.dictOf[i]))
		r.encOff = append(r.encOff, len(r.enc))
		r.enc = appendColumnValue(r.enc, vals[i])
		r.encEnd = append(r.encEnd, len(r.enc))
	}
	r.addChecksum()
	r.shapes.addRow(r.opts.Schema, vals)
}

// cells sets r.cellIdx and r.cellVal to the cells of the row version to
// write against prev (exists: prev holds the row): the changed values and
// a column delete marker for each column prev has but the run's schema
// does not, or every value when the version is full: the row is new,
// every column changed, or prev's chain is long. changed is false when
// nothing differs.
func (r *Run) cells(prev *resolvedRow, exists bool) (changed, full bool) {
	r.cellIdx, r.cellVal = r.cellIdx[:0], r.cellVal[:0]
	values, dropped := 0, 0
	for d, si := range r.runOf {
		switch {
		case si >= 0:
			nv := r.enc[r.encOff[si]:r.encEnd[si]]
			if !exists || !bytes.Equal(prev.value(d), nv) {
				r.cellIdx, r.cellVal = append(r.cellIdx, d), append(r.cellVal, nv)
				values++
			}
		case exists && prev.value(d) != nil:
			r.cellIdx, r.cellVal = append(r.cellIdx, d), append(r.cellVal, deleteColumnValue)
			dropped++
		}
	}
	if len(r.cellIdx) == 0 {
		return false, false
	}
	full = !exists || values == len(r.opts.Schema.Columns) && dropped == 0
	if !full && prev.chain >= maxChain {
		// The chain is long: the whole row instead of a delta.
		full = true
		r.cellIdx, r.cellVal = r.cellIdx[:0], r.cellVal[:0]
		for d, si := range r.runOf {
			if si >= 0 {
				r.cellIdx, r.cellVal = append(r.cellIdx, d), append(r.cellVal, r.enc[r.encOff[si]:r.encEnd[si]])
			}
		}
	}
	return true, full
}

// putKeyText names the key of vals, a row given to Put, as FormatKey does.
func (r *Run) putKeyText(vals []Value) string {
	key := make([]Value, len(r.keyIdx))
	for j, i := range r.keyIdx {
		key[j] = vals[i]
	}
	return FormatKey(r.opts.Schema.Key, key)
}

// writeVersion adds the row version of key holding the cells r.cellIdx
// and r.cellVal to the partition's batch. A full version whose cells are
// the run's columns in dictionary order is r.enc itself, its header put in
// the room before the cells; wider than batchBytes, it is not copied: the
// batch takes r.enc, and the next row packs into a new one.
func (r *Run) writeVersion(p *runPart, key []byte, full bool) {
	st := len(p.arena)
	p.arena = append(p.arena, key...)
	row := p.arena[st:len(p.arena):len(p.arena)]
	var v []byte
	switch {
	case full && r.inOrder && len(r.cellIdx) == len(r.dictOf):
		var h [versionReserve]byte
		hdr := appendVersionHeader(h[:0], true, len(r.cellIdx))
		start := versionReserve - len(hdr)
		copy(r.enc[start:], hdr)
		v = r.enc[start:len(r.enc):len(r.enc)]
		if len(v) > batchBytes {
			r.enc = nil
			break
		}
		vs := len(p.arena)
		p.arena = append(p.arena, v...)
		v = p.arena[vs:len(p.arena):len(p.arena)]
	default:
		vs := len(p.arena)
		p.arena = appendVersion(p.arena, full, r.cellIdx, r.cellVal)
		v = p.arena[vs:len(p.arena):len(p.arena)]
	}
	p.data.Put(row, nil, r.id, v)
	p.dataBytes += len(row) + len(v)
	r.stats.BytesWritten += int64(len(row) + len(v) + 8)
}

// deleteColumnValue is the packed value of a column delete marker.
var deleteColumnValue = []byte{deleteColumn}
