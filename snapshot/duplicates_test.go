package snapshot

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestDecodeKeyValue: every key kind decodes back from the row key
// encoding, so a repeated key found at commit is named by its values.
func TestDecodeKeyValue(t *testing.T) {
	for _, c := range []struct {
		v    Value
		want string
	}{
		{iv(-2), "(k=-2)"},
		{iv(math.MinInt64), "(k=-9223372036854775808)"},
		{Value{Kind: KindUint, Uint: math.MaxUint64}, "(k=18446744073709551615)"},
		{Value{Kind: KindFloat, Float: -1.5}, "(k=-1.5)"},
		{Value{Kind: KindFloat, Float: 2.25}, "(k=2.25)"},
		{Value{Kind: KindDecimal, Bytes: []byte("-12.50")}, "(k=-12.5)"},
		{Value{Kind: KindDecimal, Bytes: []byte("0.001")}, "(k=0.001)"},
		{Value{Kind: KindDecimal, Bytes: []byte("1200")}, "(k=1200)"},
		{Value{Kind: KindDecimal, Bytes: []byte("0.00")}, "(k=0)"},
		{Value{Kind: KindTime, Bytes: []byte("-838:59:59.5")}, `(k="-838:59:59.500000")`},
		{sv("a\x00b"), `(k="a\x00b")`},
		{Value{Kind: KindBytes, Bytes: []byte{0, 0xff}}, "(k=0x00ff)"},
		{Value{Kind: KindDate, Bytes: []byte("2026-01-02")}, `(k="2026-01-02")`},
	} {
		enc, err := appendKeyValue(nil, c.v)
		if err != nil {
			t.Fatal(err)
		}
		r := &Run{opts: RunOptions{Schema: Schema{Key: []string{"k"}}}}
		if got := r.formatRowKey(enc); got != c.want {
			t.Errorf("%s: %s, want %s", c.v.Kind, got, c.want)
		}
	}
}

// TestDuplicateKeyNamed: a key given twice fails the run with
// ErrDuplicateKey (also an ErrBadKey) naming the key and its columns,
// from Put when the repeat is next to the first, from Commit (the first
// few, with their counts) when the source order had broken before.
func TestDuplicateKeyNamed(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	sch := Schema{Columns: []Column{{Name: "region", Kind: KindString}, {Name: "id", Kind: KindInt}}, Key: []string{"region", "id"}}
	begin := func() *Run {
		r, err := db.BeginRun(ctx, DatasetConfig{Name: "d"}, RunOptions{Schema: sch})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := begin()
	if err := r.Put(ctx, []Value{sv("eu"), iv(1)}); err != nil {
		t.Fatal(err)
	}
	err := r.Put(ctx, []Value{sv("eu"), iv(1)})
	if !errors.Is(err, ErrDuplicateKey) || !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), `(region="eu", id=1)`) {
		t.Fatalf("adjacent repeat: %v", err)
	}
	r.Abort(ctx, "test")

	r = begin()
	for _, row := range [][]Value{{sv("eu"), iv(5)}, {sv("eu"), iv(1)}, {sv("us"), iv(7)}, {sv("us"), iv(6)}, {sv("us"), iv(7)},
		{sv("us"), iv(9)}, {sv("us"), iv(8)}, {sv("us"), iv(9)}, {sv("us"), iv(8)}, {sv("us"), iv(9)}} {
		if err := r.Put(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	_, err = r.Commit(ctx)
	if !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), `(region="us", id=7) 2 times, (region="us", id=8) 2 times, (region="us", id=9) 3 times`) {
		t.Fatalf("repeats found at commit: %v", err)
	}
}
