package snapshot

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/snapstore/snapstore/store"
)

// loadInto reads every dataset's metadata (keys.go: config, current
// version, expired versions, kept versions, tags) from the metadata table
// into datasets, at Open and at each refresh of a read-only DB.
func (db *DB) loadInto(ctx context.Context, datasets map[string]*dataset) error {
	get := func(prefix []byte, fn func(c store.Cell) error) error {
		it, err := db.st.Scan(ctx, db.meta, store.ScanOptions{Start: prefix, End: prefixEnd(prefix)})
		if err != nil {
			return err
		}
		for it.Next() {
			c := it.Cell()
			if c.Kind != store.KindPut {
				continue
			}
			if err := fn(c); err != nil {
				it.Close()
				return err
			}
		}
		return it.Close()
	}
	err := get(prefixDataset, func(c store.Cell) error {
		name := string(c.Row[len(prefixDataset):])
		ds := datasets[name]
		if ds == nil {
			ds = newDataset(name)
			datasets[name] = ds
		}
		switch {
		case bytes.Equal(c.Column, colCfg):
			if err := json.Unmarshal(c.Value, &ds.cfg); err != nil {
				return fmt.Errorf("%w: config of %s: %v", ErrCorrupt, name, err)
			}
		case bytes.Equal(c.Column, colExp):
			ids, ok := decodeIDs(c.Value)
			if !ok {
				return fmt.Errorf("%w: expired versions of %s", ErrCorrupt, name)
			}
			ds.expired = ids
		case bytes.Equal(c.Column, colCur):
			if len(c.Value) != 8 {
				return fmt.Errorf("%w: current version of %s", ErrCorrupt, name)
			}
			ds.current = int64(binary.BigEndian.Uint64(c.Value))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ds := range datasets {
		if ds.cfg.Partitions <= 0 {
			ds.cfg.Partitions = 1
		}
		err := get(versionPrefix(ds.name), func(c store.Cell) error {
			if !bytes.Equal(c.Column, colInfo) {
				return nil // the digest, read when asked for (verify.go)
			}
			vi := new(VersionInfo)
			if err := json.Unmarshal(c.Value, vi); err != nil {
				return fmt.Errorf("%w: version of %s: %v", ErrCorrupt, ds.name, err)
			}
			ds.versions = append(ds.versions, vi)
			return nil
		})
		if err != nil {
			return err
		}
		slices.SortFunc(ds.versions, func(a, b *VersionInfo) int { return cmp.Compare(a.Version, b.Version) })
		err = get(tagPrefix(ds.name), func(c store.Cell) error {
			if len(c.Value) != 8 {
				return fmt.Errorf("%w: tag of %s", ErrCorrupt, ds.name)
			}
			ds.tags[string(c.Row[len(tagPrefix(ds.name)):])] = int64(binary.BigEndian.Uint64(c.Value))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
