package server

import (
	"log/slog"
	"reflect"
	"sort"
	"testing"

	"github.com/snapstore/snapstore/adapters"
)

// routesOnly builds the echo routes without the layers below.
func routesOnly(t testing.TB) *Server {
	t.Helper()
	api, err := loadAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{api: api, log: slog.New(slog.DiscardHandler)}
	s.tokens, _ = newTokenSet(nil)
	s.echo = s.newEcho()
	return s
}

// TestOpenAPI_RoutesMatchDocument checks that every registered route is
// documented and every documented operation is registered.
func TestOpenAPI_RoutesMatchDocument(t *testing.T) {
	s := routesOnly(t)
	registered := map[string]bool{}
	for _, r := range s.routes() {
		registered[r] = true
		if _, ok := s.api.ops[r]; !ok {
			t.Errorf("route %s is registered but not in openapi.yaml", r)
		}
	}
	var documented []string
	for k := range s.api.ops {
		documented = append(documented, k)
		if !registered[k] {
			t.Errorf("operation %s is in openapi.yaml but not registered", k)
		}
	}
	sort.Strings(documented)
	if len(documented) < 30 {
		t.Errorf("only %d operations documented: %v", len(documented), documented)
	}
}

func TestOpenAPI_EveryOperationHasIDAndProblemResponse(t *testing.T) {
	api, err := loadAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for k, op := range api.ops {
		if op.op.OperationID == "" || ids[op.op.OperationID] {
			t.Errorf("%s: missing or duplicate operationId %q", k, op.op.OperationID)
		}
		ids[op.op.OperationID] = true
		if op.role != RoleNone && op.op.Responses.Default() == nil {
			t.Errorf("%s: no default (problem) response", k)
		}
	}
}

func TestOpenapiPath(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/datasets/:dataset/rows/*":            "/v1/datasets/{dataset}/rows/{key}",
		"/v1/datasets/:dataset/versions/:version": "/v1/datasets/{dataset}/versions/{version}",
		"/healthz": "/healthz",
	} {
		if got := openapiPath(in); got != want {
			t.Errorf("openapiPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenAPI_EveryOperationTagged checks that every operation has one
// tag the document declares, so that Swagger UI groups every path.
func TestOpenAPI_EveryOperationTagged(t *testing.T) {
	api, err := loadAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, tag := range api.doc.Tags {
		declared[tag.Name] = true
	}
	used := map[string]bool{}
	for k, op := range api.ops {
		if len(op.op.Tags) != 1 || !declared[op.op.Tags[0]] {
			t.Errorf("%s: tags %v, want one of the document's tags", k, op.op.Tags)
			continue
		}
		used[op.op.Tags[0]] = true
	}
	for name := range declared {
		if !used[name] {
			t.Errorf("tag %s is declared but no operation has it", name)
		}
	}
}

// TestOpenAPI_ConnectionTypesRegistered checks that ConnectionSpec's type
// takes exactly the connection types the binary registers
// (connectionTypeEnum), so that a type added under adapters/ is not
// refused by the document.
func TestOpenAPI_ConnectionTypesRegistered(t *testing.T) {
	api, err := loadAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for _, ct := range adapters.ConnectionTypes() {
		want = append(want, ct.Name)
	}
	if len(want) < 4 {
		t.Fatalf("only %d connection types registered: %v", len(want), want)
	}
	got := api.doc.Components.Schemas["ConnectionSpec"].Value.Properties["type"].Value.Enum
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ConnectionSpec.type enum = %v, want the registered types %v", got, want)
	}
}
