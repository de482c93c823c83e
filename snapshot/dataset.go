package snapshot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// DatasetInfo describes a dataset.
type DatasetInfo struct {
	Name       string    `json:"name"`
	CreatedAt  time.Time `json:"created_at"`
	Partitions int       `json:"partitions"`
	// Current is the current version, 0 when nothing was committed.
	Current     int64        `json:"current_version"`
	CurrentInfo *VersionInfo `json:"current,omitempty"`
	Retention   Retention    `json:"retention"`
	Guard       Guard        `json:"guard"`
	// Versions is the number of kept versions.
	Versions int `json:"versions"`
}

// dataset is the in-memory state of one dataset.
type dataset struct {
	name string

	// mu guards the fields below. Lock order: DB.mu, then dataset.mu, then
	// the txn manager's. Not held across store I/O except the short
	// metadata writes of Tag/Untag/SetConfig.
	mu       sync.Mutex
	cfg      datasetConfig
	current  int64
	versions []*VersionInfo // kept versions, ascending; Current and Tags unset
	// expired lists, ascending, the committed versions GC expired whose
	// cells may still be visible in later versions (G7): a rollback past
	// them must invalidate them too.
	expired []int64
	tags    map[string]int64
	// writer names the exclusive operation holding the dataset ("run",
	// "gc", "rollback", "drop"), "" when none (D8).
	writer  string
	run     *Run
	readers map[*Reader]struct{}
	plans   map[int64]*readPlan // by version (reader.go)
	dropped bool
	// scratchDirty is set while the scratch tables may hold keys (from a
	// run begun and not yet cleaned up, or an earlier process).
	scratchDirty bool
}

// newDataset returns the empty in-memory state of dataset name.
func newDataset(name string) *dataset {
	return &dataset{name: name, tags: map[string]int64{}, readers: map[*Reader]struct{}{}}
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
		if !ds.dropped {
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
	if ds.dropped {
		return DatasetInfo{}, fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
	}
	return ds.describeLocked(), nil
}

func (ds *dataset) describeLocked() DatasetInfo {
	di := DatasetInfo{
		Name: ds.name, CreatedAt: ds.cfg.CreatedAt, Partitions: ds.cfg.Partitions,
		Current: ds.current, Retention: ds.cfg.Retention, Guard: ds.cfg.Guard, Versions: len(ds.versions),
	}
	if vi := ds.versionLocked(ds.current); vi != nil {
		info := ds.infoLocked(vi)
		di.CurrentInfo = &info
	}
	return di
}

// acquire takes the dataset's writer slot for op (D8). ErrRunInProgress
// when another exclusive operation holds it; ErrDatasetNotFound when
// dropped.
func (ds *dataset) acquire(op string) error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.dropped {
		return fmt.Errorf("%w: %s", ErrDatasetNotFound, ds.name)
	}
	if ds.writer != "" {
		return fmt.Errorf("%w: %s of %s holds it", ErrRunInProgress, ds.writer, ds.name)
	}
	ds.writer = op
	return nil
}

// release frees the writer slot that acquire took.
func (ds *dataset) release() {
	ds.mu.Lock()
	ds.writer = ""
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
