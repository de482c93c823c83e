package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"slices"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

// sqliteTable reads one table by keyset pagination inside one read
// transaction on one pinned connection.
type sqliteTable struct {
	source.Keyset
	src    *sqliteSource
	conn   *sql.Conn
	tx     *sql.Tx
	cols   []sqliteColumn
	keyIdx []int
	raw    []any
	// The checksums' signature and why the key allows no ranges ("": it
	// does; checksum.go), read once.
	cksDone        bool
	cksSig, cksWhy string
	// release, set for a reader of a point, gives the transaction back
	// to the point instead of ending it.
	release func()
}

// OpenTable implements Source: one read transaction on one pinned
// connection, inside which every chunk is read (P1). The resource is a
// table or view name of the main schema ("main.t" and quoted "\"a.b\"" are
// accepted).
func (s *sqliteSource) OpenTable(ctx context.Context, req source.TableRequest) (_ source.TableReader, err error) {
	if err := source.NoSharedSnapshot(req); err != nil {
		return nil, err
	}
	t := &sqliteTable{src: s}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	t.conn, err = s.db.Conn(ctx)
	if err != nil {
		return nil, s.openError(ctx, err)
	}
	// A read transaction: every chunk sees the same database state.
	t.tx, err = t.conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("starting a read transaction on %q: %w", s.name, s.wrap(err))
	}
	if err := t.describe(ctx, req); err != nil {
		return nil, err
	}
	return t, nil
}

// describe looks the resource up inside t.tx, reads its columns, picks
// its key and prepares the keyset read.
func (t *sqliteTable) describe(ctx context.Context, req source.TableRequest) (err error) {
	s := t.src
	t.ChunkRows = req.ChunkRows
	if t.ChunkRows <= 0 {
		t.ChunkRows = s.chunkRows
	}
	t.Conn = t.tx
	name := ""
	for _, cand := range source.ResourceCandidates(req.Resource, "main", '"') {
		if cand[0] != "main" {
			continue
		}
		var typ string
		err := t.tx.QueryRowContext(ctx, `SELECT type FROM sqlite_schema WHERE type IN ('table','view') AND name = ?`, cand[1]).Scan(&typ)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("looking up resource %q: %w", req.Resource, s.wrap(err))
		}
		name = cand[1]
		t.Resource = source.Resource{Name: name, Type: typ}
		break
	}
	if name == "" {
		return source.ErrResourceNotFound // the caller names the resource and the connection (openResource)
	}
	if t.cols, err = sqliteColumns(ctx, t.tx, name); err != nil {
		return err
	}
	if err := t.pickKey(ctx, req.KeyColumns); err != nil {
		return err
	}
	if t.Resource.Type == "table" {
		// Best effort: the count is only the progress estimate (0 when
		// it fails); a table that cannot be read fails the pull itself.
		_ = t.tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoteSQLiteIdent(name)).Scan(&t.Resource.EstimatedRows)
	}
	t.TableSchema = snapshot.Schema{Columns: make([]snapshot.Column, len(t.cols))}
	for i, c := range t.cols {
		t.TableSchema.Columns[i] = snapshot.Column{Name: c.name, Kind: c.kind, SourceType: c.decl, Nullable: !c.notNull && c.pk == 0}
	}
	for _, i := range t.keyIdx {
		t.TableSchema.Key = append(t.TableSchema.Key, t.cols[i].name)
	}
	t.build()
	return nil
}

// pickKey chooses the row key (P3): explicit key columns, else the
// primary key, else the first unique index, by name, over NOT NULL
// columns, else ErrNoKey.
func (t *sqliteTable) pickKey(ctx context.Context, explicit []string) error {
	byName := map[string]int{}
	for i, c := range t.cols {
		byName[c.name] = i
	}
	if len(explicit) > 0 {
		for _, c := range explicit {
			i, ok := byName[c]
			if !ok {
				return fmt.Errorf("%w: key column %q is not a column of %s", source.ErrNoKey, c, t.Resource.Name)
			}
			t.keyIdx = append(t.keyIdx, i)
		}
		return nil
	}
	key, err := sqliteDefaultKey(ctx, t.tx, t.Resource.Name, t.cols)
	if err != nil {
		return err
	}
	if key != nil {
		t.keyIdx, t.Unique = key, true
		return nil
	}
	return fmt.Errorf("%w: %s has no primary key and no unique index over NOT NULL columns", source.ErrNoKey, t.Resource.Name)
}

