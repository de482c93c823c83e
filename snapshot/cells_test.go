package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/snapstore/snapstore/store"
)

// logicalCell is one cell of a data table as the per-column model of D1
// sees it: a column of a row version (rowversion.go), or a row delete
// marker (column "").
type logicalCell struct {
	row    []byte
	column string
	ts     int64
	kind   store.CellKind
	value  Value
}

// logicalCells returns every cell of every partition of dataset ds, each
// row version split into its cells (columns named by the dataset's
// column dictionary), in store.S5 order (row, column, timestamp
// descending).
func logicalCells(db *DB, ds string) ([]logicalCell, error) {
	ctx := context.Background()
	info, err := db.Dataset(ctx, ds)
	if err != nil {
		return nil, err
	}
	d, err := db.lookup(ctx, ds)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	names := d.cfg.Columns
	d.mu.Unlock()
	var out []logicalCell
	for p := 0; p < info.Partitions; p++ {
		it, err := db.st.Scan(ctx, dataTable(ds, p), store.ScanOptions{})
		if err != nil {
			return nil, err
		}
		for it.Next() {
			c := it.Cell()
			row := append([]byte{}, c.Row...)
			if c.Kind != store.KindPut {
				out = append(out, logicalCell{row: row, ts: c.Timestamp, kind: c.Kind})
				continue
			}
			var vr versionReader
			if err := vr.open(c.Value); err != nil {
				it.Close()
				return nil, err
			}
			for {
				idx, start, end, ok, err := vr.nextCell()
				if err != nil {
					it.Close()
					return nil, err
				}
				if !ok {
					break
				}
				val := c.Value[start:end:end]
				name := fmt.Sprintf("#%d", idx)
				if idx < len(names) {
					name = names[idx]
				}
				lc := logicalCell{row: row, column: name, ts: c.Timestamp, kind: store.KindPut}
				if val[0] == deleteColumn {
					lc.kind = store.KindDeleteColumn
				} else {
					v, err := decodeColumnValue(val)
					if err != nil {
						it.Close()
						return nil, err
					}
					v.Bytes = append([]byte(nil), v.Bytes...)
					lc.value = v
				}
				out = append(out, lc)
			}
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b logicalCell) int {
		if c := strings.Compare(string(a.row), string(b.row)); c != 0 {
			return c
		}
		if c := strings.Compare(a.column, b.column); c != 0 {
			return c
		}
		switch {
		case a.ts > b.ts:
			return -1
		case a.ts < b.ts:
			return 1
		}
		return 0
	})
	return out, nil
}
