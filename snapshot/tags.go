package snapshot

import (
	"context"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// Tag names a kept version; tagged versions are exempt from GC (G1).
// Re-tagging moves the tag. ErrVersionNotKept; ErrInvalidArgument for a
// bad tag name (validName).
func (db *DB) Tag(ctx context.Context, dataset, tag string, version int64) error {
	if err := validName("tag", tag); err != nil {
		return err
	}
	ds, err := db.lookupWritable(ctx, dataset)
	if err != nil {
		return err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.versionLocked(version) == nil {
		return fmt.Errorf("%w: %s version %d", ErrVersionNotKept, dataset, version)
	}
	b := &store.Batch{Table: db.meta, Sync: true}
	b.Put(tagKey(dataset, tag), colV, 0, be64(version))
	if err := db.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("snapshot: tagging %s version %d: %w", dataset, version, err)
	}
	ds.tags[tag] = version
	return nil
}

// Untag removes a tag. ErrTagNotFound.
func (db *DB) Untag(ctx context.Context, dataset, tag string) error {
	ds, err := db.lookupWritable(ctx, dataset)
	if err != nil {
		return err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if _, ok := ds.tags[tag]; !ok {
		return fmt.Errorf("%w: %s tag %q", ErrTagNotFound, dataset, tag)
	}
	b := &store.Batch{Table: db.meta, Sync: true}
	b.DeleteVersion(tagKey(dataset, tag), colV, 0)
	if err := db.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("snapshot: untagging %s: %w", dataset, err)
	}
	delete(ds.tags, tag)
	return nil
}
