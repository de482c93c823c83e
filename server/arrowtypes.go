package server

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/snapstore/snapstore/snapshot"
)

// The Arrow type of each snapshot kind, as docs/types.md tabulates it. A
// column's Arrow type comes from its kind and source type; a column with a
// value its type cannot hold (a zero date, a NaN numeric, a decimal past
// its declared scale) is served as text instead (arrowText), which the
// answer learns from the version's value shapes (provenFit) or, where
// they do not tell, by a first pass over such columns (rowsTable.probe).

// arrowEnc is how one column's values become Arrow values.
type arrowEnc uint8

const (
	// arrowText is utf8: ValueText of each value (the fallback of every kind).
	arrowText arrowEnc = iota
	arrowNull
	arrowInt64
	arrowUint64
	arrowFloat64
	arrowDecimal128
	arrowDecimal256
	arrowDate32
	arrowTimestamp
	arrowDuration
	// arrowTime64 is time64[us], a time of day: TIME in Parquet, which has
	// no duration type (forParquet).
	arrowTime64
	arrowBinary
	arrowJSON
	arrowDictionary
	// arrowBoolean is bool: KindBool's "t" and "f".
	arrowBoolean
)

// arrowColumn is one column of an answer: its name, its snapshot column
// and how its values are written.
type arrowColumn struct {
	name string
	col  snapshot.Column
	enc  arrowEnc
	// prec and scale of a decimal column.
	prec, scale int32
	// tz of a timestamp column: "UTC" for instants (MySQL TIMESTAMP,
	// PostgreSQL timestamptz), "" for wall times.
	tz string
}

// Metadata keys of Arrow schemas and fields.
const (
	arrowMetaDataset    = "snapstore.dataset"
	arrowMetaTable      = "snapstore.table"
	arrowMetaVersion    = "snapstore.version"
	arrowMetaKey        = "snapstore.key"
	arrowMetaFrom       = "snapstore.from"
	arrowMetaSourceType = "snapstore.source_type"
	arrowMetaKind       = "snapstore.kind"
)

// decimalType matches a declared precision and scale: decimal(5,2),
// numeric(10), DECIMAL(65,30) unsigned.
var decimalType = regexp.MustCompile(`(?i)^\s*(?:decimal|numeric|dec|fixed)\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)`)

// newArrowColumn picks the Arrow encoding of col, served as name.
func newArrowColumn(name string, col snapshot.Column) arrowColumn {
	ac := arrowColumn{name: name, col: col}
	st := strings.ToLower(strings.TrimSpace(col.SourceType))
	switch col.Kind {
	case snapshot.KindNull:
		ac.enc = arrowNull
	case snapshot.KindInt:
		ac.enc = arrowInt64
	case snapshot.KindUint:
		ac.enc = arrowUint64
	case snapshot.KindFloat:
		ac.enc = arrowFloat64
	case snapshot.KindDecimal:
		m := decimalType.FindStringSubmatch(st)
		if m == nil {
			break // no declared precision (PostgreSQL numeric, money, SQLite NUMERIC): text
		}
		p, _ := strconv.Atoi(m[1])
		s := 0
		if m[2] != "" {
			s, _ = strconv.Atoi(m[2])
		}
		if p < 1 || p > 76 || s > p {
			break
		}
		ac.prec, ac.scale = int32(p), int32(s)
		ac.enc = arrowDecimal128
		if p > 38 {
			ac.enc = arrowDecimal256
		}
	case snapshot.KindString:
		if strings.HasPrefix(st, "enum(") || strings.HasPrefix(st, "set(") {
			ac.enc = arrowDictionary
		}
	case snapshot.KindBytes, snapshot.KindGeometry:
		ac.enc = arrowBinary
	case snapshot.KindDate:
		ac.enc = arrowDate32
	case snapshot.KindDateTime:
		ac.enc = arrowTimestamp
		if strings.Contains(st, "with time zone") ||
			strings.HasPrefix(st, "timestamp") && !strings.Contains(st, "without time zone") {
			ac.tz = "UTC"
		}
	case snapshot.KindTime:
		ac.enc = arrowDuration
	case snapshot.KindJSON, snapshot.KindEmbeddedJSON, snapshot.KindArray:
		ac.enc = arrowJSON
	case snapshot.KindBool:
		ac.enc = arrowBoolean
	}
	return ac
}

// forParquet turns the durations of cols into times of day (Parquet has
// no duration type; a TIME beyond 00:00..24:00 is then text) and JSON into
// plain utf8 (arrow-go's Parquet reader does not read the JSON extension
// back over utf8; the field's snapstore.kind metadata still says json).
func forParquet(cols []arrowColumn) {
	for i := range cols {
		switch cols[i].enc {
		case arrowDuration:
			cols[i].enc = arrowTime64
		case arrowJSON:
			cols[i].enc = arrowText
		}
	}
}

