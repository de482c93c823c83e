package snapshot

// A run of changes: its rows are the changes since the previous version
// (a copy kept in step by its source's diff), and the rows of the previous
// version it is not given stay as they are. It reads and writes only the
// rows that changed, one point read each, never the whole version. Its
// counts and checksum (D6) start from the previous version's and follow
// each change: the checksum being a sum modulo 2^64 of the rows' hashes, a
// replaced or removed row's hash is taken out and the new row's added.

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
)

// ApplyChanges makes the run a run of changes (above): Put replaces or
// inserts a row, Delete removes one, every other row of the previous
// version is kept, and Commit writes no delete marker of its own. Keys
// must ascend over Put and Delete together. It must come before any Put,
// Delete or Carry, on a run with a previous version of the run's schema,
// in one partition; ErrInvalidArgument otherwise, the run left as it was.
// It takes ctx as Put does: a TableWriter's opens the table's writer
// first.
func (r *Run) ApplyChanges(ctx context.Context) error {
	if err := r.usable(); err != nil {
		return err
	}
	switch {
	case r.changes:
		return nil
	case r.prev == nil:
		return fmt.Errorf("%w: a run of changes needs a previous version", ErrInvalidArgument)
	case !sameSchema(r.prev.Schema, r.opts.Schema):
		return fmt.Errorf("%w: a run of changes needs the previous version's schema", ErrInvalidArgument)
	case len(r.parts) != 1 || r.parts[0] == nil:
		return fmt.Errorf("%w: a run of changes needs a dataset of one partition", ErrInvalidArgument)
	case r.stats.Rows != 0 || r.parts[0].lastKey != nil:
		return fmt.Errorf("%w: a run of changes must begin before any row", ErrInvalidArgument)
	}
	sum, err := strconv.ParseUint(r.prev.Stats.Checksum, 16, 64)
	if err != nil {
		return fmt.Errorf("%w: the checksum %q of version %d: %w", ErrInvalidArgument, r.prev.Stats.Checksum, r.prev.Version, err)
	}
	if p := r.parts[0]; p.cur != nil {
		p.cur.close()
		p.cur, p.loaded = nil, false
	}
	r.changes = true
	r.sum = sum
	r.shapes.inherit(r.opts.Schema, r.prev)
	r.stats.Rows = r.prev.Stats.Rows
	r.stats.Unchanged = r.prev.Stats.Rows
	r.publishStats()
	return nil
}

// Delete removes the row of key (the key columns' values, in key order)
// in a run of changes; a key the previous version lacks is no change.
func (r *Run) Delete(ctx context.Context, key []Value) error {
	if err := r.usable(); err != nil {
		return err
	}
	if !r.changes {
		return fmt.Errorf("%w: Delete outside a run of changes", ErrInvalidArgument)
	}
	if len(key) != len(r.keyIdx) {
		return fmt.Errorf("%w: %d key values for %d key columns", ErrInvalidArgument, len(key), len(r.keyIdx))
	}
	r.keyBuf = r.keyBuf[:0]
	for j, v := range key {
		var err error
		if r.keyBuf, err = appendKeyValue(r.keyBuf, v); err != nil {
			return fmt.Errorf("%w (column %q)", err, r.opts.Schema.Key[j])
		}
	}
	p := r.parts[0]
	if p.lastKey != nil && bytes.Compare(r.keyBuf, p.lastKey) <= 0 {
		return fmt.Errorf("%w: a change of key %s not after the last one (changes come in key order, one a key)",
			ErrInvalidArgument, FormatKey(r.opts.Schema.Key, key))
	}
	prev, err := r.getPrev(ctx, p, r.keyBuf)
	if err != nil {
		r.err = err
		return err
	}
	p.lastKey = append(p.lastKey[:0], r.keyBuf...)
	if prev == nil {
		return nil
	}
	r.takeOut(prev)
	return r.deleteRow(ctx, p, r.keyBuf)
}

// ApplyChanges makes the table's run a run of changes, as
// Run.ApplyChanges: the table's previous version is the one the current
// version holds. It opens the table's writer (it takes no row before).
func (w *TableWriter) ApplyChanges(ctx context.Context) error {
	err := w.writable(ctx)
	if err == nil {
		err = w.r.ApplyChanges(ctx)
	}
	if err != nil {
		return fmt.Errorf("table %q: %w", w.name, err)
	}
	return nil
}

// Delete removes the row of key from the table in a run of changes, as
// Run.Delete.
func (w *TableWriter) Delete(ctx context.Context, key []Value) error {
	err := w.writable(ctx)
	if err == nil {
		err = w.r.Delete(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("table %q: %w", w.name, err)
	}
	return nil
}
