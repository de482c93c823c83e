package server

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestScan_PagesStreamsAndRanges checks JSON paging (every page pinned to
// the first page's version even after a new commit), NDJSON and CSV streams
// of the whole range, and start/end/prefix/columns.
func TestScan_PagesStreamsAndRanges(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")
	type page struct {
		Version int64            `json:"version"`
		Columns []string         `json:"columns"`
		Rows    []map[string]any `json:"rows"`
		Next    string           `json:"next_page_token"`
	}
	var ids []string
	path := "/v1/datasets/products/rows?limit=3"
	for i := 0; ; i++ {
		var p page
		r := f.must(200, "GET", path, "")
		r.json(t, &p)
		if p.Version != v1 || versionOf(t, r) != v1 {
			t.Fatalf("page %d read version %d, want %d", i, p.Version, v1)
		}
		if len(p.Rows) > 3 {
			t.Fatalf("page of %d rows with limit 3", len(p.Rows))
		}
		for _, row := range p.Rows {
			ids = append(ids, fmt.Sprint(row["id"]))
		}
		if i == 0 {
			// A new version lands between pages; paging must not see it.
			f.exec(`UPDATE products SET name = 'changed'; INSERT INTO products VALUES (10,'new',1,1)`)
			f.run("products")
		}
		if p.Next == "" {
			break
		}
		path = "/v1/datasets/products/rows?limit=3&page_token=" + url.QueryEscape(p.Next)
		if i > 10 {
			t.Fatal("paging does not end")
		}
	}
	if strings.Join(ids, ",") != "1,2,3,4,5,6,7,8" {
		t.Fatalf("paged ids %v", ids)
	}

	r := f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows?version=%d", v1), "", "Accept", "application/x-ndjson")
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if len(lines) != 8 || r.header.Get("Content-Type") != mediaNDJSON || versionOf(t, r) != v1 {
		t.Fatalf("ndjson: %d lines, %s", len(lines), r.body)
	}
	var row7 map[string]any
	if err := json.Unmarshal([]byte(lines[6]), &row7); err != nil || row7["stock"] != nil || row7["name"] != "scale" {
		t.Fatalf("line 7 %q (NULL stock): %v", lines[6], err)
	}

	r = f.must(200, "GET", "/v1/datasets/products/rows?columns=id,name", "", "Accept", "text/csv")
	recs, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil || len(recs) != 10 || strings.Join(recs[0], ",") != "id,name" || strings.Join(recs[9], ",") != "10,new" {
		t.Fatalf("csv: %v %q", err, r.body)
	}

	var p page
	f.must(200, "GET", "/v1/datasets/products/rows?start=3&end=6", "").json(t, &p)
	if len(p.Rows) != 3 || p.Rows[0]["id"] != 3.0 || p.Rows[2]["id"] != 5.0 {
		t.Fatalf("start/end: %+v", p.Rows)
	}
	p = page{}
	f.must(200, "GET", "/v1/datasets/products/rows?prefix=7&columns=name", "").json(t, &p)
	if len(p.Rows) != 1 || len(p.Rows[0]) != 1 || p.Rows[0]["name"] != "changed" {
		t.Fatalf("prefix/columns: %+v", p.Rows)
	}
}

func TestRows_CompositeAndEscapedKeys(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(201, "POST", "/v1/adapters", `{"name":"lines","connection":"shop","resource":"order_lines","dataset":"order_lines"}`)
	f.run("lines")
	f.run("notes")
	var got rowResult
	f.must(200, "GET", "/v1/datasets/order_lines/rows/1001/2", "").json(t, &got)
	if len(got.Key) != 2 || got.Key[0] != 1001.0 || got.Key[1] != 2.0 || got.Row["qty"] != 1.0 {
		t.Fatalf("composite: %+v", got)
	}
	p := f.must(400, "GET", "/v1/datasets/order_lines/rows/1001/two", "").problem(t)
	if p.Code != "bad_key" || p.Field != "key" {
		t.Fatalf("bad key part: %+v", p)
	}
	f.must(400, "GET", "/v1/datasets/order_lines/rows/1001/1/7", "").problem(t)
	var prefixPage struct {
		Rows []map[string]any `json:"rows"`
	}
	f.must(200, "GET", "/v1/datasets/order_lines/rows?prefix=1001", "").json(t, &prefixPage)
	if len(prefixPage.Rows) != 2 {
		t.Fatalf("prefix of a composite key: %+v", prefixPage.Rows)
	}
	for key, want := range map[string]string{"a/b": "slash", "x y": "space", "100%": "percent", "plain": "p"} {
		f.must(200, "GET", "/v1/datasets/notes/rows/"+url.PathEscape(key), "").json(t, &got)
		if got.Row["v"] != want || got.Key[0] != key {
			t.Fatalf("key %q: %+v", key, got)
		}
	}
}

// TestRows_EmptyTextKey: ".../rows/" addresses the empty
// text key of a one-column text key; for other keys it is bad_key.
func TestRows_EmptyTextKey(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.exec(`INSERT INTO notes VALUES ('', 'empty')`)
	f.run("notes")
	f.run("products")
	var got rowResult
	f.must(200, "GET", "/v1/datasets/notes/rows/", "").json(t, &got)
	if got.Row["v"] != "empty" || len(got.Key) != 1 || got.Key[0] != "" {
		t.Fatalf("empty key: %+v", got)
	}
	f.wantProblem(400, "bad_key", "key", "GET", "/v1/datasets/products/rows/", "")
}

// TestRows_ColumnsQuoted: a column whose name holds a comma or a double
// quote is named in columns= in double quotes, as a CSV field; a quote
// left open is 400 naming columns.
func TestRows_ColumnsQuoted(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.exec(`CREATE TABLE odd (id INTEGER PRIMARY KEY, "price, net" REAL, "say ""hi""" TEXT, plain TEXT)`)
	f.exec(`INSERT INTO odd VALUES (1, 2.5, 'x', 'p')`)
	f.must(201, "POST", "/v1/adapters", `{"name":"odd","connection":"shop","resource":"odd"}`)
	f.run("odd")
	var page struct {
		Rows []map[string]any `json:"rows"`
	}
	cols := url.QueryEscape(`id, "price, net","say ""hi"""`)
	f.must(200, "GET", "/v1/datasets/odd/rows?columns="+cols, "").json(t, &page)
	if len(page.Rows) != 1 || len(page.Rows[0]) != 3 || page.Rows[0]["price, net"] != 2.5 || page.Rows[0][`say "hi"`] != "x" {
		t.Fatalf("columns %s: %+v", cols, page.Rows)
	}
	var got rowResult
	f.must(200, "GET", "/v1/datasets/odd/rows/1?columns="+url.QueryEscape(`"price, net"`), "").json(t, &got)
	if len(got.Row) != 1 || got.Row["price, net"] != 2.5 {
		t.Fatalf("get with a quoted column: %+v", got)
	}
	f.wantProblem(400, "bad_request", "columns", "GET", "/v1/datasets/odd/rows?columns="+url.QueryEscape(`id,"price`), "")
}

// TestRows_ColumnsQuotedSpaces: in a columns= list holding a quoted name,
// the unquoted names lose the spaces around them as in a list without
// one, and spaces around a quoted name are not part of it; text after a
// quoted name, or a quote in an unquoted one, is 400 naming columns.
func TestRows_ColumnsQuotedSpaces(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.exec(`CREATE TABLE odd (id INTEGER PRIMARY KEY, "price, net" REAL, plain TEXT)`)
	f.exec(`INSERT INTO odd VALUES (1, 2.5, 'p')`)
	f.must(201, "POST", "/v1/adapters", `{"name":"odd","connection":"shop","resource":"odd"}`)
	f.run("odd")
	for _, list := range []string{`plain ,"price, net"`, `"price, net" , plain`, ` plain , "price, net" `} {
		var page struct {
			Rows []map[string]any `json:"rows"`
		}
		f.must(200, "GET", "/v1/datasets/odd/rows?columns="+url.QueryEscape(list), "").json(t, &page)
		if len(page.Rows) != 1 || len(page.Rows[0]) != 2 || page.Rows[0]["price, net"] != 2.5 || page.Rows[0]["plain"] != "p" {
			t.Fatalf("columns %q: %+v", list, page.Rows)
		}
	}
	// Text after a quoted name, and a quote in an unquoted one.
	for _, list := range []string{`"price, net"x,plain`, `plain,pl"ain`} {
		f.wantProblem(400, "bad_request", "columns", "GET", "/v1/datasets/odd/rows?columns="+url.QueryEscape(list), "")
	}
}
