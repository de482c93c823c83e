package source

import (
	"encoding/json"
	"strings"
)

// Resource is a table or view reachable through a connection.
type Resource struct {
	Schema string `json:"schema,omitempty"`
	Name   string `json:"name"`
	Type   string `json:"type"` // "table" or "view"
	// EstimatedRows is the source's estimate of the rows, UnknownRows
	// when it has none (a PostgreSQL table never analyzed, a view); on
	// the wire estimated_rows is then null.
	EstimatedRows int64 `json:"estimated_rows"`
	// Key is the row key a run would choose without key_columns (the
	// primary key, else a unique key over NOT NULL columns); empty when
	// there is none (a view, a table without such a key).
	Key []string `json:"key,omitempty"`
}

// UnknownRows is Resource.EstimatedRows when the source has no estimate.
const UnknownRows = -1

// MarshalJSON writes an unknown estimate as null.
func (r Resource) MarshalJSON() ([]byte, error) {
	type plain Resource
	var est *int64
	if r.EstimatedRows >= 0 {
		est = &r.EstimatedRows
	}
	return json.Marshal(struct {
		plain
		EstimatedRows *int64 `json:"estimated_rows"`
	}{plain(r), est})
}

// UnmarshalJSON reads a null estimate as UnknownRows.
func (r *Resource) UnmarshalJSON(b []byte) error {
	type plain Resource
	v := struct {
		*plain
		EstimatedRows *int64 `json:"estimated_rows"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.EstimatedRows = UnknownRows
	if v.EstimatedRows != nil {
		r.EstimatedRows = *v.EstimatedRows
	}
	return nil
}

// ResourceCandidates returns the (schema, table) pairs a resource may mean,
// in the order they are tried: quoted parts exactly, when the text has
// them; then the whole text as a table of the default schema, then each
// split at a dot, left to right (so a name holding the quote character is
// found as resources list it).
func ResourceCandidates(resource, defaultSchema string, q byte) [][2]string {
	var out [][2]string
	if strings.IndexByte(resource, q) >= 0 {
		if parts, ok := SplitQuotedName(resource, q); ok {
			if len(parts) == 1 {
				parts = []string{defaultSchema, parts[0]}
			}
			out = append(out, [2]string{parts[0], parts[1]})
		}
	}
	out = append(out, [2]string{defaultSchema, resource})
	for i := 0; i < len(resource); i++ {
		if resource[i] == '.' && i > 0 && i < len(resource)-1 {
			out = append(out, [2]string{resource[:i], resource[i+1:]})
		}
	}
	return out
}

// SplitQuotedName parses a resource written with quoted parts: "`a.b`",
// "`s`.`t`", "s.`t`" (q is the quote character). ok is false when the text
// is not of that form.
func SplitQuotedName(s string, q byte) (parts []string, ok bool) {
	i := 0
	for {
		if i >= len(s) {
			return nil, false
		}
		var part strings.Builder
		if s[i] == q {
			i++
			closed := false
			for i < len(s) {
				if s[i] == q {
					if i+1 < len(s) && s[i+1] == q {
						part.WriteByte(q)
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				part.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, false
			}
		} else {
			for i < len(s) && s[i] != '.' {
				if s[i] == q {
					return nil, false
				}
				part.WriteByte(s[i])
				i++
			}
		}
		if part.Len() == 0 {
			return nil, false
		}
		parts = append(parts, part.String())
		if i == len(s) {
			break
		}
		if s[i] != '.' {
			return nil, false
		}
		i++
	}
	if len(parts) > 2 {
		return nil, false
	}
	return parts, true
}

// IdentQuoter is implemented by a source whose SQL quotes identifiers with
// another character than the standard double quote (MySQL's backtick).
type IdentQuoter interface {
	IdentQuote() byte
}

// QuoteOf is the identifier quote of src: its IdentQuote, else '"'.
func QuoteOf(src any) byte {
	if q, ok := src.(IdentQuoter); ok {
		return q.IdentQuote()
	}
	return '"'
}
