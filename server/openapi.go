package server

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

//go:embed openapi.yaml
var openapiYAML []byte

// roleExtension is the operation extension naming the least role allowed.
const roleExtension = "x-snapstore-role"

// apiDoc is the loaded OpenAPI document and its operations by route.
type apiDoc struct {
	doc  *openapi3.T
	json []byte
	ops  map[string]apiOp // "GET /v1/datasets/{dataset}"
}

// apiOp is one documented operation.
type apiOp struct {
	method string
	path   string // OpenAPI path template
	item   *openapi3.PathItem
	op     *openapi3.Operation
	role   Role
	quick  *quickCheck // nil: every request goes to kin-openapi (validate.go)
	// query holds the documented query parameter names (checkQuery).
	query map[string]bool
}

// OpenAPIDocument returns the embedded OpenAPI 3 document as JSON, as served
// at /openapi.json.
func OpenAPIDocument() ([]byte, error) {
	d, err := loadAPIDoc()
	if err != nil {
		return nil, err
	}
	return d.json, nil
}

func loadAPIDoc() (*apiDoc, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapiYAML)
	if err != nil {
		return nil, fmt.Errorf("server: loading openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("server: validating openapi.yaml: %w", err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("server: encoding the OpenAPI document: %w", err)
	}
	d := &apiDoc{doc: doc, json: js, ops: map[string]apiOp{}}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			raw, ok := op.Extensions[roleExtension]
			if !ok {
				return nil, fmt.Errorf("server: openapi.yaml: %s %s has no %s", method, path, roleExtension)
			}
			s, _ := raw.(string)
			role := RoleNone
			if s != "none" {
				if role, err = ParseRole(s); err != nil {
					return nil, fmt.Errorf("server: openapi.yaml: %s %s: %w", method, path, err)
				}
			}
			ao := apiOp{method: method, path: path, item: item, op: op, role: role, query: queryNames(item, op)}
			if !doc.IsOpenAPI31OrLater() {
				ao.quick = compileQuickCheck(item, op)
			}
			d.ops[method+" "+path] = ao
		}
	}
	return d, nil
}

var echoParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// openapiPath turns an echo route path into its OpenAPI template:
// ":dataset" becomes "{dataset}" and the trailing "*" of the composite row
// key route becomes "{key}".
func openapiPath(echoPath string) string {
	p := echoParam.ReplaceAllString(echoPath, "{$1}")
	if strings.HasSuffix(p, "/*") {
		p = strings.TrimSuffix(p, "*") + "{key}"
	}
	return p
}

// validate checks req against op's parameters and request body schema. It
// returns a *fieldError naming the parameter or body field.
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
		case re.Parameter != nil:
			return &fieldError{field: re.Parameter.Name, msg: requestErrorText(re)}
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
				if ptr := se.JSONPointer(); len(ptr) > 0 {
					field += "." + strings.Join(ptr, ".")
				}
				if m := unsupportedProperty.FindStringSubmatch(se.Reason); m != nil {
					field += "." + m[1]
				}
				return &fieldError{field: field, msg: se.Reason}
			}
			return &fieldError{field: field, msg: requestErrorText(re)}
		}
	}
	return &fieldError{msg: err.Error()}
}

var unsupportedProperty = regexp.MustCompile(`property "([^"]+)" is unsupported`)

func requestErrorText(re *openapi3filter.RequestError) string {
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		return se.Reason
	}
	if re.Err != nil {
		msg := re.Err.Error()
		if re.Reason != "" {
			msg = re.Reason + ": " + msg
		}
		return msg
	}
	return re.Reason
}
