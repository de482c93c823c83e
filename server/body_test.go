package server

import (
	"strings"
	"testing"
)

// TestBody_ContentTypes: JSON bodies are read with no Content-Type and with
// curl's -d default; other media types are a 415.
func TestBody_ContentTypes(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	body := `{"connection":"shop","resource":"notes"}`
	f.must(201, "PUT", "/v1/adapters/a1", body, "Content-Type", "application/x-www-form-urlencoded")
	f.must(200, "PUT", "/v1/adapters/a1", body, "Content-Type", "")
	f.must(200, "PUT", "/v1/adapters/a1", body, "Content-Type", "application/json; charset=utf-8")
	if p := f.must(415, "PUT", "/v1/adapters/a1", body, "Content-Type", "text/xml").problem(t); p.Code != "unsupported_media_type" {
		t.Fatalf("problem %+v", p)
	}
}

// TestBody_MalformedJSONIsBadJSON: a body that is not JSON (syntax error,
// truncated, trailing data, a BOM) or not of the right top-level type is
// 400 bad_json, as docs/api.md lists; a wrong field stays bad_request
// naming the field.
func TestBody_MalformedJSONIsBadJSON(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, body := range []string{`{`, `{"name":"x",}`, `{"name":"x","type":"sqlite"} {}`, `{"name":"x","type":"sqlite"} x`, "\ufeff{}", `[]`, `"x"`, `12`, `null`, strings.Repeat("[", 20000)} {
		f.wantProblem(400, "bad_json", "body", "POST", "/v1/connections", body)
	}
	f.wantProblem(400, "bad_json", "body", "POST", "/v1/datasets/products/rollback", `{"version":1}}`)
	f.wantProblem(400, "bad_json", "body", "PUT", "/v1/datasets/products/tags/x", `[`)
	p := f.wantProblem(400, "bad_request", "", "POST", "/v1/connections", `{"name":"x","type":"sqlite","sharing":7}`)
	if !strings.HasPrefix(p.Field, "body.") {
		t.Errorf("a wrong field names %q, want body.<field>", p.Field)
	}
}

// TestBody_CharsetAndEncodingRefused: a JSON body in another charset than
// UTF-8, or compressed, is 415.
func TestBody_CharsetAndEncodingRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	body := `{"name":"x","type":"sqlite","options":{"path":"/nonexistent/x.db"}}`
	f.wantProblem(415, "unsupported_media_type", "", "POST", "/v1/connections", body, "Content-Type", "application/json; charset=utf-16")
	f.wantProblem(415, "unsupported_media_type", "", "POST", "/v1/connections", body, "Content-Encoding", "gzip")
	f.must(201, "POST", "/v1/connections", body, "Content-Type", "application/json; charset=UTF-8")
}
