package pebble

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

// randBytes returns a short byte string biased towards the bytes the
// encoding treats specially.
func randBytes(rng *rand.Rand) []byte {
	special := []byte{0x00, 0x01, 0x02, 0xfe, 0xff, 'a'}
	b := make([]byte, rng.IntN(5))
	for i := range b {
		if rng.IntN(4) == 0 {
			b[i] = byte(rng.IntN(256))
		} else {
			b[i] = special[rng.IntN(len(special))]
		}
	}
	return b
}

// TestEscapeOrder checks that esc preserves bytewise order and that no
// encoded string is a prefix of another, on random pairs.
func TestEscapeOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a, b := randBytes(rng), randBytes(rng)
		ea, eb := appendEscaped(nil, a), appendEscaped(nil, b)
		if got, want := bytes.Compare(ea, eb), bytes.Compare(a, b); got != want {
			t.Fatalf("order of %x vs %x: encoded %d, raw %d (%x vs %x)", a, b, got, want, ea, eb)
		}
		if !bytes.Equal(a, b) && (bytes.HasPrefix(ea, eb) || bytes.HasPrefix(eb, ea)) {
			t.Fatalf("%x and %x: one encoding is a prefix of the other (%x, %x)", a, b, ea, eb)
		}
		if len(ea) != escapedLen(a) {
			t.Fatalf("escapedLen(%x) = %d, encoded %d bytes", a, escapedLen(a), len(ea))
		}
		if len(a) > 0 && bytes.Compare(formatKey, ea) >= 0 && bytes.Compare(formatKey, prefixEnd(nil, ea)) < 0 {
			t.Fatalf("the reserved format key lies in the key range of table %x", a)
		}
		put := make([]byte, escapedLen(a))
		if n := putEscaped(put, a); n != len(put) || !bytes.Equal(put, ea) {
			t.Fatalf("putEscaped(%x) = %x, appendEscaped %x", a, put, ea)
		}
	}
}

// TestCellKeyOrder checks that full cell keys sort in store.S5 order (table, row,
// column, timestamp descending) and parse back.
func TestCellKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type cellKey struct {
		table, row, col []byte
		ts              int64
	}
	gen := func() cellKey {
		k := cellKey{table: randBytes(rng), row: randBytes(rng), col: randBytes(rng), ts: rng.Int64N(5)}
		if rng.IntN(10) == 0 {
			k.ts = int64(rng.Uint64() >> 1)
		}
		return k
	}
	encode := func(k cellKey) []byte {
		tp := appendEscaped(nil, k.table)
		a := appendCellKey(nil, tp, k.row, k.col, k.ts)
		b := make([]byte, cellKeyLen(tp, k.row, k.col))
		putCellKey(b, tp, k.row, k.col, k.ts)
		if !bytes.Equal(a, b) {
			t.Fatalf("appendCellKey %x != putCellKey %x", a, b)
		}
		return a
	}
	for range 20000 {
		a, b := gen(), gen()
		want := cmp.Or(bytes.Compare(a.table, b.table), bytes.Compare(a.row, b.row), bytes.Compare(a.col, b.col), cmp.Compare(b.ts, a.ts))
		ka, kb := encode(a), encode(b)
		if got := bytes.Compare(ka, kb); got != want {
			t.Fatalf("%+v vs %+v: keys compare %d, want %d", a, b, got, want)
		}
		p, err := parseCellKey(ka, escapedLen(a.table))
		if err != nil {
			t.Fatalf("parse %x: %v", ka, err)
		}
		row := unescape(nil, ka[p.rowStart:p.rowEnd-termLen])
		col := unescape(nil, ka[p.colStart:p.colEnd-termLen])
		if !bytes.Equal(row, a.row) || !bytes.Equal(col, a.col) || p.ts != a.ts {
			t.Fatalf("parse %x: row %x col %x ts %d, want %+v", ka, row, col, p.ts, a)
		}
		if p.rowEsc != bytes.Contains(a.row, []byte{0}) || p.colEsc != bytes.Contains(a.col, []byte{0}) {
			t.Fatalf("parse %x: escape flags %v %v", ka, p.rowEsc, p.colEsc)
		}
	}
}

