package transfer

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sendStreams sends batches batches of rows rows on each of parts
// partitions, then each stream's END.
func sendStreams(t *testing.T, r *Run, to string, parts, batches, rows int) {
	t.Helper()
	for i := range batches {
		for p := range parts {
			if err := r.Send(to, testBatch(p, i, rows)); err != nil {
				t.Fatalf("send: %v", err)
			}
		}
	}
	for p := range parts {
		if err := r.Send(to, &Batch{Stream: Stream{Partition: p}, End: true, Total: int64(batches * rows)}); err != nil {
			t.Fatalf("send END: %v", err)
		}
	}
}

// checkStreams checks that rec applied every stream of run whole, in seq
// order, once: batches batches and an END.
func checkStreams(t *testing.T, rec *recorder, run RunKey, parts, batches int) {
	t.Helper()
	want := make([]uint64, batches+1)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	got := rec.byStream()
	for p := range parts {
		s := Stream{RunKey: run, Partition: p}
		if !slices.Equal(got[s], want) {
			t.Errorf("partition %d: applied seqs %v, want 1..%d in order, once each", p, got[s], batches+1)
		}
	}
	for _, a := range rec.batches() {
		if a.end {
			continue
		}
		for r, k := range a.keys {
			if want := fmt.Sprintf("k%04d-%06d-%03d", a.stream.Partition, a.seq-1, r); k != want {
				t.Fatalf("partition %d seq %d row %d: key %q, want %q", a.stream.Partition, a.seq, r, k, want)
			}
			if a.values[r][0] != k || a.values[r][1] != "customer name "+k {
				t.Fatalf("row %s: values %q", k, a.values[r])
			}
		}
	}
}

// TestTransport_DeliversStreamsInOrderOnce sends eight streams over the
// four connections of one destination: each arrives whole, in seq order,
// applied once, every END's report comes back with its ACK, and the
// backlog ends empty.
func TestTransport_DeliversStreamsInOrderOnce(t *testing.T) {
	ns, ms := newNodes(t, "node-a", "node-b")
	a, b := ns[0], ns[1]
	rec := newRecorder()
	b.open(t, ms, rec, nil)
	ta := a.open(t, ms, nil, nil)

	run := RunKey{Dataset: "orders", Txn: 42}
	ev := newEvents()
	r, err := ta.StartRun(run, CompressNone, ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ta.StartRun(run, CompressNone, nil); err == nil {
		t.Fatal("a second StartRun of one run succeeded")
	}
	sendStreams(t, r, b.id, 8, 30, 20)
	eventually(t, 20*time.Second, "every END answered", func() bool { return ev.reportCount() == 8 })
	checkStreams(t, rec, run, 8, 30)
	for p := range 8 {
		s := Stream{RunKey: run, Partition: p}
		if got := ev.reports[s]; got != "rows=600" {
			t.Errorf("partition %d: report %q, want rows=600", p, got)
		}
		if n := len(ev.acked[s]); n != 31 {
			t.Errorf("partition %d: %d ACKs, want 31", p, n)
		}
	}
	if bl := backlogOf(ta, b.id); bl.Rows != 0 || bl.Bytes != 0 || bl.Batches != 0 {
		t.Errorf("backlog after every ACK: %+v", bl)
	}
	for _, a := range rec.batches() {
		if a.from != a.origin || a.origin != "node-a" {
			t.Fatalf("batch from %s, origin %s: want node-a for both", a.from, a.origin)
		}
	}
	if err := r.End(true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "DONE reaches the receiver", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return slices.Contains(rec.done, run)
	})
	if err := r.Send(b.id, testBatch(0, 99, 1)); err != ErrRunEnded {
		t.Errorf("Send after End: %v, want ErrRunEnded", err)
	}
}

// TestTransport_LostAckIsNotAppliedTwice drops the connection after a
// batch is applied and before its ACK goes out: the sender sends it
// again, and the receiver answers it without applying it a second time.
func TestTransport_LostAckIsNotAppliedTwice(t *testing.T) {
	ns, ms := newNodes(t, "node-a", "node-b")
	a, b := ns[0], ns[1]
	rec := newRecorder()
	dropped := 0
	b.open(t, ms, rec, func(c *Config) {
		c.hookAfterApply = func(b *Batch) bool {
			if b.Seq%5 == 3 && dropped < 4 {
				dropped++
				return true
			}
			return false
		}
	})
	ta := a.open(t, ms, nil, nil)
	run := RunKey{Dataset: "orders", Txn: 43}
	ev := newEvents()
	r, _ := ta.StartRun(run, CompressMetadata, ev)
	sendStreams(t, r, b.id, 2, 20, 5)
	eventually(t, 20*time.Second, "every END answered", func() bool { return ev.reportCount() == 2 })
	if dropped != 4 {
		t.Fatalf("%d ACKs dropped, want 4", dropped)
	}
	checkStreams(t, rec, run, 2, 20)
	if !b.log.has("connection ended") && !a.log.has("connection ended") {
		t.Log("no connection-ended line logged (debug)")
	}
}

