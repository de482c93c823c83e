package partitionrun

import (
	"fmt"
	"strconv"

	"github.com/snapstore/snapstore/snapshot"
)

// The streams of a run: one per partition of a dataset of one table; for
// a run of a dataset of named tables (runRecord.Tables), one per
// partition of each table, stream s being partition s%P of table s/P
// (P the run's partitions, one per owner listed), so that every table's partitions go to the owners
// of the partition table at the run's epoch over one transfer run
// (transfer.Stream.Partition carries the stream).

// tableRecord is one table of a run of named tables in its record.
type tableRecord struct {
	Name         string          `json:"name"`
	Number       int             `json:"number"`
	Schema       snapshot.Schema `json:"schema"`
	PartitionKey []string        `json:"partition_key,omitempty"`
}

// streams returns the count of the run's streams.
func (rec *runRecord) streams() int { return len(rec.Owners) * max(len(rec.Tables), 1) }

// ownerOf returns the owner of stream s's partition.
func (rec *runRecord) ownerOf(s int) string { return rec.Owners[s%len(rec.Owners)] }

// schemaOf returns the schema of stream s's rows.
func (rec *runRecord) schemaOf(s int) snapshot.Schema {
	if len(rec.Tables) == 0 {
		return rec.Schema
	}
	return rec.Tables[s/len(rec.Owners)].Schema
}

// spec returns the partition spec of stream s of the run of dataset.
func (rec *runRecord) spec(dataset string, s int) snapshot.PartitionSpec {
	sp := snapshot.PartitionSpec{Dataset: dataset, Txn: rec.Txn, Version: rec.Version, Schema: rec.Schema, Partitions: rec.Partitions,
		Partition: s % len(rec.Owners), PartitionKey: rec.PartitionKey, Carried: rec.Carried}
	if len(rec.Tables) > 0 {
		t := rec.Tables[s/len(rec.Owners)]
		sp.Schema, sp.PartitionKey, sp.Table, sp.TableNumber, sp.Carried = t.Schema, t.PartitionKey, t.Name, t.Number, nil
	}
	return sp
}

// streamName names stream s in messages: its partition, and its table
// in a run of named tables.
func (rec *runRecord) streamName(s int) string {
	if len(rec.Tables) == 0 {
		return strconv.Itoa(s)
	}
	return fmt.Sprintf("%d of %s", s%len(rec.Owners), rec.Tables[s/len(rec.Owners)].Name)
}
