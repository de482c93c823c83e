package snapshot

import (
	"bytes"
	"context"
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
// Put writes only what differs from the previous version (D5): puts for
// columns whose encoded value differs or that are new, column delete
// markers for columns the row has but the run's schema does not.
func (r *Run) Put(ctx context.Context, vals []Value) error {
	if err := r.usable(); err != nil {
		return err
	}
	cols := r.opts.Schema.Columns
	if len(vals) != len(cols) {
		return fmt.Errorf("%w: %d values for %d columns", ErrInvalidArgument, len(vals), len(cols))
	}
	for i := range vals {
		if k := vals[i].Kind; k != KindNull && k != cols[i].Kind {
			return fmt.Errorf("%w: column %q holds %s, got a %s value", ErrBadSchema, cols[i].Name, cols[i].Kind, k)
		}
	}
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
	switch c := bytes.Compare(key, p.lastKey); {
	case c == 0 && p.lastKey != nil:
		return duplicateKeyError([]string{r.putKeyText(vals)})
	case c < 0 && !p.switched:
		if err := r.startPhaseB(ctx, p); err != nil {
			return err
		}
	}

	// Find the row in the previous version (and, in phase B below
	// switchKey, whether phase A saw or deleted it).
	r.res = r.res[:0]
	if p.switched && bytes.Compare(key, p.switchKey) <= 0 {
		if err := r.revisit(ctx, p, key); err != nil {
			if errors.Is(err, ErrDuplicateKey) {
				return duplicateKeyError([]string{r.putKeyText(vals)})
			}
			return err
		}
	} else if r.prev != nil {
		if err := r.readPrev(ctx, p, key); err != nil {
			r.err = err
			return err
		}
	}
	p.lastKey = append(p.lastKey[:0], key...)

	// Encode the row's cell values (encoding.go) and fold it into the
	// checksum (D6).
	r.enc = r.enc[:0]
	r.encOff = r.encOff[:0]
	for i := range vals {
		r.encOff = append(r.encOff, len(r.enc))
		r.enc = appendCellValue(r.enc, vals[i])
	}
	r.encOff = append(r.encOff, len(r.enc))
	r.addChecksum()

	// Write what differs (D5), merging the schema's columns and the
	// previous row's, both in column name order.
	rowStart := len(p.arena)
	p.arena = append(p.arena, key...)
	row := p.arena[rowStart:len(p.arena):len(p.arena)]
	exists := len(r.res) > 0
	changed := false
	ri := 0
	for _, ci := range r.byName {
		name := r.cols[ci]
		for ri < len(r.res) && bytes.Compare(r.res[ri].name, name) < 0 {
			// a column the new schema no longer has
			r.writeDeleteColumn(p, row, r.res[ri].name)
			changed = true
			ri++
		}
		nv := r.enc[r.encOff[ci]:r.encOff[ci+1]]
		if ri < len(r.res) && bytes.Equal(r.res[ri].name, name) {
			same := bytes.Equal(r.res[ri].value, nv)
			ri++
			if same {
				continue
			}
		}
		r.writePut(p, row, name, nv)
		changed = true
	}
	for ; ri < len(r.res); ri++ {
		r.writeDeleteColumn(p, row, r.res[ri].name)
		changed = true
	}
	if !changed {
		p.arena = p.arena[:rowStart] // nothing refers to the row key
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
	if p.data.Len() >= r.db.opts.batchSize || len(p.arena) >= batchBytes {
		if err := r.flushData(ctx, p); err != nil {
			return err
		}
	}
	if p.seen.Len() >= r.db.opts.batchSize {
		if err := r.flushSeen(ctx, p); err != nil {
			return err
		}
	}
	r.hook("put", r.stats.Rows)
	return nil
}

// putKeyText names the key of vals, a row given to Put, as FormatKey does.
func (r *Run) putKeyText(vals []Value) string {
	key := make([]Value, len(r.keyIdx))
	for j, i := range r.keyIdx {
		key[j] = vals[i]
	}
	return FormatKey(r.opts.Schema.Key, key)
}

// writePut adds a put of col=val to the partition's batch.
func (r *Run) writePut(p *runPart, row, col, val []byte) {
	st := len(p.arena)
	p.arena = append(p.arena, val...)
	v := p.arena[st:len(p.arena):len(p.arena)]
	p.data.Put(row, col, r.id, v)
	r.stats.BytesWritten += int64(len(row) + len(col) + len(val) + 8)
}

// writeDeleteColumn adds a column delete marker of col to the partition's
// batch.
func (r *Run) writeDeleteColumn(p *runPart, row, col []byte) {
	st := len(p.arena)
	p.arena = append(p.arena, col...)
	c := p.arena[st:len(p.arena):len(p.arena)]
	p.data.DeleteColumn(row, c, r.id)
	r.stats.BytesWritten += int64(len(row) + len(col) + 8)
}

// flushData applies the partition's data batch, without sync (the commit
// syncs once).
func (r *Run) flushData(ctx context.Context, p *runPart) error {
	if p.data.Len() == 0 {
		return nil
	}
	n := p.data.Len()
	// W3: no write once the slot expired or was taken.
	ctx, cancel, err := r.writeContext(ctx)
	if err == nil {
		err = r.db.st.Apply(ctx, &p.data)
	}
	cancel()
	if err != nil {
		r.err = fmt.Errorf("snapshot: writing %s txn %d: %w", r.ds.name, r.id, err)
		return r.err
	}
	r.db.metrics.cellsWrite.Add(float64(n))
	p.data.Reset()
	p.arena = p.arena[:0]
	r.hook("flush", r.stats.Rows)
	return nil
}
