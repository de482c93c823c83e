package snapshot

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// TestKeyOrder checks that the row key encoding orders values as their
// kind does, for each keyable kind and for composite keys.
func TestKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	decimal := func() string {
		s := strconv.Itoa(rng.IntN(2000) - 1000)
		if rng.IntN(2) == 0 {
			s += "." + strconv.Itoa(rng.IntN(1000))
		}
		if rng.IntN(5) == 0 {
			s = "0.00" + strconv.Itoa(rng.IntN(90)+10)
		}
		return s
	}
	gens := map[Kind]struct {
		gen func() Value
		cmp func(a, b Value) int
	}{
		KindInt: {func() Value { return Value{Kind: KindInt, Int: rng.Int64() >> rng.IntN(64)} },
			func(a, b Value) int { return cmp.Compare(a.Int, b.Int) }},
		KindUint: {func() Value { return Value{Kind: KindUint, Uint: rng.Uint64() >> rng.IntN(64)} },
			func(a, b Value) int { return cmp.Compare(a.Uint, b.Uint) }},
		KindFloat: {func() Value {
			f := []float64{math.Inf(-1), math.Inf(1), 0, -1.5, 1e-300, -1e300}[rng.IntN(6)]
			if rng.IntN(2) == 0 {
				f = rng.NormFloat64() * 1e6
			}
			return Value{Kind: KindFloat, Float: f}
		}, func(a, b Value) int { return cmp.Compare(a.Float, b.Float) }},
		KindDecimal: {func() Value { return Value{Kind: KindDecimal, Bytes: []byte(decimal())} },
			func(a, b Value) int {
				x, _ := new(big.Rat).SetString(string(a.Bytes))
				y, _ := new(big.Rat).SetString(string(b.Bytes))
				return x.Cmp(y)
			}},
		KindString: {func() Value {
			b := make([]byte, rng.IntN(4))
			for i := range b {
				b[i] = []byte{0, 1, 'a', 0xff}[rng.IntN(4)]
			}
			return Value{Kind: KindString, Bytes: b}
		}, func(a, b Value) int { return bytes.Compare(a.Bytes, b.Bytes) }},
		KindBool: {func() Value { return BoolValue(rng.IntN(2) == 0) },
			func(a, b Value) int { return cmp.Compare(a.String(), b.String()) }}, // "false" < "true"
		KindTime: {func() Value {
			us := rng.Int64N(2e12) - 1e12
			neg := us < 0
			if neg {
				us = -us
			}
			s := strconv.FormatInt(us/3600e6, 10) + ":" + twoDigits(us/60e6%60) + ":" + twoDigits(us/1e6%60) + "." + strconv.FormatInt(1e6+us%1e6, 10)[1:]
			if neg {
				s = "-" + s
			}
			return Value{Kind: KindTime, Bytes: []byte(s)}
		}, func(a, b Value) int {
			x, _ := parseTimeMicros(string(a.Bytes))
			y, _ := parseTimeMicros(string(b.Bytes))
			return cmp.Compare(x, y)
		}},
	}
	for kind, g := range gens {
		for i := 0; i < 3000; i++ {
			a, b := g.gen(), g.gen()
			pa, err := AppendKey(nil, []Value{a})
			if err != nil {
				t.Fatalf("%s %v: %v", kind, a, err)
			}
			// composite: (a, 1) vs (b, 0) must follow a vs b, then the int
			ka, err := AppendKey(nil, []Value{a, iv(1)})
			if err != nil {
				t.Fatalf("%s %v: %v", kind, a, err)
			}
			kb, err := AppendKey(nil, []Value{b, iv(0)})
			if err != nil {
				t.Fatalf("%s %v: %v", kind, b, err)
			}
			if !bytes.HasPrefix(ka, pa) {
				t.Fatalf("%s: the key (%s, 1) does not begin with its prefix (%s)", kind, a, a)
			}
			want := g.cmp(a, b)
			if want == 0 {
				want = 1
			}
			if got := bytes.Compare(ka, kb); got != want {
				t.Fatalf("%s: %s vs %s: bytes %d, values %d", kind, a, b, got, want)
			}
		}
	}
}

