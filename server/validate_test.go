package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
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
		"99999999999999999999", "true", "false", "TRUE", "t", "yes", "%ff", "a%2Fb", "é", strings.Repeat("n", 200), strings.Repeat("n", 201)}
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
		if accepted[k] == 0 {
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
