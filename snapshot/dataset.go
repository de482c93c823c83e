package snapshot

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// DatasetInfo describes a dataset.
type DatasetInfo struct {
	Name       string    `json:"name"`
	CreatedAt  time.Time `json:"created_at"`
	Partitions int       `json:"partitions"`
	// PartitionKey names the columns placing rows in partitions, when
	// they are not the key (partition_key.go).
	PartitionKey []string `json:"partition_key,omitempty"`
	// Current is the current version, 0 when nothing was committed.
	Current     int64        `json:"current_version"`
	CurrentInfo *VersionInfo `json:"current,omitempty"`
	Retention   Retention    `json:"retention"`
	Guard       Guard        `json:"guard"`
	// Versions is the number of kept versions.
	Versions int `json:"versions"`
}

// dataset is the in-memory state of one dataset: its row as this DB
// last read or wrote it (datasetrow.go), what readers use derived from it,
// and what this DB alone knows (its operation on the dataset, its
// readers).
type dataset struct {
	name  string
	owner string // the DB's owner id (slot.go)

	// rowMu serialises this DB's writes of the row (writeRow) and is held
	// across them; taken before mu.
	rowMu sync.Mutex

	// mu guards the fields below. Lock order: DB.mu, then dataset.rowMu,
	// then dataset.mu. Never held across store I/O.
	mu sync.Mutex
	// st is the row's state and raw its encoding as stored (nil: no row);
	// cfg, current, versions and tags are derived from them (install).
	st       rowState
	raw      []byte
	cfg      datasetConfig
	current  int64
	versions []*VersionInfo // kept versions, ascending; Current and Tags unset
	tags     map[string]int64
	// bodies holds the version rows read of the kept versions.
	bodies map[int64]*VersionInfo
	// writer names the operation of this DB holding the dataset ("run",
	// "gc", "rollback", "drop"; D8), "" when none; slot is the writer slot
	// it holds in the row (W1).
	writer string
	slot   heldSlot
	// run is the run this DB has going, aborted when the DB closes.
	run interface {
		Abort(ctx context.Context, reason string) error
	}
	// pending, when set, is an outcome still to be learned (a commit or
	// abort whose write failed in a way that may have applied it): the
	// keeper tries it until it returns nil, and the dataset's writer stays
	// held until then.
	pending func(ctx context.Context) error
	// unsettled says a write of the row failed in a way that may still
	// apply it (store.S9) and nothing has fenced it yet: it applies only
	// while the row holds unsettledRaw, its check value, so the next write
	// of the row that lands, or a read that finds the row moved on, settles
	// it (datasetrow.go fenceRow); unsettledSeq is the Seq of that check
	// value, unsettledAt when the write failed.
	unsettled    bool
	unsettledSeq int64
	unsettledRaw []byte
	unsettledAt  time.Time
	readers      map[*Reader]struct{}
	plans        map[planKey]*readPlan // by version and table (reader.go)
	// persisted says a row of the dataset was read or written; dropped
	// that it is gone, or being dropped.
	persisted, dropped bool
	// scratchDirty is set while the scratch tables may hold keys (from a
	// run begun and not yet cleaned up, or an earlier process).
	scratchDirty bool
}

// newDataset returns the in-memory state of dataset name, with no row.
func newDataset(name, owner string) *dataset {
	return &dataset{name: name, owner: owner, tags: map[string]int64{}, readers: map[*Reader]struct{}{}, bodies: map[int64]*VersionInfo{}}
}

// install makes st (encoded as raw; nil when the row is gone) the
// dataset's state in memory, unless ds already holds a later one, and
// derives what readers use from it. The bodies of its versions are in
// ds.bodies (those of versions it expired are let go).
func (ds *dataset) install(st rowState, raw []byte) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.raw != nil && raw != nil && st.Seq < ds.st.Seq {
		return
	}
	ds.st, ds.raw = st, raw
	ds.cfg = st.Config
	if ds.cfg.Partitions <= 0 {
		ds.cfg.Partitions = 1
	}
	ds.current = st.Current
	ds.tags = maps.Clone(st.Tags)
	if ds.tags == nil {
		ds.tags = map[string]int64{}
	}
	ds.versions = ds.versions[:0:0]
	for _, ref := range st.Versions {
		if vi := ds.bodies[ref.Version]; vi != nil {
			if ref.VerifiedAt != nil {
				v := *vi
				v.VerifiedAt = ref.VerifiedAt
				vi = &v
			}
			ds.versions = append(ds.versions, vi)
		}
	}
	for _, v := range st.Expired {
		delete(ds.bodies, v)
	}
	ds.dropped = st.Dropping != nil || raw == nil && ds.persisted
	if raw != nil {
		ds.persisted = true
	}
	ds.slotFromStateLocked(ds.owner)
}

