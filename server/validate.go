package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
)

// Request validation has two paths. kin-openapi (apiDoc.validate) is the
// reference: it checks every parameter, body and security requirement of the
// operation and words the errors. Most reads, though, only carry a few path
// and query parameters of plain schemas, and running kin-openapi on them cost
// about a tenth of a point read. So each operation also gets a quickCheck,
// compiled from the same document, that can only say "kin-openapi would
// accept this request" or "ask kin-openapi":
//
//	R1. A quickCheck accepts a request only when kin-openapi would accept it
//	    unchanged (TestQuickCheckAgreesWithKin checks this on a table of
//	    requests, FuzzQuickCheck on arbitrary ones).
//	R2. Anything it is not sure of goes to kin-openapi, which gives the error
//	    and its wording: a parameter that is empty, repeated, escaped,
//	    missing while required or out of its schema; a request with a body;
//	    an operation with a request body, header or cookie parameters,
//	    defaults or schema keywords the check does not know.

// queryNames returns the names of the query parameters documented for op
// (path item and operation), the only ones a request of op may carry, each
// with whether it may be given more than once: only an array parameter
// (the key columns of a scan bound, one value per column) may.
func queryNames(item *openapi3.PathItem, op *openapi3.Operation) map[string]bool {
	names := map[string]bool{}
	for _, params := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range params {
			if p := ref.Value; p != nil && p.In == openapi3.ParameterInQuery {
				names[p.Name] = p.Schema != nil && p.Schema.Value != nil && p.Schema.Value.Type.Is(openapi3.TypeArray)
			}
		}
	}
	return names
}

// checkQuery refuses a query string that url.ParseQuery does not parse
// whole (a ";" separator, a bad escape), any parameter the operation does
// not document (allowed, from queryNames), and a parameter given more than
// once that is not an array. All are 400 bad_request: echo and net/url drop
// what they cannot parse and read the first of repeated values, so without
// this `?version=3;`, `?dry_run=true%zz` or `?dry_run=false&dry_run=true`
// would run the request with another value than the one last given (the
// current version, a real GC). It walks the string as ParseQuery does,
// without building the map.
func checkQuery(raw string, allowed map[string]bool) error {
	var seen [8]string // the names seen so far; few operations have more
	given := seen[:0]
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		if strings.IndexByte(pair, ';') >= 0 {
			return BadField("query", "the query string does not parse: %q has a \";\" (separate parameters with \"&\", escape \";\" as %%3B)", pair)
		}
		key, value, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(key, "%+") {
			k, err := url.QueryUnescape(key)
			if err != nil {
				return BadField("query", "the query string does not parse: parameter name %q: %v", key, err)
			}
			key = k
		}
		if strings.ContainsAny(value, "%+") {
			if _, err := url.QueryUnescape(value); err != nil {
				return BadField(key, "the query string does not parse: value %q: %v", value, err)
			}
		}
		repeatable, ok := allowed[key]
		if !ok {
			return BadField(key, "unknown query parameter %q", key)
		}
		if !repeatable {
			if slices.Contains(given, key) {
				return BadField(key, "query parameter %q is given more than once; give it once", key)
			}
			given = append(given, key)
		}
	}
	return nil
}

// validateRequest checks parameters and bodies against the OpenAPI
// document: the operation's quick check when it is sure, else kin-openapi
// (R1, R2).
func (s *Server) validateRequest(c echo.Context, rt *route) error {
	r := c.Request()
	if rt.quick != nil {
		var q url.Values // none: parsing an empty query would cost a map
		if r.URL.RawQuery != "" {
			q = c.QueryParams()
		}
		if rt.quick.accepts(r, c, q) {
			return nil
		}
	}
	params := map[string]string{}
	for _, n := range c.ParamNames() {
		// Echo leaves parameters escaped when the request has a raw
		// path; the document describes the values (pathParam).
		v, err := pathParam(c, n)
		if err != nil {
			return err
		}
		if n == "*" {
			n = keyParam
			if v == "" {
				// The empty key of a one-column text key (rowKeyParts).
				// kin-openapi refuses an empty path parameter; the key's
				// schema is a plain string, so any non-empty text stands
				// in for it.
				v = "-"
			}
		}
		params[n] = v
	}
	return s.api.validate(r.Context(), r, rt.apiOp, params)
}

