package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClusterFence starts three snapstore processes with a gossip key and
// transfer listeners over one HBase table, then two strangers with valid
// certificates and the same HBase table: one without the gossip key, one
// with a key the cluster does not use (as after a missed rotation). Only a
// member writes what the nodes share (cluster.K16, docs/cluster.md):
//
//   - neither stranger joins, and each logs once that it writes nothing
//     shared; each sees the three failed after cluster.confirm_failure;
//   - neither writes itself into the node list, records the three
//     failed, or changes the partition table (its epoch and the three's
//     shares stay), over many heartbeats and partition move intervals;
//   - neither owns a partition.
func TestClusterFence(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	_, keyFile := gossipKeyFile(t)
	_, otherKeyFile := gossipKeyFile(t)
	c := partitionedCluster(t, 3, ledgerTable(t, 10), "10s", "SNAPSTORE_CLUSTER_GOSSIP_KEY_FILE="+keyFile)
	n1 := c.nodes[0]
	epoch := n1.metric(t, "snapstore_cluster_partition_table_epoch")
	owned := c.owned()
	t.Logf("three members: epoch %v, partitions owned %v", epoch, owned)

	// A stranger on 127.0.0.(4+i), with the others' certificates and
	// table, joining node 1 with key file key ("" for none).
	stranger := func(i int, key string) *proc {
		host := "127.0.0." + string(rune('4'+i))
		data, id := c.newDataDir()
		e := append(without(c.env, "SNAPSTORE_CLUSTER_GOSSIP_KEY_FILE"),
			"SNAPSTORE_DATA="+data,
			"SNAPSTORE_LISTEN="+host+":0",
			"SNAPSTORE_CLUSTER_BIND="+gossipAddr(t, host),
			"SNAPSTORE_CLUSTER_JOIN="+c.gossip[0],
			"SNAPSTORE_CLUSTER_TRANSFER_LISTEN="+gossipAddr(t, host),
			"SNAPSTORE_CLUSTER_TRANSFER_CERT_FILE="+filepath.Join(c.certs, id+".crt"),
			"SNAPSTORE_CLUSTER_TRANSFER_KEY_FILE="+filepath.Join(c.certs, id+".key"))
		if key != "" {
			e = append(e, "SNAPSTORE_CLUSTER_GOSSIP_KEY_FILE="+key)
		}
		return startServerWith(t, "no-secret-here", c.cfg, e...)
	}
	strangers := []*proc{stranger(0, ""), stranger(1, otherKeyFile)}
	names := []string{"the keyless node", "the node with another key"}
	var ids []string
	for _, s := range strangers {
		ids = append(ids, s.self(t).ID)
	}
	for i, s := range strangers {
		poll(t, 30*time.Second, names[i]+" sees the three failed", func() bool {
			for _, id := range c.ids {
				if n, ok := member(s.members(t), id); !ok || n.State != "failed" {
					return false
				}
			}
			return true
		})
	}
	// Many heartbeats (500 ms) and partition move intervals (500 ms) after
	// the confirmation delay (3 s).
	time.Sleep(10 * time.Second)

	for i, s := range strangers {
		b, _ := os.ReadFile(s.logPath)
		if n := strings.Count(string(b), `msg="this node has joined no node the node list records live`); n != 1 {
			t.Errorf("%s logged %d times that it is not a member, want once", names[i], n)
		}
		if strings.Contains(string(b), "this node joined the cluster") || strings.Contains(string(b), "failed node recorded in the node list") || strings.Contains(string(b), "partition table changed") {
			t.Errorf("%s acted as a member:\n%s", names[i], b)
		}
		if me := s.self(t); me.Recorded != nil {
			t.Errorf("%s recorded itself in the node list: %+v", names[i], *me.Recorded)
		}
		if got := s.metric(t, "snapstore_cluster_partitions_owned"); got != 0 {
			t.Errorf("%s owns %v partitions", names[i], got)
		}
	}
	for i, p := range c.nodes {
		for _, n := range p.members(t) {
			if slices.Contains(ids, n.ID) {
				t.Errorf("node %d lists the stranger %s: %+v", i+1, n.ID, n)
			}
			if n.Recorded == nil || n.Recorded.State != "active" {
				t.Errorf("node %d sees %s recorded %+v, want active", i+1, n.ID, n.Recorded)
			}
		}
	}
	if got := n1.metric(t, "snapstore_cluster_partition_table_epoch"); got != epoch {
		t.Errorf("partition table epoch %v after the strangers, want %v", got, epoch)
	}
	if got := c.owned(); !slices.Equal(got, owned) {
		t.Errorf("partitions owned %v after the strangers, want %v", got, owned)
	}
}
