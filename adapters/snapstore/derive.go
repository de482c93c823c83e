package snapstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// readOptionDefs are the read options of an adapter of a snapstore
// dataset (source.ReadOptioner): a derived dataset, some columns and a
// key range of its source.
var readOptionDefs = []source.OptionDef{
	{Key: "columns", Type: source.OptStringList, Doc: "the columns the copy keeps, the key columns among them, in the source's order (default every column)"},
	{Key: "start", Type: source.OptStringList, Doc: "the first key the copy keeps: a key prefix, one value per key column in key order, as the scan's start (default: from the first key)"},
	{Key: "end", Type: source.OptStringList, Doc: "the first key the copy leaves out: a key prefix as the scan's end (default: to the last key)"},
}

// ReadOptions implements source.ReadOptioner.
func (connector) ReadOptions() []source.OptionDef { return readOptionDefs }

// ValidateRead implements source.ReadOptioner: column names given once,
// none empty nor with a comma (the scan's columns parameter is a
// comma-separated list), and start and end with at least one value.
// Whether the columns and key values fit the dataset is checked when it
// is read (OpenTable).
func (connector) ValidateRead(o source.OptionValues) error {
	var errs []error
	if o.Has("columns") {
		cols := o.Strings("columns")
		if len(cols) == 0 {
			errs = append(errs, &source.OptionError{Key: "columns", Msg: "an empty list; leave it out to keep every column"})
		}
		seen := map[string]bool{}
		for _, c := range cols {
			switch {
			case c == "":
				errs = append(errs, &source.OptionError{Key: "columns", Msg: "an empty column name"})
			case seen[c]:
				errs = append(errs, &source.OptionError{Key: "columns", Msg: fmt.Sprintf("column %q given twice", c)})
			}
			seen[c] = true
		}
	}
	for _, k := range []string{"start", "end"} {
		if o.Has(k) && len(o.Strings(k)) == 0 {
			errs = append(errs, &source.OptionError{Key: k, Msg: "an empty key; give one value per key column (a prefix of the key), or leave it out"})
		}
	}
	return errors.Join(errs...)
}

// derivation is what an adapter copies of its source dataset's version:
// every row and column, or some columns (columns) and the keys from start
// (included) to end (excluded), each a key prefix. A derived copy's
// checksum is its own: the run computes it over what it wrote.
type derivation struct {
	columns    []string // nil: every column
	start, end []string // the key prefixes as given; nil: unbounded
}

// derivationOf returns the derivation the read options o ask for.
func derivationOf(o source.OptionValues) derivation {
	return derivation{columns: o.Strings("columns"), start: o.Strings("start"), end: o.Strings("end")}
}

// derived reports whether d keeps less than the whole version.
func (d derivation) derived() bool { return d.columns != nil || d.start != nil || d.end != nil }

// suffix is what the derivation adds to the name of the table read
// ("dataset@N columns=[...] start=[...] end=[...]"), which a run records as
// its resource: a later run reads the diff only from a version copied
// with the same derivation. "" for a whole copy.
func (d derivation) suffix() string {
	var b strings.Builder
	for _, f := range []struct {
		name string
		vals []string
	}{{"columns", d.columns}, {"start", d.start}, {"end", d.end}} {
		if f.vals == nil {
			continue
		}
		j, _ := json.Marshal(f.vals)
		fmt.Fprintf(&b, " %s=%s", f.name, j)
	}
	return b.String()
}

// schema returns the schema of the copy of a version of what (a dataset,
// a table of one: "dataset \"orders\"") whose schema is s: the columns kept, in s's order, and s's key. An
// *source.OptionError when a column is not one of s's or a key column is
// left out.
func (d derivation) schema(s snapshot.Schema, what string, version int64) (snapshot.Schema, error) {
	if d.columns == nil {
		return s, nil
	}
	names := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		names[i] = c.Name
	}
	for _, c := range d.columns {
		if !slices.Contains(names, c) {
			return snapshot.Schema{}, &source.OptionError{Key: "source_options.columns", Msg: fmt.Sprintf(
				"column %q is not a column of %s version %d (its columns: %s)", c, what, version, strings.Join(names, ", "))}
		}
	}
	for _, k := range s.Key {
		if !slices.Contains(d.columns, k) {
			return snapshot.Schema{}, &source.OptionError{Key: "source_options.columns", Msg: fmt.Sprintf(
				"the key column %q of %s is not among the columns: a copy keeps its source's key (%s), so columns must name every key column",
				k, what, strings.Join(s.Key, ", "))}
		}
	}
	out := s
	out.Columns = slices.DeleteFunc(slices.Clone(s.Columns), func(c snapshot.Column) bool { return !slices.Contains(d.columns, c.Name) })
	return out, nil
}

// keyRange returns start and end encoded as key prefixes of schema s
// (snapshot.AppendKey), nil where unbounded; an *source.OptionError when
// a value does not fit its key column.
func (d derivation) keyRange(s snapshot.Schema) (start, end []byte, err error) {
	enc := func(name string, vals []string) ([]byte, error) {
		if vals == nil {
			return nil, nil
		}
		if len(vals) > len(s.Key) {
			return nil, &source.OptionError{Key: "source_options." + name, Msg: fmt.Sprintf(
				"%d values for a key of %d columns (%s)", len(vals), len(s.Key), strings.Join(s.Key, ", "))}
		}
		key := make([]snapshot.Value, len(vals))
		for i, text := range vals {
			col := s.Columns[slices.IndexFunc(s.Columns, func(c snapshot.Column) bool { return c.Name == s.Key[i] })]
			v, err := snapshot.ParseValue(col.Kind, text)
			if err != nil {
				return nil, &source.OptionError{Key: "source_options." + name, Msg: fmt.Sprintf("key column %q: %v", col.Name, err)}
			}
			key[i] = v
		}
		b, err := snapshot.AppendKey(nil, key)
		if err != nil {
			return nil, &source.OptionError{Key: "source_options." + name, Msg: err.Error()}
		}
		return b, nil
	}
	if start, err = enc("start", d.start); err != nil {
		return nil, nil, err
	}
	if end, err = enc("end", d.end); err != nil {
		return nil, nil, err
	}
	return start, end, nil
}

// inRange reports whether the encoded key k lies from start (included) to
// end (excluded), nil bounds being open.
func inRange(k, start, end []byte) bool {
	return (start == nil || bytes.Compare(k, start) >= 0) && (end == nil || bytes.Compare(k, end) < 0)
}
