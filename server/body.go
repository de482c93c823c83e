package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/api"
)

// MaxBodyBytes is the largest request body accepted (1 MiB).
const MaxBodyBytes = 1 << 20

// decodeBody decodes a JSON request body strictly into v: unknown fields,
// trailing data, a wrong type, a key given twice in one object, text that
// is not UTF-8 or an empty required body are 400 problems naming the
// field.
func decodeBody(c echo.Context, v any, required bool) error {
	data, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit))
		}
		return BadField("body", "reading the body: %v", err)
	}
	if pe, ok := c.Get(ctxBodyProblem).(error); ok {
		// The schema refused the body and the handler checks it whole
		// (checkedBody): fill what decodes, for its checks, and refuse.
		fillWhatDecodes(v, data, func(b []byte) []byte { return b }, maxFillDepth)
		return pe
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if required {
			return BadField("body", "a JSON body is required")
		}
		return nil
	}
	switch path, p := jsonTextProblem(data); p {
	case duplicatedKey:
		// encoding/json keeps the last of repeated keys: a name or a
		// password given twice would be resolved silently.
		return WithField(badJSON("key %s is given more than once in its object; give each key once", path), path)
	case invalidUTF8:
		// encoding/json replaces bytes that are not UTF-8 with U+FFFD: a
		// host or a path would be changed silently.
		return BadField(path, "not valid UTF-8; write the text in UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return badJSON("not valid JSON at offset %d: %v", se.Offset, err)
		case errors.As(err, &te):
			want := "want " + te.Type.String()
			if te.Type == reflect.TypeFor[api.Duration]() {
				want = `want a duration such as "24h", "90s" or "30d"`
				if text, err := strconv.Unquote(te.Value); err == nil {
					if _, err := api.ParseDuration(text); err != nil {
						want = err.Error() // its own reason: a duration too long
					}
				}
			}
			return BadField("body."+te.Field, "%s, got %s", want, te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
			return BadField("body."+name, "unknown field %q", name)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return badJSON("truncated JSON")
		}
		return BadField("body", "%v", err)
	}
	// More is false before a stray "}" or "]": ask for the next token.
	if _, err := dec.Token(); err != io.EOF {
		return badJSON("trailing data after the JSON value")
	}
	return nil
}

// A problem of a JSON text that encoding/json would not report.
type jsonProblem int

const (
	noProblem     jsonProblem = iota
	duplicatedKey             // a key given twice in one object
	invalidUTF8               // a string (a key or a value) that is not UTF-8
)

// jsonTextProblem returns the first key that an object of the JSON text
// data holds twice, at any depth, or the first string that is not UTF-8,
// with its path ("body.options.password", array elements by index in
// brackets as every check names them: "body.key_columns[0]"). It walks the tokens once (bodies are at most
// MaxBodyBytes), each string's bytes checked only when data is not UTF-8;
// text that does not parse is left to the decoder, which words the error,
// and so is nesting deeper than encoding/json's own limit (10000), which
// it refuses.
func jsonTextProblem(data []byte) (string, jsonProblem) {
	const maxDepth = 10000
	checkUTF8 := !utf8.Valid(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	path := []string{"body"} // each step spelt as in the path: ".key", "[i]"
	// token reads the next token; bad says its text is not UTF-8.
	token := func() (tok json.Token, bad bool, err error) {
		start := dec.InputOffset()
		tok, err = dec.Token()
		if _, isString := tok.(string); err == nil && checkUTF8 && isString {
			bad = !utf8.Valid(data[start:dec.InputOffset()])
		}
		return tok, bad, err
	}
	var walk func() (jsonProblem, error)
	walk = func() (jsonProblem, error) {
		tok, bad, err := token()
		if err != nil {
			return noProblem, err
		}
		if bad {
			return invalidUTF8, nil
		}
		if len(path) > maxDepth {
			return noProblem, errors.New("too deep")
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, bad, err := token()
				if err != nil {
					return noProblem, err
				}
				k, _ := kt.(string)
				path = append(path, "."+k)
				if bad {
					return invalidUTF8, nil
				}
				if seen[k] {
					return duplicatedKey, nil
				}
				seen[k] = true
				if p, err := walk(); p != noProblem || err != nil {
					return p, err
				}
				path = path[:len(path)-1]
			}
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				path = append(path, "["+strconv.Itoa(i)+"]")
				if p, err := walk(); p != noProblem || err != nil {
					return p, err
				}
				path = path[:len(path)-1]
			}
		default:
			return noProblem, nil
		}
		_, err = dec.Token() // the closing delimiter
		return noProblem, err
	}
	if p, _ := walk(); p != noProblem {
		return strings.Join(path, ""), p
	}
	return "", noProblem
}

