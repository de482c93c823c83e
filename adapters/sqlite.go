package adapters

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/snapstore/snapstore/snapshot"
	_ "modernc.org/sqlite" // registers database/sql driver "sqlite"
)

// sqliteConnector is the "sqlite" connection type on modernc.org/sqlite (pure
// Go, so `make run` needs no database server). The database file is opened
// read-only (URI mode=ro plus PRAGMA query_only); a pull reads inside one
// read transaction, so it sees one consistent state of the file.
type sqliteConnector struct{}

var sqliteOptionDefs = []OptionDef{
	{Key: "path", Type: OptString, Doc: "database file path (required; opened read-only)"},
	{Key: "busy_timeout", Type: OptDuration, Doc: "how long to wait for a writer's lock (default 5s)"},
	{Key: "chunk_rows", Type: OptInt, Min: 1, Max: 10_000_000, Doc: "rows per keyset-pagination chunk of a pull (default 5000)"},
}

// Options implements Connector.
func (sqliteConnector) Options() []OptionDef { return sqliteOptionDefs }

// Validate implements Connector.
func (sqliteConnector) Validate(o OptionValues) error {
	if o.String("path") == "" {
		return &OptionError{Key: "path", Msg: "required"}
	}
	return nil
}

// Open implements Connector.
func (sqliteConnector) Open(ctx context.Context, sc SourceConfig) (Source, error) {
	p := sc.Options.String("path")
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, &OptionError{Key: "path", Msg: err.Error()}
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sc.Options.Duration("busy_timeout", 5*time.Second).Milliseconds()))
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("opening sqlite database %s: %w", abs, err)
	}
	applyPool(db, sc.Pool)
	return &sqliteSource{name: sc.Name, path: abs, db: db, chunkRows: int(sc.Options.Int("chunk_rows", defaultChunkRows))}, nil
}

type sqliteSource struct {
	name      string
	path      string
	db        *sql.DB
	chunkRows int
}

func (s *sqliteSource) Close() error { return s.db.Close() }

// CloseIdle implements IdleCloser.
func (s *sqliteSource) CloseIdle() { s.db.SetMaxIdleConns(-1) }

func (s *sqliteSource) wrap(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// A missing file, a directory, a file that is not an SQLite database
	// or a corrupt one: the source cannot serve, whatever the caller asked
	// (the break-it test got a 500 from /resources on path /etc/passwd).
	return fmt.Errorf("%w: %w", ErrSourceUnavailable, err)
}

// Test implements Tester.
func (s *sqliteSource) Test(ctx context.Context) TestResult {
	start := time.Now()
	res := TestResult{}
	if _, err := os.Stat(s.path); err != nil {
		res.Cause, res.Message = "unreachable", fmt.Sprintf("sqlite database %s: %v", s.path, errors.Unwrap(err))
		res.Latency = time.Since(start)
		return res
	}
	err := s.db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&res.ServerVersion)
	if err == nil {
		var one int
		err = s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		res.OK = err == nil && one == 1
	}
	if err != nil {
		res.Cause, res.Message = "error", err.Error()
		if ctx.Err() != nil {
			res.Cause = "timeout"
		}
	}
	res.ServerVersion = "SQLite " + res.ServerVersion
	res.Latency = time.Since(start)
	return res
}

// Resources implements ResourceLister: tables and views of the main
// schema; estimated rows are exact COUNT(*) for tables (SQLite keeps no
// cheap estimate), 0 for views.
func (s *sqliteSource) Resources(ctx context.Context) ([]Resource, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("listing tables of data connection %q: %w", s.name, s.wrap(err))
	}
	var out []Resource
	for rows.Next() {
		var r Resource
		if err := rows.Scan(&r.Name, &r.Type); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing tables of data connection %q: %w", s.name, s.wrap(err))
	}
	for i := range out {
		if out[i].Type == "table" {
			if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoteSQLiteIdent(out[i].Name)).Scan(&out[i].EstimatedRows); err != nil {
				return nil, fmt.Errorf("counting rows of %s: %w", out[i].Name, err)
			}
		}
	}
	return out, nil
}

