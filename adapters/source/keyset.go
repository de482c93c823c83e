package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

// Keyset is what the mysql, postgres and sqlite table readers share:
// the TableReader state and methods (Schema, Table, Values, Err, Next) and
// the keyset pagination (P2). The first chunk is `first` with LIMIT chunk; each
// next chunk starts at the last row's key (`>` for a declared unique key;
// `>=` with one extra row otherwise, that row skipped when it is the
// previous chunk's last one, and a key seen twice in a row refused as
// ErrNoKey and snapshot.ErrDuplicateKey naming the repeated keys, P3). A chunk shorter than its LIMIT ends the table. Every chunk
// query goes to q (or query), the read's one pinned connection or
// transaction (P1).
// Not safe for concurrent use; embedded in the table readers, which own
// rows and close them.
type Keyset struct {
	r           KeysetRows // the reader's row hooks
	Name        string     // the table's display name, in errors
	Resource    Resource
	TableSchema snapshot.Schema
	Row         []snapshot.Value // the current row, aligned with schema.Columns
	err         error
	Closed      bool // set by the reader's Close

	Conn KeysetQuerier
	// query, when set, runs the chunk queries instead of q (a driver
	// other than database/sql).
	Query func(ctx context.Context, sql string, args []any) (KeysetResult, error)
	Dest  []any  // where a chunk row is scanned to (ScanBuffers)
	first string // query of the first chunk (Prepare)
	next  string // query of the following chunks, args KeysetArgs(cursor)
	// rowArgs: the next query takes the cursor itself as its arguments
	// (PrepareRowCompare), not keysetArgs(cursor).
	rowArgs   bool
	Unique    bool // the key is a declared unique key (else check duplicates)
	ChunkRows int  // rows per chunk query
	limit     int  // LIMIT of the current chunk query
	Rows      KeysetResult
	cursor    []any // key args of the last row returned
	// inChunk counts the rows read from the current chunk.
	inChunk int
	Queries int // chunk queries sent, for tests of P2
	done    bool
	// skipPending is set after a `>=` chunk query: its first row may be
	// the previous chunk's last one.
	skipPending bool
	// A range read (SetRange): the chunk queries stop at a key (inclusive)
	// with firstHi and nextHi, hi their last arguments.
	hi              []any
	firstHi, nextHi string
}