// mayNotFit reports whether a value of ac's column can be one its Arrow
// type cannot hold, so the answer probes the column first.
func (ac arrowColumn) mayNotFit() bool {
	switch ac.enc {
	case arrowDecimal128, arrowDecimal256, arrowDate32, arrowTimestamp, arrowDuration, arrowTime64:
		return true
	}
	return false
}

// provenFit reports whether shapes, the value shapes of the version read
// (nil when it has none), show that every value of ac's column fits its
// Arrow type, so that no pass over the rows need look.
func (ac arrowColumn) provenFit(shapes *snapshot.ValueShapes) bool {
	cs, ok := shapes.Shape(ac.col.Name)
	if !ok || cs.Irregular {
		return false
	}
	switch ac.enc {
	case arrowDecimal128, arrowDecimal256:
		return int32(cs.IntDigits) <= ac.prec-ac.scale && int32(cs.FracDigits) <= ac.scale
	case arrowDate32, arrowTimestamp, arrowDuration:
		return true // what ParseDate, ParseDateTime and ParseTime read
	}
	return false
}

// arrowJSONType is the Arrow JSON extension type over utf8.
var arrowJSONType = func() arrow.DataType {
	t, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		panic(err)
	}
	return t
}()

// dataType returns ac's Arrow type.
func (ac arrowColumn) dataType() arrow.DataType {
	switch ac.enc {
	case arrowNull:
		return arrow.Null
	case arrowInt64:
		return arrow.PrimitiveTypes.Int64
	case arrowUint64:
		return arrow.PrimitiveTypes.Uint64
	case arrowFloat64:
		return arrow.PrimitiveTypes.Float64
	case arrowDecimal128:
		return &arrow.Decimal128Type{Precision: ac.prec, Scale: ac.scale}
	case arrowDecimal256:
		return &arrow.Decimal256Type{Precision: ac.prec, Scale: ac.scale}
	case arrowDate32:
		return arrow.FixedWidthTypes.Date32
	case arrowTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: ac.tz}
	case arrowDuration:
		return arrow.FixedWidthTypes.Duration_us
	case arrowTime64:
		return arrow.FixedWidthTypes.Time64us
	case arrowBinary:
		return arrow.BinaryTypes.Binary
	case arrowJSON:
		return arrowJSONType
	case arrowDictionary:
		return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	case arrowBoolean:
		return arrow.FixedWidthTypes.Boolean
	}
	return arrow.BinaryTypes.String
}

// field returns ac's Arrow field: nullable, with the column's source type
// and kind in its metadata.
func (ac arrowColumn) field() arrow.Field {
	return arrow.Field{
		Name:     ac.name,
		Type:     ac.dataType(),
		Nullable: true,
		Metadata: arrow.NewMetadata(
			[]string{arrowMetaSourceType, arrowMetaKind},
			[]string{ac.col.SourceType, ac.col.Kind.String()}),
	}
}

// fits reports whether v can be written in ac's Arrow type.
func (ac arrowColumn) fits(v snapshot.Value) bool {
	if v.Kind == snapshot.KindNull || ac.enc == arrowText {
		return true
	}
	if v.Kind != ac.col.Kind {
		return false
	}
	switch ac.enc {
	case arrowDecimal128, arrowDecimal256:
		_, _, ok := parseDecimal(v.Bytes, ac.prec, ac.scale)
		return ok
	case arrowDate32:
		_, ok := parseDate32(v.Bytes)
		return ok
	case arrowTimestamp:
		_, ok := parseTimestamp(v.Bytes)
		return ok
	case arrowDuration:
		_, ok := parseDuration(v.Bytes)
		return ok
	case arrowTime64:
		d, ok := parseDuration(v.Bytes)
		return ok && d >= 0 && d < 24*3600*1_000_000
	}
	return true
}

