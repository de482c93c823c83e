package snapstore

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/snapstore/snapstore/snapshot"
)

// TestParseValueRoundTrip reads back the JSON form the server writes
// (snapshot.Value.AppendJSON) of a value of every kind, edge cases
// included, and wants the same value.
func TestParseValueRoundTrip(t *testing.T) {
	k := func(kind snapshot.Kind, b string) snapshot.Value { return snapshot.Value{Kind: kind, Bytes: []byte(b)} }
	cases := []snapshot.Value{
		{Kind: snapshot.KindInt, Int: 0}, {Kind: snapshot.KindInt, Int: -42}, {Kind: snapshot.KindInt, Int: 1<<53 + 1},
		{Kind: snapshot.KindInt, Int: math.MinInt64}, {Kind: snapshot.KindInt, Int: math.MaxInt64},
		{Kind: snapshot.KindUint, Uint: 7}, {Kind: snapshot.KindUint, Uint: math.MaxUint64},
		{Kind: snapshot.KindFloat, Float: 0.1}, {Kind: snapshot.KindFloat, Float: math.Copysign(0, -1)},
		{Kind: snapshot.KindFloat, Float: 1e300}, {Kind: snapshot.KindFloat, Float: 5e-324},
		{Kind: snapshot.KindFloat, Float: math.Inf(1)}, {Kind: snapshot.KindFloat, Float: math.Inf(-1)},
		{Kind: snapshot.KindFloat, Float: math.NaN()},
		k(snapshot.KindDecimal, "-12.50"), k(snapshot.KindString, ""), k(snapshot.KindString, "a \"q\" <b>&\n\t\u2028 é 日本"),
		k(snapshot.KindString, "null"), k(snapshot.KindBytes, "\x00\xff\xfe binary"), k(snapshot.KindBytes, ""),
		k(snapshot.KindDate, "0000-00-00"), k(snapshot.KindDateTime, "2026-12-05 21:30:00.123456"), k(snapshot.KindTime, "-838:59:59"),
		k(snapshot.KindJSON, `{"a": 1.10, "b":[null]}`), k(snapshot.KindJSON, "null"), k(snapshot.KindGeometry, "\x00\x00\x00\x00\x01\x01"),
		k(snapshot.KindEmbeddedJSON, `{"a":1.10,"b":[true]}`), k(snapshot.KindEmbeddedJSON, `[1, 2]`), k(snapshot.KindEmbeddedJSON, `"s"`),
	}
	for _, want := range cases {
		col := snapshot.Column{Name: "c", Kind: want.Kind, Nullable: true}
		raw := want.AppendJSON(nil)
		got, err := parseValue(col, json.RawMessage(raw))
		if err != nil {
			t.Errorf("%s %s: %v", want.Kind, raw, err)
			continue
		}
		if !got.Equal(want) {
			t.Errorf("%s %s: read back as %#v, want %#v", want.Kind, raw, got, want)
		}
		null, err := parseValue(col, json.RawMessage("null"))
		if err != nil || null.Kind != snapshot.KindNull {
			t.Errorf("%s null: %#v, %v", want.Kind, null, err)
		}
	}
	// The document null of a NOT NULL embedded JSON column.
	got, err := parseValue(snapshot.Column{Name: "c", Kind: snapshot.KindEmbeddedJSON}, json.RawMessage("null"))
	if err != nil || !got.Equal(snapshot.Value{Kind: snapshot.KindEmbeddedJSON, Bytes: []byte("null")}) {
		t.Errorf("NOT NULL embedded null: %#v, %v", got, err)
	}
	for _, bad := range []struct {
		kind snapshot.Kind
		raw  string
	}{{snapshot.KindInt, `1.5`}, {snapshot.KindUint, `-1`}, {snapshot.KindFloat, `"x"`}, {snapshot.KindBytes, `"!!"`}, {snapshot.KindString, `12`}, {snapshot.KindNull, `1`}} {
		if v, err := parseValue(snapshot.Column{Name: "c", Kind: bad.kind}, json.RawMessage(bad.raw)); err == nil {
			t.Errorf("%s %s: read as %#v, want an error", bad.kind, bad.raw, v)
		}
	}
}
