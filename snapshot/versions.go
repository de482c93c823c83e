package snapshot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"
)

// VersionInfo describes one committed version.
type VersionInfo struct {
	Dataset     string     `json:"dataset"`
	Version     int64      `json:"version"`
	CommittedAt time.Time  `json:"committed_at"`
	Source      SourceInfo `json:"source"`
	Stats       RunStats   `json:"stats"`
	Schema      Schema     `json:"schema"`
	// VerifiedAt is the last time a run found the source identical to
	// this version and recorded that instead of committing a new one
	// (verify.go); nil when none did.
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
	// RestoredFrom is, for a version a rollback committed, the version
	// whose content it restored (rollback.go); 0 otherwise.
	RestoredFrom int64 `json:"restored_from,omitempty"`
	// Shapes is what the values of the version's decimal, date, datetime
	// and time columns are like (shapes.go); nil when the run could not
	// know, for a version committed before they were recorded, and for a
	// dataset of named tables (each TableInfo has its own).
	Shapes *ValueShapes `json:"shapes,omitempty"`
	// Tables are the tables of a version of a dataset of named tables
	// (tables.go), by name; Schema is then empty and Stats the sum of
	// theirs (the checksum the sum of theirs modulo 2^64), Deleted also
	// counting the rows of DroppedTables. Nil for a dataset of one table.
	Tables []TableInfo `json:"tables,omitempty"`
	// DroppedTables are the tables of the version before this one that
	// this one lacks (TablesRunOptions.DropMissing, a rollback to a
	// version without them), by name: their rows count in Stats.Deleted.
	// Nil when none was dropped, and in a version committed before
	// dropped tables were recorded.
	DroppedTables []DroppedTable `json:"dropped_tables,omitempty"`
	Tags          []string       `json:"tags,omitempty"`
	Current       bool           `json:"current"`
}

// DroppedTable is a table a version of a dataset of named tables dropped
// (VersionInfo.DroppedTables).
type DroppedTable struct {
	Name string `json:"name"`
	// Rows are the rows it held at the version before, all deleted.
	Rows int64 `json:"rows"`
}

// CheckedAt returns the last time the version was known to match its
// source: when it was committed, or when a later run verified it.
func (vi VersionInfo) CheckedAt() time.Time {
	if vi.VerifiedAt != nil && vi.VerifiedAt.After(vi.CommittedAt) {
		return *vi.VerifiedAt
	}
	return vi.CommittedAt
}

// CheckColumns returns an error naming the first of columns the version's
// schema does not have; nil when it has them all. Readers refuse such a
// column list with ErrInvalidArgument; a caller that checks first can name
// the input it came from.
func (vi VersionInfo) CheckColumns(columns []string) error {
	for _, c := range columns {
		if columnIndex(vi.Schema, c) < 0 {
			return fmt.Errorf("no column %q at version %d", c, vi.Version)
		}
	}
	return nil
}

// SourceInfo records where a version came from.
type SourceInfo struct {
	Adapter    string `json:"adapter,omitempty"`
	Connection string `json:"connection,omitempty"`
	// Revision is the data connection's revision used by the run.
	Revision int64  `json:"connection_revision,omitempty"`
	Resource string `json:"resource,omitempty"`
	RunID    string `json:"run_id,omitempty"`
}

// Versions lists the kept versions of a dataset, newest first.
func (db *DB) Versions(ctx context.Context, dataset string) ([]VersionInfo, error) {
	vs, _, err := db.VersionsPage(ctx, dataset, 0, 0)
	return vs, err
}

// VersionsPage lists at most limit (0: every one) kept versions of a
// dataset older than before (0: from the newest), newest first; more
// reports that older kept versions remain, to be listed with before set
// to the last version returned. A before that GC has collected since still
// works: the page starts below it. ErrDatasetNotFound.
func (db *DB) VersionsPage(ctx context.Context, dataset string, before int64, limit int) (vs []VersionInfo, more bool, err error) {
	ds, err := db.lookup(ctx, dataset)
	if err != nil {
		return nil, false, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	end := len(ds.versions) // ds.versions is oldest first
	if before > 0 {
		end, _ = slices.BinarySearchFunc(ds.versions, before, func(vi *VersionInfo, v int64) int { return cmp.Compare(vi.Version, v) })
	}
	n := end
	if limit > 0 && limit < n {
		n = limit
	}
	vs = make([]VersionInfo, 0, n)
	for i := end - 1; i >= end-n; i-- {
		vs = append(vs, ds.infoLocked(ds.versions[i]))
	}
	return vs, end > n, nil
}

// VersionInfo describes one kept version. ErrVersionNotKept.
func (db *DB) VersionInfo(ctx context.Context, dataset string, version int64) (VersionInfo, error) {
	ds, err := db.lookup(ctx, dataset)
	if err != nil {
		return VersionInfo{}, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	vi := ds.versionLocked(version)
	if vi == nil {
		return VersionInfo{}, versionNotKept(dataset, version, ds.current)
	}
	return ds.infoLocked(vi), nil
}

// versionLocked returns the kept version v, or nil.
func (ds *dataset) versionLocked(v int64) *VersionInfo {
	i, ok := slices.BinarySearchFunc(ds.versions, v, func(vi *VersionInfo, v int64) int { return cmp.Compare(vi.Version, v) })
	if !ok {
		return nil
	}
	return ds.versions[i]
}

// infoLocked returns a copy of vi with Current and Tags filled in.
func (ds *dataset) infoLocked(vi *VersionInfo) VersionInfo {
	out := *vi
	out.Current = vi.Version == ds.current
	out.Tags = nil
	for t, v := range ds.tags {
		if v == vi.Version {
			out.Tags = append(out.Tags, t)
		}
	}
	sort.Strings(out.Tags)
	return out
}
