// Command gen wrote testdata/format1: a Pebble directory of storage format
// 1 (Pebble's bytewise comparer, no prefix bloom filters), made by
// snapstore at commit 9d84b50, and want.txt, every cell that code read
// back from it. TestOpenFormat1 opens a copy with today's code and checks
// that every cell is still there. Run today, the program would write
// today's format: it is kept to show how the fixture was made.
//
//	go run ./store/pebble/testdata/format1/gen store/pebble/testdata/format1
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
)

func main() {
	out := os.Args[1]
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "format1-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	st, err := pebble.Open(data, pebble.Options{MemTableSize: 64 << 10})
	if err != nil {
		log.Fatal(err)
	}
	tables := []string{"t", "t\x00x", "ta", "d/films/0"}
	for _, table := range tables {
		b := &store.Batch{Table: table}
		for i := 0; i < 200; i++ {
			row := []byte(fmt.Sprintf("row\x00%04d", i))
			for ts := int64(1); ts <= 3; ts++ {
				b.Put(row, []byte("c"), ts, []byte(fmt.Sprintf("v%d@%d", i, ts)))
				b.Put(row, []byte("c\x00d"), ts, []byte{})
			}
			if i%10 == 0 {
				b.DeleteRow(row, 4)
				b.DeleteColumn(row, []byte("c"), 5)
			}
			if i%100 == 0 {
				b.Put(row, []byte("max"), store.MaxTimestamp, []byte("at the end of time"))
			}
			if b.Len() > 1000 {
				if err := st.Apply(ctx, b); err != nil {
					log.Fatal(err)
				}
				b.Reset()
			}
		}
		b.Sync = true
		if err := st.Apply(ctx, b); err != nil {
			log.Fatal(err)
		}
	}
	// Some of it flushed to SSTables, the rest only in the WAL.
	if err := st.DB().Flush(); err != nil {
		log.Fatal(err)
	}
	b := &store.Batch{Table: "t", Sync: true}
	b.Put([]byte("late"), []byte("c"), 9, []byte("in the log"))
	b.DeleteVersion([]byte("row\x000001"), []byte("c"), 2)
	if err := st.Apply(ctx, b); err != nil {
		log.Fatal(err)
	}
	var want strings.Builder
	for _, table := range tables {
		it, err := st.Scan(ctx, table, store.ScanOptions{})
		if err != nil {
			log.Fatal(err)
		}
		for it.Next() {
			c := it.Cell()
			fmt.Fprintf(&want, "%q %q %q %d %s %q\n", table, c.Row, c.Column, c.Timestamp, c.Kind, c.Value)
		}
		if err := it.Close(); err != nil {
			log.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "want.txt"), []byte(want.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	tar := exec.Command("tar", "-C", dir, "-czf", filepath.Join(out, "data.tar.gz"), "data")
	tar.Stderr = os.Stderr
	if err := tar.Run(); err != nil {
		log.Fatal(err)
	}
}
