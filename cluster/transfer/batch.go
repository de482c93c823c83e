package transfer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// RunKey names one run: its dataset and transaction id.
type RunKey struct {
	Dataset string
	Txn     int64
}

func (k RunKey) String() string { return fmt.Sprintf("%s@%d", k.Dataset, k.Txn) }

// Stream is one partition of one run: the unit of order, sequence numbers
// and acknowledgement (X3).
type Stream struct {
	RunKey
	Partition int
}

// Row is one source row of a batch: its row key and its encoded cell
// values, one per column of the batch, in column order. The transfer layer
// does not look inside them.
type Row struct {
	Key    []byte
	Values [][]byte
}

// Batch is the unit a run sends to a partition's owner (X3): rows of one
// stream, or the stream's end.
//
// A Batch a Handler receives, and every slice in it, is valid only until
// Apply returns: its bytes are the decoded frame's.
type Batch struct {
	Stream
	// Origin is the id of the node that sent the stream (the run's
	// coordinator); kept when a batch is forwarded (X6).
	Origin string
	// Epoch is the partition table epoch of the run.
	Epoch int64
	// Seq numbers the stream's batches from 1; Run.Send assigns it.
	Seq uint64
	// End marks the stream's last batch: it holds no rows, and Total is
	// the number of rows the stream carried.
	End   bool
	Total int64
	// Columns names the values of every row, in order.
	Columns []string
	Rows    []Row
}

// Compression is what a batch's frame compresses with zstd (X4): nothing,
// its metadata section (stream header, column names, row keys and every
// length), or both sections.
type Compression uint8

// The compressions.
const (
	CompressNone Compression = iota
	CompressMetadata
	CompressAll
)

var compressionNames = [...]string{"none", "metadata", "all"}

func (c Compression) String() string {
	if int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return fmt.Sprintf("compression(%d)", c)
}

// ParseCompression parses none, metadata or all.
func ParseCompression(s string) (Compression, error) {
	for i, n := range compressionNames {
		if n == s {
			return Compression(i), nil
		}
	}
	return 0, fmt.Errorf("transfer: unknown compression %q (want none, metadata or all)", s)
}

// maxSection bounds a decoded section of a batch, so that a corrupt or
// hostile frame cannot make the receiver allocate without limit.
const maxSection = maxFrame

// zstd encoders and decoders are safe for concurrent EncodeAll and
// DecodeAll; one of each serves the process.
var (
	zstdOnce sync.Once
	zenc     *zstd.Encoder
	zdec     *zstd.Decoder
)

func codecs() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		var err error
		zenc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err) // the options are constant
		}
		zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxSection))
		if err != nil {
			panic(err)
		}
	})
	return zenc, zdec
}

// encodeBatch returns the BATCH frame of b (header and payload) compressed
// as c, and its count of rows. The payload is
//
//	uvarint(len(meta')) meta' values'
//
// meta' being the metadata section, zstd-compressed unless c is none, and
// values' the values section, compressed when c is all. The metadata
// section:
//
//	str(origin) str(dataset) varint(txn) uvarint(partition) varint(epoch)
//	uvarint(seq) byte(end) varint(total)
//	uvarint(columns) str(column)...
//	uvarint(rows) [str(key) uvarint(len(value))...]...
//
// str being uvarint(len) then the bytes; the values section is every
// value's bytes, row by row, in column order.
func encodeBatch(b *Batch, c Compression, fwd bool) ([]byte, error) {
	for i, r := range b.Rows {
		if len(r.Values) != len(b.Columns) {
			return nil, fmt.Errorf("transfer: row %d has %d values for %d columns", i, len(r.Values), len(b.Columns))
		}
	}
	meta := make([]byte, 0, 64+16*len(b.Columns)+16*len(b.Rows)*(1+len(b.Columns)))
	meta = appendString(meta, b.Origin)
	meta = appendString(meta, b.Dataset)
	meta = binary.AppendVarint(meta, b.Txn)
	meta = binary.AppendUvarint(meta, uint64(b.Partition))
	meta = binary.AppendVarint(meta, b.Epoch)
	meta = binary.AppendUvarint(meta, b.Seq)
	if b.End {
		meta = append(meta, 1)
	} else {
		meta = append(meta, 0)
	}
	meta = binary.AppendVarint(meta, b.Total)
	meta = binary.AppendUvarint(meta, uint64(len(b.Columns)))
	for _, c := range b.Columns {
		meta = appendString(meta, c)
	}
	meta = binary.AppendUvarint(meta, uint64(len(b.Rows)))
	n := 0
	for _, r := range b.Rows {
		meta = appendBytes(meta, r.Key)
		for _, v := range r.Values {
			meta = binary.AppendUvarint(meta, uint64(len(v)))
			n += len(v)
		}
	}
	vals := make([]byte, 0, n)
	for _, r := range b.Rows {
		for _, v := range r.Values {
			vals = append(vals, v...)
		}
	}
	enc, _ := codecs()
	if c >= CompressMetadata {
		meta = enc.EncodeAll(meta, nil)
	}
	if c == CompressAll {
		vals = enc.EncodeAll(vals, nil)
	}
	payload := len(meta) + len(vals) + binary.MaxVarintLen64
	if payload > maxFrame {
		return nil, fmt.Errorf("transfer: a batch of %d bytes exceeds the frame limit of %d", payload, maxFrame)
	}
	flags := byte(c)
	if fwd {
		flags |= flagForwarded
	}
	frame := make([]byte, frameHeader, frameHeader+payload)
	frame = binary.AppendUvarint(frame, uint64(len(meta)))
	frame = append(frame, meta...)
	frame = append(frame, vals...)
	putHeader(frame, frameBatch, flags, len(frame)-frameHeader)
	return frame, nil
}

