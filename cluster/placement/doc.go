// Package placement says where work goes in a cluster, from a node's view
// of the membership (package cluster): the owner of a name by weighted
// rendezvous over the active nodes (cluster.K6), the rotation of
// round-robin adapters, the single node of single-node adapters, and
// hand-offs to another node's API (Placement, package adapters'
// adapters.Cluster); the node list kept in the metadata table (cluster.K11,
// cluster.K12); and the partition table of partitioned runs, its
// rebalance steps and the keeper that writes them (cluster.K13).
//
// # What is here
//
//   - rendezvous.go: weighted rendezvous (highest random weight) placement.
//   - partitions.go: the placement of the partitions of partitioned runs,
//     rendezvous with bounded loads (Rebalance).
//   - partitiontable.go: the partition table in the metadata table, with
//     its epoch, changed by compare-and-set (Partitions, Keeper).
//   - partitionkeeper.go: the keeper's loop over the partition table.
//   - nodelist.go: the node list kept in the metadata table.
//   - nodekeeper.go: this node's entry of the node list, the others'
//     entries, config mismatches.
//   - placement.go: Placement: owners, the rotation, the single node,
//     hand-offs (handoff.go), definitions across the cluster
//     (definitions.go) and ownership moves (ownership.go).
//
// The rules are package cluster's (cluster.K6 to cluster.K13); the state
// kept here lives in the metadata table through package records.
//
// # Goroutines
//
// Placement.Start starts the placement loop, the one reader of the
// membership's Changed and Hints, and the partition keeper's loop
// (partitionKeeper.loop, cluster.K13), which the placement loop pokes when
// the members change.
package placement
