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

// checkFormat reads the metadata format of the store: a store without one
// is new, or written with format 1, which a writer migrates (migrate.go)
// before it records format 2; a read-only DB refuses format 1, and every
// DB refuses a format it does not know.
func (db *DB) checkFormat(ctx context.Context) error {
	cells, err := db.st.Get(ctx, db.meta, keyFormat, store.ReadOptions{Columns: [][]byte{colV}, MaxVersions: 1})
	if err != nil {
		return fmt.Errorf("reading the metadata format: %w", err)
	}
	for _, c := range cells {
		if c.Kind != store.KindPut || string(c.Column) != string(colV) {
			continue
		}
		if len(c.Value) != 8 {
			return fmt.Errorf("%w: metadata format of %d bytes", ErrCorrupt, len(c.Value))
		}
		if f := int64(binary.BigEndian.Uint64(c.Value)); f != metaFormat {
			return fmt.Errorf("%w: metadata format %d, this code reads %d", ErrCorrupt, f, metaFormat)
		}
		return nil
	}
	if db.opts.ReadOnly {
		if old, err := db.hasFormat1(ctx); err != nil || old {
			return fmt.Errorf("%w: the store holds metadata format 1: open a writer first, which migrates it (%v)", ErrReadOnly, err)
		}
		return nil
	}
	if err := db.migrate(ctx); err != nil {
		return err
	}
	b := &store.Batch{Table: db.meta}
	b.Put(keyFormat, colV, 0, be64(metaFormat))
	if _, err := db.st.CheckAndMutate(ctx, b, store.Check{Column: colV}); err != nil {
		return fmt.Errorf("recording the metadata format: %w", err)
	}
	return nil
}
