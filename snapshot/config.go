package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snapstore/snapstore/store"
)

// DatasetConfig is what a run or an operator sets on a dataset.
type DatasetConfig struct {
	Name      string
	Retention Retention
	Guard     Guard
}

// datasetConfig is the persisted configuration of a dataset (keys.go,
// column "cfg").
type datasetConfig struct {
	CreatedAt  time.Time `json:"created_at"`
	Partitions int       `json:"partitions"`
	Retention  Retention `json:"retention"`
	Guard      Guard     `json:"guard"`
	// Key is the key column list; fixed once a version is committed.
	Key []string `json:"key"`
	// Columns is the column dictionary (rowversion.go): every column name
	// a run of the dataset had, in the order they first came; row
	// versions name columns by their index here. Never reordered or
	// shortened.
	Columns []string `json:"columns,omitempty"`
	// Format is the storage format of the data tables (format1.go,
	// dataFormat); 0 means 1. Format1Left says the format 1 tables of a
	// migrated dataset are still to be dropped.
	Format      int  `json:"format,omitempty"`
	Format1Left bool `json:"format1_left,omitempty"`
}

// SetConfig updates a dataset's retention and guard.
func (db *DB) SetConfig(ctx context.Context, cfg DatasetConfig) error {
	if err := validConfig(cfg); err != nil {
		return err
	}
	ds, err := db.lookupWritable(ctx, cfg.Name)
	if err != nil {
		return err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	ds.cfg.Retention, ds.cfg.Guard = cfg.Retention, cfg.Guard
	if err := db.putConfigLocked(ctx, ds); err != nil {
		return fmt.Errorf("snapshot: setting config of %s: %w", cfg.Name, err)
	}
	return nil
}

func validConfig(cfg DatasetConfig) error {
	if err := validName("dataset", cfg.Name); err != nil {
		return err
	}
	if cfg.Retention.TTL < 0 {
		return fmt.Errorf("%w: negative retention ttl", ErrInvalidArgument)
	}
	if cfg.Guard.MaxShrink < 0 || cfg.Guard.MaxShrink > 1 {
		return fmt.Errorf("%w: guard max_shrink %v outside 0..1", ErrInvalidArgument, cfg.Guard.MaxShrink)
	}
	return nil
}

// putConfigLocked writes ds.cfg durably; ds.mu is held.
func (db *DB) putConfigLocked(ctx context.Context, ds *dataset) error {
	b, err := json.Marshal(ds.cfg)
	if err != nil {
		return err
	}
	batch := &store.Batch{Table: db.meta, Sync: true}
	batch.Put(datasetKey(ds.name), colCfg, 0, b)
	return db.st.Apply(ctx, batch)
}
