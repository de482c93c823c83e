package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestClusterDeadNodeRuns runs three nodes with transfer listeners over
// one HBase table (docs/cluster.md, "The runs of a dead node" and "When
// an owner is gone for good"):
//
//   - a run on node 3 killed with SIGKILL mid-run: once node 3 is
//     confirmed failed, exactly one survivor records the run aborted with
//     code node_failed naming node 3 (each survivor's runs list shows it
//     so, and no run of node 3 running), and the next run of the dataset
//     succeeds on a survivor once the dead writer slot's lease expired;
//   - a partitioned run whose owner of some partitions is that failed node
//     waits for it (it may come back) while it owns them; forgotten, the
//     run fails at once with node_failed naming it, well before
//     cluster.transfer.owner_wait, and the next run, over the partitions'
//     new owners, succeeds.
func TestClusterDeadNodeRuns(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	src := ledgerTable(t, partitionedRows)
	c := partitionedCluster(t, 3, src, "10m",
		"SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_LEASE=10s", "SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_RENEW=3s")
	nodes, ids := c.nodes, c.ids
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	id3 := ids[2]
	first := n1.mustRun(t, "single")
	spread := n1.mustRun(t, "spread")

	// A run of node 3, killed.
	cli(t, "sqlite", src, "UPDATE ledger SET amount = amount + 1;")
	started := n3.startRun(t, "single", 5000)
	n3.kill()
	killed := time.Now()
	var ended runRecord
	poll(t, 90*time.Second, "the dead node's run ended on both survivors", func() bool {
		for _, p := range []*proc{n1, n2} {
			ended = p.getRun(t, started.ID)
			if ended.Status == "running" {
				return false
			}
		}
		return true
	})
	t.Logf("the run of the killed node ended %s after the kill: %s %s: %s", time.Since(killed).Round(time.Second), ended.Status, ended.Code, ended.Error)
	if ended.Status != "aborted" || ended.Code != "node_failed" || !strings.Contains(ended.Error, id3) || ended.EndedAt == "" {
		t.Errorf("the dead node's run: %+v", ended)
	}
	enders := 0
	for _, p := range []*proc{n1, n2} {
		for _, line := range strings.Split(p.logTail(20000), "\n") {
			if strings.Contains(line, "run of a node gone for good ended") && strings.Contains(line, started.ID) {
				enders++
			}
		}
		for _, r := range p.runs(t, "single", 100) {
			if r.Node == id3 && r.Status == "running" {
				t.Errorf("a run of the dead node is listed running: %+v", r)
			}
		}
	}
	if enders != 1 {
		t.Errorf("%d survivors ended the dead node's run, want 1", enders)
	}
	var next runRecord
	poll(t, 90*time.Second, "a run of single on a survivor", func() bool {
		r, err := n1.runWait("single")
		if err != nil {
			if strings.Contains(err.Error(), "run_in_progress") {
				time.Sleep(time.Second)
				return false
			}
			t.Fatal(err)
		}
		next = r
		return true
	})
	if next.Status != "succeeded" || next.Version <= first.Version || next.Stats.Updated != partitionedRows {
		t.Errorf("the run after the dead node's: %+v", next)
	}
	t.Logf("the next run of single succeeded %s after the kill", time.Since(killed).Round(time.Second))

	// A partitioned run waiting for the failed owner, which still owns
	// its partitions: it waits; forgotten, the run fails at once.
	cli(t, "sqlite", src, "UPDATE ledger SET name = 'again' WHERE id % 3 = 0;")
	run := n1.startRun(t, "spread", 5000)
	poll(t, 2*time.Minute, "the partitioned run done reading, waiting for node 3", func() bool {
		return backlogRows(t, n1, id3) > 0 && n1.getRun(t, run.ID).RowsRead >= partitionedRows
	})
	time.Sleep(3 * time.Second)
	if r := n1.getRun(t, run.ID); r.Status != "running" {
		t.Fatalf("the run waiting for a failed owner that still owns its partitions ended: %s %s %s", r.Status, r.Code, r.Error)
	}
	poll(t, 30*time.Second, "node 3 failed on node 2", func() bool {
		n, _ := member(n2.members(t), id3)
		return n.State == "failed"
	})
	cli(t, "cluster", "forget", id3, "--yes", "--server", n2.base)
	forgotten := time.Now()
	failed := n1.awaitRun(t, run.ID)
	waited := time.Since(forgotten)
	t.Logf("the partitioned run ended %s after the forget: %s %s: %s", waited.Round(time.Millisecond), failed.Status, failed.Code, failed.Error)
	// Which check sees it first is a race: the forget itself, or the
	// failed owner's partitions moved away by the keeper after it.
	if failed.Status != "failed" || failed.Code != "node_failed" || !strings.Contains(failed.Error, id3) ||
		!strings.Contains(failed.Error, "forgotten") && !strings.Contains(failed.Error, "partitions moved") {
		t.Errorf("the run waiting for a forgotten owner: %+v", failed)
	}
	if waited > 30*time.Second {
		t.Errorf("the run waiting for a forgotten owner ended %s after the forget", waited)
	}
	if v := n2.dataset(t, "spread").CurrentVersion; v != spread.Version {
		t.Errorf("after the failed run node 2 reads version %d of spread, want %d", v, spread.Version)
	}
	var after runRecord
	poll(t, 90*time.Second, "a partitioned run over the two survivors", func() bool {
		r, err := n1.runWait("spread")
		if err != nil {
			if strings.Contains(err.Error(), "run_in_progress") {
				time.Sleep(time.Second)
				return false
			}
			t.Fatal(err)
		}
		if r.Status != "succeeded" && r.Code == "node_failed" { // the table not moved yet
			time.Sleep(time.Second)
			return false
		}
		after = r
		return true
	})
	if after.Status != "succeeded" || after.Stats.Rows != partitionedRows {
		t.Errorf("the run after the forget: %+v", after)
	}
	if strings.Contains(n1.logTail(1000)+n2.logTail(1000), "panic") {
		t.Error("a survivor logged a panic")
	}
}
