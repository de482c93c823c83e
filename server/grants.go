package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

// Grants limit a token to datasets by name patterns, as MySQL's GRANT ...
// ON db.* and Polaris' privileges per namespace do: the token's role
// applies within the datasets whose names match one of its patterns. A
// dataset outside the grant answers exactly as one that does not exist,
// so that a limited token cannot tell whether it does. Each operation of
// openapi.yaml says how its grant is checked (grantExtension); the check
// runs once, in the middleware (checkGrant), and lists filter with
// allowDataset.

// grantExtension is the operation extension saying how a token's grant
// applies to it (grantKind).
const grantExtension = "x-snapstore-grant"

// grantKind is how an operation checks a limited token's grant.
type grantKind int

const (
	// grantNone: grants do not apply (health, the document, calls
	// between the nodes of a cluster).
	grantNone grantKind = iota
	// grantAll: the operation needs a token for every dataset (global
	// administration: connections' definitions, adapters' definitions,
	// tokens, secrets, the cluster, the audit trail, metrics).
	grantAll
	// grantList: a list showing only what the grant holds.
	grantList
	// grantDataset: the {dataset} path parameter must be in the grant.
	grantDataset
	// grantAdapter: the dataset of the {name} adapter must be.
	grantAdapter
	// grantRun: the dataset of the {id} run must be.
	grantRun
	// grantConnection: an adapter in the grant must use the {name}
	// connection.
	grantConnection
)

// parseGrantKind parses the value of grantExtension.
func parseGrantKind(s string) (grantKind, error) {
	switch s {
	case "none":
		return grantNone, nil
	case "all":
		return grantAll, nil
	case "list":
		return grantList, nil
	case "dataset":
		return grantDataset, nil
	case "adapter":
		return grantAdapter, nil
	case "run":
		return grantRun, nil
	case "connection":
		return grantConnection, nil
	}
	return grantNone, fmt.Errorf("unknown %s %q (want none, all, list, dataset, adapter, run or connection)", grantExtension, s)
}

// Grant is the datasets a token may reach: the names matching one of its
// patterns (path.Match: "*" any run of characters, "?" one, "[a-z]" a
// class, "\\" quotes). The zero Grant holds every dataset.
type Grant struct {
	patterns []string // nil: every dataset
}

// ParseGrant checks patterns and returns their grant; nil or empty
// patterns give the grant of every dataset. The error names the index of
// the first pattern that is not valid.
func ParseGrant(patterns []string) (Grant, error) {
	if len(patterns) == 0 {
		return Grant{}, nil
	}
	for i, p := range patterns {
		if err := CheckDatasetPattern(p); err != nil {
			return Grant{}, fmt.Errorf("datasets[%d]: %w", i, err)
		}
	}
	return Grant{patterns: append([]string(nil), patterns...)}, nil
}

// CheckDatasetPattern refuses an empty pattern, one with a '/' and one
// path.Match cannot read.
func CheckDatasetPattern(p string) error {
	if p == "" {
		return errors.New("empty pattern")
	}
	if strings.Contains(p, "/") {
		return fmt.Errorf("pattern %q has a '/', which no dataset name has", p)
	}
	// path.Match reads the whole pattern when the name does not match, so
	// matching the empty name finds every syntax error.
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("pattern %q: %w (want a glob: * ? [a-z] \\)", p, err)
	}
	return nil
}

// All reports whether the grant holds every dataset.
func (g Grant) All() bool { return g.patterns == nil }

// Patterns returns the grant's patterns, nil for every dataset.
func (g Grant) Patterns() []string { return append([]string(nil), g.patterns...) }

// Allows reports whether the dataset name is in the grant.
func (g Grant) Allows(dataset string) bool {
	if g.patterns == nil {
		return true
	}
	for _, p := range g.patterns {
		if ok, _ := path.Match(p, dataset); ok {
			return true
		}
	}
	return false
}

// grantContextKey is the echo context key of the request's grant.
const grantContextKey = "grant"

// setGrant records the grant of the token that asked (authorize).
func setGrant(c echo.Context, g Grant) { c.Set(grantContextKey, g) }

// grantOf returns the grant of the request: every dataset when no token
// was checked (a server without tokens, an operation of role none).
func grantOf(c echo.Context) Grant {
	g, _ := c.Get(grantContextKey).(Grant)
	return g
}

// allowDataset reports whether the request's token may reach the dataset.
func allowDataset(c echo.Context, dataset string) bool {
	return grantOf(c).Allows(dataset)
}

// FilterGranted keeps the items whose dataset is in the grant g: the rule
// of every list, of the API and of the console.
func FilterGranted[T any](g Grant, items []T, dataset func(T) string) []T {
	if g.All() {
		return items
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		if g.Allows(dataset(it)) {
			out = append(out, it)
		}
	}
	return out
}

// errNeedsAllDatasets refuses a global operation to a limited token.
func errNeedsAllDatasets(c echo.Context) error {
	name, _ := c.Get("token").(string)
	return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("token %q is limited to some datasets; this operation needs a token for every dataset", name))
}

// datasetNotFound is the error of a dataset that does not exist, as the
// store words it (snapshot.DB.Dataset).
func datasetNotFound(name string) error {
	return fmt.Errorf("%w: %q", snapshot.ErrDatasetNotFound, name)
}

// adapterNotFound, runNotFound and ConnectionNotFound are the errors of
// an unknown adapter, run and connection, as adapters words them.
func adapterNotFound(name string) error {
	return fmt.Errorf("%w: %q", adapters.ErrAdapterNotFound, name)
}