// sqliteQuerier is what reads the schema: the read transaction, or the
// database when resources are listed.
type sqliteQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// sqliteColumns reads the columns of table name and maps their kinds.
func sqliteColumns(ctx context.Context, q sqliteQuerier, name string) ([]sqliteColumn, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?)`, name)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", name, err)
	}
	defer rows.Close()
	var cols []sqliteColumn
	for rows.Next() {
		var c sqliteColumn
		var nn int
		if err := rows.Scan(&c.name, &c.decl, &nn, &c.pk); err != nil {
			return nil, fmt.Errorf("reading the columns of %s: %w", name, err)
		}
		c.notNull = nn != 0
		c.kind = sqliteKind(c.decl)
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", name, err)
	}
	return cols, nil
}

// sqliteDefaultKey returns the positions in cols of the key a run chooses
// without key_columns: the primary key, else the first unique index, by
// name, over NOT NULL columns (not partial); nil when there is none.
func sqliteDefaultKey(ctx context.Context, q sqliteQuerier, table string, cols []sqliteColumn) ([]int, error) {
	byName := map[string]int{}
	var pk []int
	for i, c := range cols {
		byName[c.name] = i
		if c.pk > 0 {
			pk = append(pk, i)
		}
	}
	slices.SortFunc(pk, func(a, b int) int { return cmp.Compare(cols[a].pk, cols[b].pk) })
	if len(pk) > 0 {
		return pk, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT il.name, ii.name FROM pragma_index_list(?) il, pragma_index_info(il.name) ii
		WHERE il."unique" = 1 AND il.partial = 0 ORDER BY il.name, ii.seqno`, table)
	if err != nil {
		return nil, fmt.Errorf("reading the indexes of %s: %w", table, err)
	}
	defer rows.Close()
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
			return nil, fmt.Errorf("reading the indexes of %s: %w", table, err)
		}
		if len(idx) == 0 || idx[len(idx)-1].name != iname {
			idx = append(idx, &index{name: iname, ok: true})
		}
		cur := idx[len(idx)-1]
		i, found := byName[col.String]
		if !col.Valid || !found || !cols[i].notNull {
			cur.ok = false
			continue
		}
		cur.cols = append(cur.cols, i)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the indexes of %s: %w", table, err)
	}
	for _, ix := range idx {
		if ix.ok {
			return ix.cols, nil
		}
	}
	return nil, nil
}

// build prepares the keyset read (source.Keyset.Prepare) and sizes the
// scan buffers.
func (t *sqliteTable) build() {
	var sel []string
	for _, c := range t.cols {
		sel = append(sel, quoteSQLiteIdent(c.name))
	}
	var keys []source.KeysetColumn
	var order []string
	for _, i := range t.keyIdx {
		name := quoteSQLiteIdent(t.cols[i].name)
		keys = append(keys, source.KeysetColumn{Expr: name, Placeholder: "?"})
		order = append(order, name)
	}
	t.Prepare(t, t.Resource.Name, "SELECT "+strings.Join(sel, ", ")+" FROM "+quoteSQLiteIdent(t.Resource.Name), keys, order)
	t.raw, t.Dest = source.ScanBuffers[any](len(t.cols))
	t.Row = make([]snapshot.Value, len(t.cols))
}

// ReadErr implements source.KeysetRows: errors are reported as they are.
func (t *sqliteTable) ReadErr(_ context.Context, err error) error { return err }

// SourceErr implements source.KeysetRows: errors are kept as the driver gave them.
func (t *sqliteTable) SourceErr(_ context.Context, err error) error { return err }

// ConvertRow implements source.KeysetRows.
func (t *sqliteTable) ConvertRow() error { return source.ConvertRow(t.cols, t.raw, t.Row) }

// RowCursor implements source.KeysetRows: the current row's key values, bytes
// copied (the driver reuses them).
func (t *sqliteTable) RowCursor() []any {
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

// Close implements TableReader: ends the read transaction and returns the
// connection.
func (t *sqliteTable) Close() error {
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
		return errors.Join(errs...)
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
