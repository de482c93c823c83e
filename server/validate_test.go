package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// quickVerdict routes one request and returns the route's quick check
// verdict and kin-openapi's error; ok is false when the request matches no
// route.
func quickVerdict(s *Server, method, target string) (quick bool, kinErr error, ok bool) {
	req, err := http.NewRequest(method, "http://x"+target, nil)
	if err != nil {
		return false, nil, false
	}
	c := s.echo.NewContext(req, httptest.NewRecorder())
	s.echo.Router().Find(method, echo.GetPath(req), c)
	rt := s.route(c)
	if rt == nil {
		return false, nil, false
	}
	if rt.quick != nil {
		quick = rt.quick.accepts(req, c, c.QueryParams())
	}
	params := map[string]string{}
	for i, n := range c.ParamNames() {
		if n == "*" {
			n = "key"
		}
		params[n] = c.ParamValues()[i]
	}
	// A fresh request: kin-openapi may read and replace the body.
	req2, _ := http.NewRequest(method, "http://x"+target, nil)
	return quick, s.api.validate(req2.Context(), req2, rt.apiOp, params), true
}

// TestQuickCheckAgreesWithKin checks R1 (validate.go): whatever the quick
// check accepts, kin-openapi accepts too. It walks every operation with
// path and query values around each schema's edges.
func TestQuickCheckAgreesWithKin(t *testing.T) {
	s := routesOnly(t)
	values := []string{"", "x", "1", "0", "-1", "1e3", "0x10", " 1", "+1", "10000", "10001", "9007199254740993",
		"99999999999999999999", "true", "false", "TRUE", "t", "yes", "%ff", "a%2Fb", "é", strings.Repeat("n", 200), strings.Repeat("n", 201),
		// as_of's date-time: valid, a day the month lacks, lower case, a
		// leap second, an offset, no zone.
		"2026-01-02T15:04:05Z", "2026-02-30T15:04:05Z", "2026-01-02t15:04:05z", "2026-06-30T23:59:60Z",
		"2026-01-02T15:04:05.123456789+02:00", "2026-01-02T15:04:05"}
	var keys []string
	for k := range s.api.ops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	accepted := map[string]int{}
	for _, k := range keys {
		op := s.api.ops[k]
		var query []string
		for _, ref := range op.item.Parameters {
			if ref.Value.In == "query" {
				query = append(query, ref.Value.Name)
			}
		}
		for _, ref := range op.op.Parameters {
			if ref.Value.In == "query" {
				query = append(query, ref.Value.Name)
			}
		}
		query = append(query, "unknown")
		check := func(target string) {
			quick, kinErr, ok := quickVerdict(s, op.method, target)
			if !ok {
				return
			}
			if quick {
				accepted[k]++
				if kinErr != nil {
					t.Errorf("%s %s: the quick check accepts, kin-openapi refuses: %v", op.method, target, kinErr)
				}
			}
		}
		for _, pv := range values {
			if pv == "" {
				continue
			}
			path := pathParamRE.ReplaceAllStringFunc(op.path, func(string) string { return url.PathEscape(pv) })
			if strings.Contains(pv, "%") {
				path = pathParamRE.ReplaceAllStringFunc(op.path, func(string) string { return pv })
			}
			check(path)
			for _, name := range query {
				for _, qv := range values {
					check(path + "?" + name + "=" + url.QueryEscape(qv))
					check(path + "?" + name + "=" + url.QueryEscape(qv) + "&" + name + "=1")
				}
				check(path + "?" + name)
			}
		}
	}
	for _, k := range []string{"GET /v1/datasets/{dataset}/rows/{key}", "GET /v1/datasets/{dataset}/rows", "GET /v1/datasets/{dataset}"} {
		if accepted[k] < 100 {
			t.Errorf("%s: the quick check accepted nothing; reads would all go to kin-openapi", k)
		}
	}
}