// appendArrow appends v to b, the builder of ac's type, and reports
// whether v fits that type (ac.fits): a value that does not is not
// appended.
func (ac *arrowColumn) appendArrow(b array.Builder, v snapshot.Value) bool {
	if v.Kind == snapshot.KindNull {
		b.AppendNull()
		return true
	}
	switch ac.enc {
	case arrowNull:
		b.AppendNull()
	case arrowInt64:
		b.(*array.Int64Builder).Append(v.Int)
	case arrowUint64:
		b.(*array.Uint64Builder).Append(v.Uint)
	case arrowFloat64:
		b.(*array.Float64Builder).Append(v.Float)
	case arrowDecimal128:
		n, large, ok := parseDecimal(v.Bytes, ac.prec, ac.scale)
		if !ok || v.Kind != ac.col.Kind {
			return false
		}
		if large == nil {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(n))
		} else {
			b.(*array.Decimal128Builder).Append(decimal128.FromBigInt(large))
		}
	case arrowDecimal256:
		n, large, ok := parseDecimal(v.Bytes, ac.prec, ac.scale)
		if !ok || v.Kind != ac.col.Kind {
			return false
		}
		if large == nil {
			b.(*array.Decimal256Builder).Append(decimal256.FromI64(n))
		} else {
			b.(*array.Decimal256Builder).Append(decimal256.FromBigInt(large))
		}
	case arrowDate32:
		d, ok := parseDate32(v.Bytes)
		if !ok || v.Kind != ac.col.Kind {
			return false
		}
		b.(*array.Date32Builder).Append(d)
	case arrowTimestamp:
		t, ok := parseTimestamp(v.Bytes)
		if !ok || v.Kind != ac.col.Kind {
			return false
		}
		b.(*array.TimestampBuilder).Append(t)
	case arrowDuration:
		d, ok := parseDuration(v.Bytes)
		if !ok || v.Kind != ac.col.Kind {
			return false
		}
		b.(*array.DurationBuilder).Append(d)
	case arrowTime64:
		d, ok := parseDuration(v.Bytes)
		if !ok || d < 0 || d >= 24*3600*1_000_000 || v.Kind != ac.col.Kind {
			return false
		}
		b.(*array.Time64Builder).Append(arrow.Time64(d))
	case arrowBinary:
		b.(*array.BinaryBuilder).Append(v.Bytes)
	case arrowJSON:
		b.(*array.ExtensionBuilder).StorageBuilder().(*array.StringBuilder).BinaryBuilder.Append(v.Bytes)
	case arrowDictionary:
		_ = b.(*array.BinaryDictionaryBuilder).Append(v.Bytes)
	case arrowBoolean:
		b.(*array.BooleanBuilder).Append(len(v.Bytes) > 0 && v.Bytes[0] == 't')
	default:
		if textIsBytes(v.Kind) {
			b.(*array.StringBuilder).BinaryBuilder.Append(v.Bytes) // ValueText without its string copy
		} else {
			b.(*array.StringBuilder).Append(ValueText(v))
		}
	}
	return true
}

// textIsBytes reports whether ValueText of a value of kind k is its
// Bytes as they are.
func textIsBytes(k snapshot.Kind) bool {
	switch k {
	case snapshot.KindDecimal, snapshot.KindString, snapshot.KindDate, snapshot.KindDateTime, snapshot.KindTime,
		snapshot.KindJSON, snapshot.KindEmbeddedJSON, snapshot.KindArray:
		return true
	}
	return false
}

// parseDecimal reads the decimal text s ("-12.50") as an unscaled integer
// at scale: small when it has at most 18 digits, else large; false when
// it is not a plain decimal (NaN, Infinity, an exponent) or has more
// integer digits than prec-scale or more fraction digits than scale.
func parseDecimal(s []byte, prec, scale int32) (small int64, large *big.Int, ok bool) {
	neg, intPart, frac, ok := snapshot.SplitDecimal(s)
	if !ok || int32(len(intPart)) > prec-scale || int32(len(frac)) > scale {
		return 0, nil, false
	}
	if len(intPart)+int(scale) > 18 {
		large, ok = decimalDigits(intPart, frac, neg, scale)
		return 0, large, ok
	}
	for _, part := range [2][]byte{intPart, frac} {
		for _, c := range part {
			small = small*10 + int64(c-'0')
		}
	}
	for i := int32(len(frac)); i < scale; i++ {
		small *= 10
	}
	if neg {
		small = -small
	}
	return small, nil, true
}

// decimalDigits reads the digits intPart and frac, negated when neg, as
// an integer at scale (frac has at most scale digits): the path of
// parseDecimal for numbers past int64.
func decimalDigits(intPart, frac []byte, neg bool, scale int32) (*big.Int, bool) {
	digits := make([]byte, 0, len(intPart)+int(scale)+1)
	if neg {
		digits = append(digits, '-')
	}
	digits = append(digits, intPart...)
	digits = append(digits, frac...)
	for i := int32(len(frac)); i < scale; i++ {
		digits = append(digits, '0')
	}
	if len(digits) == 0 || len(digits) == 1 && neg {
		digits = append(digits, '0')
	}
	for _, c := range digits[boolInt(neg):] {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	n, ok := new(big.Int).SetString(string(digits), 10)
	return n, ok
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseDate32 reads "YYYY-MM-DD" as days since 1970-01-01
// (snapshot.ParseDate).
func parseDate32(s []byte) (arrow.Date32, bool) {
	days, ok := snapshot.ParseDate(s)
	return arrow.Date32(days), ok
}

// parseTimestamp reads "YYYY-MM-DD hh:mm:ss[.f]" as microseconds since
// the epoch (snapshot.ParseDateTime).
func parseTimestamp(s []byte) (arrow.Timestamp, bool) {
	us, ok := snapshot.ParseDateTime(s)
	return arrow.Timestamp(us), ok
}

// parseDuration reads a time of day or MySQL TIME as microseconds
// (snapshot.ParseTime).
func parseDuration(s []byte) (arrow.Duration, bool) {
	us, ok := snapshot.ParseTime(s)
	return arrow.Duration(us), ok
}
