package snapshot

// Opening a store written with metadata format 1 (keys.go): the dataset's
// current version, expired ids, configuration, tags and transactions were
// rows and columns of their own, written by batches that could land in
// part. A writer's Open moves each dataset into its one row of format 2,
// raises the id counter above every id format 1 used, and deletes the old
// rows; then it migrates the data to format 3 (migrate_rows.go) and records
// format 3 (metadata.go). Each step can be done again: a crash in the
// middle leaves no format recorded, and the next Open skips the datasets
// already moved.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// format1Dataset is what format 1 kept of a dataset in its own row.
type format1Dataset struct {
	cfg      []byte
	current  int64
	expired  []int64
	migrated bool // the row holds a state of format 2 already
}

// hasFormat1 reports whether the store holds metadata of format 1.
func (db *DB) hasFormat1(ctx context.Context) (bool, error) {
	f1, err := txn.ReadFormat1(ctx, db.st, db.meta)
	if err != nil || f1.Found {
		return f1.Found, err
	}
	old, err := db.readFormat1Datasets(ctx)
	return len(old) > 0, err
}

// readFormat1Datasets reads the dataset rows that hold columns of format 1.
func (db *DB) readFormat1Datasets(ctx context.Context) (map[string]*format1Dataset, error) {
	it, err := db.st.Scan(ctx, db.meta, store.ScanOptions{Start: prefixDataset, End: prefixEnd(prefixDataset)})
	if err != nil {
		return nil, fmt.Errorf("reading format-1 datasets: %w", err)
	}
	out := map[string]*format1Dataset{}
	state := map[string]bool{}
	for it.Next() {
		c := it.Cell()
		if c.Kind != store.KindPut {
			continue
		}
		name := string(c.Row[len(prefixDataset):])
		if bytes.Equal(c.Column, colState) {
			state[name] = true
			continue
		}
		d := out[name]
		if d == nil {
			d = &format1Dataset{}
			out[name] = d
		}
		switch {
		case bytes.Equal(c.Column, colCfg1):
			d.cfg = append([]byte{}, c.Value...)
		case bytes.Equal(c.Column, colCur1):
			if len(c.Value) != 8 {
				it.Close()
				return nil, fmt.Errorf("%w: current version of %s", ErrCorrupt, name)
			}
			d.current = int64(binary.BigEndian.Uint64(c.Value))
		case bytes.Equal(c.Column, colExp1):
			ids, ok := decodeIDs(c.Value)
			if !ok {
				it.Close()
				return nil, fmt.Errorf("%w: expired versions of %s", ErrCorrupt, name)
			}
			d.expired = ids
		}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("reading format-1 datasets: %w", err)
	}
	for name, d := range out {
		d.migrated = state[name]
	}
	return out, nil
}

// migrate moves a store of format 1 to format 2; on a store without
// format 1 it does nothing.
func (db *DB) migrate(ctx context.Context) error {
	f1, err := txn.ReadFormat1(ctx, db.st, db.meta)
	if err != nil {
		return err
	}
	old, err := db.readFormat1Datasets(ctx)
	if err != nil {
		return err
	}
	if !f1.Found && len(old) == 0 {
		return nil
	}
	now := db.opts.now().UTC()
	// Every id format 1 used: its mark, its transactions, and (which its
	// Open forgot) the committed versions.
	maxID := max(f1.HighWater-1, f1.MaxID)
	cleanup := &store.Batch{Table: db.meta, Sync: true}
	cleanup.DeleteVersion(keyLease1, colV, 0)
	names := make([]string, 0, len(old))
	for name := range old {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		d := old[name]
		st, tags, err := db.format1State(ctx, name, d, f1, now)
		if err != nil {
			return err
		}
		maxID = max(maxID, st.Top)
		if !d.migrated {
			enc, err := json.Marshal(st)
			if err != nil {
				return err
			}
			b := &store.Batch{Table: db.meta}
			b.Put(datasetKey(name), colState, 0, enc)
			if _, err := db.st.CheckAndMutate(ctx, b, store.Check{Column: colState}); err != nil {
				return fmt.Errorf("moving %s to metadata format 2: %w", name, err)
			}
			// Scratch rows of format 1 have no run prefix: clear them.
			for p := 0; p < st.Config.Partitions; p++ {
				if err := db.st.DeleteRange(ctx, scratchTable(name, p), nil, nil); err != nil {
					return fmt.Errorf("clearing the scratch table of %s: %w", name, err)
				}
			}
		}
		for _, col := range [][]byte{colCfg1, colCur1, colExp1} {
			cleanup.DeleteVersion(datasetKey(name), col, 0)
		}
		for _, tag := range tags {
			cleanup.DeleteVersion(append(tagPrefix1(name), tag...), colV, 0)
		}
	}
	if err := db.ids.Raise(ctx, maxID); err != nil {
		return err
	}
	if err := db.st.Apply(ctx, cleanup); err != nil {
		return fmt.Errorf("deleting format-1 metadata: %w", err)
	}
	if err := txn.DeleteFormat1(ctx, db.st, db.meta, f1); err != nil {
		return err
	}
	db.logger.Info("metadata migrated from format 1 to 2", "datasets", len(names), "ids_from", maxID+1)
	return nil
}

