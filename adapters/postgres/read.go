package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapstore/snapstore/snapshot"
)

// pgTable reads one table by keyset pagination inside one REPEATABLE READ,
// READ ONLY transaction on one pinned connection.
type pgTable struct {
	source.Keyset
	src      *postgresSource
	conn     *pgxpool.Conn
	oid      uint32 // the relation's pg_class oid
	cols     []pgColumn
	keyIdx   []int // positions of the key columns in cols
	raw      [][]byte
	started  bool
	exported string // the snapshot ExportSnapshot returned
	// release, set for a reader of a point, gives the connection back to
	// the point, its transaction still open.
	release func()
	cksState
}

// pgSnapshotID is the form of pg_export_snapshot's ids ("00000003-0000001B-1").
var pgSnapshotID = regexp.MustCompile(`^[0-9A-Fa-f]+(-[0-9A-Fa-f]+)+$`)

// OpenTable implements Source: on one pinned connection, BEGIN ISOLATION
// LEVEL REPEATABLE READ, READ ONLY (in req.Snapshot's exported snapshot
// when set), the session parameters set again for the transaction (P4),
// then the table described and its key chosen (P3) inside that same
// snapshot, which every chunk reads (P1).
func (s *postgresSource) OpenTable(ctx context.Context, req source.TableRequest) (_ source.TableReader, err error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	t := &pgTable{src: s, conn: conn}
	defer func() {
		if err != nil {
			t.Close()
			err = s.scrub(err)
		}
	}()
	if req.Snapshot != "" && !pgSnapshotID.MatchString(req.Snapshot) {
		return nil, fmt.Errorf("adapters: %q is not a PostgreSQL snapshot id", req.Snapshot)
	}
	t.started = true
	if err := beginRead(ctx, conn, req.Snapshot); err != nil {
		return nil, err
	}
	if err := t.open(ctx, req); err != nil {
		return nil, err
	}
	return t, nil
}

// beginRead starts the read transaction on conn: BEGIN ISOLATION LEVEL
// REPEATABLE READ, READ ONLY, in the exported snapshot when snapshot is
// set (a checked id), then the session parameters for the transaction
// (P4). The statements of lock (lockStatements) run right after BEGIN,
// before the first query takes the transaction's snapshot (a LOCK TABLE
// takes none).
func beginRead(ctx context.Context, conn *pgxpool.Conn, snapshot string, lock ...string) error {
	exec := func(q string, args ...any) error {
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			return fmt.Errorf("%s: %w", q, wrapPostgresErr(ctx, err))
		}
		return nil
	}
	if err := exec("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"); err != nil {
		return err
	}
	for _, q := range lock {
		// The statement, which names every table, stays out of the error,
		// and is sent as simple protocol: a text that changes with the
		// tables is not worth a prepared statement on the server.
		if _, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			return fmt.Errorf("locking the tables of the point before its snapshot (ACCESS SHARE, lock_timeout %s; a DDL holds or waits for one of them): %w",
				pointLockTimeout, wrapPostgresErr(ctx, err))
		}
	}
	if snapshot != "" {
		if err := exec("SET TRANSACTION SNAPSHOT '" + snapshot + "'"); err != nil {
			return err
		}
	}
	var set []string
	var args []any
	for i, p := range postgresSession {
		set = append(set, fmt.Sprintf("set_config($%d, $%d, true)", 2*i+1, 2*i+2))
		args = append(args, p[0], p[1])
	}
	return exec("SELECT "+strings.Join(set, ", "), args...)
}

// open describes the table inside t.conn's read transaction and prepares
// the keyset read.
func (t *pgTable) open(ctx context.Context, req source.TableRequest) error {
	t.ChunkRows = req.ChunkRows
	if t.ChunkRows <= 0 {
		t.ChunkRows = t.src.chunkRows
	}
	if err := t.describe(ctx, req); err != nil {
		return err
	}
	t.buildQueries()
	return nil
}

// ExportSnapshot implements SnapshotSharer with pg_export_snapshot: the
// token is valid until this reader is closed.
func (t *pgTable) ExportSnapshot(ctx context.Context) (string, error) {
	if t.exported != "" {
		return t.exported, nil
	}
	if t.Rows != nil || t.Closed {
		return "", fmt.Errorf("adapters: exporting the snapshot of %s: the reader is reading or closed", t.Name)
	}
	if err := t.conn.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&t.exported); err != nil {
		return "", t.src.scrub(fmt.Errorf("exporting the snapshot of %s: %w", t.Name, wrapPostgresErr(ctx, err)))
	}
	return t.exported, nil
}

