package adapters

import (
	"context"
	"fmt"
	"slices"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// readDiff is diff mode, for a source that keeps versions of its own
// (source.DiffReader, a snapstore dataset) when the dataset's current
// version was copied from an earlier version of it that the source still
// keeps: the source's changes since that version applied in key order to
// the current version, then checked against the source version's
// checksum, unless the read is a derivation of that version (some columns,
// a key range), whose checksum is the run's own. done is false when the source cannot give the changes, or when
// the result's checksum disagrees (the run is then begun again): the
// caller reads in full.
//
// The changes are applied by a run of changes (snapshot.Run.ApplyChanges,
// or a TableWriter's for a table of a run of several: inserts and updates
// put, deletes deleted, the other rows kept without being read). A run
// that records a digest of chunks, or that cannot be one of changes (a
// table of several partitions), walks the current version's rows (of the
// table) instead and puts them with the changes, deletes left out.
func (p *pull) readDiff(ctx context.Context) (done bool, err error) {
	dr, ok := p.src.(source.DiffReader)
	if !ok || p.cur == nil || p.local == nil || p.cur.Source.Resource == "" || p.cur.Source.Connection != p.spec.Connection ||
		!slices.Equal(p.cur.Schema.Columns, p.schema.Columns) || !slices.Equal(p.cur.Schema.Key, p.schema.Key) {
		return false, nil
	}
	ch, ok, err := dr.ReadDiff(ctx, p.cur.Source.Resource, p.cur.Stats.Checksum)
	if err != nil || !ok {
		return false, p.readErrIf(ctx, err)
	}
	defer ch.Close()
	p.res.mode = ModeDiff
	// A run of changes (of the dataset's one table, or of one table of a
	// run of several): only the changed rows are read and written.
	if run, ok := p.local.(changesSink); ok && p.rec == nil && run.ApplyChanges(ctx) == nil {
		for ch.Next(ctx) {
			if ch.Deleted() {
				if err := run.Delete(ctx, ch.Key()); err != nil {
					return false, fmt.Errorf("deleting a row of %s: %w", p.resource, err)
				}
			} else if err := p.putValues(ctx, ch.Values()); err != nil {
				return false, err
			}
		}
		if err := ch.Err(); err != nil {
			return false, p.readErr(ctx, err)
		}
		return p.checkDiff(ctx, dr)
	}
	var rd *snapshot.Reader
	if p.tables != nil {
		rd, err = p.s.db.TableReader(ctx, p.spec.Dataset, p.resource, snapshot.At{Version: p.cur.Version})
	} else {
		rd, err = p.s.db.Reader(ctx, p.spec.Dataset, snapshot.At{Version: p.cur.Version})
	}
	if err != nil {
		return false, fmt.Errorf("reading the current version %d of dataset %q: %w", p.cur.Version, p.spec.Dataset, err)
	}
	defer rd.Close()
	// The current version's rows from the last change's key (skipped:
	// the change replaced or deleted it) up to the next change's
	// (excluded), then the change.
	var last []snapshot.Value
	copyRows := func(end []snapshot.Value) error {
		it, err := rd.Scan(ctx, snapshot.ScanOptions{Start: last, End: end})
		if err != nil {
			return fmt.Errorf("reading the current version %d of dataset %q: %w", p.cur.Version, p.spec.Dataset, err)
		}
		defer it.Close()
		for it.Next() {
			vals := it.Row().Values
			if last != nil && sameKey(vals, p.keyCols(), last) {
				continue
			}
			if err := p.putValues(ctx, vals); err != nil {
				return err
			}
		}
		return it.Err()
	}
	for ch.Next(ctx) {
		key := ch.Key()
		if err := copyRows(key); err != nil {
			return false, err
		}
		if !ch.Deleted() {
			if err := p.putValues(ctx, ch.Values()); err != nil {
				return false, err
			}
		}
		last = cloneValues(last[:0], key)
	}
	if err := ch.Err(); err != nil {
		return false, p.readErr(ctx, err)
	}
	if err := copyRows(nil); err != nil {
		return false, err
	}
	return p.checkDiff(ctx, dr)
}

// checkDiff checks the checksum of the rows diff mode gave against the
// source version's (none for a derivation); when they disagree it begins
// the run again and returns false: the caller reads in full. A table of
// a run of several tables cannot be begun again alone: its disagreement
// is an *errDiffMismatch, on which the whole run begins again
// (tablesPull.readAgain).
func (p *pull) checkDiff(ctx context.Context, dr source.DiffReader) (bool, error) {
	if _, sum := p.local.Progress(); dr.Checksum() != "" && fmt.Sprintf("%016x", sum) != dr.Checksum() {
		// The copy did not hold what the source version it names held
		// (or a bug): begin again and read in full.
		p.s.log.Warn("diff mode gave another checksum than the source version's; reading in full", "run", p.runID,
			"resource", p.resource, "checksum", fmt.Sprintf("%016x", sum), "source_checksum", dr.Checksum())
		if p.tables != nil {
			return false, &errDiffMismatch{table: p.resource}
		}
		p.abort(ctx)
		p.n = 0
		if err := p.begin(ctx); err != nil {
			return false, err
		}
		return false, nil
	}
	return true, nil
}

// changesSink is a tableSink that can be a run of changes: a
// *snapshot.Run, or a *snapshot.TableWriter.
type changesSink interface {
	ApplyChanges(ctx context.Context) error
	Delete(ctx context.Context, key []snapshot.Value) error
}

// errDiffMismatch: diff mode gave table another checksum than the
// source version's, in a run of several tables.
type errDiffMismatch struct{ table string }

func (e *errDiffMismatch) Error() string {
	return fmt.Sprintf("diff mode gave table %s another checksum than the source version's", e.table)
}

// readErrIf is readErr of a non-nil err.
func (p *pull) readErrIf(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return p.readErr(ctx, err)
}

// keyCols returns the schema indexes of the key columns, in key order.
func (p *pull) keyCols() []int {
	idx := make([]int, 0, len(p.schema.Key))
	for _, k := range p.schema.Key {
		idx = append(idx, slices.IndexFunc(p.schema.Columns, func(c snapshot.Column) bool { return c.Name == k }))
	}
	return idx
}

// sameKey reports whether the key columns idx of vals are key.
func sameKey(vals []snapshot.Value, idx []int, key []snapshot.Value) bool {
	for j, i := range idx {
		if !vals[i].Equal(key[j]) {
			return false
		}
	}
	return true
}

// cloneValues appends copies of vals, bytes included, to dst.
func cloneValues(dst, vals []snapshot.Value) []snapshot.Value {
	for _, v := range vals {
		v.Bytes = slices.Clone(v.Bytes)
		dst = append(dst, v)
	}
	return dst
}
