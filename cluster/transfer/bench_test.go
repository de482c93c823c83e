package transfer

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// benchRow is row i of the table of make bench (tests/bench/gen.sql.tmpl:
// ten mixed columns, about 200 bytes a row as text), its values encoded as
// snapshot encodes cells: a kind byte, then the value.
func benchRow(i int64) Row {
	s := fmt.Sprint(i)
	md := md5.Sum([]byte(s))
	sh := sha1.Sum([]byte(s))
	sh31 := sha1.Sum([]byte(fmt.Sprint(i * 31)))
	md17 := md5.Sum([]byte(fmt.Sprint(i * 17)))
	i64 := func(v int64) []byte { return binary.BigEndian.AppendUint64([]byte{2}, uint64(v)) }
	text := func(v string) []byte { return append([]byte{5}, v...) }
	key := binary.BigEndian.AppendUint64([]byte{0x01}, uint64(i))
	ratio := []byte{0}
	if i%10 != 0 {
		ratio = binary.BigEndian.AppendUint64([]byte{3}, math.Float64bits(float64(i%1000)/7))
	}
	note := []byte{0}
	if i%3 != 0 {
		note = text(fmt.Sprintf("note %s %s %d", hex.EncodeToString(sh31[:]), hex.EncodeToString(md17[:]), i%977))
	}
	status := []string{"new", "active", "suspended", "closed"}[i%4]
	return Row{Key: key, Values: [][]byte{
		i64(i),
		text(hex.EncodeToString(md[:])[:12]),
		text(fmt.Sprintf("customer-%d-%s", i, hex.EncodeToString(sh[:]))),
		i64((i * 7919) % 100000),
		text(fmt.Sprintf("%d.%02d", (i*104729)%10000000/100, (i*104729)%100)),
		ratio,
		i64(1577836800 + i%100000000),
		text(status),
		note,
		i64(i % 65536),
	}}
}

var benchColumns = []string{"id", "code", "name", "qty", "price", "ratio", "created", "status", "note", "flags"}

// countingHandler applies nothing: it counts rows, so the benchmark
// measures the transfer alone.
type countingHandler struct{ rows atomic.Int64 }

func (h *countingHandler) Apply(_ context.Context, _ string, b *Batch) Outcome {
	h.rows.Add(int64(len(b.Rows)))
	return Applied(nil)
}
func (h *countingHandler) Done(string, RunKey, bool) {}

// BenchmarkTransport sends the rows of the bench table, 500 a batch over 8
// partitions, from one node to another on loopback with TLS, with each
// compression: rows/s through the whole path (encode, queue file, TLS,
// decode, ACK), and the bytes a row on the wire (frames, as counted by
// snapstore_cluster_transfer_sent_bytes_total).
func BenchmarkTransport(b *testing.B) {
	const rowsPerBatch, parts = 500, 8
	batches := make([]*Batch, 0, 40)
	for i := range cap(batches) {
		bt := &Batch{Stream: Stream{Partition: i % parts}, Columns: benchColumns}
		for j := range rowsPerBatch {
			bt.Rows = append(bt.Rows, benchRow(int64(i*rowsPerBatch+j)))
		}
		batches = append(batches, bt)
	}
	for _, c := range []Compression{CompressNone, CompressMetadata, CompressAll} {
		b.Run("compression="+c.String(), func(b *testing.B) {
			ns, ms := newNodes(b, "node-a", "node-b")
			h := &countingHandler{}
			quiet := func(c *Config) { c.Logger = nil }
			ns[1].open(b, ms, h, quiet)
			ta := ns[0].open(b, ms, nil, quiet)
			b.ResetTimer()
			start := time.Now()
			sent := int64(0)
			for i := 0; b.Loop(); i++ {
				r, err := ta.StartRun(RunKey{Dataset: "bench", Txn: int64(i + 1)}, c, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, bt := range batches {
					cp := *bt
					if err := r.Send("node-b", &cp); err != nil {
						b.Fatal(err)
					}
					sent += int64(len(bt.Rows))
				}
				for h.rows.Load() < sent {
					time.Sleep(100 * time.Microsecond)
				}
				r.End(true)
			}
			el := time.Since(start)
			wire := testutil.ToFloat64(ta.metrics.sentBytes.WithLabelValues("node-b"))
			b.ReportMetric(float64(sent)/el.Seconds(), "rows/s")
			b.ReportMetric(wire/float64(sent), "wire_bytes/row")
		})
	}
}
