package snapshot

import (
	"context"
	"fmt"
)

// Rollback makes the content of an older kept version current again
// without losing history, as git revert does (and as Iceberg keeps the
// later snapshots in its history): it commits a new version whose rows
// and schema equal those of version to, by a run whose source is that
// version, so it writes only the cells that differ from the current
// version. The versions after to stay listed, readable and diffable until
// retention expires them; the new version's RestoredFrom says which
// version it restored, and its checksum equals that version's (D6).
// Readers already open keep what they pinned. Errors: ErrDatasetNotFound,
// ErrVersionNotKept, ErrRunInProgress (a run, GC or drop holds the
// dataset), and those of a run.
func (db *DB) Rollback(ctx context.Context, dataset string, to int64) (VersionInfo, error) {
	ds, err := db.acquireWritable(ctx, dataset, "rollback")
	if err != nil {
		return VersionInfo{}, err
	}
	ds.mu.Lock()
	target := ds.versionLocked(to)
	cfg := DatasetConfig{Name: dataset, Retention: ds.cfg.Retention, Guard: ds.cfg.Guard}
	current := ds.current
	ds.mu.Unlock()
	if target == nil {
		ds.release()
		return VersionInfo{}, versionNotKept(dataset, to, current)
	}
	// The source: the target version, pinned (G2) for the whole run.
	rd, err := db.Reader(ctx, dataset, At{Version: to})
	if err != nil {
		ds.release()
		return VersionInfo{}, err
	}
	defer rd.Close()
	// The new version's source is where the content came from, without
	// the run: no run made it, and RestoredFrom says what did.
	src := target.Source
	src.RunID = ""
	r, err := db.beginAcquired(ctx, ds, cfg, RunOptions{Schema: target.Schema, Source: src, Force: true}, "rollback", to)
	if err != nil {
		ds.release()
		return VersionInfo{}, fmt.Errorf("snapshot: rolling %s back to %d: %w", dataset, to, err)
	}
	// From here the run holds the dataset: Commit or Abort frees it.
	it, err := rd.Scan(ctx, ScanOptions{})
	if err != nil {
		r.Abort(context.WithoutCancel(ctx), err.Error())
		return VersionInfo{}, fmt.Errorf("snapshot: rolling %s back to %d: %w", dataset, to, err)
	}
	for it.Next() {
		if err := r.Put(ctx, it.Row().Values); err != nil {
			it.Close()
			r.Abort(context.WithoutCancel(ctx), err.Error())
			return VersionInfo{}, fmt.Errorf("snapshot: rolling %s back to %d: %w", dataset, to, err)
		}
	}
	if err := it.Close(); err != nil {
		r.Abort(context.WithoutCancel(ctx), err.Error())
		return VersionInfo{}, fmt.Errorf("snapshot: rolling %s back to %d: %w", dataset, to, err)
	}
	vi, err := r.Commit(ctx)
	if err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: rolling %s back to %d: %w", dataset, to, err)
	}
	db.logger.Info("dataset rolled back", "dataset", dataset, "version", vi.Version, "restored_from", to)
	return vi, nil
}
