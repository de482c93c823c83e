package snapshot

import (
	"context"
	"fmt"
	"slices"

	"github.com/snapstore/snapstore/store"
)

// DropDataset deletes a dataset, all its versions and cells, and prunes
// its invalid transactions. ErrRunInProgress while a run, GC or rollback
// holds it; ErrDatasetNotFound. Readers still open get ErrDatasetNotFound.
func (db *DB) DropDataset(ctx context.Context, name string) error {
	ds, err := db.acquireWritable(ctx, name, "drop")
	if err != nil {
		return err
	}
	defer ds.release()
	ds.mu.Lock()
	parts := ds.cfg.Partitions
	format1Left := ds.cfg.Format1Left || ds.cfg.Format < dataFormat
	versions := slices.Clone(ds.versions)
	tags := make([]string, 0, len(ds.tags))
	for t := range ds.tags {
		tags = append(tags, t)
	}
	ds.mu.Unlock()
	// Cells first, metadata last: a new dataset of the same name would see
	// cells left by this one's committed transactions (their ids are below
	// its versions), so they must be gone before the name is free. A crash
	// in between leaves the dataset listed with cells missing; dropping it
	// again finishes the job.
	b := &store.Batch{Table: db.meta, Sync: true}
	b.DeleteVersion(datasetKey(name), colCfg, 0)
	b.DeleteVersion(datasetKey(name), colCur, 0)
	b.DeleteVersion(datasetKey(name), colExp, 0)
	for _, vi := range versions {
		b.DeleteVersion(versionKey(name, vi.Version), colInfo, 0)
		b.DeleteVersion(versionKey(name, vi.Version), colDigest, 0)
	}
	for _, t := range tags {
		b.DeleteVersion(tagKey(name, t), colV, 0)
	}
	for p := 0; p < parts; p++ {
		if err := db.st.DeleteRange(ctx, dataTable(name, p), nil, nil); err != nil {
			return fmt.Errorf("snapshot: dropping %s: %w", name, err)
		}
		if format1Left {
			if err := db.st.DeleteRange(ctx, format1Table(name, p), nil, nil); err != nil {
				return fmt.Errorf("snapshot: dropping %s: %w", name, err)
			}
		}
	}
	db.clearScratch(ctx, ds, parts)
	if err := db.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("snapshot: dropping %s: %w", name, err)
	}
	if err := db.txm.Prune(ctx, db.txm.Invalid(name)); err != nil {
		db.logger.Warn("pruning invalid transactions of a dropped dataset", "dataset", name, "err", err)
	}
	db.mu.Lock()
	delete(db.datasets, name)
	db.mu.Unlock()
	ds.mu.Lock()
	ds.dropped = true
	ds.mu.Unlock()
	db.logger.Info("dataset dropped", "dataset", name)
	return nil
}
