package snapshot

// A version's row (keys.go): its VersionInfo (the version's body), the
// source's digest (verify.go) and those of its tables (tables.go), written
// before the dataset's row lists the version (D9). The body never changes
// once listed (W2): a DB reads it once, when it first finds the version
// listed, and keeps it with the dataset. A verification may write the
// digest again (verify.go).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// loadBodies reads the version rows of the versions st lists that ds has
// not read yet: one Get each, or one scan of the dataset's version rows
// when more than a few are missing (at Open). A dataset being dropped
// needs none.
func (db *DB) loadBodies(ctx context.Context, ds *dataset, st rowState) error {
	if st.Dropping != nil {
		return nil // gone for readers; its version rows are being deleted
	}
	var missing []int64
	ds.mu.Lock()
	for _, ref := range st.Versions {
		if _, ok := ds.bodies[ref.Version]; !ok {
			missing = append(missing, ref.Version)
		}
	}
	ds.mu.Unlock()
	got := map[int64]*VersionInfo{}
	if len(missing) > 4 {
		p := versionPrefix(ds.name)
		it, err := db.st.Scan(ctx, db.meta, store.ScanOptions{Start: p, End: prefixEnd(p),
			ReadOptions: store.ReadOptions{Columns: [][]byte{colInfo}, MaxVersions: 1}})
		if err != nil {
			return fmt.Errorf("snapshot: reading the versions of %s: %w", ds.name, err)
		}
		for it.Next() {
			c := it.Cell()
			if c.Kind != store.KindPut || len(c.Row) != len(p)+8 {
				continue
			}
			vi := new(VersionInfo)
			if err := json.Unmarshal(c.Value, vi); err != nil {
				it.Close()
				return fmt.Errorf("%w: a version of %s: %v", ErrCorrupt, ds.name, err)
			}
			got[int64(binary.BigEndian.Uint64(c.Row[len(p):]))] = vi
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("snapshot: reading the versions of %s: %w", ds.name, err)
		}
	}
	for _, v := range missing {
		vi := got[v]
		if vi == nil {
			var err error
			if vi, err = db.readBody(ctx, ds.name, v); err != nil {
				return err
			}
		}
		ds.mu.Lock()
		ds.bodies[v] = vi
		ds.mu.Unlock()
	}
	return nil
}

// readBody reads the version row of version v of dataset name.
func (db *DB) readBody(ctx context.Context, name string, v int64) (*VersionInfo, error) {
	cells, err := db.st.Get(ctx, db.meta, versionKey(name, v), store.ReadOptions{Columns: [][]byte{colInfo}, MaxVersions: 1})
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading version %d of %s: %w", v, name, err)
	}
	for _, c := range cells {
		if string(c.Column) == string(colInfo) && c.Kind == store.KindPut {
			vi := new(VersionInfo)
			if err := json.Unmarshal(c.Value, vi); err != nil {
				return nil, fmt.Errorf("%w: version %d of %s: %v", ErrCorrupt, v, name, err)
			}
			return vi, nil
		}
	}
	return nil, fmt.Errorf("%w: %s lists version %d, whose version row is missing", ErrCorrupt, name, v)
}

// writeBody writes the version row of vi, with the source's digest when
// not nil (verify.go) and those of its tables (by table number, tables.go),
// before a state lists it; it is idempotent, so a failure is tried again
// a few times.
func (db *DB) writeBody(ctx context.Context, vi *VersionInfo, digest []byte, tableDigests map[int][]byte) error {
	enc, err := json.Marshal(vi)
	if err != nil {
		return fmt.Errorf("snapshot: encoding version info: %w", err)
	}
	b := &store.Batch{Table: db.meta}
	b.Put(versionKey(vi.Dataset, vi.Version), colInfo, 0, enc)
	if digest != nil {
		b.Put(versionKey(vi.Dataset, vi.Version), colDigest, 0, digest)
	}
	for n, d := range tableDigests {
		b.Put(versionKey(vi.Dataset, vi.Version), tableDigestColumn(n), 0, d)
	}
	for attempt := 0; ; attempt++ {
		err = db.st.MutateRow(ctx, b)
		if err == nil || !retryable(err) || attempt == 2 || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("snapshot: writing version %d of %s: %w", vi.Version, vi.Dataset, err)
	}
	return nil
}
