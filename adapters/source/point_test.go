package source

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeReader is a TableReader that only counts its Close.
type fakeReader struct {
	TableReader
	closed int
	put    func()
}

func (r *fakeReader) Close() error { r.closed++; r.put(); return nil }

// TestPointConns: a connection serves one reader at a time, Take waits
// for one given back and gives up with its context, Close closes the
// readers still open and ends every connection once.
func TestPointConns(t *testing.T) {
	ended := map[int]int{}
	p := NewPointConns([]int{1, 2}, func(c int) error { ended[c]++; return nil })
	ctx := context.Background()
	a, err := p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Take(ctx)
	if err != nil || a == b {
		t.Fatalf("took %d and %d, %v", a, b, err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := p.Take(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Take of a busy point: %v", err)
	}
	ra := &fakeReader{}
	ra.put = func() { p.Put(a, ra) }
	p.Opened(ra)
	got := make(chan int)
	go func() { c, _ := p.Take(ctx); got <- c }()
	p.Put(b, nil)
	if c := <-got; c != b {
		t.Fatalf("Take after Put got %d, want %d", c, b)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if ra.closed != 1 || ended[1] != 1 || ended[2] != 1 {
		t.Fatalf("reader closed %d times, ended %v", ra.closed, ended)
	}
	if _, err := p.Take(ctx); !errors.Is(err, ErrPointClosed) {
		t.Fatalf("Take after Close: %v", err)
	}
	if err := p.Close(); err != nil || ended[1] != 1 {
		t.Fatalf("second Close: %v, ended %v", err, ended)
	}
}

func TestPointConnections(t *testing.T) {
	for _, tc := range []struct{ par, tables, want int }{{0, 5, 1}, {4, 2, 2}, {4, 10, 4}, {3, 0, 3}} {
		if got := PointConnections(PointRequest{Parallelism: tc.par, Tables: tc.tables}); got != tc.want {
			t.Errorf("parallelism %d, %d tables: %d connections, want %d", tc.par, tc.tables, got, tc.want)
		}
	}
}
