package mysql

import (
	"database/sql"
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

// mysqlColumn is one source column and how it maps (docs/types.md).
type mysqlColumn struct {
	name       string
	dataType   string // information_schema DATA_TYPE, lower case
	columnType string // COLUMN_TYPE, e.g. "decimal(5,2) unsigned"
	nullable   bool
	charset    string // CHARACTER_SET_NAME, "" for non-text
	precision  int64  // NUMERIC_PRECISION (decimal)
	scale      int64  // NUMERIC_SCALE (decimal)
	kind       snapshot.Kind
	bit        bool // BIT(n): big-endian bytes to KindUint
	// single is FLOAT, single precision: the server's text of it has six
	// significant digits (16777216 reads 16777200), so it is read as
	// DOUBLE, exact, and narrowed (selectExpr, Convert).
	single   bool
	enumLike bool // ENUM or SET: keyset compares col+0
	// generated is "virtual" or "stored" for a generated column, genExpr
	// its expression; both "" for a plain column.
	generated, genExpr string
}

// mysqlKind maps a column to its snapshot kind; the table in docs/types.md
// is the contract and mysql_types_test.go checks each row against MariaDB.
func mysqlKind(c *mysqlColumn, isJSON bool) (snapshot.Kind, error) {
	unsigned := strings.Contains(c.columnType, "unsigned")
	switch c.dataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		if unsigned {
			return snapshot.KindUint, nil
		}
		return snapshot.KindInt, nil
	case "year":
		return snapshot.KindInt, nil
	case "bit":
		c.bit = true
		return snapshot.KindUint, nil
	case "decimal", "numeric":
		return snapshot.KindDecimal, nil
	case "float":
		c.single = true
		return snapshot.KindFloat, nil
	case "double", "real", "double precision":
		return snapshot.KindFloat, nil
	case "date":
		return snapshot.KindDate, nil
	case "datetime", "timestamp":
		return snapshot.KindDateTime, nil
	case "time":
		return snapshot.KindTime, nil
	case "json":
		return snapshot.KindJSON, nil
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		if isJSON {
			return snapshot.KindJSON, nil
		}
		if c.charset == "binary" {
			return snapshot.KindBytes, nil
		}
		return snapshot.KindString, nil
	case "enum", "set":
		c.enumLike = true
		return snapshot.KindString, nil
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return snapshot.KindBytes, nil
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
		"multipolygon", "geometrycollection", "geomcollection":
		return snapshot.KindGeometry, nil
	case "uuid", "inet4", "inet6":
		return snapshot.KindString, nil
	}
	return 0, fmt.Errorf("%w: column %q has type %s", source.ErrUnsupportedType, c.name, c.columnType)
}

// Convert turns the text-protocol bytes of one value, the server's exact
// text (P4), into a Value. b == nil is NULL. Bytes alias b (valid until the
// next row).
func (c *mysqlColumn) Convert(b sql.RawBytes) (snapshot.Value, error) {
	if b == nil {
		return snapshot.Value{}, nil
	}
	switch c.kind {
	case snapshot.KindInt:
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.columnType, err)
		}
		return snapshot.Value{Kind: snapshot.KindInt, Int: n}, nil
	case snapshot.KindUint:
		if c.bit {
			if len(b) > 8 {
				return snapshot.Value{}, fmt.Errorf("column %q: BIT value of %d bytes", c.name, len(b))
			}
			var u uint64
			for _, x := range b {
				u = u<<8 | uint64(x)
			}
			return snapshot.Value{Kind: snapshot.KindUint, Uint: u}, nil
		}
		u, err := strconv.ParseUint(string(b), 10, 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.columnType, err)
		}
		return snapshot.Value{Kind: snapshot.KindUint, Uint: u}, nil
	case snapshot.KindFloat:
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.columnType, err)
		}
		if c.single {
			// The float64 of the float32's shortest text: 1.0000001 stays
			// 1.0000001, as DOUBLE's shortest text does for a double.
			f, _ = strconv.ParseFloat(strconv.FormatFloat(float64(float32(f)), 'g', -1, 32), 64)
		}
		return snapshot.Value{Kind: snapshot.KindFloat, Float: f}, nil
	}
	return snapshot.Value{Kind: c.kind, Bytes: b}, nil
}

// selectExpr is the column as the reader and the row checksum select it:
// its name, or for FLOAT its exact value as DOUBLE (single).
func (c *mysqlColumn) selectExpr() string {
	if c.single {
		return "CAST(" + quoteMySQLIdent(c.name) + " AS DOUBLE)"
	}
	return quoteMySQLIdent(c.name)
}

// keyArg returns the Go value that stands for v in a keyset predicate:
// typed numbers (so BIGINT UNSIGNED is not compared as a double), []byte
// for binary (sent as _binary'...'), text otherwise. The result owns its
// bytes.
func (c *mysqlColumn) keyArg(v snapshot.Value) any {
	switch v.Kind {
	case snapshot.KindInt:
		return v.Int
	case snapshot.KindUint:
		return v.Uint
	case snapshot.KindFloat:
		if c.single {
			return float64(float32(v.Float)) // the FLOAT's exact value, as the column compares
		}
		return v.Float
	case snapshot.KindBytes:
		return append([]byte(nil), v.Bytes...)
	}
	return string(v.Bytes)
}

// keyPlaceholder is the SQL for one key value in a keyset predicate.
func (c *mysqlColumn) keyPlaceholder() string {
	if c.kind == snapshot.KindDecimal {
		return fmt.Sprintf("CAST(? AS DECIMAL(%d,%d))", c.precision, c.scale)
	}
	return "?"
}

// keyExpr is the column expression compared in a keyset predicate: ENUM and
// SET compare by their index (col+0), which is also their ORDER BY order.
func (c *mysqlColumn) keyExpr() string {
	if c.enumLike {
		return quoteMySQLIdent(c.name) + "+0"
	}
	return quoteMySQLIdent(c.name)
}
