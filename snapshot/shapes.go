package snapshot

import (
	"bytes"
	"strconv"
	"strings"
)

// Value shapes: what the values of a version's decimal, date, datetime
// and time columns are like, recorded with the version (VersionInfo.Shapes,
// TableInfo.Shapes for a table of a dataset of named tables), so that a reader knows before reading a row whether
// every value of such a column is a regular one (a calendar date, a plain
// decimal of so many digits) without a pass over the rows. The record is
// an over-approximation: a run folds in every row it puts and, for the
// rows it keeps without putting them (carried ranges, a run of changes),
// the previous version's record; deleted rows are not taken out. A run
// that cannot know (a previous version without a record, a partition
// reported without one) records none, and readers then look at the rows.

// ValueShapes is a version's (or a table's) record of value shapes: one
// ColumnShape per decimal, date, datetime and time column of its schema.
type ValueShapes struct {
	Columns []ColumnShape `json:"columns"`
}

// ColumnShape sums up the values of one column.
type ColumnShape struct {
	Column string `json:"column"`
	// Irregular is true when some value is not a regular value of the
	// column's kind: a decimal other than plain digits (SplitDecimal), a
	// date, datetime or time that ParseDate, ParseDateTime or ParseTime
	// refuses (a zero date, infinity, a BC date), or a value of another
	// kind.
	Irregular bool `json:"irregular,omitempty"`
	// IntDigits and FracDigits are, for a decimal column, the most
	// integer digits (leading zeros aside) and fraction digits of its
	// regular values.
	IntDigits  int `json:"int_digits,omitempty"`
	FracDigits int `json:"frac_digits,omitempty"`
}

// Shape returns the shape of column, and whether vs records one.
func (vs *ValueShapes) Shape(column string) (ColumnShape, bool) {
	if vs == nil {
		return ColumnShape{}, false
	}
	for _, c := range vs.Columns {
		if c.Column == column {
			return c, true
		}
	}
	return ColumnShape{}, false
}

// shaped reports whether a column of kind k has a shape.
func shaped(k Kind) bool {
	switch k {
	case KindDecimal, KindDate, KindDateTime, KindTime:
		return true
	}
	return false
}

// shapeRecord is a run's ValueShapes in the making: started at the
// run's first row (or first inherited record), lost once a row's shape
// is unknown.
type shapeRecord struct {
	started bool
	lost    bool
	idx     []int // schema index of each of cols
	cols    []ColumnShape
}

// start sets up the shaped columns of schema.
func (sr *shapeRecord) start(schema Schema) {
	if sr.started {
		return
	}
	sr.started = true
	for i, c := range schema.Columns {
		if shaped(c.Kind) {
			sr.idx = append(sr.idx, i)
			sr.cols = append(sr.cols, ColumnShape{Column: c.Name})
		}
	}
}

// addRow folds in a row of schema, vals aligned with its columns.
func (sr *shapeRecord) addRow(schema Schema, vals []Value) {
	sr.start(schema)
	for j, i := range sr.idx {
		if i < len(vals) {
			sr.cols[j].add(schema.Columns[i].Kind, vals[i])
		}
	}
}

// add folds v, a value of a column of kind k, into cs.
func (cs *ColumnShape) add(k Kind, v Value) {
	if v.Kind == KindNull || cs.Irregular {
		return
	}
	if v.Kind != k {
		cs.Irregular = true
		return
	}
	ok := true
	switch k {
	case KindDecimal:
		var ip, fp []byte
		if _, ip, fp, ok = SplitDecimal(v.Bytes); ok {
			cs.IntDigits = max(cs.IntDigits, len(ip))
			cs.FracDigits = max(cs.FracDigits, len(fp))
		}
	case KindDate:
		_, ok = ParseDate(v.Bytes)
	case KindDateTime:
		_, ok = ParseDateTime(v.Bytes)
	case KindTime:
		_, ok = ParseTime(v.Bytes)
	}
	if !ok {
		cs.Irregular = true
	}
}

// inherit folds in the record of prev, whose rows the run keeps without
// putting them; the record is lost when prev has none or has another
// schema.
func (sr *shapeRecord) inherit(schema Schema, prev *VersionInfo) {
	if prev == nil {
		return
	}
	if !sameSchema(prev.Schema, schema) {
		sr.lost = true
		return
	}
	sr.merge(schema, prev.Shapes)
}

// merge folds in vs, the record of rows of schema the run did not put
// itself; nil loses the record.
func (sr *shapeRecord) merge(schema Schema, vs *ValueShapes) {
	if vs == nil {
		sr.lost = true
		return
	}
	sr.start(schema)
	for j := range sr.cols {
		c, ok := vs.Shape(sr.cols[j].Column)
		if !ok {
			sr.lost = true
			return
		}
		cs := &sr.cols[j]
		cs.Irregular = cs.Irregular || c.Irregular
		cs.IntDigits = max(cs.IntDigits, c.IntDigits)
		cs.FracDigits = max(cs.FracDigits, c.FracDigits)
	}
}