// describe resolves the resource, reads its columns and picks the key.
func (t *pgTable) describe(ctx context.Context, req source.TableRequest) error {
	conn := t.conn
	var def, database string
	if err := conn.QueryRow(ctx, "SELECT COALESCE(current_schema(), ''), current_database()").Scan(&def, &database); err != nil {
		return fmt.Errorf("reading the current schema: %w", wrapPostgresErr(ctx, err))
	}
	found := false
	for _, cand := range source.ResourceCandidates(req.Resource, def, '"') {
		if cand[0] == "" {
			continue
		}
		var kind string
		err := conn.QueryRow(ctx, `SELECT c.oid, c.relkind::text, `+postgresEstimate+`
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN `+postgresRelkinds, cand[0], cand[1]).Scan(&t.oid, &kind, &t.Resource.EstimatedRows)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("looking up resource %q: %w", req.Resource, wrapPostgresErr(ctx, err))
		}
		t.Resource.Schema, t.Resource.Name, t.Resource.Type = cand[0], cand[1], postgresTableType(kind)
		found = true
		break
	}
	if !found {
		// The caller names the resource and the connection (openResource).
		return fmt.Errorf("%w in database %s", source.ErrResourceNotFound, quotePostgresIdent(database))
	}
	// database.schema.table, which PostgreSQL reads as a name in the
	// current database, so errors name the database as MySQL's do.
	t.Name = quotePostgresIdent(database) + "." + t.qualified()
	rows, err := conn.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
			t.oid, t.typtype::text, t.typbasetype, n.nspname, t.typname, t.typcategory::text
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid JOIN pg_namespace n ON n.oid = t.typnamespace
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, t.oid)
	if err != nil {
		return fmt.Errorf("reading the columns of %s: %w", t.Name, wrapPostgresErr(ctx, err))
	}
	var domains []int // columns whose type is a domain
	for rows.Next() {
		var c pgColumn
		var base uint32
		if err := rows.Scan(&c.name, &c.typeName, &c.nullable, &c.baseOID, &c.baseTyptype, &base,
			&c.baseSchema, &c.baseName, &c.baseTypcategory); err != nil {
			rows.Close()
			return fmt.Errorf("reading the columns of %s: %w", t.Name, err)
		}
		if c.baseTyptype == "d" {
			c.baseOID = base
			domains = append(domains, len(t.cols))
		}
		t.cols = append(t.cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the columns of %s: %w", t.Name, wrapPostgresErr(ctx, err))
	}
	if len(t.cols) == 0 {
		return fmt.Errorf("%w: %s has no readable columns", source.ErrResourceNotFound, t.Name)
	}
	// A domain reads as its base type (a domain of a domain too).
	for _, i := range domains {
		c := &t.cols[i]
		if err := resolveDomain(ctx, conn, c); err != nil {
			return fmt.Errorf("reading the type of column %q of %s: %w", c.name, t.Name, wrapPostgresErr(ctx, err))
		}
	}
	// An array's elements map as columns of the element type (its base
	// type when that is a domain).
	for i := range t.cols {
		c := &t.cols[i]
		if c.baseTypcategory != "A" {
			continue
		}
		e := &pgColumn{name: c.name}
		var base uint32
		var delim string
		err := conn.QueryRow(ctx, `SELECT e.oid, format_type(e.oid, NULL), e.typtype::text, e.typbasetype, n.nspname,
				e.typname, e.typcategory::text, e.typdelim::text
			FROM pg_type a JOIN pg_type e ON e.oid = a.typelem JOIN pg_namespace n ON n.oid = e.typnamespace
			WHERE a.oid = $1 AND a.typlen = -1`, c.baseOID).
			Scan(&e.baseOID, &e.typeName, &e.baseTyptype, &base, &e.baseSchema, &e.baseName, &e.baseTypcategory, &delim)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // not an array of elements: postgresKind refuses it
		}
		if err == nil && e.baseTyptype == "d" {
			e.baseOID = base
			err = resolveDomain(ctx, conn, e)
		}
		if err != nil {
			return fmt.Errorf("reading the element type of column %q of %s: %w", c.name, t.Name, wrapPostgresErr(ctx, err))
		}
		if len(delim) != 1 {
			return fmt.Errorf("column %q of %s: element type %s has delimiter %q", c.name, t.Name, e.typeName, delim)
		}
		c.elem, c.delim = e, delim[0]
	}
	var errs []error
	for i := range t.cols {
		if err := postgresKind(&t.cols[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reading %s: %w", t.Name, err)
	}
	if err := t.pickKey(ctx, req.KeyColumns); err != nil {
		return err
	}
	t.TableSchema = snapshot.Schema{Columns: make([]snapshot.Column, len(t.cols))}
	for i, c := range t.cols {
		t.TableSchema.Columns[i] = snapshot.Column{Name: c.name, Kind: c.kind, SourceType: c.typeName, Nullable: c.nullable}
	}
	for _, i := range t.keyIdx {
		t.TableSchema.Key = append(t.TableSchema.Key, t.cols[i].name)
	}
	return nil
}

// resolveDomain follows c's domain (c.baseOID, a domain's base type) down
// to a type that is not a domain, setting c's base fields.
func resolveDomain(ctx context.Context, conn *pgxpool.Conn, c *pgColumn) error {
	for {
		var base uint32
		if err := conn.QueryRow(ctx, `SELECT t.typtype::text, t.typbasetype, n.nspname, t.typname, t.typcategory::text
			FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid = $1`, c.baseOID).
			Scan(&c.baseTyptype, &base, &c.baseSchema, &c.baseName, &c.baseTypcategory); err != nil {
			return err
		}
		if c.baseTyptype != "d" {
			return nil
		}
		c.baseOID = base
	}
}

// pgIndex is one unique index of a table.
type pgIndex struct {
	name    string
	primary bool
	cols    []string
	// usableKey: every column plain (no expression) and NOT NULL, the
	// index neither partial nor invalid.
	usableKey bool
}

// postgresUniqueKeys lists the unique indexes of relation oid (a
// partitioned table's own), the primary key first, then by fewer columns,
// then by name.
func postgresUniqueKeys(ctx context.Context, conn *pgxpool.Conn, oid uint32) ([]pgIndex, error) {
	rows, err := conn.Query(ctx, `SELECT ic.relname, i.indisprimary,
			array_agg(a.attname ORDER BY k.ord) FILTER (WHERE a.attname IS NOT NULL),
			bool_and(k.attnum > 0 AND COALESCE(a.attnotnull, false)) AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indisvalid
		FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
		CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
		LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0
		WHERE i.indrelid = $1 AND i.indisunique AND k.ord <= i.indnkeyatts
		GROUP BY ic.relname, i.indisprimary, i.indpred IS NULL, i.indexprs IS NULL, i.indisvalid
		ORDER BY NOT i.indisprimary, count(*), ic.relname`, oid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pgIndex
	for rows.Next() {
		var ix pgIndex
		if err := rows.Scan(&ix.name, &ix.primary, &ix.cols, &ix.usableKey); err != nil {
			return nil, err
		}
		out = append(out, ix)
	}
	return out, rows.Err()
}

// pickKey chooses the row key as mysqlTable.pickKey does (P3): explicit key
// columns, else the primary key, else the unique key over NOT NULL columns
// with the fewest columns (ties by index name), else ErrNoKey.
func (t *pgTable) pickKey(ctx context.Context, explicit []string) error {
	byName := map[string]int{}
	for i, c := range t.cols {
		byName[c.name] = i
	}
	uniques, err := postgresUniqueKeys(ctx, t.conn, t.oid)
	if err != nil {
		return fmt.Errorf("reading the keys of %s: %w", t.Name, wrapPostgresErr(ctx, err))
	}
	usable := func(ix pgIndex) bool {
		if !ix.usableKey {
			return false
		}
		for _, c := range ix.cols {
			if i, ok := byName[c]; !ok || !source.KeyKindOK(t.cols[i].kind) {
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
				return fmt.Errorf("%w: key column %q is not a column of %s", source.ErrNoKey, c, t.Name)
			}
			if !source.KeyKindOK(t.cols[i].kind) {
				return fmt.Errorf("%w: key column %q has type %s, which cannot be a key", source.ErrNoKey, c, t.cols[i].typeName)
			}
		}
		key = explicit
		for _, u := range uniques {
			if usable(u) && source.UniqueKeyOf(u.cols, explicit) {
				t.Unique = true
			}
		}
	} else {
		slices.SortStableFunc(uniques, func(a, b pgIndex) int {
			if a.primary != b.primary {
				if a.primary {
					return -1
				}
				return 1
			}
			return cmp.Compare(len(a.cols), len(b.cols))
		})
		for _, u := range uniques {
			if usable(u) {
				key = u.cols
				t.Unique = true
				break
			}
		}
		if key == nil {
			return fmt.Errorf("%w: %s has no primary key and no unique key over NOT NULL columns", source.ErrNoKey, t.Name)
		}
	}
	for _, c := range key {
		t.keyIdx = append(t.keyIdx, byName[c])
	}
	return nil
}

func (t *pgTable) qualified() string {
	return quotePostgresIdent(t.Resource.Schema) + "." + quotePostgresIdent(t.Resource.Name)
}

// buildQueries prepares the keyset read (source.Keyset.PrepareRowCompare)
// and sizes the buffers.
func (t *pgTable) buildQueries() {
	var sel []string
	for _, c := range t.cols {
		sel = append(sel, c.expr)
	}
	var keys, ph, hiPh, order []string
	for n, i := range t.keyIdx {
		c := &t.cols[i]
		q := quotePostgresIdent(c.name)
		keys = append(keys, q)
		ph = append(ph, c.keyPlaceholder(n+1))
		hiPh = append(hiPh, c.keyPlaceholder(len(t.keyIdx)+n+1))
		order = append(order, q)
	}
	t.PrepareRowCompare(t, t.Name, "SELECT "+strings.Join(sel, ", ")+" FROM "+t.Name, keys, ph, hiPh, order)
	t.raw = make([][]byte, len(t.cols))
	t.Dest = make([]any, len(t.cols))
	for i := range t.raw {
		t.Dest[i] = &t.raw[i]
	}
	t.Row = make([]snapshot.Value, len(t.cols))
	t.Query = t.queryChunk
}

// queryChunk sends one chunk query with every result column in text
// format (the server's own text, P4), as an unnamed statement: a pooled
// connection's cached prepared statement would fail with "cached plan must
// not change result type" once a column is retyped between runs.
func (t *pgTable) queryChunk(ctx context.Context, q string, args []any) (source.KeysetResult, error) {
	rows, err := t.conn.Query(ctx, q, append([]any{pgx.QueryExecModeExec, pgx.QueryResultFormats{pgx.TextFormatCode}}, args...)...)
	if err != nil {
		return nil, err
	}
	return &pgRows{rows: rows, t: t}, nil
}

// pgRows adapts pgx.Rows to source.KeysetResult: Scan hands out the raw text of
// each column (valid until the next Next), and the first Next checks that
// the result's column types are the described ones, so a column retyped
// during the run fails it rather than being read with the old mapping.
type pgRows struct {
	rows    pgx.Rows
	t       *pgTable
	checked bool
	err     error
}

func (r *pgRows) Next() bool {
	if r.err != nil || !r.rows.Next() {
		return false
	}
	if !r.checked {
		r.checked = true
		fds := r.rows.FieldDescriptions()
		if len(fds) != len(r.t.cols) {
			r.err = fmt.Errorf("the columns of %s changed during the read: %d, described %d", r.t.Name, len(fds), len(r.t.cols))
		} else {
			for i, fd := range fds {
				if c := &r.t.cols[i]; fd.DataTypeOID != c.resultOID {
					r.err = fmt.Errorf("column %q of %s changed type during the read (type oid %d, described %s)", c.name, r.t.Name, fd.DataTypeOID, c.typeName)
					break
				}
			}
		}
		if r.err != nil {
			r.rows.Close()
			return false
		}
	}
	return true
}

func (r *pgRows) Scan(dest ...any) error {
	raw := r.rows.RawValues()
	if len(raw) != len(dest) {
		return fmt.Errorf("adapters: %d values for %d columns", len(raw), len(dest))
	}
	for i, d := range dest {
		*d.(*[]byte) = raw[i]
	}
	return nil
}

func (r *pgRows) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.rows.Err()
}

func (r *pgRows) Close() error { r.rows.Close(); return nil }

// SourceErr implements source.KeysetRows: a read that read_timeout ended
// (readDeadlineConn) is a source that does not answer, naming the bound.
func (t *pgTable) SourceErr(ctx context.Context, err error) error {
	if ctx.Err() == nil && t.src.readTO > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		return &source.SourceError{SourceAddr: t.src.addr, Cause: "timeout", Timeout: t.src.readTO, Bound: "read_timeout", Err: t.src.scrub(err)}
	}
	return wrapPostgresErr(ctx, err)
}

// ConvertRow implements source.KeysetRows.
func (t *pgTable) ConvertRow() error { return source.ConvertRow(t.cols, t.raw, t.Row) }

// RowCursor copies the current row's key arguments: the text of each key
// value as the server wrote it, which keyPlaceholder casts back.
func (t *pgTable) RowCursor() []any {
	cur := make([]any, len(t.keyIdx))
	for j, i := range t.keyIdx {
		cur[j] = string(t.raw[i])
	}
	return cur
}

// ReadErr implements source.KeysetRows: the connection's secrets are scrubbed.
func (t *pgTable) ReadErr(_ context.Context, err error) error { return t.src.scrub(err) }

// Close implements TableReader: ends the transaction and returns the
// connection to the pool (pgxpool destroys one left broken or inside a
// transaction).
func (t *pgTable) Close() error {
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
	if t.started && !t.conn.Conn().IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := t.conn.Exec(ctx, "ROLLBACK")
		cancel()
		if err != nil && t.Err() == nil {
			errs = append(errs, fmt.Errorf("ending the read transaction: %w", err))
		}
	}
	t.conn.Release()
	return t.src.scrub(errors.Join(errs...))
}
