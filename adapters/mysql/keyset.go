package mysql

// The keyset read of a MySQL table (source.Keyset, P1-P3): its query, and
// what the keyset asks of each row it pages (source.KeysetRows).

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// buildQueries prepares the keyset read (source.Keyset.Prepare): it selects
// the columns, then the col+0 index of each ENUM or SET key column (what
// the keyset compares; it is also their ORDER BY order), and sizes the
// scan buffers.
func (t *mysqlTable) buildQueries() {
	var sel []string
	for i := range t.cols {
		sel = append(sel, t.cols[i].selectExpr())
	}
	var keys []source.KeysetColumn
	var order []string
	for _, i := range t.keyIdx {
		c := &t.cols[i]
		if c.enumLike {
			sel = append(sel, c.keyExpr())
		}
		keys = append(keys, source.KeysetColumn{Expr: c.keyExpr(), Placeholder: c.keyPlaceholder()})
		order = append(order, quoteMySQLIdent(c.name))
	}
	t.Prepare(t, t.qualified(), "SELECT "+strings.Join(sel, ", ")+" FROM "+t.qualified(), keys, order)
	t.raw, t.Dest = source.ScanBuffers[mysqlCell](len(sel))
	t.Row = make([]snapshot.Value, len(t.cols))
}

// query sends a chunk query, noting when (readTimedOut).
func (t *mysqlTable) query(ctx context.Context, q string, args []any) (source.KeysetResult, error) {
	t.chunkAt = time.Now()
	rows, err := t.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// SourceErr implements source.KeysetRows. A chunk that ended with the
// driver's "invalid connection" at least read_timeout after its query was
// sent is taken for the read deadline: the driver says the same of a
// deadline and of a connection the server dropped (it logs the cause),
// and a frozen source should read as one that does not answer, naming
// the bound, not as one that went away.
func (t *mysqlTable) SourceErr(ctx context.Context, err error) error {
	if t.readTimedOut(ctx, err) {
		return &source.SourceError{SourceAddr: t.src.addr, Cause: "timeout", Timeout: t.src.readTO, Bound: "read_timeout", Err: t.src.scrub(err)}
	}
	return wrapMySQLErr(ctx, err)
}

// readTimedOut reports whether err, ending the current chunk, is taken
// for read_timeout (SourceErr).
func (t *mysqlTable) readTimedOut(ctx context.Context, err error) bool {
	return ctx.Err() == nil && t.src.readTO > 0 && !t.chunkAt.IsZero() &&
		(errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn)) &&
		time.Since(t.chunkAt) >= t.src.readTO
}

// ConvertRow implements source.KeysetRows.
func (t *mysqlTable) ConvertRow() error { return source.ConvertRow(t.cols, t.raw, t.Row) }

// RowCursor copies the current row's key arguments.
func (t *mysqlTable) RowCursor() []any {
	cur := make([]any, len(t.keyIdx))
	extra := len(t.cols)
	for j, i := range t.keyIdx {
		c := &t.cols[i]
		if c.enumLike {
			idx, _ := c.enumIndex(t.raw[extra])
			cur[j] = idx
			extra++
			continue
		}
		cur[j] = c.keyArg(t.Row[i])
	}
	return cur
}

// ReadErr implements source.KeysetRows: the connection's secrets are scrubbed.
func (t *mysqlTable) ReadErr(_ context.Context, err error) error { return t.src.scrub(err) }
