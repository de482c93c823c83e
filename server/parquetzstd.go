package server

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// The zstd codec Parquet pages are compressed with: arrow-go's, whose
// encoding is replaced in its codec registry (compress.RegisterCodec) by
// one that keeps its encoders. arrow-go's own pools them in a sync.Pool,
// which a GC empties, and a new encoder allocates a history of its 8 MiB
// window on its first page of more than one zstd block (128 KiB): an
// export that makes garbage quickly allocated one every few GCs, and held
// two windows. Here an encoder's window is 1 MiB, a data page's size
// (parquet's default, which pages exceed by at most one batch of values),
// so the compressed pages are what they were; and the encoders, few, stay.

// parquetZstdWindow is the window of the encoders: matches reach back at
// most this far within a page.
const parquetZstdWindow = 1 << 20

// parquetZstdIdle is the most encoders kept per level between pages.
const parquetZstdIdle = 4

func init() {
	base, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic(err) // arrow-go registers zstd in its own init
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &zstdPages{Codec: base, idle: map[zstd.EncoderLevel][]*zstd.Encoder{}})
}

// zstdPages is arrow-go's zstd codec (decoding and streams) with its own
// EncodeAll encoders.
type zstdPages struct {
	compress.Codec
	mu   sync.Mutex
	idle map[zstd.EncoderLevel][]*zstd.Encoder
}

// DecodeWithError is arrow-go's (compress.ErrorCodec): a malformed
// block is an error, not a panic.
func (z *zstdPages) DecodeWithError(dst, src []byte) ([]byte, error) {
	return compress.Decode(z.Codec, dst, src)
}

func (z *zstdPages) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

// EncodeLevel compresses src as one zstd frame, as arrow-go's codec does
// (no empty frames skipped, entropy coding of all literals).
func (z *zstdPages) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	enc := z.get(l)
	defer z.put(l, enc)
	return enc.EncodeAll(src, dst[:0])
}

func (z *zstdPages) get(l zstd.EncoderLevel) *zstd.Encoder {
	z.mu.Lock()
	if n := len(z.idle[l]); n > 0 {
		enc := z.idle[l][n-1]
		z.idle[l] = z.idle[l][:n-1]
		z.mu.Unlock()
		return enc
	}
	z.mu.Unlock()
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(1),
		zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(parquetZstdWindow))
	if err != nil {
		panic(err) // only for options out of range, which these are not
	}
	return enc
}

func (z *zstdPages) put(l zstd.EncoderLevel, enc *zstd.Encoder) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if len(z.idle[l]) < parquetZstdIdle {
		z.idle[l] = append(z.idle[l], enc)
	}
}
