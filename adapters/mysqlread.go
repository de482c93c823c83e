package adapters

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// mysqlColumn is one source column and how it maps (docs/types.md).
type mysqlColumn struct {
	name       string
	dataType   string // information_schema DATA_TYPE, lower case
	columnType string // COLUMN_TYPE, e.g. "decimal(5,2) unsigned"
	nullable   bool
	charset    string // CHARACTER_SET_NAME, "" for non-text
	precision  int64  // NUMERIC_PRECISION (decimal)
	scale      int64  // NUMERIC_SCALE (decimal)
	kind       snapshot.Kind
	bit        bool // BIT(n): big-endian bytes to KindUint
	enumLike   bool // ENUM or SET: keyset compares col+0
}

// mysqlKind maps a column to its snapshot kind; the table in docs/types.md
// is the contract and mysql_types_test.go checks each row against MariaDB.
func mysqlKind(c *mysqlColumn, isJSON bool) (snapshot.Kind, error) {
	unsigned := strings.Contains(c.columnType, "unsigned")
	switch c.dataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		if unsigned {
			return snapshot.KindUint, nil
		}
		return snapshot.KindInt, nil
	case "year":
		return snapshot.KindInt, nil
	case "bit":
		c.bit = true
		return snapshot.KindUint, nil
	case "decimal", "numeric":
		return snapshot.KindDecimal, nil
	case "float", "double", "real", "double precision":
		return snapshot.KindFloat, nil
	case "date":
		return snapshot.KindDate, nil
	case "datetime", "timestamp":
		return snapshot.KindDateTime, nil
	case "time":
		return snapshot.KindTime, nil
	case "json":
		return snapshot.KindJSON, nil
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		if isJSON {
			return snapshot.KindJSON, nil
		}
		if c.charset == "binary" {
			return snapshot.KindBytes, nil
		}
		return snapshot.KindString, nil
	case "enum", "set":
		c.enumLike = true
		return snapshot.KindString, nil
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return snapshot.KindBytes, nil
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
		"multipolygon", "geometrycollection", "geomcollection":
		return snapshot.KindGeometry, nil
	case "uuid", "inet4", "inet6":
		return snapshot.KindString, nil
	}
	return 0, fmt.Errorf("%w: column %q has type %s", ErrUnsupportedType, c.name, c.columnType)
}

// convert turns the text-protocol bytes of one value into a Value. b == nil
// is NULL. Bytes alias b (valid until the next row).
func (c *mysqlColumn) convert(b []byte) (snapshot.Value, error) {
	if b == nil {
		return snapshot.Value{}, nil
	}
	switch c.kind {
	case snapshot.KindInt:
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.columnType, err)
		}
		return snapshot.Value{Kind: snapshot.KindInt, Int: n}, nil
	case snapshot.KindUint:
		if c.bit {
			if len(b) > 8 {
				return snapshot.Value{}, fmt.Errorf("column %q: BIT value of %d bytes", c.name, len(b))
			}
			var u uint64
			for _, x := range b {
				u = u<<8 | uint64(x)
			}
			return snapshot.Value{Kind: snapshot.KindUint, Uint: u}, nil
		}
		u, err := strconv.ParseUint(string(b), 10, 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.columnType, err)
		}
		return snapshot.Value{Kind: snapshot.KindUint, Uint: u}, nil
	case snapshot.KindFloat:
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.columnType, err)
		}
		return snapshot.Value{Kind: snapshot.KindFloat, Float: f}, nil
	}
	return snapshot.Value{Kind: c.kind, Bytes: b}, nil
}

// keyArg returns the Go value that stands for v in a keyset predicate:
// typed numbers (so BIGINT UNSIGNED is not compared as a double), []byte
// for binary (sent as _binary'...'), text otherwise. The result owns its
// bytes.
func (c *mysqlColumn) keyArg(v snapshot.Value) any {
	switch v.Kind {
	case snapshot.KindInt:
		return v.Int
	case snapshot.KindUint:
		return v.Uint
	case snapshot.KindFloat:
		return v.Float
	case snapshot.KindBytes:
		return append([]byte(nil), v.Bytes...)
	}
	return string(v.Bytes)
}

// keyPlaceholder is the SQL for one key value in a keyset predicate.
func (c *mysqlColumn) keyPlaceholder() string {
	if c.kind == snapshot.KindDecimal {
		return fmt.Sprintf("CAST(? AS DECIMAL(%d,%d))", c.precision, c.scale)
	}
	return "?"
}

// keyExpr is the column expression compared in a keyset predicate: ENUM and
// SET compare by their index (col+0), which is also their ORDER BY order.
func (c *mysqlColumn) keyExpr() string {
	if c.enumLike {
		return quoteMySQLIdent(c.name) + "+0"
	}
	return quoteMySQLIdent(c.name)
}