// errCorrupt is a frame whose bytes do not decode.
var errCorrupt = errors.New("transfer: corrupt batch")

// decodeBatch decodes the payload of a BATCH frame with the given flags.
// The batch's slices point into the payload or into freshly decompressed
// buffers.
func decodeBatch(flags byte, payload []byte) (*Batch, error) {
	c := Compression(flags & flagCompression)
	if c > CompressAll {
		return nil, fmt.Errorf("%w: compression %d", errCorrupt, c)
	}
	mlen, k := binary.Uvarint(payload)
	if k <= 0 || mlen > uint64(len(payload)-k) {
		return nil, fmt.Errorf("%w: metadata length", errCorrupt)
	}
	meta, vals := payload[k:k+int(mlen)], payload[k+int(mlen):]
	_, dec := codecs()
	var err error
	if c >= CompressMetadata {
		if meta, err = dec.DecodeAll(meta, nil); err != nil {
			return nil, fmt.Errorf("%w: metadata: %v", errCorrupt, err)
		}
	}
	if c == CompressAll {
		if vals, err = dec.DecodeAll(vals, nil); err != nil {
			return nil, fmt.Errorf("%w: values: %v", errCorrupt, err)
		}
	}
	d := decoder{b: meta}
	b := &Batch{}
	b.Origin = string(d.bytes())
	b.Dataset = string(d.bytes())
	b.Txn = d.varint()
	b.Partition = int(d.uvarint())
	b.Epoch = d.varint()
	b.Seq = d.uvarint()
	b.End = d.byte() == 1
	b.Total = d.varint()
	ncols := d.count()
	b.Columns = make([]string, 0, ncols)
	for range ncols {
		b.Columns = append(b.Columns, string(d.bytes()))
	}
	nrows := d.count()
	if d.err == nil && ncols > 0 && nrows > len(d.b)/ncols {
		d.err = errCorrupt // every value needs at least one length byte
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: header", errCorrupt)
	}
	b.Rows = make([]Row, 0, nrows)
	vs := make([][]byte, nrows*ncols) // one allocation for every row's values
	for i := range nrows {
		r := Row{Key: d.bytes(), Values: vs[i*ncols : (i+1)*ncols : (i+1)*ncols]}
		for j := range ncols {
			n := d.uvarint()
			if n > uint64(len(vals)) {
				return nil, fmt.Errorf("%w: value length", errCorrupt)
			}
			r.Values[j], vals = vals[:n:n], vals[n:]
		}
		b.Rows = append(b.Rows, r)
	}
	if d.err != nil || len(d.b) != 0 || len(vals) != 0 {
		return nil, fmt.Errorf("%w: rows", errCorrupt)
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decoder reads the fields of a frame; the first error sticks and later
// reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errCorrupt
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// count reads a count of items that each take at least one byte.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
