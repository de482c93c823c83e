package snapshot

// The dataset's metadata row (keys.go): everything that must change
// together for one dataset, written by one conditional single-row write
// per change (doc.go D9), and read whole by one Get (W2).

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// rowState is the "state" cell of a dataset's row, as JSON.
type rowState struct {
	// Format is the storage format of the dataset (metaFormat): 2 while
	// its data is of format 2 (migrate_rows.go), 3 after.
	Format int `json:"format"`
	// ColumnTablesLeft says the data tables of format 2 of a migrated
	// dataset are still to be dropped (migrate_rows.go).
	ColumnTablesLeft bool `json:"column_tables_left,omitempty"`
	// Seq counts the writes of the row: each write sets it one higher, so
	// that two states of the row never have the same encoding.
	Seq    int64         `json:"seq"`
	Config datasetConfig `json:"config"`
	// Current is the current version, 0 before the first commit.
	Current int64 `json:"current,omitempty"`
	// Versions are the kept versions, ascending; each one's body (its
	// VersionInfo) is the version row written before it was listed.
	Versions []versionRef `json:"versions,omitempty"`
	// Expired are versions GC expired whose version rows may still be in
	// the store; GC deletes those rows, then the ids.
	Expired []int64 `json:"expired,omitempty"`
	// Tags name kept versions.
	Tags map[string]int64 `json:"tags,omitempty"`
	// Txns are the dataset's transactions in progress and invalid (txn.I3).
	Txns txn.State `json:"txns"`
	// Top is the largest transaction id the dataset ever used: the next
	// run takes one above it (txn.I2).
	Top int64 `json:"top,omitempty"`
	// Slot is the dataset's writer slot (D8, W1).
	Slot writerSlot `json:"slot"`
	// Dropping, when set, says a drop began (drop.go).
	Dropping *dropState `json:"dropping,omitempty"`
	// Collected, when set, is what the last GC proved of the data tables
	// (G10, gc.go): it lets the next one skip the scan of every row.
	Collected *gcMark `json:"collected,omitempty"`
	// Write names the write that made this state (the writer's owner id
	// and a count), so that a writer that reads the row back after an
	// error knows its write landed.
	Write string `json:"write,omitempty"`

	// gone asks writeRow to delete the row instead of writing it.
	gone bool
}

// versionRef is a kept version in the row: its id and commit time (all
// retention needs).
type versionRef struct {
	Version     int64     `json:"v"`
	CommittedAt time.Time `json:"committed_at"`
	// VerifiedAt is the last time a run found the source identical to
	// the version (verify.go): a change of the row, as the version row
	// never changes once listed.
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
}

// dropState is the state of a drop under way (D10).
type dropState struct {
	Since time.Time `json:"since"`
	// RetryAfter: a data deletion of the drop failed and may still land
	// (store.S9); the row stays until then, so that a dataset of the same
	// name cannot be created before it can no longer be hit.
	RetryAfter time.Time `json:"retry_after,omitempty"`
}

// clone returns a copy sharing nothing with s.
func (s rowState) clone() rowState {
	c := s
	c.Config.Key = slices.Clone(s.Config.Key)
	c.Config.Tables = slices.Clone(s.Config.Tables)
	c.Versions = slices.Clone(s.Versions)
	c.Expired = slices.Clone(s.Expired)
	c.Tags = maps.Clone(s.Tags)
	c.Txns = s.Txns.Clone()
	if s.Dropping != nil {
		d := *s.Dropping
		c.Dropping = &d
	}
	if s.Collected != nil {
		m := gcMark{Top: s.Collected.Top, Versions: slices.Clone(s.Collected.Versions)}
		c.Collected = &m
	}
	return c
}

// kept reports whether v is a kept version.
func (s *rowState) kept(v int64) bool {
	_, ok := slices.BinarySearchFunc(s.Versions, v, func(r versionRef, v int64) int { return cmp.Compare(r.Version, v) })
	return ok
}

