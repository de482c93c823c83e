package hbase

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/snapstore/snapstore/store"
)

// TestKeyOrder: row keys of the HBase table sort by store table, then by
// row, and a table's rows lie in [tablePrefix, tableEnd) only.
func TestKeyOrder(t *testing.T) {
	alphabet := []byte{0, 1, 2, 'a', 0xfe, 0xff}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() []byte {
		w := make([]byte, rng.IntN(4))
		for i := range w {
			w[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return w
	}
	for range 20000 {
		t1, t2 := string(word()), string(word())
		r1, r2 := word(), word()
		k1, k2 := rowKey(tablePrefix(t1), r1), rowKey(tablePrefix(t2), r2)
		want := bytes.Compare([]byte(t1), []byte(t2))
		if want == 0 {
			want = bytes.Compare(r1, r2)
		}
		if got := bytes.Compare(k1, k2); got != want {
			t.Fatalf("(%q, %q) vs (%q, %q): keys compare %d, want %d", t1, r1, t2, r2, got, want)
		}
		inRange := bytes.Compare(k2, tablePrefix(t1)) >= 0 && bytes.Compare(k2, tableEnd(t1)) < 0
		if inRange != (t1 == t2) {
			t.Fatalf("row %q of table %q in the range of table %q: %v", r2, t2, t1, inRange)
		}
	}
}

func TestValueRoundTrip(t *testing.T) {
	for _, c := range []store.Cell{
		{Row: []byte("r"), Column: []byte("c"), Timestamp: 5, Kind: store.KindPut, Value: []byte("v")},
		{Row: []byte("r"), Column: []byte("c"), Timestamp: 0, Kind: store.KindPut, Value: []byte{}},
		{Row: []byte("r"), Column: []byte("c"), Timestamp: store.MaxTimestamp, Kind: store.KindPut, Value: []byte("top")},
		{Row: []byte("r"), Column: []byte("c"), Timestamp: store.MaxTimestamp - 1, Kind: store.KindDeleteColumn},
		{Row: []byte("r"), Timestamp: store.MaxTimestamp, Kind: store.KindDeleteRow},
	} {
		hts, top := hbaseTimestamp(c.Timestamp)
		if hts > topHBaseTimestamp {
			t.Errorf("%v: HBase timestamp %d is LATEST_TIMESTAMP", c, hts)
		}
		cv := tColumnValue{family: family, qualifier: qualifier(c.Column), timestamp: hts, value: encodeValue(c.Kind, top, c.Value)}
		var got store.Cell
		if !decodeCell(&got, c.Row, &cv) {
			t.Fatalf("%v: not decoded", c)
		}
		if !bytes.Equal(got.Column, c.Column) || got.Timestamp != c.Timestamp || got.Kind != c.Kind ||
			!bytes.Equal(got.Value, c.Value) || (c.Kind != store.KindPut) != (got.Value == nil) {
			t.Errorf("round trip of %+v gave %+v", c, got)
		}
	}
	var c store.Cell
	for _, cv := range []tColumnValue{{qualifier: []byte("_c")}, {qualifier: []byte("c"), value: []byte{1}}, {qualifier: []byte("_c"), value: []byte{9}}} {
		if decodeCell(&c, []byte("r"), &cv) {
			t.Errorf("foreign cell %+v decoded", cv)
		}
	}
}