// FuzzQuickCheck checks R1 on arbitrary paths and queries: `go test` runs
// the seeds, `go test -fuzz FuzzQuickCheck ./server` explores.
func FuzzQuickCheck(f *testing.F) {
	s := routesOnly(f)
	for _, seed := range [][2]string{
		{"GET", "/v1/datasets/products/rows/1?version=1&columns=a,b"},
		{"GET", "/v1/datasets/products/rows?start=1&start=2&limit=10000"},
		{"GET", "/v1/datasets/products/diff?from=1&to=2&stats_only=1"},
		{"GET", "/v1/adapters/a/runs?limit=5"},
		{"GET", "/v1/datasets/p?tag=x&as_of=2026-01-02T15:04:05Z"},
		{"POST", "/v1/adapters/a/runs?wait=true"},
		{"GET", "/v1/datasets/products/versions/1"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		switch method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
		default:
			return
		}
		u, err := url.Parse(target)
		if err != nil || !strings.HasPrefix(u.Path, "/") || u.Host != "" || u.Scheme != "" {
			return
		}
		quick, kinErr, ok := quickVerdict(s, method, u.RequestURI())
		if ok && quick && kinErr != nil {
			t.Fatalf("%s %s: the quick check accepts, kin-openapi refuses: %v", method, u.RequestURI(), kinErr)
		}
	})
}

// TestQuery_MalformedRefused: a query string that url.ParseQuery does not
// parse whole is a 400 before any handler acts, rather than the pair it
// cannot parse being dropped (a read answering the current version, a dry
// run collecting for real).
func TestQuery_MalformedRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(201, "POST", "/v1/adapters", `{"name":"short","connection":"shop","resource":"notes","dataset":"short","retention":{"ttl":"1ns","min_versions":1}}`)
	v1 := strconv.FormatInt(f.run("short"), 10)
	f.exec(`UPDATE notes SET v = 'two'`)
	f.run("short")
	for _, path := range []string{
		"/v1/datasets/short/rows/plain?version=" + v1 + ";",
		"/v1/datasets/short/rows/plain?version=" + v1 + "%zz",
		"/v1/datasets/short/rows/plain?version=1;version=2",
		"/v1/datasets/short/rows?limit=%zz",
		"/v1/datasets/short?tag=x%z",
		"/v1/datasets/short/rows?%zz=1",
	} {
		p := f.wantProblem(400, "bad_request", "", "GET", path, "")
		if !strings.Contains(p.Detail, "does not parse") {
			t.Errorf("%s: detail %q", path, p.Detail)
		}
	}
	f.wantProblem(400, "bad_request", "", "POST", "/v1/datasets/short/gc?dry_run=true;", "")
	f.wantProblem(400, "bad_request", "dry_run", "POST", "/v1/datasets/short/gc?dry_run=true%zz", "")
	var vs struct {
		Versions []struct{ Version int64 } `json:"versions"`
	}
	f.must(200, "GET", "/v1/datasets/short/versions", "").json(t, &vs)
	if len(vs.Versions) != 2 {
		t.Fatalf("a refused dry run collected: versions %+v", vs.Versions)
	}
	// Escapes that parse are fine.
	f.must(200, "GET", "/v1/datasets/short/rows/plain?version="+v1+"&columns=%76", "")
}

// TestQuery_BadTimeSaysTheFormat: a date-time query value that is no RFC
// 3339 time is refused saying what one looks like, not the validator's
// regular expression.
func TestQuery_BadTimeSaysTheFormat(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	for _, path := range []string{"/v1/datasets/products/rows/1?as_of=yesterday", "/v1/datasets/products/rows?as_of=2026-01-02", "/v1/datasets/products?as_of=x"} {
		p := f.wantProblem(400, "bad_request", "as_of", "GET", path, "")
		if !strings.Contains(p.Detail, `want an RFC 3339 time, e.g. 2026-12-02T10:00:00Z; got "`) || strings.Contains(p.Detail, "pattern") || strings.Contains(p.Detail, "^") {
			t.Errorf("%s: detail %q", path, p.Detail)
		}
	}
}

