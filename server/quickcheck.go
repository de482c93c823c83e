package server

import (
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
)

// quickCheck is the compiled parameter check of one operation; nil when
// every request of the operation goes to kin-openapi.
type quickCheck struct {
	path  []quickParam
	query []quickParam
}

// quickParam is one parameter of a plain schema.
type quickParam struct {
	name     string
	required bool
	kind     quickKind
	array    bool    // form-exploded array of kind items (query only)
	min, max float64 // integer bounds (NaN: none)
	minLen   int     // string length bounds in runes (maxLen -1: none)
	maxLen   int
	dateTime bool     // string format date-time
	enum     []string // the values a string may take (none: any)
}

type quickKind int

const (
	quickString quickKind = iota
	quickInteger
	quickBoolean
)

// compileQuickCheck returns the quick check of op, or nil when op has
// anything R2 (validate.go) sends to kin-openapi.
func compileQuickCheck(item *openapi3.PathItem, op *openapi3.Operation) *quickCheck {
	if op.RequestBody != nil {
		return nil
	}
	var params []*openapi3.Parameter
	for _, ref := range item.Parameters {
		p := ref.Value
		if op.Parameters != nil && op.Parameters.GetByInAndName(p.In, p.Name) != nil {
			continue // overridden by the operation
		}
		params = append(params, p)
	}
	for _, ref := range op.Parameters {
		params = append(params, ref.Value)
	}
	qc := &quickCheck{}
	for _, p := range params {
		qp, ok := compileQuickParam(p)
		if !ok {
			return nil
		}
		switch p.In {
		case openapi3.ParameterInPath:
			if qp.array {
				return nil
			}
			qc.path = append(qc.path, qp)
		case openapi3.ParameterInQuery:
			qc.query = append(qc.query, qp)
		default:
			return nil
		}
	}
	return qc
}

func compileQuickParam(p *openapi3.Parameter) (quickParam, bool) {
	if p == nil || p.Content != nil || p.Schema == nil || p.Schema.Value == nil || p.AllowEmptyValue {
		return quickParam{}, false
	}
	switch p.In {
	case openapi3.ParameterInPath:
		if p.Style != "" && p.Style != openapi3.SerializationSimple || p.Explode != nil && *p.Explode {
			return quickParam{}, false
		}
	case openapi3.ParameterInQuery:
		if p.Style != "" && p.Style != openapi3.SerializationForm || p.Explode != nil && !*p.Explode {
			return quickParam{}, false
		}
	default:
		return quickParam{}, false
	}
	qp := quickParam{name: p.Name, required: p.Required}
	s := p.Schema.Value
	if s.Type.Is(openapi3.TypeArray) {
		if p.In != openapi3.ParameterInQuery || !plainSchema(s) || s.MinItems != 0 || s.MaxItems != nil || s.UniqueItems ||
			s.Items == nil || s.Items.Value == nil {
			return quickParam{}, false
		}
		qp.array = true
		s = s.Items.Value
	}
	if len(s.Enum) > 0 && s.Type.Is(openapi3.TypeString) {
		// A string enum (format=arrow): the quick check compares the
		// value with each; any other enum goes to kin-openapi.
		for _, e := range s.Enum {
			v, ok := e.(string)
			if !ok {
				return quickParam{}, false
			}
			qp.enum = append(qp.enum, v)
		}
		plain := *s
		plain.Enum = nil
		s = &plain
	}
	if !plainSchema(s) {
		return quickParam{}, false
	}
	qp.min, qp.max, qp.maxLen = math.NaN(), math.NaN(), -1
	switch {
	case s.Type.Is(openapi3.TypeString):
		if s.Format != "" && s.Format != "date-time" || s.Pattern != "" || s.Min != nil || s.Max != nil {
			return quickParam{}, false
		}
		qp.kind = quickString
		qp.dateTime = s.Format == "date-time"
		qp.minLen = int(s.MinLength)
		if s.MaxLength != nil {
			qp.maxLen = int(*s.MaxLength)
		}
	case s.Type.Is(openapi3.TypeInteger):
		if s.Format != "" && s.Format != "int64" || s.MinLength != 0 || s.MaxLength != nil || s.Pattern != "" {
			return quickParam{}, false
		}
		qp.kind = quickInteger
		if s.Min != nil {
			qp.min = *s.Min
		}
		if s.Max != nil {
			qp.max = *s.Max
		}
	case s.Type.Is(openapi3.TypeBoolean):
		if s.Format != "" || s.Min != nil || s.Max != nil || s.MinLength != 0 || s.MaxLength != nil || s.Pattern != "" {
			return quickParam{}, false
		}
		qp.kind = quickBoolean
	default:
		return quickParam{}, false
	}
	if qp.array && qp.kind != quickString {
		return quickParam{}, false
	}
	if qp.array && (qp.maxLen >= 0 || qp.dateTime) {
		return quickParam{}, false
	}
	return qp, true
}

