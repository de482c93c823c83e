// Package partitionrun runs partitioned runs across the nodes of a
// cluster (cluster.K14; docs/rfcs/20261202_partitioned_runs.md): a run of
// a partition-by-key adapter reads its source once on its coordinator,
// which sends each row (package transfer) to the owner of its partition
// at the epoch of the partition table (placement.Partitions) the run
// began at; the owners compare and write their partitions
// (snapshot.PartitionWriter) and report with the ACK of each stream's
// END; the coordinator commits with the sum of the reports. A run that
// reads only the key ranges whose source checksums changed names the
// others in its record, and every owner carries them over
// (snapshot.PartitionSpec.Carried).
//
// Runs is both sides on one node: the coordinator (coordinator.go,
// adapters.Partitioner) and the owner (owner.go, transfer.Handler);
// runs.go holds its configuration, the run record and the metrics.
package partitionrun