// TestPath_EmptySegmentSaidOnce: an empty path parameter (a client that
// joined an empty name into the path) is refused naming it, the reason
// said once.
func TestPath_EmptySegmentSaidOnce(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, c := range []struct{ method, path, field string }{
		{"GET", "/v1/datasets//versions", "dataset"},
		{"POST", "/v1/adapters//runs", "name"},
	} {
		p := f.wantProblem(400, "bad_request", c.field, c.method, c.path, "")
		if p.Detail != c.field+": value is required but missing" {
			t.Errorf("%s %s: detail %q", c.method, c.path, p.Detail)
		}
	}
}

// TestQuery_UnknownParameterRefused: a query parameter the operation does
// not document is a 400 naming it.
func TestQuery_UnknownParameterRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	f.wantProblem(400, "bad_request", "Version", "GET", "/v1/datasets/products/rows/1?Version=1", "")
	f.wantProblem(400, "bad_request", "form", "GET", "/v1/datasets/products/diff?form=1", "")
	f.wantProblem(400, "bad_request", "unknown", "GET", "/v1/datasets/products/rows?unknown=1", "")
	f.wantProblem(400, "bad_request", "x", "GET", "/v1/datasets?x", "")
	f.wantProblem(400, "bad_request", "dryrun", "POST", "/v1/datasets/products/gc?dryrun=true", "")
	f.must(200, "GET", "/v1/datasets/products/rows?limit=2&columns=id&start=1", "")
	f.must(200, "GET", "/v1/datasets/products/rows?&limit=2&", "") // empty pairs are skipped, as ParseQuery does
}

// TestQuery_RepeatedParameterRefused: every query parameter of every
// operation given twice is a 400 bad_request naming it, before any handler
// runs, but for the array parameters (a scan bound's key columns), which
// repeat by design.
func TestQuery_RepeatedParameterRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	n := 0
	for k, op := range f.srv.api.ops {
		path := pathParamRE.ReplaceAllString(op.path, "x")
		for name, repeatable := range op.query {
			raw := name + "=1&" + name + "=2"
			if repeatable {
				if err := checkQuery(raw, op.query); err != nil {
					t.Errorf("%s ?%s: an array parameter refused: %v", k, raw, err)
				}
				continue
			}
			n++
			p := f.wantProblem(400, "bad_request", name, op.method, path+"?"+raw, "")
			if !strings.Contains(p.Detail, "more than once") {
				t.Errorf("%s ?%s: detail %q", k, raw, p.Detail)
			}
		}
	}
	if n < 15 {
		t.Fatalf("only %d parameters checked; the walk of the document is broken", n)
	}
}

// TestQuery_RepeatedParameterNeverResolved: a repeated dry_run never runs a
// real GC, a repeated version never reads one of the two.
func TestQuery_RepeatedParameterNeverResolved(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(201, "POST", "/v1/adapters", `{"name":"short","connection":"shop","resource":"notes","dataset":"short","retention":{"ttl":"1ns","min_versions":1}}`)
	v1 := strconv.FormatInt(f.run("short"), 10)
	f.exec(`UPDATE notes SET v = 'two'`)
	v2 := strconv.FormatInt(f.run("short"), 10)
	f.wantProblem(400, "bad_request", "dry_run", "POST", "/v1/datasets/short/gc?dry_run=false&dry_run=true", "")
	f.wantProblem(400, "bad_request", "dry_run", "POST", "/v1/datasets/short/gc?dry_run=true&dry_run=true", "")
	f.wantProblem(400, "bad_request", "version", "GET", "/v1/datasets/short/rows/plain?version="+v1+"&version="+v2, "")
	f.wantProblem(400, "bad_request", "limit", "GET", "/v1/datasets/short/rows?limit=1&columns=v&limit=2", "")
	var vs struct {
		Versions []struct{ Version int64 } `json:"versions"`
	}
	f.must(200, "GET", "/v1/datasets/short/versions", "").json(t, &vs)
	if len(vs.Versions) != 2 {
		t.Fatalf("a refused GC collected: versions %+v", vs.Versions)
	}
	f.must(200, "GET", "/v1/datasets/short/rows?start=a&end=z&limit=2", "")
}