// plainSchema reports whether s has one type and none of the keywords the
// quick check does not evaluate.
func plainSchema(s *openapi3.Schema) bool {
	return s.Type != nil && len(s.Type.Slice()) == 1 &&
		len(s.Enum) == 0 && s.Const == nil && s.Default == nil &&
		len(s.OneOf) == 0 && len(s.AnyOf) == 0 && len(s.AllOf) == 0 && s.Not == nil &&
		s.MultipleOf == nil && !s.ExclusiveMin.IsSet() && !s.ExclusiveMax.IsSet() &&
		!s.Nullable && len(s.Extensions) == 0 && s.Always == nil &&
		s.If == nil && s.Then == nil && s.Else == nil && s.Contains == nil && len(s.PrefixItems) == 0 &&
		s.DynamicRef == ""
}

// pathParams gives the path parameters of the matched route (echo.Context).
type pathParams interface{ Param(name string) string }

// accepts reports whether the request certainly passes validation (R1,
// validate.go).
// query is the parsed query string (nil when there is none).
func (qc *quickCheck) accepts(r *http.Request, pp pathParams, query url.Values) bool {
	if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		return false
	}
	for i := range qc.path {
		p := &qc.path[i]
		v := pp.Param(p.name)
		if p.name == keyParam && v == "" {
			v = pp.Param("*")
		}
		if v == "" || strings.IndexByte(v, '%') >= 0 || !p.acceptsValue(v) {
			return false
		}
	}
	if len(query) == 0 {
		for i := range qc.query {
			if qc.query[i].required {
				return false
			}
		}
		return true
	}
	for i := range qc.query {
		p := &qc.query[i]
		vs, ok := query[p.name]
		if !ok {
			if p.required {
				return false
			}
			continue
		}
		if len(vs) == 0 || !p.array && len(vs) > 1 {
			return false
		}
		for _, v := range vs {
			if v == "" || !p.acceptsValue(v) {
				return false
			}
		}
	}
	return true
}

// kinDateTime is kin-openapi's pattern of format date-time.
var kinDateTime = regexp.MustCompile(openapi3.FormatOfStringDateTime)

// maxExactInt is the largest integer every float64 holds exactly (2^53).
const maxExactInt = 1 << 53

func (p *quickParam) acceptsValue(v string) bool {
	switch p.kind {
	case quickString:
		if !utf8.ValidString(v) {
			return false
		}
		if len(p.enum) > 0 && !slices.Contains(p.enum, v) {
			return false
		}
		if p.minLen > 0 || p.maxLen >= 0 {
			n := utf8.RuneCountInString(v)
			if n < p.minLen || p.maxLen >= 0 && n > p.maxLen {
				return false
			}
		}
		if p.dateTime {
			// kin-openapi's date-time: its pattern, and a day the month
			// has, which time.Parse checks too.
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil || !kinDateTime.MatchString(v) {
				return false
			}
		}
		return true
	case quickInteger:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > maxExactInt || n < -maxExactInt {
			return false
		}
		f := float64(n)
		return !(f < p.min) && !(f > p.max) // NaN bounds compare false
	case quickBoolean:
		_, err := strconv.ParseBool(v)
		return err == nil
	}
	return false
}
