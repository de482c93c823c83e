package adapters

import (
	"context"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
)

// TestJSONNullIsNotSQLNull: a JSON column's document null, SQL NULL and a
// number with trailing zeros each keep their own form, and a change from
// the document null to SQL NULL (and back) is a diff whose before and after
// differ; embed_json serves the documents themselves.
func TestJSONNullIsNotSQLNull(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) {
		ctx := context.Background()
		db := e.tempDatabase(t, "json")
		e.exec(t, db, "CREATE TABLE j (id INT PRIMARY KEY, doc JSON NULL)",
			`INSERT INTO j VALUES (1, NULL), (2, 'null'), (3, '{"n": 1.10, "s": "x"}')`)
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "c", db, nil)); err != nil {
			t.Fatal(err)
		}
		for _, a := range []api.Adapter{{Name: "j", Connection: "c", Resource: "j"}, {Name: "je", Connection: "c", Resource: "j", EmbedJSON: true}} {
			if _, err := ts.svc.CreateAdapter(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		first := ts.runWait(t, "j")
		mustSucceed(t, first)
		mustSucceed(t, ts.runWait(t, "je"))
		want := map[string]string{"int 1": `null`, "int 2": `"null"`, "int 3": `"{\"n\": 1.10, \"s\": \"x\"}"`}
		wantEmbedded := map[string]string{"int 1": `null`, "int 2": `null`, "int 3": `{"n": 1.10, "s": "x"}`}
		for ds, w := range map[string]map[string]string{"j": want, "je": wantEmbedded} {
			_, rows := readAll(t, ts.db, ds)
			for k, form := range w {
				if got := string(col(rows[k], "doc").AppendJSON(nil)); got != form {
					t.Errorf("%s %s: %s, want %s", ds, k, got, form)
				}
			}
		}
		e.exec(t, db, "UPDATE j SET doc = 'null' WHERE id = 1", "UPDATE j SET doc = NULL WHERE id = 2")
		second := ts.runWait(t, "j")
		mustSucceed(t, second)
		if st := second.Stats; st.Updated != 2 || st.Unchanged != 1 {
			t.Fatalf("second run stats %+v", st)
		}
		it, err := ts.db.Diff(ctx, "j", first.Version, second.Version)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		var lines []string
		for it.Next() {
			c := it.Change()
			lines = append(lines, string(c.Op)+" "+keyText(c.Key[0])+" "+string(c.Before.AppendJSON(nil))+" -> "+string(c.After.AppendJSON(nil)))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(lines, "\n")
		wantDiff := `update 1 {"id":1,"doc":null} -> {"id":1,"doc":"null"}` + "\n" + `update 2 {"id":2,"doc":"null"} -> {"id":2,"doc":null}`
		if got != wantDiff {
			t.Errorf("diff:\n%s\nwant\n%s", got, wantDiff)
		}
	})
}

// TestDuplicateKeyColumnsNamed: key_columns that are not unique fail the
// run with the one code duplicate_key, naming the repeated keys with their
// columns and counts.
func TestDuplicateKeyColumnsNamed(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) {
		ctx := context.Background()
		db := e.tempDatabase(t, "dup")
		e.exec(t, db, "CREATE TABLE nokey (a INT, b INT)", "INSERT INTO nokey VALUES (1, 1), (2, 2), (2, 3), (3, 1), (3, 2), (3, 3), (4, 4)")
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "c", db, nil)); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "n", Connection: "c", Resource: "nokey", KeyColumns: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
		rec := ts.runWait(t, "n")
		if rec.Status != RunFailed || rec.Code != "duplicate_key" || !strings.Contains(rec.Error, "(a=2) 2 times, (a=3) 3 times") ||
			!strings.Contains(rec.Error, "not unique (name columns that are, in key_columns or table_keys") {
			t.Fatalf("run on repeated key_columns: %+v", rec)
		}
		t.Logf("error: %s", rec.Error)
	})
}
