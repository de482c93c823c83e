package adapters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// Partitioned runs (L4): a run of a partition-by-key adapter reads its
// source once, on the node where it happens (the coordinator), and the
// cluster spreads the rows over the owners of their partitions, which
// compare and write them (package cluster, docs/cluster.md). The runner
// reads and puts rows as for any run; only the writer differs.

// Partitioner begins partitioned runs on this node: package cluster's
// coordinator. Options.Partitioner.
type Partitioner interface {
	// BeginPartitioned begins a run of req.Config.Name as its
	// coordinator: the writer slot and transaction here (snapshot.W1),
	// the rows sent to their partitions' owners by Put, the commit by
	// Commit once every partition reported.
	BeginPartitioned(ctx context.Context, req PartitionedRun) (RunWriter, error)
	// Partitions returns the count of partitions a run begun now
	// writes, as the partition table has it (0 before it has one): a
	// dataset of another count refuses the run
	// (snapshot.ErrPartitionCount).
	Partitions() int
}

// TablesPartitioner spreads the partitions of a run of named tables over
// the cluster: package cluster's coordinator. Options.Partitioner, when
// it has partitioned runs of named tables.
type TablesPartitioner interface {
	// PartitionTables makes run, begun on this node with every table of
	// Partitions partitions, write each table's partitions on their
	// owners: the rows go in by each table's TableRows, the one version
	// is committed by Commit once every partition of every table
	// reported.
	PartitionTables(ctx context.Context, run *snapshot.TablesRun, req PartitionedTables) (TablesWriter, error)
}

// PartitionedTables is what PartitionTables needs of a run.
type PartitionedTables struct {
	// Compression is the adapter's transfer_compression.
	Compression string
	// RunID is the run's id (its record).
	RunID string
}

// TablesWriter is a run of named tables whose partitions the cluster
// writes. Commit or Abort end it (and the snapshot.TablesRun).
type TablesWriter interface {
	// Table returns the writer of the rows of the table name, nil when
	// the run has no such table; the writers of different tables may be
	// used at once.
	Table(name string) TableRows
	Stats() snapshot.RunStats
	Commit(ctx context.Context) (snapshot.VersionInfo, error)
	Verified() bool
	Abort(ctx context.Context, reason string) error
}

// TableRows takes the rows of one table of a TablesWriter, then Finish
// waits for its partitions' reports.
type TableRows interface {
	Put(ctx context.Context, vals []snapshot.Value) error
	// Stats returns the counts of the table's partitions reported so far.
	Stats() snapshot.RunStats
	Finish(ctx context.Context) error
}

// PartitionedRun is what BeginPartitioned needs of a run.
type PartitionedRun struct {
	Config  snapshot.DatasetConfig
	Options snapshot.RunOptions
	// Compression is the adapter's transfer_compression.
	Compression string
	// RunID is the run's id (its record).
	RunID string
	// Carried, when set, are the key ranges of the current version whose
	// source checksums matched: the run reads and sends none of their
	// rows, and every partition's owner carries them over
	// (snapshot.PartitionSpec.Carried).
	Carried *CarriedRanges
}

// CarriedRanges are the key ranges of a version a partitioned run
// carries over unread.
type CarriedRanges struct {
	// Version is the version whose digest the ranges come from: the run
	// must compare with it (snapshot.PartitionedRun.Carry).
	Version int64
	Ranges  []snapshot.KeyRange
	// Rows is the count of the ranges' rows, as the digest has it.
	Rows int64
}

// RunWriter is what a run writes its rows into: a *snapshot.Run, or a
// partitioned run's coordinator.
type RunWriter interface {
	TxnID() int64
	Put(ctx context.Context, vals []snapshot.Value) error
	Stats() snapshot.RunStats
	Commit(ctx context.Context) (snapshot.VersionInfo, error)
	// Verified reports whether Commit found nothing changed and recorded
	// the previous version verified instead (RunOptions.VerifyUnchanged).
	Verified() bool
	Abort(ctx context.Context, reason string) error
}

var _ RunWriter = (*snapshot.Run)(nil)

