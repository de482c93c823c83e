package mysql

import (
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"math"
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

// mysqlCell is one value of a row as the driver gives it (sql.Scanner).
// The driver parses the text protocol's integers and doubles itself; a
// sql.RawBytes destination would have database/sql format them back into
// text for Convert to parse a second time. Bytes are the driver's buffer,
// valid until the next row, as RawBytes are.
type mysqlCell struct {
	kind cellKind
	b    []byte
	i    int64
	u    uint64
	f    float64
	buf  []byte // text of a number, for a column read as text
}

// cellKind says which field of a mysqlCell holds its value.
type cellKind uint8

const (
	cellNull cellKind = iota
	cellBytes
	cellInt
	cellUint
	cellFloat
)

// Scan implements sql.Scanner.
func (c *mysqlCell) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		c.kind = cellNull
	case []byte:
		c.kind, c.b = cellBytes, v
	case int64:
		c.kind, c.i = cellInt, v
	case uint64:
		c.kind, c.u = cellUint, v
	case float64:
		c.kind, c.f = cellFloat, v
	case float32:
		c.kind, c.f = cellFloat, float64(v)
	case string:
		c.kind, c.b = cellBytes, append(c.buf[:0], v...)
		c.buf = c.b
	default:
		return fmt.Errorf("mysql: a value of Go type %T", src)
	}
	return nil
}

// text is the cell's value as text: its bytes, or a number formatted
// (the server's text of an integer; the shortest text of a double).
func (c *mysqlCell) text() []byte {
	switch c.kind {
	case cellInt:
		c.buf = strconv.AppendInt(c.buf[:0], c.i, 10)
	case cellUint:
		c.buf = strconv.AppendUint(c.buf[:0], c.u, 10)
	case cellFloat:
		c.buf = strconv.AppendFloat(c.buf[:0], c.f, 'g', -1, 64)
	default:
		return c.b
	}
	return c.buf
}

// Convert converts one cell of the column to its snapshot value: numbers
// as the driver parsed them (or from their text), everything else as the
// server's exact text or bytes (P4), aliasing the driver's buffer until
// the next row. Errors name the column.
func (c *mysqlColumn) Convert(cell mysqlCell) (snapshot.Value, error) {
	if cell.kind == cellNull {
		return snapshot.Value{}, nil
	}
	switch c.kind {
	case snapshot.KindInt:
		switch cell.kind {
		case cellInt:
			return snapshot.Value{Kind: snapshot.KindInt, Int: cell.i}, nil
		case cellUint:
			if cell.u > math.MaxInt64 {
				return snapshot.Value{}, fmt.Errorf("column %q: %s value %d out of range", c.name, c.columnType, cell.u)
			}
			return snapshot.Value{Kind: snapshot.KindInt, Int: int64(cell.u)}, nil
		}
		n, err := strconv.ParseInt(string(cell.text()), 10, 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.columnType, err)
		}
		return snapshot.Value{Kind: snapshot.KindInt, Int: n}, nil
	case snapshot.KindUint:
		if c.bit {
			b := cell.text()
			if len(b) > 8 {
				return snapshot.Value{}, fmt.Errorf("column %q: BIT value of %d bytes", c.name, len(b))
			}
			var u uint64
			for _, x := range b {
				u = u<<8 | uint64(x)
			}
			return snapshot.Value{Kind: snapshot.KindUint, Uint: u}, nil
		}
		switch cell.kind {
		case cellUint:
			return snapshot.Value{Kind: snapshot.KindUint, Uint: cell.u}, nil
		case cellInt:
			if cell.i < 0 {
				return snapshot.Value{}, fmt.Errorf("column %q: %s value %d out of range", c.name, c.columnType, cell.i)
			}
			return snapshot.Value{Kind: snapshot.KindUint, Uint: uint64(cell.i)}, nil
		}
		u, err := strconv.ParseUint(string(cell.text()), 10, 64)
		if err != nil {
			return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.columnType, err)
		}
		return snapshot.Value{Kind: snapshot.KindUint, Uint: u}, nil
	case snapshot.KindFloat:
		f := cell.f
		if cell.kind != cellFloat {
			var err error
			if f, err = strconv.ParseFloat(string(cell.text()), 64); err != nil {
				return snapshot.Value{}, fmt.Errorf("column %q: reading %s value: %w", c.name, c.columnType, err)
			}
		}
		if c.single {
			// The float64 of the float32's shortest text: 1.0000001 stays
			// 1.0000001, as DOUBLE's shortest text does for a double.
			f, _ = strconv.ParseFloat(strconv.FormatFloat(float64(float32(f)), 'g', -1, 32), 64)
		}
		return snapshot.Value{Kind: snapshot.KindFloat, Float: f}, nil
	}
	return snapshot.Value{Kind: c.kind, Bytes: cell.text()}, nil
}

// enumIndex is the col+0 index of an ENUM or SET key column, as its
// extra cell of the row holds it.
func (c *mysqlColumn) enumIndex(cell mysqlCell) (uint64, error) {
	switch cell.kind {
	case cellUint:
		return cell.u, nil
	case cellInt:
		if cell.i >= 0 {
			return uint64(cell.i), nil
		}
	}
	return strconv.ParseUint(string(cell.text()), 10, 64)
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
