package snapshot

import (
	"context"
	"fmt"
	"slices"

	"github.com/snapstore/snapstore/store"
)

// Forgetting tables (doc.go G9). A table dropped from a dataset of named
// tables (TablesRunOptions.DropMissing) keeps its entry in the row's
// configuration while some version holds it; once GC has expired the last
// such version and deleted its cells, GC removes the entry, its scratch
// rows with it, in the row write that ends the collection. Its number is
// never given again (NextTable only grows), so nothing can confuse a late
// cell with another table's.

// unheldTables returns the numbers of the tables of st, the row as GC's
// expiry wrote it, that GC may forget once their cells are gone: tables
// no kept version holds and no open Reader of this DB reads. None while a
// version expired stays recorded (its body is no longer in memory, and a
// pin may still read it, G8) or while a transaction's cells may still
// land: one in progress, or one invalid that GC does not prune (G6).
func unheldTables(ds *dataset, st rowState, readerTables map[int]bool, left int, prune []int64) []int {
	txns := st.Txns.Clone()
	txns.Prune(prune)
	if !st.Config.Named || left > 0 || len(txns.InProgress) > 0 || len(txns.Invalid) > 0 {
		return nil
	}
	held, ok := heldTables(ds, st)
	if !ok {
		return nil
	}
	var out []int
	for _, tc := range st.Config.Tables {
		if !held[tc.Num] && !readerTables[tc.Num] {
			out = append(out, tc.Num)
		}
	}
	return out
}

// heldTables returns the numbers of the tables the kept versions of st
// hold, and false when the body of one is not in memory.
func heldTables(ds *dataset, st rowState) (map[int]bool, bool) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	held := map[int]bool{}
	for _, ref := range st.Versions {
		vi := ds.bodies[ref.Version]
		if vi == nil {
			return nil, false
		}
		for _, t := range vi.Tables {
			held[t.Number] = true
		}
	}
	return held, true
}

// emptyTables returns those of nums whose data tables hold no cell, after
// deleting their scratch rows: the tables GC may forget.
func (db *DB) emptyTables(ctx context.Context, name string, cfg datasetConfig, nums []int) ([]int, error) {
	var out []int
	for _, n := range nums {
		tc := cfg.tableByNum(n)
		empty := true
		for _, t := range tc.dataTables(name) {
			it, err := db.st.Scan(ctx, t, store.ScanOptions{})
			if err != nil {
				return nil, fmt.Errorf("snapshot: GC of %s: %w", name, err)
			}
			found := it.Next()
			if err := it.Close(); err != nil {
				return nil, fmt.Errorf("snapshot: GC of %s: %w", name, err)
			}
			if found {
				empty = false
				break
			}
		}
		if !empty {
			continue
		}
		for p := 0; p < tc.Partitions; p++ {
			if err := db.st.DeleteRange(ctx, tableScratchTable(name, n, p), nil, nil); err != nil {
				return nil, fmt.Errorf("snapshot: GC of %s: deleting the scratch rows of table %q: %w", name, tc.Name, err)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// forgetTables removes from st, the row GC's last write changes (its
// invalid transactions pruned), the entries of the tables of nums that
// are still forgettable in it: no kept version holds them and no
// transaction can still write (the row may have changed since GC read
// it, by a tag or an untag; a run cannot begin while GC holds the slot).
// It returns the names of those removed.
func forgetTables(ds *dataset, st *rowState, nums []int) []string {
	if len(nums) == 0 || len(st.Txns.InProgress) > 0 || len(st.Txns.Invalid) > 0 {
		return nil
	}
	held, ok := heldTables(ds, *st)
	if !ok {
		return nil
	}
	var names []string
	st.Config.Tables = slices.DeleteFunc(st.Config.Tables, func(tc tableConfig) bool {
		if held[tc.Num] || !slices.Contains(nums, tc.Num) {
			return false
		}
		names = append(names, tc.Name)
		return true
	})
	return names
}
