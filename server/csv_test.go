package server

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/snapstore/snapstore/snapshot"
)

// TestCSVRecord: NULL is an empty field and the empty string a quoted one,
// as PostgreSQL's COPY ... CSV writes them; every other field is written
// exactly as encoding/csv writes it, and reads back as it was.
func TestCSVRecord(t *testing.T) {
	texts := []string{"plain", "a,b", `say "hi"`, "two\nlines", "cr\rlf", " lead", "\tlead", "\u00a0nbsp", "trail ", `\.`, `\.x`, "é", `"`, ","}
	var vals []snapshot.Value
	for _, s := range texts {
		vals = append(vals, snapshot.Value{Kind: snapshot.KindString, Bytes: []byte(s)})
	}
	vals = append(vals, snapshot.Value{Kind: snapshot.KindNull}, snapshot.Value{Kind: snapshot.KindString, Bytes: []byte{}}, snapshot.Value{Kind: snapshot.KindInt, Int: -7})
	got := appendCSVRecord(nil, vals)

	var want bytes.Buffer
	w := csv.NewWriter(&want)
	if err := w.Write(texts); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	// Then NULL, empty; the empty string, quoted; the number.
	wantBytes := append(bytes.TrimSuffix(want.Bytes(), []byte("\n")), `,,"",-7`+"\n"...)
	if !bytes.Equal(got, wantBytes) {
		t.Fatalf("record\n got %q\nwant %q", got, wantBytes)
	}
	recs, err := csv.NewReader(bytes.NewReader(got)).ReadAll()
	if err != nil || len(recs) != 1 || len(recs[0]) != len(vals) {
		t.Fatalf("read back: %v %q", err, recs)
	}
	for i, s := range texts {
		if recs[0][i] != s {
			t.Errorf("field %d read back %q, want %q", i, recs[0][i], s)
		}
	}
	if h := appendCSVHeader(nil, []string{"id", "a,b", ""}); string(h) != `id,"a,b",""`+"\n" {
		t.Errorf("header %q", h)
	}
}

// TestCSVNullAndEmpty: over HTTP, a row's NULL and a row's empty string
// read differently in CSV, as they do in NDJSON.
func TestCSVNullAndEmpty(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.exec(`UPDATE notes SET v = '' WHERE k = 'plain'; UPDATE notes SET v = NULL WHERE k = 'x y'`)
	f.run("notes")
	r := f.must(200, "GET", "/v1/datasets/notes/rows", "", "Accept", "text/csv")
	if want := "k,v\n100%,percent\na/b,slash\nplain,\"\"\nx y,\n"; string(r.body) != want {
		t.Fatalf("CSV\n got %q\nwant %q", r.body, want)
	}
}
