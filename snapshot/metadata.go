package snapshot

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// loadInto reads every dataset's row (keys.go) and the version rows of its
// kept versions into datasets, at Open and at each refresh. Each row is
// one consistent view of its dataset (W2); version rows never change once
// listed. It returns the names of the rows it read.
func (db *DB) loadInto(ctx context.Context, datasets map[string]*dataset) (map[string]bool, error) {
	it, err := db.st.Scan(ctx, db.meta, store.ScanOptions{Start: prefixDataset, End: prefixEnd(prefixDataset),
		ReadOptions: store.ReadOptions{Columns: [][]byte{colState}, MaxVersions: 1}})
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading dataset metadata: %w", err)
	}
	type row struct {
		st  rowState
		raw []byte
	}
	var rows []row
	var names []string
	for it.Next() {
		c := it.Cell()
		if c.Kind != store.KindPut || string(c.Column) != string(colState) {
			continue
		}
		name := string(c.Row[len(prefixDataset):])
		st, err := decodeState(name, c.Value)
		if err != nil {
			it.Close()
			return nil, err
		}
		rows = append(rows, row{st, append([]byte{}, c.Value...)})
		names = append(names, name)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("snapshot: reading dataset metadata: %w", err)
	}
	seen := make(map[string]bool, len(names))
	for i, name := range names {
		seen[name] = true
		ds := datasets[name]
		if ds == nil {
			ds = newDataset(name, db.owner)
			datasets[name] = ds
		}
		if err := db.loadBodies(ctx, ds, rows[i].st); err != nil {
			return nil, err
		}
		ds.install(rows[i].st, rows[i].raw)
	}
	return seen, nil
}

// checkFormat reads the storage format the store records (keys.go,
// metaFormat) and returns it, 0 when none is: a new store, or one of
// format 1, whose metadata a writer migrates here (migrate.go). The data
// of a store of format 2 is migrated once its datasets are loaded
// (migrateRows), and format 3 recorded then (recordFormat). A read-only DB
// refuses formats 1 and 2, which a writer must migrate first, and every DB
// refuses a format it does not know.
func (db *DB) checkFormat(ctx context.Context) (int64, error) {
	cells, err := db.st.Get(ctx, db.meta, keyFormat, store.ReadOptions{Columns: [][]byte{colV}, MaxVersions: 1})
	if err != nil {
		return 0, fmt.Errorf("reading the storage format: %w", err)
	}
	for _, c := range cells {
		if c.Kind != store.KindPut || string(c.Column) != string(colV) {
			continue
		}
		if len(c.Value) != 8 {
			return 0, fmt.Errorf("%w: storage format of %d bytes", ErrCorrupt, len(c.Value))
		}
		switch f := int64(binary.BigEndian.Uint64(c.Value)); {
		case f == formatColumnCells && db.opts.ReadOnly:
			return 0, fmt.Errorf("%w: the store is of storage format %d: open a writer first, which migrates it to %d", ErrReadOnly, f, metaFormat)
		case f != metaFormat && f != formatColumnCells:
			return 0, fmt.Errorf("%w: storage format %d, this code reads %d and %d", ErrCorrupt, f, formatColumnCells, metaFormat)
		default:
			return f, nil
		}
	}
	if db.opts.ReadOnly {
		if old, err := db.hasFormat1(ctx); err != nil || old {
			return 0, fmt.Errorf("%w: the store holds metadata format 1: open a writer first, which migrates it (%v)", ErrReadOnly, err)
		}
		return 0, nil
	}
	return 0, db.migrate(ctx)
}

// recordFormat records format 3 in a store that recorded format from (0:
// none), once every dataset is of format 3.
func (db *DB) recordFormat(ctx context.Context, from int64) error {
	b := &store.Batch{Table: db.meta}
	b.Put(keyFormat, colV, 0, be64(metaFormat))
	check := store.Check{Column: colV}
	if from != 0 {
		check.Value = be64(from)
	}
	applied, err := db.st.CheckAndMutate(ctx, b, check)
	if err != nil {
		return fmt.Errorf("recording the storage format: %w", err)
	}
	if !applied {
		// Another writer recorded it first: it must be this format.
		if f, err := db.checkFormat(ctx); err != nil || f != metaFormat {
			return fmt.Errorf("%w: the storage format changed while this process migrated the store (%v)", ErrCorrupt, err)
		}
	}
	return nil
}
