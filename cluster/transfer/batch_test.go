package transfer

import (
	"bytes"
	"reflect"
	"testing"
)

// TestBatch_RoundTrip encodes batches with each compression and decodes
// them: every field and byte comes back, empty values and keys included.
func TestBatch_RoundTrip(t *testing.T) {
	batches := []*Batch{
		testBatch(3, 9, 50),
		{Stream: Stream{RunKey: RunKey{Dataset: "d", Txn: -1}, Partition: 0}, Columns: []string{"a", ""},
			Rows: []Row{{Key: []byte{}, Values: [][]byte{{}, {0, 1, 2}}}, {Key: []byte{0xff}, Values: [][]byte{{9}, {}}}}},
		{Stream: Stream{RunKey: RunKey{Dataset: "d", Txn: 1 << 62}, Partition: 1023}, End: true, Total: 123456789, Epoch: -5},
	}
	for _, c := range []Compression{CompressNone, CompressMetadata, CompressAll} {
		for i, b := range batches {
			b.Origin, b.Seq = "node-a", uint64(i+1)
			f, err := encodeBatch(b, c, i == 1)
			if err != nil {
				t.Fatal(err)
			}
			if f[0] != frameBatch || Compression(f[1]&flagCompression) != c || (f[1]&flagForwarded != 0) != (i == 1) {
				t.Fatalf("%s batch %d: header % x", c, i, f[:2])
			}
			got, err := decodeBatch(f[1], f[frameHeader:])
			if err != nil {
				t.Fatalf("%s batch %d: %v", c, i, err)
			}
			norm := func(b *Batch) *Batch {
				n := *b
				if n.Columns == nil {
					n.Columns = []string{}
				}
				if n.Rows == nil {
					n.Rows = []Row{}
				}
				for j := range n.Rows {
					n.Rows[j].Key = append([]byte{}, n.Rows[j].Key...)
					for k := range n.Rows[j].Values {
						n.Rows[j].Values[k] = append([]byte{}, n.Rows[j].Values[k]...)
					}
				}
				return &n
			}
			if !reflect.DeepEqual(norm(got), norm(b)) {
				t.Errorf("%s batch %d: got %+v, want %+v", c, i, got, b)
			}
		}
	}
	if _, err := encodeBatch(&Batch{Columns: []string{"a"}, Rows: []Row{{Key: []byte("k")}}}, CompressNone, false); err == nil {
		t.Error("a row with fewer values than columns was encoded")
	}
}

// FuzzDecodeBatch: no input makes decoding panic or allocate without
// bound; truncated and altered frames are errors.
func FuzzDecodeBatch(f *testing.F) {
	for _, c := range []Compression{CompressNone, CompressMetadata, CompressAll} {
		b := testBatch(1, 2, 3)
		b.Origin = "o"
		fr, _ := encodeBatch(b, c, false)
		f.Add(fr[1], fr[frameHeader:])
		f.Add(fr[1], fr[frameHeader:len(fr)-1])
	}
	f.Add(byte(0), []byte{5, 1, 2})
	f.Fuzz(func(t *testing.T, flags byte, payload []byte) {
		b, err := decodeBatch(flags, payload)
		if err == nil {
			// What decodes encodes back to the same rows.
			fr, err := encodeBatch(b, CompressNone, false)
			if err != nil {
				return // a row count mismatch cannot decode; other limits may
			}
			b2, err := decodeBatch(fr[1], fr[frameHeader:])
			if err != nil || len(b2.Rows) != len(b.Rows) {
				t.Fatalf("re-encoded batch: %v", err)
			}
			for i := range b.Rows {
				if !bytes.Equal(b.Rows[i].Key, b2.Rows[i].Key) {
					t.Fatal("key changed")
				}
			}
		}
	})
}

// TestDecodeBatch_Truncated: every prefix of a frame is an error.
func TestDecodeBatch_Truncated(t *testing.T) {
	for _, c := range []Compression{CompressNone, CompressMetadata, CompressAll} {
		b := testBatch(1, 2, 3)
		fr, _ := encodeBatch(b, c, false)
		p := fr[frameHeader:]
		for n := range len(p) {
			if _, err := decodeBatch(fr[1], p[:n]); err == nil {
				t.Fatalf("%s: a prefix of %d of %d bytes decoded", c, n, len(p))
			}
		}
	}
}
