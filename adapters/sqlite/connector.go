package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers database/sql driver "sqlite"
)

// sqliteConnector is the "sqlite" connection type on modernc.org/sqlite (pure
// Go, so `make run` needs no database server). The database file is opened
// read-only (URI mode=ro plus PRAGMA query_only); a pull reads inside one
// read transaction, so it sees one consistent state of the file.
type sqliteConnector struct{}

var sqliteOptionDefs = []source.OptionDef{
	{Key: "path", Type: source.OptString, File: true, Doc: "database file path (required; opened read-only)"},
	{Key: "busy_timeout", Type: source.OptDuration, Doc: "how long to wait for a writer's lock (default 5s)"},
	{Key: "chunk_rows", Type: source.OptInt, Min: 1, Max: 10_000_000, Doc: "rows per keyset-pagination chunk of a pull (default 5000)"},
}

// Options implements Connector.
func (sqliteConnector) Options() []source.OptionDef { return sqliteOptionDefs }

// Validate implements Connector.
func (sqliteConnector) Validate(o source.OptionValues) error {
	if o.String("path") == "" {
		return &source.OptionError{Key: "path", Msg: "required"}
	}
	return nil
}

// sqliteHeader opens every SQLite database file (fileformat.html, "The
// Database Header"); an empty file is an empty database.
const sqliteHeader = "SQLite format 3\x00"

// CheckFile implements source.FileChecker: the file is a SQLite database,
// empty or starting with its header.
func (sqliteConnector) CheckFile(key string, r io.Reader) error {
	b := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(r, b)
	switch {
	case n == 0 && err == io.EOF:
		return nil
	case err != nil && err != io.ErrUnexpectedEOF:
		return err
	case string(b[:n]) != sqliteHeader:
		return errors.New("not a SQLite database")
	}
	return nil
}

// FileURI is the driver's URI of the SQLite file at path, made absolute
// (abs) and escaped, with the URI parameters q: a name holding "?", "#"
// or "%" is that file, not a file of a shorter name with parameters.
func FileURI(path string, q url.Values) (uri, abs string, err error) {
	if abs, err = filepath.Abs(path); err != nil {
		return "", "", err
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}
	return u.String(), abs, nil
}

// Open implements Connector.
func (sqliteConnector) Open(ctx context.Context, sc source.SourceConfig) (source.Source, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sc.Options.Duration("busy_timeout", 5*time.Second).Milliseconds()))
	uri, abs, err := FileURI(sc.Options.String("path"), q)
	if err != nil {
		return nil, &source.OptionError{Key: "path", Msg: err.Error()}
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, fmt.Errorf("opening sqlite database %s: %w", abs, err)
	}
	source.ApplyPool(db, sc.Pool)
	return &sqliteSource{name: sc.Name, path: abs, addr: source.SourceAddr{Connection: sc.Name, Type: "sqlite", Addr: abs},
		db: db, chunkRows: int(sc.Options.Int("chunk_rows", source.DefaultChunkRows))}, nil
}

type sqliteSource struct {
	name      string
	path      string
	addr      source.SourceAddr
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
	// (path /etc/passwd) or a corrupt one: the source cannot serve,
	// whatever the caller asked, and says so rather than fail as an
	// internal error.
	return fmt.Errorf("%w: %w", source.ErrSourceUnavailable, err)
}

// openError is the *SourceError of a database file that did not open:
// a missing or unreadable file says so rather than SQLite's "unable to
// open database file (14)".
func (s *sqliteSource) openError(ctx context.Context, err error) error {
	if _, serr := os.Stat(s.path); serr != nil {
		err = serr
	}
	return source.NewSourceError(ctx, s.addr, "unreachable", err)
}

// Test implements Tester.
func (s *sqliteSource) Test(ctx context.Context) source.TestResult {
	start := time.Now()
	res := source.TestResult{}
	if _, err := os.Stat(s.path); err != nil {
		return source.FailedTest(s.openError(ctx, err), time.Since(start))
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
func (s *sqliteSource) Resources(ctx context.Context) ([]source.Resource, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("listing tables of data connection %q: %w", s.name, s.wrap(err))
	}
	var out []source.Resource
	for rows.Next() {
		var r source.Resource
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
		if out[i].Type != "table" {
			continue
		}
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoteSQLiteIdent(out[i].Name)).Scan(&out[i].EstimatedRows); err != nil {
			return nil, fmt.Errorf("counting rows of %s: %w", out[i].Name, err)
		}
		cols, err := sqliteColumns(ctx, s.db, out[i].Name)
		if err != nil {
			return nil, s.wrap(err)
		}
		key, err := sqliteDefaultKey(ctx, s.db, out[i].Name, cols)
		if err != nil {
			return nil, s.wrap(err)
		}
		for _, k := range key {
			out[i].Key = append(out[i].Key, cols[k].name)
		}
	}
	return out, nil
}

// quoteSQLiteIdent quotes an SQLite identifier with double quotes, doubling
// any inside.
func quoteSQLiteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func init() { source.Register("sqlite", sqliteConnector{}) }