// TestWorkedExample pins the bytes printed in the package doc.
func TestWorkedExample(t *testing.T) {
	tp := appendTable(nil, "d/films/0")
	key := appendCellKey(nil, tp, []byte{0x00, 0x2a}, []byte("title"), 7)
	want := "64 2f 66 69 6c 6d 73 2f 30 00 01 00 ff 2a 00 01 74 69 74 6c 65 00 01 ff ff ff ff ff ff ff f8"
	if got := spaced(key); got != want {
		t.Errorf("title key:\ngot  %s\nwant %s", got, want)
	}
	// docs/storage-format.md: row ("eu", -2) as package snapshot encodes it.
	eu := []byte{0x25, 0x65, 0x75, 0x00, 0x01, 0x10, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}
	want = "64 2f 66 69 6c 6d 73 2f 30 00 01 25 65 75 00 ff 01 10 7f ff ff ff ff ff ff fe 00 01 74 69 74 6c 65 00 01 ff ff ff ff ff ff ff f8"
	if got := spaced(appendCellKey(nil, tp, eu, []byte("title"), 7)); got != want {
		t.Errorf("composite row key:\ngot  %s\nwant %s", got, want)
	}
	want = "64 2f 66 69 6c 6d 73 2f 30 00 01 25 65 75 00 ff 01 10 7f ff ff ff ff ff ff fe 00 01 00 01 ff ff ff ff ff ff ff f6"
	if got := spaced(appendCellKey(nil, tp, eu, nil, 9)); got != want {
		t.Errorf("composite row marker:\ngot  %s\nwant %s", got, want)
	}
	if got := spaced(prefixEnd(nil, appendTable(nil, "a"))); got != "61 00 02" {
		t.Errorf("end of table a: %s", got)
	}
	marker := appendCellKey(nil, tp, []byte{0x00, 0x2a}, nil, 7)
	want = "64 2f 66 69 6c 6d 73 2f 30 00 01 00 ff 2a 00 01 00 01 ff ff ff ff ff ff ff f8"
	if got := spaced(marker); got != want {
		t.Errorf("row marker key:\ngot  %s\nwant %s", got, want)
	}
}

func spaced(b []byte) string {
	h := hex.EncodeToString(b)
	var parts []string
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, " ")
}

// TestParseCorrupt feeds malformed keys to the parser: errors, no panic.
func TestParseCorrupt(t *testing.T) {
	for _, k := range []string{"", "t\x00\x01", "t\x00\x01r\x00\x01c\x00\x01", "t\x00\x01r\x00\x05c\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00", "t\x00\x01rc\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00", "t\x00\x01r\x00\x01c\x00\x01x\x00\x00\x00\x00\x00\x00\x00\x00"} {
		if _, err := parseCellKey([]byte(k), 3); err == nil {
			t.Errorf("parse %x: no error", k)
		}
	}
}

// FuzzCellKey checks that any row and column round-trip through a key.
func FuzzCellKey(f *testing.F) {
	f.Add([]byte("r"), []byte("c"), int64(1))
	f.Add([]byte{0, 0xff, 0}, []byte{}, int64(0))
	f.Fuzz(func(t *testing.T, row, col []byte, ts int64) {
		if ts < 0 {
			ts = -(ts + 1)
		}
		tp := appendTable(nil, "tbl")
		k := appendCellKey(nil, tp, row, col, ts)
		p, err := parseCellKey(k, len(tp))
		if err != nil {
			t.Fatal(err)
		}
		if got := unescape(nil, k[p.rowStart:p.rowEnd-termLen]); !bytes.Equal(got, row) {
			t.Fatalf("row %x, want %x", got, row)
		}
		if got := unescape(nil, k[p.colStart:p.colEnd-termLen]); !bytes.Equal(got, col) {
			t.Fatalf("column %x, want %x", got, col)
		}
		if p.ts != ts {
			t.Fatalf("ts %d, want %d", p.ts, ts)
		}
	})
}