// mysqlTable reads one table by keyset pagination inside one consistent
// read-only transaction on one pinned connection.
type mysqlTable struct {
	keysetPager
	src     *mysqlSource
	conn    *sql.Conn
	res     Resource
	cols    []mysqlColumn
	keyIdx  []int  // positions of the key columns in cols
	first   string // query of the first chunk
	next    string // query of the following chunks
	raw     []sql.RawBytes
	dest    []any
	vals    []snapshot.Value
	started bool
	err     error
	closed  bool
	schema  snapshot.Schema
}

// OpenTable implements Source.
func (s *mysqlSource) OpenTable(ctx context.Context, req TableRequest) (_ TableReader, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.scrub(fmt.Errorf("connecting through data connection %q: %w", s.name, wrapSourceErr(ctx, err)))
	}
	t := &mysqlTable{src: s, conn: conn}
	t.chunk = req.ChunkRows
	if t.chunk <= 0 {
		t.chunk = s.chunkRows
	}
	defer func() {
		if err != nil {
			t.Close()
			err = s.scrub(err)
		}
	}()
	exec := func(q string) error {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, wrapSourceErr(ctx, err))
		}
		return nil
	}
	if err := exec("SET SESSION time_zone = '+00:00'"); err != nil {
		return nil, err
	}
	if err := t.describe(ctx, req); err != nil {
		return nil, err
	}
	// One consistent point in time for the whole pull; the driver's
	// BeginTx cannot ask for a consistent snapshot, so send it ourselves.
	if err := exec("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return nil, err
	}
	if err := exec("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return nil, err
	}
	t.started = true
	t.buildQueries()
	return t, nil
}

