package source

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

// TableSelection names the tables one adapter reads: a list of resources,
// glob patterns, or both.
//
// A pattern follows path.Match. A pattern holding a dot is matched against
// "schema.table"; a pattern without a dot against the table name alone,
// in every schema the connection lists ("audit_*" excludes audit tables of
// every schema, "public.*" includes every table of schema public).
// Patterns select tables only; a view is read when a resource names it.
type TableSelection struct {
	// Resources are tables or views by name, as TableRequest.Resource
	// takes them ("orders", "shop.orders", quoted parts).
	Resources []string
	// Include selects the tables matching any of its patterns. Empty with
	// Resources empty: every table.
	Include []string
	// Exclude drops the tables matching any of its patterns from what
	// Include selects; a resource named in Resources that it matches is an
	// error.
	Exclude []string
}

// Catalog is what a selection is resolved against: the resources a
// connection lists (ResourceLister), the schema of a name without one,
// and the quote character of identifiers ('`' for MySQL, '"' otherwise).
type Catalog struct {
	Resources     []Resource
	DefaultSchema string
	Quote         byte
}

// ErrBadSelection is wrapped by the errors of a selection that cannot be
// resolved whatever the catalog: a bad pattern, a resource both named and
// excluded, a selection of nothing.
var ErrBadSelection = errors.New("adapters: bad table selection")

// selectsNothingError is the error of a selection whose include patterns
// match only excluded tables: ErrBadSelection, and ErrResourceNotFound
// too, since what the patterns match is the catalog's doing: the tables
// left beside the excluded ones may have been dropped since the adapter
// was saved, which a run reports as resource_not_found, as it does a
// named table gone.
type selectsNothingError struct{ msg string }

func (e *selectsNothingError) Error() string   { return ErrBadSelection.Error() + ": " + e.msg }
func (e *selectsNothingError) Unwrap() []error { return []error{ErrBadSelection, ErrResourceNotFound} }

// ErrIncludeMatchesNothing is wrapped by the error of a selection that
// names no resource and whose include patterns match no table of the
// catalog (a typo in the pattern, or a source without those tables yet).
// It is an ErrResourceNotFound whose input to blame is include.
var ErrIncludeMatchesNothing = fmt.Errorf("%w: no table matches include", ErrResourceNotFound)

// ResourceError is the error of one resource a selection names,
// Resources[Index]: one the catalog does not list (ErrResourceNotFound),
// or lists in several schemas (ErrBadSelection). Its text is Err's.
type ResourceError struct {
	Index int
	Err   error
}

func (e *ResourceError) Error() string { return e.Err.Error() }
func (e *ResourceError) Unwrap() error { return e.Err }

// SelectTables resolves sel against cat: the selected resources ordered
// by schema then name, each once. A named resource that the catalog does
// not list is ErrResourceNotFound naming it; a name that two schemas hold
// and the default schema does not is ambiguous (ErrBadSelection); both
// are a *ResourceError telling which resource; include
// patterns none of which matches a table, with no resource named, are
// ErrIncludeMatchesNothing naming them (one pattern of several that
// matches nothing is not an error: Unmatched tells); patterns that match
// only excluded tables are ErrBadSelection and ErrResourceNotFound. A bad pattern is
// ErrBadSelection and path.ErrBadPattern, naming the list and position.
func SelectTables(sel TableSelection, cat Catalog) ([]Resource, error) {
	if err := sel.Validate(); err != nil {
		return nil, err
	}
	picked := map[[2]string]Resource{}
	schemaOf := func(r Resource) string {
		if r.Schema == "" {
			return cat.DefaultSchema
		}
		return r.Schema
	}
	for i, name := range sel.Resources {
		r, err := lookupResource(name, cat, schemaOf)
		if err != nil {
			return nil, &ResourceError{Index: i, Err: err}
		}
		for i, p := range sel.Exclude {
			if matchTable(p, schemaOf(r), r.Name) {
				return nil, fmt.Errorf("%w: resource %q is named and excluded by exclude[%d] %q", ErrBadSelection, name, i, p)
			}
		}
		picked[[2]string{schemaOf(r), r.Name}] = r
	}
	include := sel.Include
	// Neither resources nor include: every table, whatever its name ("*"
	// would leave out a name holding a '/', which path.Match's '*' does
	// not cross).
	every := len(sel.Resources) == 0 && len(include) == 0
	if every {
		include = []string{"*"}
	}
	if len(include) > 0 {
		matched := false
		for _, r := range cat.Resources {
			if r.Type != "table" {
				continue
			}
			s := schemaOf(r)
			if !every && !slices.ContainsFunc(include, func(p string) bool { return matchTable(p, s, r.Name) }) {
				continue
			}
			matched = true
			if slices.ContainsFunc(sel.Exclude, func(p string) bool { return matchTable(p, s, r.Name) }) {
				continue
			}
			picked[[2]string{s, r.Name}] = r
		}
		if !matched && len(sel.Resources) == 0 {
			return nil, fmt.Errorf("%w %q", ErrIncludeMatchesNothing, include)
		}
	}
	if len(picked) == 0 {
		return nil, &selectsNothingError{fmt.Sprintf("every table include %q matches is excluded by %q", include, sel.Exclude)}
	}
	out := make([]Resource, 0, len(picked))
	for _, r := range picked {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Resource) int {
		return cmp.Or(cmp.Compare(schemaOf(a), schemaOf(b)), cmp.Compare(a.Name, b.Name))
	})
	// A table's name in the dataset is "schema.table" (the name alone
	// without a schema): a dot inside a schema or table name can make two
	// tables one name, which no version could hold.
	named := map[string]Resource{}
	for _, r := range out {
		n := r.Name
		if r.Schema != "" {
			n = r.Schema + "." + r.Name
		}
		if p := snapshot.TableNameProblem(n); p != "" {
			return nil, fmt.Errorf("%w: table %q cannot be a table of the dataset: its name %s; exclude it, or snapshot it with an adapter of its own (resource)",
				ErrBadSelection, n, p)
		}
		if o, ok := named[n]; ok {
			return nil, fmt.Errorf("%w: tables %s and %s would both be %q in the dataset; select one of them by its quoted name in resources",
				ErrBadSelection, quotedName(o, cat.Quote), quotedName(r, cat.Quote), n)
		}
		named[n] = r
	}
	return out, nil
}

