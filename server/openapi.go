package server

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
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
	grant  grantKind
	quick  *quickCheck // nil: every request goes to kin-openapi (validate.go)
	// query holds the documented query parameter names, each with whether
	// it may repeat (queryNames, checkQuery).
	query map[string]bool
}

// loadAPIDoc parses and validates the embedded document, encodes the JSON
// served at /openapi.json, and compiles each operation: its role, query
// parameter names and quick check.
func loadAPIDoc() (*apiDoc, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapiYAML)
	if err != nil {
		return nil, fmt.Errorf("server: loading openapi.yaml: %w", err)
	}
	if err := connectionTypeEnum(doc); err != nil {
		return nil, err
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
			switch s {
			case "none":
			case "cluster":
				role = RoleCluster
			default:
				if role, err = ParseRole(s); err != nil {
					return nil, fmt.Errorf("server: openapi.yaml: %s %s: %w", method, path, err)
				}
			}
			rawGrant, _ := op.Extensions[grantExtension].(string)
			grant, err := parseGrantKind(rawGrant)
			if err != nil {
				return nil, fmt.Errorf("server: openapi.yaml: %s %s: %w", method, path, err)
			}
			ao := apiOp{method: method, path: path, item: item, op: op, role: role, grant: grant, query: queryNames(item, op)}
			if !doc.IsOpenAPI31OrLater() {
				ao.quick = compileQuickCheck(item, op)
			}
			d.ops[method+" "+path] = ao
		}
	}
	return d, nil
}

// connectionTypeEnum sets the enum of ConnectionSpec's type to the
// connection types registered in this binary (adapters.ConnectionTypes),
// so that a new type is its folder under adapters/ and its line in
// adapters/install, and the served document lists what the binary
// accepts. With no type registered the enum stays unset and the service
// refuses every type (unknown_connection_type).
func connectionTypeEnum(doc *openapi3.T) error {
	spec := doc.Components.Schemas["ConnectionSpec"]
	if spec == nil || spec.Value == nil || spec.Value.Properties["type"] == nil || spec.Value.Properties["type"].Value == nil {
		return fmt.Errorf("server: openapi.yaml: no ConnectionSpec schema with a type property")
	}
	var enum []any
	for _, ct := range adapters.ConnectionTypes() {
		enum = append(enum, ct.Name)
	}
	if len(enum) > 0 {
		spec.Value.Properties["type"].Value.Enum = enum
	}
	return nil
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

// openapiJSON answers GET /openapi.json: the embedded document.
func (s *Server) openapiJSON(c echo.Context) error {
	return c.JSONBlob(http.StatusOK, s.api.json)
}

// keyParam is the OpenAPI name of the trailing wildcard ("*") of the row
// route (openapiPath).
const keyParam = "key"

// Operation is a documented API operation as a page that mirrors it
// needs it: the least role that may call it and how a limited token's
// grant applies (grants.go). The zero Operation needs no role and no
// grant.
type Operation struct {
	// Role is the operation's x-snapstore-role.
	Role  Role
	grant grantKind
}

// Global reports whether the operation needs a token for every dataset.
func (o Operation) Global() bool { return o.grant == grantAll }

// Operation returns the documented operation op ("GET
// /v1/datasets/{dataset}"), false when openapi.yaml does not document it.
func (s *Server) Operation(op string) (Operation, bool) {
	o, ok := s.api.ops[op]
	if !ok {
		return Operation{}, false
	}
	return Operation{Role: o.role, grant: o.grant}, true
}

// InputPattern is the pattern of the document's schema name for an HTML
// input, and its description (apiDoc.inputPattern).
func (s *Server) InputPattern(name string) (pattern, description string) {
	return s.api.inputPattern(name)
}

// inputPattern is the pattern of the document's schema name as an HTML
// input's pattern attribute (implicitly anchored, so without ^ and $),
// and its description for the input's title: the console's forms check
// what the API checks. "" when it has none.
func (d *apiDoc) inputPattern(name string) (pattern, description string) {
	ref, ok := d.doc.Components.Schemas[name]
	if !ok || ref.Value == nil {
		return "", ""
	}
	// Browsers compile the attribute with the v flag, under which a
	// literal '-' in a class must be escaped (it is valid without v too).
	p := strings.TrimSuffix(strings.TrimPrefix(ref.Value.Pattern, "^"), "$")
	return strings.ReplaceAll(p, "-]", `\-]`), ref.Value.Description
}