// validate checks req against op's parameters and request body schema. It
// refuses with BadField naming the parameter or body field, or badJSON.
func (d *apiDoc) validate(ctx context.Context, req *http.Request, op apiOp, pathParams map[string]string) error {
	in := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: pathParams,
		Route: &routers.Route{
			Spec:      d.doc,
			Path:      op.path,
			PathItem:  op.item,
			Method:    op.method,
			Operation: op.op,
		},
		Options: &openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		},
	}
	err := openapi3filter.ValidateRequest(ctx, in)
	if err == nil {
		return nil
	}
	var re *openapi3filter.RequestError
	if errors.As(err, &re) {
		switch {
		case re.Parameter != nil && re.Parameter.Name == "format":
			return WithField(&refusal{kind: errBadFormat, msg: "format: " + requestErrorText(re)}, "format")
		case re.Parameter != nil:
			return BadField(re.Parameter.Name, "%s", requestErrorText(re))
		case re.RequestBody != nil:
			field := "body"
			var pe *openapi3filter.ParseError
			if errors.As(re.Err, &pe) {
				return badJSON("not JSON: %v", pe.Cause)
			}
			var se *openapi3.SchemaError
			if errors.As(re.Err, &se) && len(se.JSONPointer()) == 0 && (se.SchemaField == "type" || se.SchemaField == "nullable") {
				// The wrong top-level type ([] or null for an object): not
				// JSON of the right shape.
				want := "value of another type"
				if se.Schema != nil && se.Schema.Type != nil && len(se.Schema.Type.Slice()) == 1 {
					want = se.Schema.Type.Slice()[0]
				}
				return badJSON("want a JSON %s: %s", want, se.Reason)
			}
			if errors.As(re.Err, &se) {
				return d.bodyViolations(ctx, in, re.RequestBody, se)
			}
			return BadField(field, "%s", requestErrorText(re))
		}
	}
	return BadField("", "%s", err.Error())
}

// bodyViolations refuses a body that its schema refuses, naming every
// field the schema refuses, joined (a Problem's errors, even for one):
// first is the refusal of the check that stops at the first, and the
// body (rb) is checked again for the others.
func (d *apiDoc) bodyViolations(ctx context.Context, in *openapi3filter.RequestValidationInput, rb *openapi3.RequestBody, first *openapi3.SchemaError) error {
	root := bodySchema(rb)
	errs := []error{schemaViolation(root, first)}
	seen := map[string]bool{fieldOf(root, first): true}
	again := *in
	opts := *in.Options
	opts.MultiError = true
	again.Options = &opts
	var re *openapi3filter.RequestError
	if !errors.As(openapi3filter.ValidateRequestBody(ctx, &again, rb), &re) {
		return errors.Join(errs...)
	}
	for _, se := range schemaErrors(re.Err) {
		if f := fieldOf(root, se); !seen[f] {
			seen[f] = true
			errs = append(errs, schemaViolation(root, se))
		}
	}
	return errors.Join(errs...)
}

// bodySchema is the schema of the JSON body rb describes, nil for none.
func bodySchema(rb *openapi3.RequestBody) *openapi3.Schema {
	if rb == nil {
		return nil
	}
	if mt := rb.Content.Get(echo.MIMEApplicationJSON); mt != nil && mt.Schema != nil {
		return mt.Schema.Value
	}
	return nil
}

// schemaErrors flattens the schema errors of a check that reports all
// (openapi3.MultiError, nested for a property's several refusals).
func schemaErrors(err error) []*openapi3.SchemaError {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		var out []*openapi3.SchemaError
		for _, e := range me {
			out = append(out, schemaErrors(e)...)
		}
		return out
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return []*openapi3.SchemaError{se}
	}
	return nil
}

// fieldOf names the body field a schema error refuses, as every check
// of a body and the config file name theirs: body.retention.ttl,
// body.bogus for a property the schema does not allow, an array's
// element by its index in brackets (body.datasets[1]). The error's JSON
// pointer does not tell an index from an object's key; root, the body's
// schema, does, walked along the pointer (a step it does not describe
// is an index when it is a number).
func fieldOf(root *openapi3.Schema, se *openapi3.SchemaError) string {
	var b strings.Builder
	b.WriteString("body")
	s := root
	for _, step := range se.JSONPointer() {
		if isArraySchema(s) || (s == nil && isIndex(step)) {
			b.WriteString("[" + step + "]")
			s = itemSchema(s)
			continue
		}
		b.WriteString("." + step)
		s = propertySchema(s, step)
	}
	if m := unsupportedProperty.FindStringSubmatch(se.Reason); m != nil {
		b.WriteString("." + m[1])
	}
	return b.String()
}

