package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/snapstore/snapstore/store"
)

// Commit finishes the run (D3): writes delete markers for rows not seen,
// checks the guards, flushes and syncs the data, then makes the run's id
// the dataset's current version in one atomic durable metadata write. On
// any error the run is aborted and the current version is unchanged.
func (r *Run) Commit(ctx context.Context) (vi VersionInfo, err error) {
	if err := r.usable(); err != nil {
		return VersionInfo{}, err
	}
	start := time.Now()
	defer func() {
		if err != nil && !r.done {
			if aerr := r.Abort(context.WithoutCancel(ctx), err.Error()); aerr != nil {
				err = errors.Join(err, aerr)
			}
		}
	}()
	for _, p := range r.parts {
		if err := r.flushSeen(ctx, p); err != nil {
			return VersionInfo{}, err
		}
	}
	if err := r.syncWrites(ctx, r.parts, false); err != nil {
		return VersionInfo{}, err
	}
	r.hook("commit:flushed", r.stats.Rows)
	// Delete markers for rows not seen (D5), and duplicate keys.
	for _, p := range r.parts {
		if err := r.markDeleted(ctx, p); err != nil {
			return VersionInfo{}, err
		}
	}
	if err := r.syncWrites(ctx, r.parts, true); err != nil {
		return VersionInfo{}, err
	}
	r.closeIters()
	r.hook("commit:deleted", r.stats.Deleted)
	if err := r.checkGuards(); err != nil {
		return VersionInfo{}, err
	}
	if st := r.stats; r.opts.VerifyUnchanged && r.prev != nil && st.Inserted+st.Updated+st.Deleted == 0 && sameSchema(r.prev.Schema, r.opts.Schema) {
		return r.verifyInstead(ctx)
	}
	// Data first (flushed, not yet durable), then the commit record.
	if err := r.db.st.Sync(ctx); err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: syncing %s txn %d: %w", r.ds.name, r.id, err)
	}
	r.hook("commit:synced", 0)
	vi = VersionInfo{
		Dataset: r.ds.name, Version: r.id, CommittedAt: r.db.opts.now().UTC(),
		Source: r.opts.Source, Stats: r.statsNow(), Schema: r.opts.Schema,
	}
	enc, err := json.Marshal(vi)
	if err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: encoding version info: %w", err)
	}
	if err := r.db.writable(); err != nil { // W3
		return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", r.ds.name, r.id, err)
	}
	b := &store.Batch{Table: r.db.meta}
	b.Put(versionKey(r.ds.name, r.id), colInfo, 0, enc)
	if r.srcDigest != nil {
		b.Put(versionKey(r.ds.name, r.id), colDigest, 0, r.srcDigest)
	}
	b.Put(datasetKey(r.ds.name), colCur, 0, be64(r.id))
	if err := r.db.txm.Commit(ctx, r.id, b); err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", r.ds.name, r.id, err)
	}
	r.hook("commit:committed", r.id)
	r.endWrites()
	r.publishStats()
	r.done = true
	ds := r.ds
	ds.mu.Lock()
	ds.current = r.id
	stored := vi
	ds.versions = append(ds.versions, &stored)
	ds.writer, ds.run = "", nil
	vi = ds.infoLocked(&stored)
	ds.mu.Unlock()
	r.db.clearScratchIfDirty(context.WithoutCancel(ctx), ds, r.nparts)
	r.hook("commit:cleared", r.id)
	r.db.metrics.runs.WithLabelValues("committed").Inc()
	r.db.metrics.commitSecs.Observe(time.Since(start).Seconds())
	r.db.logger.Info("run committed", "dataset", ds.name, "txn", r.id, "version", r.id,
		"rows", vi.Stats.Rows, "inserted", vi.Stats.Inserted, "updated", vi.Stats.Updated,
		"deleted", vi.Stats.Deleted, "bytes_written", vi.Stats.BytesWritten)
	return vi, nil
}