// quoteSQLiteIdent quotes an SQLite identifier with double quotes, doubling
// any inside.
func quoteSQLiteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// sqliteKind maps a declared column type to a kind, by SQLite's affinity
// rules (https://sqlite.org/datatype3.html, 3.1) refined for the names
// people use for dates, decimals, booleans and JSON.
func sqliteKind(decl string) snapshot.Kind {
	d := strings.ToUpper(strings.TrimSpace(decl))
	base := d
	if i := strings.IndexByte(base, '('); i >= 0 {
		base = strings.TrimSpace(base[:i])
	}
	switch base {
	case "DATE":
		return snapshot.KindDate
	case "DATETIME", "TIMESTAMP":
		return snapshot.KindDateTime
	case "DECIMAL", "NUMERIC":
		return snapshot.KindDecimal
	case "JSON":
		return snapshot.KindJSON
	case "BOOLEAN", "BOOL":
		return snapshot.KindInt
	}
	switch {
	case strings.Contains(d, "INT"):
		return snapshot.KindInt
	case strings.Contains(d, "CHAR"), strings.Contains(d, "CLOB"), strings.Contains(d, "TEXT"):
		return snapshot.KindString
	case strings.Contains(d, "BLOB"):
		return snapshot.KindBytes
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"):
		return snapshot.KindFloat
	case d == "":
		return snapshot.KindString
	}
	return snapshot.KindDecimal
}

type sqliteColumn struct {
	name    string
	decl    string
	kind    snapshot.Kind
	notNull bool
	pk      int
}

// convert turns a driver value into the column's kind. A value the column's
// kind cannot hold exactly (text in an INTEGER column) fails the run with
// ErrUnsupportedType rather than change kind per row.
func (c *sqliteColumn) convert(v any) (snapshot.Value, error) {
	bad := func() (snapshot.Value, error) {
		return snapshot.Value{}, fmt.Errorf("%w: column %q (%s) holds a %T value that does not fit", ErrUnsupportedType, c.name, c.decl, v)
	}
	if v == nil {
		return snapshot.Value{}, nil
	}
	switch c.kind {
	case snapshot.KindInt:
		switch x := v.(type) {
		case int64:
			return snapshot.Value{Kind: snapshot.KindInt, Int: x}, nil
		case float64:
			if x == float64(int64(x)) {
				return snapshot.Value{Kind: snapshot.KindInt, Int: int64(x)}, nil
			}
		case string:
			if n, err := strconv.ParseInt(x, 10, 64); err == nil {
				return snapshot.Value{Kind: snapshot.KindInt, Int: n}, nil
			}
		case bool:
			if x {
				return snapshot.Value{Kind: snapshot.KindInt, Int: 1}, nil
			}
			return snapshot.Value{Kind: snapshot.KindInt}, nil
		}
		return bad()
	case snapshot.KindFloat:
		switch x := v.(type) {
		case int64:
			return snapshot.Value{Kind: snapshot.KindFloat, Float: float64(x)}, nil
		case float64:
			return snapshot.Value{Kind: snapshot.KindFloat, Float: x}, nil
		case string:
			if f, err := strconv.ParseFloat(x, 64); err == nil {
				return snapshot.Value{Kind: snapshot.KindFloat, Float: f}, nil
			}
		}
		return bad()
	case snapshot.KindDecimal:
		switch x := v.(type) {
		case int64:
			return snapshot.Value{Kind: snapshot.KindDecimal, Bytes: strconv.AppendInt(nil, x, 10)}, nil
		case float64:
			return snapshot.Value{Kind: snapshot.KindDecimal, Bytes: strconv.AppendFloat(nil, x, 'f', -1, 64)}, nil
		case string:
			return snapshot.Value{Kind: snapshot.KindDecimal, Bytes: []byte(x)}, nil
		}
		return bad()
	case snapshot.KindBytes:
		switch x := v.(type) {
		case []byte:
			return snapshot.Value{Kind: snapshot.KindBytes, Bytes: x}, nil
		case string:
			return snapshot.Value{Kind: snapshot.KindBytes, Bytes: []byte(x)}, nil
		}
		return bad()
	case snapshot.KindDate, snapshot.KindDateTime:
		switch x := v.(type) {
		case time.Time:
			if c.kind == snapshot.KindDate {
				return snapshot.Value{Kind: c.kind, Bytes: []byte(x.UTC().Format("2006-01-02"))}, nil
			}
			return snapshot.Value{Kind: c.kind, Bytes: []byte(x.UTC().Format("2006-01-02 15:04:05.999999"))}, nil
		case string:
			return snapshot.Value{Kind: c.kind, Bytes: []byte(x)}, nil
		}
		return bad()
	default: // KindString, KindJSON
		switch x := v.(type) {
		case string:
			return snapshot.Value{Kind: c.kind, Bytes: []byte(x)}, nil
		case []byte:
			if utf8.Valid(x) {
				return snapshot.Value{Kind: c.kind, Bytes: x}, nil
			}
		case int64:
			return snapshot.Value{Kind: c.kind, Bytes: strconv.AppendInt(nil, x, 10)}, nil
		case float64:
			return snapshot.Value{Kind: c.kind, Bytes: strconv.AppendFloat(nil, x, 'g', -1, 64)}, nil
		}
		return bad()
	}
}

