package snapshot

// Partitioned tables of a run of named tables: a table of a TablesRun
// whose partitions PartitionWriters write, in whichever process owns each
// (OpenPartition with PartitionSpec.Table), as the partitions of a
// PartitionedRun are written (run_partition.go). The TablesRun's
// coordinator holds the one writer slot and transaction for every table;
// each table's TableWriter adds up its partitions' reports instead of
// taking rows, and the run's Commit writes the one version covering every
// table (D3, D9), partitioned or not. A table with a partition that never
// reported fails the Commit, which aborts the run: nothing any partition
// of any table wrote is then visible (D4).

import (
	"fmt"
	"strconv"
)

// tableParts is what a table's TableWriter knows of its partitions'
// writers: which reported.
type tableParts struct {
	reported []bool
	n        int
}

// tablePrevious returns the view of dataset version prev (nil: none) as
// the previous version of the table tc: nil when prev does not hold the
// table under tc's number, whose rows the table then does not compare
// with.
func tablePrevious(prev *VersionInfo, tc tableConfig) *VersionInfo {
	if prev == nil {
		return nil
	}
	if t, ok := prev.Table(tc.Name); ok && t.Number == tc.Num {
		return tableView(prev, t)
	}
	return nil
}

// Partitions returns the table's count of partitions.
func (w *TableWriter) Partitions() int { return w.tc.Partitions }

// PartitionSpec returns the spec of partition p of the table, for
// OpenPartition in the process that owns it: the run's transaction, the
// dataset's version it compares with, the table's schema, partitions and
// partition key. It makes the table partitioned: from then on it takes
// no Put or Carry, but the reports of its partitions (AddPartition).
// ErrInvalidArgument for a table that took rows already or a partition
// out of range.
func (w *TableWriter) PartitionSpec(p int) (PartitionSpec, error) {
	if w.opened {
		return PartitionSpec{}, fmt.Errorf("%w: table %q took rows in this process; its partitions cannot be written elsewhere", ErrInvalidArgument, w.name)
	}
	if p < 0 || p >= w.tc.Partitions {
		return PartitionSpec{}, fmt.Errorf("%w: table %q: partition %d of %d", ErrInvalidArgument, w.name, p, w.tc.Partitions)
	}
	if w.parts == nil {
		w.parts = &tableParts{reported: make([]bool, w.tc.Partitions)}
	}
	return PartitionSpec{Dataset: w.tr.ds.name, Txn: w.tr.id, Version: w.tr.Version(), Schema: w.r.opts.Schema,
		Partitions: w.tc.Partitions, Partition: p, PartitionKey: w.tc.PartitionKey, Table: w.name, TableNumber: w.num}, nil
}

// AddPartition adds the report of one partition of the table, which
// PartitionSpec made partitioned. A partition reported twice, a checksum
// that does not parse, or compared rows (the ranges a PartitionedRun
// carries over; a table's partitions carry none) are ErrInvalidArgument.
func (w *TableWriter) AddPartition(rep PartitionReport) error {
	tp := w.parts
	switch {
	case tp == nil:
		return fmt.Errorf("%w: table %q is not partitioned (no PartitionSpec was taken)", ErrInvalidArgument, w.name)
	case w.finished:
		return fmt.Errorf("%w: table %q is finished", ErrRunClosed, w.name)
	case rep.Partition < 0 || rep.Partition >= len(tp.reported):
		return fmt.Errorf("%w: table %q: partition %d of %d", ErrInvalidArgument, w.name, rep.Partition, len(tp.reported))
	case tp.reported[rep.Partition]:
		return fmt.Errorf("%w: table %q: partition %d reported twice", ErrInvalidArgument, w.name, rep.Partition)
	case rep.Compared != nil:
		return fmt.Errorf("%w: table %q: partition %d reports compared rows; a table's partitions carry no ranges", ErrInvalidArgument, w.name, rep.Partition)
	}
	sum, err := strconv.ParseUint(rep.Stats.Checksum, 16, 64)
	if err != nil {
		return fmt.Errorf("%w: table %q: partition %d: checksum %q", ErrInvalidArgument, w.name, rep.Partition, rep.Stats.Checksum)
	}
	tp.reported[rep.Partition] = true
	tp.n++
	w.r.addReport(rep, sum)
	return nil
}

// finishPartitioned finishes a partitioned table: every partition must
// have reported (its writes are then made and synced by its writer).
func (w *TableWriter) finishPartitioned() error {
	if err := w.r.usable(); err != nil {
		return err
	}
	if w.parts.n != len(w.parts.reported) {
		return fmt.Errorf("%w: %d of %d partitions reported", ErrInvalidArgument, w.parts.n, len(w.parts.reported))
	}
	w.r.publishStats()
	w.finished = true
	return nil
}
