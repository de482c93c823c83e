package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	if target.Tables != nil {
		return db.rollbackTables(ctx, ds, cfg, target)
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

// rollbackTables is Rollback of a dataset of named tables, which the
// caller acquired: one run whose tables are those of target, each read
// from it, and whose other tables are dropped; a table target holds that
// the current version lacks comes back under a new number (tables.go).
func (db *DB) rollbackTables(ctx context.Context, ds *dataset, cfg DatasetConfig, target *VersionInfo) (VersionInfo, error) {
	dataset, to := ds.name, target.Version
	fail := func(err error) (VersionInfo, error) {
		return VersionInfo{}, fmt.Errorf("snapshot: rolling %s back to %d: %w", dataset, to, err)
	}
	// A table replaced since the target (dropped and added again, with
	// another key) cannot take the target's rows under its name: the
	// run's table keeps the current one's key (planTables).
	ds.mu.Lock()
	current := ds.versionLocked(ds.current)
	ds.mu.Unlock()
	if current != nil {
		for _, t := range target.Tables {
			if c, ok := current.Table(t.Name); ok && c.Number != t.Number && !slices.Equal(c.Schema.Key, t.Schema.Key) {
				ds.release()
				return fail(fmt.Errorf("%w: %q: version %d holds a table of that name keyed by %s, the current version %d another one keyed by %s; a rollback cannot bring back the old table's rows under its name: read or export them at version %d",
					ErrTableReplaced, t.Name, to, strings.Join(t.Schema.Key, ", "), current.Version, strings.Join(c.Schema.Key, ", "), to))
			}
		}
	}
	src := target.Source
	src.RunID = ""
	opts := TablesRunOptions{Source: src, Force: true, DropMissing: true}
	var readers []*Reader
	defer func() {
		for _, rd := range readers {
			rd.Close()
		}
	}()
	for _, t := range target.Tables {
		// A table replaced since with the same key takes the rows as the
		// current one places them (its partition key, planTables); a
		// table the current version lacks is added again as the target
		// placed it.
		pk := t.PartitionKey
		if current != nil {
			if c, ok := current.Table(t.Name); ok && c.Number != t.Number {
				pk = nil
			}
		}
		// The source: the target version's table, pinned (G2) for the
		// whole run.
		rd, err := db.TableReader(ctx, dataset, t.Name, At{Version: to})
		if err != nil {
			ds.release()
			return fail(err)
		}
		readers = append(readers, rd)
		opts.Tables = append(opts.Tables, TableSpec{Name: t.Name, Schema: t.Schema, Partitions: t.Partitions, PartitionKey: pk})
	}
	tr, err := db.beginTables(ctx, ds, cfg, opts, "rollback", to)
	if err != nil {
		ds.release()
		return fail(err)
	}
	// From here the run holds the dataset: Commit or Abort frees it.
	for _, rd := range readers {
		w := tr.Table(rd.Table())
		it, err := rd.Scan(ctx, ScanOptions{})
		if err != nil {
			tr.Abort(context.WithoutCancel(ctx), err.Error())
			return fail(err)
		}
		for it.Next() {
			if err := w.Put(ctx, it.Row().Values); err != nil {
				it.Close()
				tr.Abort(context.WithoutCancel(ctx), err.Error())
				return fail(err)
			}
		}
		if err := it.Close(); err != nil {
			tr.Abort(context.WithoutCancel(ctx), err.Error())
			return fail(err)
		}
		if err := w.Finish(ctx); err != nil {
			tr.Abort(context.WithoutCancel(ctx), err.Error())
			return fail(err)
		}
	}
	vi, err := tr.Commit(ctx)
	if err != nil {
		return fail(err)
	}
	db.logger.Info("dataset rolled back", "dataset", dataset, "version", vi.Version, "restored_from", to)
	return vi, nil
}