// Unmatched lists the include patterns of sel that match no table of cat,
// each as `include[i] "pattern"`, in order; nil when each matches one.
// A pattern matches a table it would select before exclude drops it, as
// in SelectTables. When another pattern matches, SelectTables passes over
// such a pattern, which is most often a typo, so callers report it.
func (sel TableSelection) Unmatched(cat Catalog) []string {
	var out []string
	for i, p := range sel.Include {
		hit := slices.ContainsFunc(cat.Resources, func(r Resource) bool {
			s := r.Schema
			if s == "" {
				s = cat.DefaultSchema
			}
			return r.Type == "table" && matchTable(p, s, r.Name)
		})
		if !hit {
			out = append(out, fmt.Sprintf("include[%d] %q", i, p))
		}
	}
	return out
}

// quotedName is r as a resource names it, each part quoted with q.
func quotedName(r Resource, q byte) string {
	quote := func(s string) string {
		qs := string(q)
		return qs + strings.ReplaceAll(s, qs, qs+qs) + qs
	}
	if r.Schema == "" {
		return quote(r.Name)
	}
	return quote(r.Schema) + "." + quote(r.Name)
}

// Validate checks what does not depend on the catalog: every pattern is a
// valid path.Match pattern, no resource is empty.
func (sel TableSelection) Validate() error {
	for i, r := range sel.Resources {
		if strings.TrimSpace(r) == "" {
			return fmt.Errorf("%w: resources[%d] is empty", ErrBadSelection, i)
		}
	}
	for _, l := range []struct {
		field string
		pats  []string
	}{{"include", sel.Include}, {"exclude", sel.Exclude}} {
		for i, p := range l.pats {
			if p == "" {
				return fmt.Errorf("%w: %s[%d] is empty", ErrBadSelection, l.field, i)
			}
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("%w: %s[%d] %q is not a valid pattern: %w", ErrBadSelection, l.field, i, p, err)
			}
		}
	}
	return nil
}

// matchTable reports whether pattern p matches table name of schema:
// name alone when p holds no dot; else p is "schema pattern.table
// pattern", split at one of its dots such that each part matches its
// name. Matching the text "schema.name" as a whole would let a dot in a
// schema's name reach across: "public.*" would select the tables of a
// schema "public.archive" too.
func matchTable(p, schema, name string) bool {
	if strings.IndexByte(p, '.') < 0 {
		ok, _ := path.Match(p, name) // patterns are checked by Validate
		return ok
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '.' {
			continue
		}
		// A split inside a bracket expression or after a backslash is no
		// valid pattern on one side: no match there.
		if ok, err := path.Match(p[:i], schema); err != nil || !ok {
			continue
		}
		if ok, err := path.Match(p[i+1:], name); err == nil && ok {
			return true
		}
	}
	return false
}

// lookupResource finds a named resource in the catalog, trying the
// schema and table pairs ResourceCandidates gives, in order, and last the
// name as a table of any schema. A pair without a schema (that last one,
// or the catalog has no default schema: a MySQL connection without a
// database) matches the table in any schema, when only one holds it.
func lookupResource(name string, cat Catalog, schemaOf func(Resource) string) (Resource, error) {
	cands := ResourceCandidates(name, cat.DefaultSchema, cat.Quote)
	if cat.DefaultSchema != "" {
		cands = append(cands, [2]string{"", name})
	}
	for _, cand := range cands {
		var hits []Resource
		for _, r := range cat.Resources {
			if r.Name == cand[1] && (cand[0] == "" || schemaOf(r) == cand[0]) {
				hits = append(hits, r)
			}
		}
		switch len(hits) {
		case 0:
			continue
		case 1:
			return hits[0], nil
		}
		var in []string
		for _, r := range hits {
			in = append(in, schemaOf(r))
		}
		return Resource{}, fmt.Errorf("%w: resource %q is in schemas %s; name one as schema.table", ErrBadSelection, name, strings.Join(in, ", "))
	}
	return Resource{}, fmt.Errorf("%w: %q", ErrResourceNotFound, name)
}
