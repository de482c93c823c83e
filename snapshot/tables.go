package snapshot

// Datasets of named tables: a dataset may hold several tables committed
// as one version (doc.go D12). Each table has its own key, schema, column
// dictionary, partitions, partition key, stats, checksum and source
// digest; its data tables are named by a number the dataset's row gives
// it (keys.go), so that a table's name never enters a key. A dataset of
// one table, as every dataset made by BeginRun, has no names: its
// configuration and data tables are those it always had.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/snapstore/snapstore/store"
)

// TableSpec is one table a run of named tables writes (BeginTablesRun).
type TableSpec struct {
	// Name names the table in the dataset, e.g. "public.orders".
	Name   string
	Schema Schema
	// Partitions is the count of partitions of a table new to the
	// dataset; 0 is DatasetConfig.Partitions, then Options.Partitions. A
	// table keeps its own once a version holds it.
	Partitions int
	// PartitionKey is as DatasetConfig.PartitionKey, for this table.
	PartitionKey []string
}

// TableInfo describes one table of a version of a dataset of named
// tables.
type TableInfo struct {
	Name string `json:"name"`
	// Number is the table's number in the dataset's storage layout
	// (keys.go): a table dropped and added again gets a new one.
	Number int      `json:"number"`
	Stats  RunStats `json:"stats"`
	Schema Schema   `json:"schema"`
	// Shapes is the table's value shapes (VersionInfo.Shapes).
	Shapes       *ValueShapes `json:"shapes,omitempty"`
	Partitions   int          `json:"partitions"`
	PartitionKey []string     `json:"partition_key,omitempty"`
}

// tableConfig is the persisted configuration of one named table (in the
// dataset's row, datasetConfig.Tables).
type tableConfig struct {
	Name string `json:"name"`
	// Num is the table's number (keys.go), from 1.
	Num int `json:"n"`
	// Key, Columns and PartitionKey are as datasetConfig's, for this
	// table: the key and partition key fixed once a version holds it,
	// the column dictionary only growing.
	Key          []string `json:"key"`
	Columns      []string `json:"columns,omitempty"`
	Partitions   int      `json:"partitions"`
	PartitionKey []string `json:"partition_key,omitempty"`
	// Committed says a committed version held the table. A table of that
	// name the current version does not hold is then given a new number,
	// so that no run reads the cells of the old one as its previous rows.
	Committed bool `json:"committed,omitempty"`
}

// dataTables returns the data table of each partition of tc in dataset.
func (tc *tableConfig) dataTables(dataset string) []string {
	out := make([]string, tc.Partitions)
	for p := range out {
		out[p] = tableDataTable(dataset, tc.Num, p)
	}
	return out
}

// tableByName returns the newest table of that name, or nil.
func (c *datasetConfig) tableByName(name string) *tableConfig {
	var out *tableConfig
	for i := range c.Tables {
		if t := &c.Tables[i]; t.Name == name && (out == nil || t.Num > out.Num) {
			out = t
		}
	}
	return out
}

// tableByNum returns the table of number n, or nil.
func (c *datasetConfig) tableByNum(n int) *tableConfig {
	for i := range c.Tables {
		if c.Tables[i].Num == n {
			return &c.Tables[i]
		}
	}
	return nil
}

// dataTablesOf returns every data table of a dataset configured by c.
func dataTablesOf(dataset string, c datasetConfig) []string {
	if !c.Named {
		out := make([]string, max(c.Partitions, 1))
		for p := range out {
			out[p] = dataTable(dataset, p)
		}
		return out
	}
	var out []string
	for i := range c.Tables {
		out = append(out, c.Tables[i].dataTables(dataset)...)
	}
	return out
}

// scratchTablesOf returns every scratch table of a dataset configured by
// c.
func scratchTablesOf(dataset string, c datasetConfig) []string {
	var out []string
	if !c.Named {
		for p := 0; p < max(c.Partitions, 1); p++ {
			out = append(out, scratchTable(dataset, p))
		}
		return out
	}
	for _, t := range c.Tables {
		for p := 0; p < t.Partitions; p++ {
			out = append(out, tableScratchTable(dataset, t.Num, p))
		}
	}
	return out
}

// Table returns the table of that name of the version, and whether it
// holds one.
func (vi VersionInfo) Table(name string) (TableInfo, bool) {
	for _, t := range vi.Tables {
		if t.Name == name {
			return t, true
		}
	}
	return TableInfo{}, false
}

// TableNames returns the names of the version's tables, in the order the
// version lists them (by name).
func (vi VersionInfo) TableNames() []string {
	out := make([]string, len(vi.Tables))
	for i, t := range vi.Tables {
		out[i] = t.Name
	}
	return out
}