// record returns the record of a run of schema, nil when lost.
func (sr *shapeRecord) record(schema Schema) *ValueShapes {
	if sr.lost {
		return nil
	}
	sr.start(schema)
	return &ValueShapes{Columns: append([]ColumnShape{}, sr.cols...)}
}

// shapesNow returns the value shapes of the version the run writes, nil
// when it cannot know them; only the run's goroutine may call it.
func (r *Run) shapesNow() *ValueShapes { return r.shapes.record(r.opts.Schema) }

// SplitDecimal splits the decimal text s ("-12.50") into its sign, its
// integer digits without leading zeros and its fraction digits; false
// when s is not plain digits with an optional sign and point (NaN,
// Infinity, an exponent, nothing).
func SplitDecimal(s []byte) (neg bool, intPart, frac []byte, ok bool) {
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart = s
	if i := bytes.IndexByte(s, '.'); i >= 0 {
		intPart, frac = s[:i], s[i+1:]
	}
	if len(intPart) == 0 && len(frac) == 0 {
		return false, nil, nil, false
	}
	for _, part := range [2][]byte{intPart, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return false, nil, nil, false
			}
		}
	}
	for len(intPart) > 0 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	return neg, intPart, frac, true
}

// ParseDate reads "YYYY-MM-DD" as days since 1970-01-01 of the proleptic
// Gregorian calendar, years 0001 to 9999; false for a zero date,
// infinity or a BC date.
func ParseDate(s []byte) (int64, bool) {
	if len(s) != 10 {
		return 0, false
	}
	return parseCivilDate(s)
}

// parseCivilDate reads the "YYYY-MM-DD" at the start of s as ParseDate
// does.
func parseCivilDate(s []byte) (int64, bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || y < 1 || m < 1 || m > 12 || d < 1 || d > daysIn(m, y) {
		return 0, false
	}
	return daysFromCivil(int64(y), int64(m), int64(d)), true
}

// daysFromCivil is Howard Hinnant's days_from_civil: days since
// 1970-01-01 of a proleptic Gregorian date.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// digits reads s, ASCII digits only, as a number.
func digits(s []byte) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(s) > 0
}

// ParseDateTime reads "YYYY-MM-DD hh:mm:ss[.f]" (up to microseconds,
// with PostgreSQL's "+00" of a timestamptz stored in UTC) as microseconds
// since 1970-01-01 00:00:00; false for zero dates, infinity, BC dates and
// finer fractions.
func ParseDateTime(s []byte) (int64, bool) {
	s = bytes.TrimSuffix(s, []byte("+00"))
	if len(s) < 19 || len(s) > 26 || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	days, ok := parseCivilDate(s)
	if !ok {
		return 0, false
	}
	h, ok1 := digits(s[11:13])
	m, ok2 := digits(s[14:16])
	sec, ok3 := digits(s[17:19])
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 59 {
		return 0, false
	}
	us := 0
	if len(s) > 19 {
		if s[19] != '.' || len(s) == 20 {
			return 0, false
		}
		f, ok := digits(s[20:])
		if !ok {
			return 0, false
		}
		for i := len(s) - 20; i < 6; i++ {
			f *= 10
		}
		us = f
	}
	return ((days*24+int64(h))*60+int64(m))*60_000_000 + int64(sec)*1_000_000 + int64(us), true
}

// ParseTime reads a time of day or MySQL TIME, "[-]h+:mm:ss[.f]" (up to
// microseconds), as microseconds.
func ParseTime(s []byte) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	parts := strings.Split(string(s), ":")
	if len(parts) != 3 || len(parts[1]) != 2 || len(parts[2]) < 2 {
		return 0, false
	}
	h, err := strconv.ParseInt(parts[0], 10, 32)
	if err != nil || h < 0 {
		return 0, false
	}
	m, err := strconv.Atoi(parts[1])
	if err != nil || m < 0 || m > 59 {
		return 0, false
	}
	sec, frac, _ := strings.Cut(parts[2], ".")
	if len(sec) != 2 || len(frac) > 6 {
		return 0, false
	}
	sc, err := strconv.Atoi(sec)
	if err != nil || sc < 0 || sc > 59 {
		return 0, false
	}
	us := int64(0)
	if frac != "" {
		f, err := strconv.Atoi(frac + strings.Repeat("0", 6-len(frac)))
		if err != nil || f < 0 {
			return 0, false
		}
		us = int64(f)
	}
	d := ((h*60+int64(m))*60+int64(sc))*1_000_000 + us
	if neg {
		d = -d
	}
	return d, true
}