func twoDigits(x int64) string { return strconv.FormatInt(100+x, 10)[1:] }

// TestCellValueRoundTrip checks that every kind survives the cell encoding.
func TestCellValueRoundTrip(t *testing.T) {
	for _, v := range []Value{
		{}, iv(-5), {Kind: KindUint, Uint: math.MaxUint64}, {Kind: KindFloat, Float: math.NaN()},
		sv(""), sv("a\x00b"), {Kind: KindBytes, Bytes: []byte{0xff}}, {Kind: KindDecimal, Bytes: []byte("-12.50")},
		{Kind: KindJSON, Bytes: []byte(`{"a":1}`)}, {Kind: KindEmbeddedJSON, Bytes: []byte(`null`)}, {Kind: KindDate, Bytes: []byte("0000-00-00")},
		BoolValue(true), BoolValue(false), {Kind: KindArray, Bytes: []byte(`{"lower":[0],"elements":[1]}`)},
	} {
		got, err := decodeCellValue(appendCellValue(nil, v), true)
		if err != nil || !got.Equal(v) {
			t.Errorf("%v: got %v, %v", v, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {byte(KindInt)}, {byte(KindFloat), 1}, {99}} {
		if _, err := decodeCellValue(bad, false); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
}

func TestValueJSON(t *testing.T) {
	for _, c := range []struct {
		v    Value
		want string
	}{
		{Value{}, `null`},
		{iv(-3), `-3`},
		{Value{Kind: KindUint, Uint: 1 << 60}, `"1152921504606846976"`},
		{Value{Kind: KindUint, Uint: 7}, `7`},
		// Non-finite floats in PostgreSQL's spelling, as numeric's text.
		{Value{Kind: KindFloat, Float: math.Inf(-1)}, `"-Infinity"`},
		{Value{Kind: KindFloat, Float: math.Inf(1)}, `"Infinity"`},
		{Value{Kind: KindFloat, Float: math.NaN()}, `"NaN"`},
		{BoolValue(true), `true`},
		{BoolValue(false), `false`},
		// An array is its JSON form itself, never a string of it.
		{Value{Kind: KindArray, Bytes: []byte(`[1,null,"a"]`)}, `[1,null,"a"]`},
		{Value{Kind: KindArray, Bytes: []byte(`{"lower":[0],"elements":[1]}`)}, `{"lower":[0],"elements":[1]}`},
		{Value{Kind: KindFloat, Float: 0.25}, `0.25`},
		{Value{Kind: KindDecimal, Bytes: []byte("1.50")}, `"1.50"`},
		{Value{Kind: KindBytes, Bytes: []byte{0, 1}}, `"AAE="`},
		// JSON is its text in a string, so the document null and SQL NULL
		// differ and digits and spacing survive; embedding is opted into.
		{Value{Kind: KindJSON, Bytes: []byte(`[1, 2]`)}, `"[1, 2]"`},
		{Value{Kind: KindJSON, Bytes: []byte(`null`)}, `"null"`},
		{Value{Kind: KindJSON, Bytes: []byte(`{"n":1.10,"s":"\u00e9"}`)}, `"{\"n\":1.10,\"s\":\"\\u00e9\"}"`},
		{Value{Kind: KindEmbeddedJSON, Bytes: []byte(`[1, 2]`)}, `[1, 2]`},
		{Value{Kind: KindEmbeddedJSON, Bytes: []byte(`null`)}, `null`},
		{Value{Kind: KindEmbeddedJSON, Bytes: []byte(`{bad`)}, `"{bad"`},
		// Signed integers beyond ±2^53 are strings, as unsigned ones are
		// (docs/types.md): a JSON reader using doubles cannot round them.
		{iv(1 << 53), `9007199254740992`},
		{iv(-(1 << 53)), `-9007199254740992`},
		{iv(1<<53 + 1), `"9007199254740993"`},
		{iv(-(1 << 53) - 1), `"-9007199254740993"`},
		{iv(math.MaxInt64), `"9223372036854775807"`},
		{iv(math.MinInt64), `"-9223372036854775808"`},
		{Value{Kind: KindUint, Uint: 1 << 53}, `9007199254740992`},
		{Value{Kind: KindUint, Uint: 1<<53 + 1}, `"9007199254740993"`},
		{sv("a\"<\n"), `"a\"\u003c\n"`},
	} {
		if got := string(c.v.AppendJSON(nil)); got != c.want {
			t.Errorf("%v: %s, want %s", c.v.Kind, got, c.want)
		}
	}
}

// TestRowVersionWorkedExample pins the example of docs/storage-format.md:
// row ("eu", -2) of a dataset whose dictionary is [region id title], in
// full at its insert, then a delta setting title to NULL.
func TestRowVersionWorkedExample(t *testing.T) {
	vals := []Value{sv("eu"), iv(-2), sv("ALIEN")}
	var cells [][]byte
	for _, v := range vals {
		cells = append(cells, appendColumnValue(nil, v))
	}
	full := appendVersion(nil, true, []int{0, 1, 2}, cells)
	if got, want := fmt.Sprintf("% x", full), "01 03 00 05 02 65 75 01 01 03 02 05 05 41 4c 49 45 4e"; got != want {
		t.Fatalf("full version %s, want %s", got, want)
	}
	delta := appendVersion(nil, false, []int{2}, [][]byte{appendColumnValue(nil, Value{})})
	if got, want := fmt.Sprintf("% x", delta), "02 01 02 00"; got != want {
		t.Fatalf("delta %s, want %s", got, want)
	}
	var st resolvedRow
	if err := st.resolveCells([]store.Cell{
		{Timestamp: 9, Kind: store.KindPut, Value: delta},
		{Timestamp: 7, Kind: store.KindPut, Value: full},
	}, txn.NewVisibility(9, nil), 3); err != nil {
		t.Fatal(err)
	}
	rb := newRowBuilder(Schema{Columns: []Column{{Name: "region"}, {Name: "id"}, {Name: "title"}}}, []int{0, 1, 2}, []int{0, 1}, []int{0, 1, 2})
	got, err := rb.appendJSON(nil, &st)
	if err != nil || string(got) != `{"region":"eu","id":-2,"title":null}` {
		t.Fatalf("resolved %s, %v", got, err)
	}
}

// TestParseValueServedForms: the served text of booleans and non-finite
// floats parses back to the same value (keys in URLs and CLI arguments).
func TestParseValueServedForms(t *testing.T) {
	for _, v := range []Value{BoolValue(true), BoolValue(false), {Kind: KindFloat, Float: math.Inf(1)},
		{Kind: KindFloat, Float: math.Inf(-1)}, {Kind: KindFloat, Float: math.NaN()}} {
		got, err := ParseValue(v.Kind, v.String())
		if err != nil || !got.Equal(v) {
			t.Errorf("%s %s: got %v, %v", v.Kind, v, got, err)
		}
	}
	if _, err := ParseValue(KindBool, "1"); !errors.Is(err, ErrBadKey) {
		t.Errorf("bool 1: %v", err)
	}
	// A date of a datetime key is refused, saying the form wanted.
	if _, err := ParseValue(KindDateTime, "2026-01-02"); !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "(want YYYY-MM-DD HH:MM:SS") {
		t.Errorf("datetime 2026-01-02: %v", err)
	}
	if v, err := ParseValue(KindDateTime, "2026-01-02T09:00:00+00"); err != nil || v.String() != "2026-01-02 09:00:00+00" {
		t.Errorf("datetime with a T: %v, %v", v, err)
	}
}