// KeysetQuerier is a *sql.Conn or a *sql.Tx.
type KeysetQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// KeysetResult is the result of one chunk query: a *sql.Rows, or a
// connector's own rows with the same methods.
type KeysetResult interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// runQuery sends one chunk query.
func (p *Keyset) runQuery(ctx context.Context, query string, args []any) (KeysetResult, error) {
	if p.Query != nil {
		return p.Query(ctx, query, args)
	}
	rows, err := p.Conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// KeysetColumn is one key column as the chunk queries compare it.
type KeysetColumn struct {
	Expr        string // the quoted column, or an expression of it (MySQL ENUM: col+0)
	Placeholder string // "?", or an expression of it (MySQL DECIMAL: a CAST)
}

// Prepare sets up a read: r is the reader, name its table's display name,
// and the chunk queries read base ("SELECT cols FROM table") in the order
// of the terms order, keys being the key columns:
//
//	base ORDER BY k1, k2 LIMIT chunk
//	base WHERE (k1 > ?) OR (k1 = ? AND k2 > ?) ORDER BY k1, k2 LIMIT chunk
//
// The OR form (not a row constructor) lets MariaDB's range optimizer use
// the key index. Without a declared unique key the last comparison is >=
// and the LIMIT one more: the first row of such a chunk repeats the
// previous chunk's last one, which nextRow skips.
func (p *Keyset) Prepare(r KeysetRows, name, base string, keys []KeysetColumn, order []string) {
	p.r, p.Name = r, name
	p.first = base + " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(p.ChunkRows)
	var ors []string
	for n := range keys {
		var ands []string
		for _, k := range keys[:n] {
			ands = append(ands, k.Expr+" = "+k.Placeholder)
		}
		op := " > "
		if !p.Unique && n == len(keys)-1 {
			op = " >= "
		}
		ands = append(ands, keys[n].Expr+op+keys[n].Placeholder)
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	limit := p.ChunkRows
	if !p.Unique {
		limit++
	}
	p.next = base + " WHERE " + strings.Join(ors, " OR ") + " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(limit)
	upTo := UpToKey(keys)
	p.firstHi = base + " WHERE " + upTo + " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(p.ChunkRows)
	p.nextHi = base + " WHERE (" + strings.Join(ors, " OR ") + ") AND (" + upTo + ") ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(limit)
}

// AfterKey is the condition, in the OR form of Prepare, that the key
// columns come after a key (arguments KeysetArgs of the key).
func AfterKey(keys []KeysetColumn) string {
	var ors []string
	for n := range keys {
		var ands []string
		for _, k := range keys[:n] {
			ands = append(ands, k.Expr+" = "+k.Placeholder)
		}
		ands = append(ands, keys[n].Expr+" > "+keys[n].Placeholder)
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return strings.Join(ors, " OR ")
}

// UpToKey is the condition, in the OR form of Prepare, that the key
// columns come at or before a key (arguments UpToArgs of the key):
//
//	(k1 < ?) OR (k1 = ? AND k2 < ?) OR (k1 = ? AND k2 = ?)
//
// and k1 <= ? for a one-column key.
func UpToKey(keys []KeysetColumn) string {
	if len(keys) == 1 {
		return keys[0].Expr + " <= " + keys[0].Placeholder
	}
	var ors, eq []string
	for _, k := range keys {
		ors = append(ors, "("+strings.Join(append(slices.Clip(eq), k.Expr+" < "+k.Placeholder), " AND ")+")")
		eq = append(eq, k.Expr+" = "+k.Placeholder)
	}
	ors = append(ors, "("+strings.Join(eq, " AND ")+")")
	return strings.Join(ors, " OR ")
}

// UpToArgs expands a key into the arguments of UpToKey.
func UpToArgs(key []any) []any {
	if len(key) == 1 {
		return key
	}
	return append(KeysetArgs(key), key...)
}

// SetRange makes the next reads cover the keys after lo (nil: from the
// first) up to hi included (nil: to the last), each a key's arguments
// as RowCursor gives them. An open chunk query is closed.
func (p *Keyset) SetRange(lo, hi []any) {
	if p.Rows != nil {
		p.Rows.Close()
		p.Rows = nil
	}
	p.cursor, p.hi, p.done, p.skipPending = lo, nil, false, false
	if hi != nil {
		p.hi = hi
		if !p.rowArgs {
			p.hi = UpToArgs(hi)
		}
	}
}

// PrepareRowCompare is Prepare with one row comparison for the next
// chunks, which PostgreSQL's btree scans as one index range:
//
//	base WHERE (k1, k2) > (p1, p2) ORDER BY k1, k2 LIMIT chunk
//
// keys are the key column expressions, placeholders the SQL of their
// cursor values ($1, $2, ... in key order); the cursor is the argument
// list. Without a declared unique key the comparison is >= (see Prepare).
// A range read (SetRange) adds (k1, k2) <= (placeholders) to the first
// query and (k1, k2) <= (hiPlaceholders, the ones after the cursor's) to
// the next ones.
func (p *Keyset) PrepareRowCompare(r KeysetRows, name, base string, keys, placeholders, hiPlaceholders, order []string) {
	p.r, p.Name, p.rowArgs = r, name, true
	orderBy := " ORDER BY " + strings.Join(order, ", ")
	p.first = base + orderBy + " LIMIT " + strconv.Itoa(p.ChunkRows)
	op, limit := " > ", p.ChunkRows
	if !p.Unique {
		op, limit = " >= ", p.ChunkRows+1
	}
	row := "(" + strings.Join(keys, ", ") + ")"
	after := row + op + "(" + strings.Join(placeholders, ", ") + ")"
	p.next = base + " WHERE " + after + orderBy + " LIMIT " + strconv.Itoa(limit)
	p.firstHi = base + " WHERE " + row + " <= (" + strings.Join(placeholders, ", ") + ")" + orderBy + " LIMIT " + strconv.Itoa(p.ChunkRows)
	p.nextHi = base + " WHERE " + after + " AND " + row + " <= (" + strings.Join(hiPlaceholders, ", ") + ")" + orderBy + " LIMIT " + strconv.Itoa(limit)
}

// KeysetArgs expands a cursor (one value per key column) into the
// arguments of the next chunk query: k1; k1, k2; ...
func KeysetArgs(cursor []any) []any {
	var args []any
	for n := range cursor {
		args = append(args, cursor[:n+1]...)
	}
	return args
}

// KeysetRows is what a table reader gives its Keyset.
type KeysetRows interface {
	// ReadErr returns the error Err reports for err, which ended the read
	// (for example with the source's secrets scrubbed); err already names
	// the context's error when the context ended the read.
	ReadErr(ctx context.Context, err error) error
	// SourceErr classifies an error of a chunk query or of its rows
	// (for example as ErrSourceUnavailable).
	SourceErr(ctx context.Context, err error) error
	// ConvertRow converts the row just scanned into dest to vals.
	ConvertRow() error
	// RowCursor copies the current row's key args.
	RowCursor() []any
}

// Schema implements TableReader.
func (p *Keyset) Schema() snapshot.Schema { return p.TableSchema }

// Table implements TableReader.
func (p *Keyset) Table() Resource { return p.Resource }

// Values implements TableReader.
func (p *Keyset) Values() []snapshot.Value { return p.Row }

// Err implements TableReader.
func (p *Keyset) Err() error { return p.err }

// Next implements TableReader.
func (p *Keyset) Next(ctx context.Context) bool {
	if p.err != nil || p.Closed {
		return false
	}
	ok, err := p.nextRow(ctx)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", err, ctx.Err()) // the context ended the read
		}
		p.err = p.r.ReadErr(ctx, err)
	}
	return ok
}

// nextRow advances to the next row of the table. It returns false at the
// end or on error; err, when set, is wrapped as "reading NAME: ...".
func (p *Keyset) nextRow(ctx context.Context) (ok bool, err error) {
	r, name, key := p.r, p.Name, p.TableSchema.Key
	for {
		if p.Rows == nil {
			if p.done {
				return false, nil
			}
			p.Queries++
			p.limit = p.ChunkRows
			var err error
			first, next := p.first, p.next
			var hi []any
			if p.hi != nil {
				first, next, hi = p.firstHi, p.nextHi, p.hi
			}
			if p.cursor == nil {
				p.Rows, err = p.runQuery(ctx, first, hi)
			} else {
				if !p.Unique {
					p.limit++
				}
				args := p.cursor
				if !p.rowArgs {
					args = KeysetArgs(p.cursor)
				}
				p.Rows, err = p.runQuery(ctx, next, append(slices.Clip(args), hi...))
				p.skipPending = !p.Unique
			}
			if err != nil {
				return false, fmt.Errorf("reading %s: %w", name, r.SourceErr(ctx, err))
			}
			p.inChunk = 0
		}
		if !p.Rows.Next() {
			err := p.Rows.Err()
			p.Rows.Close()
			p.Rows = nil
			if err != nil {
				return false, fmt.Errorf("reading %s: %w", name, r.SourceErr(ctx, err))
			}
			if p.inChunk < p.limit {
				p.done = true
				return false, nil
			}
			continue
		}
		p.inChunk++
		if err := p.Rows.Scan(p.Dest...); err != nil {
			return false, fmt.Errorf("reading %s: %w", name, err)
		}
		if err := r.ConvertRow(); err != nil {
			return false, fmt.Errorf("reading %s: %w", name, err)
		}
		if p.Unique {
			// A declared unique key needs the cursor only to start the
			// next chunk: copy it from the chunk's last row alone.
			if p.inChunk == p.limit {
				p.cursor = r.RowCursor()
			}
			return true, nil
		}
		cur := r.RowCursor()
		if p.skipPending {
			p.skipPending = false
			if equalCursor(cur, p.cursor) {
				continue // the row the previous chunk ended with
			}
		} else if p.cursor != nil && equalCursor(cur, p.cursor) {
			return false, fmt.Errorf("%w: key columns %v of %s are not unique (name columns that are, in key_columns or table_keys, or give the table a primary key): %w", ErrNoKey, key, name, p.duplicates(cur))
		}
		p.cursor = cur
		return true, nil
	}
}

// duplicates names the repeated keys of the current chunk, from the row
// just read, whose key cur repeats the previous row's: up to five, each
// with its column names and how many times it came (a chunk is in key
// order, so repeats are adjacent). The error is snapshot.ErrDuplicateKey.
func (p *Keyset) duplicates(cur []any) error {
	const most = 5
	key := func() string {
		vals := make([]snapshot.Value, len(p.TableSchema.Key))
		for j, name := range p.TableSchema.Key {
			for i, c := range p.TableSchema.Columns {
				if c.Name == name {
					vals[j] = p.Row[i]
				}
			}
		}
		return snapshot.FormatKey(p.TableSchema.Key, vals)
	}
	var dups []string
	last, lastText, n := cur, key(), 2
	flush := func() {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s %d times", lastText, n))
		}
	}
	for len(dups) < most-1 && p.Rows.Next() {
		if p.Rows.Scan(p.Dest...) != nil || p.r.ConvertRow() != nil {
			break
		}
		c := p.r.RowCursor()
		if equalCursor(c, last) {
			n++
			continue
		}
		flush()
		last, lastText, n = c, key(), 1
	}
	flush()
	return fmt.Errorf("%w: %s", snapshot.ErrDuplicateKey, strings.Join(dups, ", "))
}

// equalCursor reports whether two cursors hold the same key.
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

// ConvertRow converts the scanned values of one row, raw[i] by cols[i]'s
// Convert, into vals (raw may hold more values than there are columns).
func ConvertRow[C any, PC interface {
	*C
	Convert(R) (snapshot.Value, error)
}, R any](cols []C, raw []R, vals []snapshot.Value) error {
	for i := range cols {
		v, err := PC(&cols[i]).Convert(raw[i])
		if err != nil {
			return err
		}
		vals[i] = v
	}
	return nil
}

// ScanBuffers returns n values for rows.Scan to fill and the pointers to
// them that it takes.
func ScanBuffers[R any](n int) (raw []R, dest []any) {
	raw, dest = make([]R, n), make([]any, n)
	for i := range raw {
		dest[i] = &raw[i]
	}
	return raw, dest
}
