package pebble

import (
	"fmt"
	"log/slog"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"

	"github.com/snapstore/snapstore/store"
)

// writeGenerations writes gens generations of rows rows each, generation g
// (1..gens) at timestamp g on rows of its own, each flushed to SSTables:
// a time range then selects a contiguous run of rows, which the blocks of
// any other generation do not hold, whatever compactions did.
func writeGenerations(t *testing.T, s *Store, gens, rows int) {
	t.Helper()
	for g := 1; g <= gens; g++ {
		b := &store.Batch{Table: "t"}
		for r := 0; r < rows; r++ {
			b.Put([]byte(fmt.Sprintf("g%02d-r%05d", g, r)), []byte("c"), int64(g), []byte(fmt.Sprintf("value %d of generation %d", r, g)))
		}
		if err := s.Apply(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// scanStats scans table t with tr and returns the cells and the bytes of
// the blocks Pebble read.
func scanStats(t *testing.T, s *Store, tr store.TimeRange) ([]store.Cell, uint64) {
	t.Helper()
	it, err := s.Scan(t.Context(), "t", store.ScanOptions{ReadOptions: store.ReadOptions{TimeRange: tr}})
	if err != nil {
		t.Fatal(err)
	}
	var cells []store.Cell
	for it.Next() {
		c := it.Cell()
		cells = append(cells, store.Cell{Row: append([]byte{}, c.Row...), Timestamp: c.Timestamp})
	}
	bytes := it.(*iterator).pi.Stats().InternalStats.BlockBytes
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return cells, bytes
}

func TestTimeBoundScanSkipsBlocks(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const gens, rows = 10, 2000
	writeGenerations(t, s, gens, rows)
	all, allBytes := scanStats(t, s, store.TimeRange{Min: 1, Max: store.MaxTimestamp})
	if len(all) != gens*rows {
		t.Fatalf("scan [1, max) returned %d cells, want %d", len(all), gens*rows)
	}
	got, gotBytes := scanStats(t, s, store.TimeRange{Min: 5, Max: 6})
	if len(got) != rows {
		t.Fatalf("scan [5, 6) returned %d cells, want %d", len(got), rows)
	}
	for _, c := range got {
		if c.Timestamp != 5 {
			t.Fatalf("scan [5, 6) returned a cell at %d", c.Timestamp)
		}
	}
	// One generation of ten: the blocks read are about a tenth.
	if gotBytes*4 > allBytes {
		t.Errorf("scan [5, 6) read %d block bytes, a scan of every generation %d: the blocks of other generations were not skipped", gotBytes, allBytes)
	}
	// A range past every cell reads no block at all.
	if got, b := scanStats(t, s, store.TimeRange{Min: gens + 1, Max: store.MaxTimestamp}); len(got) != 0 || b != 0 {
		t.Errorf("scan [%d, max) returned %d cells from %d block bytes, want none", gens+1, len(got), b)
	}
}

// TestTimeBoundScanOldTables writes a directory as a store without the
// time property collector did, and checks that a time-bound scan of it
// still reads every cell in range: tables without the property are read
// whole.
func TestTimeBoundScanOldTables(t *testing.T) {
	dir := t.TempDir()
	cache := cpebble.NewCache(8 << 20)
	po := pebbleOptions(Options{MemTableSize: DefaultMemTableSize}, cache, slog.New(slog.DiscardHandler))
	po.BlockPropertyCollectors = nil
	db, err := cpebble.Open(dir, po)
	cache.Unref()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(formatKey, []byte(formatValue), cpebble.Sync); err != nil {
		t.Fatal(err)
	}
	tp := appendTable(nil, "t")
	for ts := int64(1); ts <= 3; ts++ {
		for r := 0; r < 100; r++ {
			k := appendCellKey(nil, tp, []byte(fmt.Sprintf("r%03d", r)), []byte("c"), ts)
			if err := db.Set(k, []byte{byte(store.KindPut), 'v'}, cpebble.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	tables, err := db.SSTables(cpebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range tables {
		for _, tbl := range level {
			if _, ok := tbl.Properties.UserProperties[cellTimeProperty]; ok {
				t.Fatal("a table written without the collector has its property")
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, _ := scanStats(t, s, store.TimeRange{Min: 2, Max: 3})
	if len(got) != 100 {
		t.Fatalf("time-bound scan of tables without the property returned %d cells, want 100", len(got))
	}
	for _, c := range got {
		if c.Timestamp != 2 {
			t.Fatalf("scan [2, 3) returned a cell at %d", c.Timestamp)
		}
	}
	// New tables carry the property beside the old ones.
	writeGenerations(t, s, 1, 10)
	tables, err = s.db.SSTables(cpebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	with := 0
	for _, level := range tables {
		for _, tbl := range level {
			if _, ok := tbl.Properties.UserProperties[cellTimeProperty]; ok {
				with++
			}
		}
	}
	if with == 0 {
		t.Error("no table written by the store has the time property")
	}
}
