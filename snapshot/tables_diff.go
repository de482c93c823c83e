package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// The kinds of a table's difference between two versions
// (TableDiffStats.Change).
const (
	// TableAdded: only the to version holds the table; its rows count as
	// inserted.
	TableAdded = "added"
	// TableDropped: only the from version holds it; its rows count as
	// deleted.
	TableDropped = "dropped"
	// TableReplaced: both hold a table of that name, dropped and added
	// again between them: the from version's rows count as deleted, the
	// to version's as inserted.
	TableReplaced = "replaced"
)

// TableDiffStats counts the changes of one table between two versions.
type TableDiffStats struct {
	Table string `json:"table"`
	// Change is TableAdded, TableDropped, TableReplaced, or "" for a
	// table both versions hold, whose rows were compared.
	Change string `json:"change,omitempty"`
	DiffStats
}

// DiffTables counts the changes of every table of a dataset from version
// from to version to: each table either version holds, by name. A table
// both hold is compared row by row (TableDiffCounts; TableDiff streams
// its rows); a table only one holds counts all its rows. A dataset of one
// table gives one entry, of table "". Errors as Diff's.
func (db *DB) DiffTables(ctx context.Context, dataset string, from, to int64) ([]TableDiffStats, error) {
	if from <= 0 || to <= 0 {
		return nil, fmt.Errorf("%w: versions must be positive", ErrInvalidArgument)
	}
	vf, err := db.VersionInfo(ctx, dataset, from)
	if err != nil {
		return nil, err
	}
	vt, err := db.VersionInfo(ctx, dataset, to)
	if err != nil {
		return nil, err
	}
	if vf.Tables == nil && vt.Tables == nil {
		st, err := db.DiffCounts(ctx, dataset, from, to)
		if err != nil {
			return nil, err
		}
		return []TableDiffStats{{DiffStats: st}}, nil
	}
	var names []string
	for _, t := range append(slices.Clone(vf.Tables), vt.Tables...) {
		if !slices.Contains(names, t.Name) {
			names = append(names, t.Name)
		}
	}
	slices.SortFunc(names, strings.Compare)
	out := make([]TableDiffStats, 0, len(names))
	for _, name := range names {
		tf, inF := vf.Table(name)
		tt, inT := vt.Table(name)
		d := TableDiffStats{Table: name, DiffStats: DiffStats{From: from, To: to}}
		switch {
		case inF && inT && tf.Number == tt.Number:
			st, err := db.TableDiffCounts(ctx, dataset, name, from, to)
			if err != nil {
				return nil, err
			}
			d.DiffStats = st
		case inF && inT:
			d.Change, d.Deleted, d.Inserted = TableReplaced, tf.Stats.Rows, tt.Stats.Rows
		case inT:
			d.Change, d.Inserted = TableAdded, tt.Stats.Rows
		default:
			d.Change, d.Deleted = TableDropped, tf.Stats.Rows
		}
		out = append(out, d)
	}
	return out, nil
}