// tableView returns vi as seen by a reader of its table t: t's schema,
// stats and value shapes, and t alone in Tables.
func tableView(vi *VersionInfo, t TableInfo) *VersionInfo {
	v := *vi
	v.Schema, v.Stats, v.Shapes, v.Tables, v.DroppedTables = t.Schema, t.Stats, t.Shapes, []TableInfo{t}, nil
	return &v
}

// tableRequired is the error of an unqualified read of a dataset of
// named tables: ErrTableRequired ("... name one") and the tables to name,
// the dataset being the one the reader named.
func tableRequired(vi *VersionInfo) error {
	return fmt.Errorf("%w: %s", ErrTableRequired, someTables(vi.TableNames()))
}

// namedInErrors is how many tables an error names before it counts the
// rest: a dataset of 200 tables lists its tables at /tables, not in a
// line of a log or a problem's detail.
const namedInErrors = 20

// someTables joins the first namedInErrors of names and counts the rest.
func someTables(names []string) string {
	if len(names) <= namedInErrors {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:namedInErrors], ", "), len(names)-namedInErrors)
}

// tableNames names the tables of the current version of ds, whose row
// holds st, or, before the first commit, those of its configuration.
func (ds *dataset) tableNames(st *rowState) []string {
	ds.mu.Lock()
	vi := ds.bodies[st.Current]
	ds.mu.Unlock()
	if vi != nil {
		return vi.TableNames()
	}
	var out []string
	for _, t := range st.Config.Tables {
		if !slices.Contains(out, t.Name) {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// tableNotFound is the error of a read of a table a version does not
// hold.
func tableNotFound(dataset, table string, vi *VersionInfo) error {
	if len(vi.Tables) == 0 {
		return fmt.Errorf("%w: %q: dataset %s holds one unnamed table (read it without a table name)", ErrTableNotFound, table, dataset)
	}
	names := vi.TableNames()
	// A table named without its schema ("orders" for "shop.orders") is
	// the likeliest slip: name the one table it could mean.
	var like []string
	for _, n := range names {
		if strings.HasSuffix(n, "."+table) {
			like = append(like, n)
		}
	}
	if len(like) == 1 {
		return fmt.Errorf("%w: %q: version %d of %s holds the tables %s; did you mean %s? (a table is named schema.table)", ErrTableNotFound, table, vi.Version, dataset, someTables(names), like[0])
	}
	return fmt.Errorf("%w: %q: version %d of %s holds the tables %s", ErrTableNotFound, table, vi.Version, dataset, someTables(names))
}

// validTableName checks a table's name: TableNameProblem.
func validTableName(name string) error {
	if p := TableNameProblem(name); p != "" {
		return fmt.Errorf("%w: table name %q %s", ErrInvalidArgument, name, p)
	}
	return nil
}

// TableNameProblem says why name cannot be the name of a table of a
// dataset, "" when it can: a name has 1 to 200 bytes of UTF-8 without
// control characters. Adapters check the names of the tables they select
// with it, so that a source table no dataset can hold fails the selection
// naming it rather than the run's start.
func TableNameProblem(name string) string {
	if len(name) == 0 || len(name) > 200 || !utf8.ValidString(name) {
		return "must have 1 to 200 bytes of UTF-8"
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return "holds a control character"
		}
	}
	return ""
}

// sortTables sorts a version's tables by name.
func sortTables(ts []TableInfo) {
	slices.SortFunc(ts, func(a, b TableInfo) int { return strings.Compare(a.Name, b.Name) })
}

// Tables lists the tables of a version of dataset (at as for Reader), by
// name; nil for a dataset of one table. Errors as Reader's.
func (db *DB) Tables(ctx context.Context, dataset string, at At) ([]TableInfo, error) {
	if err := checkAt(at); err != nil {
		return nil, err
	}
	ds, err := db.lookup(ctx, dataset)
	if err != nil {
		return nil, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	vi, err := ds.resolveLocked(at)
	if err != nil {
		return nil, err
	}
	return slices.Clone(vi.Tables), nil
}

// TableSourceDigest returns the digest stored with table of a kept
// version (TableWriter.SetSourceDigest), nil when it has none. Errors:
// ErrVersionNotKept, ErrDatasetNotFound, ErrTableNotFound.
func (db *DB) TableSourceDigest(ctx context.Context, dataset, table string, version int64) ([]byte, error) {
	vi, err := db.VersionInfo(ctx, dataset, version)
	if err != nil {
		return nil, err
	}
	t, ok := vi.Table(table)
	if !ok {
		return nil, tableNotFound(dataset, table, &vi)
	}
	col := tableDigestColumn(t.Number)
	var out []byte
	err = db.st.VisitRow(ctx, db.meta, versionKey(dataset, version), store.ReadOptions{Columns: [][]byte{col}}, func(c store.Cell) bool {
		if c.Kind == store.KindPut {
			out = bytes.Clone(c.Value)
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading the source digest of %s table %q version %d: %w", dataset, table, version, err)
	}
	return out, nil
}
