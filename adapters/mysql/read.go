package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"slices"
	"strings"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// mysqlTable reads one table by keyset pagination inside one consistent
// read-only transaction on one pinned connection.
type mysqlTable struct {
	source.Keyset
	src     *mysqlSource
	conn    *sql.Conn
	cols    []mysqlColumn
	keyIdx  []int // positions of the key columns in cols
	raw     []mysqlCell
	started bool
	// chunkAt is when the current chunk query was sent (query).
	chunkAt time.Time
	// release, set for a reader of a point, gives the connection back to
	// the point, its transaction still open.
	release func()
	// crc32c: the server has CRC32C (MariaDB 10.8 and later), and row
	// checksums take their cheaper form (checksum.go).
	crc32c bool
}

// OpenTable implements Source: on one pinned connection, the session in
// UTC (P4), the table described and its key chosen (P3), then REPEATABLE
// READ and START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY, inside
// which every chunk is read (P1).
func (s *mysqlSource) OpenTable(ctx context.Context, req source.TableRequest) (_ source.TableReader, err error) {
	if err := source.NoSharedSnapshot(req); err != nil {
		return nil, err
	}
	conn, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	t := s.newTable(conn, req)
	defer func() {
		if err != nil {
			t.Close()
			err = s.scrub(err)
		}
	}()
	exec := func(q string) error {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, wrapMySQLErr(ctx, err))
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

// OpenTable implements source.Point: the table described and read inside
// a free connection's consistent snapshot.
func (p *mysqlPoint) OpenTable(ctx context.Context, req source.TableRequest) (_ source.TableReader, err error) {
	if err := source.NoSharedSnapshot(req); err != nil {
		return nil, err
	}
	c, err := p.conns.Take(ctx)
	if err != nil {
		return nil, err
	}
	t := p.src.newTable(c, req)
	t.release = func() { p.conns.Put(c, t) }
	p.conns.Opened(t)
	if err := t.describe(ctx, req); err != nil {
		t.Close()
		return nil, p.src.scrub(err)
	}
	t.buildQueries()
	return t, nil
}

// newTable is a reader of req on conn, not yet described.
func (s *mysqlSource) newTable(conn *sql.Conn, req source.TableRequest) *mysqlTable {
	t := &mysqlTable{src: s, conn: conn}
	t.Conn = conn
	t.Query = t.query
	t.ChunkRows = req.ChunkRows
	if t.ChunkRows <= 0 {
		t.ChunkRows = s.chunkRows
	}
	return t
}

// describe resolves the resource, reads its columns and picks the key.
func (t *mysqlTable) describe(ctx context.Context, req source.TableRequest) error {
	conn := t.conn
	var def sql.NullString
	var version string
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE(), VERSION()").Scan(&def, &version); err != nil {
		return fmt.Errorf("reading the default database: %w", wrapMySQLErr(ctx, err))
	}
	t.crc32c = hasCRC32C(version)
	found := false
	for _, cand := range source.ResourceCandidates(req.Resource, def.String, '`') {
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
			return fmt.Errorf("looking up resource %q: %w", req.Resource, wrapMySQLErr(ctx, err))
		}
		t.Resource = source.Resource{Schema: cand[0], Name: cand[1], Type: mysqlTableType(typ), EstimatedRows: est}
		found = true
		break
	}
	if !found {
		return source.ErrResourceNotFound // the caller names the resource and the connection (openResource)
	}
	rows, err := conn.QueryContext(ctx, `SELECT COLUMN_NAME, LOWER(DATA_TYPE), LOWER(COLUMN_TYPE), IS_NULLABLE,
		COALESCE(CHARACTER_SET_NAME, ''), COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0),
		LOWER(EXTRA), COALESCE(GENERATION_EXPRESSION, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
		t.Resource.Schema, t.Resource.Name)
	if err != nil {
		return fmt.Errorf("reading the columns of %s: %w", t.qualified(), wrapMySQLErr(ctx, err))
	}
	for rows.Next() {
		var c mysqlColumn
		var nullable, extra string
		if err := rows.Scan(&c.name, &c.dataType, &c.columnType, &nullable, &c.charset, &c.precision, &c.scale, &extra, &c.genExpr); err != nil {
			rows.Close()
			return fmt.Errorf("reading the columns of %s: %w", t.qualified(), err)
		}
		c.nullable = nullable == "YES"
		switch {
		case strings.Contains(extra, "virtual"):
			c.generated = "virtual"
		case strings.Contains(extra, "stored") || strings.Contains(extra, "persistent"):
			c.generated = "stored"
		}
		t.cols = append(t.cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the columns of %s: %w", t.qualified(), wrapMySQLErr(ctx, err))
	}
	if len(t.cols) == 0 {
		return fmt.Errorf("%w: %s has no readable columns", source.ErrResourceNotFound, t.qualified())
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
	t.TableSchema = snapshot.Schema{Columns: make([]snapshot.Column, len(t.cols))}
	for i, c := range t.cols {
		t.TableSchema.Columns[i] = snapshot.Column{Name: c.name, Kind: c.kind, SourceType: c.columnType, Nullable: c.nullable}
	}
	for _, i := range t.keyIdx {
		t.TableSchema.Key = append(t.TableSchema.Key, t.cols[i].name)
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
		WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?`, t.Resource.Schema, t.Resource.Name)
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
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`, t.Resource.Schema, t.Resource.Name)
	if err != nil {
		return fmt.Errorf("reading the keys of %s: %w", t.qualified(), wrapMySQLErr(ctx, err))
	}
	var uniques []mysqlIndex
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
			uniques = append(uniques, mysqlIndex{name: name})
		}
		uniques[len(uniques)-1].cols = append(uniques[len(uniques)-1].cols, col)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the keys of %s: %w", t.qualified(), wrapMySQLErr(ctx, err))
	}
	usable := func(cols []string) bool {
		for _, c := range cols {
			i, ok := byName[c]
			if !ok || t.cols[i].nullable || !source.KeyKindOK(t.cols[i].kind) {
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
				return fmt.Errorf("%w: key column %q is not a column of %s", source.ErrNoKey, c, t.qualified())
			}
			if !source.KeyKindOK(t.cols[i].kind) {
				return fmt.Errorf("%w: key column %q has type %s, which cannot be a key", source.ErrNoKey, c, t.cols[i].columnType)
			}
		}
		key = explicit
		// Unique only over NOT NULL columns, as for a key of our own
		// choosing: the key ranges of chunk checksums (u <= ?, u > ?)
		// hold no NULL key, so a nullable key is read in full, where a
		// NULL key fails the run.
		for _, u := range uniques {
			if usable(u.cols) && source.UniqueKeyOf(u.cols, explicit) {
				t.Unique = true
			}
		}
	} else {
		sortMySQLKeys(uniques)
		for _, u := range uniques {
			if usable(u.cols) {
				key = u.cols
				t.Unique = true
				break
			}
		}
		if key == nil {
			return fmt.Errorf("%w: %s has no primary key and no unique key over NOT NULL columns", source.ErrNoKey, t.qualified())
		}
	}
	for _, c := range key {
		t.keyIdx = append(t.keyIdx, byName[c])
	}
	return nil
}

// mysqlIndex is a unique index: its name and columns in index order.
type mysqlIndex struct {
	name string
	cols []string
}

// sortMySQLKeys orders unique indexes as a run prefers them for its key:
// the primary key first, then fewer columns; ties keep index name order.
func sortMySQLKeys(uniques []mysqlIndex) {
	slices.SortStableFunc(uniques, func(a, b mysqlIndex) int {
		if pa, pb := a.name == "PRIMARY", b.name == "PRIMARY"; pa != pb {
			if pa {
				return -1
			}
			return 1
		}
		return cmp.Compare(len(a.cols), len(b.cols))
	})
}

func (t *mysqlTable) qualified() string {
	return quoteMySQLIdent(t.Resource.Schema) + "." + quoteMySQLIdent(t.Resource.Name)
}

// Close implements TableReader: ends the transaction and returns the
// connection to the pool (a connection broken by cancellation is dropped
// by database/sql).
func (t *mysqlTable) Close() error {
	if t.Closed {
		return nil
	}
	t.Closed = true
	var errs []error
	if t.Rows != nil {
		errs = append(errs, t.Rows.Close())
		t.Rows = nil
	}
	if t.release != nil {
		t.release()
		return t.src.scrub(errors.Join(errs...))
	}
	if t.started {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := t.conn.ExecContext(ctx, "ROLLBACK")
		cancel()
		if err != nil && t.Err() == nil {
			errs = append(errs, fmt.Errorf("ending the read transaction: %w", err))
		}
	}
	err := t.conn.Close()
	if err != nil && !errors.Is(err, sql.ErrConnDone) {
		errs = append(errs, err)
	}
	return t.src.scrub(errors.Join(errs...))
}