// decodeState decodes and checks a "state" cell.
func decodeState(name string, b []byte) (rowState, error) {
	var st rowState
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%w: metadata of %s: %v", ErrCorrupt, name, err)
	}
	if st.Format != metaFormat && st.Format != formatColumnCells {
		return st, fmt.Errorf("%w: metadata of %s has format %d, this code reads %d and %d", ErrCorrupt, name, st.Format, formatColumnCells, metaFormat)
	}
	if err := st.Txns.Check(); err != nil {
		return st, fmt.Errorf("%w: metadata of %s: %v", ErrCorrupt, name, err)
	}
	if !slices.IsSortedFunc(st.Versions, func(a, b versionRef) int { return cmp.Compare(a.Version, b.Version) }) {
		return st, fmt.Errorf("%w: metadata of %s: versions out of order", ErrCorrupt, name)
	}
	if st.Config.Partitions <= 0 {
		st.Config.Partitions = 1
	}
	return st, nil
}

// readRow reads the row of dataset name: its state, the state's encoding
// as stored (the check of the next write), and whether it exists.
func (db *DB) readRow(ctx context.Context, name string) (rowState, []byte, bool, error) {
	cells, err := db.st.Get(ctx, db.meta, datasetKey(name), store.ReadOptions{Columns: [][]byte{colState}, MaxVersions: 1})
	if err != nil {
		return rowState{}, nil, false, fmt.Errorf("snapshot: reading the metadata of %s: %w", name, err)
	}
	for _, c := range cells {
		if string(c.Column) == string(colState) && c.Kind == store.KindPut {
			st, err := decodeState(name, c.Value)
			return st, c.Value, err == nil, err
		}
	}
	return rowState{}, nil, false, nil
}

// errNoChange, from a change function of writeRow, says the row already
// holds what the change would make: an earlier write whose outcome was
// unknown landed, or another process made the same change.
var errNoChange = errors.New("snapshot: nothing to change")

// maxRowConflicts bounds how often writeRow reads the row again after
// another process changed it between the read and the write.
const maxRowConflicts = 32