// Datasets lists every dataset, by name.
func (db *DB) Datasets(ctx context.Context) ([]DatasetInfo, error) {
	if err := db.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	if err := db.check(); err != nil {
		return nil, err
	}
	db.mu.Lock()
	all := make([]*dataset, 0, len(db.datasets))
	for _, ds := range db.datasets {
		all = append(all, ds)
	}
	db.mu.Unlock()
	out := make([]DatasetInfo, 0, len(all))
	for _, ds := range all {
		ds.mu.Lock()
		if ds.persisted && !ds.dropped {
			out = append(out, ds.describeLocked())
		}
		ds.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b DatasetInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Dataset describes one dataset. ErrDatasetNotFound.
func (db *DB) Dataset(ctx context.Context, name string) (DatasetInfo, error) {
	ds, err := db.lookup(ctx, name)
	if err != nil {
		return DatasetInfo{}, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.dropped || !ds.persisted {
		return DatasetInfo{}, fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
	}
	return ds.describeLocked(), nil
}

func (ds *dataset) describeLocked() DatasetInfo {
	di := DatasetInfo{
		Name: ds.name, CreatedAt: ds.cfg.CreatedAt, Partitions: ds.cfg.Partitions, PartitionKey: slices.Clone(ds.cfg.PartitionKey),
		Current: ds.current, Retention: ds.cfg.Retention, Guard: ds.cfg.Guard, Versions: len(ds.versions),
	}
	if vi := ds.versionLocked(ds.current); vi != nil {
		info := ds.infoLocked(vi)
		di.CurrentInfo = &info
	}
	return di
}

// acquire takes the dataset for op in this DB (D8): ErrRunInProgress when
// another operation of this DB holds it; ErrDatasetNotFound when dropped.
// The writer slot in the row is taken by op's first write (slot.go).
func (ds *dataset) acquire(op string) error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.dropped {
		return fmt.Errorf("%w: %s", ErrDatasetNotFound, ds.name)
	}
	if ds.writer != "" {
		what := ds.writer
		if ds.pending != nil {
			what = "learning the outcome of a " + ds.writer
		}
		return fmt.Errorf("%w: %s of %s holds it", ErrRunInProgress, what, ds.name)
	}
	ds.writer = op
	return nil
}

// release frees the dataset for other operations of this DB, unless an
// outcome is still to be learned (pending).
func (ds *dataset) release() {
	ds.mu.Lock()
	if ds.pending == nil {
		ds.writer = ""
	}
	ds.run = nil
	ds.mu.Unlock()
}

// validName checks a dataset or tag name: 1 to 200 bytes of ASCII
// letters, digits and "_.:@-".
func validName(what, name string) error {
	if len(name) == 0 || len(name) > 200 {
		return fmt.Errorf("%w: %s name must have 1 to 200 bytes", ErrInvalidArgument, what)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '@' || c == '-') {
			return fmt.Errorf("%w: %s name %q may hold only letters, digits and _.:@-", ErrInvalidArgument, what, name)
		}
	}
	return nil
}

// lookup returns the dataset or ErrDatasetNotFound. Every entry point
// that names a dataset finds it here, so that each of them first
// refreshes a view older than RefreshInterval (W2).
func (db *DB) lookup(ctx context.Context, name string) (*dataset, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	if err := db.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	db.mu.Lock()
	ds := db.datasets[name]
	db.mu.Unlock()
	if ds == nil {
		return nil, fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
	}
	ds.mu.Lock()
	gone := ds.dropped || !ds.persisted
	ds.mu.Unlock()
	if gone {
		return nil, fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
	}
	return ds, nil
}
