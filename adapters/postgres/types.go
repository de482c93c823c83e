package postgres

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"strconv"

	"github.com/snapstore/snapstore/snapshot"
)

// pgColumn is one source column and how it maps (docs/types.md).
type pgColumn struct {
	name     string
	typeName string // format_type(atttypid, atttypmod): "numeric(5,2)", "mpaa_rating", "text[]"
	nullable bool
	// base is the type after domains are resolved: its schema, name,
	// pg_type typtype ('b' base, 'e' enum, 'r' range, 'm' multirange,
	// 'c' composite) and typcategory ('A' for arrays).
	baseOID                      uint32
	baseSchema, baseName         string
	baseTyptype, baseTypcategory string
	kind                         snapshot.Kind
	// conv is how the text of a value becomes a Value.
	conv pgConv
	// expr is the SELECT expression ("col", or a cast or function of it).
	expr string
	// resultOID is the type of expr in the result (the base type, json for
	// arrays, numeric for money), checked on every chunk.
	resultOID uint32
	buf       []byte // decoded bytea of the current row
}

// pgConv is how a column's text becomes a value.
type pgConv uint8

const (
	pgText        pgConv = iota // the text as it is, of the column's kind
	pgInt                       // a signed integer
	pgUint                      // an unsigned integer (oid)
	pgFloat                     // float4, float8: shortest exact text, NaN, Infinity
	pgBool                      // t/f as 1/0
	pgBytea                     // \x hex to bytes
	pgTimestampTZ               // UTC text without its +00
)

// Type OIDs of pg_catalog that the mapping names (they are fixed in every
// PostgreSQL release).
const (
	pgOIDJSON    = 114
	pgOIDNumeric = 1700
)

// pgCatalogKinds maps the pg_catalog base types to their kind and
// conversion; the table in docs/types.md is the contract and
// postgres_types_test.go checks each row against a real server.
var pgCatalogKinds = map[string]struct {
	kind snapshot.Kind
	conv pgConv
}{
	"int2": {snapshot.KindInt, pgInt}, "int4": {snapshot.KindInt, pgInt}, "int8": {snapshot.KindInt, pgInt},
	"oid":     {snapshot.KindUint, pgUint},
	"numeric": {snapshot.KindDecimal, pgText}, "money": {snapshot.KindDecimal, pgText},
	"float4": {snapshot.KindFloat, pgFloat}, "float8": {snapshot.KindFloat, pgFloat},
	"bool": {snapshot.KindInt, pgBool},
	"text": {snapshot.KindString, pgText}, "varchar": {snapshot.KindString, pgText}, "bpchar": {snapshot.KindString, pgText},
	"name": {snapshot.KindString, pgText}, "char": {snapshot.KindString, pgText},
	"bytea": {snapshot.KindBytes, pgBytea},
	"uuid":  {snapshot.KindString, pgText},
	"date":  {snapshot.KindDate, pgText}, "timestamp": {snapshot.KindDateTime, pgText},
	"timestamptz": {snapshot.KindDateTime, pgTimestampTZ},
	"time":        {snapshot.KindTime, pgText}, "timetz": {snapshot.KindString, pgText},
	"interval": {snapshot.KindString, pgText},
	"json":     {snapshot.KindJSON, pgText}, "jsonb": {snapshot.KindJSON, pgText},
	"xml":  {snapshot.KindString, pgText},
	"inet": {snapshot.KindString, pgText}, "cidr": {snapshot.KindString, pgText},
	"macaddr": {snapshot.KindString, pgText}, "macaddr8": {snapshot.KindString, pgText},
	"bit": {snapshot.KindString, pgText}, "varbit": {snapshot.KindString, pgText},
	"tsvector": {snapshot.KindString, pgText}, "tsquery": {snapshot.KindString, pgText},
	"point": {snapshot.KindString, pgText}, "line": {snapshot.KindString, pgText}, "lseg": {snapshot.KindString, pgText},
	"box": {snapshot.KindString, pgText}, "path": {snapshot.KindString, pgText}, "polygon": {snapshot.KindString, pgText},
	"circle": {snapshot.KindString, pgText},
	"pg_lsn": {snapshot.KindString, pgText},
}

// pgExtensionText are extension types, in any schema, read as their text.
var pgExtensionText = map[string]bool{"hstore": true, "citext": true}

