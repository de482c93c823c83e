package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snapstore/snapstore/adapters/sqlite"
	"github.com/snapstore/snapstore/internal/boundedread"
)

const sqliteHelp = `Run SQL against a SQLite file, creating it if needed: the SQL argument, or
stdin when there is none (at most 64 MiB). A list of statements runs as one
script; a single SELECT, WITH or PRAGMA prints its rows as a table. It
creates and changes the README's sample source (examples/shop.db) without
the sqlite3 shell.`

// maxSQLiteScript bounds the SQL read from stdin, so that a stream without
// end (a device, a command that never stops) is refused rather than read
// until the memory runs out; far beyond a script of the sample source.
const maxSQLiteScript = 64 << 20

// cmdSQLite runs SQL against a SQLite file, creating it if needed: the SQL
// argument, or stdin when there is none. A statement list is executed as
// one script; a single SELECT, WITH or PRAGMA prints its rows as a table.
// It exists so the README's sample source can be created and changed on a
// machine without the sqlite3 shell.
func cmdSQLite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("sqlite", "FILE [SQL]", sqliteHelp, flagsNone, stdout)
	pos, err := c.parseN(args, 1, 2)
	if err != nil {
		return err
	}
	var script string
	if len(pos) == 2 {
		script = pos[1]
	} else {
		b, err := boundedread.All(stdin, maxSQLiteScript)
		if errors.Is(err, boundedread.ErrTooLarge) {
			return usageError("the SQL on stdin is %v; give a smaller script", err)
		}
		if err != nil {
			return fmt.Errorf("reading SQL from stdin: %w", err)
		}
		script = string(b)
	}
	if strings.TrimSpace(script) == "" {
		return usageError("no SQL given")
	}
	uri, _, err := sqlite.FileURI(pos[0], url.Values{"_pragma": {"busy_timeout(5000)"}})
	if err != nil {
		return fmt.Errorf("opening %s: %w", pos[0], err)
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return fmt.Errorf("opening %s: %w", pos[0], err)
	}
	defer db.Close()
	trimmed := strings.TrimRight(strings.TrimSpace(script), ";")
	head := strings.ToUpper(strings.Fields(trimmed)[0])
	if (head == "SELECT" || head == "WITH" || head == "PRAGMA") && !strings.Contains(trimmed, ";") {
		return querySQLite(ctx, db, trimmed, stdout)
	}
	// One connection, so total_changes() counts this script's rows.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("opening %s: %w", pos[0], err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, script); err != nil {
		return fmt.Errorf("executing SQL: %w", err)
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT total_changes()").Scan(&n); err == nil {
		fmt.Fprintf(stdout, "ok, %d row(s) inserted, updated or deleted (all tables)\n", n)
	}
	return nil
}

func querySQLite(ctx context.Context, db *sql.DB, q string, stdout io.Writer) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("querying: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
				parts[i] = "NULL"
			case []byte:
				parts[i] = string(v)
			case time.Time:
				parts[i] = sqliteTime(v, types[i].DatabaseTypeName())
			default:
				parts[i] = fmt.Sprint(v)
			}
		}
		fmt.Fprintln(tw, strings.Join(parts, "\t"))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return tw.Flush()
}

// sqliteTime writes a value the driver read as a time (a column declared
// DATE, DATETIME or TIMESTAMP) as SQLite's own date() and datetime() text,
// in UTC, as the sqlite connector stores it: "2025-01-02" for a DATE,
// "2025-01-02 00:00:00" else, fractions of a second only when there are
// some.
func sqliteTime(t time.Time, declared string) string {
	if strings.EqualFold(declared, "DATE") {
		return t.UTC().Format(time.DateOnly)
	}
	return t.UTC().Format("2006-01-02 15:04:05.999999999")
}