// limitBody caps request bodies at MaxBodyBytes; reading more fails with
// *http.MaxBytesError, answered 413.
func limitBody(c echo.Context) error {
	r := c.Request()
	if r.ContentLength > MaxBodyBytes {
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxBodyBytes))
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes)
	}
	return nil
}

// Bodies checked whole. The operations of wholeBodyOps check their body
// as the config file is checked: every problem at once. When the
// document's schema refuses such a body, guard does not answer at once
// but keeps the refusal (ctxBodyProblem) and calls the handler, whose
// decodeBody returns it in any case (the handler never acts on it) and
// whose checkedBody joins the handler's own checks to it: one answer
// names the schema's problems and the definition's.

// maxFillDepth is how deep fillWhatDecodes looks for the members that
// decode: a definition's fields (retention.ttl) and their options.
const maxFillDepth = 3

// fillWhatDecodes decodes into v every member of the JSON object raw
// that decodes, each alone where the whole does not, down to depth levels
// of objects: encoding/json stops at a value whose UnmarshalJSON fails (a
// duration the schema refused too), which would leave the members after
// it empty and their checks unmade, so that the answer would not name
// every problem. wrap puts a member back at its place in the body, so that
// each lands in its field of v (a struct or a map decoded into keeps what
// it holds).
func fillWhatDecodes(v any, raw []byte, wrap func([]byte) []byte, depth int) {
	if json.Unmarshal(wrap(raw), v) == nil {
		return
	}
	var members map[string]json.RawMessage
	if depth == 0 || json.Unmarshal(raw, &members) != nil {
		return
	}
	for k, m := range members {
		key, _ := json.Marshal(k)
		fillWhatDecodes(v, m, func(b []byte) []byte {
			return wrap(slices.Concat([]byte("{"), key, []byte(":"), b, []byte("}")))
		}, depth-1)
	}
}

// ctxBodyProblem holds the schema's refusal of a body checked whole.
const ctxBodyProblem = "body.problem"

// wholeBodyOps are the operations whose handler reads its body with
// checkedBody (or decodeDefinition).
var wholeBodyOps = map[string]bool{
	"createConnection": true,
	"putConnection":    true,
	"createAdapter":    true,
	"putAdapter":       true,
	"createToken":      true,
}

// checkedBody decodes a required body into v and runs check on it, the
// handler's own checks of the decoded value: the problems of the
// schema (ctxBodyProblem) and those of check, joined, nil for none.
// A body that does not decode is refused alone.
func checkedBody(c echo.Context, v any, check func() error) error {
	err := decodeBody(c, v, true)
	if err != nil && err != c.Get(ctxBodyProblem) {
		return err
	}
	return joinViolations(err, check())
}

// joinViolations joins the problems of first and more (each a single
// problem or an errors.Join of them), but for a problem of more whose
// field one of first names already (body.name and name are one field):
// the schema and a definition's check may both refuse one value.
func joinViolations(first, more error) error {
	named := map[string]bool{}
	var all []error
	for _, e := range problems(first) {
		named[sameField(ProblemFor(e).Field)] = true
		all = append(all, e)
	}
	for _, e := range problems(more) {
		if f := sameField(ProblemFor(e).Field); f != "" && named[f] {
			continue
		}
		all = append(all, e)
	}
	return errors.Join(all...)
}

// sameField spells a field as a definition's checks do, so that one
// refused by the schema and by a check compares equal: without "body."
// (array elements are in brackets in both, body.datasets[1]).
func sameField(f string) string {
	return strings.TrimPrefix(f, "body.")
}

// problems returns the problems err joins, err alone when it joins
// none, nothing for nil.
func problems(err error) []error {
	if err == nil {
		return nil
	}
	if ps := violationsOf(err); ps != nil {
		return ps
	}
	return []error{err}
}

// decodeDefinition decodes the body of a POST or PUT of a named definition
// (a connection, an adapter; what names it in errors) into v, whose name
// field is *name, and checks it with check once named. A PUT takes the
// name from the path and refuses another one in the body; a POST needs
// the name in the body. Every problem is reported at once (checkedBody).
func decodeDefinition(c echo.Context, v any, name *string, what string, check func() error) error {
	return checkedBody(c, v, func() error {
		var nameErr error
		if c.Request().Method == http.MethodPut {
			path, err := pathParam(c, "name")
			if err != nil {
				return err
			}
			if *name != "" && *name != path {
				nameErr = BadField("body.name", "%q differs from the name in the path, %q", *name, path)
			}
			*name = path
		} else if *name == "" {
			nameErr = BadField("body.name", "%s needs a name", what)
		}
		return joinViolations(nameErr, check())
	})
}