// format1State builds the row state of format 2 of a dataset of format 1
// (for a dataset already moved, only Top matters), and returns its tag
// names. Its transactions in progress belong to a process that is gone:
// they become invalid (txn.I5). Its expired ids of format 1 (versions a
// rollback had to invalidate too) have no use in format 2, where a
// rollback invalidates nothing; they count for Top.
func (db *DB) format1State(ctx context.Context, name string, d *format1Dataset, f1 txn.Format1, now time.Time) (rowState, []string, error) {
	st := rowState{Format: formatColumnCells, Current: d.current, Tags: map[string]int64{}}
	if d.cfg != nil {
		if err := json.Unmarshal(d.cfg, &st.Config); err != nil {
			return st, nil, fmt.Errorf("%w: config of %s: %v", ErrCorrupt, name, err)
		}
	}
	if st.Config.Partitions <= 0 {
		st.Config.Partitions = 1
	}
	p := versionPrefix(name)
	it, err := db.st.Scan(ctx, db.meta, store.ScanOptions{Start: p, End: prefixEnd(p)})
	if err != nil {
		return st, nil, fmt.Errorf("reading the versions of %s: %w", name, err)
	}
	for it.Next() {
		c := it.Cell()
		if c.Kind != store.KindPut || len(c.Row) != len(p)+8 {
			continue
		}
		var vi VersionInfo
		if err := json.Unmarshal(c.Value, &vi); err != nil {
			it.Close()
			return st, nil, fmt.Errorf("%w: a version of %s: %v", ErrCorrupt, name, err)
		}
		st.Versions = append(st.Versions, versionRef{Version: int64(binary.BigEndian.Uint64(c.Row[len(p):])), CommittedAt: vi.CommittedAt})
	}
	if err := it.Close(); err != nil {
		return st, nil, fmt.Errorf("reading the versions of %s: %w", name, err)
	}
	slices.SortFunc(st.Versions, func(a, b versionRef) int { return cmp.Compare(a.Version, b.Version) })
	for _, id := range f1.Invalid[name] {
		st.Txns.Invalid = append(st.Txns.Invalid, txn.Entry{ID: id, At: now})
	}
	for _, id := range f1.InProgress[name] {
		st.Txns.Invalid = append(st.Txns.Invalid, txn.Entry{ID: id, At: now})
	}
	slices.SortFunc(st.Txns.Invalid, func(a, b txn.Entry) int { return cmp.Compare(a.ID, b.ID) })
	// A version whose transaction is invalid was not committed (a commit,
	// or a rollback, of format 1 that landed in part): not kept.
	st.Versions = slices.DeleteFunc(st.Versions, func(r versionRef) bool { return st.Txns.IsInvalid(r.Version) })
	var tags []string
	tp := tagPrefix1(name)
	it, err = db.st.Scan(ctx, db.meta, store.ScanOptions{Start: tp, End: prefixEnd(tp)})
	if err != nil {
		return st, nil, fmt.Errorf("reading the tags of %s: %w", name, err)
	}
	for it.Next() {
		c := it.Cell()
		if c.Kind != store.KindPut || len(c.Value) != 8 {
			continue
		}
		tag := string(c.Row[len(tp):])
		tags = append(tags, tag)
		if v := int64(binary.BigEndian.Uint64(c.Value)); st.kept(v) {
			st.Tags[tag] = v
		}
	}
	if err := it.Close(); err != nil {
		return st, nil, fmt.Errorf("reading the tags of %s: %w", name, err)
	}
	st.Top = st.Current
	for _, r := range st.Versions {
		st.Top = max(st.Top, r.Version)
	}
	for _, id := range d.expired {
		st.Top = max(st.Top, id)
	}
	for _, e := range st.Txns.Invalid {
		st.Top = max(st.Top, e.ID)
	}
	if !st.kept(st.Current) {
		// A commit of format 1 that landed in part: the current version
		// without its version row, or with its transaction still in
		// progress. The last kept version is current.
		st.Current = 0
		if n := len(st.Versions); n > 0 {
			st.Current = st.Versions[n-1].Version
		}
	}
	return st, tags, nil
}
