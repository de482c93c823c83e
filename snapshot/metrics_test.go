package snapshot

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsReopen checks that a DB registers its metrics and can be
// reopened with the same Registerer.
func TestMetricsReopen(t *testing.T) {
	reg := prometheus.NewRegistry()
	st := newTestStore(t)
	for i := 0; i < 2; i++ {
		db, err := Open(context.Background(), st, Options{Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		runRows(t, db, [][]Value{{iv(int64(i)), sv("a")}})
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
		for _, n := range []string{"snapstore_snapshot_runs_total", "snapstore_snapshot_cells_written_total", "snapstore_txn_invalid_transactions", "snapstore_snapshot_readers_open"} {
			if !names[n] {
				t.Errorf("metric %s missing", n)
			}
		}
		db.Close()
	}
}
