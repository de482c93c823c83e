package adapters

import (
	"bytes"
	"context"
	"testing"

	"github.com/snapstore/snapstore/snapshot"
)

// fakeRows is a TableReader of n rows: an int key and a value of width
// bytes, the row's number repeated.
type fakeRows struct {
	n, width, i int
	buf         []byte
	row         []snapshot.Value
}

func (f *fakeRows) Schema() snapshot.Schema {
	return snapshot.Schema{Columns: make([]snapshot.Column, 2)}
}
func (f *fakeRows) Table() Resource { return Resource{} }
func (f *fakeRows) Err() error      { return nil }
func (f *fakeRows) Close() error    { return nil }
func (f *fakeRows) Values() []snapshot.Value {
	return f.row
}
func (f *fakeRows) Next(context.Context) bool {
	if f.i == f.n {
		return false
	}
	f.i++
	f.buf = bytes.Repeat([]byte{byte(f.i)}, f.width)
	f.row = []snapshot.Value{{Kind: snapshot.KindInt, Int: int64(f.i)}, {Kind: snapshot.KindBytes, Bytes: f.buf}}
	return true
}

// TestPrefetch reads tables of narrow and of wide rows through a
// prefetcher: every row arrives, in order and intact; narrow rows are
// copies (the source reader went on), a wide row is the source reader's
// own, lent (the reader waits for it).
func TestPrefetch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, width int
	}{
		{"narrow", 20000, 100},
		{"wide", 12, 3 * prefetchBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeRows{n: tc.n, width: tc.width}
			p := prefetch(t.Context(), src)
			defer p.Close()
			got, lent := 0, 0
			for p.Next(t.Context()) {
				row := p.Values()
				got++
				if row[0].Int != int64(got) || len(row[1].Bytes) != tc.width || row[1].Bytes[0] != byte(got) || row[1].Bytes[tc.width-1] != byte(got) {
					t.Fatalf("row %d: key %d, %d bytes", got, row[0].Int, len(row[1].Bytes))
				}
				if p.cur.lent {
					lent++
					if &row[1].Bytes[0] != &src.buf[0] {
						t.Fatalf("row %d lent, but not the source reader's", got)
					}
				}
			}
			if err := p.Err(); err != nil || got != tc.n {
				t.Fatalf("%d rows of %d, %v", got, tc.n, err)
			}
			if want := map[bool]int{false: 0, true: tc.n}[tc.width > prefetchBytes]; lent != want {
				t.Errorf("%d rows lent, want %d", lent, want)
			}
		})
	}
}
