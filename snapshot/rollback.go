package snapshot

import (
	"context"
	"fmt"
	"slices"

	"github.com/snapstore/snapstore/store"
)

// Rollback makes an older kept version current again, in one durable
// metadata write; the versions after it (kept ones, and expired ones whose
// cells may still be visible, doc.go G7) become invalid transactions, so
// no later read or run sees their cells, and tags on them are removed.
// Readers already open keep what they pinned. Errors: ErrDatasetNotFound,
// ErrVersionNotKept, ErrRunInProgress (a run, GC or drop holds the
// dataset).
func (db *DB) Rollback(ctx context.Context, dataset string, to int64) (VersionInfo, error) {
	ds, err := db.acquireWritable(ctx, dataset, "rollback")
	if err != nil {
		return VersionInfo{}, err
	}
	defer ds.release()
	ds.mu.Lock()
	target := ds.versionLocked(to)
	if target == nil {
		ds.mu.Unlock()
		return VersionInfo{}, fmt.Errorf("%w: %s version %d", ErrVersionNotKept, dataset, to)
	}
	var later []int64
	for _, vi := range ds.versions {
		if vi.Version > to {
			later = append(later, vi.Version)
		}
	}
	// Expired versions after the target may still have visible cells
	// (G7): they become invalid too.
	var keepExpired []int64
	for _, v := range ds.expired {
		if v > to {
			later = append(later, v)
		} else {
			keepExpired = append(keepExpired, v)
		}
	}
	var tags []string
	for t, v := range ds.tags {
		if v > to {
			tags = append(tags, t)
		}
	}
	ds.mu.Unlock()
	b := &store.Batch{Table: db.meta}
	b.Put(datasetKey(dataset), colCur, 0, be64(to))
	b.Put(datasetKey(dataset), colExp, 0, encodeIDs(keepExpired))
	for _, v := range later {
		b.DeleteVersion(versionKey(dataset, v), colInfo, 0)
		b.DeleteVersion(versionKey(dataset, v), colDigest, 0)
	}
	for _, t := range tags {
		b.DeleteVersion(tagKey(dataset, t), colV, 0)
	}
	// One durable write: the later versions become invalid transactions
	// (txn.I4) and the target becomes current.
	if err := db.txm.Invalidate(ctx, dataset, later, b); err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: rolling %s back to %d: %w", dataset, to, err)
	}
	ds.mu.Lock()
	ds.current = to
	ds.expired = keepExpired
	ds.versions = slices.DeleteFunc(ds.versions, func(vi *VersionInfo) bool { return vi.Version > to })
	for _, t := range tags {
		delete(ds.tags, t)
	}
	info := ds.infoLocked(target)
	ds.mu.Unlock()
	db.logger.Info("dataset rolled back", "dataset", dataset, "version", to, "invalidated", len(later))
	return info, nil
}