// TestTransport_ReceiverRestartRewinds stops the receiver half-way
// through its streams and starts it again, empty, as a restarted owner
// is: its new incarnation makes the sender send the run again from the
// first batch, so the new receiver applies every stream whole.
func TestTransport_ReceiverRestartRewinds(t *testing.T) {
	ns, ms := newNodes(t, "node-a", "node-b")
	a, b := ns[0], ns[1]
	first := newRecorder()
	tb := b.open(t, ms, first, nil)
	ta := a.open(t, ms, nil, nil)
	run := RunKey{Dataset: "orders", Txn: 44}
	ev := newEvents()
	r, _ := ta.StartRun(run, CompressAll, ev)
	for i := range 10 {
		for p := range 3 {
			if err := r.Send(b.id, testBatch(p, i, 4)); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, 10*time.Second, "the first receiver applies every batch", func() bool { return len(first.batches()) == 30 })
	tb.Close()

	for i := 10; i < 20; i++ {
		for p := range 3 {
			if err := r.Send(b.id, testBatch(p, i, 4)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p := range 3 {
		r.Send(b.id, &Batch{Stream: Stream{Partition: p}, End: true, Total: 80})
	}
	second := newRecorder()
	b.open(t, ms, second, nil)
	eventually(t, 20*time.Second, "every END answered", func() bool { return ev.reportCount() == 3 })
	checkStreams(t, second, run, 3, 20)
	if !a.log.has("the receiver restarted") {
		t.Error("the sender did not log the receiver's restart")
	}
}

// TestTransport_ForwardsToTheOwner has the receiver answer Forward for a
// partition it does not own: the batch reaches the owner, flagged and with
// its origin, the sender gets the owner's report, and a node asked to
// forward a forwarded batch answers retry rather than looping.
func TestTransport_ForwardsToTheOwner(t *testing.T) {
	ns, ms := newNodes(t, "node-a", "node-b", "node-c")
	a, b, c := ns[0], ns[1], ns[2]
	relay := newRecorder()
	relay.decide = func(bt *Batch) (Outcome, bool) {
		if bt.Partition == 1 {
			return Forward(c.id), true
		}
		return Outcome{}, false
	}
	owner := newRecorder()
	b.open(t, ms, relay, nil)
	c.open(t, ms, owner, nil)
	ta := a.open(t, ms, nil, nil)
	run := RunKey{Dataset: "orders", Txn: 45}
	ev := newEvents()
	r, _ := ta.StartRun(run, CompressNone, ev)
	sendStreams(t, r, b.id, 2, 6, 3)
	eventually(t, 20*time.Second, "every END answered", func() bool { return ev.reportCount() == 2 })
	if got := owner.byStream()[Stream{RunKey: run, Partition: 1}]; !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("the owner applied partition 1 seqs %v", got)
	}
	for _, x := range owner.batches() {
		if x.from != b.id || x.origin != a.id {
			t.Fatalf("forwarded batch from %s, origin %s: want from %s, origin %s", x.from, x.origin, b.id, a.id)
		}
	}
	if got := relay.byStream()[Stream{RunKey: run, Partition: 1}]; len(got) != 0 {
		t.Errorf("the relay applied partition 1: %v", got)
	}
	if got := ev.reports[Stream{RunKey: run, Partition: 1}]; got != "rows=18" {
		t.Errorf("report %q through the relay", got)
	}

	// The owner disagrees and would forward back: the relay answers retry.
	owner.decide = func(bt *Batch) (Outcome, bool) { return Forward(b.id), true }
	run2 := RunKey{Dataset: "orders", Txn: 46}
	r2, _ := ta.StartRun(run2, CompressNone, newEvents())
	if err := r2.Send(b.id, testBatch(1, 0, 1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the loop is refused", func() bool {
		return a.log.has("batch not applied", "answer=retry", "not forwarded again")
	})
	r2.End(false)
}

// TestTransport_RefusedStreamIsReported: a batch the receiver refuses is
// reported to the run, and nothing more of its lane is sent.
func TestTransport_RefusedStreamIsReported(t *testing.T) {
	ns, ms := newNodes(t, "node-a", "node-b")
	a, b := ns[0], ns[1]
	b.open(t, ms, nil, nil) // no Handler: refuses every batch
	ta := a.open(t, ms, nil, nil)
	ev := newEvents()
	r, _ := ta.StartRun(RunKey{Dataset: "orders", Txn: 47}, CompressNone, ev)
	for i := range 3 {
		r.Send(b.id, testBatch(0, i, 2))
	}
	eventually(t, 10*time.Second, "the refusal reaches the run", func() bool {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		return len(ev.refused) == 1
	})
	if !strings.Contains(ev.refused[0], "applies no batches") {
		t.Errorf("refusal %q", ev.refused[0])
	}
	time.Sleep(100 * time.Millisecond)
	if bl := backlogOf(ta, b.id); bl.Batches != 3 {
		t.Errorf("backlog %+v: the refused lane's batches stay until the run ends", bl)
	}
	r.End(false)
	if bl := backlogOf(ta, b.id); bl.Batches != 0 {
		t.Errorf("backlog after End: %+v", bl)
	}
}

// TestTransport_RetryIsSentAgain: an owner that answers retry (not ready
// yet) gets the batch again after a pause, and again, until it applies
// it; nothing is lost or applied twice.
func TestTransport_RetryIsSentAgain(t *testing.T) {
	ns, ms := newNodes(t, "node-a", "node-b")
	a, b := ns[0], ns[1]
	rec := newRecorder()
	var mu sync.Mutex
	retries := 0
	rec.decide = func(bt *Batch) (Outcome, bool) {
		mu.Lock()
		defer mu.Unlock()
		if bt.Seq == 2 && retries < 3 {
			retries++
			return NotApplied(CodeRetry, "not ready"), true
		}
		return Outcome{}, false
	}
	b.open(t, ms, rec, nil)
	ta := a.open(t, ms, nil, nil)
	run := RunKey{Dataset: "orders", Txn: 48}
	ev := newEvents()
	r, _ := ta.StartRun(run, CompressNone, ev)
	sendStreams(t, r, b.id, 1, 5, 3)
	eventually(t, 20*time.Second, "the END answered", func() bool { return ev.reportCount() == 1 })
	checkStreams(t, rec, run, 1, 5)
	if retries != 3 {
		t.Errorf("%d retries answered, want 3", retries)
	}
	r.End(true)
}
