package adapters

import (
	"slices"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// TestCarriedRanges checks the key ranges a partitioned run carries over
// in chunk mode: the unchanged chunks of the digest, adjacent ones merged,
// the first from the first key, with the digest's rows; none when the run
// is not partitioned, reads in full, or every chunk changed.
func TestCarriedRanges(t *testing.T) {
	key := func(id int64) []byte {
		b, err := snapshot.AppendKey(nil, []snapshot.Value{{Kind: snapshot.KindInt, Int: id}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	prev := &digest{Chunks: []chunk{{Hi: "100", Rows: 100}, {Hi: "200", Rows: 90}, {Hi: "300", Rows: 80}, {Hi: "400", Rows: 70}, {Hi: "500", Rows: 60}}}
	p := &pull{spec: api.Adapter{Strategy: string(StrategyPartitionByKey)}, prev: prev, cur: &snapshot.VersionInfo{Version: 7},
		chunks: &chunkState{prev: prev, changed: []bool{false, true, false, false, true}, nchg: 2}}
	cr, err := p.carriedRanges()
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.KeyRange{{Through: key(100)}, {After: key(200), Through: key(400)}}
	if cr == nil || cr.Version != 7 || cr.Rows != 100+80+70 || !slices.EqualFunc(cr.Ranges, want, func(a, b snapshot.KeyRange) bool {
		return slices.Equal(a.After, b.After) && slices.Equal(a.Through, b.Through)
	}) {
		t.Fatalf("carried ranges %+v, want version 7, %d rows, %v", cr, 100+80+70, want)
	}

	p.chunks.full = true
	if cr, err := p.carriedRanges(); cr != nil || err != nil {
		t.Errorf("a run that reads in full carries %+v, %v", cr, err)
	}
	p.chunks.full = false
	p.spec.Strategy = string(StrategyLocal)
	if cr, err := p.carriedRanges(); cr != nil || err != nil {
		t.Errorf("a run on one node carries %+v, %v", cr, err)
	}
	p.spec.Strategy = string(StrategyPartitionByKey)
	p.chunks.changed = []bool{true, true, true, true, true}
	if cr, err := p.carriedRanges(); cr != nil || err != nil {
		t.Errorf("a run with every chunk changed carries %+v, %v", cr, err)
	}
}
