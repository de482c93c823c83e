package snapshot

// Verification: a source that can tell cheaply that a table did not change
// since the version snapstore holds (package adapters compares checksums
// the source computes) records that the current version was verified at a
// time, instead of committing a new version identical to it. The time is
// VersionInfo.VerifiedAt; the API and the freshness metrics show it.
//
// A run may also carry whole ranges of rows over from the previous version
// unchanged without the source sending them (Run.Carry, a step of phase
// A's walk in run_phase_a.go): the source said their checksums did not
// change.
//
// The checksums a source computed for a version are its digest, stored
// with the version (keys.go, column "dgst") and opaque to snapshot: the
// adapter writes it at commit (Run.SetSourceDigest, in the version row
// written before the row lists the version) or at a verification, and
// reads it back for the next run (DB.SourceDigest). It goes with its
// version: expired or dropped. The verification time is in the dataset's
// row (versionRef.VerifiedAt), since a listed version row never changes
// for readers (W2).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/snapstore/snapstore/store"
)

// SetSourceDigest sets the digest stored with the version the run commits.
func (r *Run) SetSourceDigest(digest []byte) { r.srcDigest = bytes.Clone(digest) }

// SourceDigest returns the digest stored with a kept version, nil when it
// has none. ErrVersionNotKept, ErrDatasetNotFound.
func (db *DB) SourceDigest(ctx context.Context, dataset string, version int64) ([]byte, error) {
	if _, err := db.VersionInfo(ctx, dataset, version); err != nil {
		return nil, err
	}
	var out []byte
	err := db.st.VisitRow(ctx, db.meta, versionKey(dataset, version), store.ReadOptions{Columns: [][]byte{colDigest}}, func(c store.Cell) bool {
		if c.Kind == store.KindPut {
			out = bytes.Clone(c.Value)
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading the source digest of %s version %d: %w", dataset, version, err)
	}
	return out, nil
}

// Verify records that the source was found identical to version, which
// must be the dataset's current version, at time at: VersionInfo.VerifiedAt
// in one write of the dataset's row (D9), made only while no other writer
// holds the dataset's slot (D8); and, when digest is not nil, the
// version's digest, first, in its version row. Errors: ErrDatasetNotFound,
// ErrRunInProgress, ErrNotCurrent.
func (db *DB) Verify(ctx context.Context, dataset string, version int64, at time.Time, digest []byte) (VersionInfo, error) {
	ds, err := db.acquireWritable(ctx, dataset, "verify")
	if err != nil {
		return VersionInfo{}, err
	}
	defer ds.release()
	now := db.opts.now()
	return db.recordVerified(ctx, ds, version, at, digest, nil, func(st *rowState) error {
		// The slot is taken and freed in this one write: it is free, or
		// its holder gone.
		if err := db.takeSlot(st, ds.name, "verify", now); err != nil {
			return err
		}
		releaseSlot(st)
		return nil
	})
}

// recordVerified records version of ds verified at at: digest (when not
// nil) in the version row, written within ctx, then the verification time
// in one write of the row whose other changes end makes. A digest written
// without the row's write is harmless: it describes the version's content
// as well as the one it replaced.
func (db *DB) recordVerified(ctx context.Context, ds *dataset, version int64, at time.Time, digest []byte, digestCtx context.Context, end func(st *rowState) error) (VersionInfo, error) {
	fail := func(err error) (VersionInfo, error) {
		return VersionInfo{}, fmt.Errorf("snapshot: recording the verification of %s version %d: %w", ds.name, version, err)
	}
	ds.mu.Lock()
	cur := ds.current
	ds.mu.Unlock()
	if cur != version {
		return VersionInfo{}, fmt.Errorf("%w: %s version %d (current %d)", ErrNotCurrent, ds.name, version, cur)
	}
	if digest != nil {
		if digestCtx == nil {
			digestCtx = ctx
		}
		b := &store.Batch{Table: db.meta}
		b.Put(versionKey(ds.name, version), colDigest, 0, bytes.Clone(digest))
		if err := db.st.MutateRow(digestCtx, b); err != nil {
			return fail(err)
		}
	}
	t := at.UTC()
	_, err := db.writeRow(ctx, ds, func(st *rowState) error {
		if st.Current != version {
			return fmt.Errorf("%w: %s version %d (current %d)", ErrNotCurrent, ds.name, version, st.Current)
		}
		i := slices.IndexFunc(st.Versions, func(r versionRef) bool { return r.Version == version })
		if i < 0 {
			return fmt.Errorf("%w: %s version %d", ErrVersionNotKept, ds.name, version)
		}
		if r := st.Versions[i]; r.VerifiedAt != nil && r.VerifiedAt.Equal(t) && st.Slot.Owner != db.owner {
			return errNoChange // this write landed
		}
		if err := end(st); err != nil {
			return err
		}
		st.Versions[i].VerifiedAt = &t
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrNotCurrent) {
			return VersionInfo{}, err
		}
		return fail(err)
	}
	ds.mu.Lock()
	info := ds.infoLocked(ds.versionLocked(version))
	ds.mu.Unlock()
	db.logger.Info("version verified", "dataset", ds.name, "version", version)
	return info, nil
}

// verifyInstead ends a run that changed nothing (RunOptions.VerifyUnchanged)
// without committing: the previous version is recorded verified, with the
// run's source digest, and the run's transaction, which wrote no data,
// ends invalid like an aborted one's, in one write of the row that frees
// the writer slot, made only while the run holds it (W3).
func (r *Run) verifyInstead(ctx context.Context) (VersionInfo, error) {
	r.closeIters()
	r.endWrites()
	dctx, cancel, err := r.db.slotContext(ctx, r.ds, r.epoch)
	defer cancel()
	if err != nil {
		return VersionInfo{}, err
	}
	now := r.db.opts.now()
	vi, err := r.db.recordVerified(ctx, r.ds, r.prev.Version, now, r.srcDigest, dctx, func(st *rowState) error {
		if err := r.db.holdsSlot(st, r.epoch); err != nil {
			return err
		}
		if st.Txns.IsInProgress(r.id) {
			if err := st.Txns.Abort(r.id, now); err != nil {
				return err
			}
		}
		releaseSlot(st)
		return nil
	})
	if err != nil {
		return VersionInfo{}, err
	}
	r.verified = true
	r.publishStats()
	r.done = true
	r.db.clearScratchIfDirty(context.WithoutCancel(ctx), r.ds, r.nparts, r.id)
	r.ds.release()
	r.db.metrics.runs.WithLabelValues("verified").Inc()
	return vi, nil
}

// Verified reports whether Commit found nothing changed and recorded the
// previous version verified instead of committing (RunOptions.
// VerifyUnchanged); Commit's VersionInfo is then that version's.
func (r *Run) Verified() bool { return r.verified }

// sameSchema reports whether two schemas record the same columns (name,
// kind, source type, nullability, in order) and key.
func sameSchema(a, b Schema) bool {
	return slices.Equal(a.Columns, b.Columns) && slices.Equal(a.Key, b.Key)
}

// Progress returns the counts so far and the checksum's running sum (D6),
// exact (Checksum is left empty); only the run's goroutine may call it.
// The source's digest records the sum of each range, for a later Carry.
func (r *Run) Progress() (RunStats, uint64) { return r.stats, r.sum }