// postgresKind maps a column to its kind, its conversion and its SELECT
// expression. A type it does not know is ErrUnsupportedType naming the
// column and the type, never a silent NULL.
func postgresKind(c *pgColumn) error {
	q := quotePostgresIdent(c.name)
	c.expr, c.resultOID = q, c.baseOID
	switch {
	case c.baseTypcategory == "A":
		// Arrays (any element type, NULL elements, any dimensions) as the
		// server's JSON of them: nested arrays, null for NULL elements.
		c.kind, c.conv = snapshot.KindJSON, pgText
		c.expr, c.resultOID = "to_json("+q+")", pgOIDJSON
		return nil
	case c.baseTyptype == "e", c.baseTyptype == "r", c.baseTyptype == "m", c.baseTyptype == "c":
		// enum label, range and multirange text, composite row text
		c.kind, c.conv = snapshot.KindString, pgText
		return nil
	case c.baseSchema == "pg_catalog":
		if m, ok := pgCatalogKinds[c.baseName]; ok {
			c.kind, c.conv = m.kind, m.conv
			if c.baseName == "money" {
				// money's text follows lc_monetary ("$1,234.50"); numeric's
				// does not.
				c.expr, c.resultOID = q+"::numeric", pgOIDNumeric
			}
			return nil
		}
	case pgExtensionText[c.baseName]:
		c.kind, c.conv = snapshot.KindString, pgText
		return nil
	}
	return fmt.Errorf("%w: column %q has type %s", source.ErrUnsupportedType, c.name, c.typeName)
}

// Convert turns the text of one value, the server's exact text under
// postgresSession, into a Value. b == nil is NULL. Bytes alias b or the
// column's buffer (valid until the next row).
func (c *pgColumn) Convert(b []byte) (snapshot.Value, error) {
	if b == nil {
		return snapshot.Value{}, nil
	}
	switch c.conv {
	case pgInt:
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.typeName, err)
		}
		return snapshot.Value{Kind: snapshot.KindInt, Int: n}, nil
	case pgUint:
		u, err := strconv.ParseUint(string(b), 10, 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.typeName, err)
		}
		return snapshot.Value{Kind: snapshot.KindUint, Uint: u}, nil
	case pgFloat:
		// ParseFloat reads "NaN", "Infinity" and "-Infinity" too.
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.typeName, err)
		}
		return snapshot.Value{Kind: snapshot.KindFloat, Float: f}, nil
	case pgBool:
		switch string(b) {
		case "t":
			return snapshot.Value{Kind: snapshot.KindInt, Int: 1}, nil
		case "f":
			return snapshot.Value{Kind: snapshot.KindInt, Int: 0}, nil
		}
		return snapshot.Value{}, fmt.Errorf("column %q: reading boolean value %q", c.name, b)
	case pgBytea:
		if !bytes.HasPrefix(b, []byte(`\x`)) {
			return snapshot.Value{}, fmt.Errorf("column %q: bytea value not in hex form", c.name)
		}
		n := (len(b) - 2) / 2
		if cap(c.buf) < n || c.buf == nil {
			c.buf = make([]byte, n, max(n, 64)) // never nil: empty is not NULL
		}
		c.buf = c.buf[:n]
		if _, err := hex.Decode(c.buf, b[2:]); err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading bytea value: %w", c.name, err)
		}
		return snapshot.Value{Kind: snapshot.KindBytes, Bytes: c.buf}, nil
	case pgTimestampTZ:
		// Under TimeZone UTC the server writes "+00" after every finite
		// value; infinity and -infinity have none.
		return snapshot.Value{Kind: snapshot.KindDateTime, Bytes: bytes.TrimSuffix(b, []byte("+00"))}, nil
	}
	return snapshot.Value{Kind: c.kind, Bytes: b}, nil
}

// keyPlaceholder is the SQL of the n-th (1-based) cursor value of this key
// column: the value's text, cast back to the column's type so that the
// comparison is the column's own order (collation, enum order).
func (c *pgColumn) keyPlaceholder(n int) string {
	typ := c.typeName
	if c.baseSchema == "pg_catalog" && c.baseName == "money" {
		typ = "numeric::money"
	}
	return "$" + strconv.Itoa(n) + "::text::" + typ
}