// describe resolves the resource, reads its columns and picks the key.
func (t *mysqlTable) describe(ctx context.Context, req TableRequest) error {
	conn := t.conn
	var def sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&def); err != nil {
		return fmt.Errorf("reading the default database: %w", wrapSourceErr(ctx, err))
	}
	found := false
	for _, cand := range resourceCandidates(req.Resource, def.String, '`') {
		if cand[0] == "" {
			continue
		}
		var typ string
		var est int64
		err := conn.QueryRowContext(ctx,
			`SELECT TABLE_TYPE, COALESCE(TABLE_ROWS, 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`,
			cand[0], cand[1]).Scan(&typ, &est)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("looking up resource %q: %w", req.Resource, wrapSourceErr(ctx, err))
		}
		t.res = Resource{Schema: cand[0], Name: cand[1], Type: mysqlTableType(typ), EstimatedRows: est}
		found = true
		break
	}
	if !found {
		return fmt.Errorf("%w: %q through data connection %q", ErrResourceNotFound, req.Resource, t.src.name)
	}
	rows, err := conn.QueryContext(ctx, `SELECT COLUMN_NAME, LOWER(DATA_TYPE), LOWER(COLUMN_TYPE), IS_NULLABLE,
		COALESCE(CHARACTER_SET_NAME, ''), COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0)
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
		t.res.Schema, t.res.Name)
	if err != nil {
		return fmt.Errorf("reading the columns of %s: %w", t.qualified(), wrapSourceErr(ctx, err))
	}
	for rows.Next() {
		var c mysqlColumn
		var nullable string
		if err := rows.Scan(&c.name, &c.dataType, &c.columnType, &nullable, &c.charset, &c.precision, &c.scale); err != nil {
			rows.Close()
			return fmt.Errorf("reading the columns of %s: %w", t.qualified(), err)
		}
		c.nullable = nullable == "YES"
		t.cols = append(t.cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the columns of %s: %w", t.qualified(), wrapSourceErr(ctx, err))
	}
	if len(t.cols) == 0 {
		return fmt.Errorf("%w: %s has no readable columns", ErrResourceNotFound, t.qualified())
	}
	jsonCols := t.mariadbJSONColumns(ctx)
	var errs []error
	for i := range t.cols {
		c := &t.cols[i]
		k, err := mysqlKind(c, jsonCols[c.name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.kind = k
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reading %s: %w", t.qualified(), err)
	}
	if err := t.pickKey(ctx, req.KeyColumns); err != nil {
		return err
	}
	t.schema = snapshot.Schema{Columns: make([]snapshot.Column, len(t.cols))}
	for i, c := range t.cols {
		t.schema.Columns[i] = snapshot.Column{Name: c.name, Kind: c.kind, SourceType: c.columnType, Nullable: c.nullable}
	}
	for _, i := range t.keyIdx {
		t.schema.Key = append(t.schema.Key, t.cols[i].name)
	}
	return nil
}

// mariadbJSONColumns finds MariaDB JSON columns: MariaDB stores JSON as
// LONGTEXT with a CHECK (json_valid(`col`)) constraint named after the
// column. MySQL's CHECK_CONSTRAINTS has no TABLE_NAME column; there JSON
// is a real type and the query's error is ignored.
func (t *mysqlTable) mariadbJSONColumns(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	rows, err := t.conn.QueryContext(ctx, `SELECT CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?`, t.res.Schema, t.res.Name)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var name, clause string
		if rows.Scan(&name, &clause) != nil {
			return out
		}
		if strings.EqualFold(strings.TrimSpace(clause), "json_valid("+quoteMySQLIdent(name)+")") {
			out[name] = true
		}
	}
	return out
}

// pickKey chooses the row key: explicit key columns, else the primary
// key, else the unique key over NOT NULL columns with the fewest columns
// (ties by index name), else ErrNoKey.
func (t *mysqlTable) pickKey(ctx context.Context, explicit []string) error {
	byName := map[string]int{}
	for i, c := range t.cols {
		byName[c.name] = i
	}
	rows, err := t.conn.QueryContext(ctx, `SELECT INDEX_NAME, COLUMN_NAME, NON_UNIQUE FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`, t.res.Schema, t.res.Name)
	if err != nil {
		return fmt.Errorf("reading the keys of %s: %w", t.qualified(), wrapSourceErr(ctx, err))
	}
	type index struct {
		name string
		cols []string
	}
	var uniques []index
	for rows.Next() {
		var name, col string
		var nonUnique int
		if err := rows.Scan(&name, &col, &nonUnique); err != nil {
			rows.Close()
			return fmt.Errorf("reading the keys of %s: %w", t.qualified(), err)
		}
		if nonUnique != 0 {
			continue
		}
		if n := len(uniques); n == 0 || uniques[n-1].name != name {
			uniques = append(uniques, index{name: name})
		}
		uniques[len(uniques)-1].cols = append(uniques[len(uniques)-1].cols, col)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the keys of %s: %w", t.qualified(), wrapSourceErr(ctx, err))
	}
	usable := func(cols []string) bool {
		for _, c := range cols {
			i, ok := byName[c]
			if !ok || t.cols[i].nullable || !keyKindOK(t.cols[i].kind) {
				return false
			}
		}
		return true
	}
	var key []string
	if len(explicit) > 0 {
		for _, c := range explicit {
			i, ok := byName[c]
			if !ok {
				return fmt.Errorf("%w: key column %q is not a column of %s", ErrNoKey, c, t.qualified())
			}
			if !keyKindOK(t.cols[i].kind) {
				return fmt.Errorf("%w: key column %q has type %s, which cannot be a key", ErrNoKey, c, t.cols[i].columnType)
			}
		}
		key = explicit
		for _, u := range uniques {
			if slices.Equal(u.cols, explicit) {
				t.unique = true
			}
		}
	} else {
		// The primary key first, then fewer columns; ties keep index name
		// order.
		slices.SortStableFunc(uniques, func(a, b index) int {
			if pa, pb := a.name == "PRIMARY", b.name == "PRIMARY"; pa != pb {
				if pa {
					return -1
				}
				return 1
			}
			return cmp.Compare(len(a.cols), len(b.cols))
		})
		for _, u := range uniques {
			if usable(u.cols) {
				key = u.cols
				t.unique = true
				break
			}
		}
		if key == nil {
			return fmt.Errorf("%w: %s has no primary key and no unique key over NOT NULL columns; set key_columns", ErrNoKey, t.qualified())
		}
	}
	for _, c := range key {
		t.keyIdx = append(t.keyIdx, byName[c])
	}
	return nil
}

func keyKindOK(k snapshot.Kind) bool {
	return k != snapshot.KindJSON && k != snapshot.KindGeometry && k != snapshot.KindNull
}

func (t *mysqlTable) qualified() string {
	return quoteMySQLIdent(t.res.Schema) + "." + quoteMySQLIdent(t.res.Name)
}

// buildQueries writes the chunk queries:
//
//	SELECT cols[, enumkey+0...] FROM `s`.`t` ORDER BY k1, k2 LIMIT n
//	SELECT ... WHERE (k1 > ?) OR (k1 = ? AND k2 > ?) ORDER BY k1, k2 LIMIT n
//
// The OR form (not a row constructor) lets MariaDB's range optimizer use
// the key index. A non-unique explicit key reads with >= on the last
// column and skips the row already returned.
func (t *mysqlTable) buildQueries() {
	var sel []string
	for _, c := range t.cols {
		sel = append(sel, quoteMySQLIdent(c.name))
	}
	for _, i := range t.keyIdx {
		if t.cols[i].enumLike {
			sel = append(sel, t.cols[i].keyExpr())
		}
	}
	var order []string
	for _, i := range t.keyIdx {
		order = append(order, quoteMySQLIdent(t.cols[i].name))
	}
	base := "SELECT " + strings.Join(sel, ", ") + " FROM " + t.qualified()
	tail := " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(t.chunk)
	t.first = base + tail
	var ors []string
	for n := range t.keyIdx {
		var ands []string
		for j := 0; j < n; j++ {
			c := &t.cols[t.keyIdx[j]]
			ands = append(ands, c.keyExpr()+" = "+c.keyPlaceholder())
		}
		c := &t.cols[t.keyIdx[n]]
		op := " > "
		if !t.unique && n == len(t.keyIdx)-1 {
			op = " >= "
		}
		ands = append(ands, c.keyExpr()+op+c.keyPlaceholder())
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	t.next = base + " WHERE " + strings.Join(ors, " OR ") + tail
	if !t.unique {
		// One more row: the first row of a >= chunk repeats the last one.
		t.next = base + " WHERE " + strings.Join(ors, " OR ") + " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(t.chunk+1)
	}
	n := len(t.cols) + len(t.enumKeys())
	t.raw = make([]sql.RawBytes, n)
	t.dest = make([]any, n)
	for i := range t.raw {
		t.dest[i] = &t.raw[i]
	}
	t.vals = make([]snapshot.Value, len(t.cols))
}

func (t *mysqlTable) enumKeys() []int {
	var out []int
	for _, i := range t.keyIdx {
		if t.cols[i].enumLike {
			out = append(out, i)
		}
	}
	return out
}

// nextArgs expands the cursor into the arguments of t.next.
func (t *mysqlTable) nextArgs(cursor []any) []any {
	var args []any
	for n := range t.keyIdx {
		args = append(args, cursor[:n+1]...)
	}
	return args
}

// Schema implements TableReader.
func (t *mysqlTable) Schema() snapshot.Schema { return t.schema }

// Table implements TableReader.
func (t *mysqlTable) Table() Resource { return t.res }

// Values implements TableReader.
func (t *mysqlTable) Values() []snapshot.Value { return t.vals }

// Err implements TableReader.
func (t *mysqlTable) Err() error { return t.err }

// Next implements TableReader.
func (t *mysqlTable) Next(ctx context.Context) bool {
	if t.err != nil || t.closed {
		return false
	}
	ok, err := t.nextRow(ctx, t, t.qualified(), t.schema.Key)
	if err != nil {
		t.fail(ctx, err)
	}
	return ok
}

// queryChunk implements keysetRows.
func (t *mysqlTable) queryChunk(ctx context.Context, cursor []any) (*sql.Rows, error) {
	if cursor == nil {
		return t.conn.QueryContext(ctx, t.first)
	}
	return t.conn.QueryContext(ctx, t.next, t.nextArgs(cursor)...)
}

// sourceErr implements keysetRows.
func (t *mysqlTable) sourceErr(ctx context.Context, err error) error { return wrapSourceErr(ctx, err) }

// scanRow implements keysetRows.
func (t *mysqlTable) scanRow(rows *sql.Rows) error {
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

// rowCursor copies the current row's key arguments.
func (t *mysqlTable) rowCursor() []any {
	cur := make([]any, len(t.keyIdx))
	extra := len(t.cols)
	for j, i := range t.keyIdx {
		c := &t.cols[i]
		if c.enumLike {
			n, _ := strconv.ParseUint(string(t.raw[extra]), 10, 64)
			cur[j] = n
			extra++
			continue
		}
		cur[j] = c.keyArg(t.vals[i])
	}
	return cur
}

func equalCursor(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch x := a[i].(type) {
		case []byte:
			y, ok := b[i].([]byte)
			if !ok || string(x) != string(y) {
				return false
			}
		default:
			if a[i] != b[i] {
				return false
			}
		}
	}
	return true
}

func (t *mysqlTable) fail(ctx context.Context, err error) {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	t.err = t.src.scrub(err)
}

// Close implements TableReader: ends the transaction and returns the
// connection to the pool (a connection broken by cancellation is dropped
// by database/sql).
func (t *mysqlTable) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	if t.rows != nil {
		errs = append(errs, t.rows.Close())
	}
	if t.started {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := t.conn.ExecContext(ctx, "ROLLBACK")
		cancel()
		if err != nil && t.err == nil {
			errs = append(errs, fmt.Errorf("ending the read transaction: %w", err))
		}
	}
	err := t.conn.Close()
	if err != nil && !errors.Is(err, sql.ErrConnDone) {
		errs = append(errs, err)
	}
	return t.src.scrub(errors.Join(errs...))
}
