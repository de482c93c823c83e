package server

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestParquetZstdKeepsEncoders compresses a page of 1 MiB (eight zstd
// blocks) after two GCs, which empty a sync.Pool: the codec Parquet
// pages go through reuses its encoder (arrow-go's allocated a new one and
// its 8 MiB window), and the page decodes back.
func TestParquetZstdKeepsEncoders(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	var page []byte
	for i := 0; len(page) < 1<<20; i++ {
		page = fmt.Appendf(page, "row %d customer-%d-%040x %d.%02d\n", i, i*7919, i*104729, i%100000, i%100)
	}
	dst := make([]byte, 0, codec.CompressBound(int64(len(page))))
	codec.EncodeLevel(dst, page, 1)

	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := codec.EncodeLevel(dst, page, 1)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 512<<10 {
		t.Errorf("compressing a page after two GCs allocated %d bytes, want an encoder kept (under 512 KiB)", n)
	}
	if len(out) >= len(page)/2 {
		t.Errorf("a page of %d bytes compressed to %d", len(page), len(out))
	}
	back, err := compress.Decode(codec, nil, out)
	if err != nil || !bytes.Equal(back, page) {
		t.Fatalf("the page decodes to %d bytes (%v), want the %d written", len(back), err, len(page))
	}
	if _, err := compress.Decode(codec, nil, out[:len(out)/2]); err == nil {
		t.Error("half a page decodes without an error")
	}
}
