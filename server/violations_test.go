package server

import (
	"regexp"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/notify"
)

// wantViolations checks that p lists exactly the fields want, in order,
// each with its code, and that its top-level detail names the first of
// its code and counts the others.
func wantViolations(t *testing.T, p Problem, want ...[2]string) {
	t.Helper()
	if len(p.Errors) != len(want) {
		t.Fatalf("%d violations, want %d: %+v", len(p.Errors), len(want), p.Errors)
	}
	for i, w := range want {
		if v := p.Errors[i]; v.Field != w[0] || v.Code != w[1] || v.Detail == "" {
			t.Errorf("violation %d: %+v, want field %s code %s", i, v, w[0], w[1])
		}
	}
	if len(want) > 1 && !strings.Contains(p.Detail, "more problem") {
		t.Errorf("detail %q does not say more problems follow", p.Detail)
	}
}

// TestBodies_EveryViolationAtOnce: a definition with several bad fields
// is refused in one answer naming each, whether the document's schema or
// the definition's own checks refuse them; the answer keeps the code and
// status one bad field gets alone.
func TestBodies_EveryViolationAtOnce(t *testing.T) {
	f := newFixture(t, fixtureOpts{tokens: []Token{{Name: "adm", Token: "adm-tok-4821", Role: RoleAdmin}},
		notify: &notify.Options{Webhooks: []notify.Webhook{{Name: "ops", URL: "http://127.0.0.1:1/hook"}}}})
	f.token = "adm-tok-4821"

	// Alone, each field gets the code it always had.
	f.wantProblem(400, "bad_request", "body.name", "POST", "/v1/adapters", `{"name":"bad name!","connection":"shop","resource":"products"}`)
	f.wantProblem(400, "bad_request", "body.retries", "POST", "/v1/adapters", `{"name":"a1","connection":"shop","resource":"products","retries":500}`)
	p := f.wantProblem(400, "bad_schedule", "schedule", "POST", "/v1/adapters", `{"name":"a1","connection":"shop","resource":"products","schedule":"every tuesday"}`)
	wantViolations(t, p, [2]string{"schedule", "bad_schedule"})
	f.wantProblem(400, "bad_option", "notify[0]", "POST", "/v1/adapters", `{"name":"a1","connection":"shop","resource":"products","notify":["nobody"]}`)

	// Three bad fields: two the schema refuses, one the adapter's check.
	p = f.wantProblem(400, "bad_request", "body.name", "POST", "/v1/adapters",
		`{"name":"bad name!","connection":"shop","resource":"products","retries":500,"schedule":"every tuesday"}`)
	wantViolations(t, p, [2]string{"body.name", "bad_request"}, [2]string{"body.retries", "bad_request"}, [2]string{"schedule", "bad_schedule"})
	if !strings.Contains(p.Detail, "bad name!") || !strings.Contains(p.Detail, "2 more problems") {
		t.Errorf("detail %q", p.Detail)
	}
	// Three the adapter's checks refuse, a PUT as a POST: the code is a
	// bad schedule's, as alone, and the top field is the schedule.
	for _, m := range []struct{ method, path, name string }{{"POST", "/v1/adapters", `"name":"a1",`}, {"PUT", "/v1/adapters/a1", ""}} {
		p = f.wantProblem(400, "bad_schedule", "schedule", m.method, m.path,
			`{`+m.name+`"connection":"shop","resource":"products","include":["*"],"schedule":"every tuesday","notify":["ops","nobody"]}`)
		wantViolations(t, p, [2]string{"notify[1]", "bad_option"}, [2]string{"resource", "bad_option"}, [2]string{"schedule", "bad_schedule"})
	}
	// A value the schema refuses and whose decoding fails (a duration)
	// before the others in the body: the others are still checked.
	p = f.wantProblem(400, "bad_request", "body.retention.ttl", "POST", "/v1/adapters",
		`{"name":"a1","connection":"shop","resource":"products","retention":{"ttl":"-1h","min_versions":2},"schedule":"every tuesday","notify":["nobody"]}`)
	wantViolations(t, p, [2]string{"body.retention.ttl", "bad_request"}, [2]string{"notify[0]", "bad_option"}, [2]string{"schedule", "bad_schedule"})
	// A number no float64 holds is out of range, said so.
	p = f.wantProblem(400, "bad_request", "body.guard.max_shrink", "POST", "/v1/adapters",
		`{"name":"a1","connection":"shop","resource":"products","guard":{"max_shrink":1e400}}`)
	if p.Detail != "body.guard.max_shrink: number 1e400 is out of range" {
		t.Errorf("max_shrink 1e400: detail %q", p.Detail)
	}
	// Nothing was saved.
	f.must(404, "GET", "/v1/adapters/a1", "")
	// A field both the schema and the adapter's check refuse (retries)
	// is named once; the path's name differing from the body's is
	// named too.
	p = f.wantProblem(400, "bad_request", "body.retries", "PUT", "/v1/adapters/a1", `{"name":"other","connection":"shop","resource":"products","retries":-1}`)
	wantViolations(t, p, [2]string{"body.retries", "bad_request"}, [2]string{"body.name", "bad_request"})

	// A connection: every option problem, and never its password.
	f.wantProblem(400, "bad_option", "options.port", "POST", "/v1/connections", `{"name":"c1","type":"mysql","options":{"host":"h","user":"u","port":"many"}}`)
	p = f.wantProblem(400, "bad_option", "options.bogus", "POST", "/v1/connections",
		`{"name":"c1","type":"mysql","options":{"port":"many","password":"`+knownSecret+`","bogus":1,"dsn":"u:`+knownSecret+`@tcp(h"}}`)
	wantViolations(t, p, [2]string{"options.bogus", "bad_option"}, [2]string{"options.port", "bad_option"}, [2]string{"options.dsn", "bad_option"}, [2]string{"options.password", "bad_option"})
	p = f.wantProblem(400, "bad_request", "body.name", "POST", "/v1/connections",
		`{"name":"c 1","type":"sqlite","sharing":"often","options":{"path":"x.db","bogus":1}}`)
	wantViolations(t, p, [2]string{"body.name", "bad_request"}, [2]string{"body.sharing", "bad_request"}, [2]string{"options.bogus", "bad_option"})
	f.must(404, "GET", "/v1/connections/c1", "")
	// The definition is checked as the put checks it: a secret given back
	// as "REDACTED" keeps the stored one, here a whole DSN.
	f.must(201, "POST", "/v1/connections", `{"name":"c2","type":"mysql","options":{"dsn":"u:`+knownSecret+`@tcp(127.0.0.1:1)/d"}}`)
	f.must(200, "PUT", "/v1/connections/c2", `{"type":"mysql","options":{"dsn":"REDACTED","connect_timeout":"5s"}}`)
	p = f.wantProblem(400, "bad_option", "options.dsn", "PUT", "/v1/connections/c2", `{"type":"mysql","options":{"dsn":"REDACTED","host":"elsewhere","bogus":1}}`)
	wantViolations(t, p, [2]string{"options.dsn", "bad_option"}, [2]string{"options.bogus", "bad_option"}, [2]string{"options.host", "bad_option"})

	// A token: the schema's problems and the grant's.
	f.wantProblem(400, "bad_request", "body.datasets[0]", "POST", "/v1/tokens", `{"name":"t1","role":"reader","datasets":["a/b"]}`)
	p = f.wantProblem(400, "bad_request", "body.role", "POST", "/v1/tokens", `{"name":"t1","role":"boss","datasets":["a/b","[x"]}`)
	wantViolations(t, p, [2]string{"body.role", "bad_request"}, [2]string{"body.datasets[0]", "bad_request"}, [2]string{"body.datasets[1]", "bad_request"})
	// An empty pattern, which both refuse, is named once.
	p = f.wantProblem(400, "bad_request", "body.datasets[0]", "POST", "/v1/tokens", `{"name":"t1","role":"reader","datasets":["","a/b"]}`)
	wantViolations(t, p, [2]string{"body.datasets[0]", "bad_request"}, [2]string{"body.datasets[1]", "bad_request"})
	if r := f.must(200, "GET", "/v1/tokens", ""); strings.Contains(string(r.body), `"t1"`) {
		t.Errorf("a refused token was created: %s", r.body)
	}
}

