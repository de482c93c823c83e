package adapters

import (
	"context"
	"database/sql"
	"fmt"
)

// keysetPager is the keyset pagination shared by the mysql and sqlite table
// readers (adapters/doc.go P1-P5): the first chunk is `first` with LIMIT
// chunk; each next chunk starts at the last row's key (`>` for a declared
// unique key; `>=` with one extra row otherwise, that row skipped when it is
// the previous chunk's last one, and a key seen twice in a row refused as
// ErrNoKey). A chunk shorter than its LIMIT ends the table. Not safe for
// concurrent use; embedded in the table readers, which own rows and close
// them.
type keysetPager struct {
	unique bool // the key is a declared unique key (else check duplicates)
	chunk  int  // rows per chunk query
	limit  int  // LIMIT of the current chunk query
	rows   *sql.Rows
	cursor []any // key args of the last row returned
	// inChunk counts the rows read from the current chunk.
	inChunk int
	queries int // chunk queries sent, for tests of P2
	done    bool
	// skipPending is set after a `>=` chunk query: its first row may be
	// the previous chunk's last one.
	skipPending bool
}

// keysetRows is what a table reader gives its keysetPager.
type keysetRows interface {
	// queryChunk sends the first chunk query (cursor nil) or the next one
	// starting at cursor.
	queryChunk(ctx context.Context, cursor []any) (*sql.Rows, error)
	// sourceErr classifies an error of a chunk query or of its rows
	// (for example as ErrSourceUnavailable).
	sourceErr(ctx context.Context, err error) error
	// scanRow scans and converts the current row of rows.
	scanRow(rows *sql.Rows) error
	// rowCursor copies the current row's key args.
	rowCursor() []any
}

// nextRow advances to the next row of the table. It returns false at the end
// or on error; err, when set, is wrapped as "reading NAME: ..." (name is the
// table's display name, key its key columns for the duplicate-key error).
func (p *keysetPager) nextRow(ctx context.Context, r keysetRows, name string, key []string) (ok bool, err error) {
	for {
		if p.rows == nil {
			if p.done {
				return false, nil
			}
			p.queries++
			p.limit = p.chunk
			var err error
			if p.cursor == nil {
				p.rows, err = r.queryChunk(ctx, nil)
			} else {
				if !p.unique {
					p.limit++
				}
				p.rows, err = r.queryChunk(ctx, p.cursor)
				p.skipPending = !p.unique
			}
			if err != nil {
				return false, fmt.Errorf("reading %s: %w", name, r.sourceErr(ctx, err))
			}
			p.inChunk = 0
		}
		if !p.rows.Next() {
			err := p.rows.Err()
			p.rows.Close()
			p.rows = nil
			if err != nil {
				return false, fmt.Errorf("reading %s: %w", name, r.sourceErr(ctx, err))
			}
			if p.inChunk < p.limit {
				p.done = true
				return false, nil
			}
			continue
		}
		p.inChunk++
		if err := r.scanRow(p.rows); err != nil {
			return false, fmt.Errorf("reading %s: %w", name, err)
		}
		if p.unique {
			// A declared unique key needs the cursor only to start the
			// next chunk: copy it from the chunk's last row alone.
			if p.inChunk == p.limit {
				p.cursor = r.rowCursor()
			}
			return true, nil
		}
		cur := r.rowCursor()
		if p.skipPending {
			p.skipPending = false
			if equalCursor(cur, p.cursor) {
				continue // the row the previous chunk ended with
			}
		} else if p.cursor != nil && equalCursor(cur, p.cursor) {
			return false, fmt.Errorf("%w: key columns %v of %s are not unique: a key appears twice", ErrNoKey, key, name)
		}
		p.cursor = cur
		return true, nil
	}
}
