package snapshot

import (
	"context"
	"fmt"
	"time"
)

// DatasetConfig is what a run or an operator sets on a dataset.
type DatasetConfig struct {
	Name      string
	Retention Retention
	Guard     Guard
	// Partitions is the count of hash partitions of a dataset the run
	// creates; 0 is Options.Partitions. An existing dataset keeps its
	// own (a partitioned run refuses another, run_partition.go).
	Partitions int
	// PartitionKey names the columns whose values place a row in its
	// partition (partition_key.go); empty or equal to the key: the row
	// key. A run keeps an existing dataset's when it is nil and refuses
	// another once a version is committed (ErrPartitionKey);
	// BeginPartitionedRun takes nil for the row key.
	PartitionKey []string
}

// datasetConfig is the persisted configuration of a dataset (in its row,
// datasetrow.go).
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
	// PartitionKey is the partition key (partition_key.go), nil for the
	// row key; fixed once a version is committed.
	PartitionKey []string `json:"partition_key,omitempty"`
	// Named says the dataset holds named tables (tables.go): Key,
	// Columns and PartitionKey above are then unused, each table has its
	// own in Tables.
	Named bool `json:"named,omitempty"`
	// Tables are the named tables of the dataset, each with its number
	// (the data tables' names, keys.go); NextTable is the largest number
	// given so far. A number is never given twice.
	Tables    []tableConfig `json:"tables,omitempty"`
	NextTable int           `json:"next_table,omitempty"`
}

// SetConfig updates a dataset's retention and guard, in one write of its
// row (D9).
func (db *DB) SetConfig(ctx context.Context, cfg DatasetConfig) error {
	if err := validConfig(cfg); err != nil {
		return err
	}
	ds, err := db.lookupWritable(ctx, cfg.Name)
	if err != nil {
		return err
	}
	_, err = db.writeRow(ctx, ds, func(st *rowState) error {
		if st.Dropping != nil {
			return fmt.Errorf("%w: %q", ErrDatasetNotFound, cfg.Name)
		}
		if st.Config.Retention == cfg.Retention && st.Config.Guard == cfg.Guard {
			return errNoChange
		}
		st.Config.Retention, st.Config.Guard = cfg.Retention, cfg.Guard
		return nil
	})
	if err != nil {
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
	if !(cfg.Guard.MaxShrink >= 0 && cfg.Guard.MaxShrink <= 1) { // NaN too
		return fmt.Errorf("%w: guard max_shrink %v outside 0..1", ErrInvalidArgument, cfg.Guard.MaxShrink)
	}
	return nil
}