// writeRow makes one change of ds's row (D9): change edits a copy of the
// state this DB last knew and returns nil to write it, errNoChange when
// nothing needs writing, or an error to give up. The copy goes out with
// CheckAndMutate against the encoding it was made from, so it applies
// only if the row did not change meanwhile, and a write that lands late
// cannot apply over a newer state (store.S9). When the row did change (a
// conflict: another process wrote it), or the outcome is unknown (an
// error), the row is read again and installed in memory: a write that
// landed is found there by its name (rowState.Write); otherwise change is
// called again on what the row holds, and its result written again,
// conditionally, so that at most one of the two lands. A change that
// finds its effect already there (a later write hid the name) returns
// errNoChange: every change function is written so. The new state is installed
// in memory only once it is durable. Errors: change's, ErrOutcomeUnknown
// when the row cannot be read back, or when any error ends the call while
// a write of it that failed may still land (the row last seen holding
// what that write was checked against), the store's for a conflict it
// cannot read past.
func (db *DB) writeRow(ctx context.Context, ds *dataset, change func(st *rowState) error) (rowState, error) {
	ds.rowMu.Lock()
	defer ds.rowMu.Unlock()
	ds.mu.Lock()
	base, raw := ds.st.clone(), ds.raw
	ds.mu.Unlock()
	nonce := fmt.Sprintf("%s#%d", db.owner, db.writes.Add(1))
	fresh := false // base was read from the store in this call
	// The writes that did not land: refused because the row had changed
	// (conflicts), or failed (failed, the last error lastErr).
	var conflicts, failed int
	var lastErr error
	// mayLand says a write of this call failed in a way that may still
	// apply it (store.S9) and the row was since seen holding its check
	// value, landed, still: an error returned then is an unknown outcome,
	// and the row is left for the keeper to fence.
	mayLand := false
	unknown := func(err error) error {
		if !mayLand {
			return err
		}
		db.unsettle(ds, base.Seq, raw)
		return fmt.Errorf("%w: %w (an earlier write of it failed and may still land)", ErrOutcomeUnknown, err)
	}
	for attempt := 0; ; attempt++ {
		next := base.clone()
		err := change(&next)
		if errors.Is(err, errNoChange) && fresh {
			return base, nil
		}
		if err != nil && !fresh {
			// Refused, or found done, on what memory holds, which another
			// process may have changed since: decide on the row as it is.
			if base, raw, err = db.rereadRow(ctx, ds); err != nil {
				return base, err
			}
			fresh = true
			continue
		}
		if err != nil {
			return base, unknown(err)
		}
		if next.Format == 0 {
			next.Format = metaFormat // a new row
		}
		next.Seq, next.Write = base.Seq+1, nonce
		enc, err := json.Marshal(next)
		if err != nil {
			return base, fmt.Errorf("snapshot: encoding the metadata of %s: %w", ds.name, err)
		}
		b := &store.Batch{Table: db.meta}
		if next.gone {
			b.DeleteVersion(datasetKey(ds.name), colState, 0)
		} else {
			b.Put(datasetKey(ds.name), colState, 0, enc)
		}
		db.hook("row:write", next.Seq)
		applied, werr := db.st.CheckAndMutate(ctx, b, store.Check{Column: colState, Value: raw})
		if werr == nil && applied {
			db.hook("row:written", next.Seq)
			if next.gone {
				enc = nil
			}
			ds.install(next, enc)
			ds.settleLanded()
			return next, nil
		}
		if werr != nil && !retryable(werr) {
			return base, unknown(fmt.Errorf("snapshot: writing the metadata of %s: %w", ds.name, werr))
		}
		if werr != nil {
			failed, lastErr = failed+1, werr
		} else {
			conflicts++
		}
		if attempt >= maxRowConflicts {
			err := rowWriteGaveUp(ds.name, conflicts, failed, lastErr)
			if werr != nil {
				// The last write may still land (store.S9): unknown
				// until a later write of the row fences it, and not
				// the store's "nothing happened" (its error as text).
				db.unsettle(ds, base.Seq, raw)
				return base, fmt.Errorf("%w: %v", ErrOutcomeUnknown, err)
			}
			return base, err
		}
		// Learn what the row holds now.
		now, nowRaw, err := db.rereadRow(ctx, ds)
		if err != nil {
			if werr != nil {
				db.unsettle(ds, base.Seq, raw)
				return base, fmt.Errorf("%w: writing the metadata of %s: %v; reading it back: %v", ErrOutcomeUnknown, ds.name, werr, err)
			}
			return base, err
		}
		if now.Write == nonce {
			// This write landed: when it reported an error, or late,
			// after a later attempt was refused for the row it changed.
			return now, nil
		}
		// A failed write may still land while the row holds what it was
		// checked against.
		mayLand = bytes.Equal(nowRaw, raw) && (werr != nil || mayLand)
		base, raw, fresh = now, nowRaw, true
	}
}

// rowWriteGaveUp is writeRow's error once it stops trying: it says how
// many writes the row refused because it had changed since it was read
// (by another process, or by an earlier write of this one that landed
// late) and how many failed, wrapping the last failure so that its kind
// (store.ErrUnavailable) stays visible.
func rowWriteGaveUp(name string, conflicts, failed int, lastErr error) error {
	switch {
	case failed == 0:
		return fmt.Errorf("snapshot: writing the metadata of %s: gave up after %d writes refused because the row had changed since it was read (a write of another process, or a late write of this one)", name, conflicts)
	case conflicts == 0:
		return fmt.Errorf("snapshot: writing the metadata of %s: gave up after %d failed writes: %w", name, failed, lastErr)
	}
	return fmt.Errorf("snapshot: writing the metadata of %s: gave up after %d failed writes and %d refused because the row had changed since it was read; the last failure: %w", name, failed, conflicts, lastErr)
}

