package server

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/snapstore/snapstore/snapshot"
)

// The Arrow form of a diff, one row per changed row:
//
//	_change   dictionary<int32, utf8>: insert, update or delete
//	<key>...  the key columns by name, typed as in the to version
//	_changed  list<utf8>: for an update, the columns that differ; null otherwise
//	before_<column>...  every column at from (null for an insert)
//	after_<column>...   every column at to (null for a delete)
//
// The columns are those of the to version in its order, then those only
// the from version has. A column whose kind or source type differs between
// the two versions is text on both sides.

// Names of a diff's own fields.
const (
	diffChangeField  = "_change"
	diffChangedField = "_changed"
	diffBeforePrefix = "before_"
	diffAfterPrefix  = "after_"
)

// diffTable maps a diff's changes to Arrow fields.
type diffTable struct {
	keys   []arrowColumn
	before []arrowColumn
	after  []arrowColumn
	cols   []string // the column names, before and after alike
	// positions of cols in the Columns of the rows last seen
	seen  []string
	index []int
}

// newDiffTable maps the columns of the diff from version from to version
// to: the union of both schemas.
func newDiffTable(from, to snapshot.Schema) *diffTable {
	t := &diffTable{}
	fromCol := make(map[string]snapshot.Column, len(from.Columns))
	for _, c := range from.Columns {
		fromCol[c.Name] = c
	}
	toCol := make(map[string]bool, len(to.Columns))
	add := func(c snapshot.Column, text bool) {
		b, a := newArrowColumn(diffBeforePrefix+c.Name, c), newArrowColumn(diffAfterPrefix+c.Name, c)
		if text {
			b.enc, a.enc = arrowText, arrowText
		}
		t.before, t.after, t.cols = append(t.before, b), append(t.after, a), append(t.cols, c.Name)
	}
	for _, c := range to.Columns {
		toCol[c.Name] = true
		f, ok := fromCol[c.Name]
		add(c, ok && (f.Kind != c.Kind || f.SourceType != c.SourceType))
	}
	for _, c := range from.Columns {
		if !toCol[c.Name] {
			add(c, false)
		}
	}
	for _, k := range to.Key {
		for _, c := range to.Columns {
			if c.Name == k {
				ac := newArrowColumn(k, c)
				if f, ok := fromCol[k]; ok && (f.Kind != c.Kind || f.SourceType != c.SourceType) {
					ac.enc = arrowText
				}
				t.keys = append(t.keys, ac)
			}
		}
	}
	return t
}

func (t *diffTable) schema(info snapshot.VersionInfo, table string, from int64) *arrow.Schema {
	fields := []arrow.Field{{Name: diffChangeField, Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}}}
	for _, ac := range t.keys {
		fields = append(fields, ac.field())
	}
	fields = append(fields, arrow.Field{Name: diffChangedField, Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true})
	for _, ac := range t.before {
		fields = append(fields, ac.field())
	}
	for _, ac := range t.after {
		fields = append(fields, ac.field())
	}
	md := arrowSchemaMeta(info, table, from)
	return arrow.NewSchema(fields, &md)
}

func (t *diffTable) positions(names []string) []int {
	if len(names) > 0 && len(t.seen) == len(names) && &t.seen[0] == &names[0] {
		return t.index
	}
	t.seen, t.index = names, columnPositions(t.before, names)
	return t.index
}

// probe reads the changes of it and turns to text each column of
// keyDoubt (in t.keys) and sideDoubt (in t.before and t.after) that has a
// value its Arrow type cannot hold, on both sides.
func (t *diffTable) probe(it snapshot.DiffIterator, keyDoubt, sideDoubt []int) error {
	keyPos := make([]int, len(t.keys))
	for i := range keyPos {
		keyPos[i] = i
	}
	for (len(keyDoubt) > 0 || len(sideDoubt) > 0) && it.Next() {
		ch := it.Change()
		keyDoubt = checkFits(t.keys, keyDoubt, keyPos, ch.Key)
		for _, row := range []*snapshot.Row{ch.Before, ch.After} {
			if row == nil {
				continue
			}
			pos := t.positions(row.Columns)
			left := checkFits(t.before, append([]int(nil), sideDoubt...), pos, row.Values)
			for _, i := range sideDoubt {
				if t.before[i].enc == arrowText {
					t.after[i].enc = arrowText
				}
			}
			sideDoubt = left
		}
	}
	return it.Err()
}

// write appends every change of it to a.
func (t *diffTable) write(it snapshot.DiffIterator, a *arrowBatches) error {
	nk := len(t.keys)
	for it.Next() {
		ch := it.Change()
		_ = a.rb.Field(0).(*array.BinaryDictionaryBuilder).AppendString(string(ch.Op))
		for i, ac := range t.keys {
			var v snapshot.Value
			if i < len(ch.Key) {
				v = ch.Key[i]
			}
			ac.appendArrow(a.rb.Field(1+i), v)
		}
		lb := a.rb.Field(1 + nk).(*array.ListBuilder)
		if ch.Changed == nil {
			lb.AppendNull()
		} else {
			lb.Append(true)
			sb := lb.ValueBuilder().(*array.StringBuilder)
			for _, name := range ch.Changed {
				sb.Append(name)
			}
		}
		base := 2 + nk
		t.appendSide(a, base, t.before, ch.Before)
		t.appendSide(a, base+len(t.before), t.after, ch.After)
		if err := a.endRow(); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return a.flush()
}

// appendSide appends row's values to the fields from base on, nulls for
// a nil row.
func (t *diffTable) appendSide(a *arrowBatches, base int, cols []arrowColumn, row *snapshot.Row) {
	if row == nil {
		for i := range cols {
			a.rb.Field(base + i).AppendNull()
		}
		return
	}
	pos := t.positions(row.Columns)
	for i, ac := range cols {
		var v snapshot.Value
		if p := pos[i]; p >= 0 {
			v = row.Values[p]
		}
		ac.appendArrow(a.rb.Field(base+i), v)
	}
}
