package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestPageTokenPinsVersion checks that a page token alone continues a
// paged scan at the version of its first page (D2), even after a newer
// version is committed: DecodePageToken gives the version to pin, and the
// pages together hold each row of that version once.
func TestPageTokenPinsVersion(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	var rows [][]Value
	for i := range 7 {
		rows = append(rows, []Value{iv(int64(i)), sv("v1")})
	}
	v1 := runRows(t, db, rows).Version
	r, err := db.Reader(ctx, "t", At{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Scan(ctx, ScanOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it.Next() {
		got = append(got, string(it.Row().AppendJSON(nil)))
	}
	tok := it.NextPageToken()
	it.Close()
	r.Close()
	runRows(t, db, [][]Value{{iv(0), sv("v2")}})
	for tok != "" {
		v, err := DecodePageToken("t", tok)
		if err != nil || v != v1 {
			t.Fatalf("DecodePageToken = %d, %v; want %d", v, err, v1)
		}
		r, err := db.Reader(ctx, "t", At{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Scan(ctx, ScanOptions{Limit: 3, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			got = append(got, string(it.Row().AppendJSON(nil)))
		}
		tok = it.NextPageToken()
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	var want []string
	for i := range 7 {
		want = append(want, `{"id":`+string(rune('0'+i))+`,"name":"v1"}`)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages hold %q, want %q", got, want)
	}
}

// TestPageTokenMalformed checks that a token cut before its last key, or
// that is not base64url, is ErrBadPageToken, and that no prefix panics.
// (A token cut inside its last key still decodes; the scan refuses it,
// TestPageTokenLastKeyChecked.)
func TestPageTokenMalformed(t *testing.T) {
	tok := pageToken{dataset: "orders", version: 1001, lastKey: []byte{0x10, 0x80, 0, 0, 0, 0, 0, 0, 1}}.encode()
	if v, err := DecodePageToken("orders", tok); err != nil || v != 1001 {
		t.Fatalf("round trip: %d, %v", v, err)
	}
	// 1 + 6 + 2 bytes come before the last key: 12 base64 digits.
	for i := 0; i <= 12; i++ {
		if _, err := DecodePageToken("orders", tok[:i]); !errors.Is(err, ErrBadPageToken) {
			t.Errorf("DecodePageToken(%q) = %v, want ErrBadPageToken", tok[:i], err)
		}
	}
	for i := 13; i < len(tok); i++ {
		DecodePageToken("orders", tok[:i])
	}
	for _, b := range []string{"!!", tok + "=", "AA==", " " + tok} {
		if _, err := DecodePageToken("orders", b); !errors.Is(err, ErrBadPageToken) {
			t.Errorf("DecodePageToken(%q) = %v, want ErrBadPageToken", b, err)
		}
	}
}

// TestPageTokenLastKeyChecked: a scan refuses a token whose last key is
// not one row key of the dataset: bytes appended (to the token's bytes or
// its text), or the key cut short.
func TestPageTokenLastKeyChecked(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	var rows [][]Value
	for i := range 5 {
		rows = append(rows, []Value{iv(int64(i)), sv("v")})
	}
	runRows(t, db, rows)
	r, err := db.Reader(ctx, "t", At{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it, err := r.Scan(ctx, ScanOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
	}
	tok := it.NextPageToken()
	it.Close()
	pt, err := decodePageToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	if it, err := r.Scan(ctx, ScanOptions{PageToken: tok}); err != nil {
		t.Fatalf("the token itself: %v", err)
	} else {
		it.Close()
	}
	appended := pt
	appended.lastKey = append(append([]byte{}, pt.lastKey...), 0x10, 0x80, 0, 0, 0, 0, 0, 0, 1)
	cut := pt
	cut.lastKey = pt.lastKey[:len(pt.lastKey)-1]
	for _, bad := range []string{tok + "AAAA", appended.encode(), cut.encode()} {
		if _, err := r.Scan(ctx, ScanOptions{PageToken: bad}); !errors.Is(err, ErrBadPageToken) {
			t.Errorf("Scan with token %q: %v, want ErrBadPageToken", bad, err)
		}
	}
}

// TestVersionsPage lists the kept versions in pages, newest first: the
// pages together are Versions, each version once; a page that starts
// below a version GC collected since still continues where it stopped.
func TestVersionsPage(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	var committed []int64
	for i := range 7 {
		committed = append(committed, runRows(t, db, [][]Value{{iv(1), sv(fmt.Sprint("v", i))}}).Version)
	}
	all, err := db.Versions(ctx, "t")
	if err != nil || len(all) != 7 || all[0].Version != committed[6] || all[6].Version != committed[0] {
		t.Fatalf("Versions: %v %v", all, err)
	}
	var got []int64
	var before int64
	for pages := 0; ; pages++ {
		vs, more, err := db.VersionsPage(ctx, "t", before, 3)
		if err != nil || pages > 3 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, v := range vs {
			got = append(got, v.Version)
		}
		if !more {
			if len(vs) == 0 || len(got) != 7 {
				t.Fatalf("last page %v, all %v", vs, got)
			}
			break
		}
		before = vs[len(vs)-1].Version
	}
	want := slices.Clone(committed)
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	// A before between kept versions (one collected since) starts below it.
	vs, more, err := db.VersionsPage(ctx, "t", committed[3]+1, 2)
	if err != nil || !more || len(vs) != 2 || vs[0].Version != committed[3] || vs[1].Version != committed[2] {
		t.Fatalf("from between versions: %v %v %v", vs, more, err)
	}
	if vs, more, err := db.VersionsPage(ctx, "t", committed[0], 5); err != nil || more || len(vs) != 0 {
		t.Fatalf("below the oldest: %v %v %v", vs, more, err)
	}
	if _, _, err := db.VersionsPage(ctx, "nope", 0, 5); !errors.Is(err, ErrDatasetNotFound) {
		t.Fatalf("unknown dataset: %v", err)
	}
}

// TestPageTokenNamesTable checks that a page token of a scan of one table
// of a dataset of several tables continues that table and is refused on
// another table of the dataset, where its last key would skip rows: the
// other table is a copy of the first, so that the key shapes agree and
// only the table's name can tell the token apart.
func TestPageTokenNamesTable(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	tables := shop(1)
	tables = append(tables, shopTable{TableSpec{Name: "orders_copy", Schema: ordersSchema}, tables[0].rows})
	v := mustRunTables(t, db, tables).Version
	r, err := db.TableReader(ctx, tablesConfig.Name, "public.orders", At{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Scan(ctx, ScanOptions{Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
	}
	tok := it.NextPageToken()
	it.Close()
	r.Close()
	if tok == "" {
		t.Fatal("no page token after 20 of 50 rows")
	}
	if pinned, err := DecodePageToken(tablesConfig.Name, tok); err != nil || pinned != v {
		t.Fatalf("DecodePageToken = %d, %v; want %d", pinned, err, v)
	}
	scanRest := func(table string) (int, error) {
		r, err := db.TableReader(ctx, tablesConfig.Name, table, At{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		it, err := r.Scan(ctx, ScanOptions{PageToken: tok})
		if err != nil {
			return 0, err
		}
		defer it.Close()
		n := 0
		for it.Next() {
			n++
		}
		return n, it.Err()
	}
	if n, err := scanRest("public.orders"); err != nil || n != 30 {
		t.Fatalf("the rest of public.orders: %d rows, %v; want 30", n, err)
	}
	if _, err := scanRest("orders_copy"); !errors.Is(err, ErrBadPageToken) {
		t.Fatalf("a token of public.orders on orders_copy: %v, want ErrBadPageToken", err)
	}
}
