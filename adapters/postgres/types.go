package postgres

import (
	"bytes"
	"encoding/hex"
	"errors"
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
	// expr is the SELECT expression ("col", or a cast of it).
	expr string
	// resultOID is the type of expr in the result (the base type, numeric
	// for money, numeric[] for money[]), checked on every chunk.
	resultOID uint32
	// elem is an array's element type, mapped as a column of that type
	// (its conv turns each element's text into a value), and delim the
	// element type's delimiter in the array's text (',', ';' for box).
	elem  *pgColumn
	delim byte
	buf   []byte // decoded bytea, or an array's JSON form, of the current row
	text  []byte // an array element's text with its escapes removed
}

// pgConv is how a column's text becomes a value.
type pgConv uint8

const (
	pgText  pgConv = iota // the text as it is, of the column's kind
	pgInt                 // a signed integer
	pgUint                // an unsigned integer (oid)
	pgFloat               // float4, float8: shortest exact text, NaN, Infinity
	pgBool                // t/f
	pgBytea               // \x hex to bytes
	pgArray               // array text to the JSON form of KindArray
)

// Type OIDs of pg_catalog that the mapping names (they are fixed in every
// PostgreSQL release).
const (
	pgOIDNumeric      = 1700
	pgOIDNumericArray = 1231
)

// pgVectorArrays are the catalog's vector types, read as arrays of their
// element type, with that array type's OID.
var pgVectorArrays = map[string]uint32{"int2vector": 1005, "oidvector": 1028}

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
	"bool": {snapshot.KindBool, pgBool},
	"text": {snapshot.KindString, pgText}, "varchar": {snapshot.KindString, pgText}, "bpchar": {snapshot.KindString, pgText},
	"name": {snapshot.KindString, pgText}, "char": {snapshot.KindString, pgText},
	"bytea": {snapshot.KindBytes, pgBytea},
	"uuid":  {snapshot.KindString, pgText},
	"date":  {snapshot.KindDate, pgText}, "timestamp": {snapshot.KindDateTime, pgText},
	"timestamptz": {snapshot.KindDateTime, pgText},
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
		// Arrays (NULL elements, any dimensions, any lower bounds) read as
		// the server's array text; each element is mapped as a column of
		// the element type.
		if c.elem == nil {
			break
		}
		if err := postgresKind(c.elem); err != nil {
			return fmt.Errorf("%w: column %q has type %s", source.ErrUnsupportedType, c.name, c.typeName)
		}
		c.kind, c.conv = snapshot.KindArray, pgArray
		switch {
		case c.elem.baseSchema == "pg_catalog" && c.elem.baseName == "money":
			c.expr, c.resultOID = q+"::numeric[]", pgOIDNumericArray
		case c.baseSchema == "pg_catalog" && pgVectorArrays[c.baseName] != 0:
			// int2vector and oidvector write "1 2", not an array's text.
			c.expr, c.resultOID = q+"::"+c.elem.baseName+"[]", pgVectorArrays[c.baseName]
		}
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
		if string(b) != "t" && string(b) != "f" {
			return snapshot.Value{}, fmt.Errorf("column %q: reading boolean value %q", c.name, b)
		}
		return snapshot.Value{Kind: snapshot.KindBool, Bytes: b}, nil
	case pgArray:
		var err error
		if c.buf, err = c.appendArrayJSON(c.buf[:0], b); err != nil {
			if errors.Is(err, errArrayText) {
				err = fmt.Errorf("column %q: reading %s value: %w", c.name, c.typeName, err)
			}
			return snapshot.Value{}, err // an element's error names the column
		}
		return snapshot.Value{Kind: snapshot.KindArray, Bytes: c.buf}, nil
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