// Compressions of the rows a partitioned run sends between nodes
// (api.Adapter.TransferCompression): none, the metadata section (keys,
// column names, framing), or everything, with zstd.
var transferCompressions = []string{"none", "metadata", "all"}

// parseTransferCompression checks an adapter's transfer_compression: one
// of transferCompressions ("" is none), and only on a partition-by-key
// adapter, whose runs are the only ones that send rows.
func parseTransferCompression(key string, s Strategy, c string) (string, error) {
	if c == "" {
		return "", nil
	}
	if s != StrategyPartitionByKey {
		return "", &OptionError{Key: key, Msg: fmt.Sprintf("applies to strategy %s only, whose runs send rows between nodes; this adapter's strategy is %s", StrategyPartitionByKey, s)}
	}
	for _, k := range transferCompressions {
		if c == k {
			return c, nil
		}
	}
	return "", &OptionError{Key: key, Msg: fmt.Sprintf("want none, metadata or all, got %q", c)}
}

// checkPartitionKey checks an adapter's partition_key: only on a
// partition-by-key adapter, names neither empty nor repeated. Whether
// the source has the columns is checked with the resource
// (partitionKeyInSource) and again by every run (snapshot.ErrPartitionKey).
func checkPartitionKey(key string, s Strategy, pk []string) []error {
	if len(pk) == 0 {
		return nil
	}
	if s != StrategyPartitionByKey {
		return []error{&OptionError{Key: key, Msg: fmt.Sprintf("applies to strategy %s only, whose runs place rows on nodes by it; this adapter's strategy is %s", StrategyPartitionByKey, s)}}
	}
	var errs []error
	seen := map[string]bool{}
	for i, c := range pk {
		if c == "" || seen[c] {
			errs = append(errs, &OptionError{Key: fmt.Sprintf("%s[%d]", key, i), Msg: "empty or repeated column name"})
		}
		seen[c] = true
	}
	return errs
}

// partitionKeyInSource checks that every partition_key column of spec is
// a column of its resource, whose schema is schema.
func partitionKeyInSource(spec api.Adapter, schema snapshot.Schema) error {
	var errs []error
	for i, c := range spec.PartitionKey {
		if !slices.ContainsFunc(schema.Columns, func(col snapshot.Column) bool { return col.Name == c }) {
			names := make([]string, len(schema.Columns))
			for j, col := range schema.Columns {
				names[j] = col.Name
			}
			errs = append(errs, &OptionError{Key: fmt.Sprintf("partition_key[%d]", i),
				Msg: fmt.Sprintf("%q is not a column of %s (its columns: %s)", c, spec.Resource, strings.Join(names, ", "))})
		}
	}
	return errors.Join(errs...)
}

// beginWriter begins the writer of a run of spec: a partitioned run's
// coordinator for a partition-by-key adapter, a snapshot.Run otherwise.
// A partitioned run carries the ranges carried over (nil: none).
func (s *Service) beginWriter(ctx context.Context, spec api.Adapter, cfg snapshot.DatasetConfig, opts snapshot.RunOptions, runID string, carried *CarriedRanges) (RunWriter, error) {
	if Strategy(spec.Strategy) != StrategyPartitionByKey {
		return s.db.BeginRun(ctx, cfg, opts)
	}
	if s.partitioner == nil {
		return nil, s.notPartitioned(spec)
	}
	cfg.PartitionKey = spec.PartitionKey
	return s.partitioner.BeginPartitioned(ctx, PartitionedRun{Config: cfg, Options: opts, Compression: spec.TransferCompression, RunID: runID, Carried: carried})
}

// notPartitioned is the error of a partition-by-key run on a node that
// has no partitioned runs.
func (s *Service) notPartitioned(spec api.Adapter) error {
	return fmt.Errorf("%w: adapter %q has strategy %s, whose runs spread the rows over the nodes of a cluster by key; this node has no transfer listener (cluster.bind and cluster.transfer.listen, docs/cluster.md), so it cannot run it (or use local, round-robin or single-node)",
		ErrStrategyNotSupported, spec.Name, spec.Strategy)
}