// sqliteTable reads one table by keyset pagination inside one read
// transaction on one pinned connection.
type sqliteTable struct {
	keysetPager
	src    *sqliteSource
	conn   *sql.Conn
	tx     *sql.Tx
	res    Resource
	cols   []sqliteColumn
	keyIdx []int
	first  string
	next   string
	raw    []any
	dest   []any
	vals   []snapshot.Value
	err    error
	closed bool
	schema snapshot.Schema
}

// OpenTable implements Source. The resource is a table or view name of the
// main schema ("main.t" and quoted "\"a.b\"" are accepted).
func (s *sqliteSource) OpenTable(ctx context.Context, req TableRequest) (_ TableReader, err error) {
	t := &sqliteTable{src: s}
	t.chunk = req.ChunkRows
	if t.chunk <= 0 {
		t.chunk = s.chunkRows
	}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	t.conn, err = s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening sqlite data connection %q: %w", s.name, s.wrap(err))
	}
	// A read transaction: every chunk sees the same database state.
	t.tx, err = t.conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("starting a read transaction on %q: %w", s.name, s.wrap(err))
	}
	name := ""
	for _, cand := range resourceCandidates(req.Resource, "main", '"') {
		if cand[0] != "main" {
			continue
		}
		var typ string
		err := t.tx.QueryRowContext(ctx, `SELECT type FROM sqlite_schema WHERE type IN ('table','view') AND name = ?`, cand[1]).Scan(&typ)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("looking up resource %q: %w", req.Resource, s.wrap(err))
		}
		name = cand[1]
		t.res = Resource{Name: name, Type: typ}
		break
	}
	if name == "" {
		return nil, fmt.Errorf("%w: %q through data connection %q", ErrResourceNotFound, req.Resource, s.name)
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?)`, name)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", name, err)
	}
	for rows.Next() {
		var c sqliteColumn
		var nn int
		if err := rows.Scan(&c.name, &c.decl, &nn, &c.pk); err != nil {
			rows.Close()
			return nil, err
		}
		c.notNull = nn != 0
		c.kind = sqliteKind(c.decl)
		t.cols = append(t.cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", name, err)
	}
	if err := t.pickKey(ctx, req.KeyColumns); err != nil {
		return nil, err
	}
	if t.res.Type == "table" {
		// Best effort: the count is only the progress estimate (0 when
		// it fails); a table that cannot be read fails the pull itself.
		_ = t.tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoteSQLiteIdent(name)).Scan(&t.res.EstimatedRows)
	}
	t.schema = snapshot.Schema{Columns: make([]snapshot.Column, len(t.cols))}
	for i, c := range t.cols {
		t.schema.Columns[i] = snapshot.Column{Name: c.name, Kind: c.kind, SourceType: c.decl, Nullable: !c.notNull && c.pk == 0}
	}
	for _, i := range t.keyIdx {
		t.schema.Key = append(t.schema.Key, t.cols[i].name)
	}
	t.build()
	return t, nil
}

func (t *sqliteTable) pickKey(ctx context.Context, explicit []string) error {
	byName := map[string]int{}
	for i, c := range t.cols {
		byName[c.name] = i
	}
	if len(explicit) > 0 {
		for _, c := range explicit {
			i, ok := byName[c]
			if !ok {
				return fmt.Errorf("%w: key column %q is not a column of %s", ErrNoKey, c, t.res.Name)
			}
			t.keyIdx = append(t.keyIdx, i)
		}
		return nil
	}
	var pk []int
	for i, c := range t.cols {
		if c.pk > 0 {
			pk = append(pk, i)
		}
	}
	slices.SortFunc(pk, func(a, b int) int { return cmp.Compare(t.cols[a].pk, t.cols[b].pk) })
	if len(pk) > 0 {
		t.keyIdx, t.unique = pk, true
		return nil
	}
	// A unique index over NOT NULL columns.
	rows, err := t.tx.QueryContext(ctx, `SELECT il.name, ii.name FROM pragma_index_list(?) il, pragma_index_info(il.name) ii
		WHERE il."unique" = 1 AND il.partial = 0 ORDER BY il.name, ii.seqno`, t.res.Name)
	if err != nil {
		return fmt.Errorf("reading the indexes of %s: %w", t.res.Name, err)
	}
	type index struct {
		name string
		cols []int
		ok   bool
	}
	var idx []*index
	for rows.Next() {
		var iname string
		var col sql.NullString
		if err := rows.Scan(&iname, &col); err != nil {
			rows.Close()
			return err
		}
		if len(idx) == 0 || idx[len(idx)-1].name != iname {
			idx = append(idx, &index{name: iname, ok: true})
		}
		cur := idx[len(idx)-1]
		i, found := byName[col.String]
		if !col.Valid || !found || !t.cols[i].notNull {
			cur.ok = false
			continue
		}
		cur.cols = append(cur.cols, i)
	}
	rows.Close()
	for _, ix := range idx {
		if ix.ok {
			t.keyIdx, t.unique = ix.cols, true
			return nil
		}
	}
	return fmt.Errorf("%w: %s has no primary key and no unique index over NOT NULL columns; set key_columns", ErrNoKey, t.res.Name)
}

func (t *sqliteTable) build() {
	var sel, order []string
	for _, c := range t.cols {
		sel = append(sel, quoteSQLiteIdent(c.name))
	}
	for _, i := range t.keyIdx {
		order = append(order, quoteSQLiteIdent(t.cols[i].name))
	}
	base := "SELECT " + strings.Join(sel, ", ") + " FROM " + quoteSQLiteIdent(t.res.Name)
	tail := " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(t.chunk)
	t.first = base + tail
	var ors []string
	for n := range t.keyIdx {
		var ands []string
		for j := 0; j < n; j++ {
			ands = append(ands, quoteSQLiteIdent(t.cols[t.keyIdx[j]].name)+" = ?")
		}
		op := " > ?"
		if !t.unique && n == len(t.keyIdx)-1 {
			op = " >= ?"
		}
		ands = append(ands, quoteSQLiteIdent(t.cols[t.keyIdx[n]].name)+op)
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	t.next = base + " WHERE " + strings.Join(ors, " OR ") + tail
	if !t.unique {
		// One more row: the first row of a >= chunk repeats the last one.
		t.next = base + " WHERE " + strings.Join(ors, " OR ") + " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(t.chunk+1)
	}
	t.raw = make([]any, len(t.cols))
	t.dest = make([]any, len(t.cols))
	for i := range t.raw {
		t.dest[i] = &t.raw[i]
	}
	t.vals = make([]snapshot.Value, len(t.cols))
}

func (t *sqliteTable) Schema() snapshot.Schema  { return t.schema }
func (t *sqliteTable) Table() Resource          { return t.res }
func (t *sqliteTable) Values() []snapshot.Value { return t.vals }
func (t *sqliteTable) Err() error               { return t.err }

func (t *sqliteTable) Next(ctx context.Context) bool {
	if t.err != nil || t.closed {
		return false
	}
	ok, err := t.nextRow(ctx, t, t.res.Name, t.schema.Key)
	if err != nil {
		t.err = err
	}
	return ok
}

// queryChunk implements keysetRows.
func (t *sqliteTable) queryChunk(ctx context.Context, cursor []any) (*sql.Rows, error) {
	if cursor == nil {
		return t.tx.QueryContext(ctx, t.first)
	}
	var args []any
	for n := range t.keyIdx {
		args = append(args, cursor[:n+1]...)
	}
	return t.tx.QueryContext(ctx, t.next, args...)
}

// sourceErr implements keysetRows: errors are kept as the driver gave them.
func (t *sqliteTable) sourceErr(_ context.Context, err error) error { return err }

// scanRow implements keysetRows.
func (t *sqliteTable) scanRow(rows *sql.Rows) error {
	if err := rows.Scan(t.dest...); err != nil {
		return err
	}
	for i := range t.cols {
		v, err := t.cols[i].convert(t.raw[i])
		if err != nil {
			return err
		}
		t.vals[i] = v
	}
	return nil
}

// rowCursor implements keysetRows: the current row's key values, bytes
// copied (the driver reuses them).
func (t *sqliteTable) rowCursor() []any {
	cur := make([]any, len(t.keyIdx))
	for j, i := range t.keyIdx {
		switch x := t.raw[i].(type) {
		case []byte:
			cur[j] = append([]byte(nil), x...)
		default:
			cur[j] = x
		}
	}
	return cur
}

func (t *sqliteTable) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	if t.rows != nil {
		errs = append(errs, t.rows.Close())
	}
	if t.tx != nil {
		if err := t.tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
			errs = append(errs, err)
		}
	}
	if t.conn != nil {
		if err := t.conn.Close(); err != nil && !errors.Is(err, sql.ErrConnDone) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