func runNotFound(id string) error {
	return fmt.Errorf("%w: %q", adapters.ErrRunNotFound, id)
}

func ConnectionNotFound(name string) error {
	return fmt.Errorf("%w: %q", adapters.ErrConnectionNotFound, name)
}

// checkGrant applies the route's grant kind to a limited token: an
// operation outside the grant answers as if its dataset, adapter, run or
// connection did not exist, and a global one is refused. An adapter, run
// or connection that does not exist is left to the handler.
func (s *Server) checkGrant(c echo.Context, rt *route) error {
	g := grantOf(c)
	if g.All() {
		return nil
	}
	if rt.grant == grantAll {
		return errNeedsAllDatasets(c)
	}
	err := s.grantError(c.Request().Context(), g, rt.grant, func(name string) (string, error) { return pathParam(c, name) })
	if OutsideGrant(err) {
		c.Set(ctxOutsideGrant, true) // a refusal for the audit trail
	}
	return err
}

// outsideGrantError is the error of an operation outside a limited
// token's grant: the not-found error it answers with, and a mark the
// audit trail records it as a refusal by.
type outsideGrantError struct{ err error }

func (e *outsideGrantError) Error() string { return e.err.Error() }
func (e *outsideGrantError) Unwrap() error { return e.err }

// OutsideGrant reports whether err refused an operation outside a limited
// token's grant (answered as not found).
func OutsideGrant(err error) bool {
	var og *outsideGrantError
	return errors.As(err, &og)
}

// grantError returns the error of an operation of kind outside the grant
// g, nil when it is inside (or is global: the caller refuses those);
// param returns a path parameter, "" when the route has none of that name.
// The API and the console share it.
func (s *Server) grantError(ctx context.Context, g Grant, kind grantKind, param func(string) (string, error)) error {
	if g.All() {
		return nil
	}
	var pname string
	switch kind {
	case grantDataset:
		pname = "dataset"
	case grantAdapter, grantConnection:
		pname = "name"
	case grantRun:
		pname = "id"
	default:
		return nil
	}
	v, err := param(pname)
	if err != nil || v == "" {
		return err
	}
	switch kind {
	case grantDataset:
		if !g.Allows(v) {
			return &outsideGrantError{datasetNotFound(v)}
		}
	case grantAdapter:
		if !s.adapterGranted(ctx, g, v) {
			return &outsideGrantError{adapterNotFound(v)}
		}
	case grantRun:
		if run, err := s.svc.GetRun(ctx, v); err == nil && !g.Allows(run.Dataset) {
			return &outsideGrantError{runNotFound(v)}
		}
	case grantConnection:
		if !s.ConnectionGranted(g, v) {
			return &outsideGrantError{ConnectionNotFound(v)}
		}
	}
	return nil
}

// CheckGrant is grantError for a page that mirrors op: the error of a
// request outside the grant g, nil inside; param returns a path
// parameter of the request. A global operation is the caller's to refuse
// (Operation.Global).
func (s *Server) CheckGrant(ctx context.Context, g Grant, op Operation, param func(string) (string, error)) error {
	return s.grantError(ctx, g, op.grant, param)
}

// adapterGranted reports whether the adapter of name is in the grant, or
// does not exist (then the handler answers that).
func (s *Server) adapterGranted(ctx context.Context, g Grant, name string) bool {
	a, err := s.svc.GetAdapter(ctx, name)
	return err != nil || g.Allows(AdapterDataset(a))
}

// ConnectionGranted reports whether an adapter in the grant uses the
// connection of name: an operator limited to some datasets sees and tests
// only the connections of their adapters.
func (s *Server) ConnectionGranted(g Grant, name string) bool {
	if g.All() {
		return true
	}
	for _, a := range s.svc.ListAdapters() {
		if a.Connection == name && g.Allows(AdapterDataset(a)) {
			return true
		}
	}
	return false
}

// AdapterDataset is the dataset an adapter writes: its name when it
// names none.
func AdapterDataset(a adapters.Adapter) string {
	if a.Dataset == "" {
		return a.Name
	}
	return a.Dataset
}

// ConnectionsInGrant keeps the connections an adapter in the grant g
// uses, each naming only the adapters in g among those that use it.
func (s *Server) ConnectionsInGrant(g Grant, conns []adapters.Connection) []adapters.Connection {
	if g.All() {
		return conns
	}
	inGrant := map[string]bool{}
	for _, a := range s.svc.ListAdapters() {
		if g.Allows(AdapterDataset(a)) {
			inGrant[a.Name] = true
		}
	}
	out := make([]adapters.Connection, 0, len(conns))
	for _, conn := range conns {
		var names []string
		for _, a := range conn.Adapters {
			if inGrant[a] {
				names = append(names, a)
			}
		}
		if !s.ConnectionGranted(g, conn.Name) {
			continue
		}
		conn.Adapters = names
		out = append(out, conn)
	}
	return out
}

// ConnectionInGrant is ConnectionsInGrant of one connection the grant g
// holds (the caller checked it): the adapters it names are those in g.
func (s *Server) ConnectionInGrant(g Grant, conn adapters.Connection) adapters.Connection {
	if out := s.ConnectionsInGrant(g, []adapters.Connection{conn}); len(out) == 1 {
		return out[0]
	}
	conn.Adapters = nil
	return conn
}
