package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSQLite_StdinBounded: SQL on stdin of more than maxSQLiteScript
// bytes is a usage error saying the bound, read no further than one byte
// past it.
func TestSQLite_StdinBounded(t *testing.T) {
	old := stdin
	t.Cleanup(func() { stdin = old })
	var src endless
	stdin = io.LimitReader(&src, maxSQLiteScript+1<<20)
	db := filepath.Join(t.TempDir(), "t.db")
	code, _, errs := cli(t, "sqlite", db)
	if code != exitUsage || !strings.Contains(errs, "the SQL on stdin is larger than 67108864 bytes") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if src.n > maxSQLiteScript+1 {
		t.Errorf("read %d bytes of stdin, want at most %d", src.n, maxSQLiteScript+1)
	}
}

// endless is a reader of spaces without end that counts what it gave.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestSQLite_FileNameAsGiven: a file name holding "%", "#" or "?" names
// that file, not a shorter name with URI parameters or escapes ("p%41.db"
// made pA.db, "h#1.db" made h).
func TestSQLite_FileNameAsGiven(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"p%41.db", "h#1.db", "q?mode=ro&x.db", "sp ace.db"} {
		if code, _, errs := cli(t, "sqlite", filepath.Join(dir, name), "CREATE TABLE t (x INTEGER)"); code != 0 {
			t.Errorf("%s: exit %d %s", name, code, errs)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if want := []string{"h#1.db", "p%41.db", "q?mode=ro&x.db", "sp ace.db"}; !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

// TestSQLite_Datetime: a DATETIME column reads as SQLite writes it, not
// as Go prints a time.
func TestSQLite_Datetime(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	code, _, errs := cli(t, "sqlite", db, `CREATE TABLE t (id INTEGER PRIMARY KEY, at DATETIME, d DATE);
INSERT INTO t VALUES (1, '2025-01-02 00:00:00', '2025-01-02'), (2, '2025-01-02 10:30:00.25', NULL);`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, out, errs := cli(t, "sqlite", db, "SELECT id, at, d FROM t ORDER BY id")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"1   2025-01-02 00:00:00     2025-01-02\n", "2   2025-01-02 10:30:00.25  NULL\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "UTC") || strings.Contains(out, "+0000") {
		t.Errorf("a time printed as Go prints it:\n%s", out)
	}
}
