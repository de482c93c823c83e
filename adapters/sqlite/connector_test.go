package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/snapstore/snapstore/adapters/source"
)

// TestSQLiteReadOnly: the connection a read holds cannot write.
func TestSQLiteReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "src.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	src, err := sqliteConnector{}.Open(ctx, source.SourceConfig{Name: "test", Options: source.OptionValues{"path": path}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tr, err := src.OpenTable(ctx, source.TableRequest{Resource: "items"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.(*sqliteTable).tx.ExecContext(ctx, "DELETE FROM items"); err == nil {
		t.Errorf("a write through the sqlite connection succeeded")
	}
}
