package sqlite

import (
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/snapstore/snapstore/snapshot"
)

// sqliteKind maps a declared column type to a kind, by SQLite's affinity
// rules (https://sqlite.org/datatype3.html, 3.1) refined for the names
// people use for dates, decimals, booleans and JSON.
func sqliteKind(decl string) snapshot.Kind {
	d := strings.ToUpper(strings.TrimSpace(decl))
	base := d
	if i := strings.IndexByte(base, '('); i >= 0 {
		base = strings.TrimSpace(base[:i])
	}
	switch base {
	case "DATE":
		return snapshot.KindDate
	case "DATETIME", "TIMESTAMP":
		return snapshot.KindDateTime
	case "DECIMAL", "NUMERIC":
		return snapshot.KindDecimal
	case "JSON":
		return snapshot.KindJSON
	case "BOOLEAN", "BOOL":
		return snapshot.KindInt
	}
	switch {
	case strings.Contains(d, "INT"):
		return snapshot.KindInt
	case strings.Contains(d, "CHAR"), strings.Contains(d, "CLOB"), strings.Contains(d, "TEXT"):
		return snapshot.KindString
	case strings.Contains(d, "BLOB"):
		return snapshot.KindBytes
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"):
		return snapshot.KindFloat
	case d == "":
		return snapshot.KindString
	}
	return snapshot.KindDecimal
}

type sqliteColumn struct {
	name    string
	decl    string
	kind    snapshot.Kind
	notNull bool
	pk      int
}

// Convert turns a driver value into the column's kind. A value the column's
// kind cannot hold exactly (text in an INTEGER column) fails the run with
// ErrUnsupportedType rather than change kind per row.
func (c *sqliteColumn) Convert(v any) (snapshot.Value, error) {
	bad := func() (snapshot.Value, error) {
		return snapshot.Value{}, fmt.Errorf("%w: column %q (%s) holds a %T value that does not fit", source.ErrUnsupportedType, c.name, c.decl, v)
	}
	if v == nil {
		return snapshot.Value{}, nil
	}
	switch c.kind {
	case snapshot.KindInt:
		switch x := v.(type) {
		case int64:
			return snapshot.Value{Kind: snapshot.KindInt, Int: x}, nil
		case float64:
			if x == float64(int64(x)) {
				return snapshot.Value{Kind: snapshot.KindInt, Int: int64(x)}, nil
			}
		case string:
			if n, err := strconv.ParseInt(x, 10, 64); err == nil {
				return snapshot.Value{Kind: snapshot.KindInt, Int: n}, nil
			}
		case bool:
			if x {
				return snapshot.Value{Kind: snapshot.KindInt, Int: 1}, nil
			}
			return snapshot.Value{Kind: snapshot.KindInt}, nil
		}
		return bad()
	case snapshot.KindFloat:
		switch x := v.(type) {
		case int64:
			return snapshot.Value{Kind: snapshot.KindFloat, Float: float64(x)}, nil
		case float64:
			return snapshot.Value{Kind: snapshot.KindFloat, Float: x}, nil
		case string:
			if f, err := strconv.ParseFloat(x, 64); err == nil {
				return snapshot.Value{Kind: snapshot.KindFloat, Float: f}, nil
			}
		}
		return bad()
	case snapshot.KindDecimal:
		switch x := v.(type) {
		case int64:
			return snapshot.Value{Kind: snapshot.KindDecimal, Bytes: strconv.AppendInt(nil, x, 10)}, nil
		case float64:
			return snapshot.Value{Kind: snapshot.KindDecimal, Bytes: strconv.AppendFloat(nil, x, 'f', -1, 64)}, nil
		case string:
			return snapshot.Value{Kind: snapshot.KindDecimal, Bytes: []byte(x)}, nil
		}
		return bad()
	case snapshot.KindBytes:
		switch x := v.(type) {
		case []byte:
			return snapshot.Value{Kind: snapshot.KindBytes, Bytes: x}, nil
		case string:
			return snapshot.Value{Kind: snapshot.KindBytes, Bytes: []byte(x)}, nil
		}
		return bad()
	case snapshot.KindDate, snapshot.KindDateTime:
		switch x := v.(type) {
		case time.Time:
			if c.kind == snapshot.KindDate {
				return snapshot.Value{Kind: c.kind, Bytes: []byte(x.UTC().Format("2006-01-02"))}, nil
			}
			return snapshot.Value{Kind: c.kind, Bytes: []byte(x.UTC().Format("2006-01-02 15:04:05.999999"))}, nil
		case string:
			return snapshot.Value{Kind: c.kind, Bytes: []byte(x)}, nil
		}
		return bad()
	default: // KindString, KindJSON
		switch x := v.(type) {
		case string:
			return snapshot.Value{Kind: c.kind, Bytes: []byte(x)}, nil
		case []byte:
			if utf8.Valid(x) {
				return snapshot.Value{Kind: c.kind, Bytes: x}, nil
			}
		case int64:
			return snapshot.Value{Kind: c.kind, Bytes: strconv.AppendInt(nil, x, 10)}, nil
		case float64:
			return snapshot.Value{Kind: c.kind, Bytes: strconv.AppendFloat(nil, x, 'g', -1, 64)}, nil
		}
		return bad()
	}
}