// retryable reports whether a failed store call may have been applied
// or may succeed when made again: store.ErrUnavailable and a deadline.
func retryable(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// rereadRow reads ds's row again, retrying while the store is unavailable
// for up to resolveWait (even when ctx is done: the outcome of a write
// already sent must be learned), and installs what it read, version
// bodies included.
func (db *DB) rereadRow(ctx context.Context, ds *dataset) (rowState, []byte, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), db.opts.resolveWait)
	defer cancel()
	wait := 10 * time.Millisecond
	for {
		st, raw, found, err := db.readRow(ctx, ds.name)
		if err == nil {
			if !found {
				st, raw = rowState{}, nil
			}
			if err = db.loadBodies(ctx, ds, st); err == nil {
				ds.install(st, raw)
				ds.settle(st.Seq, raw)
				return st, raw, nil
			}
		}
		if !retryable(err) || ctx.Err() != nil {
			return rowState{}, nil, err
		}
		select {
		case <-ctx.Done():
			return rowState{}, nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// unsettle records that a write of ds's row checked against raw (the
// encoding of a state of sequence seq) failed in a way that may still
// apply it (store.S9): until the row is seen to hold something else, the
// write may land, and the operation that made it reported
// ErrOutcomeUnknown.
func (db *DB) unsettle(ds *dataset, seq int64, raw []byte) {
	ds.mu.Lock()
	ds.unsettled, ds.unsettledSeq, ds.unsettledRaw, ds.unsettledAt = true, seq, raw, db.opts.now()
	ds.mu.Unlock()
}

// settle clears ds's unsettled write once a read finds the row holding
// raw, of sequence seq, later than what that write was checked against,
// or no row (nil): a row never holds an encoding twice (each write has a
// new Seq and nonce), so the write can no longer apply, whether it landed
// or not. A read older than the check (one made before a write of this
// DB moved the row on, answered after another failed) proves nothing.
func (ds *dataset) settle(seq int64, raw []byte) {
	ds.mu.Lock()
	if ds.unsettled && !bytes.Equal(raw, ds.unsettledRaw) && (raw == nil || ds.unsettledRaw == nil || seq > ds.unsettledSeq) {
		ds.unsettled, ds.unsettledRaw = false, nil
	}
	ds.mu.Unlock()
}

// settleLanded clears ds's unsettled write after a write of the row
// landed: the row moved on from every encoding an older write checked.
func (ds *dataset) settleLanded() {
	ds.mu.Lock()
	ds.unsettled, ds.unsettledRaw = false, nil
	ds.mu.Unlock()
}

// fenceRow settles a write of ds's row whose outcome is unknown (the
// keeper's part of D9), as Tephra invalidates a transaction whose client
// vanished rather than wait for it: it reads the row, and if the row
// still holds what the write was checked against, writes it again
// unchanged but for its sequence, so that the late write, should it come,
// finds its check stale and applies nothing. What the operation did is
// then what the row shows. A write that would have created the row
// (checked against no row) cannot be fenced without creating the row; it
// stays unsettled until the store's MaxWriteDelay has passed.
func (db *DB) fenceRow(ctx context.Context, ds *dataset) error {
	ds.mu.Lock()
	unsettled, check, at := ds.unsettled, ds.unsettledRaw, ds.unsettledAt
	ds.mu.Unlock()
	if !unsettled {
		return nil
	}
	if _, _, err := db.rereadRow(ctx, ds); err != nil {
		return fmt.Errorf("snapshot: reading the metadata of %s to settle a write: %w", ds.name, err)
	}
	ds.mu.Lock()
	unsettled = ds.unsettled
	ds.mu.Unlock()
	if !unsettled {
		return nil
	}
	if check == nil {
		if lw, ok := db.st.(store.LateWriter); !ok || db.opts.now().Sub(at) > lw.MaxWriteDelay() {
			ds.settleLanded()
		}
		return nil
	}
	if _, err := db.writeRow(ctx, ds, func(*rowState) error { return nil }); err != nil {
		return fmt.Errorf("snapshot: settling a write of the metadata of %s: %w", ds.name, err)
	}
	return nil
}