// TestBodies_ArrayElementsInBrackets: every refusal of a body names an
// array's element by its index in brackets (body.datasets[1]), as the
// config file's keys do, whichever check refuses it: the document's
// schema, a definition's own check, or the search for a key given twice;
// an object's key that is a number stays a key (body.o.0).
func TestBodies_ArrayElementsInBrackets(t *testing.T) {
	f := newFixture(t, fixtureOpts{tokens: []Token{{Name: "adm", Token: "adm-tok-4821", Role: RoleAdmin}}})
	f.token = "adm-tok-4821"
	// The schema refuses the empty pattern, the grant's check the other.
	p := f.wantProblem(400, "bad_request", "body.datasets[1]", "POST", "/v1/tokens", `{"name":"t1","role":"reader","datasets":["ok","","a/b"]}`)
	wantViolations(t, p, [2]string{"body.datasets[1]", "bad_request"}, [2]string{"body.datasets[2]", "bad_request"})
	// Schema (empty names) and the adapter's checks (repeated, unknown
	// webhook) on the arrays of one definition.
	p = f.wantProblem(400, "bad_request", "body.key_columns[1]", "POST", "/v1/adapters",
		`{"name":"a9","connection":"shop","resource":"products","key_columns":["id",""],"notify":["","nope"]}`)
	for _, v := range p.Errors {
		if !strings.Contains(v.Field, "[") || digitStep.MatchString(v.Field) {
			t.Errorf("violation %+v: an array element not in brackets", v)
		}
	}
	if !p.Blames("notify[1]") || !p.Blames("body.notify[0]") {
		t.Errorf("the bad webhook names are not both named: %+v", p.Errors)
	}
	// A key given twice inside an array's element.
	f.wantProblem(400, "bad_json", "body.source_options.columns[1].a", "POST", "/v1/adapters",
		`{"name":"a9","connection":"shop","resource":"products","source_options":{"columns":[{"a":1},{"a":1,"a":2}]}}`)
	f.wantProblem(400, "bad_json", "body.source_options.0.a", "POST", "/v1/adapters",
		`{"name":"a9","connection":"shop","resource":"products","source_options":{"0":{"a":1,"a":2}}}`)
}

// digitStep matches a field that names an array element as a dotted
// step (body.datasets.0).
var digitStep = regexp.MustCompile(`\.[0-9]+(\.|\[|$)`)