// isArraySchema reports whether s describes arrays.
func isArraySchema(s *openapi3.Schema) bool {
	return s != nil && s.Type != nil && s.Type.Includes(openapi3.TypeArray)
}

// isIndex reports whether step is an array index: digits only.
func isIndex(step string) bool {
	if step == "" {
		return false
	}
	for _, r := range step {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// itemSchema is the schema of the elements of arrays of s, nil when
// unknown.
func itemSchema(s *openapi3.Schema) *openapi3.Schema {
	if s == nil || s.Items == nil {
		return nil
	}
	return s.Items.Value
}

// propertySchema is the schema of the value of key name in objects of
// s: its property, else its additionalProperties, else one of its allOf
// that describes it; nil when unknown.
func propertySchema(s *openapi3.Schema, name string) *openapi3.Schema {
	if s == nil {
		return nil
	}
	if p := s.Properties[name]; p != nil {
		return p.Value
	}
	if ap := s.AdditionalProperties.Schema; ap != nil {
		return ap.Value
	}
	for _, sub := range s.AllOf {
		if sub != nil {
			if p := propertySchema(sub.Value, name); p != nil {
				return p
			}
		}
	}
	return nil
}

// schemaViolation is the 400 bad_request of one schema refusal of a
// body of schema root.
func schemaViolation(root *openapi3.Schema, se *openapi3.SchemaError) error {
	return BadField(fieldOf(root, se), "%s", schemaReason(se))
}

var unsupportedProperty = regexp.MustCompile(`property "([^"]+)" is unsupported`)

// schemaReason words a schema refusal for the user: a value that does not
// match its pattern, or is of another JSON type (a TTL of 3600), says what
// the document says the value is ("a Go duration, ...") rather than the
// regular expression or the type alone.
func schemaReason(se *openapi3.SchemaError) string {
	if (se.SchemaField == "pattern" || se.SchemaField == "type") && se.Schema != nil && se.Schema.Description != "" {
		return fmt.Sprintf("want %s; got %q", se.Schema.Description, fmt.Sprint(se.Value))
	}
	if n, ok := se.Value.(json.Number); ok && se.SchemaField == "type" {
		// A number no float64 holds (1e400): the validator says it
		// cannot convert a json.Number, which is its own affair.
		return fmt.Sprintf("number %s is out of range", n)
	}
	if se.SchemaField == "format" && se.Schema != nil {
		// The validator's reason for a format quotes the format's regular
		// expression; say what the value should look like instead.
		want, ok := formatWant[se.Schema.Format]
		if !ok {
			want = fmt.Sprintf("a value of format %q", se.Schema.Format)
		}
		return fmt.Sprintf("want %s; got %q", want, fmt.Sprint(se.Value))
	}
	if m := unsupportedProperty.FindStringSubmatch(se.Reason); m != nil && se.Schema != nil {
		// A misspelt key (inlcude, schedle) is the likeliest cause:
		// name the properties it is close to.
		if like := closeNames(m[1], se.Schema.Properties); len(like) > 0 {
			return fmt.Sprintf("%s; did you mean %s?", se.Reason, strings.Join(like, " or "))
		}
	}
	return se.Reason
}

// closeNames returns, sorted, the keys of props within an edit distance
// of 2 of name (and of less than half its length, so that a short name
// is not close to every other short one).
func closeNames[V any](name string, props map[string]V) []string {
	var out []string
	for p := range props {
		if d := editDistance(name, p); d <= 2 && 2*d < len(name) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// editDistance is the Levenshtein distance of a and b, in bytes, with a
// swap of two adjacent bytes counting one (inlcude, include).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// formatWant says for people what a value of each string format the API
// document uses looks like.
var formatWant = map[string]string{
	"date-time": "an RFC 3339 time, e.g. 2026-12-02T10:00:00Z",
}

func requestErrorText(re *openapi3filter.RequestError) string {
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		return schemaReason(se)
	}
	if re.Err != nil {
		msg := re.Err.Error()
		// kin-openapi gives some refusals (a required value missing) the
		// same text as reason and error: say it once.
		if re.Reason != "" && re.Reason != msg {
			msg = re.Reason + ": " + msg
		}
		return msg
	}
	return re.Reason
}
