package server

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/snapstore/snapstore/internal/jsonstr"
	"github.com/snapstore/snapstore/snapshot"
)

func TestValueText(t *testing.T) {
	cases := []struct {
		v    snapshot.Value
		want string
	}{
		{snapshot.Value{}, ""},
		{snapshot.Value{Kind: snapshot.KindInt, Int: -42}, "-42"},
		{snapshot.Value{Kind: snapshot.KindUint, Uint: math.MaxUint64}, "18446744073709551615"},
		{snapshot.Value{Kind: snapshot.KindFloat, Float: 1.5}, "1.5"},
		{snapshot.Value{Kind: snapshot.KindFloat, Float: math.Inf(-1)}, "-Infinity"},
		{snapshot.Value{Kind: snapshot.KindFloat, Float: math.Inf(1)}, "Infinity"},
		{snapshot.Value{Kind: snapshot.KindFloat, Float: math.NaN()}, "NaN"},
		{snapshot.BoolValue(true), "true"},
		{snapshot.BoolValue(false), "false"},
		{snapshot.Value{Kind: snapshot.KindArray, Bytes: []byte(`[1,null]`)}, `[1,null]`},
		{snapshot.Value{Kind: snapshot.KindDecimal, Bytes: []byte("-12.50")}, "-12.50"},
		{snapshot.Value{Kind: snapshot.KindString, Bytes: []byte("a,\"b\"")}, "a,\"b\""},
		{snapshot.Value{Kind: snapshot.KindBytes, Bytes: []byte{0, 1, 255}}, "AAH/"},
		{snapshot.Value{Kind: snapshot.KindJSON, Bytes: []byte(`{"a":1}`)}, `{"a":1}`},
	}
	for _, c := range cases {
		if got := ValueText(c.v); got != c.want {
			t.Errorf("ValueText(%+v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestAppendJSONString_MatchesEncodingJSON checks the hand-written string
// encoder against encoding/json, escapes and invalid UTF-8 included.
func TestAppendJSONString_MatchesEncodingJSON(t *testing.T) {
	cases := []string{"", "plain", `quote " and \ back`, "<b>&amp;</b>", "ctl \x00\x01\b\f\n\r\t\x1f\x7f",
		"é ü 日本 😀", "bad \xff\xfe utf8 \xe2\x82", "sep \u2028 \u2029", "tail\xc3"}
	for i := 0; i < 256; i++ {
		cases = append(cases, string([]byte{byte(i)}), "a"+string(rune(i))+"b")
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := jsonstr.Append(nil, s); string(got) != string(want) {
			t.Errorf("jsonstr.Append(%q) = %s, want %s", s, got, want)
		}
		if got := jsonstr.Append([]byte("x"), []byte(s)); string(got) != "x"+string(want) {
			t.Errorf("jsonstr.Append([]byte %q) = %s, want x%s", s, got, want)
		}
	}
}
