package server

import (
	"net/url"
	"testing"
)

// TestPageToken_OneCode: every mangled token, and a token of
// another dataset, is bad_page_token naming page_token.
func TestPageToken_OneCode(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	f.run("notes")
	var page struct {
		Next string `json:"next_page_token"`
	}
	f.must(200, "GET", "/v1/datasets/products/rows?limit=2", "").json(t, &page)
	if page.Next == "" {
		t.Fatal("no next page token")
	}
	var notes struct {
		Next string `json:"next_page_token"`
	}
	f.must(200, "GET", "/v1/datasets/notes/rows?limit=1", "").json(t, &notes)
	f.must(200, "GET", "/v1/datasets/products/rows?limit=2&page_token="+url.QueryEscape(page.Next), "")
	for _, tok := range []string{"garbage", "1.", ".", "-1.AwE", "99999999999999999999.AwE", "1.AAAA", "1.00000000.AAAA", notes.Next} {
		f.wantProblem(400, "bad_page_token", "page_token", "GET", "/v1/datasets/products/rows?page_token="+url.QueryEscape(tok), "")
	}
}
