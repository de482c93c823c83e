package server

import (
	"strings"
	"testing"
)

// TestBody_ContentTypes: JSON bodies are read only as application/json,
// with or without a charset; any other media type, curl's -d default
// and an empty Content-Type included, is a 415 and nothing is written.
func TestBody_ContentTypes(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	body := `{"connection":"shop","resource":"notes"}`
	for _, ct := range []string{"application/x-www-form-urlencoded", "", "text/plain", "text/xml", "multipart/form-data; boundary=x", "application/json-seq", "application/jsonx"} {
		f.wantProblem(415, "unsupported_media_type", "", "PUT", "/v1/adapters/a1", body, "Content-Type", ct)
	}
	f.must(404, "GET", "/v1/adapters/a1", "")
	f.must(201, "PUT", "/v1/adapters/a1", body, "Content-Type", "application/json")
	f.must(200, "PUT", "/v1/adapters/a1", body, "Content-Type", "application/json; charset=utf-8")
	f.must(200, "PUT", "/v1/adapters/a1", body, "Content-Type", "Application/JSON;charset=UTF-8")
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

// TestBody_DuplicateKeyRefused: a key given twice in one object, at any
// depth, is 400 bad_json naming its path, and nothing is created: encoding/json
// alone would keep the last value (a connection "y" for a POST of "x").
func TestBody_DuplicateKeyRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, c := range []struct{ method, path, body, field string }{
		{"POST", "/v1/connections", `{"name":"x","type":"mysql","name":"y","options":{"host":"h"}}`, "body.name"},
		{"POST", "/v1/connections", `{"name":"x","type":"mysql","options":{"host":"h","password":"a","password":"b"}}`, "body.options.password"},
		{"PUT", "/v1/adapters/a1", `{"connection":"shop","resource":"notes","retention":{"ttl":"1h","ttl":"2h"}}`, "body.retention.ttl"},
		{"POST", "/v1/datasets/products/rollback", `{"version":1,"version":2}`, "body.version"},
	} {
		p := f.wantProblem(400, "bad_json", c.field, c.method, c.path, c.body)
		if !strings.Contains(p.Detail, "more than once") {
			t.Errorf("%s: detail %q", c.body, p.Detail)
		}
	}
	f.must(404, "GET", "/v1/connections/y", "")
	f.must(404, "GET", "/v1/connections/x", "")
	f.must(404, "GET", "/v1/adapters/a1", "")
	// The same key in sibling objects is no repeat.
	f.must(201, "PUT", "/v1/adapters/a1", `{"connection":"shop","resource":"notes","retention":{"ttl":"1h"},"guard":{"max_shrink":0.5}}`)
}

// TestBody_InvalidUTF8Refused: a string that is not UTF-8, an option's
// value or a key, is 400 naming its path, and nothing is created:
// encoding/json alone would replace the bytes with U+FFFD. The character
// U+FFFD itself, written or escaped, is text like any other.
func TestBody_InvalidUTF8Refused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, c := range []struct{ body, field string }{
		{"{\"name\":\"x\",\"type\":\"sqlite\",\"options\":{\"path\":\"/tmp/a\xff.db\"}}", "body.options.path"},
		{"{\"name\":\"x\",\"type\":\"mysql\",\"options\":{\"host\":\"h\",\"user\":\"\xc3\"}}", "body.options.user"},
		{"{\"name\":\"x\",\"type\":\"sqlite\",\"options\":{\"pa\xffth\":\"/tmp/a.db\"}}", "body.options.pa\ufffdth"},
	} {
		p := f.wantProblem(400, "bad_request", c.field, "POST", "/v1/connections", c.body)
		if !strings.Contains(p.Detail, "not valid UTF-8") {
			t.Errorf("%q: detail %q", c.body, p.Detail)
		}
	}
	// A field the document gives a pattern is refused by it first.
	f.wantProblem(400, "bad_request", "body.name", "POST", "/v1/connections", "{\"name\":\"x\xfe\",\"type\":\"sqlite\",\"options\":{\"path\":\"/tmp/a.db\"}}")
	f.must(404, "GET", "/v1/connections/x", "")
	f.must(201, "POST", "/v1/connections", `{"name":"x","type":"sqlite","options":{"path":"/tmp/\ufffd-�.db"}}`)
}

// TestBody_DuplicateKeyPaths: jsonTextProblem finds a repeat at any depth,
// inside arrays too, and none in sibling objects or in text that does not
// parse (left to the decoder).
func TestBody_DuplicateKeyPaths(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1,"b":2}`:             "",
		`{"a":{"x":1},"b":{"x":1}}`: "",
		`[{"a":1},{"a":1}]`:         "",
		`{"a":1,"a":1}`:             "body.a",
		`{"x":[{"a":1},{"a":1,"b":[1,{"c":1,"c":2}]}]}`: "body.x[1].b[1].c",
		`{"o":{"0":{"c":1,"c":2}}}`:                     "body.o.0.c",
		`{"a":{"b":{"c":1}},"a":2}`:                     "body.a",
		`{"a":1,"a"`:                                    "body.a",
		`{"a":1,`:                                       "",
		strings.Repeat("[", 20000):                      "",
	} {
		got, p := jsonTextProblem([]byte(body))
		if got != want || (want != "") != (p == duplicatedKey) {
			t.Errorf("%.40s: %q %d, want %q", body, got, p, want)
		}
	}
}