// A partitioned run skips what did not change as a run of one node does
// (checksums.go), from its coordinator: the chunk pass runs there, on the
// run's source connection and inside its snapshot. A run whose chunks all
// match ends verified before any partition's owner is asked for
// anything. A run with some chunks changed reads and sends only the rows
// of those (chunk mode): the others' key ranges go to every owner in the
// run's record, and each owner compares its partition with the current
// version outside them only, carrying their rows over
// (snapshot.PartitionSpec.Carried); a range's rows lie in every
// partition, whatever the partition key. The coordinator does not see the
// checksums the owners compute as they write, so the digest it stores has
// the chunks' keys, rows and source checksums but no sums
// (digest.Unsummed); the owners' reports of what they compared give the
// carried rows' counts and checksum instead.

// placedAsStored reports whether a partitioned run of spec, whose source
// has schema, places its rows as dataset d stores them: the same
// partition key (nil for the row key, as snapshot stores it) and count
// of partitions, or d has no version yet. Only then does the run compare
// checksums: a run of another placement must begin, to fail with
// snapshot.ErrPartitionKey or ErrPartitionCount, rather than end verified.
func (s *Service) placedAsStored(spec api.Adapter, d snapshot.DatasetInfo, schema snapshot.Schema) bool {
	if d.Current == 0 {
		return true
	}
	pk := spec.PartitionKey
	if len(pk) == 0 || slices.Equal(pk, schema.Key) {
		pk = nil
	}
	return slices.Equal(pk, d.PartitionKey) && s.partitioner != nil && d.Partitions == s.partitioner.Partitions()
}

// digestSetter stores a digest with the version a run commits: a
// tableSink, or a partitioned run's coordinator.
type digestSetter interface {
	SetSourceDigest(digest []byte)
}

// digestTo returns where the run's digest goes: the run of this process
// (p.local), or the partitioned run's coordinator; nil when neither
// stores one.
func (p *pull) digestTo() digestSetter {
	if p.local != nil {
		return p.local
	}
	d, _ := p.run.(digestSetter)
	return d
}

// carriedRanges returns the key ranges a partitioned run carries over in
// chunk mode: those of the current version's digest whose source
// checksums matched in the chunk pass, adjacent ones merged; nil when the
// run reads in full (no chunk pass, too many changed, none unchanged).
func (p *pull) carriedRanges() (*CarriedRanges, error) {
	if Strategy(p.spec.Strategy) != StrategyPartitionByKey || p.chunks == nil || p.chunks.full || p.cur == nil {
		return nil, nil
	}
	cr := &CarriedRanges{Version: p.cur.Version}
	var lo []byte
	for i, c := range p.prev.Chunks {
		key, err := parseDigestKey(c.Hi)
		if err != nil {
			return nil, fmt.Errorf("the digest of the current version: %w", err)
		}
		hi, err := snapshot.AppendKey(nil, key)
		if err != nil {
			return nil, fmt.Errorf("the digest of the current version: %w", err)
		}
		if !p.chunks.changed[i] {
			cr.Rows += c.Rows
			if n := len(cr.Ranges); n > 0 && bytes.Equal(cr.Ranges[n-1].Through, lo) {
				cr.Ranges[n-1].Through = hi
			} else {
				cr.Ranges = append(cr.Ranges, snapshot.KeyRange{After: lo, Through: hi})
			}
		}
		lo = hi
	}
	if len(cr.Ranges) == 0 {
		return nil, nil
	}
	return cr, nil
}

// passChanged is the share of the chunks the chunk pass checked that
// changed, which a partitioned run's digest records as the share the run
// changed (its coordinator does not see which chunks the owners changed);
// 0 when no pass ran, so that the run computes the checksums after its
// read.
func (p *pull) passChanged() float64 {
	st := p.chunks
	if st == nil {
		return 0
	}
	n := len(st.changed)
	if st.full {
		n = chunkProbe
	}
	if n == 0 {
		return 0
	}
	return float64(st.nchg) / float64(n)
}
