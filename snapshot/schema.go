package snapshot

import "fmt"

// Column is one column of a dataset's schema.
type Column struct {
	// Name is the source column name, case preserved.
	Name string `json:"name"`
	// Kind is how values are stored.
	Kind Kind `json:"kind"`
	// SourceType is the source's declared type, e.g. "decimal(5,2)",
	// informational.
	SourceType string `json:"source_type,omitempty"`
	// Nullable reports whether the source allows NULL.
	Nullable bool `json:"nullable"`
}

// Schema is the ordered column list of one version plus its key columns.
type Schema struct {
	Columns []Column `json:"columns"`
	// Key lists the names of the key columns in key order (a subset of
	// Columns).
	Key []string `json:"key"`
}

// validSchema checks a run's schema: columns with distinct non-empty
// names and known kinds, and key columns that are distinct columns of a
// kind other than null. ErrBadSchema.
func validSchema(s Schema) error {
	if len(s.Columns) == 0 {
		return fmt.Errorf("%w: no columns", ErrBadSchema)
	}
	seen := make(map[string]bool, len(s.Columns))
	for _, c := range s.Columns {
		if c.Name == "" {
			return fmt.Errorf("%w: empty column name", ErrBadSchema)
		}
		if seen[c.Name] {
			return fmt.Errorf("%w: column %q twice", ErrBadSchema, c.Name)
		}
		if c.Kind > lastKind {
			return fmt.Errorf("%w: column %q has unknown kind %d", ErrBadSchema, c.Name, c.Kind)
		}
		seen[c.Name] = true
	}
	if len(s.Key) == 0 {
		return fmt.Errorf("%w: no key columns", ErrBadSchema)
	}
	inKey := map[string]bool{}
	for _, k := range s.Key {
		if !seen[k] {
			return fmt.Errorf("%w: key column %q is not a column", ErrBadSchema, k)
		}
		if inKey[k] {
			return fmt.Errorf("%w: key column %q twice", ErrBadSchema, k)
		}
		inKey[k] = true
	}
	for _, c := range s.Columns {
		if inKey[c.Name] && c.Kind == KindNull {
			return fmt.Errorf("%w: key column %q has kind null", ErrBadSchema, c.Name)
		}
	}
	return nil
}

// columnIndex returns the schema index of the column name, or -1.
func columnIndex(s Schema, name string) int {
	for i, c := range s.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// keyIndexes returns the schema indexes of the key columns, in key order.
func keyIndexes(s Schema) []int {
	idx := make([]int, 0, len(s.Key))
	for _, k := range s.Key {
		idx = append(idx, columnIndex(s, k))
	}
	return idx
}
